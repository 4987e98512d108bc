//! The one pass: capture → net → per-game trackers → events pushed to a [`Sink`]. Demo files
//! enter here too, skipping capture, net and netchan. The pipeline defines the sink trait;
//! sinks only see finished events and never reach back into parsing.
use std::io;
use std::net::SocketAddr;
use std::path::Path;

use crate::capture::{CaptureError, CaptureReader};
use crate::flow::{Dir, FlowError, FlowMap, FlowSummary};
use crate::net::{Datagram, NetDecoder};
use crate::parallel::{worker_threads, Pool};
use crate::q3;

/// Something that consumes decoded events.
pub trait Sink {
    /// One decoded Quake 3 message.
    fn q3_message(&mut self, _m: &q3::message::Message) -> io::Result<()> {
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

/// UDP flows of no known game, keyed by their endpoint pair.
#[derive(Default)]
struct OtherFlows {
    flows: Vec<FlowSummary>,
    by_pair: FlowMap<(SocketAddr, SocketAddr), (usize, Dir)>,
}

impl OtherFlows {
    fn offer(&mut self, d: &Datagram<'_>, next_id: &mut u32) {
        let (i, dir) = match self.by_pair.get(&(d.src, d.dst)) {
            Some(&v) => v,
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
    }
}

/// Every game's tracker for one stream of datagrams.
pub struct Trackers {
    next_id: u32,
    q3: q3::tracker::Tracker,
    other: OtherFlows,
    q3_out: Vec<q3::message::Message>,
    q3_work: Vec<(u32, q3::conn::Work)>,
    /// Worker threads decoding Quake 3 flows, when the run is order-insensitive.
    q3_pool: Option<Pool<q3::conn::Decoder>>,
    filter: Option<Vec<u32>>,
}

impl Trackers {
    /// Decoding goes to worker threads when nothing is emitted (the flow table) and more
    /// than one thread is available; otherwise it runs inline, in capture order.
    pub fn new(opts: &Options) -> Self {
        let threads = opts.threads.unwrap_or_else(worker_threads).max(1);
        let detached = threads > 1 && !opts.emit && !opts.keep_raw;
        let q3_opts = q3::conn::Options {
            emit: opts.emit,
            keep_raw: opts.keep_raw,
            detached,
        };
        let q3_pool = detached.then(|| Pool::new(threads, move || q3::conn::Decoder::new(q3_opts)));
        Trackers {
            next_id: 1,
            q3: q3::tracker::Tracker::new(q3_opts),
            other: OtherFlows::default(),
            q3_out: Vec::new(),
            q3_work: Vec::new(),
            q3_pool,
            filter: opts.flows.clone(),
        }
    }

    /// Route one datagram to exactly one flow and push what it decoded to the sink.
    pub fn datagram(&mut self, d: &Datagram<'_>, sink: &mut dyn Sink) -> io::Result<()> {
        if !self
            .q3
            .offer(d, &mut self.next_id, &mut self.q3_out, &mut self.q3_work)
        {
            self.other.offer(d, &mut self.next_id);
        }
        if let Some(pool) = &mut self.q3_pool {
            for (flow, w) in self.q3_work.drain(..) {
                pool.push(flow, w);
            }
        }
        for m in self.q3_out.drain(..) {
            if self.filter.as_ref().is_none_or(|f| f.contains(&m.flow)) {
                sink.q3_message(&m)?;
            }
        }
        Ok(())
    }

    /// Every flow's summary, by id (waits for the workers).
    pub fn summaries(&mut self) -> Vec<FlowSummary> {
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
        v.extend(self.other.flows.iter().cloned());
        v.sort_by_key(|f| f.id);
        v
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
    let mut reader = CaptureReader::open(path).map_err(|source| InputError::Capture {
        file: file.clone(),
        source,
    })?;
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
                report.warnings.push(e.to_string());
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
                if report.warnings.len() < 100 {
                    report.warnings.push(format!("frame {index}: {e}"));
                }
            }
        }
        n += 1;
        if n % 4096 == 0 {
            progress(reader.bytes_read());
        }
    }
    progress(reader.bytes_read());
    report.flows = trackers.summaries();
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

/// Decode a Quake 3 demo file (.dm_66/67/68/71) through the same decoders.
pub fn run_q3_demo(path: &Path, opts: &Options, sink: &mut dyn Sink) -> Result<Report, InputError> {
    let file = path.display().to_string();
    let data = std::fs::read(path).map_err(|source| InputError::Io {
        file: file.clone(),
        source,
    })?;
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
        protocol: demo_protocol(path),
        ..Default::default()
    };
    let mut state = q3::state::ClientState::default();
    let detail = q3::conn::Options {
        emit: opts.emit,
        keep_raw: opts.keep_raw,
        detached: false,
    }
    .detail();
    for rec in q3::demo::Reader::new(&data) {
        let rec = match rec {
            Ok(r) => r,
            Err(e) => {
                summary.push_error(FlowError {
                    frame: 0,
                    dir: Some(Dir::S2c),
                    message: e.to_string(),
                });
                report.warnings.push(e.to_string());
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
                file_offset: Some(rec.offset),
            };
            sink.q3_message(&m).map_err(io_err)?;
        }
    }
    report.flows = vec![summary];
    sink.finish(&report).map_err(io_err)?;
    Ok(report)
}

/// The protocol a demo file's extension names (`.dm_68` → 68).
pub fn demo_protocol(path: &Path) -> Option<u32> {
    path.extension()?
        .to_str()?
        .strip_prefix("dm_")?
        .parse()
        .ok()
}

/// Run several capture files as one stream (flow ids and state continue across files, in the
/// order given). Files are expected to follow each other in time.
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
    for path in paths {
        let file = path.display().to_string();
        let io_err = |source| InputError::Io {
            file: file.clone(),
            source,
        };
        let mut reader = CaptureReader::open(path).map_err(|source| InputError::Capture {
            file: file.clone(),
            source,
        })?;
        let mut net = NetDecoder::new();
        loop {
            let frame = match reader.next_frame() {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(e) => {
                    report.warnings.push(format!("{file}: {e}"));
                    if e.is_fatal() {
                        break;
                    }
                    continue;
                }
            };
            report.frames += 1;
            match net.decode(&frame) {
                Ok(Some(d)) => {
                    report.udp_datagrams += 1;
                    trackers.datagram(&d, sink).map_err(io_err)?;
                }
                Ok(None) => {}
                Err(e) => {
                    report.net_errors += 1;
                    report
                        .warnings
                        .push(format!("{file}: frame {}: {e}", frame.index));
                }
            }
        }
    }
    report.flows = trackers.summaries();
    sink.finish(&report).map_err(|source| InputError::Io {
        file: report.file.clone(),
        source,
    })?;
    Ok(report)
}
