//! Issue 15: `check` — conformance findings on stored captures, demos and hand-made faults.
mod q3common;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use q3common::{cap, shared};
use quakecap::capture::{LinkType, PcapNgWriter};
use quakecap::check::{self, junit, state::Watch, Finding};
use quakecap::flow::Dir;
use quakecap::q3::clc::ClientMessage;
use quakecap::q3::message::{Body, Message};
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

#[test]
fn broken_demos_report_their_fault_with_record_and_offset() {
    // (file, rule, record, offset) of the documented fault.
    let want = [
        ("truncated.dm_68", "demo.truncated", 238, 20480),
        ("invalid_command_byte.dm_68", "q3.op-unknown", 1, 0),
        ("invalid_area_mask_length.dm_68", "q3.bounds", 7, 4082),
        (
            "invalid_entity_state_field_count_2.dm_68",
            "q3.field-count",
            394,
            110471,
        ),
    ];
    for (file, rule, record, offset) in want {
        let r = check::check_file(&shared(&format!("demos/q3/{file}"))).unwrap();
        let first = r
            .findings
            .first()
            .unwrap_or_else(|| panic!("{file}: no finding"));
        assert_eq!(
            (first.rule, first.record, first.offset),
            (rule, Some(record), Some(offset)),
            "{file}: {}",
            check::line(first)
        );
        assert_eq!(r.units.len(), 1);
    }
}

fn udp_frame(src: (u8, u16), dst: (u8, u16), payload: &[u8]) -> Vec<u8> {
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
    p.extend_from_slice(&Ipv4Addr::new(10, 0, 0, src.0).octets());
    p.extend_from_slice(&Ipv4Addr::new(10, 0, 0, dst.0).octets());
    let ulen = (8 + payload.len()) as u16;
    p.extend_from_slice(&src.1.to_be_bytes());
    p.extend_from_slice(&dst.1.to_be_bytes());
    p.extend_from_slice(&ulen.to_be_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(payload);
    p
}

/// A hand-made capture: a client asks for a challenge, then the server sends a fragmented
/// message whose fragments pass MAX_MSGLEN.
#[test]
fn hand_made_fragment_past_max_msglen_is_a_netchan_finding() {
    let (server, client) = ((1, 27960), (2, 40000));
    let mut w = PcapNgWriter::new(Vec::new()).unwrap();
    let mut oob = vec![0xff; 4];
    oob.extend_from_slice(b"getchallenge");
    w.write_packet(LinkType::RAW, 0, &udp_frame(client, server, &oob), 0)
        .unwrap();
    for k in 0..13u16 {
        let mut p = (5u32 | 1 << 31).to_le_bytes().to_vec();
        p.extend_from_slice(&(k * 1300).to_le_bytes());
        p.extend_from_slice(&1300u16.to_le_bytes());
        p.extend(std::iter::repeat_n(0u8, 1300));
        let ts = 1000 * (i64::from(k) + 1);
        w.write_packet(LinkType::RAW, ts, &udp_frame(server, client, &p), 0)
            .unwrap();
    }
    let path = std::env::temp_dir().join(format!("quakecap-check-{}.pcapng", std::process::id()));
    std::fs::write(&path, w.finish().unwrap()).unwrap();
    let r = check::check_file(&path).unwrap();
    std::fs::remove_file(&path).ok();
    let f: Vec<&Finding> = r
        .findings
        .iter()
        .filter(|f| f.rule == "netchan.max-msglen")
        .collect();
    assert_eq!(f.len(), 1, "{:?}", r.findings);
    assert_eq!(f[0].frame, Some(14));
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
    // Two clean connections, then the truncation and the area mask + framing faults.
    assert_eq!(suites[0].attribute("failures"), Some("0"));
    assert_eq!(
        total_failures,
        results.iter().map(|r| r.findings.len()).sum::<usize>()
    );
    assert_eq!(root.attribute("failures"), Some("2"));
}
