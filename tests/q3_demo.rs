//! Issue 4: playable demos written from captures, byte-identical to the client's own.
mod q3common;
use std::collections::HashMap;
use std::path::Path;

use q3common::*;
use quakecap::capture::{CaptureReader, PcapNgWriter};
use quakecap::pipeline::{self, Options};
use quakecap::q3::svc::ServerOp;
use quakecap::sink::demo::{DemoOptions, DemoSink, MemoryDemos};

/// The demos of `path` (a capture or a demo), written in memory.
fn write_demos(path: &Path, opts: DemoOptions) -> (pipeline::Report, MemoryDemos) {
    let mut sink = DemoSink::new(MemoryDemos::default(), opts);
    let o = Options {
        detail: quakecap::pipeline::Detail::None,
        keep_raw: true,
        ..Default::default()
    };
    let report = if pipeline::demo_protocol(path).is_some() {
        pipeline::run_q3_demo(path, &o, &mut sink)
    } else {
        pipeline::run_capture(path, &o, &mut sink, &mut |_| {})
    }
    .unwrap();
    (report, sink.into_output())
}

#[test]
fn client_demo_records_appear_byte_identical_with_the_same_sequence() {
    let mut compared = 0;
    for folder in Q3_CAPTURES {
        let (report, mem) = write_demos(
            &cap(&format!("{folder}/capture.pcapng")),
            DemoOptions::default(),
        );
        let conns = connection_ids(&report);
        for demo in client_demos(folder) {
            let name = demo.file_name().unwrap().to_string_lossy().to_string();
            let client = client_number(&demo);
            let (ours, _) = &mem.files[&(conns[client - 1], 0)];
            let ours: HashMap<i32, Vec<u8>> = demo_records(ours).into_iter().collect();
            let theirs = demo_records(&std::fs::read(&demo).unwrap());
            assert_eq!(theirs.len(), trace_count(&demo, "END OF MESSAGE"), "{name}");
            // The first record is the client's synthetic gamestate (CL_Record_f).
            for (seq, body) in &theirs[1..] {
                assert_eq!(
                    ours.get(seq),
                    Some(body),
                    "{folder}/{name} record seq {seq}"
                );
                compared += 1;
            }
        }
    }
    // Every record of the eight client demos but their synthetic first one.
    assert_eq!(compared, 4650);
}

/// Decode a written demo: (snapshots, invalid snapshots, serverTime never decreasing).
fn check_playable(bytes: &[u8], what: &str) -> usize {
    let dir = std::env::temp_dir().join(format!("quakecap-test-{}-{what}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("check.dm_68");
    std::fs::write(&path, bytes).unwrap();
    let (report, msgs) = decode(&path, false);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(
        report.flows[0].errors, 0,
        "{what}: {:?}",
        report.flows[0].error_details
    );
    let mut snaps = 0;
    let mut last = i32::MIN;
    for m in &msgs {
        for op in &m.server().unwrap().ops {
            match op {
                ServerOp::Gamestate(_) => last = i32::MIN,
                ServerOp::Snapshot(s) => {
                    assert!(s.valid, "{what}: seq {:?} {:?}", m.seq, s.invalid_reason);
                    // The engine checks time only from the first active snapshot on
                    // (CL_FirstSnapshot skips SNAPFLAG_NOT_ACTIVE ones after a gamestate).
                    if s.flags & 2 == 0 {
                        assert!(
                            s.server_time >= last,
                            "{what}: serverTime went back at seq {:?}",
                            m.seq
                        );
                        last = s.server_time;
                    }
                    snaps += 1;
                }
                _ => {}
            }
        }
    }
    snaps
}

#[test]
fn demos_from_every_capture_decode_cleanly_with_only_valid_snapshots() {
    for folder in Q3_CAPTURES {
        let mut files = vec![format!("{folder}/capture.pcapng")];
        if folder == "q3-impaired" {
            files.push(format!("{folder}/server-side.pcapng"));
        }
        for rel in files {
            let (_, mem) = write_demos(&cap(&rel), DemoOptions::default());
            let clients = if folder == "q3-two-clients" { 2 } else { 1 };
            assert_eq!(mem.files.len(), clients, "{rel}");
            for ((flow, _), (bytes, stats)) in &mem.files {
                let snaps = check_playable(bytes, &format!("{folder}-{flow}"));
                assert_eq!(snaps as u64, stats.snapshots, "{rel}");
                let want = match (rel.as_str(), flow) {
                    ("q3-basic/capture.pcapng", _) => 477,
                    ("q3-two-clients/capture.pcapng", 1) => 702,
                    ("q3-two-clients/capture.pcapng", _) => 787,
                    ("q3-mapchange/capture.pcapng", _) => 1103,
                    ("q3-impaired/capture.pcapng", _) => 666,
                    ("q3-impaired/server-side.pcapng", _) => 723,
                    ("q3-proto71/capture.pcapng", _) => 578,
                    ("q3-download/capture.pcapng", _) => 850,
                    _ => panic!("no snapshot count for {rel} flow {flow}"),
                };
                assert_eq!(snaps, want, "{rel} flow {flow}");
            }
        }
    }
}

/// Rewrite a capture without every `n`-th server→client frame (like `editcap` dropping frames).
fn drop_every_nth_s2c(src: &Path, n: usize) -> Vec<u8> {
    let mut r = CaptureReader::open(src).unwrap();
    let mut w = PcapNgWriter::new(Vec::new()).unwrap();
    let mut k = 0;
    while let Some(f) = r.next_frame().unwrap() {
        // Ethernet + IPv4 (20-byte header) + UDP: the source port is at 34..36.
        let s2c = f.data.get(34..36) == Some(&27960u16.to_be_bytes()[..]);
        if s2c {
            k += 1;
            if k % n == 0 {
                continue;
            }
        }
        w.write_packet(f.link, f.ts_ns, f.data, f.orig_len).unwrap();
    }
    w.finish().unwrap()
}

#[test]
fn lossy_capture_still_gives_a_demo_without_broken_deltas() {
    let lossy = drop_every_nth_s2c(&cap("q3-basic/capture.pcapng"), 20);
    let dir = std::env::temp_dir().join(format!("quakecap-lossy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("lossy.pcapng");
    std::fs::write(&path, &lossy).unwrap();
    // Every snapshot the decoder could reconstruct from the lossy capture must be in the demo.
    let (_, msgs) = decode(&path, false);
    // (Messages after the client left are never part of its demo.)
    let reconstructable = msgs
        .iter()
        .filter(|m| !m.client_gone)
        .filter_map(|m| m.server())
        .flat_map(|s| &s.ops)
        .filter(|op| matches!(op, ServerOp::Snapshot(s) if s.valid))
        .count();
    let (_, mem) = write_demos(&path, DemoOptions::default());
    std::fs::remove_dir_all(&dir).ok();
    let (bytes, stats) = &mem.files[&(1, 0)];
    let snaps = check_playable(bytes, "lossy");
    // 453 snapshots in the client's own demo; 33 before the first lost one can be rebuilt.
    assert_eq!(
        (stats.snapshots, stats.dropped_snapshots),
        (33, 420),
        "{stats:?}"
    );
    // The real client got every message, so the server kept deltaing from messages this
    // capture lacks: from the first loss on no snapshot can be rebuilt (q3-protocol.md §7.5),
    // but every one that can is in the demo, and every message keeps its server commands.
    assert_eq!(stats.before_gamestate, 0);
    assert_eq!(snaps, reconstructable, "{stats:?}");
    assert_eq!((snaps, stats.records), (33, 454), "{stats:?}");
}

#[test]
fn rewriting_a_client_demo_keeps_it_byte_identical() {
    let mut checked = 0;
    for demo in client_demos("q3-basic")
        .into_iter()
        .chain(client_demos("q3-proto71"))
    {
        let input = std::fs::read(&demo).unwrap();
        let (_, mem) = write_demos(&demo, DemoOptions::default());
        assert_eq!(mem.files[&(1, 0)].0, input, "{}", demo.display());
        checked += 1;
    }
    assert_eq!(checked, 2, "client demos of q3-basic and q3-proto71");
}

#[test]
fn full_snapshot_reencoding_decodes_to_the_same_states() {
    let mut checked = 0;
    for demo in client_demos("q3-basic")
        .into_iter()
        .chain(client_demos("q3-mapchange"))
    {
        let (_, orig) = decode(&demo, false);
        let (_, mem) = write_demos(
            &demo,
            DemoOptions {
                full_snapshots: true,
                split_maps: false,
                qw_cut: None,
            },
        );
        let (bytes, stats) = &mem.files[&(1, 0)];
        // Every snapshot but the first (already full) and those right after a gamestate.
        let want = match demo.file_name().and_then(|n| n.to_str()) {
            Some("client1-demo0.dm_68") if demo.to_string_lossy().contains("q3-basic") => 452,
            Some("client1-demo0.dm_68") => 735,
            Some("client1-demo1.dm_68") => 295,
            _ => panic!("no count for {}", demo.display()),
        };
        assert_eq!(stats.reencoded, want, "{stats:?}");
        let dir = std::env::temp_dir().join(format!("quakecap-full-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("full.dm_68");
        std::fs::write(&path, bytes).unwrap();
        let (_, full) = decode(&path, false);
        std::fs::remove_dir_all(&dir).ok();
        let frames = |msgs: &[quakecap::q3::message::Message]| -> Vec<_> {
            msgs.iter()
                .flat_map(|m| m.server().unwrap().ops.iter().map(move |op| (m.seq, op)))
                .filter_map(|(seq, op)| match op {
                    ServerOp::Snapshot(s) if s.valid => Some((
                        seq,
                        s.frame.server_time,
                        s.frame.ps.clone(),
                        s.frame.entities.clone(),
                    )),
                    _ => None,
                })
                .collect()
        };
        let (a, b) = (frames(&orig), frames(&full));
        assert_eq!(a.len(), b.len(), "{}", demo.display());
        assert!(
            a == b,
            "{}: states differ after re-encoding",
            demo.display()
        );
        // Every snapshot of the re-encoded demo is a full one.
        for m in &full {
            for op in &m.server().unwrap().ops {
                if let ServerOp::Snapshot(s) = op {
                    assert_eq!(s.delta_num, 0);
                }
            }
        }
        checked += 1;
    }
    assert_eq!(checked, 3, "client demos of q3-basic and q3-mapchange");
}
