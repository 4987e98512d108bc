//! The one pass: capture → net → per-game trackers → events pushed to a [`Sink`]. Demo files
//! enter here too, skipping capture, net and netchan. The pipeline defines the sink trait;
//! sinks only see finished events and never reach back into parsing.
use std::io::{self, Read};
use std::net::SocketAddr;
use std::path::Path;

use crate::analysis::net::sample::Sample;
use crate::capture::{CaptureError, CaptureReader};
use crate::flow::{Dir, FlowError, FlowMap, FlowSummary};
use crate::net::{Datagram, NetDecoder};
use crate::parallel::{worker_threads, Pool};
use crate::q3;
use crate::qw;

/// Something that consumes decoded events.
pub trait Sink {
    /// One decoded Quake 3 message.
    fn q3_message(&mut self, _m: &q3::message::Message) -> io::Result<()> {
        Ok(())
    }
    /// One QuakeWorld event (a decoded message, or a raw packet for demo writing).
    fn qw_event(&mut self, _e: &qw::Event) -> io::Result<()> {
        Ok(())
    }
    /// One netchan datagram's network observation (only with [`Options::samples`]).
    fn net_sample(&mut self, _s: &Sample) -> io::Result<()> {
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
    fn q3_message(&mut self, m: &q3::message::Message) -> io::Result<()> {
        self.0.iter_mut().try_for_each(|s| s.q3_message(m))
    }
    fn qw_event(&mut self, e: &qw::Event) -> io::Result<()> {
        self.0.iter_mut().try_for_each(|s| s.qw_event(e))
    }
    fn net_sample(&mut self, x: &Sample) -> io::Result<()> {
        self.0.iter_mut().try_for_each(|s| s.net_sample(x))
    }
    fn finish(&mut self, r: &Report) -> io::Result<()> {
        self.0.iter_mut().try_for_each(|s| s.finish(r))
    }
}

/// What the pass should produce.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Hand every decoded message to the sink.
    pub emit: bool,
    /// Keep descrambled server bodies on the events (demo writing).
    pub keep_raw: bool,
    /// Only these flow ids reach the sink (all flows are still tracked and counted).
    pub flows: Option<Vec<u32>>,
    /// Decode threads for order-insensitive runs (None: `QUAKECAP_THREADS`, else the cores).
    pub threads: Option<usize>,
    /// Hand a network [`Sample`] per netchan datagram to the sink (the `net` analysis).
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
    pub warnings: Vec<String>,
    /// Every warning, including those past [`MAX_WARNINGS`] that were not kept.
    pub warnings_total: u64,
    /// Datagrams not assigned to any flow because the flow tables were full.
    pub untracked_datagrams: u64,
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

/// UDP flows of no known game kept at most; datagrams of further endpoint pairs are only
/// counted ([`Report::untracked_datagrams`]), so spoofed endpoints cannot exhaust memory.
pub const MAX_OTHER_FLOWS: usize = 100_000;

/// UDP flows of no known game, keyed by their endpoint pair.
#[derive(Default)]
struct OtherFlows {
    flows: Vec<FlowSummary>,
    by_pair: FlowMap<(SocketAddr, SocketAddr), (usize, Dir)>,
}

impl OtherFlows {
    /// Remove and return the flow of these endpoints, if any.
    fn take(&mut self, a: SocketAddr, b: SocketAddr) -> Option<FlowSummary> {
        let (i, _) = self.by_pair.remove(&(a, b))?;
        self.by_pair.remove(&(b, a));
        // Keep indices stable: leave an empty row that `summaries` skips.
        Some(std::mem::take(&mut self.flows[i]))
    }

    /// Count the datagram on its flow; false when it has none and the table is full.
    fn offer(&mut self, d: &Datagram<'_>, next_id: &mut u32) -> bool {
        let (i, dir) = match self.by_pair.get(&(d.src, d.dst)) {
            Some(&v) => v,
            None if self.flows.len() >= MAX_OTHER_FLOWS => return false,
            None => {
                // The first sender is taken as the client.
                let s = FlowSummary {
                    id: *next_id,
                    game: "udp",
                    kind: "other",
                    server: d.dst.to_string(),
                    client_ip: d.src.ip().to_string(),
                    client_ports: vec![d.src.port()],
                    ..Default::default()
                };
                *next_id += 1;
                self.flows.push(s);
                let i = self.flows.len() - 1;
                self.by_pair.insert((d.src, d.dst), (i, Dir::C2s));
                self.by_pair.insert((d.dst, d.src), (i, Dir::S2c));
                (i, Dir::C2s)
            }
        };
        self.flows[i].count_packet(dir, d.payload.len(), d.ts_ns);
        true
    }
}

/// Datagrams no flow took because the flow tables were full.
#[derive(Debug, Clone, Copy, Default)]
struct Untracked {
    count: u64,
    first_frame: u64,
}

/// Every game's tracker for one stream of datagrams.
pub struct Trackers {
    next_id: u32,
    q3: q3::tracker::Tracker,
    qw: qw::Tracker,
    other: OtherFlows,
    q3_out: Vec<q3::message::Message>,
    q3_work: q3::conn::WorkQueue,
    /// Worker threads decoding Quake 3 flows, when the run is order-insensitive.
    q3_pool: Option<Pool<q3::conn::Decoder>>,
    qw_out: Vec<qw::Event>,
    filter: Option<Vec<u32>>,
    untracked: Untracked,
    emit: bool,
    samples: bool,
}

fn qw_flow(e: &qw::Event) -> u32 {
    match e {
        qw::Event::Message(m) => m.flow,
        qw::Event::Raw(r) => r.flow,
    }
}

/// Message buffers kept for reuse between the workers and the router (a batch in flight per
/// worker needs about this many).
const SPARE_BODIES: usize = 2048;

impl Trackers {
    /// Decoding goes to worker threads when nothing is emitted (the flow table) and more
    /// than one thread is available; otherwise it runs inline, in capture order.
    pub fn new(opts: &Options) -> Self {
        let threads = opts.threads.unwrap_or_else(worker_threads).max(1);
        // Samples carry what the decoder read: it must run inline, in capture order.
        let detached = threads > 1 && !opts.emit && !opts.keep_raw && !opts.samples;
        let q3_opts = q3::conn::Options {
            emit: opts.emit,
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
        Trackers {
            next_id: 1,
            q3: q3::tracker::Tracker::new(q3_opts),
            qw: qw::Tracker::new(qw_opts),
            other: OtherFlows::default(),
            q3_out: Vec::new(),
            q3_work: Default::default(),
            q3_pool,
            qw_out: Vec::new(),
            filter: opts.flows.clone(),
            untracked: Untracked::default(),
            emit: opts.emit,
            samples: opts.samples,
        }
    }

    fn wanted(&self, flow: u32) -> bool {
        self.filter.as_ref().is_none_or(|f| f.contains(&flow))
    }

    /// Route one datagram to exactly one flow and push what it decoded to the sink.
    pub fn datagram(&mut self, d: &Datagram<'_>, sink: &mut dyn Sink) -> io::Result<()> {
        let before = self.next_id;
        if self
            .q3
            .offer(d, &mut self.next_id, &mut self.q3_out, &mut self.q3_work)
        {
            if self.next_id > before {
                self.adopt_other(d, before);
            }
        } else if !self.qw.offer(d, &mut self.next_id, &mut self.qw_out)
            && !self.other.offer(d, &mut self.next_id)
        {
            if self.untracked.count == 0 {
                self.untracked.first_frame = d.frame;
            }
            self.untracked.count += 1;
        }
        if let Some(pool) = &mut self.q3_pool {
            for (flow, w) in self.q3_work.items.drain(..) {
                pool.push(flow, w);
            }
            if self.q3_work.bodies.is_empty() {
                pool.reclaim(&mut self.q3_work.bodies, SPARE_BODIES);
            }
        }
        // The flow table emits nothing: most datagrams end here, without the call.
        if self.q3_out.is_empty() && self.qw_out.is_empty() && self.q3_work.samples.is_empty() {
            return Ok(());
        }
        self.flush(sink)
    }

    /// A game flow recognised late (mid-session) takes over what was counted as unknown UDP
    /// for the same endpoints, and its earlier id (`new_id` is the id it was just given).
    fn adopt_other(&mut self, d: &Datagram<'_>, new_id: u32) {
        let Some(prior) = self.other.take(d.src, d.dst) else {
            return;
        };
        if !self.q3.adopt(d.src, d.dst, &prior) {
            return;
        }
        self.next_id -= 1;
        for m in self.q3_out.iter_mut().filter(|m| m.flow == new_id) {
            m.flow = prior.id;
        }
        for (flow, _) in self.q3_work.items.iter_mut().filter(|(f, _)| *f == new_id) {
            *flow = prior.id;
        }
    }

    fn flush(&mut self, sink: &mut dyn Sink) -> io::Result<()> {
        let mut q3_out = std::mem::take(&mut self.q3_out);
        for m in q3_out.drain(..) {
            if self.wanted(m.flow) {
                sink.q3_message(&m)?;
            }
        }
        self.q3_out = q3_out;
        let mut samples = std::mem::take(&mut self.q3_work.samples);
        for x in samples.drain(..) {
            if self.wanted(x.flow) {
                sink.net_sample(&x)?;
            }
        }
        self.q3_work.samples = samples;
        let mut qw_out = std::mem::take(&mut self.qw_out);
        for e in qw_out.drain(..) {
            let pass = match e {
                qw::Event::Message(_) => self.emit,
                qw::Event::Raw(_) => true,
            };
            if !self.wanted(qw_flow(&e)) {
                continue;
            }
            if let (true, qw::Event::Message(m)) = (self.samples, &e) {
                if let Some(x) = qw::netsample::sample(m) {
                    sink.net_sample(&x)?;
                }
            }
            if pass {
                sink.qw_event(&e)?;
            }
        }
        self.qw_out = qw_out;
        Ok(())
    }

    /// End of the stream ([`Trackers::finish`]): the flows, and what the flow tables could
    /// not hold, into the report.
    pub fn fill_report(&mut self, report: &mut Report, sink: &mut dyn Sink) -> io::Result<()> {
        report.flows = self.finish(sink)?;
        let u = self.untracked;
        report.untracked_datagrams = u.count;
        if u.count > 0 {
            // First, so it is shown however many other warnings there are.
            report.warnings_total += 1;
            report.warnings.insert(
                0,
                format!(
                    "flow table full: {} datagrams of new endpoints from frame {} on were counted \
                     but not tracked (at most {} query, {} connection and {} other flows)",
                    u.count,
                    u.first_frame,
                    q3::tracker::MAX_QUERY_FLOWS,
                    q3::tracker::MAX_CONNECTIONS,
                    MAX_OTHER_FLOWS
                ),
            );
        }
        Ok(())
    }

    /// End of the stream: wait for the workers, flush what the trackers still hold, then
    /// every flow's summary, by id.
    pub fn finish(&mut self, sink: &mut dyn Sink) -> io::Result<Vec<FlowSummary>> {
        let mut v = match self.q3_pool.take() {
            Some(pool) => {
                let logs: FlowMap<u32, q3::conn::ErrorLog> = pool
                    .finish()
                    .into_iter()
                    .map(|(flow, dec)| (flow, dec.errors))
                    .collect();
                self.q3.summaries_with(&logs)
            }
            None => self.q3.summaries(),
        };
        v.extend(self.qw.finish(&mut self.qw_out));
        self.flush(sink)?;
        v.extend(
            self.other
                .flows
                .iter()
                .filter(|f| f.packets.total() > 0)
                .cloned(),
        );
        v.sort_by_key(|f| f.id);
        Ok(v)
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
    mut reader: CaptureReader<R>,
    file: String,
    opts: &Options,
    sink: &mut dyn Sink,
    progress: &mut dyn FnMut(u64),
) -> Result<Report, InputError> {
    let mut net = NetDecoder::new();
    let mut trackers = Trackers::new(opts);
    let mut report = Report {
        file: file.clone(),
        ..Default::default()
    };
    let io_err = |source| InputError::Io {
        file: file.clone(),
        source,
    };
    let mut n = 0u64;
    loop {
        let frame = match reader.next_frame() {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) => {
                let fatal = e.is_fatal();
                push_warning(&mut report, e.to_string());
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
                trackers.datagram(&d, sink).map_err(io_err)?;
            }
            Ok(None) => {}
            Err(e) => {
                report.net_errors += 1;
                push_warning(&mut report, format!("frame {index}: {e}"));
            }
        }
        n += 1;
        if n % 4096 == 0 {
            progress(reader.bytes_read());
        }
    }
    progress(reader.bytes_read());
    trackers.fill_report(&mut report, sink).map_err(io_err)?;
    if report.frames > 0 && report.udp_datagrams == 0 && report.net_errors == report.frames {
        return Err(InputError::Unusable {
            file,
            message: report
                .warnings
                .first()
                .cloned()
                .unwrap_or_else(|| "no packet could be read".into()),
        });
    }
    sink.finish(&report).map_err(io_err)?;
    Ok(report)
}

/// At most this many warnings are kept per input (all are counted in `warnings_total`): a
/// damaged file can hold millions of bad records and memory must stay bounded.
pub const MAX_WARNINGS: usize = 100;

fn push_warning(report: &mut Report, w: String) {
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
/// gives (68 when unknown).
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
    let mut report = Report {
        file: file.clone(),
        ..Default::default()
    };
    let mut summary = FlowSummary {
        id: 1,
        game: "q3",
        kind: "demo",
        server: file.clone(),
        protocol,
        ..Default::default()
    };
    let mut state = q3::state::ClientState::default();
    let detail = q3::conn::Options {
        emit: opts.emit,
        keep_raw: opts.keep_raw,
        detached: false,
        samples: false,
    }
    .detail();
    for rec in q3::demo::Reader::new(data) {
        let rec = match rec {
            Ok(r) => r,
            Err(e) => {
                summary.push_error(FlowError {
                    frame: 0,
                    dir: Some(Dir::S2c),
                    message: e.to_string(),
                });
                push_warning(&mut report, e.to_string());
                continue;
            }
        };
        report.frames += 1;
        summary.count_packet(Dir::S2c, rec.body.len(), 0);
        let mut r = q3::bits::BitReader::new(rec.body);
        let parsed = q3::svc::parse_server_message_with(&mut r, None, rec.seq, &mut state, detail);
        let error = parsed.error.as_ref().map(|e| {
            format!(
                "record {} (seq {}, file offset {}): {e}",
                rec.index, rec.seq, rec.offset
            )
        });
        if let Some(e) = &error {
            summary.push_error(FlowError {
                frame: rec.index,
                dir: Some(Dir::S2c),
                message: e.clone(),
            });
        }
        if summary.name.is_none() && state.gamestates > 0 {
            summary.name = state.player_name(state.client_num);
        }
        if opts.emit || opts.keep_raw {
            let m = q3::message::Message {
                flow: 1,
                game: "q3",
                dir: Dir::S2c,
                frame: rec.index,
                time: 0.0,
                seq: Some(rec.seq),
                fragmented: false,
                kind: "server",
                body: q3::message::Body::Server(parsed),
                error,
                raw: opts.keep_raw.then(|| rec.body.to_vec()),
                protocol: summary.protocol.unwrap_or(68),
                client_gone: false,
                file_offset: Some(rec.offset),
            };
            sink.q3_message(&m).map_err(io_err)?;
        }
    }
    report.flows = vec![summary];
    sink.finish(&report).map_err(io_err)?;
    Ok(report)
}

/// The protocol a Quake 3 demo file's extension names (`.dm_68` → 68).
pub fn demo_protocol(path: &Path) -> Option<u32> {
    path.extension()?
        .to_str()?
        .strip_prefix("dm_")?
        .parse()
        .ok()
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
    let io_err = |source| InputError::Io {
        file: file.clone(),
        source,
    };
    let mut events = Vec::new();
    let flows = qw::decode_demo_file(&file, &data, &mut events);
    if opts.emit {
        for e in &events {
            sink.qw_event(e).map_err(io_err)?;
        }
    }
    let report = Report {
        file: file.clone(),
        frames: events.len() as u64,
        flows,
        ..Default::default()
    };
    sink.finish(&report).map_err(io_err)?;
    Ok(report)
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
                    push_warning(report, format!("{}: {e}", self.file));
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
                push_warning(
                    &mut report,
                    format!("{}: frame {}: {e}", src.file, of.index),
                );
            }
        }
        src.refill(&mut report);
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
