//! Shared helpers of the QuakeWorld end-to-end tests: run a capture through the tracker.
#![allow(dead_code)]
use quakecap::capture::CaptureReader;
use quakecap::flow::FlowSummary;
use quakecap::net::NetDecoder;
use quakecap::qw::{self, Event, Message};
use std::path::PathBuf;

pub fn path(dir: &str, file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("captures")
        .join(dir)
        .join(file)
}

pub struct Run {
    pub events: Vec<Event>,
    pub flows: Vec<FlowSummary>,
    /// UDP datagrams in the capture, and how many the QuakeWorld tracker took.
    pub datagrams: u64,
    pub taken: u64,
}

pub fn run_capture(dir: &str, opts: qw::Options) -> Run {
    run_capture_file(dir, "capture.pcapng", opts)
}

pub fn run_capture_file(dir: &str, file: &str, opts: qw::Options) -> Run {
    let mut reader = CaptureReader::open(&path(dir, file)).unwrap();
    let mut net = NetDecoder::new();
    let mut tracker = qw::Tracker::new(opts);
    let mut events = Vec::new();
    let mut next_id = quakecap::flow::FlowTable::default();
    let (mut datagrams, mut taken) = (0, 0);
    while let Some(frame) = reader.next_frame().unwrap() {
        if let Ok(Some(d)) = net.decode(&frame) {
            datagrams += 1;
            if tracker.offer(&d, &mut next_id, &mut events) {
                taken += 1;
            }
        }
    }
    let flows = tracker.finish(&mut events);
    Run {
        events,
        flows,
        datagrams,
        taken,
    }
}

pub fn messages(events: &[Event]) -> impl Iterator<Item = &qw::Message> {
    events.iter().filter_map(|e| match e {
        Event::Message(m) => Some(m),
        _ => None,
    })
}

/// One traced message: (offset, svc name) per op, and the message size (absent for a last
/// message cut short by the end of the demo, e.g. the .mvd's final svc_disconnect).
pub type Traced = (Vec<(usize, String)>, Option<usize>);

pub fn read_trace(path: &str) -> Vec<Traced> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out: Vec<Traced> = Vec::new();
    let mut cur: Option<Vec<(usize, String)>> = None;
    for line in text.lines() {
        if line.starts_with("------------------") {
            cur = Some(Vec::new());
            continue;
        }
        let Some((off, name)) = line.trim().split_once(':') else {
            continue;
        };
        let off: usize = off.trim().parse().unwrap();
        if name == "END OF MESSAGE" {
            out.push((cur.take().unwrap_or_default(), Some(off)));
        } else if let Some(c) = cur.as_mut() {
            c.push((off, name.to_string()));
        }
    }
    if let Some(c) = cur.filter(|c| !c.is_empty()) {
        out.push((c, None));
    }
    out
}

/// playback.sh keeps only trace lines matching `^ *[0-9]+:(svc_|nq_svc_|END OF MESSAGE|BAD)`
/// or `^ *[0-9]+:[a-z_]+$`; ezQuake names ids past its table "NEW PROTOCOL" (e.g.
/// svc_fte_spawnbaseline2), which that filter drops.
pub fn kept_by_trace_filter(name: &str) -> bool {
    name.starts_with("svc_")
        || name.starts_with("nq_svc_")
        || name.starts_with("BAD")
        || name.chars().all(|c| c.is_ascii_lowercase() || c == '_')
}

/// The messages ezQuake traces: .qwd accepted netchan dem_reads; .mvd every block but
/// dem_multiple and dem_set.
pub fn traced_messages(name: &str, events: &[Event]) -> Vec<Message> {
    let mvd = name.ends_with(".mvd");
    events
        .iter()
        .filter_map(|e| match e {
            Event::Message(m) => Some(m),
            _ => None,
        })
        .filter(|m| {
            if mvd {
                matches!(m.block, Some("read" | "single" | "stats" | "all"))
            } else {
                m.block == Some("read")
                    && !m.connectionless
                    && m.netchan == Some(qw::NetchanStatus::Accepted)
            }
        })
        .cloned()
        .collect()
}

/// playback.sh's line filter (see [`kept_by_trace_filter`]) applied to a whole trace: the
/// separators, and the `OFFSET:name` lines it keeps.
pub fn playback_filter(trace: &str) -> String {
    let kept = |line: &str| {
        if line.starts_with("------------------") {
            return true;
        }
        let Some((off, name)) = line.trim_start().split_once(':') else {
            return false;
        };
        !off.is_empty()
            && off.bytes().all(|b| b.is_ascii_digit())
            && (name == "END OF MESSAGE"
                || name.starts_with("svc_")
                || name.starts_with("nq_svc_")
                || name.starts_with("BAD")
                || (!name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')))
    };
    trace
        .lines()
        .filter(|l| kept(l))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// `quakecap decode --shownet` of a demo held in memory: the shownet sink's output, through
/// the pipeline.
pub fn shownet_sink_output(name: &str, data: &[u8]) -> String {
    let mut out = Vec::new();
    let opts = quakecap::pipeline::Options {
        detail: quakecap::pipeline::Detail::Full,
        ..Default::default()
    };
    let mut sink = quakecap::sink::shownet::Shownet::new(&mut out);
    quakecap::pipeline::run_demo_bytes(data, name.to_string(), &opts, &mut sink).unwrap();
    drop(sink);
    String::from_utf8(out).unwrap()
}

/// The shownet sink's output, filtered as playback.sh filters the engine's, equals the stored
/// trace line for line.
pub fn check_sink_against_trace(name: &str, data: &[u8], trace_path: &std::path::Path) {
    let ours = playback_filter(&shownet_sink_output(name, data));
    let theirs = std::fs::read_to_string(trace_path).unwrap();
    let (a, b): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
    if let Some(i) = (0..a.len().min(b.len())).find(|&i| a[i] != b[i]) {
        panic!(
            "{name}: shownet line {} differs from {}: ours {:?}, ezQuake {:?}",
            i + 1,
            trace_path.display(),
            a[i],
            b[i]
        );
    }
    assert_eq!(a.len(), b.len(), "{name}: shownet line count");
    assert_eq!(ours, theirs, "{name}: shownet text");
}

/// Decode a demo and check it against ezQuake's trace of it, message by message, then the
/// shownet sink's whole output against the trace text.
pub fn check_against_trace(name: &str, data: &[u8], trace_path: &std::path::Path) {
    check_sink_against_trace(name, data, trace_path);
    let mut ev = Vec::new();
    let sums = qw::decode_demo_file(name, data, &mut ev);
    assert_eq!(sums.len(), 1);
    assert_eq!(sums[0].errors, 0, "{name}: {:?}", sums[0].error_details);
    let trace = read_trace(trace_path.to_str().unwrap());
    let msgs = traced_messages(name, &ev);
    assert_eq!(msgs.len(), trace.len(), "{name}: number of traced messages");
    for (i, (m, (ops, size))) in msgs.iter().zip(&trace).enumerate() {
        let got: Vec<(usize, String)> = m
            .ops
            .iter()
            .filter(|o| kept_by_trace_filter(o.name()))
            .map(|o| (o.at, o.name().to_string()))
            .collect();
        assert_eq!(&got, ops, "{name}: message {i} (block {})", m.frame);
        if let Some(size) = size {
            assert_eq!(
                m.size, *size,
                "{name}: size of message {i} (block {})",
                m.frame
            );
        }
    }
}
