//! The one pass: capture → net → per-game trackers → events pushed to a [`Sink`]. Demo files
//! enter here too, skipping capture, net and netchan: the pass only picks the game whose demo
//! it is and streams what its decoder gives. The pipeline defines the sink trait; sinks see one
//! [`Event`] type for both games, only finished events, and never reach back into parsing.
//!
//! * `frames`: where frames come from (one capture, or several merged in time order);
//! * `tracker`: the router ([`Trackers`]) and the trait every game's tracker implements;
//! * `games`: the list of games, and which reads a demo file;
//! * `quake3`, `quakeworld`: each game behind that trait (Quake 3's worker threads and
//!   prefetching are its own);
//! * `lookahead`: the datagrams ahead, given to the games that prefetch.
#![warn(missing_docs)]
use std::io::{self, Read};
use std::path::Path;

use crate::capture::{CaptureError, CaptureReader};
use crate::error::{Error, ErrorKind};
pub use crate::event::{Event, FlowStart};
use crate::flow::FlowSummary;
use crate::net::NetDecoder;

mod follow;
mod frames;
mod games;
mod lookahead;
mod quake3;
mod quakeworld;
mod tracker;

pub use follow::{run_follow, tail, FollowSetup, Tail, TICK};
use frames::{Frames, Merged, OneFile, Step};
pub use games::{is_demo, run_demo, run_demo_bytes};
pub use lookahead::PREFETCH_MIN_ACTIVE;
pub use quake3::{demo_protocol, demo_protocol_of, run_q3_demo, run_q3_demo_bytes};
pub use quakeworld::{is_qw_demo, run_qw_demo, run_qw_demo_bytes};
pub use tracker::Trackers;

/// Something that consumes decoded events. One method for every event of every game: a sink
/// matches the [`Event`] variants it uses and ignores the rest (the enum grows).
pub trait Sink {
    /// One event, borrowed for the call (a sink copies out what it keeps). The default
    /// ignores it (a sink that only wants [`Sink::finish`]'s report).
    fn event(&mut self, _e: Event<'_>) -> io::Result<()> {
        Ok(())
    }
    /// End of one input: the flows it held.
    fn finish(&mut self, _report: &Report) -> io::Result<()> {
        Ok(())
    }
}

/// Several sinks fed by the same pass.
pub struct Tee<'a>(pub Vec<&'a mut dyn Sink>);

impl Sink for Tee<'_> {
    fn event(&mut self, e: Event<'_>) -> io::Result<()> {
        self.0.iter_mut().try_for_each(|s| s.event(e))
    }
    fn finish(&mut self, r: &Report) -> io::Result<()> {
        self.0.iter_mut().try_for_each(|s| s.finish(r))
    }
}

/// What the pass should produce.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// How much of each decoded message reaches the sink ([`Detail::None`]: none).
    pub detail: Detail,
    /// Keep descrambled server bodies on the events (demo writing).
    pub keep_raw: bool,
    /// Only these flow ids reach the sink (all flows are still tracked and counted).
    pub flows: Option<Vec<u32>>,
    /// Decode threads for order-insensitive runs (None: `QUAKECAP_THREADS`, else the cores).
    pub threads: Option<usize>,
    /// Hand an [`Event::NetSample`] per netchan datagram to the sink (the `net` analysis);
    /// off, no sample is built. With [`Detail::None`] and no `keep_raw`, Quake 3 server messages are
    /// then decoded only as far as the samples read ([`crate::q3::svc::Detail::Samples`]): the flow
    /// rows' error counts miss errors in what is left unread.
    pub samples: bool,
    /// Following a live input ([`run_follow`]): the sink is also told each flow's start
    /// ([`Event::FlowStart`]) and the capture time reached ([`Event::Clock`]) at least every
    /// [`follow::TICK`] of wall time, with what the trackers held back flushed before it.
    pub follow: bool,
}

/// The outcome of one input.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The input's name (several joined by `+` for `--merge`).
    pub file: String,
    /// Every flow's summary, by id.
    pub flows: Vec<FlowSummary>,
    /// Capture frames (or demo records) read.
    pub frames: u64,
    /// Frames that were whole UDP datagrams.
    pub udp_datagrams: u64,
    /// Frames that could not be read as UDP (malformed, unsupported link type).
    pub net_errors: u64,
    /// Problems not tied to a flow (capture framing, truncation, link errors), with frames.
    pub warnings: Vec<Error>,
    /// Every warning, including those past [`MAX_WARNINGS`] that were not kept.
    pub warnings_total: u64,
    /// Datagrams of other UDP not given a flow of their own because the flow table was full
    /// (they are summed in an `other_aggregate` row of [`Report::aggregates`]).
    pub untracked_datagrams: u64,
    /// Traffic past the flow limits, summed per game, server and command: rows of kind
    /// "query_aggregate" / "other_aggregate" carrying [`FlowSummary::aggregate`]. Kept apart
    /// from `flows`; `flows --json` appends them to its array.
    pub aggregates: Vec<FlowSummary>,
    /// The last capture error, when it stopped the file.
    pub fatal: Option<String>,
}

/// Why an input could not be used at all.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The file is not a capture this reader takes (or could not be opened).
    #[error("{file}: {source}")]
    Capture {
        /// The input.
        file: String,
        /// Why.
        source: CaptureError,
    },
    /// Reading the input or writing to the sink failed.
    #[error("{file}: {source}")]
    Io {
        /// The input.
        file: String,
        /// The I/O error.
        source: io::Error,
    },
    /// Every frame of the input failed (no packet could be read).
    #[error("{file}: {message}")]
    Unusable {
        /// The input.
        file: String,
        /// The first problem.
        message: String,
    },
}

pub use crate::flow::table::MAX_OTHER_FLOWS;

/// True when `flow` passes the `--flow` filter (none: every flow).
#[inline]
fn wanted(filter: &Option<Vec<u32>>, flow: u32) -> bool {
    filter.as_ref().is_none_or(|f| f.contains(&flow))
}

/// Run the pass over one capture file. `progress` is told the bytes read so far.
pub fn run_capture(
    path: &Path,
    opts: &Options,
    sink: &mut dyn Sink,
    progress: &mut dyn FnMut(u64),
) -> Result<Report, InputError> {
    let file = path.display().to_string();
    let reader = CaptureReader::open(path).map_err(|source| InputError::Capture {
        file: file.clone(),
        source,
    })?;
    run_reader(reader, file, opts, sink, progress)
}

/// Run the pass over an opened capture of any source (a file, or bytes in memory); `file`
/// names it in the report.
pub fn run_reader<R: Read>(
    reader: CaptureReader<R>,
    file: String,
    opts: &Options,
    sink: &mut dyn Sink,
    progress: &mut dyn FnMut(u64),
) -> Result<Report, InputError> {
    run_reader_with(reader, file, opts, sink, progress, PREFETCH_MIN_ACTIVE).map(|r| r.0)
}

/// [`run_reader`], prefetching from `prefetch_min_active` active connections on (tests
/// use 0: always), and how many datagrams were routed with their lookup made ahead.
fn run_reader_with<R: Read>(
    reader: CaptureReader<R>,
    file: String,
    opts: &Options,
    sink: &mut dyn Sink,
    progress: &mut dyn FnMut(u64),
    prefetch_min_active: usize,
) -> Result<(Report, u64), InputError> {
    let mut frames = OneFile {
        reader,
        net: NetDecoder::new(),
    };
    let mut trackers = Trackers::with_prefetch_from(opts, prefetch_min_active);
    let report = Report {
        file,
        ..Default::default()
    };
    run_frames(&mut frames, report, &mut trackers, sink, progress)
}

/// The pass over a source of frames: each frame through its IP reassembly to the trackers,
/// then the report. An input of frames none of which could be read as UDP is unusable.
fn run_frames<F: Frames>(
    frames: &mut F,
    mut report: Report,
    trackers: &mut Trackers,
    sink: &mut dyn Sink,
    progress: &mut dyn FnMut(u64),
) -> Result<(Report, u64), InputError> {
    let input = report.file.clone();
    let mut n = 0u64;
    let mut ahead = lookahead::Lookahead::default();
    loop {
        ahead.step(frames, trackers);
        let (frame, net, file) = match frames.next(&mut report) {
            Step::Frame(f, net, file) => (f, net, file),
            Step::Skip => continue,
            Step::Idle(t) => {
                idle(trackers, t, sink, &input)?;
                continue;
            }
            Step::End => break,
        };
        report.frames += 1;
        let index = frame.index;
        match net.decode(&frame) {
            Ok(Some(d)) => {
                report.udp_datagrams += 1;
                trackers
                    .datagram(&d, sink)
                    .map_err(|source| InputError::Io {
                        file: file.map_or_else(|| input.clone(), String::from),
                        source,
                    })?;
            }
            Ok(None) => {}
            Err(e) => {
                report.net_errors += 1;
                let w = Error::from(&e);
                let w = match file {
                    Some(f) => w.file(f),
                    None => w,
                };
                push_warning(&mut report, w.frame(index));
            }
        }
        n += 1;
        if n % 4096 == 0 {
            progress(frames.bytes_read());
        }
    }
    progress(frames.bytes_read());
    frames.finish(&mut report);
    let hints_taken = trackers.hints_taken();
    let io_err = |source| InputError::Io {
        file: input.clone(),
        source,
    };
    trackers.fill_report(&mut report, sink).map_err(io_err)?;
    if report.frames > 0 && report.udp_datagrams == 0 && report.net_errors == report.frames {
        return Err(InputError::Unusable {
            file: input.clone(),
            message: report
                .warnings
                .first()
                .map(|w| w.to_string())
                .unwrap_or_else(|| "no packet could be read".into()),
        });
    }
    sink.finish(&report).map_err(io_err)?;
    Ok((report, hints_taken))
}

/// A followed input's tick ([`Step::Idle`]): kept out of the loop's code.
#[cold]
#[inline(never)]
fn idle(
    trackers: &mut Trackers,
    t: f64,
    sink: &mut dyn Sink,
    input: &str,
) -> Result<(), InputError> {
    trackers.idle(t, sink).map_err(|source| InputError::Io {
        file: input.to_string(),
        source,
    })
}

pub use crate::error::MAX_WARNINGS;
pub use crate::vocab::Detail;

/// IP datagrams whose fragments never all came, said once per input: otherwise a flood of
/// lone first fragments would vanish without a word.
fn warn_unfinished(report: &mut Report, net: &NetDecoder, file: Option<&str>) {
    let st = net.stats();
    let n = st.fragments_dropped + st.fragments_pending;
    if n == 0 {
        return;
    }
    let w = Error::new(
        ErrorKind::Fragment,
        format!(
            "{} fragmented IP datagram{} never completed: {} given up (the rest of their \
             fragments did not come within {} s of capture time, or more than {} were in \
             progress), {} still waiting when the capture ended",
            n,
            if n == 1 { "" } else { "s" },
            st.fragments_dropped,
            crate::net::FRAGMENT_EXPIRE_NS / 1_000_000_000,
            crate::net::MAX_FRAGMENTED_PENDING,
            st.fragments_pending,
        ),
    );
    let w = match file {
        Some(f) => w.file(f),
        None => w,
    };
    push_warning(report, w);
}

/// A demo file's name (for the report) and bytes.
fn read_file(path: &Path) -> Result<(String, Vec<u8>), InputError> {
    let file = path.display().to_string();
    match std::fs::read(path) {
        Ok(data) => Ok((file, data)),
        Err(source) => Err(InputError::Io { file, source }),
    }
}

fn push_warning(report: &mut Report, w: Error) {
    report.warnings_total += 1;
    if report.warnings.len() < MAX_WARNINGS {
        report.warnings.push(w);
    }
}

/// Run several capture files as one stream in time order (like mergecap): flow ids and
/// connection state continue across files; equal times keep the order the files were given.
pub fn run_merged(
    paths: &[std::path::PathBuf],
    opts: &Options,
    sink: &mut dyn Sink,
) -> Result<Report, InputError> {
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let mut report = Report {
        file: names.join("+"),
        ..Default::default()
    };
    let mut readers = Vec::new();
    for (path, file) in paths.iter().zip(names) {
        let reader = CaptureReader::open(path).map_err(|source| InputError::Capture {
            file: file.clone(),
            source,
        })?;
        readers.push((file, reader));
    }
    let mut frames = Merged::new(readers, &mut report);
    let mut trackers = Trackers::new(opts);
    run_frames(&mut frames, report, &mut trackers, sink, &mut |_| {}).map(|r| r.0)
}

/// A flow-table warning at the head of the report's warnings (kept whatever their number).
fn warn_first(report: &mut Report, text: String, frame: u64) {
    report.warnings_total += 1;
    let e = Error::new(ErrorKind::FlowTableFull, text).frame(frame);
    report.warnings.insert(0, e);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::hash_map::DefaultHasher;
    use std::hash::{Hash, Hasher};

    /// Every event's debug text, hashed in order, and how many.
    #[derive(Default)]
    struct Digest(DefaultHasher, u64);

    impl Sink for Digest {
        fn event(&mut self, e: Event<'_>) -> io::Result<()> {
            format!("{e:?}").hash(&mut self.0);
            self.1 += 1;
            Ok(())
        }
    }

    fn run(path: &Path, opts: &Options, min_active: usize) -> (Report, u64, (u64, u64)) {
        let reader = CaptureReader::open(path).expect("stored capture");
        let mut sink = Digest::default();
        let name = path.display().to_string();
        let (report, hints) =
            run_reader_with(reader, name, opts, &mut sink, &mut |_| {}, min_active)
                .expect("decodes");
        (report, hints, (sink.0.finish(), sink.1))
    }

    /// Prefetching changes nothing: on every stored capture, with it forced on (the stored
    /// sessions have a few connections, below the threshold), the flow table (inline and on
    /// two worker threads) and every decoded event are those of the run without it, which
    /// the other tests check against the engines' traces and demos; and the lookups made
    /// ahead were the ones routing used.
    #[test]
    fn prefetching_changes_no_output() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("captures");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            eprintln!("skipped: no {}", dir.display());
            return;
        };
        let mut paths: Vec<_> = entries
            .flatten()
            .map(|e| e.path().join("capture.pcapng"))
            .filter(|p| p.is_file())
            .collect();
        paths.sort();
        assert!(!paths.is_empty());
        for path in &paths {
            let flows = |threads| Options {
                threads: Some(threads),
                ..Default::default()
            };
            let (off, none, _) = run(path, &flows(1), usize::MAX);
            assert_eq!(none, 0);
            for threads in [1, 2] {
                let (on, hints, _) = run(path, &flows(threads), 0);
                assert_eq!(on.flows, off.flows, "{} {threads}", path.display());
                assert_eq!(on.warnings, off.warnings);
                assert!(
                    hints * 10 >= on.udp_datagrams * 9,
                    "{}: {hints} of {} datagrams routed by the lookup ahead",
                    path.display(),
                    on.udp_datagrams
                );
            }
            let decode = Options {
                detail: crate::vocab::Detail::Full,
                ..Default::default()
            };
            let (off, _, events_off) = run(path, &decode, usize::MAX);
            let (on, _, events_on) = run(path, &decode, 0);
            assert_eq!(on.flows, off.flows);
            assert_eq!(events_on, events_off, "{}", path.display());
            assert!(events_on.1 > 0);
        }
    }
}
