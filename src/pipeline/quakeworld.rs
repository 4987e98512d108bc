//! QuakeWorld in the pass: its tracker behind [`GameTracker`], the network samples it builds
//! from its decoded messages, and its demo files.
use std::io;
use std::path::Path;

use super::tracker::{GameTracker, Offered, Setup};
use super::{read_file, wanted, Event, InputError, Options, Report, Sink};
use crate::flow::{FlowSummary, FlowTable};
use crate::net::Datagram;
use crate::qw;

/// QuakeWorld's tracker and what it queued.
pub(super) struct QuakeWorld {
    tracker: qw::Tracker,
    out: Vec<qw::Event>,
    filter: Option<Vec<u32>>,
    /// Decoded messages reach the sink.
    emit: bool,
    /// A network sample per decoded message reaches the sink.
    samples: bool,
}

impl QuakeWorld {
    pub(super) fn new(setup: &Setup) -> Self {
        let opts = &setup.opts;
        // QuakeWorld always decodes (the flow table counts failed messages too).
        let mut tracker = qw::Tracker::new(qw::Options {
            decode: true,
            keep_raw: opts.keep_raw,
        });
        // Flow ends are told only where decoding runs in capture order (one event stream).
        if !setup.detached {
            tracker = tracker.with_flow_ends();
        }
        QuakeWorld {
            tracker,
            out: Vec::new(),
            filter: opts.flows.clone(),
            emit: opts.detail.emits(),
            samples: opts.samples,
        }
    }
}

impl GameTracker for QuakeWorld {
    fn game(&self) -> &'static str {
        "qw"
    }

    #[inline]
    fn offer(&mut self, d: &Datagram<'_>, table: &mut FlowTable) -> Offered {
        let taken = self.tracker.offer(d, table, &mut self.out);
        Offered {
            taken,
            output: !self.out.is_empty(),
            ended: self.tracker.has_ended(),
            looks_ahead: false,
        }
    }

    /// Nothing is held back: a message's sample goes with it.
    fn flush_held(&mut self, _sink: &mut dyn Sink) -> io::Result<()> {
        Ok(())
    }

    /// Hand the queued events (and with them their network samples) to the sink.
    fn flush(&mut self, sink: &mut dyn Sink) -> io::Result<()> {
        if self.out.is_empty() {
            return Ok(());
        }
        let mut out = std::mem::take(&mut self.out);
        for e in out.drain(..) {
            if let (true, qw::Event::Message(m)) = (self.samples, &e) {
                if wanted(&self.filter, m.flow) {
                    if let Some(x) = qw::netsample::sample(m) {
                        sink.event(Event::NetSample(&x))?;
                    }
                }
            }
            let e = match &e {
                qw::Event::Message(m) if self.emit => Event::Qw(m),
                qw::Event::Message(_) => continue,
                qw::Event::Raw(r) => Event::QwRaw(r),
            };
            if wanted(&self.filter, e.flow()) {
                sink.event(e)?;
            }
        }
        self.out = out;
        Ok(())
    }

    #[cold]
    fn take_ended(&mut self, into: &mut Vec<FlowSummary>) {
        self.tracker.take_ended(into);
    }

    fn finish(&mut self) -> Vec<FlowSummary> {
        self.tracker.finish(&mut self.out)
    }
}

/// True for a QuakeWorld demo file (`.qwd` client recording, `.mvd` server recording).
pub fn is_qw_demo(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("qwd") || e.eq_ignore_ascii_case("mvd"))
}

/// Decode a QuakeWorld .qwd or .mvd file.
pub fn run_qw_demo(path: &Path, opts: &Options, sink: &mut dyn Sink) -> Result<Report, InputError> {
    let (file, data) = read_file(path)?;
    run_qw_demo_bytes(&data, file, opts, sink)
}

/// Decode a QuakeWorld demo held in memory; `file` names it (`.mvd` or else .qwd). The
/// decoding is [`qw::decode_demo_stream`]'s; this hands each message to the sink as it is
/// decoded (none is kept: memory does not grow with the file).
pub fn run_qw_demo_bytes(
    data: &[u8],
    file: String,
    opts: &Options,
    sink: &mut dyn Sink,
) -> Result<Report, InputError> {
    let io_err = |source| InputError::Io {
        file: file.clone(),
        source,
    };
    let (mut blocks, mut failed) = (0u64, None);
    let flows = qw::decode_demo_stream(&file, data, &mut |m| {
        blocks += 1;
        if !opts.detail.emits() {
            return true;
        }
        match sink.event(Event::Qw(&m)) {
            Ok(()) => true,
            Err(e) => {
                failed = Some(e);
                false
            }
        }
    });
    if let Some(e) = failed {
        return Err(io_err(e));
    }
    let report = Report {
        file: file.clone(),
        frames: blocks,
        flows,
        ..Default::default()
    };
    sink.finish(&report).map_err(io_err)?;
    Ok(report)
}
