//! Issue 6: the flow table decoded on worker threads is the one decoded inline, and idle
//! connections give their decode state back without changing their rows.
use std::path::{Path, PathBuf};

use quakecap::capture::{CaptureReader, PcapNgWriter};
use quakecap::pipeline::{self, Options, Report, Sink};

struct Nothing;
impl Sink for Nothing {}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn flows(path: &Path, threads: usize) -> Report {
    let opts = Options {
        threads: Some(threads),
        ..Default::default()
    };
    pipeline::run_capture(path, &opts, &mut Nothing, &mut |_| {})
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every frame of a capture as (time, link, bytes).
fn frames(path: &Path) -> Vec<(i64, quakecap::capture::LinkType, Vec<u8>)> {
    let mut r = CaptureReader::open(path).expect("stored capture");
    let mut v = Vec::new();
    while let Some(f) = r.next_frame().expect("readable") {
        v.push((f.ts_ns, f.link, f.data.to_vec()));
    }
    v
}

fn write(name: &str, frames: &[(i64, quakecap::capture::LinkType, Vec<u8>)]) -> PathBuf {
    let path = std::env::temp_dir().join(format!("quakecap-{}-{name}", std::process::id()));
    let file = std::fs::File::create(&path).expect("temp file");
    let mut w = PcapNgWriter::new(std::io::BufWriter::new(file)).expect("writer");
    for (ts, link, data) in frames {
        w.write_packet(*link, *ts, data, data.len() as u32)
            .expect("write");
    }
    w.finish().expect("flush");
    path
}

/// Flip one bit in every 17th frame's UDP payload (Ethernet + IPv4 + UDP = 42 bytes): decode
/// errors all over, in both directions.
fn damaged(
    frames: &[(i64, quakecap::capture::LinkType, Vec<u8>)],
) -> Vec<(i64, quakecap::capture::LinkType, Vec<u8>)> {
    let mut v = frames.to_vec();
    for (i, (_, _, data)) in v.iter_mut().enumerate() {
        if i % 17 == 5 && data.len() > 50 {
            let at = 42 + (i * 7) % (data.len() - 42);
            data[at] ^= 1 << (i % 8);
        }
    }
    v
}

#[test]
fn worker_threads_give_the_inline_table() {
    let two = root().join("captures/q3-two-clients/capture.pcapng");
    let broken = write("damaged.pcapng", &damaged(&frames(&two)));
    let mut paths: Vec<PathBuf> = [
        "q3-basic",
        "q3-download",
        "q3-impaired",
        "q3-mapchange",
        "q3-proto71",
        "q3-two-clients",
    ]
    .iter()
    .map(|d| root().join("captures").join(d).join("capture.pcapng"))
    .collect();
    paths.push(broken.clone());
    for path in &paths {
        let inline = flows(path, 1);
        for threads in [2, 3] {
            let pooled = flows(path, threads);
            assert_eq!(
                inline.flows,
                pooled.flows,
                "{} with {threads}",
                path.display()
            );
            assert_eq!(inline.warnings, pooled.warnings);
        }
    }
    let errors: u64 = flows(&broken, 2).flows.iter().map(|f| f.errors).sum();
    assert_eq!(
        errors,
        // 13 damaged sequence words read as a sender going back; 90 damaged client messages
        // whose usercmds reach their very end are whole, as the server takes them.
        2620 + 13 - 90,
        "the damaged capture exercises the error merge"
    );
    let _ = std::fs::remove_file(broken);
}

#[test]
fn idle_connection_release_keeps_the_rows() {
    // The same session twice, the second 300 s after the first ended (past the 200 s idle
    // limit), from another client port: the first connection is released while the second
    // runs, and both rows must be what each session alone gives.
    let basic = frames(&root().join("captures/q3-basic/capture.pcapng"));
    let end = basic.last().map_or(0, |f| f.0);
    let start = basic.first().map_or(0, |f| f.0);
    let shift = end - start + 300_000_000_000;
    let mut both = basic.clone();
    both.extend(basic.iter().map(|(ts, link, data)| {
        let mut d = data.clone();
        // Client port 27961 -> 27999 (source port of c2s, destination port of s2c).
        for at in [34usize, 36] {
            if d.get(at..at + 2) == Some(&27961u16.to_be_bytes()[..]) {
                d[at..at + 2].copy_from_slice(&27999u16.to_be_bytes());
            }
        }
        (ts + shift, *link, d)
    }));
    assert_released_while_second_runs(&both, basic.len());
    let path = write("idle.pcapng", &both);
    for threads in [1, 2] {
        let r = flows(&path, threads);
        let alone = flows(&root().join("captures/q3-basic/capture.pcapng"), threads);
        assert_eq!(r.flows.len(), 2);
        assert_eq!(r.flows[0], alone.flows[0]);
        assert_eq!(r.flows[1].errors, 0);
        assert_eq!(r.flows[1].packets, alone.flows[0].packets);
    }
    let _ = std::fs::remove_file(path);
}

/// Feed the tracker directly: once the second session runs, the first is released, and
/// the second is not.
fn assert_released_while_second_runs(
    frames: &[(i64, quakecap::capture::LinkType, Vec<u8>)],
    first_len: usize,
) {
    use quakecap::capture::Frame;
    use quakecap::net::NetDecoder;
    use quakecap::q3::conn::Options as ConnOptions;
    use quakecap::q3::tracker::Tracker;
    let mut tracker = Tracker::new(ConnOptions::default());
    let mut net = NetDecoder::new();
    let (mut next_id, mut out) = (quakecap::flow::FlowTable::default(), Vec::new());
    let mut work = quakecap::q3::conn::WorkQueue::default();
    for (i, (ts, link, data)) in frames.iter().enumerate() {
        let frame = Frame {
            index: i as u64 + 1,
            ts_ns: *ts,
            link: *link,
            data,
            orig_len: data.len() as u32,
            file_offset: 0,
        };
        if let Ok(Some(d)) = net.decode(&frame) {
            tracker.offer(&d, &mut next_id, &mut out, &mut work);
        }
        if i == first_len + 10 {
            assert!(tracker.flows()[0].released(), "first connection released");
            assert!(!tracker.flows()[1].released());
        }
    }
    assert!(work.items.is_empty(), "inline decoders take all work");
}
