//! Quake 3 in the pass: its tracker behind [`GameTracker`], with the worker threads that decode
//! its flows in order-insensitive runs, the batching of its network samples and the lookups
//! made ahead for prefetching; and its demo files.
use std::io;
use std::path::Path;

use super::lookahead::DISTANCE;
use super::tracker::{GameTracker, Offered, Setup};
use super::{push_warning, read_file, wanted, Event, InputError, Options, Report, Sink};
use crate::flow::{FlowMap, FlowSummary, FlowTable};
use crate::net::Datagram;
use crate::parallel::Pool;
use crate::q3;
use crate::q3::tracker::Ahead;

/// Network samples are handed out once this many are queued, or before the next other output
/// (in decode order either way): `net` has a sample alone for most datagrams, and a flush per
/// datagram cost more than the samples' own dispatch. Bounded, and the sinks that read
/// samples keep their own state, so the delay changes nothing they see.
const SAMPLE_BATCH: usize = 64;

/// Message buffers kept for reuse between the workers and the router (a batch in flight per
/// worker needs about this many).
const SPARE_BODIES: usize = 2048;

/// The lookups made ahead, by record number modulo its size (at least [`DISTANCE`] + 1).
const RING: usize = 8;

/// Quake 3's tracker and what it queued.
pub(super) struct Quake3 {
    tracker: q3::tracker::Tracker,
    out: Vec<q3::message::Message>,
    work: q3::conn::WorkQueue,
    /// Worker threads decoding the flows, when the run is order-insensitive.
    pool: Option<Pool<q3::conn::Decoder>>,
    filter: Option<Vec<u32>>,
    /// Network samples at the front of `work.samples` held back from earlier datagrams:
    /// those there when the current datagram was offered.
    samples_held: usize,
    /// Active connections from which datagrams' state is prefetched (see
    /// [`super::lookahead`]).
    prefetch_min_active: usize,
    /// What the lookups ahead found for the next records (the current record's too, for
    /// its routing), by record number modulo [`RING`].
    ring: [Option<Ahead>; RING],
    current: usize,
    /// The current record's slot was filled by a lookup ahead (prefetching was on).
    hinted: bool,
}

impl Quake3 {
    pub(super) fn new(setup: &Setup) -> Self {
        let opts = &setup.opts;
        let q3_opts = q3::conn::Options {
            detail: opts.detail,
            keep_raw: opts.keep_raw,
            detached: setup.detached,
            samples: opts.samples,
        };
        let pool = setup
            .detached
            .then(|| Pool::new(setup.threads, move || q3::conn::Decoder::new(q3_opts)));
        let mut tracker = q3::tracker::Tracker::new(q3_opts);
        // Flow ends are told only where decoding runs in capture order (one event stream).
        if !setup.detached {
            tracker = tracker.with_flow_ends();
        }
        Quake3 {
            tracker,
            out: Vec::new(),
            work: Default::default(),
            pool,
            filter: opts.flows.clone(),
            samples_held: 0,
            prefetch_min_active: setup.prefetch_min_active,
            ring: [None; RING],
            current: RING - 1,
            hinted: false,
        }
    }

    /// True while enough connections interleave for prefetching to pay.
    #[inline]
    fn prefetching(&self) -> bool {
        self.tracker.active() >= self.prefetch_min_active
    }

    /// Hand the queued messages to the sink.
    #[inline]
    fn flush_messages(&mut self, sink: &mut dyn Sink) -> io::Result<()> {
        // Handed out by reference and cleared after: a message is a few hundred bytes, and
        // moving each out of the queue first was a copy per message.
        let out = std::mem::take(&mut self.out);
        let sent = out
            .iter()
            .filter(|m| wanted(&self.filter, m.flow))
            .try_for_each(|m| sink.event(Event::Q3(m)));
        self.out = out;
        self.out.clear();
        sent
    }

    /// Hand the first `n` queued network samples (all, when fewer) to the sink.
    fn flush_samples(&mut self, sink: &mut dyn Sink, n: usize) -> io::Result<()> {
        let n = n.min(self.work.samples.len());
        // The queue stays in place, borrowed beside the filter (no take and put back).
        let mut sent = Ok(());
        for x in &self.work.samples[..n] {
            if wanted(&self.filter, x.flow) {
                sent = sink.event(Event::NetSample(x));
                if sent.is_err() {
                    break;
                }
            }
        }
        // All of them, the common case: a clear, not a drain that moves the rest down.
        if n == self.work.samples.len() {
            self.work.samples.clear();
        } else {
            self.work.samples.drain(..n);
        }
        self.samples_held = self.samples_held.saturating_sub(n);
        sent
    }
}

impl GameTracker for Quake3 {
    fn game(&self) -> &'static str {
        "q3"
    }

    #[inline]
    fn offer(&mut self, d: &Datagram<'_>, table: &mut FlowTable) -> Offered {
        // Every sample queued now came with an earlier datagram, and was held back.
        self.samples_held = self.work.samples.len();
        let hint = if std::mem::take(&mut self.hinted) {
            self.ring[self.current]
        } else {
            None
        };
        let taken =
            self.tracker
                .offer_hinted(d, hint.as_ref(), table, &mut self.out, &mut self.work);
        if self.pool.is_some() {
            let prefetching = self.prefetching();
            if let Some(pool) = &mut self.pool {
                pool.set_prefetch(prefetching);
                for (flow, w) in self.work.items.drain(..) {
                    pool.push(flow, w);
                }
                if self.work.bodies.is_empty() {
                    pool.reclaim(&mut self.work.bodies, SPARE_BODIES);
                }
            }
        }
        Offered {
            taken,
            // Network samples alone wait for more (see [`SAMPLE_BATCH`]).
            output: !self.out.is_empty() || self.work.samples.len() >= SAMPLE_BATCH,
            ended: self.tracker.has_ended(),
            looks_ahead: self.prefetching(),
        }
    }

    fn flush_held(&mut self, sink: &mut dyn Sink) -> io::Result<()> {
        self.flush_samples(sink, self.samples_held)
    }

    /// The held network samples came before anything queued since, and a message's own
    /// sample follows it. Most calls find one queue empty (or both).
    fn flush(&mut self, sink: &mut dyn Sink) -> io::Result<()> {
        if !self.out.is_empty() {
            if self.samples_held > 0 {
                self.flush_samples(sink, self.samples_held)?;
            }
            self.flush_messages(sink)?;
        }
        if !self.work.samples.is_empty() {
            self.flush_samples(sink, usize::MAX)?;
        }
        Ok(())
    }

    #[cold]
    fn take_ended(&mut self, into: &mut Vec<FlowSummary>) {
        self.tracker.take_ended(into);
    }

    fn finish(&mut self) -> Vec<FlowSummary> {
        let summaries = match self.pool.take() {
            Some(pool) => {
                let logs: FlowMap<u32, q3::conn::DecodeLog> = pool
                    .finish()
                    .into_iter()
                    .map(|(flow, dec)| (flow, dec.log))
                    .collect();
                self.tracker.summaries_with(&logs)
            }
            None => self.tracker.summaries(),
        };
        // Every sample left is handed out by the flushes that follow.
        self.samples_held = self.work.samples.len();
        summaries
    }

    /// Look up the flow of the datagram [`DISTANCE`] records ahead and prefetch its state's
    /// first level; each nearer record's connection gets the next level, whose addresses
    /// the level before brought in ([`q3::conn::Connection::prefetch`]). The lookup is kept
    /// for routing that record (checked, not trusted).
    #[inline]
    fn look_ahead(&mut self, later: Option<&Datagram<'_>>) {
        let slot = |k: usize| k % RING;
        self.current = slot(self.current + 1);
        self.ring[slot(self.current + DISTANCE)] = later.map(|d| self.tracker.prefetch_ahead(d));
        for level in 1..DISTANCE {
            if let Some(a) = &self.ring[slot(self.current + DISTANCE - level)] {
                self.tracker.prefetch(a, level as u8);
            }
        }
        self.hinted = true;
    }

    fn hints_taken(&self) -> u64 {
        self.tracker.hints_taken()
    }
}

/// Decode a Quake 3 demo file (.dm_66/67/68/71) through the same decoders.
pub fn run_q3_demo(path: &Path, opts: &Options, sink: &mut dyn Sink) -> Result<Report, InputError> {
    let (file, data) = read_file(path)?;
    run_q3_demo_bytes(&data, file, demo_protocol(path), opts, sink)
}

/// Decode a Quake 3 demo held in memory; `file` names it, `protocol` is the one its name
/// gives (68 when unknown). The decoding is [`q3::demo_file`]'s; this streams its messages to
/// the sink.
pub fn run_q3_demo_bytes(
    data: &[u8],
    file: String,
    protocol: Option<u32>,
    opts: &Options,
    sink: &mut dyn Sink,
) -> Result<Report, InputError> {
    let io_err = |source| InputError::Io {
        file: file.clone(),
        source,
    };
    let q3_opts = q3::conn::Options {
        detail: opts.detail,
        keep_raw: opts.keep_raw,
        detached: false,
        samples: false,
    };
    let mut demo = q3::demo_file::Decoder::new(&file, data, protocol, q3_opts);
    for m in &mut demo {
        sink.event(Event::Q3(&m)).map_err(io_err)?;
    }
    let mut report = Report {
        file: file.clone(),
        frames: demo.records(),
        ..Default::default()
    };
    for w in demo.take_warnings() {
        push_warning(&mut report, w);
    }
    report.flows = demo.finish();
    sink.finish(&report).map_err(io_err)?;
    Ok(report)
}

/// The protocol a Quake 3 demo file's extension names (`.dm_68` → 68).
pub fn demo_protocol(path: &Path) -> Option<u32> {
    q3::demo_file::protocol_of(path.file_name()?.to_str()?)
}

/// The protocol a Quake 3 demo is read with: its name's, unless its first gamestate's
/// serverinfo names one of other tables (a Quake Live demo piped with no name, or renamed).
pub fn demo_protocol_of(path: &Path, data: &[u8]) -> Option<u32> {
    q3::demo_file::protocol_for(demo_protocol(path), data)
}
