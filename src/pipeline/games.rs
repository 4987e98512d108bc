//! The games the pass knows: the one place that lists them. A capture's datagrams are offered
//! to each game's tracker in this order (the first that takes one keeps it); a demo file goes
//! to the game its name says.
use std::path::Path;

use super::quake3::{self, Quake3};
use super::quakeworld::{self, QuakeWorld};
use super::tracker::{GameTracker, Setup};
use super::{InputError, Options, Report, Sink};

/// Every game's tracker, in the order datagrams are offered to them.
pub(super) fn trackers(setup: &Setup) -> Vec<Box<dyn GameTracker>> {
    vec![
        Box::new(Quake3::new(setup)),
        Box::new(QuakeWorld::new(setup)),
    ]
}

/// True for any demo file quakecap reads (by extension).
pub fn is_demo(path: &Path) -> bool {
    quake3::demo_protocol(path).is_some() || quakeworld::is_qw_demo(path)
}

/// Decode a demo file of either game through the same decoders as captures (a name of
/// neither game is read as Quake 3's protocol 68).
pub fn run_demo(path: &Path, opts: &Options, sink: &mut dyn Sink) -> Result<Report, InputError> {
    if quakeworld::is_qw_demo(path) {
        quakeworld::run_qw_demo(path, opts, sink)
    } else {
        quake3::run_q3_demo(path, opts, sink)
    }
}

/// Decode a demo file of either game held in memory, chosen by `file`'s extension.
pub fn run_demo_bytes(
    data: &[u8],
    file: String,
    opts: &Options,
    sink: &mut dyn Sink,
) -> Result<Report, InputError> {
    if quakeworld::is_qw_demo(Path::new(&file)) {
        quakeworld::run_qw_demo_bytes(data, file, opts, sink)
    } else {
        let protocol = quake3::demo_protocol(Path::new(&file));
        quake3::run_q3_demo_bytes(data, file, protocol, opts, sink)
    }
}
