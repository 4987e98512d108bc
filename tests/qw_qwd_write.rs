//! Issue 7: `quakecap demo` on a QuakeWorld connection writes a .qwd (spec §8.1). The written
//! demos decode without errors, hold exactly the accepted server packets of the connection,
//! and — over the span both cover — the same server messages as the client's own recording.
//! They are left in `$CARGO_TARGET_TMPDIR/qwd-out/` for `shared/lab/qw/playback.sh`.
//!
//! `captures/<dir>/written-flowN.qwd.shownet.txt` is ezQuake 3.6.1's own `cl_shownet 2` trace
//! of the demo this writer made for connection N (playback.sh DEMO TRACE: every written demo
//! played to its end). The writer is deterministic, so each run is checked against it.
mod qw_common;
use quakecap::qw::{self, qwd, Event};
use qw_common::{path, run_capture};

fn s2c_messages(data: &[u8], name: &str) -> Vec<(u32, Vec<(usize, String)>)> {
    let mut ev = Vec::new();
    let sums = qw::decode_demo_file(name, data, &mut ev);
    assert_eq!(sums[0].errors, 0, "{name}: {:?}", sums[0].error_details);
    qw_common::messages(&ev)
        .filter(|m| {
            m.block == Some("read")
                && !m.connectionless
                && m.netchan == Some(qw::NetchanStatus::Accepted)
        })
        .map(|m| {
            (
                m.seq.unwrap() as u32,
                m.ops.iter().map(|o| (o.at, o.name().to_string())).collect(),
            )
        })
        .collect()
}

fn write_all(dir: &str) -> Vec<(u32, Vec<u8>)> {
    let run = run_capture(
        dir,
        qw::Options {
            decode: false,
            keep_raw: true,
        },
    );
    let mut w = qwd::Writers::new();
    for e in &run.events {
        w.push(e);
    }
    let out = w.finish();
    // Streaming into a file writer gives the same bytes, and the map is known for naming.
    for (flow, data) in &out {
        let mut one = qwd::Writer::new(std::io::Cursor::new(Vec::new()));
        for e in &run.events {
            if let Event::Raw(r) = e {
                if r.flow == *flow {
                    one.push(r).unwrap();
                }
            }
        }
        assert!(
            one.map().is_some_and(|m| m == "lqdm2" || m == "lqdm5"),
            "{:?}",
            one.map()
        );
        assert_eq!(&one.finish().unwrap().into_inner(), data);
    }
    let conns = run.flows.iter().filter(|f| f.kind == "connection").count();
    assert_eq!(out.len(), conns, "{dir}: one .qwd per connection");
    let odir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("qwd-out");
    std::fs::create_dir_all(&odir).unwrap();
    for (flow, data) in &out {
        std::fs::write(odir.join(format!("{dir}-flow{flow}.qwd")), data).unwrap();
        let trace = path(dir, &format!("written-flow{flow}.qwd.shownet.txt"));
        qw_common::check_against_trace("written.qwd", data, &trace);
        // Every accepted server packet with a message is in the demo, in order.
        let accepted = run
            .events
            .iter()
            .filter(|e| matches!(e, Event::Raw(r) if r.flow == *flow && r.dir == quakecap::flow::Dir::S2c && !r.spans.is_empty()))
            .count();
        let msgs = s2c_messages(data, "x.qwd");
        // Recording ends at the client's `drop` or the server's svc_disconnect: the few packets
        // the server sends after that are not in the demo.
        assert!(
            msgs.len() <= accepted && msgs.len() + 8 >= accepted,
            "{dir} flow {flow}: {} of {accepted}",
            msgs.len()
        );
        assert!(
            msgs.windows(2).all(|w| w[0].0 < w[1].0),
            "{dir} flow {flow}: sequences increase"
        );
        assert!(
            msgs.iter()
                .any(|m| m.1.iter().any(|o| o.1 == "svc_serverdata")),
            "{dir} flow {flow} has the signon"
        );
    }
    out
}

/// The server messages of the written demo equal the client's own .qwd over the live span
/// (ezQuake's own demo differs only where it rewrote: the first full packetentities after
/// `record`, svc_download, its `stop` signature).
fn compare_with_client_demo(dir: &str, demo: &str, out: &[(u32, Vec<u8>)], flow: u32) {
    let ours = &out.iter().find(|(f, _)| *f == flow).unwrap().1;
    let theirs = std::fs::read(path(dir, demo)).unwrap();
    let a: std::collections::BTreeMap<u32, Vec<(usize, String)>> =
        s2c_messages(ours, "ours.qwd").into_iter().collect();
    let b = s2c_messages(&theirs, demo);
    let live: Vec<_> = b.iter().skip_while(|(s, _)| *s < 100).collect();
    let mut same = 0;
    for (seq, ops) in &live[1..live.len() - 1] {
        let mine = a
            .get(seq)
            .unwrap_or_else(|| panic!("{demo}: {seq} missing from ours"));
        let strip = |v: &Vec<(usize, String)>| {
            v.iter()
                .map(|o| o.1.replace("svc_packetentities", "svc_deltapacketentities"))
                .collect::<Vec<_>>()
        };
        assert_eq!(strip(mine), strip(ops), "{demo}: {seq}");
        same += 1;
    }
    let want = match (dir, demo) {
        ("qw-basic", _) => 1687,
        ("qw-noext", _) => 1985,
        ("qw-impaired", "client1-demo0.qwd") => 1395,
        ("qw-impaired", _) => 1510,
        ("qw-mapchange-reconnect", "client1-demo0.qwd") => 791,
        ("qw-mapchange-reconnect", _) => 1317,
        _ => panic!("no count for {dir}/{demo}"),
    };
    assert_eq!(same, want, "{dir}/{demo}: messages compared");
}

#[test]
fn qw_basic_writes_playable_qwd() {
    let out = write_all("qw-basic");
    compare_with_client_demo("qw-basic", "client1-demo0.qwd", &out, 2);
}

#[test]
fn qw_noext_writes_playable_qwd() {
    let out = write_all("qw-noext");
    compare_with_client_demo("qw-noext", "client1-demo0.qwd", &out, 2);
}

#[test]
fn qw_mapchange_writes_playable_qwds() {
    let out = write_all("qw-mapchange-reconnect");
    compare_with_client_demo("qw-mapchange-reconnect", "client1-demo0.qwd", &out, 2);
    compare_with_client_demo("qw-mapchange-reconnect", "client2-demo0.qwd", &out, 3);
}

#[test]
fn qw_impaired_writes_playable_qwds() {
    let out = write_all("qw-impaired");
    compare_with_client_demo("qw-impaired", "client1-demo0.qwd", &out, 2);
    compare_with_client_demo("qw-impaired", "client2-demo0.qwd", &out, 3);
}

/// Reliable-flagged dem_reads of a demo, by sequence.
fn reliable_reads(data: &[u8]) -> std::collections::BTreeSet<u32> {
    let mut ev = Vec::new();
    let sums = qw::decode_demo_file("x.qwd", data, &mut ev);
    assert_eq!(sums[0].errors, 0, "{:?}", sums[0].error_details);
    qw_common::messages(&ev)
        .filter(|m| m.block == Some("read") && !m.connectionless && m.reliable == Some(true))
        .map(|m| m.seq.unwrap() as u32)
        .collect()
}

/// From the server's side of the impaired relay, the writer leaves out the reliable packets
/// the clients' acks prove lost: the demo holds exactly the reliable packets the client
/// accepted (as the demo written from the clients' side of the relay shows), so no reliable
/// block is executed twice on playback.
#[test]
fn qw_impaired_server_side_demo_has_the_clients_reliable_packets() {
    let write = |file: &str| {
        let run = qw_common::run_capture_file(
            "qw-impaired",
            file,
            qw::Options {
                decode: false,
                keep_raw: true,
            },
        );
        let lost = run
            .events
            .iter()
            .filter(|e| matches!(e, Event::Raw(r) if r.lost_s2c.is_some()))
            .count();
        let mut w = qwd::Writers::new();
        run.events.iter().for_each(|e| w.push(e));
        (w.finish(), lost)
    };
    let (client_side, _) = write("capture.pcapng");
    let (server_side, lost) = write("server-side.pcapng");
    assert_eq!(
        lost, 34,
        "reliable packets proven lost after the server tap"
    );
    assert_eq!(client_side.len(), 2);
    for ((fc, c), (fs, s)) in client_side.iter().zip(&server_side) {
        assert_eq!(fc, fs);
        let (rc, rs) = (reliable_reads(c), reliable_reads(s));
        assert_eq!(rc.len(), if *fc == 2 { 118 } else { 115 }, "flow {fc}");
        assert_eq!(rc, rs, "flow {fc}: reliable packets in the demo");
        let odir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("qwd-out");
        std::fs::create_dir_all(&odir).unwrap();
        std::fs::write(
            odir.join(format!("qw-impaired-server-side-flow{fs}.qwd")),
            s,
        )
        .unwrap();
    }
}
