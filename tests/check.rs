//! Issue 15: `check` — conformance findings on stored captures, demos and hand-made faults.
mod q3common;
mod skip;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use q3common::{cap, shared};
use quakecap::capture::{CaptureReader, LinkType, PcapNgWriter};
use quakecap::check::{self, junit, state::Watch, Finding};
use quakecap::error::ErrorKind;
use quakecap::flow::Dir;
use quakecap::net::NetDecoder;
use quakecap::q3::bits::{BitReader, BitWriter};
use quakecap::q3::clc::ClientMessage;
use quakecap::q3::message::{Body, Message};
use quakecap::q3::netchan::{
    Header, Protocol, FRAGMENT_BIT, FRAGMENT_SIZE, MAX_MSGLEN, REORDER_WINDOW,
};
use quakecap::q3::svc::{Gamestate, ServerMessage, ServerOp};

fn files_in(dir: &Path, exts: &[&str]) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            exts.iter().any(|x| name.ends_with(x))
        })
        .collect();
    v.sort();
    v
}

const BROKEN: [&str; 4] = [
    "truncated.dm_68",
    "invalid_command_byte.dm_68",
    "invalid_area_mask_length.dm_68",
    "invalid_entity_state_field_count_2.dm_68",
];

/// Every stored capture and every intact demo, both games.
fn clean_inputs() -> Vec<PathBuf> {
    let exts = [".pcapng", ".pcap", ".dm_68", ".dm_71", ".qwd", ".mvd"];
    let mut v = Vec::new();
    for root in [cap(""), shared("captures")] {
        for d in files_in(&root, &[""]).into_iter().filter(|p| p.is_dir()) {
            v.extend(files_in(&d, &exts));
        }
    }
    v.extend(
        files_in(&shared("demos/q3"), &[".dm_68"])
            .into_iter()
            .filter(|p| !BROKEN.iter().any(|b| p.ends_with(b))),
    );
    v.extend(files_in(&shared("demos/qw"), &[".mvd", ".qwd"]));
    v
}

#[test]
fn every_stored_capture_and_intact_demo_is_clean() {
    let inputs = clean_inputs();
    assert!(inputs.len() > 60, "{}", inputs.len());
    let mut units = 0;
    for p in &inputs {
        let r = check::check_file(p).unwrap_or_else(|e| panic!("{e}"));
        let lines: Vec<String> = r.findings.iter().map(check::line).collect();
        assert!(lines.is_empty(), "{}: {lines:#?}", p.display());
        units += r.units.len();
    }
    assert!(units >= inputs.len());
}

/// One record of a Quake 3 demo file as its framing says: (index from 1, offset, length).
fn demo_framing(data: &[u8]) -> (Vec<(u64, u64, i32)>, bool) {
    let mut out = Vec::new();
    let mut at = 0usize;
    while let Some(h) = data.get(at..at + 8) {
        let seq = i32::from_le_bytes([h[0], h[1], h[2], h[3]]);
        let len = i32::from_le_bytes([h[4], h[5], h[6], h[7]]);
        if seq == -1 && len == -1 {
            return (out, true);
        }
        let Ok(n) = usize::try_from(len) else {
            break;
        };
        if at + 8 + n > data.len() || n > 16384 {
            break;
        }
        out.push((out.len() as u64 + 1, at as u64, len));
        at += 8 + n;
    }
    (out, false)
}

#[test]
fn broken_demos_report_their_fault_with_record_and_offset() {
    // The documented fault of each broken demo (../shared/demos/README.md) and its rule.
    let want = [
        ("truncated.dm_68", "demo.truncated"),
        ("invalid_command_byte.dm_68", "q3.op-unknown"),
        ("invalid_area_mask_length.dm_68", "q3.bounds"),
        ("invalid_entity_state_field_count_2.dm_68", "q3.field-count"),
    ];
    for (file, rule) in want {
        let path = shared(&format!("demos/q3/{file}"));
        let Ok(data) = std::fs::read(&path) else {
            skip::data(&path);
            continue;
        };
        let r = check::check_file(&path).unwrap();
        assert_eq!(r.units.len(), 1);
        let first = r
            .findings
            .first()
            .unwrap_or_else(|| panic!("{file}: no finding"));
        assert_eq!(first.rule, rule, "{file}: {}", check::line(first));
        assert_eq!(first.flow, Some(1));
        // The record and offset agree with the file's own framing, walked here.
        let (records, end_marker) = demo_framing(&data);
        if file == "truncated.dm_68" {
            // Every record whole, no end marker: the fault is after the last record.
            assert!(!end_marker);
            let (last, off, len) = *records.last().unwrap();
            assert_eq!(off + 8 + len as u64, data.len() as u64);
            assert_eq!(
                (first.record, first.offset),
                (Some(last), Some(data.len() as u64)),
                "{}",
                check::line(first)
            );
            assert_eq!(r.findings.len(), 1, "{:?}", r.findings);
            continue;
        }
        let rec = first.record.expect("a record");
        let (_, off, _) = records
            .get(rec as usize - 1)
            .unwrap_or_else(|| panic!("{file}: record {rec} is past the readable framing"));
        assert_eq!(first.offset, Some(*off), "{}", check::line(first));
        assert!(first.bit.is_some());
        // The record is the first whose message the decoder could not read to its end.
        let (_, msgs) = q3common::decode(&path, false);
        let failed = msgs.iter().find(|m| m.error.is_some()).unwrap();
        assert_eq!(
            (Some(failed.frame), failed.file_offset),
            (first.record, first.offset)
        );
        // The documented values.
        let numbers: Vec<u64> = first
            .message
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|w| w.parse().ok())
            .collect();
        match file {
            "invalid_command_byte.dm_68" => assert!(numbers.contains(&0), "{}", first.message),
            "invalid_area_mask_length.dm_68" => {
                assert!(numbers.contains(&131), "{}", first.message)
            }
            _ => assert!(numbers.iter().any(|&n| n > 51), "{}", first.message),
        }
    }
}

/// A UDP datagram of a capture: endpoints, time, payload.
#[derive(Debug, Clone)]
struct Dg {
    src: SocketAddr,
    dst: SocketAddr,
    ts_ns: i64,
    payload: Vec<u8>,
}

/// The datagrams of a stored capture, read with the crate's reader (None, a skip, when the
/// capture is not there).
fn datagrams(path: &Path) -> Option<Vec<Dg>> {
    let mut r = CaptureReader::open(&skip::data_at(path)?).unwrap();
    let mut net = NetDecoder::new();
    let mut out = Vec::new();
    while let Some(f) = r.next_frame().unwrap() {
        if let Some(d) = net.decode(&f).unwrap() {
            out.push(Dg {
                src: d.src,
                dst: d.dst,
                ts_ns: d.ts_ns,
                payload: d.payload.to_vec(),
            });
        }
    }
    Some(out)
}

/// An IPv4/UDP packet (link type RAW) carrying `payload`.
fn udp_frame(src: SocketAddr, dst: SocketAddr, payload: &[u8]) -> Vec<u8> {
    let ip = |a: SocketAddr| match a.ip() {
        IpAddr::V4(v) => v.octets(),
        IpAddr::V6(_) => panic!("the stored Quake 3 captures are IPv4"),
    };
    let total = 20 + 8 + payload.len();
    let mut p = vec![
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        0,
        0,
        0,
        64,
        17,
        0,
        0,
    ];
    p.extend_from_slice(&ip(src));
    p.extend_from_slice(&ip(dst));
    p.extend_from_slice(&src.port().to_be_bytes());
    p.extend_from_slice(&dst.port().to_be_bytes());
    p.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(payload);
    p
}

/// Write `dgs` as a capture through the crate's pcapng writer (frame n = `dgs[n - 1]`) and
/// check it.
fn check_datagrams(name: &str, dgs: &[Dg]) -> check::FileCheck {
    let mut w = PcapNgWriter::new(Vec::new()).unwrap();
    for d in dgs {
        w.write_packet(
            LinkType::RAW,
            d.ts_ns,
            &udp_frame(d.src, d.dst, &d.payload),
            0,
        )
        .unwrap();
    }
    // The process's id too: two runs of the tests at once (a debug and a release build
    // share this directory) must not write each other's files.
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("check-{name}-{}.pcapng", std::process::id()));
    std::fs::write(&path, w.finish().unwrap()).unwrap();
    let r = check::check_file(&path).unwrap();
    std::fs::remove_file(&path).ok();
    r
}

const OOB: [u8; 4] = [0xff; 4];

/// The server's address: where the client sent its getchallenge.
fn server_of(dgs: &[Dg]) -> SocketAddr {
    dgs.iter()
        .find(|d| d.payload.starts_with(&OOB) && d.payload[4..].starts_with(b"getchallenge"))
        .expect("a getchallenge")
        .dst
}

/// Netchan sequence and fragment flag of a sequenced packet.
fn seq_of(d: &Dg) -> Option<(i32, bool)> {
    if d.payload.starts_with(&OOB) || d.payload.len() < 4 {
        return None;
    }
    let w = u32::from_le_bytes(d.payload[..4].try_into().unwrap());
    Some(((w & !FRAGMENT_BIT) as i32, w & FRAGMENT_BIT != 0))
}

/// `dgs` with `extra` inserted after index `after` (at its time): the inserted packets are
/// frames `after + 2`, `after + 3`, ...
fn inserted(dgs: &[Dg], after: usize, extra: &[Dg]) -> Vec<Dg> {
    let mut v = dgs[..=after].to_vec();
    v.extend(extra.iter().map(|d| Dg {
        ts_ns: dgs[after].ts_ns,
        ..d.clone()
    }));
    v.extend_from_slice(&dgs[after + 1..]);
    v
}

/// The one finding of `rule`, and no other finding.
fn only<'a>(r: &'a check::FileCheck, rule: &str) -> &'a Finding {
    let lines: Vec<String> = r.findings.iter().map(check::line).collect();
    assert_eq!(r.findings.len(), 1, "{lines:#?}");
    assert_eq!(r.findings[0].rule, rule, "{lines:#?}");
    &r.findings[0]
}

/// q3-basic rewritten through the crate's writer, the server's unfragmented sequenced
/// packets (indices), and the connection's flow id. The rewrite is clean.
fn q3_basic() -> Option<(Vec<Dg>, SocketAddr, Vec<usize>, u32)> {
    let dgs = datagrams(&cap("q3-basic/capture.pcapng"))?;
    let server = server_of(&dgs);
    let s2c: Vec<usize> = (0..dgs.len())
        .filter(|&i| dgs[i].src == server && seq_of(&dgs[i]).is_some_and(|(_, frag)| !frag))
        .collect();
    let control = check_datagrams("q3-basic-control", &dgs);
    assert!(control.findings.is_empty(), "{:?}", control.findings);
    assert_eq!(control.units.len(), 1);
    Some((dgs, server, s2c, control.units[0].0))
}

/// A server that goes back: a sequence sent again with other content, and a sequence from
/// far behind, each inserted into a real capture, are the rule's findings at their frames;
/// the same sequence again with the same bytes (a network duplicate) is not.
#[test]
fn hand_made_sequence_going_backwards() {
    let Some((dgs, _, s2c, flow)) = q3_basic() else {
        return;
    };
    let a = s2c[s2c.len() / 3];
    let (sa, _) = seq_of(&dgs[a]).unwrap();
    let find = |pred: &dyn Fn(i32) -> bool| {
        *s2c.iter()
            .find(|&&i| pred(seq_of(&dgs[i]).unwrap().0))
            .unwrap()
    };
    let near = find(&|s| s == sa + 5);
    let far = find(&|s| s > sa + REORDER_WINDOW + 10);
    let mut other = dgs[a].clone();
    *other.payload.last_mut().unwrap() ^= 0x55;

    let dup = check_datagrams("seq-dup", &inserted(&dgs, near, &[dgs[a].clone()]));
    assert!(dup.findings.is_empty(), "{:?}", dup.findings);

    for (name, after, packet) in [("seq-reused", near, &other), ("seq-far", far, &dgs[a])] {
        let r = check_datagrams(name, &inserted(&dgs, after, std::slice::from_ref(packet)));
        let f = only(&r, "netchan.sequence-backwards");
        assert_eq!(f.kind, Some(ErrorKind::Sequence));
        assert_eq!(
            (f.flow, f.frame, f.dir),
            (Some(flow), Some(after as u64 + 2), Some(Dir::S2c)),
            "{name}: {}",
            check::line(f)
        );
    }
}

/// A server message whose fragments pass MAX_MSGLEN, inserted into a real capture (the next
/// sequence, sent as full fragments): one finding, at the fragment that passes it.
#[test]
fn hand_made_fragment_past_max_msglen() {
    let Some((dgs, server, s2c, flow)) = q3_basic() else {
        return;
    };
    let a = s2c[s2c.len() / 2];
    let (sa, _) = seq_of(&dgs[a]).unwrap();
    let client = dgs[a].dst;
    // Full fragments until the one that no longer fits.
    let over = (0..)
        .find(|k| (k + 1) * FRAGMENT_SIZE > MAX_MSGLEN)
        .unwrap();
    let frags: Vec<Dg> = (0..=over)
        .map(|k| {
            let mut p = ((sa + 1) as u32 | FRAGMENT_BIT).to_le_bytes().to_vec();
            p.extend_from_slice(&((k * FRAGMENT_SIZE) as u16).to_le_bytes());
            p.extend_from_slice(&(FRAGMENT_SIZE as u16).to_le_bytes());
            p.extend(std::iter::repeat_n(k as u8, FRAGMENT_SIZE));
            Dg {
                src: server,
                dst: client,
                ts_ns: 0,
                payload: p,
            }
        })
        .collect();
    let r = check_datagrams("max-msglen", &inserted(&dgs, a, &frags));
    let f = only(&r, "netchan.max-msglen");
    assert_eq!(f.kind, Some(ErrorKind::Bounds));
    assert_eq!(
        (f.flow, f.frame, f.dir),
        (Some(flow), Some((a + 2 + over) as u64), Some(Dir::S2c)),
        "{}",
        check::line(f)
    );
}

/// A real protocol-71 client packet whose reliable acknowledge is changed (by a multiple of
/// the 64-command ring, so the rest of the packet keeps its meaning): acknowledging a
/// command the server never sent, and one far outside the window, are the rules' findings
/// at that packet and at the acknowledge's bit.
#[test]
fn hand_made_reliable_acknowledges() {
    let Some(dgs) = datagrams(&cap("q3-proto71/capture.pcapng")) else {
        return;
    };
    let server = server_of(&dgs);
    let control = check_datagrams("ack-control", &dgs);
    assert!(control.findings.is_empty(), "{:?}", control.findings);
    let c2s: Vec<usize> = (0..dgs.len())
        .filter(|&i| dgs[i].dst == server && seq_of(&dgs[i]).is_some_and(|(_, frag)| !frag))
        .collect();
    let i = c2s[c2s.len() * 3 / 4];
    let h = Header::parse(&dgs[i].payload, Dir::C2s, Protocol::V71).unwrap();
    let head = &dgs[i].payload[..h.header_len()];
    let body = &dgs[i].payload[h.header_len()..];
    // The header as the server reads it; the acknowledge starts after two longs.
    let mut r = BitReader::new(body);
    let server_id = r.read_long().unwrap();
    let message_ack = r.read_long().unwrap();
    let ack_bit = r.bit_pos() as u64;
    let ack = r.read_long().unwrap();
    let rest = r.bit_pos();
    for (name, new_ack, rule) in [
        ("ack-ahead", ack + 64, "q3.reliable-ack-ahead"),
        ("ack-window", ack - 128, "q3.reliable-ack-window"),
    ] {
        let mut w = BitWriter::new();
        w.write_long(server_id);
        w.write_long(message_ack);
        w.write_long(new_ack);
        for b in rest..body.len() * 8 {
            w.put_raw(u32::from(body[b >> 3] >> (b & 7) & 1), 1);
        }
        let mut edited = dgs.clone();
        edited[i].payload = [head, &w.finish()].concat();
        let r = check_datagrams(name, &edited);
        let f = only(&r, rule);
        assert_eq!(
            (f.frame, f.bit, f.dir),
            (Some(i as u64 + 1), Some(ack_bit), Some(Dir::C2s)),
            "{name}: {}",
            check::line(f)
        );
    }
}

fn q3_message(dir: Dir, seq: i32, frame: u64, body: Body) -> Message {
    Message {
        flow: 1,
        game: "q3",
        dir,
        frame,
        time: 0.0,
        seq: Some(seq),
        fragmented: false,
        kind: if dir == Dir::S2c { "server" } else { "client" },
        body,
        error: None,
        raw: None,
        client_gone: false,
        protocol: 68,
        file_offset: None,
        size: 0,
    }
}

/// A connection whose client acknowledges a server command never sent, then one far
/// outside the reliable window: two findings of the acknowledgement rules.
#[test]
fn reliable_acknowledges_outside_the_window_are_findings() {
    let gs = Gamestate {
        bit: 8,
        server_command_seq: 100,
        configstrings: Vec::new(),
        baselines: Vec::new(),
        client_num: 0,
        checksum_feed: 0,
    };
    let server = ServerMessage {
        ack: 0,
        ops: vec![ServerOp::Gamestate(Box::new(gs))],
        error: None,
        snapshot_head: None,
        protocol: 68,
    };
    let client = |ack: i32| ClientMessage {
        server_id: 1,
        message_ack: 1,
        reliable_ack: ack,
        ops: Vec::new(),
        error: None,
    };
    let mut w = Watch::default();
    let mut out = Vec::new();
    w.q3(&q3_message(Dir::S2c, 1, 1, Body::Server(server)), &mut out);
    w.q3(
        &q3_message(Dir::C2s, 1, 2, Body::Client(client(100))),
        &mut out,
    );
    assert!(out.is_empty(), "{out:?}");
    w.q3(
        &q3_message(Dir::C2s, 2, 3, Body::Client(client(101))),
        &mut out,
    );
    w.q3(
        &q3_message(Dir::C2s, 3, 4, Body::Client(client(20))),
        &mut out,
    );
    let rules: Vec<(&str, Option<u64>)> = out.iter().map(|f| (f.rule, f.frame)).collect();
    assert_eq!(
        rules,
        [
            ("q3.reliable-ack-ahead", Some(3)),
            ("q3.reliable-ack-window", Some(4))
        ]
    );
}

#[test]
fn junit_report_has_the_common_structure() {
    let files = [
        cap("q3-two-clients/capture.pcapng"),
        shared("demos/q3/truncated.dm_68"),
        shared("demos/q3/invalid_area_mask_length.dm_68"),
    ];
    let results: Vec<_> = files
        .iter()
        .map(|p| check::check_file(p).unwrap())
        .collect();
    let xml = junit::render(&results);
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    let suites: Vec<_> = root.children().filter(|n| n.is_element()).collect();
    assert_eq!(suites.len(), 3);
    let mut total_failures = 0;
    for (s, r) in suites.iter().zip(&results) {
        assert_eq!(s.tag_name().name(), "testsuite");
        assert_eq!(s.attribute("name"), Some(r.file.as_str()));
        let cases: Vec<_> = s
            .children()
            .filter(|n| n.has_tag_name("testcase"))
            .collect();
        assert_eq!(s.attribute("tests"), Some(cases.len().to_string().as_str()));
        let failed = cases
            .iter()
            .filter(|c| c.children().any(|f| f.has_tag_name("failure")))
            .count();
        assert_eq!(s.attribute("failures"), Some(failed.to_string().as_str()));
        for c in &cases {
            assert!(c.attribute("name").is_some());
            for f in c.children().filter(|f| f.has_tag_name("failure")) {
                assert!(f.attribute("type").is_some() && f.attribute("message").is_some());
                total_failures += 1;
            }
        }
    }
    // The clean capture's cases pass; every finding is one failure; the root sums the suites.
    assert_eq!(suites[0].attribute("failures"), Some("0"));
    assert!(results[0].findings.is_empty());
    assert_eq!(
        total_failures,
        results.iter().map(|r| r.findings.len()).sum::<usize>()
    );
    let sum = |attr: &str| -> usize {
        suites
            .iter()
            .map(|s| s.attribute(attr).unwrap().parse::<usize>().unwrap())
            .sum()
    };
    assert_eq!(
        root.attribute("failures"),
        Some(sum("failures").to_string().as_str())
    );
    assert_eq!(
        root.attribute("tests"),
        Some(sum("tests").to_string().as_str())
    );
    assert!(sum("failures") >= 2);
}

/// `check` decodes with `Detail::Headers`: every message has the same error, acknowledge and
/// ops as the full decode, its snapshot as the full snapshot's head.
#[test]
fn headers_only_decode_matches_the_full_decode() {
    use quakecap::q3::demo_file::Decoder;
    for file in [
        "dm_68_cpma_3_matches_2_gamestates.dm_68",
        "invalid_command_byte.dm_68",
    ] {
        let path = shared(&format!("demos/q3/{file}"));
        let Ok(data) = std::fs::read(&path) else {
            skip::data(&path);
            continue;
        };
        let run = |headers_only| {
            let detail = if headers_only {
                quakecap::pipeline::Detail::Headers
            } else {
                quakecap::pipeline::Detail::Full
            };
            Decoder::open(file, &data, detail).collect::<Vec<_>>()
        };
        let (full, heads) = (run(false), run(true));
        assert_eq!(full.len(), heads.len());
        let mut snapshots = 0;
        for (f, h) in full.iter().zip(&heads) {
            assert_eq!(f.error, h.error);
            let (Body::Server(fs), Body::Server(hs)) = (&f.body, &h.body) else {
                panic!("record {}: not a server message", f.frame);
            };
            assert_eq!(fs.ack, hs.ack);
            let mut want_ops = Vec::new();
            let mut want_head = None;
            for op in &fs.ops {
                match op {
                    ServerOp::Snapshot(n) => want_head = Some(n.head()),
                    ServerOp::Eof { .. } => {}
                    other => want_ops.push(other.clone()),
                }
            }
            snapshots += usize::from(want_head.is_some());
            assert_eq!(hs.ops, want_ops, "record {}", f.frame);
            assert_eq!(hs.snapshot_head, want_head, "record {}", f.frame);
        }
        assert!(snapshots > 100, "{file}: {snapshots}");
    }
}

/// `check` takes inputs as every command does: a folder is walked, gzip is undone, and the
/// JUnit report counts the same units as the library's check of the plain files.
#[test]
fn check_cli_takes_folders_and_gzip() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("check-cli");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let plain = root.join("captures/q3-basic/capture.pcapng");
    let gz = dir.join("basic.pcapng.gz");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::fast(),
    );
    std::io::Write::write_all(&mut enc, &std::fs::read(&plain).unwrap()).unwrap();
    enc.finish().unwrap();
    let folder = root.join("captures/qw-basic");
    let want: usize = std::iter::once(plain.clone())
        .chain(files_in(&folder, &["pcapng", "qwd", "mvd"]))
        .map(|f| check::check_file(&f).expect("check").units.len())
        .sum();
    let junit_path = dir.join("report.xml");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_quakecap"))
        .args(["check", "--junit"])
        .arg(&junit_path)
        .arg(&gz)
        .arg(&folder)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.contains(&format!("{want} connections/demos checked, 0 findings")),
        "{out}"
    );
    let xml = std::fs::read_to_string(&junit_path).unwrap();
    assert_eq!(xml.matches("<testcase ").count(), want, "{xml}");
}

/// Snapshot rules on a stream of snapshot heads (as `check` decodes them): serverTime going
/// back within a gamestate, and a run of snapshots delta'd from a frame the client no longer
/// holds (too old) or never held (invalid base) — one finding at the first of each run. The
/// reasons are the decoder's own (`CL_ParseSnapshot`'s messages).
#[test]
fn snapshot_time_and_delta_rules_are_findings() {
    use quakecap::q3::svc::SnapshotHead;
    let gamestate = || {
        ServerOp::Gamestate(Box::new(Gamestate {
            bit: 8,
            server_command_seq: 0,
            configstrings: Vec::new(),
            baselines: Vec::new(),
            client_num: 0,
            checksum_feed: 0,
        }))
    };
    let head = |server_time: i32, reason: Option<&'static str>| SnapshotHead {
        bit: 40,
        server_time,
        delta_num: 1,
        delta_base: 0,
        flags: 0,
        valid: reason.is_none(),
        invalid_reason: reason,
    };
    let msg = |ops: Vec<ServerOp>, h: Option<SnapshotHead>| {
        Body::Server(ServerMessage {
            ack: 0,
            ops,
            error: None,
            snapshot_head: h,
            protocol: 68,
        })
    };
    let stream = [
        msg(vec![gamestate()], None),
        msg(Vec::new(), Some(head(1000, None))),
        msg(Vec::new(), Some(head(1050, None))),
        msg(Vec::new(), Some(head(1000, None))), // back in time: finding
        msg(Vec::new(), Some(head(1100, Some("Delta frame too old")))), // finding
        msg(Vec::new(), Some(head(1150, Some("Delta frame too old")))), // same run
        msg(Vec::new(), Some(head(1200, None))),
        msg(
            Vec::new(),
            Some(head(1250, Some("Delta from invalid frame"))),
        ), // finding
        msg(vec![gamestate()], None),
        msg(Vec::new(), Some(head(50, None))), // a new gamestate restarts the clock
    ];
    let mut w = Watch::default();
    let mut out = Vec::new();
    for (i, body) in stream.into_iter().enumerate() {
        let i = i as i32 + 1;
        w.q3(&q3_message(Dir::S2c, i, i as u64, body), &mut out);
    }
    let rules: Vec<(&str, Option<u64>)> = out.iter().map(|f| (f.rule, f.frame)).collect();
    assert_eq!(
        rules,
        [
            ("q3.servertime-backwards", Some(4)),
            ("q3.delta-too-old", Some(5)),
            ("q3.delta-invalid-base", Some(8)),
        ]
    );
}

/// Where the published JUnit schema is: `QUAKECAP_JUNIT_XSD`, or where `.ci/run` downloads
/// it (the Jenkins xunit plugin's junit-10.xsd, MIT licence; not stored in the repository).
fn junit_xsd() -> Option<PathBuf> {
    let p = std::env::var_os("QUAKECAP_JUNIT_XSD")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-data/junit-10.xsd")
        });
    p.is_file().then_some(p)
}

/// Validate `xml` against `xsd` with the first validator present: python3's `xmlschema`,
/// then `xmllint`. None when there is none; Some(Err(text)) when the document is invalid.
fn validate_xml(xsd: &Path, xml: &Path) -> Option<Result<(), String>> {
    use std::process::Command;
    let py = "import sys, xmlschema\nxmlschema.XMLSchema(sys.argv[1]).validate(sys.argv[2])";
    let has_xmlschema = Command::new("python3")
        .args(["-c", "import xmlschema"])
        .output()
        .is_ok_and(|o| o.status.success());
    let out = if has_xmlschema {
        Command::new("python3")
            .args(["-c", py])
            .arg(xsd)
            .arg(xml)
            .output()
    } else {
        Command::new("xmllint")
            .args(["--noout", "--schema"])
            .arg(xsd)
            .arg(xml)
            .output()
    };
    let o = out.ok()?;
    Some(if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ))
    })
}

/// `check --junit` on clean inputs and on the broken demos (failures, findings of no flow)
/// validates against the Jenkins xunit plugin's published JUnit schema; the same report with
/// a required attribute removed does not (the validator really applies the schema).
#[test]
fn junit_report_validates_against_the_published_schema() {
    let Some(xsd) = junit_xsd() else {
        return skip::tool(
            "the JUnit schema junit-10.xsd (.ci/run fetches it; or QUAKECAP_JUNIT_XSD)",
        );
    };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("check-junit-xsd");
    std::fs::create_dir_all(&dir).unwrap();
    let report = dir.join("report.xml");
    let mut inputs = vec![cap("q3-two-clients/capture.pcapng"), cap("qw-basic")];
    inputs.extend(BROKEN.iter().map(|b| shared(&format!("demos/q3/{b}"))));
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_quakecap"))
        .args(["check", "--junit"])
        .arg(&report)
        .args(&inputs)
        .output()
        .unwrap();
    // Findings (the broken demos): exit 1, and the report is written.
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let xml = std::fs::read_to_string(&report).unwrap();
    assert!(xml.matches("<failure ").count() >= BROKEN.len(), "{xml}");
    let Some(valid) = validate_xml(&xsd, &report) else {
        return skip::tool(
            "an XML schema validator (python3 -m pip install xmlschema, or xmllint)",
        );
    };
    valid.unwrap_or_else(|e| panic!("{e}\n{xml}"));
    // A testsuite without its required `tests` attribute is rejected.
    let broken = dir.join("broken.xml");
    let at = xml.find("<testsuite ").unwrap();
    let end = at + xml[at..].find('>').unwrap();
    let head = xml[at..end].replacen(" tests=\"", " nottests=\"", 1);
    std::fs::write(&broken, format!("{}{head}{}", &xml[..at], &xml[end..])).unwrap();
    assert!(
        validate_xml(&xsd, &broken).unwrap().is_err(),
        "the validator accepted a testsuite without `tests`"
    );
}

/// A QuakeWorld netchan packet's header: (sequence, reliable flag, ack, ack parity bit).
fn qw_head(d: &Dg) -> Option<(u32, bool, u32, bool)> {
    if d.payload.starts_with(&OOB) || d.payload.len() < 8 {
        return None;
    }
    let w = |i: usize| u32::from_le_bytes(d.payload[i..i + 4].try_into().unwrap());
    let (a, b) = (w(0), w(4));
    Some((a & 0x7fff_ffff, a >> 31 != 0, b & 0x7fff_ffff, b >> 31 != 0))
}

/// qw-basic rewritten through the crate's writer, its server's address and connection flow
/// id; the rewrite is clean.
fn qw_basic() -> Option<(Vec<Dg>, SocketAddr, u32)> {
    let dgs = datagrams(&cap("qw-basic/capture.pcapng"))?;
    let server = server_of(&dgs);
    let control = check_datagrams("qw-basic-control", &dgs);
    assert!(control.findings.is_empty(), "{:?}", control.findings);
    assert_eq!(control.units.len(), 1);
    Some((dgs, server, control.units[0].0))
}

/// A QuakeWorld server that goes back: a sequence it sent before, again with other content
/// (another size), and a copy of a packet from far behind, each inserted into a real
/// capture, are `qw.sequence-backwards` at their frames; a byte-for-byte copy shortly after
/// (a network duplicate) is not.
#[test]
fn hand_made_qw_sequence_going_backwards() {
    let Some((dgs, server, flow)) = qw_basic() else {
        return;
    };
    let s2c: Vec<usize> = (0..dgs.len())
        .filter(|&i| dgs[i].src == server && qw_head(&dgs[i]).is_some())
        .collect();
    let a = s2c[s2c.len() / 3];
    let (sa, ..) = qw_head(&dgs[a]).unwrap();
    let find = |pred: &dyn Fn(u32) -> bool| {
        *s2c.iter()
            .find(|&&i| pred(qw_head(&dgs[i]).unwrap().0))
            .unwrap()
    };
    let near = find(&|s| s == sa + 5);
    let far = find(&|s| s > sa + 64 + 10);
    // Sequence sa again, with the body of a packet of another size.
    let body_of = *s2c
        .iter()
        .find(|&&i| dgs[i].payload.len() != dgs[a].payload.len())
        .unwrap();
    let mut other = dgs[a].clone();
    other.payload = [&dgs[a].payload[..8], &dgs[body_of].payload[8..]].concat();

    let dup = check_datagrams("qw-seq-dup", &inserted(&dgs, near, &[dgs[a].clone()]));
    assert!(dup.findings.is_empty(), "{:?}", dup.findings);
    for (name, after, packet) in [
        ("qw-seq-reused", near, &other),
        ("qw-seq-far", far, &dgs[a]),
    ] {
        let r = check_datagrams(name, &inserted(&dgs, after, std::slice::from_ref(packet)));
        let f = only(&r, "qw.sequence-backwards");
        assert_eq!(
            (f.flow, f.frame, f.dir, f.bit),
            (Some(flow), Some(after as u64 + 2), Some(Dir::S2c), Some(0)),
            "{name}: {}",
            check::line(f)
        );
    }
}

/// A QuakeWorld client packet acknowledging a server sequence not sent yet (the ack word
/// raised past the highest server sequence before it in the capture): `qw.ack-ahead` at
/// that packet and the ack word's bit.
#[test]
fn hand_made_qw_ack_ahead() {
    let Some((dgs, server, flow)) = qw_basic() else {
        return;
    };
    let i = (dgs.len() / 2..dgs.len())
        .find(|&i| dgs[i].dst == server && qw_head(&dgs[i]).is_some())
        .unwrap();
    let highest = dgs[..i]
        .iter()
        .filter(|d| d.src == server)
        .filter_map(qw_head)
        .map(|h| h.0)
        .max()
        .unwrap();
    let (_, _, _, bit) = qw_head(&dgs[i]).unwrap();
    let mut edited = dgs.clone();
    let word = (highest + 10) | (u32::from(bit) << 31);
    edited[i].payload[4..8].copy_from_slice(&word.to_le_bytes());
    let r = check_datagrams("qw-ack-ahead", &edited);
    let f = only(&r, "qw.ack-ahead");
    assert_eq!(
        (f.flow, f.frame, f.dir, f.bit),
        (Some(flow), Some(i as u64 + 1), Some(Dir::C2s), Some(32)),
        "{}",
        check::line(f)
    );
}

/// A QuakeWorld client whose reliable acknowledge bit flips although no reliable server
/// message lies in the sequences it newly acknowledges (the bit inverted in every client
/// packet from there on, so it flips exactly once): `qw.reliable-ack-flip` at that packet.
#[test]
fn hand_made_qw_reliable_ack_flip() {
    let Some((dgs, server, flow)) = qw_basic() else {
        return;
    };
    let reliable_s2c: Vec<u32> = dgs
        .iter()
        .filter(|d| d.src == server)
        .filter_map(qw_head)
        .filter(|h| h.1)
        .map(|h| h.0)
        .collect();
    let c2s: Vec<usize> = (0..dgs.len())
        .filter(|&i| dgs[i].dst == server && qw_head(&dgs[i]).is_some())
        .collect();
    // A client packet past the middle whose newly acknowledged span holds no reliable send.
    let k = (c2s.len() / 2..c2s.len())
        .find(|&k| {
            let (prev, now) = (
                qw_head(&dgs[c2s[k - 1]]).unwrap(),
                qw_head(&dgs[c2s[k]]).unwrap(),
            );
            now.0 > prev.0
                && now.2 > prev.2
                && !reliable_s2c.iter().any(|&s| s > prev.2 && s <= now.2)
        })
        .unwrap();
    let mut edited = dgs.clone();
    for &i in &c2s[k..] {
        edited[i].payload[7] ^= 0x80;
    }
    let r = check_datagrams("qw-ack-flip", &edited);
    let f = only(&r, "qw.reliable-ack-flip");
    assert_eq!(
        (f.flow, f.frame, f.dir, f.bit),
        (
            Some(flow),
            Some(c2s[k] as u64 + 1),
            Some(Dir::C2s),
            Some(32)
        ),
        "{}",
        check::line(f)
    );
}

/// `MAX_GAMESTATE_CHARS` of ioquake3's `q_shared.h`, and `CL_ParseGamestate`'s rule: its
/// `dataCount` starts at 1 and may not pass the limit with any configstring and its NUL.
const ENGINE_MAX_GAMESTATE_CHARS: usize = 16000;

/// q3-basic's client demo with its gamestate re-written through quakecap's bit writer and
/// demo writer, padded with configstrings at unused indexes until the engine's `dataCount`
/// reaches `data_count`; the other records as they were. Returns the demo and the bit where
/// the last configstring's index starts (where the decoder reports the size).
fn padded_gamestate_demo(data_count: usize) -> Option<(Vec<u8>, usize)> {
    use quakecap::q3::delta::{write_delta_entity, EntityState};
    use quakecap::q3::state::ClientState;
    use quakecap::q3::svc::{emit, parse_server_message};
    let path = cap("q3-basic/client1-demo0.dm_68");
    let Ok(data) = std::fs::read(&path) else {
        skip::data(&path);
        return None;
    };
    // The printable character with the shortest Huffman code: the record must stay within
    // MAX_MSGLEN bytes.
    let pad = (b' '..=b'~')
        .filter(|c| !matches!(c, b'%' | b'"' | b'\\' | b';'))
        .min_by_key(|&c| BitWriter::byte_len_bits(c))
        .unwrap() as char;
    let mut out = quakecap::q3::demo::Writer::new(Vec::new());
    let mut last_bit = 0;
    let mut st = ClientState::default();
    for (i, rec) in quakecap::q3::demo::Reader::new(&data).enumerate() {
        let rec = rec.unwrap();
        if i > 0 {
            out.record(rec.seq, rec.body).unwrap();
            continue;
        }
        let m = parse_server_message(&mut BitReader::new(rec.body), None, rec.seq, &mut st);
        let Some(ServerOp::Gamestate(g)) = m.ops.first() else {
            panic!("record 1 is not a gamestate: {:?}", m.ops.first());
        };
        let mut w = BitWriter::new();
        emit::ack(&mut w, m.ack);
        w.write_byte(2);
        w.write_long(g.server_command_seq);
        let mut count = 1 + g
            .configstrings
            .iter()
            .map(|c| c.value.len() + 1)
            .sum::<usize>();
        let mut strings: Vec<(i16, String)> = g
            .configstrings
            .iter()
            .map(|c| (c.index as i16, c.value.clone()))
            .collect();
        let mut index = 1000;
        while count < data_count {
            assert!(strings.iter().all(|s| s.0 < index), "index {index} used");
            let n = (data_count - count - 1).min(7000);
            strings.push((index, pad.to_string().repeat(n)));
            count += n + 1;
            index += 1;
        }
        assert_eq!(count, data_count);
        for (idx, value) in &strings {
            w.write_byte(3);
            last_bit = w.bit_pos();
            w.write_short(*idx);
            w.write_big_string(value);
        }
        let zero = EntityState::default();
        for b in &g.baselines {
            w.write_byte(4);
            write_delta_entity(
                &mut w,
                quakecap::q3::protocol::Protocol::q3(),
                &zero,
                Some(&b.state),
                true,
            );
        }
        w.write_byte(8);
        w.write_long(g.client_num);
        w.write_long(g.checksum_feed);
        emit::eof(&mut w);
        let body = w.finish();
        assert!(body.len() < MAX_MSGLEN, "{} bytes", body.len());
        out.record(rec.seq, &body).unwrap();
    }
    Some((out.finish().unwrap(), last_bit))
}

/// A gamestate whose configstrings fill the engine's buffer exactly checks clean; one more
/// character is `q3.bounds` at record 1 (offset 0), at the configstring that passes it.
#[test]
fn hand_made_gamestate_past_max_gamestate_chars() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    for (count, over) in [
        (ENGINE_MAX_GAMESTATE_CHARS, false),
        (ENGINE_MAX_GAMESTATE_CHARS + 1, true),
    ] {
        let Some((demo, bit)) = padded_gamestate_demo(count) else {
            return;
        };
        let path = dir.join(format!("check-gamestate-{count}.dm_68"));
        std::fs::write(&path, demo).unwrap();
        let r = check::check_file(&path).unwrap();
        std::fs::remove_file(&path).ok();
        if !over {
            assert!(r.findings.is_empty(), "{:?}", r.findings);
            continue;
        }
        let f = r.findings.first().expect("a finding");
        assert_eq!(f.rule, "q3.bounds", "{}", check::line(f));
        assert_eq!(f.kind, Some(ErrorKind::Bounds));
        assert_eq!(
            (f.flow, f.record, f.offset, f.bit),
            (Some(1), Some(1), Some(0), Some(bit as u64)),
            "{}",
            check::line(f)
        );
        assert!(f.message.contains("16000"), "{}", f.message);
    }
}

/// `SV_UserMove` takes 1 to MAX_PACKET_USERCMDS (32) usercmds per move and drops the packet
/// otherwise; every usercmd field is sent at its full width (`MSG_ReadDeltaUsercmdKey`), so
/// the count is the one range a usercmd can break. A real protocol-71 client packet with its
/// move's count set to 0 and to 33: `q3.bounds` at that packet, at the count's bit.
#[test]
fn hand_made_usercmd_count_out_of_range() {
    const MAX_PACKET_USERCMDS: u32 = 32;
    let Some(dgs) = datagrams(&cap("q3-proto71/capture.pcapng")) else {
        return;
    };
    let server = server_of(&dgs);
    let c2s: Vec<usize> = (0..dgs.len())
        .filter(|&i| dgs[i].dst == server && seq_of(&dgs[i]).is_some_and(|(_, frag)| !frag))
        .collect();
    // A client packet past the middle whose first op after the header is a move (clc_move 2
    // or clc_moveNoDelta 5): its count byte follows the op byte.
    let found = c2s[c2s.len() / 2..].iter().find_map(|&i| {
        let h = Header::parse(&dgs[i].payload, Dir::C2s, Protocol::V71).ok()?;
        let body = &dgs[i].payload[h.header_len()..];
        let mut r = BitReader::new(body);
        for _ in 0..3 {
            r.read_long().ok()?;
        }
        let op = r.read_byte().ok()?;
        let count_bit = r.bit_pos();
        r.read_byte().ok()?;
        matches!(op, 2 | 5).then_some((i, h.header_len(), count_bit, r.bit_pos()))
    });
    let (i, head_len, count_bit, rest) = found.expect("a client packet opening with a move");
    let body = &dgs[i].payload[head_len..];
    for count in [0u8, MAX_PACKET_USERCMDS as u8 + 1] {
        let mut w = BitWriter::new();
        for b in 0..count_bit {
            w.put_raw(u32::from(body[b >> 3] >> (b & 7) & 1), 1);
        }
        w.write_byte(count);
        for b in rest..body.len() * 8 {
            w.put_raw(u32::from(body[b >> 3] >> (b & 7) & 1), 1);
        }
        let mut edited = dgs.clone();
        edited[i].payload = [&dgs[i].payload[..head_len], &w.finish()].concat();
        let r = check_datagrams(&format!("usercmd-count-{count}"), &edited);
        let f = only(&r, "q3.bounds");
        assert_eq!(
            (f.frame, f.bit, f.dir),
            (Some(i as u64 + 1), Some(count_bit as u64), Some(Dir::C2s)),
            "{}",
            check::line(f)
        );
        assert!(
            f.message.contains(&format!("count {count}")),
            "{}",
            f.message
        );
    }
}

/// The handshake's challenge: a real capture whose server `challengeResponse` names another
/// challenge (one digit changed) makes the client's `connect` carry a challenge the server
/// never gave (`SV_DirectConnect`'s "bad challenge"), and a `connectResponse` naming another
/// one is what the client ignores: each `q3.challenge-mismatch` at its frame.
#[test]
fn hand_made_challenge_mismatch() {
    let Some((dgs, server, _, flow)) = q3_basic() else {
        return;
    };
    let oob_index = |dir_to_server: bool, word: &[u8]| {
        (0..dgs.len())
            .find(|&i| {
                (dgs[i].dst == server) == dir_to_server
                    && dgs[i].payload.starts_with(&OOB)
                    && dgs[i].payload[4..].starts_with(word)
            })
            .unwrap_or_else(|| panic!("no {}", String::from_utf8_lossy(word)))
    };
    let response = oob_index(false, b"challengeResponse ");
    let connect = oob_index(true, b"connect");
    let accepted = oob_index(false, b"connectResponse ");
    assert!(response < connect && connect < accepted);
    // The first digit of the first argument, changed.
    let digit_after = |p: &[u8], word: &str| {
        let at = 4 + word.len();
        let at = at + p[at..].iter().position(|b| b.is_ascii_digit()).unwrap();
        let mut q = p.to_vec();
        q[at] = if q[at] == b'9' { b'1' } else { q[at] + 1 };
        q
    };
    for (name, i, word, finding_at) in [
        (
            "challenge-response",
            response,
            "challengeResponse ",
            connect,
        ),
        ("connect-response", accepted, "connectResponse ", accepted),
    ] {
        let mut edited = dgs.clone();
        edited[i].payload = digit_after(&dgs[i].payload, word);
        let r = check_datagrams(name, &edited);
        let f = only(&r, "q3.challenge-mismatch");
        assert_eq!(
            (f.flow, f.frame, f.bit),
            (Some(flow), Some(finding_at as u64 + 1), None),
            "{name}: {}",
            check::line(f)
        );
    }
}

/// q3-basic's client demo re-written through quakecap's demo writer with one record added
/// after the 100th: a message of the acknowledge and svc_EOF alone, its sequence 10 below the
/// record before it. `demo.sequence-order` at that record (number and offset as the file's
/// framing says), nothing else.
#[test]
fn hand_made_demo_record_going_back() {
    use quakecap::q3::svc::emit;
    let path = cap("q3-basic/client1-demo0.dm_68");
    let Ok(data) = std::fs::read(&path) else {
        skip::data(&path);
        return;
    };
    let mut out = quakecap::q3::demo::Writer::new(Vec::new());
    let mut inserted_seq = None;
    for (i, rec) in quakecap::q3::demo::Reader::new(&data).enumerate() {
        let rec = rec.unwrap();
        out.record(rec.seq, rec.body).unwrap();
        if i == 99 {
            let ack = BitReader::new(rec.body).read_long().unwrap();
            let mut w = BitWriter::new();
            emit::ack(&mut w, ack);
            emit::eof(&mut w);
            out.record(rec.seq - 10, &w.finish()).unwrap();
            inserted_seq = Some(rec.seq - 10);
        }
    }
    let edited = out.finish().unwrap();
    let (records, end_marker) = demo_framing(&edited);
    assert!(end_marker);
    let (index, offset, _) = records[100];
    let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join("check-record-back.dm_68");
    std::fs::write(&file, &edited).unwrap();
    let r = check::check_file(&file).unwrap();
    std::fs::remove_file(&file).ok();
    let f = only(&r, "demo.sequence-order");
    assert_eq!(
        (f.flow, f.record, f.offset),
        (Some(1), Some(index), Some(offset)),
        "{}",
        check::line(f)
    );
    assert!(
        f.message.contains(&inserted_seq.unwrap().to_string()),
        "{}",
        f.message
    );
}
