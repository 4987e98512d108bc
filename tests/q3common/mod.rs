//! Shared helpers for the Quake 3 end-to-end tests.
#![allow(dead_code)]
use std::io;
use std::path::{Path, PathBuf};

use quakecap::capture::{CaptureReader, PcapWriter, TsPrecision};
use quakecap::pipeline::{self, Event, Options, Report, Sink};
use quakecap::q3::message::Message;

/// A file under the repository's `captures/`.
pub fn cap(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("captures")
        .join(rel)
}

/// A file under `../shared/` (the shared corpus beside the repository).
pub fn shared(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("shared")
        .join(rel)
}

/// Every Quake 3 capture folder in `captures/`.
pub const Q3_CAPTURES: [&str; 6] = [
    "q3-basic",
    "q3-two-clients",
    "q3-mapchange",
    "q3-impaired",
    "q3-proto71",
    "q3-download",
];

/// The stored protocol-68 sessions (the ones with scrambled bodies), in the order the
/// mid-session tests report them: the lab's, and our own CTF recording (a team game: the
/// server sends `tinfo` every second, so the client's acknowledgements change often).
pub const PROTO68_CAPTURES: [&str; 7] = [
    "q3-basic",
    "q3-two-clients",
    "q3-events",
    "q3-impaired",
    "q3-mapchange",
    "q3-download",
    "q3-ctf",
];

/// A session's `capture.pcapng`: the repository's copy, else the shared one.
pub fn stored_capture(name: &str) -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    [root.join("captures"), root.join("../shared/captures")]
        .iter()
        .map(|d| d.join(name).join("capture.pcapng"))
        .find(|p| p.exists())
}

/// Keeps every message.
#[derive(Default)]
pub struct Collect {
    pub msgs: Vec<Message>,
}

impl Sink for Collect {
    fn event(&mut self, e: Event<'_>) -> io::Result<()> {
        if let Event::Q3(m) = e {
            self.msgs.push(m.clone());
        }
        Ok(())
    }
}

/// Decode a capture or demo file, keeping every message (and raw bodies when asked).
pub fn decode(path: &std::path::Path, keep_raw: bool) -> (Report, Vec<Message>) {
    let opts = Options {
        detail: quakecap::pipeline::Detail::Full,
        keep_raw,
        flows: None,
        threads: None,
        ..Default::default()
    };
    let mut c = Collect::default();
    let report = if pipeline::demo_protocol(path).is_some() {
        pipeline::run_q3_demo(path, &opts, &mut c)
    } else {
        pipeline::run_capture(path, &opts, &mut c, &mut |_| {})
    }
    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (report, c.msgs)
}

/// The client demos recorded in a capture folder (`clientN-demoM.dm_NN`), sorted.
pub fn client_demos(folder: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(cap(folder))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| pipeline::demo_protocol(p).is_some())
        .collect();
    v.sort();
    v
}

/// The records of a demo file as (sequence, body).
pub fn demo_records(data: &[u8]) -> Vec<(i32, Vec<u8>)> {
    quakecap::q3::demo::Reader::new(data)
        .filter_map(Result::ok)
        .map(|r| (r.seq, r.body.to_vec()))
        .collect()
}

/// The ids of the client connections of a run, in order of first packet.
pub fn connection_ids(report: &Report) -> Vec<u32> {
    report
        .flows
        .iter()
        .filter(|f| f.kind == "connection")
        .map(|f| f.id)
        .collect()
}

/// N of a client demo named `clientN-demoM.dm_NN`.
pub fn client_number(demo: &std::path::Path) -> usize {
    let name = demo
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    name.strip_prefix("client")
        .and_then(|r| r.split('-').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Lines of the engine's `cl_shownet 4` trace of a client demo (`DEMO.shownet.txt`) that
/// contain `what`: e.g. `svc_snapshot` (one per snapshot) or `END OF MESSAGE` (one per record).
pub fn trace_count(demo: &std::path::Path, what: &str) -> usize {
    let p = format!("{}.shownet.txt", demo.display());
    let trace = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"));
    trace.lines().filter(|l| l.contains(what)).count()
}

/// Frames in a capture.
pub fn frame_count(src: &Path) -> u64 {
    let mut r = CaptureReader::open(src).expect("open");
    let mut n = 0;
    while let Ok(Some(_)) = r.next_frame() {
        n += 1;
    }
    n
}

/// Write the frames after the first `skip` of `src` to `out` (pcap, nanosecond times).
pub fn cut(src: &Path, skip: u64, out: &Path) {
    let mut r = CaptureReader::open(src).expect("open capture");
    let mut f = Some(std::fs::File::create(out).expect("create"));
    let mut w: Option<PcapWriter<std::fs::File>> = None;
    let mut n = 0;
    while let Ok(Some(fr)) = r.next_frame() {
        n += 1;
        if n <= skip {
            continue;
        }
        if w.is_none() {
            let file = f.take().expect("file once");
            w = Some(PcapWriter::new(file, fr.link, TsPrecision::Nano).expect("writer"));
        }
        if let Some(w) = w.as_mut() {
            w.write_packet(fr.ts_ns, fr.data, fr.orig_len)
                .expect("write");
        }
    }
    w.expect("frames after the cut").finish().expect("finish");
}
