//! A long capture holds more connections than the flow table keeps at a time: its limits
//! bound the flows live at once (each may hold a decoder state), not the capture's length.
//! Before, the first 4,096 queries (a Quake 3 getchallenge is one) and the first 10,000
//! connections used the room up for good: on a 16-minute capture of 14,994 short Quake 3
//! sessions (never more than 47 at once) the last 898 lost their handshake (decoded
//! mid-session, 300 of them without a map), and QuakeWorld never let a decoder state go
//! (906 MB for the 14,596 sessions here, 71 MB now).
use std::path::Path;
use std::process::Command;

use quakecap::flood::repeat_session;
use quakecap::flow::table::{MAX_CONNECTIONS, MAX_QUERY_FLOWS};
use serde_json::Value;

/// Datagrams replayed per Quake 3 session: the handshake, the gamestate and a few netchan
/// packets (a third of a second).
const PACKETS: usize = 12;
/// The same for QuakeWorld: through the signon's model list, which names the map (0.8 s).
const QW_PACKETS: usize = 30;

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

/// `base`'s first `packets` session packets repeated more times than the limits allow live
/// at once, 1 s apart (the replayed packets span less): four hours of capture, 200
/// sessions within any 200 s (the idle release time). Every row must be the single
/// session's.
fn check(base: &str, packets: usize) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let capture = std::fs::read(root.join(format!("captures/{base}/capture.pcapng")))
        .expect("stored capture");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("many_connections");
    std::fs::create_dir_all(&dir).unwrap();
    let count = MAX_QUERY_FLOWS + MAX_CONNECTIONS + 500;
    let once = dir.join(format!("{base}-once.pcapng"));
    std::fs::write(&once, repeat_session(&capture, packets, 1, 0).unwrap()).unwrap();
    let many = dir.join(format!("{base}-many.pcapng"));
    let bytes = repeat_session(&capture, packets, count, 1_000_000_000).unwrap();
    std::fs::write(&many, bytes).unwrap();
    let want = flows_json(&once);
    assert_eq!(want.len(), 1, "{want:?}");
    let want = essentials(&want[0]);
    assert_eq!(want["kind"], "connection", "{want}");
    assert!(
        want["map"].is_string(),
        "the gamestate is among the packets: {want}"
    );
    let rows = flows_json(&many);
    assert_eq!(
        rows.len(),
        count,
        "{base}: one row per session, no aggregate"
    );
    for (k, r) in rows.iter().enumerate() {
        assert_eq!(essentials(r), want, "{base}: session {k} of {count}");
    }
}

#[test]
fn every_quake3_connection_of_a_long_capture_is_followed_from_its_handshake() {
    check("q3-basic", PACKETS);
}

#[test]
fn every_quakeworld_connection_of_a_long_capture_is_followed_from_its_handshake() {
    check("qw-basic", QW_PACKETS);
}
