//! A long capture holds more connections than the flow table keeps at a time: its limits
//! bound the flows live at once (each may hold a decoder state), not the capture's length.
//! Before, the first 4,096 handshakes' getchallenge and the first 10,000 connects used the
//! room up for good: on a 16-minute capture of 14,994 short sessions (never more than 47 at
//! once) the last 898 lost their handshake (decoded mid-session, 300 of them without a
//! map).
use std::path::Path;
use std::process::Command;

use quakecap::flood::repeat_session;
use quakecap::flow::table::{MAX_CONNECTIONS, MAX_QUERY_FLOWS};
use serde_json::Value;

/// Datagrams replayed per session: the handshake, the gamestate and a few netchan packets.
const PACKETS: usize = 12;

fn flows_json(path: &Path) -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_quakecap"))
        .args(["flows", "--json"])
        .arg(path)
        .output()
        .expect("run quakecap");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// A row's fields that a replay must have exactly as the session replayed once.
fn essentials(r: &Value) -> Value {
    let mut o = serde_json::Map::new();
    for k in [
        "kind",
        "protocol",
        "qport",
        "challenge",
        "name",
        "map",
        "packets",
        "bytes",
        "errors",
        "error_details",
    ] {
        o.insert(k.into(), r[k].clone());
    }
    Value::Object(o)
}

#[test]
fn every_connection_of_a_long_capture_is_followed_from_its_handshake() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let base =
        std::fs::read(root.join("captures/q3-basic/capture.pcapng")).expect("stored capture");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("many_connections");
    std::fs::create_dir_all(&dir).unwrap();
    // Once, and more times than both limits together, 0.5 s apart (the 12 packets span a
    // third of a second): two hours of capture, 400 sessions within any 200 s (the idle
    // release time).
    let count = MAX_QUERY_FLOWS + MAX_CONNECTIONS + 500;
    let once = dir.join("once.pcapng");
    std::fs::write(&once, repeat_session(&base, PACKETS, 1, 0).unwrap()).unwrap();
    let many = dir.join("many.pcapng");
    std::fs::write(
        &many,
        repeat_session(&base, PACKETS, count, 500_000_000).unwrap(),
    )
    .unwrap();
    let want = flows_json(&once);
    assert_eq!(want.len(), 1, "{want:?}");
    let want = essentials(&want[0]);
    assert_eq!(want["kind"], "connection");
    assert!(
        want["map"].is_string(),
        "the gamestate is among the packets: {want}"
    );
    let rows = flows_json(&many);
    assert_eq!(rows.len(), count, "one row per session, no aggregate");
    for (k, r) in rows.iter().enumerate() {
        assert_eq!(essentials(r), want, "session {k} of {count}");
    }
}
