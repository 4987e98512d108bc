//! `quakecap net` decodes Quake 3 server messages only as far as its samples read
//! (`svc::Detail::Samples`: a snapshot up to its playerstate's commandTime, no entity). The
//! samples must be exactly those of the full decode, on every stored Quake 3 capture (both
//! vantage points where there are two) and on captures cut mid-session.
mod q3common;
mod skip;
use std::io;
use std::path::{Path, PathBuf};

use q3common::{cut, frame_count};
use quakecap::analysis::net::Sample;
use quakecap::capture::{CaptureReader, PcapNgWriter};
use quakecap::pipeline::{self, Event, Options, Sink};

#[derive(Default)]
struct Samples(Vec<Sample>);

impl Sink for Samples {
    fn event(&mut self, e: Event<'_>) -> io::Result<()> {
        if let Event::NetSample(s) = e {
            self.0.push(*s);
        }
        Ok(())
    }
}

fn samples(path: &Path, emit: bool) -> Vec<Sample> {
    // With `emit` the messages are decoded whole (`Detail::Full`); without, as `net` does.
    let opts = Options {
        detail: if emit {
            quakecap::pipeline::Detail::Full
        } else {
            quakecap::pipeline::Detail::None
        },
        samples: true,
        threads: Some(1),
        ..Options::default()
    };
    let mut sink = Samples::default();
    pipeline::run_capture(path, &opts, &mut sink, &mut |_| {})
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    sink.0
}

/// Every Quake 3 capture of `captures/` and `../shared/captures` (a session in both is
/// taken once, from the repository).
fn q3_captures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut seen = std::collections::BTreeMap::new();
    for dir in [root.join("captures"), root.join("../shared/captures")] {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            skip::data(&dir);
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with("q3-") || seen.contains_key(&name) {
                continue;
            }
            let files: Vec<PathBuf> = ["capture.pcapng", "server-side.pcapng"]
                .iter()
                .map(|f| e.path().join(f))
                .filter(|p| p.exists())
                .collect();
            seen.insert(name, files);
        }
    }
    seen.into_values().flatten().collect()
}

fn assert_same(path: &Path, what: &str) {
    let full = samples(path, true);
    let net = samples(path, false);
    let snaps = full.iter().filter(|s| s.snapshot.is_some()).count();
    assert!(snaps > 0, "{what}: no snapshot stamp in the full decode");
    assert_eq!(full.len(), net.len(), "{what}: sample count");
    for (i, (a, b)) in full.iter().zip(&net).enumerate() {
        assert_eq!(a, b, "{what}: sample {i}");
    }
}

#[test]
fn net_samples_are_the_full_decodes() {
    let files = q3_captures();
    assert!(
        files.len() >= 8,
        "only {} Quake 3 captures found",
        files.len()
    );
    let scratch = std::env::temp_dir().join(format!("quakecap-netsamples-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("scratch dir");
    for f in &files {
        assert_same(f, &f.display().to_string());
        let frames = frame_count(f);
        for pct in [30, 70] {
            let out = scratch.join("cut.pcap");
            cut(f, frames * pct / 100, &out);
            assert_same(&out, &format!("{} cut at {pct}%", f.display()));
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

/// `src` with one bit flipped in every 17th frame's UDP payload (Ethernet + IPv4 + UDP: 42
/// bytes), as a pcapng file at `out`: decode errors all over, both directions.
fn damaged(src: &Path, out: &Path) {
    let mut r = CaptureReader::open(src).expect("open capture");
    let file = std::fs::File::create(out).expect("create damaged copy");
    let mut w = PcapNgWriter::new(std::io::BufWriter::new(file)).expect("writer");
    let mut i = 0usize;
    while let Ok(Some(fr)) = r.next_frame() {
        let mut data = fr.data.to_vec();
        if i % 17 == 5 && data.len() > 50 {
            let at = 42 + (i * 7) % (data.len() - 42);
            data[at] ^= 1 << (i % 8);
        }
        w.write_packet(fr.link, fr.ts_ns, &data, data.len() as u32)
            .expect("write");
        i += 1;
    }
    w.finish().expect("finish");
}

/// Damaged messages: `net`'s decode stops where its samples stop reading, so a snapshot
/// whose damage lies past its commandTime (or whose base the full decode lost to damage)
/// still gives its stamp; every other field of every sample is the full decode's, and where
/// both have a stamp it is the same.
#[test]
fn net_samples_of_damaged_captures_differ_only_by_stamps_the_full_decode_lost() {
    let scratch = std::env::temp_dir().join(format!("quakecap-netdamaged-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("scratch dir");
    let (mut kept, mut gained) = (0, 0);
    for f in q3_captures() {
        let out = scratch.join("damaged.pcapng");
        damaged(&f, &out);
        let full = samples(&out, true);
        let net = samples(&out, false);
        assert_eq!(full.len(), net.len(), "{}: sample count", f.display());
        for (i, (a, b)) in full.iter().zip(&net).enumerate() {
            match (a.snapshot, b.snapshot) {
                (None, Some(_)) => gained += 1,
                (Some(_), Some(_)) => kept += 1,
                _ => {}
            }
            let unstamped = Sample {
                snapshot: a.snapshot,
                ..*b
            };
            assert_eq!(*a, unstamped, "{}: sample {i}", f.display());
            assert!(
                a.snapshot.is_none() || a.snapshot == b.snapshot,
                "{}: sample {i}: stamp {:?} against {:?}",
                f.display(),
                a.snapshot,
                b.snapshot
            );
        }
    }
    assert!(kept > 1000, "only {kept} stamps in both decodes");
    eprintln!("damaged captures: {kept} snapshot stamps in both decodes, {gained} only in net's");
    let _ = std::fs::remove_dir_all(&scratch);
}
