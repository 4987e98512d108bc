//! Issue 2: Quake 3 connections reassembled from the real captures.
mod q3common;
use q3common::*;
use quakecap::pipeline::{self, Options, Sink};

struct Nothing;
impl Sink for Nothing {}

fn flows(rel: &str) -> quakecap::pipeline::Report {
    pipeline::run_capture(&cap(rel), &Options::default(), &mut Nothing, &mut |_| {}).unwrap()
}

/// (capture, UDP datagrams, fragmented server messages) — counts from a byte-level walk of
/// each pcapng (EPB → Ethernet → IPv4 → UDP; fragmented = distinct sequences with the
/// fragment bit), done outside quakecap.
const COUNTS: [(&str, u64, u64); 7] = [
    ("q3-basic/capture.pcapng", 1893, 1),
    ("q3-download/capture.pcapng", 2332, 2),
    ("q3-impaired/capture.pcapng", 2837, 2),
    ("q3-mapchange/capture.pcapng", 4131, 3),
    ("q3-proto71/capture.pcapng", 2005, 1),
    ("q3-two-clients/capture.pcapng", 4410, 2),
    ("q3-impaired/server-side.pcapng", 2793, 2),
];

#[test]
fn every_datagram_counted_once_and_fragments_counted() {
    for (rel, udp, frags) in COUNTS {
        let r = flows(rel);
        assert_eq!(r.udp_datagrams, udp, "{rel}");
        let sum: u64 = r.flows.iter().map(|f| f.packets.total()).sum();
        assert_eq!(sum, udp, "{rel}: packets over all flows");
        let fr: u64 = r.flows.iter().map(|f| f.fragments.s2c).sum();
        assert_eq!(fr, frags, "{rel}: fragmented server messages");
        assert!(r.flows.iter().all(|f| f.fragments.c2s == 0), "{rel}");
        assert!(
            r.flows.iter().all(|f| f.errors == 0),
            "{rel}: {:?}",
            r.flows
        );
    }
}

/// (capture, [(qport, challenge)] per client in order) as the clients really used them: the
/// qport of every client→server header and the `challenge` of the connect userinfo (which
/// the server echoed in connectResponse).
#[test]
fn one_connection_per_client_with_its_qport_challenge_and_name() {
    type Clients = &'static [(u16, i64)];
    let expect: [(&str, u32, Clients); 7] = [
        ("q3-basic/capture.pcapng", 68, &[(23661, 1552856705)]),
        (
            "q3-two-clients/capture.pcapng",
            68,
            &[(39992, 2083060479), (50400, -1328020035)],
        ),
        ("q3-mapchange/capture.pcapng", 68, &[(37880, -1321898663)]),
        ("q3-impaired/capture.pcapng", 68, &[(16821, 1505368824)]),
        ("q3-impaired/server-side.pcapng", 68, &[(16821, 1505368824)]),
        ("q3-proto71/capture.pcapng", 71, &[(12468, 1338365162)]),
        ("q3-download/capture.pcapng", 68, &[(47185, 1153577838)]),
    ];
    for (rel, proto, clients) in expect {
        let r = flows(rel);
        let conns: Vec<_> = r.flows.iter().filter(|f| f.kind == "connection").collect();
        assert_eq!(conns.len(), clients.len(), "{rel}");
        for (i, (c, (qport, challenge))) in conns.iter().zip(clients).enumerate() {
            assert_eq!(c.game, "q3");
            assert_eq!(c.protocol, Some(proto), "{rel}");
            assert_eq!(c.qport, Some(*qport), "{rel}");
            assert_eq!(c.challenge, Some(*challenge), "{rel}");
            assert_eq!(
                c.name.as_deref(),
                Some(format!("LabPlayer{}", i + 1).as_str()),
                "{rel}"
            );
            assert_eq!(
                c.server,
                if rel.starts_with("q3-impaired/capture") {
                    "127.0.0.1:27961"
                } else {
                    "127.0.0.1:27960"
                }
            );
        }
    }
}

#[test]
fn nat_rebinding_keeps_one_connection_with_both_ports() {
    let r = flows("q3-impaired/server-side.pcapng");
    let conns: Vec<_> = r.flows.iter().filter(|f| f.kind == "connection").collect();
    assert_eq!(conns.len(), 1);
    assert_eq!(conns[0].client_ports, vec![51685, 56122]);
    // The relay's own status probe is a separate query flow.
    assert!(r
        .flows
        .iter()
        .filter(|f| f.kind != "connection")
        .all(|f| f.kind == "query"));
}

#[test]
fn ids_follow_first_packet_order_and_json_holds_the_flow() {
    let r = flows("q3-two-clients/capture.pcapng");
    let ids: Vec<u32> = r.flows.iter().map(|f| f.id).collect();
    assert_eq!(ids, vec![1, 2]);
    assert!(r.flows[0].first_time <= r.flows[1].first_time);
    let v = serde_json::to_value(&r.flows).unwrap();
    // Flow 1 as `quakecap flows --json` prints it (times compared apart: floats).
    let want = serde_json::json!({
        "id": 1, "game": "q3", "kind": "connection", "protocol": 68,
        "server": "127.0.0.1:27960", "client_ip": "127.0.0.1", "client_ports": [27961],
        "qport": 39992, "challenge": 2083060479u32, "name": "LabPlayer1",
        "packets": {"c2s": 1384, "s2c": 747}, "bytes": {"c2s": 34393, "s2c": 41872},
        "fragments": {"c2s": 0, "s2c": 1}, "dropped": {"c2s": 0, "s2c": 0},
        "duplicates": {"c2s": 0, "s2c": 0}, "out_of_order": {"c2s": 0, "s2c": 0},
        "errors": 0, "error_details": [], "map": "oa_dm1",
    });
    let mut got = v[0].clone();
    let times = ["first_time", "last_time"].map(|k| got.as_object_mut().unwrap().remove(k));
    assert_eq!(got, want);
    let times = times.map(|t| t.and_then(|t| t.as_f64()).unwrap_or_default());
    assert_eq!(times, [1795361277.8638859, 1795361314.9922698]);
}

#[test]
fn impaired_capture_counts_the_engines_drops() {
    // Client side of the relay (5% loss, reordering, 1% duplicates): the client's netchan
    // saw gaps and duplicates; the capture at the server side sees the client's packets
    // reordered by the relay.
    let c = flows("q3-impaired/capture.pcapng");
    let f = &c.flows[0];
    let counts = |d: &quakecap::flow::PerDir| (d.c2s, d.s2c);
    assert_eq!(counts(&f.dropped), (0, 41), "{f:?}");
    assert_eq!(counts(&f.duplicates), (0, 5), "{f:?}");
    assert_eq!(counts(&f.out_of_order), (0, 0), "{f:?}");
    let s = flows("q3-impaired/server-side.pcapng");
    let f = &s.flows[0];
    assert_eq!(counts(&f.dropped), (316, 0), "{f:?}");
    assert_eq!(counts(&f.duplicates), (25, 0), "{f:?}");
    assert_eq!(counts(&f.out_of_order), (207, 0), "{f:?}");
}

/// The capture cut to start at `first` (1-based frame), written with the project's writer.
fn cut_from(rel: &str, first: u64) -> std::path::PathBuf {
    use quakecap::capture::{CaptureReader, PcapNgWriter};
    let mut r = CaptureReader::open(&cap(rel)).unwrap();
    let mut w = PcapNgWriter::new(Vec::new()).unwrap();
    while let Some(f) = r.next_frame().unwrap() {
        if f.index >= first {
            w.write_packet(f.link, f.ts_ns, f.data, f.orig_len).unwrap();
        }
    }
    let path = std::env::temp_dir().join(format!(
        "quakecap-mid-{}-{first}.pcapng",
        std::process::id()
    ));
    std::fs::write(&path, w.finish().unwrap()).unwrap();
    path
}

#[test]
fn connections_without_a_handshake_are_found_by_netchan_shape() {
    let path = cut_from("q3-two-clients/capture.pcapng", 1500);
    let r = pipeline::run_capture(&path, &Options::default(), &mut Nothing, &mut |_| {}).unwrap();
    std::fs::remove_file(&path).ok();
    let mut qports: Vec<_> = r.flows.iter().map(|f| (f.kind, f.game, f.qport)).collect();
    qports.sort();
    assert_eq!(
        qports,
        vec![
            ("connection", "q3", Some(39992)),
            ("connection", "q3", Some(50400))
        ]
    );
    let sum: u64 = r.flows.iter().map(|f| f.packets.total()).sum();
    assert_eq!(sum, 4410 - 1499);
    // One error per flow says why its messages are not decoded.
    for f in &r.flows {
        assert_eq!(f.errors, 1, "{:?}", f.error_details);
        let e = &f.error_details[0];
        assert_eq!(e.kind, quakecap::error::ErrorKind::MidSession, "{e}");
        assert_eq!(e.pos.flow, Some(f.id), "{e}");
        assert!(e.pos.frame.is_some(), "{e}");
        assert_eq!(f.challenge, None);
    }
}

/// Frames `range` of a capture written to a temporary pcapng.
fn slice(rel: &str, range: std::ops::RangeInclusive<u64>, tag: &str) -> std::path::PathBuf {
    use quakecap::capture::{CaptureReader, PcapNgWriter};
    let mut r = CaptureReader::open(&cap(rel)).unwrap();
    let mut w = PcapNgWriter::new(Vec::new()).unwrap();
    while let Some(f) = r.next_frame().unwrap() {
        if range.contains(&f.index) {
            w.write_packet(f.link, f.ts_ns, f.data, f.orig_len).unwrap();
        }
    }
    let path = std::env::temp_dir().join(format!("quakecap-{tag}-{}.pcapng", std::process::id()));
    std::fs::write(&path, w.finish().unwrap()).unwrap();
    path
}

#[test]
fn merge_reads_several_files_as_one_capture_in_time_order() {
    let whole = flows("q3-basic/capture.pcapng");
    let a = slice("q3-basic/capture.pcapng", 1..=900, "merge-a");
    let b = slice("q3-basic/capture.pcapng", 901..=1893, "merge-b");
    // Given in the wrong order on purpose: the merge follows the timestamps.
    let merged =
        pipeline::run_merged(&[b.clone(), a.clone()], &Options::default(), &mut Nothing).unwrap();
    let separate =
        pipeline::run_capture(&b, &Options::default(), &mut Nothing, &mut |_| {}).unwrap();
    std::fs::remove_file(&a).ok();
    std::fs::remove_file(&b).ok();
    assert_eq!(merged.flows, whole.flows);
    // Alone, the second half has no handshake.
    assert!(separate.flows[0].challenge.is_none());
}
