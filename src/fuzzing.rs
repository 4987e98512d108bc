//! Entry points shared by the cargo-fuzz targets (`fuzz/`) and the stable regression test
//! that replays their corpus (`tests/fuzz_corpus.rs`): one function per parser layer, each
//! taking arbitrary bytes and driving that layer the way the pipeline does. None may panic,
//! loop without end or allocate without bound, whatever the bytes.
//!
//! Inputs that carry several packets use a simple framing so the fuzzer can reach stateful
//! paths (fragments, deltas): `[u16 LE length][bytes]` repeated ([`chunks`]).
use std::io::{self, Cursor};
use std::net::{Ipv4Addr, SocketAddr};

use crate::capture::{CaptureReader, Frame, LinkType};
use crate::flow::Dir;
use crate::net::{Datagram, NetDecoder};
use crate::pipeline::{self, Options, Sink};
use crate::q3;
use crate::q3::bits::BitReader;
use crate::q3::netchan::{Header, Protocol, Receiver};
use crate::qw;
use crate::sink;

/// Upper bound on records/frames/chunks any harness walks (a reader that stops advancing
/// would otherwise hang the fuzzer; hitting it means such a bug).
const MAX_STEPS: usize = 200_000;

/// Every link type the network layer decodes, and one it does not.
pub const LINKS: [LinkType; 9] = [
    LinkType::NULL,
    LinkType::ETHERNET,
    LinkType::RAW,
    LinkType::LOOP,
    LinkType::LINUX_SLL,
    LinkType::IPV4,
    LinkType::IPV6,
    LinkType::LINUX_SLL2,
    LinkType(147),
];

/// `n` damaged copies of `data` from the pseudo-random `seed` (for tests that a reader
/// never panics on real files gone bad): every other copy is cut at some length, the others
/// have eight bytes flipped.
pub fn damaged_copies(data: &[u8], seed: u32, n: usize) -> impl Iterator<Item = Vec<u8>> + '_ {
    let mut x = seed;
    (0..n).filter(|_| !data.is_empty()).map(move |i| {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        let mut d = data.to_vec();
        if i % 2 == 0 {
            d.truncate(x as usize % data.len());
        } else {
            for k in 0..8 {
                let at = (x as usize).wrapping_mul(k + 1) % d.len();
                d[at] ^= (x >> 8) as u8 | 1;
            }
        }
        d
    })
}

/// Split `data` into `[u16 LE length][bytes]` chunks; a short last chunk takes what is left.
pub fn chunks(data: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = data;
    std::iter::from_fn(move || {
        if rest.len() < 2 {
            return None;
        }
        let n = usize::from(u16::from_le_bytes([rest[0], rest[1]]));
        let body = rest.get(2..).unwrap_or(&[]);
        let (chunk, tail) = body.split_at(n.min(body.len()));
        rest = tail;
        Some(chunk)
    })
}

/// Frame `packets` for [`chunks`] (used to build seed corpora).
pub fn frame_chunks<'a>(packets: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for p in packets {
        let p = &p[..p.len().min(usize::from(u16::MAX))];
        out.extend_from_slice(&(p.len() as u16).to_le_bytes());
        out.extend_from_slice(p);
    }
    out
}

/// Capture reader (pcap or pcapng, whichever the magic says): read every record.
pub fn capture(data: &[u8]) {
    let Ok(mut r) = CaptureReader::new(Cursor::new(data)) else {
        return;
    };
    for _ in 0..MAX_STEPS {
        match r.next_frame() {
            Ok(Some(_)) | Err(_) => {}
            Ok(None) => return,
        }
    }
    panic!("capture reader did not finish");
}

/// Link, IP (with defragmentation) and UDP: each chunk is one frame whose first byte picks
/// the link type; all frames go through one decoder so fragments can meet.
pub fn net(data: &[u8]) {
    let mut net = NetDecoder::new();
    for (i, c) in chunks(data).enumerate().take(MAX_STEPS) {
        let Some((&sel, bytes)) = c.split_first() else {
            continue;
        };
        let link = LINKS[usize::from(sel) % LINKS.len()];
        let f = Frame {
            index: i as u64 + 1,
            ts_ns: i as i64 * 1_000_000,
            link,
            data: bytes,
            orig_len: bytes.len() as u32,
            file_offset: 0,
        };
        let _ = net.decode(&f);
    }
}

/// Netchan header view and receiver: the first byte picks direction and protocol, each
/// chunk is one packet fed to that direction's receiver (fragment reassembly included).
pub fn netchan(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let dir = if sel & 1 == 0 { Dir::S2c } else { Dir::C2s };
    let proto = if sel & 2 == 0 {
        Protocol::V68
    } else {
        Protocol::V71
    };
    let mut rx = Receiver::new();
    for p in chunks(rest).take(MAX_STEPS) {
        if let Ok(h) = Header::parse(p, dir, proto) {
            let _ = h.header_len();
            let _ = rx.process(&h);
        }
    }
}

/// Connectionless packets and the adaptive Huffman decoder (as `connect` userinfo uses it).
pub fn oob(data: &[u8]) {
    let mut p = vec![0xff; 4];
    p.extend_from_slice(data);
    for dir in [Dir::C2s, Dir::S2c] {
        if let Ok(o) = q3::oob::Oob::parse(&p, dir) {
            let _ = o.info("name");
            let _ = o.arg_int(0);
        }
    }
    let _ = q3::huffman::adaptive_decompress(data);
    let _ = q3::oob::parse_info(&String::from_utf8_lossy(data));
}

/// Static Huffman bit reader: the first byte says how many control bytes follow; each
/// control byte picks a read (bits of any width, including invalid ones, bytes, strings,
/// seeks) on the rest of the input.
pub fn bits(data: &[u8]) {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let (ctl, body) = rest.split_at(usize::from(n).min(rest.len()));
    let mut r = BitReader::new(body);
    for &c in ctl {
        let _ = match c & 7 {
            0 => r.read_bit().map(drop),
            1 => r.read_bits(i32::from(c >> 3) - 8).map(drop),
            2 => r.read_byte().map(drop),
            3 => r.read_short().map(drop),
            4 => r.read_long().map(drop),
            5 => r.read_string().map(drop),
            6 => r.read_big_string().map(drop),
            _ => {
                r.set_bit_pos(usize::from(c >> 3) * 7);
                Ok(())
            }
        };
        let _ = (r.readcount(), r.is_past_end());
    }
    // Then read to the end the way a message decoder does: always terminates.
    while r.read_bits(8).is_ok() {}
}

/// Server message decoder: each chunk is one (descrambled) server message, decoded in
/// sequence with one client state so gamestates, baselines and deltas interact.
pub fn server_messages(data: &[u8]) {
    let mut st = q3::state::ClientState::default();
    // The same messages as `quakecap net` reads them (a snapshot only to its commandTime),
    // with a client state of their own: the two parses keep different states.
    let mut net = q3::state::ClientState::default();
    for (i, m) in chunks(data).enumerate().take(MAX_STEPS) {
        let seq = i as i32 + 1;
        let mut r = BitReader::new(m);
        let _ = q3::svc::parse_server_message(&mut r, None, seq, &mut st);
        let _ = st.player_name(st.client_num);
        let _ = st.map_name();
        let mut r = BitReader::new(m);
        let _ = q3::svc::parse_server_message_with(
            &mut r,
            None,
            seq,
            &mut net,
            q3::svc::Detail::Samples,
        );
    }
}

/// Client message decoder: the header longs, then the ops, keyed like the connection does.
pub fn client_message(data: &[u8]) {
    let mut r = BitReader::new(data);
    let Ok(hdr) = q3::clc::read_header(&mut r) else {
        return;
    };
    let ctx = q3::clc::ClcContext {
        checksum_feed: hdr.0 ^ hdr.2,
        acked_server_command: data.get(..data.len().min(40)).unwrap_or(&[]),
        last_client_command: (hdr.1 & 2 == 0).then_some(hdr.1),
        keep_usercmds: true,
        commands_only: false,
        key_unknown: hdr.0 & 1 == 1,
    };
    let m = q3::clc::parse_client_ops(&mut r, hdr, &ctx);
    let _ = serde_json::to_string(&m);
}

/// Every message built and the descrambled bodies kept, on one thread: every path a sink can
/// ask for runs.
fn fuzz_options() -> Options {
    Options {
        detail: crate::pipeline::Detail::Full,
        keep_raw: true,
        threads: Some(1),
        ..Options::default()
    }
}

/// Demo reader and decoder, as `quakecap decode FILE.dm_68` runs it. Messages are built but
/// not serialized: JSON would cost three quarters of the time here, and the `pipeline` and
/// `q3_datagrams` targets already serialize the same message types (through every sink).
pub fn demo(data: &[u8]) {
    let opts = fuzz_options();
    let _ = pipeline::run_q3_demo_bytes(data, "fuzz.dm_68".into(), Some(68), &opts, &mut Discard);
}

/// The whole pipeline on bytes taken as a capture file, with every message serialized.
pub fn pipeline(data: &[u8]) {
    let Ok(reader) = CaptureReader::new(Cursor::new(data)) else {
        return;
    };
    let opts = fuzz_options();
    let _ = pipeline::run_reader(
        reader,
        "fuzz".into(),
        &opts,
        &mut AllSinks::new(),
        &mut |_| {},
    );
    net_analysis(data);
}

/// `quakecap net` on the same bytes: the decode it runs (samples, no messages) and the
/// reports, as JSON and as the table.
fn net_analysis(data: &[u8]) {
    let Ok(reader) = CaptureReader::new(Cursor::new(data)) else {
        return;
    };
    let opts = Options {
        samples: true,
        threads: Some(1),
        ..Options::default()
    };
    let mut net = crate::analysis::net::NetSink::new(1.0).with_strip();
    if pipeline::run_reader(reader, "fuzz".into(), &opts, &mut net, &mut |_| {}).is_ok() {
        let _ = serde_json::to_string(&net.reports);
        let _ = sink::nettable::render(&net.reports);
    }
}

/// The analyses over the event stream, on bytes taken as a capture (else as a Quake 3 and a
/// QuakeWorld demo): `check`'s findings, `events`' timeline and per-player summary,
/// `report`'s network analysis and game events from one pass rendered as its HTML, and
/// `diff` against a cut of the same bytes. They read the server's text (commands,
/// configstrings, scores) and the flows' ends, which the decoding harnesses never hand to
/// them.
pub fn analyses(data: &[u8]) {
    if CaptureReader::new(Cursor::new(data)).is_ok() {
        let run = |opts: &Options, sink: &mut dyn Sink| run_capture_bytes(data, opts, sink);
        check_outputs(crate::check::check_input("fuzz", false, run));
        events_outputs(run);
        report_outputs(run);
        diff_outputs(data, "pcapng");
        annotate_outputs(data);
        return;
    }
    let q3 = |opts: &Options, sink: &mut dyn Sink| {
        pipeline::run_q3_demo_bytes(data, "fuzz.dm_68".into(), Some(68), opts, sink)
    };
    check_outputs(crate::check::check_input("fuzz.dm_68", true, q3));
    events_outputs(q3);
    for name in ["fuzz.qwd", "fuzz.mvd"] {
        let qw = |opts: &Options, sink: &mut dyn Sink| {
            pipeline::run_qw_demo_bytes(data, name.into(), opts, sink)
        };
        check_outputs(crate::check::check_input(name, true, qw));
        events_outputs(qw);
    }
    diff_outputs(data, "dm_68");
    diff_outputs(data, "mvd");
}

/// `annotate` on the capture `data`: the copy read back holds the packets the input holds
/// (same numbers, times, link types and bytes), comments or not.
fn annotate_outputs(data: &[u8]) {
    let Ok(copier) = crate::capture::comment::CommentCopier::new(data, Vec::new()) else {
        return;
    };
    let mut sink = sink::annotate::AnnotateSink::new(copier);
    let opts = Options {
        detail: crate::vocab::Detail::Full,
        samples: true,
        ..Options::default()
    };
    let _ = run_capture_bytes(data, &opts, &mut sink);
    let Ok((out, _)) = sink.finish_copy() else {
        return;
    };
    let frames = |bytes: &[u8]| {
        let mut v = Vec::new();
        if let Ok(mut r) = CaptureReader::new(Cursor::new(bytes)) {
            loop {
                match r.next_frame() {
                    Ok(Some(f)) => v.push((f.index, f.ts_ns, f.link, f.data.to_vec())),
                    Ok(None) => break,
                    Err(_) => {}
                }
            }
        }
        v
    };
    assert_eq!(
        frames(&out),
        frames(data),
        "annotate's copy holds other packets"
    );
}

/// The capture `data` through the pipeline as the commands run it, on one thread (the
/// analyses' and the export's harnesses).
fn run_capture_bytes(
    data: &[u8],
    opts: &Options,
    sink: &mut dyn Sink,
) -> Result<pipeline::Report, pipeline::InputError> {
    let reader =
        CaptureReader::new(Cursor::new(data)).map_err(|e| pipeline::InputError::Capture {
            file: "fuzz".into(),
            source: e,
        })?;
    let opts = Options {
        threads: Some(1),
        ..opts.clone()
    };
    pipeline::run_reader(reader, "fuzz".into(), &opts, sink, &mut |_| {})
}

/// Bytes as `quakecap export` reads its inputs: a capture, else a Quake 3 demo, then a
/// QuakeWorld .qwd and .mvd. See `export_outputs`.
pub fn export(data: &[u8]) {
    if CaptureReader::new(Cursor::new(data)).is_ok() {
        export_outputs(|opts: &Options, sink: &mut dyn Sink| run_capture_bytes(data, opts, sink));
        return;
    }
    export_outputs(|opts: &Options, sink: &mut dyn Sink| {
        pipeline::run_q3_demo_bytes(data, "fuzz.dm_68".into(), Some(68), opts, sink)
    });
    for name in ["fuzz.qwd", "fuzz.mvd"] {
        export_outputs(|opts: &Options, sink: &mut dyn Sink| {
            pipeline::run_qw_demo_bytes(data, name.into(), opts, sink)
        });
    }
}

/// `quakecap export` of one input through `run` into a per-process temporary folder: the
/// seven tables written, put in place and read back. Whatever the input, a row the writer
/// refuses (a cell of the wrong type, a null in a required column: a bug of the row
/// builders, which the export reports as a failed output) and a file whose footer holds
/// another number of rows than the export counted are failures (panics).
fn export_outputs(
    run: impl FnOnce(&Options, &mut dyn Sink) -> Result<pipeline::Report, pipeline::InputError>,
) {
    use crate::sink::export::{self, partition};
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let out = std::env::temp_dir().join(format!("quakecap-fuzz-export-{}", std::process::id()));
    let Ok(mut sink) = export::ExportSink::new(&out, "fuzz") else {
        return;
    };
    let ran = run(&export::options(), &mut sink);
    if let Some(w) = sink.write_error() {
        panic!("export refused its own rows: {w}");
    }
    if ran.is_ok() {
        let counts = sink.commit().expect("a finished export commits");
        for (table, n) in counts {
            let part = partition::partition_dir(&out, table, "fuzz").join(partition::PART_FILE);
            let file = std::fs::File::open(&part).expect("a committed table has its file");
            let rows = SerializedFileReader::new(file)
                .expect("the export wrote a Parquet file")
                .metadata()
                .file_metadata()
                .num_rows();
            assert_eq!(
                rows as u64, n,
                "{table}: rows in the file against rows counted"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// `quakecap diff` of the input against its first three quarters (written to files named
/// with `ext`, as `diff` reads paths): the aligner then meets messages missing on one side
/// as well as pairs. A decoding thread's panic, which `diff` reports as an error, is one here.
fn diff_outputs(data: &[u8], ext: &str) {
    let dir = std::env::temp_dir().join(format!("quakecap-fuzz-diff-{}", std::process::id()));
    let (a, b) = (dir.join(format!("a.{ext}")), dir.join(format!("b.{ext}")));
    let written = std::fs::create_dir_all(&dir)
        .and_then(|_| std::fs::write(&a, data))
        .and_then(|_| std::fs::write(&b, &data[..data.len() * 3 / 4]));
    if written.is_err() {
        return;
    }
    match crate::diff::diff_files(&a, &b, &crate::diff::Options::default()) {
        Ok(o) => {
            let _ = serde_json::to_string(&o);
        }
        Err(crate::diff::DiffError::Unusable(m)) if m.contains("thread of") => panic!("{m}"),
        Err(_) => {}
    }
}

/// A check's findings as `quakecap check` prints them, and as JUnit XML.
fn check_outputs(c: Result<crate::check::FileCheck, pipeline::InputError>) {
    if let Ok(c) = c {
        for f in &c.findings {
            let _ = crate::check::line(f);
        }
        let _ = crate::check::junit::render(std::slice::from_ref(&c));
    }
}

/// `quakecap events` through `run`: the events as JSON and the per-player summary.
fn events_outputs(
    run: impl FnOnce(&Options, &mut dyn Sink) -> Result<pipeline::Report, pipeline::InputError>,
) {
    let opts = Options {
        detail: crate::pipeline::Detail::Events,
        ..Options::default()
    };
    let mut es = sink::events::EventSink::new();
    if run(&opts, &mut es).is_ok() {
        let _ = serde_json::to_string(&es.events);
        let _ = crate::gameevent::summary::summarize(&es.events);
    }
}

/// `quakecap report` through `run`: samples and game events from one pass, then the HTML.
fn report_outputs(
    run: impl FnOnce(&Options, &mut dyn Sink) -> Result<pipeline::Report, pipeline::InputError>,
) {
    let opts = Options {
        detail: crate::pipeline::Detail::Events,
        samples: true,
        ..Options::default()
    };
    let mut both = ReportSinks {
        net: crate::analysis::net::NetSink::new(1.0)
            .with_strip()
            .with_max_points(sink::nethtml::MAX_POINTS),
        events: sink::events::EventSink::new(),
    };
    if let Ok(r) = run(&opts, &mut both) {
        let input = sink::nethtml::Input {
            name: &r.file,
            flows: &r.flows,
            aggregates: &r.aggregates,
            rows: &both.net.reports,
            events: &both.events.events,
            cheats: None,
        };
        let _ = sink::nethtml::render_to(&mut io::sink(), &[input], &sink::nethtml::Clock::utc());
    }
}

/// The report's two analyses, each offered every event (the command routes them; both
/// ignore what they do not read).
struct ReportSinks {
    net: crate::analysis::net::NetSink,
    events: sink::events::EventSink,
}

impl Sink for ReportSinks {
    fn event(&mut self, e: pipeline::Event<'_>) -> io::Result<()> {
        self.net.event(e)?;
        self.events.event(e)
    }
    fn finish(&mut self, r: &pipeline::Report) -> io::Result<()> {
        self.net.finish(r)?;
        self.events.finish(r)
    }
}

/// One of eight endpoints (four hosts), for the datagram harnesses.
fn endpoint(n: u8) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::new(10, 0, 0, n & 3), 27960 + u16::from(n)))
}

/// Datagrams from [`chunks`]: each chunk's first byte picks the source (low 3 bits) and the
/// destination (next 3 bits) among [`endpoint`]s, the rest is the UDP payload.
fn datagrams(data: &[u8]) -> impl Iterator<Item = Datagram<'_>> {
    chunks(data)
        .take(MAX_STEPS)
        .enumerate()
        .filter_map(|(i, c)| {
            let (&sel, payload) = c.split_first()?;
            Some(Datagram {
                frame: i as u64 + 1,
                ts_ns: i as i64,
                src: endpoint(sel & 7),
                dst: endpoint(sel >> 3 & 7),
                payload,
            })
        })
}

/// The Quake 3 tracker and connections without capture or IP: each chunk is a datagram
/// whose first byte picks which of a few endpoints sends it to which.
pub fn q3_datagrams(data: &[u8]) {
    let opts = fuzz_options();
    let mut t = pipeline::Trackers::new(&opts);
    let mut sinks = AllSinks::new();
    for d in datagrams(data) {
        let _ = t.datagram(&d, &mut sinks);
    }
    let mut report = pipeline::Report::default();
    let _ = t.fill_report(&mut report, &mut sinks);
    let _ = sinks.finish(&report);
}

/// The QuakeWorld tracker (netchan, connectionless, server and client decoders) with demo
/// writing and the text output: chunks as in [`q3_datagrams`].
pub fn qw_datagrams(data: &[u8]) {
    let mut t = qw::Tracker::new(qw::Options {
        decode: true,
        keep_raw: true,
    });
    let (mut events, mut next_id) = (Vec::new(), crate::flow::FlowTable::default());
    for d in datagrams(data) {
        t.offer(&d, &mut next_id, &mut events);
    }
    let _ = t.finish(&mut events);
    qw_outputs(&events);
}

/// QuakeWorld demo reading and decoding, the bytes taken as a .qwd and as an .mvd.
pub fn qw_demo(data: &[u8]) {
    for name in ["fuzz.qwd", "fuzz.mvd"] {
        let mut events = Vec::new();
        let _ = qw::decode_demo_file(name, data, &mut events);
        qw_outputs(&events);
    }
}

/// Text and shownet trace for every QuakeWorld message, and the demos the raw packets make.
fn qw_outputs(events: &[qw::Event]) {
    let mut demos = qw::qwd::Writers::new();
    for e in events {
        match e {
            qw::Event::Message(m) => {
                let mut s = String::new();
                let _ = sink::text::qw::write_message(m, &mut s);
                let _ = sink::shownet_qw::write_message(m, &mut s);
            }
            qw::Event::Raw(_) => demos.push(e),
        }
    }
    let _ = demos.finish();
}

/// Every sink the CLI has, writing nowhere: text, shownet, JSON Lines and the demo writer
/// (one demo per map), so the output side meets hostile decoded content too.
struct AllSinks {
    text: sink::text::Text<io::Sink>,
    shownet: sink::shownet::Shownet<io::Sink>,
    json: sink::json::JsonLines<io::Sink>,
    demo: sink::demo::DemoSink<NoFiles>,
}

impl AllSinks {
    fn new() -> Self {
        let opts = sink::demo::DemoOptions {
            full_snapshots: false,
            split_maps: true,
            qw_cut: None,
        };
        AllSinks {
            text: sink::text::Text::new(io::sink()),
            shownet: sink::shownet::Shownet::new(io::sink()),
            json: sink::json::JsonLines::new(io::sink()),
            demo: sink::demo::DemoSink::new(NoFiles, opts),
        }
    }
}

impl Sink for AllSinks {
    fn event(&mut self, e: pipeline::Event<'_>) -> io::Result<()> {
        self.text.event(e)?;
        self.shownet.event(e)?;
        self.json.event(e)?;
        self.demo.event(e)
    }
    fn finish(&mut self, r: &pipeline::Report) -> io::Result<()> {
        self.text.finish(r)?;
        self.shownet.finish(r)?;
        self.json.finish(r)?;
        self.demo.finish(r)
    }
}

/// Demo outputs that go nowhere.
struct NoFiles;

impl sink::demo::DemoOutput for NoFiles {
    type W = io::Sink;
    fn open(
        &mut self,
        _: u32,
        _: u32,
        _: u32,
        _: Option<&str>,
        _: Option<&str>,
    ) -> io::Result<io::Sink> {
        Ok(io::sink())
    }
    fn closed(&mut self, _: u32, _: u32, _: io::Sink, _: &sink::demo::DemoStats) -> io::Result<()> {
        Ok(())
    }
}

/// A sink that drops every message.
struct Discard;

impl Sink for Discard {}

/// A fuzz target's name and the harness it runs.
pub type Target = (&'static str, fn(&[u8]));

/// Every harness, by the fuzz target name that runs it.
pub const TARGETS: [Target; 14] = [
    ("capture", capture),
    ("net", net),
    ("netchan", netchan),
    ("oob", oob),
    ("bits", bits),
    ("server_messages", server_messages),
    ("client_message", client_message),
    ("demo", demo),
    ("q3_datagrams", q3_datagrams),
    ("pipeline", pipeline),
    ("qw_datagrams", qw_datagrams),
    ("qw_demo", qw_demo),
    ("analyses", analyses),
    ("export", export),
];
