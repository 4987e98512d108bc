//! Never panic on any input: random and damaged datagrams through the tracker (with decoding
//! and demo writing on), random and damaged demo files through the demo reader.
mod qw_common;
use proptest::prelude::*;
use quakecap::flow::FlowTable;
use quakecap::net::Datagram;
use quakecap::qw::{self, qwd, Event};
use std::net::SocketAddr;

fn addrs() -> (SocketAddr, SocketAddr) {
    (
        "127.0.0.1:27001".parse().unwrap(),
        "127.0.0.1:27500".parse().unwrap(),
    )
}

/// A tracker that has seen a real handshake (qw-basic frames 3..6), so netchan packets reach
/// the decoders.
fn connected(events: &mut Vec<Event>, next: &mut FlowTable) -> qw::Tracker {
    let mut t = qw::Tracker::new(qw::Options {
        decode: true,
        keep_raw: true,
    });
    let (c, s) = addrs();
    let mut chal = b"\xff\xff\xff\xffc123\0".to_vec();
    chal.extend_from_slice(b"FTEX\x00\x70\x40\x21MVD1\x01\x00\x00\x00");
    let pkts: Vec<(bool, Vec<u8>)> = vec![
        (true, b"\xff\xff\xff\xffgetchallenge\n".to_vec()),
        (false, chal),
        (
            true,
            b"\xff\xff\xff\xffconnect 28 36700 123 \"\\name\\x\"\n".to_vec(),
        ),
        (false, b"\xff\xff\xff\xffj".to_vec()),
    ];
    for (i, (c2s, p)) in pkts.iter().enumerate() {
        let (src, dst) = if *c2s { (c, s) } else { (s, c) };
        let d = Datagram {
            frame: i as u64 + 1,
            ts_ns: 0,
            src,
            dst,
            payload: p,
        };
        assert!(t.offer(&d, next, events));
    }
    t
}

fn feed(
    t: &mut qw::Tracker,
    payload: &[u8],
    c2s: bool,
    frame: u64,
    next: &mut FlowTable,
    ev: &mut Vec<Event>,
) {
    let (c, s) = addrs();
    let (src, dst) = if c2s { (c, s) } else { (s, c) };
    let d = Datagram {
        frame,
        ts_ns: frame as i64 * 1_000_000,
        src,
        dst,
        payload,
    };
    t.offer(&d, next, ev);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn random_datagrams_never_panic(pkts in proptest::collection::vec((any::<bool>(), proptest::collection::vec(any::<u8>(), 0..200)), 1..40)) {
        let (mut ev, mut next) = (Vec::new(), FlowTable::default());
        let mut t = connected(&mut ev, &mut next);
        for (i, (c2s, mut p)) in pkts.into_iter().enumerate() {
            // Give some packets a plausible netchan header so they get past the header check.
            if i % 2 == 0 && p.len() >= 10 {
                p[0..4].copy_from_slice(&(i as u32 + 1).to_le_bytes());
                p[8..10].copy_from_slice(&36700u16.to_le_bytes());
            }
            feed(&mut t, &p, c2s, i as u64 + 10, &mut next, &mut ev);
        }
        let mut w = qwd::Writers::new();
        for e in &ev { w.push(e); }
        let _ = w.finish();
        let _ = t.finish(&mut ev);
        for e in &ev {
            if let Event::Message(m) = e {
                let mut s = String::new();
                quakecap::sink::text::qw::write_message(m, &mut s).unwrap();
                serde_json::to_string(m).unwrap();
            }
        }
    }

    #[test]
    fn random_demo_files_never_panic(data in proptest::collection::vec(any::<u8>(), 0..600), mvd in any::<bool>()) {
        let mut ev = Vec::new();
        let _ = qw::decode_demo_file(if mvd { "x.mvd" } else { "x.qwd" }, &data, &mut ev);
    }

    #[test]
    fn damaged_real_demo_never_panics(cut in 0usize..60_000, flips in proptest::collection::vec((0usize..60_000, any::<u8>()), 0..20), mvd in any::<bool>()) {
        let name = if mvd { "server-demo0.mvd" } else { "client1-demo0.qwd" };
        let mut data = std::fs::read(qw_common::path("qw-basic", name)).unwrap();
        for (at, x) in flips {
            if let Some(b) = data.get_mut(at) { *b ^= x; }
        }
        data.truncate(cut.min(data.len()));
        let mut ev = Vec::new();
        let _ = qw::decode_demo_file(name, &data, &mut ev);
    }
}

/// Every datagram of a real capture with one byte damaged (at a position that walks through
/// the packet) still goes through without a panic, and the run goes on.
#[test]
fn damaged_real_capture_never_panics() {
    use quakecap::capture::CaptureReader;
    use quakecap::net::NetDecoder;
    let mut reader = CaptureReader::open(&qw_common::path("qw-basic", "capture.pcapng")).unwrap();
    let mut net = NetDecoder::new();
    let mut t = qw::Tracker::new(qw::Options {
        decode: true,
        keep_raw: true,
    });
    let (mut ev, mut next, mut n) = (Vec::new(), FlowTable::default(), 0usize);
    while let Some(frame) = reader.next_frame().unwrap() {
        if let Ok(Some(d)) = net.decode(&frame) {
            let mut p = d.payload.to_vec();
            n += 1;
            // Leave the handshake intact so the connection exists; damage the rest.
            if n > 8 && !p.is_empty() {
                let at = (n * 7) % p.len();
                p[at] ^= 0x5a;
            }
            let d2 = Datagram { payload: &p, ..d };
            t.offer(&d2, &mut next, &mut ev);
        }
    }
    let flows = t.finish(&mut ev);
    assert!(
        flows.iter().any(|f| f.errors > 0),
        "damage is reported as errors on the flow"
    );
    // Each error names its flow, a frame of the file (past the intact handshake) and the
    // byte of the message where decoding stopped.
    for f in &flows {
        for e in &f.error_details {
            assert_eq!(e.pos.flow, Some(f.id), "{e}");
            assert!(e.pos.frame.is_some_and(|fr| fr > 8), "{e}");
            assert!(
                e.pos.byte.is_some() || e.kind == quakecap::error::ErrorKind::Checksum,
                "{e}"
            );
        }
    }
}

/// A QuakeWorld capture whose serverdata names player slot 101 (the server has 32): the
/// client's own `say` commands and its disconnect looked that slot up and `events`,
/// `report` and `export` panicked (found by the `export` fuzz target). Now each exits 0 and
/// warns with the flow and frame.
#[test]
fn a_serverdata_slot_past_the_players_is_warned_not_a_panic() {
    let file = qw_common::path("qw-basic", "capture.pcapng");
    let mut bytes = std::fs::read(&file).unwrap();
    let run = qw_common::run_capture(
        "qw-basic",
        qw::Options {
            decode: true,
            keep_raw: false,
        },
    );
    let sd = qw_common::messages(&run.events)
        .flat_map(|m| &m.ops)
        .find_map(|op| match &op.kind {
            qw::message::OpKind::Server(qw::svc::ServerOp::Serverdata(sd)) => Some(sd.clone()),
            _ => None,
        })
        .expect("qw-basic has a serverdata");
    // The serverdata's bytes from its game folder to its level name hold the player slot.
    let mut pattern = sd.gamedir.as_bytes().to_vec();
    pattern.push(0);
    pattern.push(sd.playernum.expect("a netchan serverdata names the slot"));
    pattern.extend_from_slice(sd.levelname.as_bytes());
    let at = bytes
        .windows(pattern.len())
        .position(|w| w == pattern)
        .expect("the serverdata's bytes are in the file");
    bytes[at + sd.gamedir.len() + 1] = 101;
    let dir = std::env::temp_dir().join(format!("quakecap-qw-slot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let damaged = dir.join("capture.pcapng");
    std::fs::write(&damaged, &bytes).unwrap();
    for args in [
        vec!["events"],
        vec!["report", "-o", dir.join("r.html").to_str().unwrap()],
        vec!["export", "--out", dir.join("x").to_str().unwrap()],
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_quakecap"))
            .args(&args)
            .arg(&damaged)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(
            err.contains("frame ") && err.contains("serverdata for player slot 101 (max 32)"),
            "{args:?} does not warn of the slot: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// An .mvd with a bad event in every block (`setinfo` for player slot 200; the server has
/// 32): `events` says the first warnings and how many more, instead of one line (and one
/// kept error) per bad op — 2 MB of them gave 180,000 lines and 110 MB.
#[test]
fn a_bad_event_in_every_block_gives_bounded_warnings() {
    const BLOCKS: usize = 500;
    const PER_BLOCK: usize = 10;
    let mut mvd = Vec::new();
    for _ in 0..BLOCKS {
        let mut msg = Vec::new();
        for _ in 0..PER_BLOCK {
            msg.extend_from_slice(b"\x33\xc8name\0x\0"); // svc_setinfo, slot 200
        }
        mvd.extend_from_slice(&[1, 6]); // 1 ms later, dem_all
        mvd.extend_from_slice(&(msg.len() as u32).to_le_bytes());
        mvd.extend_from_slice(&msg);
    }
    let dir = std::env::temp_dir().join(format!("quakecap-qw-warn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.mvd");
    std::fs::write(&file, &mvd).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_quakecap"))
        .arg("events")
        .arg(&file)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let err = String::from_utf8_lossy(&out.stderr);
    let said = err
        .lines()
        .filter(|l| l.contains("setinfo for player slot 200"))
        .count();
    assert_eq!(said, 20, "{err}");
    let more = format!("... {} more game-event warnings", BLOCKS * PER_BLOCK - 20);
    assert!(err.contains(&more), "no `{more}` in: {err}");
    assert!(err.lines().count() < 30, "{err}");
}
