//! Following a capture that is still being written (issue 42): standard input from
//! `tcpdump -U -w -` or `dumpcap -w -`, a file that grows (like `tail -f`), or a stored
//! capture replayed at its own pace. A thread reads the records (and waits for more, or
//! paces them); the pass takes them from a channel and, whenever none came for [`TICK`] of
//! wall time or a tick passed, flushes what the trackers hold and tells the sink the capture
//! time reached ([`Event::Clock`](super::Event::Clock)): output never waits for more input.
//! Nothing is kept per frame: each is copied out of the reader's buffer, handed over and
//! dropped once decoded (the channel holds at most [`QUEUE`]).
use std::fs::File;
use std::io::{self, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::frames::{Frames, OwnedFrame, Step};
use super::tracker::Trackers;
use super::{push_warning, warn_unfinished, InputError, Options, Report, Sink};
use crate::capture::{CaptureError, CaptureReader};
use crate::error::Error;
use crate::net::NetDecoder;

/// Wall time between two clock ticks told to the sink (and the longest a frame's output
/// waits in the trackers).
pub const TICK: Duration = Duration::from_millis(100);
/// Frames read ahead of the pass at most (the reading thread waits beyond).
const QUEUE: usize = 4096;
/// How late a frame may come after the wall time its capture time says (a replay's sleeps,
/// a capturing tool's write): the clock run on while the input is silent stays this behind.
const LATE: Duration = Duration::from_millis(20);
/// How long a followed file's reader sleeps when it found no new bytes.
const TAIL_POLL: Duration = Duration::from_millis(50);

/// How to follow an input.
#[derive(Debug, Clone, Default)]
pub struct FollowSetup {
    /// Set (by a SIGINT handler, say) to end the follow: what is pending is handed out, the
    /// report made, as at the end of the input.
    pub stop: Arc<AtomicBool>,
    /// Replay a stored capture at its own pace times this (1: real time); none: as fast as
    /// the input comes.
    pub replay: Option<f64>,
}

/// A file read like `tail -f`: at its end, wait for more until `stop` is set.
pub struct Tail {
    file: File,
    stop: Arc<AtomicBool>,
}

/// Follow `file` as it grows (see [`Tail`]).
pub fn tail(file: File, stop: Arc<AtomicBool>) -> Tail {
    Tail { file, stop }
}

impl Read for Tail {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let n = self.file.read(buf)?;
            if n > 0 || buf.is_empty() || self.stop.load(Ordering::Relaxed) {
                return Ok(n);
            }
            std::thread::sleep(TAIL_POLL);
        }
    }
}

/// What the reading thread hands over.
enum Msg {
    Frame(OwnedFrame),
    Error(CaptureError),
}

/// The frames of a followed input, from its reading thread.
struct Live {
    rx: Receiver<Msg>,
    net: NetDecoder,
    stop: Arc<AtomicBool>,
    /// Capture time advances this fast against the wall clock while the input is silent
    /// (1, or the replay speed).
    pace: f64,
    /// Last frame's capture time (s) and when it came; the clock told so far.
    last_ts: Option<(f64, Instant)>,
    clock: f64,
    /// The last wait for a frame timed out: every frame read so far is decoded, and the
    /// clock may run on from the last one.
    drained: bool,
    next_tick: Instant,
    frame: Option<OwnedFrame>,
    bytes: u64,
}

impl Live {
    /// Capture time now: the last frame's and, once the frames read are all decoded, the
    /// wall time since at the input's pace (less [`LATE`]: a frame may come a little after
    /// its time).
    fn now(&mut self) -> f64 {
        if let (Some((ts, at)), true) = (self.last_ts, self.drained) {
            let since = at.elapsed().saturating_sub(LATE);
            self.clock = self.clock.max(ts + since.as_secs_f64() * self.pace);
        }
        self.clock
    }
}

impl Frames for Live {
    fn next(&mut self, report: &mut Report) -> Step<'_> {
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return Step::End;
            }
            let now = Instant::now();
            if now >= self.next_tick {
                self.next_tick = now + TICK;
                if self.last_ts.is_some() {
                    return Step::Idle(self.now());
                }
            }
            match self
                .rx
                .recv_timeout(self.next_tick.saturating_duration_since(now))
            {
                Ok(Msg::Frame(f)) => {
                    self.drained = false;
                    let ts = f.ts_ns as f64 / 1e9;
                    self.last_ts = Some((ts, Instant::now()));
                    self.clock = self.clock.max(ts);
                    self.bytes += f.data.len() as u64;
                    let f = self.frame.insert(f);
                    return Step::Frame(f.frame(), &mut self.net, None);
                }
                Ok(Msg::Error(e)) => {
                    push_warning(report, Error::from(&e));
                    if e.is_fatal() {
                        report.fatal = Some(e.to_string());
                        return Step::End;
                    }
                    return Step::Skip;
                }
                Err(RecvTimeoutError::Timeout) => self.drained = true,
                Err(RecvTimeoutError::Disconnected) => return Step::End,
            }
        }
    }

    fn bytes_read(&self) -> u64 {
        self.bytes
    }

    fn finish(&self, report: &mut Report) {
        warn_unfinished(report, &self.net, None);
    }
}

/// The reading thread: every record to `tx`, paced when replaying; ends at the input's end,
/// at a fatal error, on `stop`, or when the pass is gone.
fn read_records<R: Read>(
    mut reader: CaptureReader<R>,
    tx: SyncSender<Msg>,
    stop: Arc<AtomicBool>,
    replay: Option<f64>,
) {
    let mut start: Option<(i64, Instant)> = None;
    while !stop.load(Ordering::Relaxed) {
        let msg = match reader.next_frame() {
            Ok(Some(f)) => {
                if let Some(speed) = replay {
                    let (t0, w0) = *start.get_or_insert((f.ts_ns, Instant::now()));
                    let due = (f.ts_ns.saturating_sub(t0)).max(0) as f64 / 1e9 / speed;
                    let wait = Duration::from_secs_f64(due.min(1e9)).saturating_sub(w0.elapsed());
                    if !wait.is_zero() {
                        std::thread::sleep(wait);
                    }
                }
                Msg::Frame(OwnedFrame::of(&f))
            }
            Ok(None) => return,
            Err(e) => {
                let fatal = e.is_fatal();
                if tx.send(Msg::Error(e)).is_err() || fatal {
                    return;
                }
                continue;
            }
        };
        if tx.send(msg).is_err() {
            return;
        }
    }
}

/// Run the pass over a capture still being written (or replayed): `reader` is read on a
/// thread of its own, and the sink is told the flows' starts and the clock
/// ([`Options::follow`] is set for the run). Ends at the input's end or when `setup.stop` is
/// set, with the report of what was read.
pub fn run_follow<R: Read + Send + 'static>(
    reader: R,
    file: String,
    opts: &Options,
    sink: &mut dyn Sink,
    setup: &FollowSetup,
) -> Result<Report, InputError> {
    let reader = CaptureReader::new(reader).map_err(|source| InputError::Capture {
        file: file.clone(),
        source,
    })?;
    let (tx, rx) = mpsc::sync_channel(QUEUE);
    let stop = setup.stop.clone();
    let replay = setup.replay.filter(|s| s.is_finite() && *s > 0.0);
    // Not joined: a thread blocked on a silent standard input ends with the process.
    std::thread::Builder::new()
        .name("quakecap-follow".into())
        .spawn(move || read_records(reader, tx, stop, replay))
        .map_err(|source| InputError::Io {
            file: file.clone(),
            source,
        })?;
    let mut frames = Live {
        rx,
        net: NetDecoder::new(),
        stop: setup.stop.clone(),
        pace: replay.unwrap_or(1.0),
        last_ts: None,
        clock: f64::NEG_INFINITY,
        drained: false,
        next_tick: Instant::now() + TICK,
        frame: None,
        bytes: 0,
    };
    let opts = Options {
        follow: true,
        ..opts.clone()
    };
    let mut trackers = Trackers::new(&opts);
    let report = Report {
        file,
        ..Default::default()
    };
    super::run_frames(&mut frames, report, &mut trackers, sink, &mut |_| {}).map(|r| r.0)
}
