//! The one pass: capture → net → per-game trackers → events pushed to a [`Sink`]. Demo files
//! enter here too, skipping capture, net and netchan: the pipeline only picks the game's
//! `decode_demo_file` ([`q3::demo_file`], [`qw::decode_demo_stream`]) and streams what it
//! decodes. The pipeline defines the sink trait; sinks see one [`Event`] type for both games,
//! only finished events, and never reach back into parsing.
use std::io::{self, Read};
use std::path::Path;

use crate::capture::{CaptureError, CaptureReader};
use crate::error::{Error, ErrorKind};
pub use crate::event::Event;
use crate::flow::table::QueryAggregate;
use crate::flow::{AggregateCounts, FlowMap, FlowSummary, FlowTable};
use crate::net::{Datagram, NetDecoder};
use crate::parallel::{worker_threads, Pool};
use crate::q3;
use crate::qw;

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
    /// then decoded only as far as the samples read ([`q3::svc::Detail::Samples`]): the flow
    /// rows' error counts miss errors in what is left unread.
    pub samples: bool,
}

/// The outcome of one input.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub file: String,
    pub flows: Vec<FlowSummary>,
    pub frames: u64,
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
    #[error("{file}: {source}")]
    Capture { file: String, source: CaptureError },
    #[error("{file}: {source}")]
    Io { file: String, source: io::Error },
    #[error("{file}: {message}")]
    Unusable { file: String, message: String },
}

pub use crate::flow::table::MAX_OTHER_FLOWS;

/// True when `flow` passes the `--flow` filter (none: every flow).
#[inline]
fn wanted(filter: &Option<Vec<u32>>, flow: u32) -> bool {
    filter.as_ref().is_none_or(|f| f.contains(&flow))
}

/// Every game's tracker for one stream of datagrams.
pub struct Trackers {
    /// Flow ids, limits, other UDP and the aggregates: shared by every game.
    table: FlowTable,
    q3: q3::tracker::Tracker,
    qw: qw::Tracker,
    q3_out: Vec<q3::message::Message>,
    q3_work: q3::conn::WorkQueue,
    /// Worker threads decoding Quake 3 flows, when the run is order-insensitive.
    q3_pool: Option<Pool<q3::conn::Decoder>>,
    qw_out: Vec<qw::Event>,
    filter: Option<Vec<u32>>,
    emit: bool,
    samples: bool,
    /// Network samples at the front of `q3_work.samples` held back from earlier datagrams.
    samples_held: usize,
    /// Active Quake 3 connections from which datagrams' state is prefetched
    /// ([`PREFETCH_MIN_ACTIVE`]; tests lower it).
    prefetch_min_active: usize,
    /// Summaries of the flows just released, for [`Event::FlowEnd`].
    ended: Vec<FlowSummary>,
}

/// Network samples are handed out once this many are queued, or before the next other output
/// (in decode order either way): `net` has a sample alone for most datagrams, and a flush per
/// datagram cost more than the samples' own dispatch. Bounded, and the sinks that read
/// samples keep their own state, so the delay changes nothing they see.
const SAMPLE_BATCH: usize = 64;

/// Message buffers kept for reuse between the workers and the router (a batch in flight per
/// worker needs about this many).
const SPARE_BODIES: usize = 2048;

impl Trackers {
    /// Decoding goes to worker threads when nothing is emitted (the flow table) and more
    /// than one thread is available; otherwise it runs inline, in capture order.
    pub fn new(opts: &Options) -> Self {
        let threads = opts.threads.unwrap_or_else(worker_threads).max(1);
        // Samples carry what the decoder read: it must run inline, in capture order.
        let detached = threads > 1 && !opts.detail.emits() && !opts.keep_raw && !opts.samples;
        let q3_opts = q3::conn::Options {
            detail: opts.detail,
            keep_raw: opts.keep_raw,
            detached,
            samples: opts.samples,
        };
        let q3_pool = detached.then(|| Pool::new(threads, move || q3::conn::Decoder::new(q3_opts)));
        // QuakeWorld always decodes (the flow table counts failed messages too).
        let qw_opts = qw::Options {
            decode: true,
            keep_raw: opts.keep_raw,
        };
        // Flow ends are told only where decoding runs in capture order (one event stream).
        let (mut q3, mut qw) = (
            q3::tracker::Tracker::new(q3_opts),
            qw::Tracker::new(qw_opts),
        );
        if !detached {
            q3 = q3.with_flow_ends();
            qw = qw.with_flow_ends();
        }
        Trackers {
            table: FlowTable::default(),
            q3,
            qw,
            q3_out: Vec::new(),
            q3_work: Default::default(),
            q3_pool,
            qw_out: Vec::new(),
            filter: opts.flows.clone(),
            emit: opts.detail.emits(),
            samples: opts.samples,
            samples_held: 0,
            prefetch_min_active: PREFETCH_MIN_ACTIVE,
            ended: Vec::new(),
        }
    }

    /// True while enough connections interleave for prefetching to pay (see [`Lookahead`]).
    #[inline]
    fn prefetching(&self) -> bool {
        self.q3.active() >= self.prefetch_min_active
    }

    /// Look up the flow of a later datagram and prefetch its state's first level (see
    /// [`Lookahead`]); only Quake 3 connections are looked up.
    #[inline]
    fn prefetch_ahead(&mut self, d: &Datagram<'_>) -> q3::tracker::Ahead {
        self.q3.prefetch_ahead(d)
    }

    /// Prefetch level `level` of a later datagram's connection state.
    #[inline]
    fn prefetch(&self, a: &q3::tracker::Ahead, level: u8) {
        self.q3.prefetch(a, level);
    }

    fn wanted(&self, flow: u32) -> bool {
        wanted(&self.filter, flow)
    }

    /// Route one datagram to exactly one flow and push what it decoded to the sink.
    pub fn datagram(&mut self, d: &Datagram<'_>, sink: &mut dyn Sink) -> io::Result<()> {
        self.datagram_hinted(d, None, sink)
    }

    /// [`Self::datagram`], with the Quake 3 lookup made for it as a datagram ahead (see
    /// [`Lookahead`]).
    fn datagram_hinted(
        &mut self,
        d: &Datagram<'_>,
        hint: Option<&q3::tracker::Ahead>,
        sink: &mut dyn Sink,
    ) -> io::Result<()> {
        if !self.q3.offer_hinted(
            d,
            hint,
            &mut self.table,
            &mut self.q3_out,
            &mut self.q3_work,
        ) && !self.qw.offer(d, &mut self.table, &mut self.qw_out)
        {
            self.table.offer_other(d);
        }
        if self.q3.has_ended() || self.qw.has_ended() {
            self.end_flows(sink)?;
        }
        let prefetching = self.prefetching();
        if let Some(pool) = &mut self.q3_pool {
            pool.set_prefetch(prefetching);
            for (flow, w) in self.q3_work.items.drain(..) {
                pool.push(flow, w);
            }
            if self.q3_work.bodies.is_empty() {
                pool.reclaim(&mut self.q3_work.bodies, SPARE_BODIES);
            }
        }
        // The flow table emits nothing: most datagrams end here, without the call; network
        // samples alone wait for more (see [`SAMPLE_BATCH`]).
        if self.q3_out.is_empty() && self.qw_out.is_empty() {
            let n = self.q3_work.samples.len();
            if n == 0 {
                return Ok(());
            }
            if n < SAMPLE_BATCH {
                self.samples_held = n;
                return Ok(());
            }
        }
        self.flush(sink)
    }

    /// Tell the sink of the flows the trackers released while offering the current datagram
    /// (they scan for idle flows before routing it): after the samples held from earlier
    /// datagrams, before what this one decoded (it may be a released flow's, come back).
    #[cold]
    #[inline(never)]
    fn end_flows(&mut self, sink: &mut dyn Sink) -> io::Result<()> {
        self.flush_samples(sink, self.samples_held)?;
        let mut ended = std::mem::take(&mut self.ended);
        self.q3.take_ended(&mut ended);
        self.qw.take_ended(&mut ended);
        let told = ended
            .iter()
            .filter(|f| self.wanted(f.id))
            .try_for_each(|f| sink.event(Event::FlowEnd(f)));
        ended.clear();
        self.ended = ended;
        told
    }

    /// Hand out what the queues hold, in the order it was decoded: the held network samples
    /// came before anything queued since, and a message's own sample follows it. Most calls
    /// find one queue empty (or all), so the empty ones are not taken and drained.
    fn flush(&mut self, sink: &mut dyn Sink) -> io::Result<()> {
        if !self.q3_out.is_empty() {
            if self.samples_held > 0 {
                self.flush_samples(sink, self.samples_held)?;
            }
            self.flush_q3(sink)?;
        }
        if !self.q3_work.samples.is_empty() {
            self.flush_samples(sink, usize::MAX)?;
        }
        if !self.qw_out.is_empty() {
            self.flush_qw(sink)?;
        }
        Ok(())
    }

    /// Hand the queued Quake 3 messages to the sink.
    #[inline]
    fn flush_q3(&mut self, sink: &mut dyn Sink) -> io::Result<()> {
        // Handed out by reference and cleared after: a message is a few hundred bytes, and
        // moving each out of the queue first was a copy per message.
        let q3_out = std::mem::take(&mut self.q3_out);
        let sent = q3_out
            .iter()
            .filter(|m| self.wanted(m.flow))
            .try_for_each(|m| sink.event(Event::Q3(m)));
        self.q3_out = q3_out;
        self.q3_out.clear();
        sent
    }

    /// Hand the first `n` queued Quake 3 network samples (all, when fewer) to the sink.
    fn flush_samples(&mut self, sink: &mut dyn Sink, n: usize) -> io::Result<()> {
        let n = n.min(self.q3_work.samples.len());
        // The queue stays in place, borrowed beside the filter (no take and put back).
        let mut sent = Ok(());
        for x in &self.q3_work.samples[..n] {
            if wanted(&self.filter, x.flow) {
                sent = sink.event(Event::NetSample(x));
                if sent.is_err() {
                    break;
                }
            }
        }
        // All of them, the common case: a clear, not a drain that moves the rest down.
        if n == self.q3_work.samples.len() {
            self.q3_work.samples.clear();
        } else {
            self.q3_work.samples.drain(..n);
        }
        self.samples_held = self.samples_held.saturating_sub(n);
        sent
    }

    /// Hand the queued QuakeWorld events (and with them their network samples) to the sink.
    #[inline]
    fn flush_qw(&mut self, sink: &mut dyn Sink) -> io::Result<()> {
        let mut qw_out = std::mem::take(&mut self.qw_out);
        for e in qw_out.drain(..) {
            if let (true, qw::Event::Message(m)) = (self.samples, &e) {
                if self.wanted(m.flow) {
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
            if self.wanted(e.flow()) {
                sink.event(e)?;
            }
        }
        self.qw_out = qw_out;
        Ok(())
    }

    /// End of the stream ([`Trackers::finish`]): the flows, and what the flow tables could
    /// not hold, into the report.
    pub fn fill_report(&mut self, report: &mut Report, sink: &mut dyn Sink) -> io::Result<()> {
        report.flows = self.finish(sink)?;
        report.aggregates = self.table.aggregates().iter().map(aggregate_row).collect();
        // Table-full warnings go first, so they are shown however many others there are.
        let (refused, first_refused) = self.table.rows_refused();
        if refused > 0 {
            let text = format!(
                "flow rows full: {refused} datagrams that would have started flows, from frame \
                 {first_refused} on, were summed in the aggregate rows (at most {} flows per \
                 game in one input)",
                q3::tracker::MAX_FLOW_ROWS
            );
            warn_first(report, text, first_refused);
        }
        let (count, first_frame) = self.table.untracked();
        report.untracked_datagrams = count;
        if count > 0 {
            let text = format!(
                "flow table full: {count} datagrams of new endpoints from frame {first_frame} on \
                 were counted but not tracked (at most {} query and {} connection flows at a \
                 time, {} flows in all per game, and {MAX_OTHER_FLOWS} other flows)",
                q3::tracker::MAX_QUERY_FLOWS,
                q3::tracker::MAX_CONNECTIONS,
                q3::tracker::MAX_FLOW_ROWS,
            );
            warn_first(report, text, first_frame);
        }
        Ok(())
    }

    /// End of the stream: wait for the workers, flush what the trackers still hold, then
    /// every flow's summary, by id.
    pub fn finish(&mut self, sink: &mut dyn Sink) -> io::Result<Vec<FlowSummary>> {
        let mut v = match self.q3_pool.take() {
            Some(pool) => {
                let logs: FlowMap<u32, q3::conn::DecodeLog> = pool
                    .finish()
                    .into_iter()
                    .map(|(flow, dec)| (flow, dec.log))
                    .collect();
                self.q3.summaries_with(&logs)
            }
            None => self.q3.summaries(),
        };
        v.extend(self.qw.finish(&mut self.qw_out));
        // The samples still held came before what the end of the stream decoded.
        self.flush_samples(sink, usize::MAX)?;
        self.flush(sink)?;
        v.extend(self.table.other_summaries().cloned());
        v.sort_by_key(|f| f.id);
        Ok(v)
    }
}

/// An aggregate as a row of the flows report (no id: it is not a flow).
fn aggregate_row(a: &QueryAggregate) -> FlowSummary {
    FlowSummary {
        game: a.game,
        kind: a.kind,
        server: a.server.clone(),
        bytes: crate::flow::PerDir {
            c2s: a.bytes,
            s2c: 0,
        },
        packets: crate::flow::PerDir {
            c2s: a.requests,
            s2c: a.answered,
        },
        first_time: a.first_time,
        last_time: a.last_time,
        aggregate: Some(AggregateCounts {
            command: a.command.clone(),
            requests: a.requests,
            sources: a.sources.estimate(),
            answered: a.answered,
        }),
        ..Default::default()
    }
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
    mut reader: CaptureReader<R>,
    file: String,
    opts: &Options,
    sink: &mut dyn Sink,
    progress: &mut dyn FnMut(u64),
    prefetch_min_active: usize,
) -> Result<(Report, u64), InputError> {
    let mut net = NetDecoder::new();
    let mut trackers = Trackers::new(opts);
    trackers.prefetch_min_active = prefetch_min_active;
    let mut report = Report {
        file: file.clone(),
        ..Default::default()
    };
    let io_err = |source| InputError::Io {
        file: file.clone(),
        source,
    };
    let mut n = 0u64;
    let mut ahead = Lookahead::new();
    loop {
        ahead.step(&reader, &mut trackers);
        let frame = match reader.next_frame() {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) => {
                let fatal = e.is_fatal();
                push_warning(&mut report, Error::from(&e));
                if fatal {
                    report.fatal = Some(e.to_string());
                    break;
                }
                continue;
            }
        };
        report.frames += 1;
        let index = frame.index;
        match net.decode(&frame) {
            Ok(Some(d)) => {
                report.udp_datagrams += 1;
                trackers
                    .datagram_hinted(&d, ahead.current(), sink)
                    .map_err(io_err)?;
            }
            Ok(None) => {}
            Err(e) => {
                report.net_errors += 1;
                push_warning(&mut report, Error::from(&e).frame(index));
            }
        }
        n += 1;
        if n % 4096 == 0 {
            progress(reader.bytes_read());
        }
    }
    progress(reader.bytes_read());
    warn_unfinished(&mut report, &net, None);
    let hints_taken = trackers.q3.hints_taken();
    trackers.fill_report(&mut report, sink).map_err(io_err)?;
    if report.frames > 0 && report.udp_datagrams == 0 && report.net_errors == report.frames {
        return Err(InputError::Unusable {
            file,
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

/// Software pipelining across datagrams (issue 16): with a thousand connections
/// interleaved, each datagram's connection state has left the caches since that
/// connection's previous datagram, and decoding waits on memory for it, pointer after
/// pointer. The records after the current one are already in the reader's buffer, so the
/// flow of the one [`LOOKAHEAD_LEVELS`] records ahead is looked up and its connection's
/// first level prefetched, and each nearer record gets the next level, whose addresses the
/// level before brought in ([`q3::conn::Connection::prefetch`]): the loads of every level
/// overlap the decoding of the records in between. The lookup is kept for routing that
/// record (checked, not trusted). Hints only: nothing read here changes what is decoded.
///
/// With few connections their state stays in cache and the prefetching (a few hundred
/// instructions per datagram) is pure cost: it runs only while at least
/// [`PREFETCH_MIN_ACTIVE`] Quake 3 connections were active in the tracker's last idle scan.
struct Lookahead {
    /// What the lookups found for the next records, by record number modulo the ring
    /// size (the current record's too, for its routing).
    ring: [Option<q3::tracker::Ahead>; LOOKAHEAD_RING],
    /// Slot of the record being handled.
    current: usize,
    /// File offset of the block after the last one peeked (None: find it again).
    cursor: Option<u64>,
}

/// Levels of pointers prefetched ahead (see [`q3::conn::Connection::prefetch`]): the
/// lookahead is this many records, one level per record. Timed on the 840-lane capture
/// (one thread) against 2 and 3 levels, and against 5 levels spaced 2 and 3 records
/// apart: none was better, though the differences were within the machine's noise.
const LOOKAHEAD_LEVELS: usize = 5;
const LOOKAHEAD_RING: usize = 8;

/// Active Quake 3 connections from which the pipeline prefetches (see `Lookahead`):
/// at 19 live connections (the 16-lane benchmark) it cost about a fifth more CPU time
/// (17 % more instructions) and hid nothing; at 980 it saves about a tenth. In between
/// (one thread, prefetching always on against never, median CPU time of 8 paired runs on
/// 1.4 M-frame captures): 70 live 1.09×, 140 live 0.99×, 280 live 0.99×, 560 live 0.93×.
/// It starts to pay at about this many (~14 MB of decode state, several times the L2
/// caches).
pub const PREFETCH_MIN_ACTIVE: usize = 128;

impl Lookahead {
    fn new() -> Self {
        Lookahead {
            ring: [None; LOOKAHEAD_RING],
            current: LOOKAHEAD_RING - 1,
            cursor: None,
        }
    }

    /// Before the next record is read: look up the record [`LOOKAHEAD_LEVELS`] ahead of
    /// it, and give each nearer one the next level of its prefetch.
    #[inline]
    fn step<R: Read>(&mut self, reader: &CaptureReader<R>, trackers: &mut Trackers) {
        let slot = |k: usize| k % LOOKAHEAD_RING;
        self.current = slot(self.current + 1);
        if !trackers.prefetching() {
            // The ring keeps old lookups; they are checked before use.
            self.cursor = None;
            return;
        }
        let far = LOOKAHEAD_LEVELS;
        let peeked = reader.peek(far, self.cursor);
        self.cursor = peeked.as_ref().map(|p| p.2);
        self.ring[slot(self.current + far)] = peeked
            .and_then(|(link, data, _)| crate::net::peek_udp4(link, data))
            .map(|d| trackers.prefetch_ahead(&d));
        for level in 1..far {
            if let Some(a) = &self.ring[slot(self.current + far - level)] {
                trackers.prefetch(a, level as u8);
            }
        }
    }

    /// What the lookup ahead found for the record being handled.
    #[inline]
    fn current(&self) -> Option<&q3::tracker::Ahead> {
        self.ring[self.current].as_ref()
    }
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

fn push_warning(report: &mut Report, w: Error) {
    report.warnings_total += 1;
    if report.warnings.len() < MAX_WARNINGS {
        report.warnings.push(w);
    }
}

/// Decode a Quake 3 demo file (.dm_66/67/68/71) through the same decoders.
pub fn run_q3_demo(path: &Path, opts: &Options, sink: &mut dyn Sink) -> Result<Report, InputError> {
    let file = path.display().to_string();
    let data = std::fs::read(path).map_err(|source| InputError::Io {
        file: file.clone(),
        source,
    })?;
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

/// True for a QuakeWorld demo file (`.qwd` client recording, `.mvd` server recording).
pub fn is_qw_demo(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("qwd") || e.eq_ignore_ascii_case("mvd"))
}

/// True for any demo file quakecap reads (by extension).
pub fn is_demo(path: &Path) -> bool {
    demo_protocol(path).is_some() || is_qw_demo(path)
}

/// Decode a demo file of either game through the same decoders as captures.
pub fn run_demo(path: &Path, opts: &Options, sink: &mut dyn Sink) -> Result<Report, InputError> {
    if is_qw_demo(path) {
        run_qw_demo(path, opts, sink)
    } else {
        run_q3_demo(path, opts, sink)
    }
}

/// Decode a QuakeWorld .qwd or .mvd file.
pub fn run_qw_demo(path: &Path, opts: &Options, sink: &mut dyn Sink) -> Result<Report, InputError> {
    let file = path.display().to_string();
    let data = std::fs::read(path).map_err(|source| InputError::Io {
        file: file.clone(),
        source,
    })?;
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

/// Decode a demo file of either game held in memory, chosen by `file`'s extension.
pub fn run_demo_bytes(
    data: &[u8],
    file: String,
    opts: &Options,
    sink: &mut dyn Sink,
) -> Result<Report, InputError> {
    if is_qw_demo(Path::new(&file)) {
        run_qw_demo_bytes(data, file, opts, sink)
    } else {
        let protocol = demo_protocol(Path::new(&file));
        run_q3_demo_bytes(data, file, protocol, opts, sink)
    }
}

/// One input of a merged run: its reader, its own IP reassembly, and the next frame, owned.
struct Source {
    file: String,
    reader: CaptureReader<std::fs::File>,
    net: NetDecoder,
    next: Option<OwnedFrame>,
}

/// A frame copied out of its reader's buffer so several files can be interleaved.
struct OwnedFrame {
    index: u64,
    ts_ns: i64,
    link: crate::capture::LinkType,
    data: Vec<u8>,
    orig_len: u32,
    file_offset: u64,
}

impl Source {
    /// Read ahead one frame; problems go to the report's warnings.
    fn refill(&mut self, report: &mut Report) {
        self.next = loop {
            match self.reader.next_frame() {
                Ok(Some(f)) => {
                    break Some(OwnedFrame {
                        index: f.index,
                        ts_ns: f.ts_ns,
                        link: f.link,
                        data: f.data.to_vec(),
                        orig_len: f.orig_len,
                        file_offset: f.file_offset,
                    })
                }
                Ok(None) => break None,
                Err(e) => {
                    push_warning(report, Error::from(&e).file(&self.file));
                    if e.is_fatal() {
                        break None;
                    }
                }
            }
        };
    }
}

/// Run several capture files as one stream in time order (like mergecap): flow ids and
/// connection state continue across files; equal times keep the order the files were given.
pub fn run_merged(
    paths: &[std::path::PathBuf],
    opts: &Options,
    sink: &mut dyn Sink,
) -> Result<Report, InputError> {
    let mut trackers = Trackers::new(opts);
    let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let mut report = Report {
        file: names.join("+"),
        ..Default::default()
    };
    let mut sources = Vec::new();
    for path in paths {
        let file = path.display().to_string();
        let reader = CaptureReader::open(path).map_err(|source| InputError::Capture {
            file: file.clone(),
            source,
        })?;
        let mut src = Source {
            file,
            reader,
            net: NetDecoder::new(),
            next: None,
        };
        src.refill(&mut report);
        sources.push(src);
    }
    while let Some(i) = (0..sources.len())
        .filter(|&i| sources[i].next.is_some())
        .min_by_key(|&i| sources[i].next.as_ref().map(|f| f.ts_ns))
    {
        let src = &mut sources[i];
        let Some(of) = src.next.take() else { break };
        let frame = crate::capture::Frame {
            index: of.index,
            ts_ns: of.ts_ns,
            link: of.link,
            data: &of.data,
            orig_len: of.orig_len,
            file_offset: of.file_offset,
        };
        report.frames += 1;
        match src.net.decode(&frame) {
            Ok(Some(d)) => {
                report.udp_datagrams += 1;
                let file = &src.file;
                trackers
                    .datagram(&d, sink)
                    .map_err(|source| InputError::Io {
                        file: file.clone(),
                        source,
                    })?;
            }
            Ok(None) => {}
            Err(e) => {
                report.net_errors += 1;
                push_warning(&mut report, Error::from(&e).file(&src.file).frame(of.index));
            }
        }
        src.refill(&mut report);
    }
    for src in &sources {
        warn_unfinished(&mut report, &src.net, Some(&src.file));
    }
    trackers
        .fill_report(&mut report, sink)
        .map_err(|source| InputError::Io {
            file: report.file.clone(),
            source,
        })?;
    sink.finish(&report).map_err(|source| InputError::Io {
        file: report.file.clone(),
        source,
    })?;
    Ok(report)
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
