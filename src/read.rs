//! The library's entry points: one call per question about one capture or demo file, each
//! decoding only as deep as its answer needs. For more (several inputs, every message, your
//! own sink), run [`crate::pipeline`] with a [`crate::pipeline::Sink`].
//!
//! ```no_run
//! let events = quakecap::read::game_events("match.dm_68".as_ref())?;
//! for e in events.iter().filter(|e| e.kind == quakecap::gameevent::Kind::Kill) {
//!     println!("{}", e.describe());
//! }
//! # Ok::<(), quakecap::pipeline::InputError>(())
//! ```
#![warn(missing_docs)]
use std::path::Path;

use crate::analysis::net::{NetQuality, NetSink};
use crate::flow::FlowSummary;
use crate::gameevent::GameEvent;
use crate::pipeline::{self, InputError, Options, Report, Sink};
use crate::sink::events::EventSink;

/// Decode `path` (a capture, or a demo by its extension) into `sink`.
fn run(path: &Path, opts: &Options, sink: &mut dyn Sink) -> Result<Report, InputError> {
    if pipeline::is_demo(path) {
        pipeline::run_demo(path, opts, sink)
    } else {
        pipeline::run_capture(path, opts, sink, &mut |_| {})
    }
}

/// The game events of one capture or demo (kills, chat, players, match flow, scores), in
/// time order, each event once however many of the capture's connections saw it.
pub fn game_events(path: &Path) -> Result<Vec<GameEvent>, InputError> {
    let opts = Options {
        detail: crate::pipeline::Detail::Events,
        ..Options::default()
    };
    let mut sink = EventSink::new();
    run(path, &opts, &mut sink)?;
    Ok(sink.events)
}

/// Network quality per connection of one capture (ping, loss, jitter, rates, lag events),
/// with a series of `interval`-second bins. A demo holds no packets: no rows.
pub fn network_quality(path: &Path, interval: f64) -> Result<Vec<NetQuality>, InputError> {
    let opts = Options {
        samples: true,
        ..Options::default()
    };
    let mut sink = NetSink::new(interval);
    run(path, &opts, &mut sink)?;
    Ok(sink.reports)
}

/// The flows (connections, queries, other traffic) of one capture or the one connection of
/// a demo, with their counters and errors.
pub fn connections(path: &Path) -> Result<Vec<FlowSummary>, InputError> {
    struct Nothing;
    impl Sink for Nothing {}
    Ok(run(path, &Options::default(), &mut Nothing)?.flows)
}
