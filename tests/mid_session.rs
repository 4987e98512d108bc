//! Issue 17: captures that start mid-session. Every stored capture is cut at several points
//! after its handshakes (written with the crate's own writer); the cut capture's decode is
//! compared with the full capture's, message by message (same connection, direction and
//! frame): whatever the cut decodes must be what the full capture decodes, except values
//! the cut marks unknown (`base_missing` packet entities).
mod q3common;
mod skip;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use q3common::{cut, frame_count, stored_capture, PROTO68_CAPTURES};
use serde_json::Value;

const CUTS: [u32; 4] = [10, 30, 50, 80];

/// Protocol-68 cuts besides [`CUTS`] where the lock-on once came late (found by
/// `scripts/lock_sweep.sh`, cuts every 5 %): at 85 % of `q3-mapchange` the client
/// acknowledges OpenArena's whole `cp "` (8.9 s; now found by the whole-command round);
/// at 15 % of `q3-download` the client's first group holds a message with serverTime 0,
/// sent before its first snapshot (4.4 s). The flag says whether the 2-second goal is
/// counted: that `q3-download` cut starts with 3.5 s of the server alone (the client
/// loads the map and sends nothing); it locks on 0.37 s after the client's first packet.
const EXTRA_CUTS68: [(&str, u32, bool); 2] =
    [("q3-mapchange", 85, true), ("q3-download", 15, false)];
/// Lock-on within this many packets of the connection (both directions) in every cut,
/// counted from the server's first packet in the cut: a connection is known only by the
/// server answering its client, and a QuakeWorld server answers nothing while the client's
/// upstream is held (`qw-lagswitch` at 30 %: 180 client packets, 4 s, before any answer).
const LOCK_WITHIN_PACKETS: u64 = 16;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("quakecap-mid-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

fn run(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_quakecap"))
        .args(args)
        .output()
        .expect("run quakecap");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("utf-8")
}

/// Flow id → (server, client IP, qport): what names a connection in both decodes.
fn flows(cap: &Path) -> (HashMap<u64, String>, Vec<Value>) {
    let v: Value = serde_json::from_str(&run(&["flows", "--json", &cap.to_string_lossy()]))
        .expect("flows json");
    let rows = v.as_array().cloned().unwrap_or_default();
    let mut m = HashMap::new();
    for f in &rows {
        let key = format!(
            "{}|{}|{}|{}",
            f["game"], f["server"], f["client_ip"], f["qport"]
        );
        m.insert(f["id"].as_u64().unwrap_or(0), key);
    }
    (m, rows)
}

fn messages(cap: &Path) -> Vec<Value> {
    run(&["decode", "--json", &cap.to_string_lossy()])
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect()
}

/// [`messages`] of a stored capture, decoded once per test binary: each capture is cut four
/// times and every cut is compared with the same full decode.
fn full_messages(cap: &Path) -> std::sync::Arc<Vec<Value>> {
    use std::sync::{Arc, Mutex, OnceLock};
    static FULL: OnceLock<Mutex<HashMap<PathBuf, Arc<Vec<Value>>>>> = OnceLock::new();
    let cache = FULL.get_or_init(Default::default);
    if let Some(v) = cache.lock().expect("cache").get(cap) {
        return Arc::clone(v);
    }
    let v = Arc::new(messages(cap));
    cache
        .lock()
        .expect("cache")
        .insert(cap.to_path_buf(), Arc::clone(&v));
    v
}

/// The netchan messages of flow `full_id` of the full capture `src` after its first `skip`
/// frames, by (direction, frame): what each message of a cut is compared with.
fn full_by_frame(src: &Path, full_id: Option<u64>, skip: u64) -> HashMap<(String, u64), Value> {
    full_messages(src)
        .iter()
        .filter(|m| m["flow"].as_u64() == full_id && m["frame"].as_u64() > Some(skip))
        .filter(|m| m["kind"] != "oob")
        .map(|m| {
            let k = (m["dir"].to_string(), m["frame"].as_u64().unwrap_or(0));
            (k, m.clone())
        })
        .collect()
}

fn is_mid(f: &Value) -> bool {
    f["error_details"]
        .as_array()
        .is_some_and(|es| es.iter().any(|e| e["kind"] == "mid_session"))
}

fn undecoded(m: &Value) -> bool {
    m["error"]["message"]
        .as_str()
        .is_some_and(|s| s.ends_with("not yet determined"))
}

/// The ops of a cut message against the full one's: equal, except ops the cut marks unknown
/// (same op and position, values not given).
fn ops_match(cut: &Value, full: &Value) -> Result<(), String> {
    let (c, f) = (
        cut["ops"].as_array().cloned().unwrap_or_default(),
        full["ops"].as_array().cloned().unwrap_or_default(),
    );
    if c.len() != f.len() {
        return Err(format!("{} ops, full capture {}", c.len(), f.len()));
    }
    let mut unknown = false;
    for (a, b) in c.iter().zip(&f) {
        if a["base_missing"] == Value::Bool(true) {
            unknown = true;
            if a["op"] != b["op"] || a["at"] != b["at"] || a["from"] != b["from"] {
                return Err(format!("unknown op {a} vs {b}"));
            }
            if a["entities"].as_array().is_some_and(|e| !e.is_empty()) {
                return Err(format!("op marked unknown gives values: {a}"));
            }
            continue;
        }
        if a != b {
            return Err(format!("op {a}\n  full {b}"));
        }
    }
    if cut["error"] != full["error"] {
        // A full capture's error about a delta base is the cut's unknown op.
        let missing = full["error"]["kind"].as_str() == Some("missing-delta")
            || full["error"]["message"]
                .as_str()
                .is_some_and(|s| s.starts_with("delta packetentities"));
        if !(cut["error"].is_null() && unknown && missing) {
            return Err(format!("error {} vs {}", cut["error"], full["error"]));
        }
    }
    Ok(())
}

struct Figures {
    connections: usize,
    /// Packets of each connection seen when it was recognised (all are decoded by replay).
    recognised: Vec<u64>,
    lock_packets: Vec<u64>,
    lock_seconds: Vec<f64>,
    /// Packets of each connection before the server's first packet in the cut.
    silent: Vec<u64>,
    decoded: usize,
    undecoded: usize,
}

/// Cut `name` at `pct` % of its frames and compare. Returns the lock-on figures.
fn check_cut(name: &str, pct: u32) -> Figures {
    let src = root().join("captures").join(name).join("capture.pcapng");
    let n = frame_count(&src);
    check_cut_at(name, pct, n * u64::from(pct) / 100)
}

/// As [`check_cut`], cutting after the first `skip` frames (`pct` only names the cut).
fn check_cut_at(name: &str, pct: u32, skip: u64) -> Figures {
    let src = root().join("captures").join(name).join("capture.pcapng");
    let dir = scratch(&format!("{name}-{pct}"));
    let cap = dir.join("cut.pcap");
    cut(&src, skip, &cap);
    let (full_flows, full_rows) = flows(&src);
    let (cut_flows, cut_rows) = flows(&cap);
    // No connection of the cut has its roles reversed or is invented.
    let conns = |rows: &[Value]| -> Vec<String> {
        rows.iter()
            .filter(|f| f["kind"] == "connection")
            .map(|f| format!("{} {} {}", f["server"], f["client_ip"], f["qport"]))
            .collect()
    };
    let full_conns = conns(&full_rows);
    for c in conns(&cut_rows) {
        assert!(
            full_conns.contains(&c),
            "{name} {pct}%: connection {c} is not one of the full capture's"
        );
    }
    // Each message with the frame of the message before it in its direction (`prev_frame`):
    // a netchan's `dropped` counts from the packet it last took.
    let mut last_frame: HashMap<(String, String), u64> = HashMap::new();
    let full: HashMap<(String, String, u64), Value> = full_messages(&src)
        .iter()
        .filter(|m| !m["connectionless"].as_bool().unwrap_or(false))
        .map(|m| {
            let k = full_flows
                .get(&m["flow"].as_u64().unwrap_or(0))
                .cloned()
                .unwrap_or_default();
            let frame = m["frame"].as_u64().unwrap_or(0);
            let prev = last_frame.insert((k.clone(), m["dir"].to_string()), frame);
            let mut m = m.clone();
            m["prev_frame"] = serde_json::json!(prev);
            ((k, m["dir"].to_string(), frame), m)
        })
        .collect();
    let mids: Vec<u64> = cut_rows
        .iter()
        .filter(|f| f["kind"] == "connection" && is_mid(f))
        .filter_map(|f| f["id"].as_u64())
        .collect();
    let cut_msgs = messages(&cap);
    let mut fig = Figures {
        connections: mids.len(),
        recognised: cut_rows
            .iter()
            .filter(|f| mids.contains(&f["id"].as_u64().unwrap_or(0)))
            .filter_map(|f| {
                let t = f["error_details"].to_string();
                let at = t.find("recognised at packet ")? + "recognised at packet ".len();
                t[at..]
                    .split(|c: char| !c.is_ascii_digit())
                    .next()?
                    .parse()
                    .ok()
            })
            .collect(),
        lock_packets: Vec::new(),
        lock_seconds: Vec::new(),
        silent: Vec::new(),
        decoded: 0,
        undecoded: 0,
    };
    for id in &mids {
        let key = cut_flows.get(id).cloned().unwrap_or_default();
        let mut seen_dir: Vec<String> = Vec::new();
        let mut prev_frame: HashMap<String, u64> = HashMap::new();
        let mut silent = None;
        let mut packets = 0u64;
        let mut first_time = None;
        let mut locked = false;
        let mut full_id = None;
        for m in cut_msgs.iter().filter(|m| m["flow"].as_u64() == Some(*id)) {
            packets += 1;
            if m["dir"] == "s2c" {
                silent.get_or_insert(packets - 1);
            }
            let t = m["time"].as_f64().unwrap_or(0.0);
            let first_time = *first_time.get_or_insert(t);
            let dir = m["dir"].to_string();
            let first_of_dir = !seen_dir.contains(&dir);
            if first_of_dir {
                seen_dir.push(dir.clone());
            }
            let frame = m["frame"].as_u64().unwrap_or(0) + skip;
            let prev = prev_frame.insert(dir.clone(), frame);
            let f = full
                .get(&(key.clone(), dir.clone(), frame))
                .unwrap_or_else(|| {
                    panic!("{name} {pct}%: frame {frame} {dir} not in the full decode ({key})")
                });
            let fid = f["flow"].as_u64();
            assert_eq!(
                *full_id.get_or_insert(fid),
                fid,
                "{name} {pct}% frame {frame}: one connection of the cut spans two of the full capture"
            );
            if undecoded(m) {
                assert!(
                    m["ops"].as_array().is_some_and(|o| o.is_empty()),
                    "{name} {pct}% frame {frame}: undecoded message with ops"
                );
                fig.undecoded += 1;
                continue;
            }
            if m["dir"] == "s2c" && m["netchan"] == "accepted" && !locked {
                locked = true;
                fig.lock_packets.push(packets);
                fig.lock_seconds.push(t - first_time);
            }
            for field in [
                "seq",
                "ack",
                "reliable",
                "ack_reliable",
                "qport",
                "netchan",
                "size",
                "time",
            ] {
                assert_eq!(
                    m[field], f[field],
                    "{name} {pct}% frame {frame} {dir}: {field}"
                );
            }
            // The same count where the cut's netchan took the same packet before this one
            // (a cut held back while its connection was not yet recognised may have let
            // some go: `qw-lagswitch` at 30 %, amid the answers to a released burst).
            if !first_of_dir && prev.map(serde_json::Value::from) == Some(f["prev_frame"].clone()) {
                assert_eq!(
                    m["dropped"], f["dropped"],
                    "{name} {pct}% frame {frame}: dropped"
                );
            }
            if let Err(e) = ops_match(m, f) {
                panic!("{name} {pct}% frame {frame} {dir}: {e}");
            }
            fig.decoded += 1;
        }
        assert!(locked, "{name} {pct}%: connection {key} never locked on");
        fig.silent.push(silent.unwrap_or(0));
        // Every message of the full capture after the cut is in the cut's decode.
        let want = full
            .iter()
            .filter(|((k, _, fr), m)| {
                *k == key && *fr > skip && Some(m["flow"].as_u64()) == full_id
            })
            .count() as u64;
        assert_eq!(packets, want, "{name} {pct}%: messages of {key}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    fig
}

fn check_game(prefix: &str, expect_connections: bool) {
    let mut names: Vec<String> = std::fs::read_dir(root().join("captures"))
        .expect("captures")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix))
        .collect();
    names.sort();
    assert!(!names.is_empty());
    for name in names {
        for pct in CUTS {
            let fig = check_cut(&name, pct);
            eprintln!(
                "{name} cut {pct}%: {} mid-session connections, recognised at packet {:?}, first server message decoded at packet {:?} ({:?} s), {} messages compared, {} undecoded",
                fig.connections,
                fig.recognised,
                fig.lock_packets,
                fig.lock_seconds.iter().map(|s| (s * 1000.0).round() / 1000.0).collect::<Vec<_>>(),
                fig.decoded,
                fig.undecoded
            );
            if expect_connections {
                assert!(
                    fig.connections > 0,
                    "{name} {pct}%: no mid-session connection found"
                );
            }
            assert_eq!(
                fig.recognised.len(),
                fig.connections,
                "{name} {pct}%: reports"
            );
            for (i, p) in fig.lock_packets.iter().enumerate() {
                let p = p.saturating_sub(fig.silent[i]);
                let r = fig.recognised[i].saturating_sub(fig.silent[i]);
                assert!(
                    p.max(r) <= LOCK_WITHIN_PACKETS,
                    "{name} {pct}%: lock-on after {p} packets, recognised after {r}, from the server's first"
                );
            }
        }
    }
}

#[test]
fn quakeworld_cuts_decode_as_the_full_capture() {
    check_game("qw-", true);
}

/// Quake 3: every cut of every stored capture finds its connections mid-session. Protocol 71
/// channels get their challenge from the checksums (equal to the handshake's in the full
/// capture); protocol 68 ones stay counted, not decoded: no message of theirs carries decoded
/// ops. No connection is invented or reversed.
#[test]
fn quake3_cuts_are_recognised_and_71_challenges_solved() {
    let mut names: Vec<String> = std::fs::read_dir(root().join("captures"))
        .expect("captures")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("q3-"))
        .collect();
    names.sort();
    let mut solved = 0;
    for name in names {
        let src = root().join("captures").join(&name).join("capture.pcapng");
        let (_, full_rows) = flows(&src);
        let n = frame_count(&src);
        for pct in CUTS {
            let skip = n * u64::from(pct) / 100;
            let dir = scratch(&format!("{name}-{pct}"));
            let cap = dir.join("cut.pcap");
            cut(&src, skip, &cap);
            let (_, rows) = flows(&cap);
            let mids: Vec<&Value> = rows
                .iter()
                .filter(|f| f["kind"] == "connection" && is_mid(f))
                .collect();
            for f in &mids {
                let same = full_rows.iter().find(|g| {
                    g["kind"] == "connection"
                        && g["server"] == f["server"]
                        && g["client_ip"] == f["client_ip"]
                        && g["qport"] == f["qport"]
                });
                let same = same.unwrap_or_else(|| {
                    panic!(
                        "{name} {pct}%: connection {} {} not in the full capture",
                        f["server"], f["qport"]
                    )
                });
                if f["protocol"] == 71 {
                    assert_eq!(same["protocol"], 71, "{name} {pct}%");
                    assert_eq!(
                        f["challenge"], same["challenge"],
                        "{name} {pct}%: challenge"
                    );
                    assert_eq!(f["errors"], 1, "{name} {pct}%: every checksum verifies");
                    solved += 1;
                } else {
                    // Protocol 68: null until the key search locks on (68 then).
                    assert!(
                        f["protocol"].is_null() || f["protocol"] == 68,
                        "{name} {pct}%: {}",
                        f["protocol"]
                    );
                    assert_ne!(
                        same["protocol"], 71,
                        "{name} {pct}%: a 71 channel taken for 68"
                    );
                    assert!(f["challenge"].is_null(), "{name} {pct}%");
                }
            }
            // Protocol 68 bodies stay undecoded without a lock-on (the others are compared
            // below).
            let ids: Vec<u64> = mids
                .iter()
                .filter(|f| f["protocol"].is_null())
                .filter_map(|f| f["id"].as_u64())
                .collect();
            for m in messages(&cap) {
                if ids.contains(&m["flow"].as_u64().unwrap_or(0)) {
                    assert!(
                        m["ops"].as_array().is_none_or(|o| o.is_empty()),
                        "{name} {pct}%: a mid-session Quake 3 message was decoded: {m}"
                    );
                }
            }
            eprintln!(
                "{name} cut {pct}%: {} mid-session connections, protocols {:?}",
                mids.len(),
                mids.iter()
                    .map(|f| f["protocol"].clone())
                    .collect::<Vec<_>>()
            );
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    assert!(solved >= CUTS.len(), "q3-proto71 cuts solved: {solved}");
}

/// A QuakeWorld connection seen mid-session gets a demo from its first serverdata (a map
/// change) on, starting with a dem_set; the demo reads back without errors. Without a map
/// change, no demo and the reason.
#[test]
fn quakeworld_mid_session_demo_starts_at_the_map_change() {
    let dir = scratch("qwdemo");
    let src = root().join("captures/qw-mapchange-reconnect/capture.pcapng");
    let cap = dir.join("cut.pcap");
    cut(&src, frame_count(&src) / 10, &cap);
    let out = dir.join("out");
    run(&[
        "demo",
        "--out-dir",
        &out.to_string_lossy(),
        &cap.to_string_lossy(),
    ]);
    let (_, rows) = flows(&cap);
    let mids: Vec<u64> = rows
        .iter()
        .filter(|f| is_mid(f))
        .filter_map(|f| f["id"].as_u64())
        .collect();
    assert_eq!(mids.len(), 2);
    for id in mids {
        let file = std::fs::read_dir(&out)
            .expect("out dir")
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().contains(&format!("-flow{id}-")))
            .unwrap_or_else(|| panic!("no demo of mid-session flow {id}"));
        let (_, demo_rows) = flows(&file);
        assert_eq!(demo_rows[0]["errors"], 0, "{}", demo_rows[0]);
        let msgs = messages(&file);
        assert_eq!(msgs[0]["block"], "set", "{}", msgs[0]);
        assert!(
            msgs.iter()
                .any(|m| m.to_string().contains("\"serverdata\"")),
            "no serverdata in the demo of flow {id}"
        );
    }
    // No map change after the cut: nothing written, and why.
    let src = root().join("captures/qw-basic/capture.pcapng");
    cut(&src, frame_count(&src) / 2, &cap);
    demo_refused(
        &cap,
        &dir.join("none"),
        "started after the client loaded the map",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `demo` on `cap` writes nothing into `out`, exits 3 and says `why`.
fn demo_refused(cap: &Path, out: &Path, why: &str) {
    let o = Command::new(env!("CARGO_BIN_EXE_quakecap"))
        .args(["demo", "--out-dir"])
        .arg(out)
        .arg(cap)
        .output()
        .expect("run");
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{e}");
    assert!(e.contains(why), "{e}");
    assert!(
        !out.exists() || std::fs::read_dir(out).unwrap().next().is_none(),
        "nothing written"
    );
}

/// Cuts inside the signon (between the client's handshake and its first frames: serverdata,
/// lists and baselines partly missed): what is decoded still equals the full capture.
#[test]
fn quakeworld_cuts_inside_the_signon() {
    for skip in [7, 9, 12, 20, 40, 80, 150] {
        let fig = check_cut_at("qw-basic", 0, skip);
        eprintln!(
            "qw-basic cut after frame {skip}: {} mid-session, recognised at {:?}, first server message at {:?}, {} compared, {} undecoded",
            fig.connections, fig.recognised, fig.lock_packets, fig.decoded, fig.undecoded
        );
        assert_eq!(fig.connections, 1, "cut after frame {skip}");
    }
}

/// A cut's value against the full capture's: equal, where the cut gives one. `null` in the
/// cut is a value it marks unknown; a snapshot whose delta base precedes the cut
/// (`base_unknown`) cannot know whether the client accepted it. Returns the number of
/// unknown values, or where they differ; `keys` counts unknown usercmd keys.
fn same_where_known(
    cut: &Value,
    full: &Value,
    path: &str,
    keys: &mut usize,
) -> Result<usize, String> {
    match (cut, full) {
        (Value::Null, Value::Null) => Ok(0),
        (Value::Null, _) => {
            *keys += usize::from(path.ends_with(".key"));
            Ok(1)
        }
        (Value::Object(c), Value::Object(f)) => {
            let base_unknown = c.get("base_unknown") == Some(&Value::Bool(true));
            let skip = |k: &str| {
                k == "flow"
                    || (base_unknown && matches!(k, "base_unknown" | "valid" | "invalid_reason"))
            };
            let ck: Vec<&String> = c.keys().filter(|k| !skip(k)).collect();
            let fk: Vec<&String> = f.keys().filter(|k| !skip(k)).collect();
            if ck != fk {
                return Err(format!("{path}: fields {ck:?} vs {fk:?}"));
            }
            let mut n = 0;
            for k in ck {
                n += same_where_known(&c[k], &f[k], &format!("{path}.{k}"), keys)?;
            }
            Ok(n)
        }
        (Value::Array(c), Value::Array(f)) if c.len() == f.len() => {
            let mut n = 0;
            for (i, (a, b)) in c.iter().zip(f).enumerate() {
                n += same_where_known(a, b, &format!("{path}[{i}]"), keys)?;
            }
            Ok(n)
        }
        _ if cut == full => Ok(0),
        _ => Err(format!("{path}: {cut} vs {full}")),
    }
}

/// What a protocol-71 cut gave: messages compared, values unknown, full-capture messages of
/// the connection after the cut that the cut did not decode, and the capture time from the
/// first of those messages to the first decoded one.
struct Cut71 {
    compared: usize,
    unknown: usize,
    /// Of `unknown`, usercmd keys (moves acknowledging a server command the cut missed).
    unknown_keys: usize,
    missed: usize,
    lock_seconds: f64,
}

/// Cut `name` after `skip` frames; every message of its mid-session protocol-71 connection
/// must equal the full capture's message of the same frame wherever the cut gives a value.
fn check_cut71(src: &Path, skip: u64) -> Cut71 {
    let name = src.display();
    let dir = scratch(&format!("71-{skip}"));
    let cap = dir.join("cut.pcap");
    cut(src, skip, &cap);
    let (_, full_rows) = flows(src);
    let (_, rows) = flows(&cap);
    let mid = rows
        .iter()
        .find(|f| f["kind"] == "connection" && is_mid(f))
        .unwrap_or_else(|| panic!("{name} cut after {skip}: no mid-session connection"));
    assert_eq!(mid["protocol"], 71, "{name} cut after {skip}");
    let same = full_rows
        .iter()
        .find(|g| g["kind"] == "connection" && g["qport"] == mid["qport"])
        .expect("the connection in the full capture");
    assert_eq!(mid["challenge"], same["challenge"], "{name} {skip}");
    assert_eq!(mid["errors"], 1, "{name} {skip}: {}", mid["error_details"]);
    let (cut_id, full_id) = (mid["id"].as_u64(), same["id"].as_u64());
    let full = full_by_frame(src, full_id, skip);
    let mut got = Cut71 {
        compared: 0,
        unknown: 0,
        unknown_keys: 0,
        missed: 0,
        lock_seconds: 0.0,
    };
    let mut first_time = None;
    for m in messages(&cap)
        .iter()
        .filter(|m| m["flow"].as_u64() == cut_id)
    {
        if m["kind"] == "oob" {
            continue;
        }
        let frame = m["frame"].as_u64().unwrap_or(0) + skip;
        let f = full.get(&(m["dir"].to_string(), frame)).unwrap_or_else(|| {
            panic!("{name} cut after {skip}: frame {frame} not in the full decode")
        });
        let (mut a, mut b) = (m.clone(), f.clone());
        a["frame"] = Value::Null;
        b["frame"] = Value::Null;
        match same_where_known(&a, &b, "", &mut got.unknown_keys) {
            Ok(n) => got.unknown += n,
            Err(e) => panic!("{name} cut after {skip}, frame {frame}: {e}"),
        }
        first_time.get_or_insert(m["time"].as_f64().unwrap_or(0.0));
        got.compared += 1;
    }
    got.missed = full.len() - got.compared;
    let first_full = full
        .values()
        .filter_map(|m| m["time"].as_f64())
        .fold(f64::INFINITY, f64::min);
    got.lock_seconds = first_time.unwrap_or(f64::INFINITY) - first_full;
    let _ = std::fs::remove_dir_all(&dir);
    got
}

/// Frames of the full capture's connection: the connectResponse, and the first snapshot.
fn handshake_frames(src: &Path) -> (u64, u64) {
    let msgs = full_messages(src);
    let frame = |pred: &dyn Fn(&Value) -> bool| {
        msgs.iter()
            .find(|m| pred(m))
            .and_then(|m| m["frame"].as_u64())
            .expect("frame")
    };
    let response = frame(&|m| m["ops"][0]["command"] == "connectResponse");
    let snapshot = frame(&|m| {
        m["ops"]
            .as_array()
            .is_some_and(|o| o.iter().any(|op| op["op"] == "snapshot"))
    });
    (response, snapshot)
}

/// Issue 17, protocol 71: cuts of the stored 71 session at 10/30/50/80 % of its packets, and
/// between the client's handshake and its first snapshot, decode mid-session from the
/// checksum-solved challenge. Every message of the connection after the cut equals the full
/// capture's wherever the cut gives a value (ops, server and client commands, usercmds,
/// snapshot fields), lock-on is within 2 s of the connection's traffic and
/// [`LOCK_WITHIN_PACKETS`] messages, and a cut that keeps the gamestate knows every value.
#[test]
fn quake3_proto71_cuts_decode_as_the_full_capture() {
    let name = "q3-proto71";
    let src = root().join("captures").join(name).join("capture.pcapng");
    if !src.exists() {
        return skip::data(&src);
    }
    check_71_capture(&src, true);
}

/// The cuts of [`quake3_proto71_cuts_decode_as_the_full_capture`] on one capture whose
/// first flow is a protocol-71 connection with its handshake; `handshake_cuts`: also the
/// cuts after the connectResponse and before the first snapshot.
fn check_71_capture(src: &Path, handshake_cuts: bool) {
    let name = src.display();
    let n = frame_count(src);
    let (response, snapshot) = handshake_frames(src);
    assert!(response < snapshot, "{response} {snapshot}");
    let mut skips: Vec<(String, u64)> = CUTS
        .iter()
        .map(|p| (format!("{p}%"), n * u64::from(*p) / 100))
        .collect();
    if handshake_cuts {
        skips.push(("after the connectResponse".into(), response));
        skips.push(("just before the first snapshot".into(), snapshot - 1));
    }
    for (what, skip) in skips {
        let c = check_cut71(src, skip);
        eprintln!(
            "{name} cut {what} (after frame {skip}): {} messages equal to the full capture's, {} values unknown ({} usercmd keys), {} messages before lock-on, lock-on {:.3} s after the cut's first message",
            c.compared, c.unknown, c.unknown_keys, c.missed, c.lock_seconds
        );
        assert!(c.compared > 0, "{what}");
        assert!(
            c.missed as u64 <= LOCK_WITHIN_PACKETS,
            "{what}: {} messages before lock-on",
            c.missed
        );
        assert!(
            c.lock_seconds <= 2.0,
            "{what}: lock-on after {} s",
            c.lock_seconds
        );
        if handshake_cuts && skip == response {
            // The gamestate was captured: nothing is unknown but the usercmd key of the moves
            // that acknowledge a server command from before the cut (its text is unknown).
            assert_eq!(c.unknown, c.unknown_keys, "{what}");
            assert_eq!(c.missed, 0, "{what}");
        }
    }
}

/// Issue 17, protocol 71: `demo` needs a gamestate. A cut that keeps it (right after the
/// connectResponse) gives the full capture's demo byte for byte; a cut after it writes
/// nothing, says why and exits 3.
#[test]
fn quake3_proto71_demo_needs_a_gamestate() {
    let name = "q3-proto71";
    let src = root().join("captures").join(name).join("capture.pcapng");
    if !src.exists() {
        return skip::data(&src);
    }
    let dir = scratch("q3demo71");
    let demo_of = |cap: &Path, out: &Path| -> Vec<u8> {
        run(&[
            "demo",
            "--out-dir",
            &out.to_string_lossy(),
            &cap.to_string_lossy(),
        ]);
        let file = std::fs::read_dir(out)
            .expect("out dir")
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "dm_71"))
            .expect("a .dm_71");
        std::fs::read(file).expect("read demo")
    };
    let full = demo_of(&src, &dir.join("full"));
    let (response, _) = handshake_frames(&src);
    let cap = dir.join("cut.pcap");
    cut(&src, response, &cap);
    let cut_demo = demo_of(&cap, &dir.join("cut"));
    assert!(
        full == cut_demo,
        "the cut's demo differs from the full capture's"
    );
    cut(&src, frame_count(&src) / 3, &cap);
    demo_refused(&cap, &dir.join("none"), "holds no gamestate");
    let _ = std::fs::remove_dir_all(&dir);
}

/// As [`quake3_proto71_cuts_decode_as_the_full_capture`] on a lab recording named by
/// `QUAKECAP_MID71_CAPTURE` (e.g. a protocol-71 session with map changes from
/// `shared/lab/q3/scenario.sh`; captures are not stored in the repository).
#[test]
fn quake3_proto71_cuts_of_a_lab_recording() {
    let Some(src) = std::env::var_os("QUAKECAP_MID71_CAPTURE").map(PathBuf::from) else {
        return skip::unavailable("QUAKECAP_MID71_CAPTURE, a protocol-71 lab recording");
    };
    check_71_capture(&src, true);
    // A cut between the first gamestate and a map change: its demo starts at the map change
    // and equals the full capture's demo of that map byte for byte.
    let msgs = full_messages(&src);
    let gamestates: Vec<u64> = msgs
        .iter()
        .filter(|m| {
            m["ops"]
                .as_array()
                .is_some_and(|o| o.iter().any(|op| op["op"] == "gamestate"))
        })
        .filter_map(|m| m["frame"].as_u64())
        .collect();
    let (Some(first), Some(&later)) = (gamestates.first(), gamestates.get(1)) else {
        return skip::unavailable(&format!(
            "a map change in {}, for the demo check",
            src.display()
        ));
    };
    let dir = scratch("lab71demo");
    let cap = dir.join("cut.pcap");
    cut(&src, (first + later) / 2, &cap);
    let files = |cap: &Path, out: &Path| -> Vec<Vec<u8>> {
        run(&[
            "demo",
            "--out-dir",
            &out.to_string_lossy(),
            &cap.to_string_lossy(),
        ]);
        let mut v: Vec<PathBuf> = std::fs::read_dir(out)
            .expect("out dir")
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .collect();
        v.sort();
        v.iter().map(|p| std::fs::read(p).expect("demo")).collect()
    };
    let full = files(&src, &dir.join("full"));
    let cut_demos = files(&cap, &dir.join("cut"));
    assert_eq!(cut_demos.len(), 1, "one demo, from the map change");
    assert!(
        full.contains(&cut_demos[0]),
        "the cut's demo is none of the full capture's"
    );
    eprintln!(
        "map-change demo of the cut after frame {} equals the full capture's",
        (first + later) / 2
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// What one mid-session protocol-68 connection of a cut gave (see [`check_cut68`]).
struct Cut68 {
    connection: String,
    /// Packet of the connection and seconds of its traffic at lock-on, from `flows`' note.
    lock: Option<(u64, f64)>,
    compared: usize,
    unknown: usize,
    undecoded: usize,
    /// Messages of the full capture's connection after the cut.
    full: usize,
}

/// Cut `src` after `skip` frames: every message of each mid-session protocol-68 connection
/// that the cut decodes must equal the full capture's message of the same frame wherever
/// the cut gives a value (ops, server and client commands, usercmds, snapshot fields); the
/// others carry no ops.
fn check_cut68(src: &Path, skip: u64) -> Vec<Cut68> {
    let name = src.display();
    let dir = scratch(&format!("68-{skip}"));
    let cap = dir.join("cut.pcap");
    cut(src, skip, &cap);
    let (_, full_rows) = flows(src);
    let (_, rows) = flows(&cap);
    let cut_msgs = messages(&cap);
    let mut got = Vec::new();
    for mid in rows
        .iter()
        .filter(|f| f["kind"] == "connection" && is_mid(f) && f["protocol"] != 71)
    {
        let same = full_rows
            .iter()
            .find(|g| {
                g["kind"] == "connection"
                    && g["server"] == mid["server"]
                    && g["client_ip"] == mid["client_ip"]
                    && g["qport"] == mid["qport"]
            })
            .expect("the connection in the full capture");
        assert_eq!(same["protocol"], 68, "{name} {skip}");
        let note = mid["error_details"].to_string();
        let lock = note.find("locked on at packet ").map(|at| {
            let t = &note[at + "locked on at packet ".len()..];
            let packet = t
                .split(' ')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            let secs = t
                .split('(')
                .nth(1)
                .and_then(|x| x.split(' ').next())
                .and_then(|x| x.parse().ok())
                .unwrap_or(f64::INFINITY);
            (packet, secs)
        });
        // Only the note: a wrong key would show as decode errors.
        assert_eq!(mid["errors"], 1, "{name} {skip}: {}", mid["error_details"]);
        assert_eq!(mid["protocol"].is_null(), lock.is_none(), "{name} {skip}");
        let (cut_id, full_id) = (mid["id"].as_u64(), same["id"].as_u64());
        let full = full_by_frame(src, full_id, skip);
        let mut c = Cut68 {
            connection: format!("{} {}", mid["client_ip"], mid["qport"]),
            lock,
            compared: 0,
            unknown: 0,
            undecoded: 0,
            full: full.len(),
        };
        let mut keys = 0;
        for m in cut_msgs.iter().filter(|m| m["flow"].as_u64() == cut_id) {
            if m["kind"] == "oob" {
                continue;
            }
            let frame = m["frame"].as_u64().unwrap_or(0) + skip;
            let f = full.get(&(m["dir"].to_string(), frame)).unwrap_or_else(|| {
                panic!("{name} cut after {skip}: frame {frame} not in the full decode")
            });
            if m["ops"].as_array().is_none_or(|o| o.is_empty()) && m["error"].is_null() {
                c.undecoded += 1;
                continue;
            }
            assert!(
                lock.is_some(),
                "{name} {skip} frame {frame}: decoded before a lock-on"
            );
            let (mut a, mut b) = (m.clone(), f.clone());
            a["frame"] = Value::Null;
            b["frame"] = Value::Null;
            match same_where_known(&a, &b, "", &mut keys) {
                Ok(n) => c.unknown += n,
                Err(e) => panic!("{name} cut after {skip}, frame {frame}: {e}"),
            }
            c.compared += 1;
        }
        got.push(c);
    }
    let _ = std::fs::remove_dir_all(&dir);
    got
}

/// Issue 17, protocol 68: every stored protocol-68 capture cut at 10/30/50/80 % of its
/// packets, between the first client's handshake and its first snapshot, and (q3-download)
/// inside the download. Each mid-session connection locks on (a key search found the
/// challenge byte and the key of the server or the client messages) within 2 s of its
/// traffic, the goal, and then every message it decodes equals the full capture's
/// wherever it gives a value; no message is decoded before a lock-on. Each cut's result is
/// printed, with its lock-on time and what stayed undecoded.
#[test]
fn quake3_proto68_cuts_decode_as_the_full_capture_or_say_why_not() {
    let (mut locked, mut in_goal, mut cuts, mut conns) = (0, 0, 0, 0);
    let mut uncounted_conns = 0;
    for name in PROTO68_CAPTURES {
        let Some(src) = stored_capture(name) else {
            skip::data(&Path::new("captures").join(name));
            continue;
        };
        let n = frame_count(&src);
        let mut skips: Vec<(String, u64)> = CUTS
            .iter()
            .map(|p| (format!("{p}%"), n * u64::from(*p) / 100))
            .collect();
        let mut uncounted = Vec::new();
        for &(_, p, goal) in EXTRA_CUTS68.iter().filter(|(c, ..)| *c == name) {
            skips.push((format!("{p}%"), n * u64::from(p) / 100));
            if !goal {
                uncounted.push(format!("{p}%"));
            }
        }
        let (response, snapshot) = handshake_frames(&src);
        skips.push((
            "between handshake and first snapshot".into(),
            (response + snapshot) / 2,
        ));
        if name == "q3-download" {
            // Inside the download: the middle of the server's download messages.
            let frames: Vec<u64> = full_messages(&src)
                .iter()
                .filter(|m| m["ops"].to_string().contains("\"download\""))
                .filter_map(|m| m["frame"].as_u64())
                .collect();
            if let Some(mid) = frames.get(frames.len() / 2) {
                skips.push(("inside the download".into(), *mid));
            }
        }
        for (what, skip) in skips {
            cuts += 1;
            for c in check_cut68(&src, skip) {
                conns += 1;
                match c.lock {
                    Some((packets, secs)) => {
                        locked += 1;
                        eprintln!(
                            "{name} cut {what} (after frame {skip}), connection {}: locked on at packet {packets} ({secs:.3} s); {} messages equal to the full capture's ({} values unknown), {} undecoded, of {} in the full capture after the cut",
                            c.connection, c.compared, c.unknown, c.undecoded, c.full
                        );
                        if uncounted.contains(&what) {
                            // Why: at EXTRA_CUTS68.
                            eprintln!("  (not counted for the 2 s goal: the client sends nothing for the cut's first seconds)");
                            uncounted_conns += 1;
                        } else {
                            in_goal += usize::from(secs <= 2.0);
                        }
                        assert!(c.compared > 0, "{name} {what}");
                        // A cut in the signon leaves nothing unknown after the lock-on: the
                        // client acknowledges no server command yet (command 0, whose key
                        // string its connect left empty), and every command after is shown.
                        if what.starts_with("between") || what.starts_with("inside") {
                            assert!(
                                c.undecoded < packets as usize,
                                "{name} {what}: {} messages undecoded, locked on at packet {packets}",
                                c.undecoded
                            );
                        }
                    }
                    None => eprintln!(
                        "{name} cut {what} (after frame {skip}), connection {}: NO lock-on (no run of server messages acknowledging a guessable client command or a download's `nextdl N`: free text such as `say`, `tell`, `userinfo`); {} messages undecoded",
                        c.connection, c.undecoded
                    ),
                }
            }
        }
    }
    eprintln!(
        "protocol-68 connections locked on: {locked} of {conns} ({in_goal} within 2 s, {uncounted_conns} not counted), in {cuts} cuts"
    );
    // The goal: every connection of every cut locks on within 2 s of its traffic
    // (each search's answers are also checked against the handshake in
    // tests/q3_keysearch.rs); the uncounted ones must still lock on.
    assert_eq!(
        in_goal + uncounted_conns,
        conns,
        "connections that did not lock on within 2 s"
    );
}

fn events(cap: &Path) -> Vec<Value> {
    run(&["events", "--json", &cap.to_string_lossy()])
        .lines()
        .map(|l| serde_json::from_str(l).expect("event json"))
        .collect()
}

/// The kills and chat of a cut against the full capture's after the cut's first event: the
/// same kills (game time, numbers, means, suicide; a name the cut gives equals the full
/// capture's, an unknown one is null), and the same chat lines (a line the cut gives is in
/// the full capture within a second, from the same player where the cut names one, and
/// every line of the full capture after the cut is in the cut). Returns the kills compared,
/// the full capture's kills the cut left out, and the chat lines compared.
fn check_events(src: &Path, skip: u64) -> (usize, usize, usize) {
    let name = src.display();
    let dir = scratch(&format!("ev-{skip}"));
    let cap = dir.join("cut.pcap");
    cut(src, skip, &cap);
    let full = events(src);
    let got = events(&cap);
    // The cut's first decoded message time: events of the full capture from then on.
    let start = messages(&cap)
        .iter()
        .find(|m| m["ops"].as_array().is_some_and(|o| !o.is_empty()))
        .and_then(|m| m["time"].as_f64())
        .unwrap_or(f64::INFINITY);
    let _ = std::fs::remove_dir_all(&dir);
    let of = |v: &[Value], kind: &str| -> Vec<Value> {
        v.iter()
            .filter(|e| e["kind"] == kind && e["time"].as_f64().unwrap_or(0.0) >= start)
            .cloned()
            .collect()
    };
    let (full_kills, cut_kills) = (of(&full, "kill"), of(&got, "kill"));
    // Every kill of the cut is one of the full capture's; one whose obituary entity the cut
    // only knows in part is left out (no event rather than a wrong one), and counted.
    for c in &cut_kills {
        let f = full_kills
            .iter()
            .find(|f| f["game_time"] == c["game_time"] && f["victim_num"] == c["victim_num"])
            .unwrap_or_else(|| panic!("{name} cut after {skip}: kill {c} not in the full capture"));
        for k in ["killer_num", "mod", "suicide"] {
            assert_eq!(c[k], f[k], "{name} cut after {skip}: kill {k}: {c} vs {f}");
        }
        for k in ["killer", "victim"] {
            assert!(
                c[k].is_null() || c[k] == f[k],
                "{name} cut after {skip}: kill {k}: {c} vs {f}"
            );
        }
    }
    // A scoreline of the cut is one of the full capture's (no score the cut has not seen
    // re-sent given as "no one").
    let (full_lines, cut_lines) = (of(&full, "scoreline"), of(&got, "scoreline"));
    for c in &cut_lines {
        let same = |f: &&Value| {
            ["game_time", "teams", "score1", "score2"]
                .iter()
                .all(|k| f[k] == c[k])
        };
        assert!(
            full_lines.iter().any(|f| same(&f)),
            "{name} cut after {skip}: scoreline {c} not in the full capture"
        );
    }
    let (full_chat, cut_chat) = (of(&full, "chat"), of(&got, "chat"));
    let near = |a: &Value, b: &Value| {
        a["text"] == b["text"]
            && (a["time"].as_f64().unwrap_or(0.0) - b["time"].as_f64().unwrap_or(9.0)).abs() <= 1.0
    };
    for c in &cut_chat {
        let f = full_chat
            .iter()
            .find(|f| near(c, f))
            .unwrap_or_else(|| panic!("{name} cut after {skip}: chat {c} not in the full capture"));
        for k in ["name", "num"] {
            assert!(
                c[k].is_null() || c[k] == f[k],
                "{name} cut after {skip}: chat {k}: {c} vs {f}"
            );
        }
    }
    for f in &full_chat {
        assert!(
            cut_chat.iter().any(|c| near(c, f)),
            "{name} cut after {skip}: chat {f} missing from the cut"
        );
    }
    (
        cut_kills.len(),
        full_kills.len() - cut_kills.len(),
        cut_chat.len(),
    )
}

/// Issue 17: `events --json` of a protocol-71 cut (10/30/50/80 %) gives the full capture's
/// kills (all of them) and chat after the cut, with names null where the cut cannot know
/// them.
#[test]
fn quake3_proto71_cut_events_match_the_full_capture() {
    let src = root().join("captures/q3-proto71/capture.pcapng");
    if !src.exists() {
        return skip::data(&src);
    }
    let n = frame_count(&src);
    for pct in CUTS {
        let (kills, missed, chat) = check_events(&src, n * u64::from(pct) / 100);
        eprintln!(
            "q3-proto71 cut {pct}%: {kills} kills and {chat} chat lines as in the full capture, {missed} kills left out"
        );
        assert_eq!(missed, 0, "q3-proto71 cut {pct}%");
    }
}

/// Issue 17, protocol 68: `events --json` of the cuts where the key search locks on at the
/// start on every connection, which then decode to their end (see
/// [`quake3_proto68_cuts_decode_as_the_full_capture_or_say_why_not`]) gives the full
/// capture's kills and chat after the cut.
#[test]
fn quake3_proto68_cut_events_match_the_full_capture() {
    for (name, pct) in [
        ("q3-events", 10),
        ("q3-download", 50),
        ("q3-ctf", 30),
        ("q3-ctf", 60),
    ] {
        let Some(src) = stored_capture(name) else {
            skip::data(&Path::new("captures").join(name));
            continue;
        };
        let (kills, missed, chat) = check_events(&src, frame_count(&src) * pct / 100);
        eprintln!("{name} cut {pct}%: {kills} kills and {chat} chat lines as in the full capture, {missed} kills of the full capture not given by the cut");
        // The deaths of client 0 after the cut: an obituary's victim 0 is never sent.
        if name == "q3-ctf" {
            assert_eq!(missed, 0, "{name} cut {pct}%");
        }
    }
}

/// The events-only decode (`quakecap events`, `report`), which leaves out the messages the
/// game events read nothing from, gives exactly the full decode's events on cuts, where
/// connections start undecodable, lock on and relock: the left-out messages include
/// undecoded ones, and each cut starts without a gamestate. Every stored protocol-68
/// capture, cut at 30 % and 60 % (an obituary entity whose fields a cut knows only in part
/// once gave a kill in the full decode and none in the events-only one: q3-ctf).
#[test]
fn quake3_cut_events_only_decode_gives_the_full_decodes_events() {
    let dir = scratch("light");
    let mut compared = 0;
    for (label, src) in proto68_capture_files() {
        for pct in [30, 60] {
            let out = dir.join(format!("{}-{pct}.pcap", label.replace('/', "-")));
            cut(&src, frame_count(&src) * pct / 100, &out);
            let light = events_with(&out, true);
            let full = events_with(&out, false);
            let kills = |v: &[quakecap::gameevent::GameEvent]| -> Vec<String> {
                v.iter()
                    .filter(|e| e.kind == quakecap::gameevent::Kind::Kill)
                    .map(|e| format!("{:?} {}", e.game_time, e.describe()))
                    .collect()
            };
            assert_eq!(
                kills(&light),
                kills(&full),
                "{label} cut {pct}%: kills of the events-only decode"
            );
            assert_eq!(light, full, "{label} cut {pct}%");
            let _ = std::fs::remove_file(&out);
            compared += 1;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(compared >= 20, "{compared} cuts");
    eprintln!("{compared} cuts: the same events from both decodes");
}

fn events_with(path: &Path, events_only: bool) -> Vec<quakecap::gameevent::GameEvent> {
    let mut sink = quakecap::sink::events::EventSink::new();
    let opts = quakecap::pipeline::Options {
        detail: if events_only {
            quakecap::pipeline::Detail::Events
        } else {
            quakecap::pipeline::Detail::Full
        },
        ..Default::default()
    };
    quakecap::pipeline::run_capture(path, &opts, &mut sink, &mut |_| {}).expect("capture");
    sink.events
}

/// The `flows` table names a connection captured after its handshake `mid-session` (and
/// says under it where the details are); the full capture's table, with the handshake, does
/// not.
#[test]
fn flows_table_says_mid_session() {
    let Some(src) = stored_capture("q3-two-clients") else {
        return skip::data(Path::new("captures/q3-two-clients"));
    };
    let dir = scratch("table");
    let out = dir.join("half.pcap");
    cut(&src, frame_count(&src) / 2, &out);
    let (_, rows) = flows(&out);
    let connections = rows.iter().filter(|f| f["kind"] == "connection").count();
    let table = run(&["flows", &out.to_string_lossy()]);
    let marked = table
        .lines()
        .filter(|l| l.split_whitespace().next() == Some("mid-session"))
        .count();
    assert!(connections >= 2, "{table}");
    assert_eq!(marked, connections, "{table}");
    assert!(table.contains("flows --json"), "{table}");
    let full = run(&["flows", &src.to_string_lossy()]);
    assert!(!full.contains("mid-session"), "{full}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every stored Quake 3 capture file whose connections speak protocol 68: `capture.pcapng`
/// and `server-side.pcapng` of each `q3-*` folder of `captures/` and of the shared corpus
/// (`../shared/captures`; a folder in both is taken from `captures/`).
fn proto68_capture_files() -> Vec<(String, PathBuf)> {
    let mut got: Vec<(String, PathBuf)> = Vec::new();
    for dir in [root().join("captures"), root().join("../shared/captures")] {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            skip::data(&dir);
            continue;
        };
        let mut names: Vec<String> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("q3-"))
            .collect();
        names.sort();
        for name in names {
            for file in ["capture.pcapng", "server-side.pcapng"] {
                let label = format!("{name}/{file}");
                let p = dir.join(&name).join(file);
                if p.exists() && !got.iter().any(|(l, _)| *l == label) {
                    got.push((label, p));
                }
            }
        }
    }
    // Protocol 68 only (q3-proto71's connections speak 71: no key to recover).
    got.retain(|(_, p)| {
        let (_, rows) = flows(p);
        rows.iter()
            .any(|f| f["kind"] == "connection" && f["protocol"] == 68)
    });
    got
}

/// What a cut gave for the usercmds of its mid-session protocol-68 connections: client
/// messages with usercmds decoded after the lock-on, those with every usercmd value known,
/// and values that differ from the full capture's decode of the same message.
#[derive(Default)]
struct CmdFigures {
    /// Mid-session protocol-68 connections of the cut matched to the full capture's, and
    /// the full capture's protocol-68 connections with client messages after the cut.
    connections: usize,
    live: usize,
    with_moves: usize,
    all_known: usize,
    mismatches: usize,
    first_mismatch: Option<String>,
}

/// True when every value of every usercmd of client message `m` is known (the `key` of a
/// move op aside: its high 16 bits, from the gamestate's checksumFeed, never matter).
fn usercmds_known(m: &Value) -> Option<bool> {
    let ops = m["ops"].as_array()?;
    let moves: Vec<&Value> = ops.iter().filter(|o| o["op"] == "move").collect();
    if moves.is_empty() {
        return None;
    }
    let known = |v: &Value| match v {
        Value::Array(a) => a.iter().all(|x| !x.is_null()),
        v => !v.is_null(),
    };
    Some(moves.iter().all(|o| {
        o["cmds"].as_array().is_some_and(|cs| {
            cs.iter()
                .all(|c| c.as_object().is_some_and(|c| c.values().all(known)))
        })
    }))
}

fn check_cut_usercmds(src: &Path, skip: u64) -> CmdFigures {
    let dir = scratch(&format!("cmds-{skip}"));
    let cap = dir.join("cut.pcap");
    cut(src, skip, &cap);
    let (_, full_rows) = flows(src);
    let (_, rows) = flows(&cap);
    let cut_msgs = messages(&cap);
    let mut fig = CmdFigures::default();
    let full_msgs = full_messages(src);
    fig.live = full_rows
        .iter()
        .filter(|f| f["kind"] == "connection" && f["protocol"] == 68)
        .filter(|f| {
            full_msgs.iter().any(|m| {
                m["flow"] == f["id"] && m["kind"] == "client" && m["frame"].as_u64() > Some(skip)
            })
        })
        .count();
    // Full-capture connections matched (a client whose NAT port changed after the cut is
    // two mid-session flows of one connection).
    let mut matched = std::collections::BTreeSet::new();
    for mid in rows
        .iter()
        .filter(|f| f["kind"] == "connection" && is_mid(f) && f["protocol"] == 68)
    {
        let Some(same) = full_rows.iter().find(|g| {
            g["kind"] == "connection"
                && g["server"] == mid["server"]
                && g["client_ip"] == mid["client_ip"]
                && g["qport"] == mid["qport"]
        }) else {
            continue;
        };
        matched.insert(same["id"].as_u64());
        let full = full_by_frame(src, same["id"].as_u64(), skip);
        for m in cut_msgs
            .iter()
            .filter(|m| m["flow"].as_u64() == mid["id"].as_u64() && m["kind"] == "client")
        {
            let Some(known) = usercmds_known(m) else {
                continue;
            };
            let frame = m["frame"].as_u64().unwrap_or(0) + skip;
            let Some(f) = full.get(&(m["dir"].to_string(), frame)) else {
                fig.mismatches += 1;
                fig.first_mismatch
                    .get_or_insert(format!("frame {frame}: not in the full decode"));
                continue;
            };
            fig.with_moves += 1;
            fig.all_known += usize::from(known);
            let (mut a, mut b) = (m.clone(), f.clone());
            for v in [&mut a, &mut b] {
                v["frame"] = Value::Null;
                v["flow"] = Value::Null;
                // An error names its frame, counted from the cut's start in the cut.
                if let Some(e) = v["error"].as_object_mut() {
                    e.remove("frame");
                }
            }
            if let Err(e) = same_where_known(&a, &b, "", &mut 0) {
                fig.mismatches += 1;
                fig.first_mismatch
                    .get_or_insert(format!("frame {frame}: {e}"));
            }
        }
    }
    fig.connections = matched.len();
    let _ = std::fs::remove_dir_all(&dir);
    fig
}

/// The usercmd figures of the 30 % and 60 % cuts of every stored protocol-68 capture file,
/// printed; returns (label, figures) per cut.
fn usercmd_cuts() -> Vec<(String, CmdFigures)> {
    let files = proto68_capture_files();
    assert!(files.len() >= 10, "{files:?}");
    let mut got = Vec::new();
    for (label, src) in &files {
        let n = frame_count(src);
        for pct in [30u64, 60] {
            let fig = check_cut_usercmds(src, n * pct / 100);
            eprintln!(
                "{label} cut {pct}%: {} client messages with usercmds after the lock-on, {:.1} % with every value known, {} mismatches{}",
                fig.with_moves,
                fig.share(),
                fig.mismatches,
                fig.first_mismatch.as_deref().map(|s| format!(" (first: {s})")).unwrap_or_default()
            );
            got.push((format!("{label} {pct}%"), fig));
        }
    }
    got
}

impl CmdFigures {
    fn share(&self) -> f64 {
        if self.with_moves == 0 {
            0.0
        } else {
            100.0 * self.all_known as f64 / self.with_moves as f64
        }
    }
}

/// Protocol 68 mid-session: the usercmd values that depend on the gamestate's checksumFeed
/// (only its low 16 bits matter) are recovered from the snapshots that echo the commands
/// (`q3::feedsearch`). Cuts at 30 % and 60 % of every stored protocol-68 capture file: no
/// value differs from the full capture's decode of the same message, and most client
/// messages after the lock-on give every usercmd value (none did before the search: every
/// keyed value was null until a gamestate).
#[test]
fn quake3_proto68_cuts_give_full_usercmds() {
    let cuts = usercmd_cuts();
    let (mut moves, mut known) = (0, 0);
    for (what, fig) in &cuts {
        assert_eq!(fig.mismatches, 0, "{what}: {:?}", fig.first_mismatch);
        assert!(fig.with_moves > 0, "{what}: no client message decoded");
        // Every connection that sends after the cut is recognised mid-session (a cut that
        // opened with a server packet of a client's shape once lost one).
        assert_eq!(fig.connections, fig.live, "{what}: connections recognised");
        moves += fig.with_moves;
        known += fig.all_known;
    }
    let short: Vec<&String> = cuts
        .iter()
        .filter(|(_, f)| f.share() < 95.0)
        .map(|(w, _)| w)
        .collect();
    let share = 100.0 * known as f64 / moves as f64;
    eprintln!(
        "all cuts: {known} of {moves} client messages with usercmds ({share:.1} %) give every value; short of 95 %: {short:?}"
    );
    assert!(share >= AGGREGATE_FLOOR, "{share:.1} % of the messages");
}

/// What [`quake3_proto68_cuts_give_full_usercmds`] holds the cuts to, all together (0 %
/// before the search; 55.2 % before an unseen acknowledged command whose whole text the
/// client-message search found keyed with its hash, and before the cheap tries between
/// the counted ones: 55.8 % now).
const AGGREGATE_FLOOR: f64 = 55.5;

/// The goal: at least 95 % of the client messages with usercmds after the lock-on give every
/// value, in every cut. Met by the aimbot cuts, the 30 % cuts of q3-lagswitch and
/// q3-aimbot-smooth, and the 60 % cuts of the sessions recorded with movement
/// (q3-fight-two-clients 97.1 % and 96.9 %, q3-fight-one-client 98.3 %); their 30 % cuts
/// reach 83–88 %: the key part is found only at the first echo that pins it (a turn with
/// the view-angle offset known, i.e. after a respawn; a weapon change), up to 9–14 s after
/// the cut, and the messages before it were already handed out. Not met by the others,
/// mostly out of reach of one connection's messages. Of the messages the search saw in the stored cuts (measured with the cuts of
/// `capture.pcapng`), roughly:
///
/// * a third come while nothing echoes the commands: a player who neither turns nor changes
///   weapon nor fires, while the playerstate fields stay unsent since the capture started
///   (every snapshot deltas from one before it; a non-delta snapshot comes only after
///   heavy loss or, after `disconnect`, at the end). Their keyed weapon (and any other
///   keyed value) is the value XOR the unknown part, with nothing to tell the two apart
///   (q3-events, q3-netquality, q3-impaired, q3-ctf 60 %, q3-download 60 %);
/// * a tenth come while the server messages stay undecodable after the lock-on: they
///   acknowledge a client command sent before the capture (` tell 0 private hello` in most
///   cuts, which neither the guesses nor the message ends read) until the next one, often
///   `disconnect`, and the client acknowledges server commands those messages carried
///   (q3-basic, q3-mapchange and q3-impaired 60 %, q3-two-clients 60 %);
/// * a few per cent come in a period whose key part the echoes give later: they were
///   handed out before it was found (decoding streams in capture order) and keep their
///   nulls; filling them in would mean holding back the whole capture-ordered output.
#[test]
#[ignore = "the 95 % goal is not met in every cut yet: see the comment"]
fn quake3_proto68_cuts_give_full_usercmds_95_percent() {
    let short: Vec<String> = usercmd_cuts()
        .into_iter()
        .filter(|(_, f)| f.mismatches > 0 || f.share() < 95.0)
        .map(|(w, f)| format!("{w}: {:.1} %", f.share()))
        .collect();
    assert!(short.is_empty(), "cuts short of full usercmds: {short:?}");
}

/// The bots of a lab session: `server.log`'s players whose userinfo has a `skill`.
fn bots(server_log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(server_log).unwrap_or_default();
    text.lines()
        .filter_map(|l| l.split_once("ClientUserinfoChanged: ")?.1.split_once(' '))
        .filter(|(_, info)| info.contains("\\skill\\"))
        .filter_map(|(_, info)| Some(info.strip_prefix("n\\")?.split('\\').next()?.to_string()))
        .collect()
}

/// Issue 46: a cut names the players of its kills that it can know without the gamestate:
/// each connection's own player (his number from the playerstate or his own death, his
/// name from his chat coming back from the server), and a slot whose player leaves or
/// changes team after the cut. At 30 % and 60 % of every stored protocol-68 capture file,
/// against the full capture: every name given is right, and every
/// player of a kill left unnamed is a bot (a bot has no connection of its own in the
/// capture and never leaves; baseq3 sends its name only in the configstrings).
#[test]
fn quake3_proto68_cut_kills_name_every_connected_player() {
    let files = proto68_capture_files();
    assert!(files.len() >= 10, "{files:?}");
    let (mut named, mut unnamed) = (0, 0);
    for (label, src) in &files {
        let bots = bots(&src.with_file_name("server.log"));
        let n = frame_count(src);
        for pct in [30u64, 60] {
            let skip = n * pct / 100;
            let dir = scratch(&format!("names-{skip}"));
            let cap = dir.join("cut.pcap");
            cut(src, skip, &cap);
            let (full, got) = (events(src), events(&cap));
            let _ = std::fs::remove_dir_all(&dir);
            for c in got.iter().filter(|e| e["kind"] == "kill") {
                let Some(f) = full.iter().find(|f| {
                    f["kind"] == "kill"
                        && f["game_time"] == c["game_time"]
                        && f["victim_num"] == c["victim_num"]
                }) else {
                    continue;
                };
                for (k, num) in [("killer", "killer_num"), ("victim", "victim_num")] {
                    if c[num].is_null() {
                        continue;
                    }
                    if !c[k].is_null() {
                        assert_eq!(c[k], f[k], "{label} cut {pct}%: {k} of {c} vs {f}");
                    }
                    if c[k].is_null() {
                        unnamed += 1;
                        let who = f[k].as_str().unwrap_or("");
                        assert!(
                            bots.iter().any(|b| b == who),
                            "{label} cut {pct}%: {k} {who} (#{}) of {c} unnamed",
                            c[num]
                        );
                    } else {
                        named += 1;
                    }
                }
            }
        }
    }
    eprintln!("cuts: {named} kill players named, {unnamed} bots unnamed");
    assert!(named > 0);
}

/// A capture that begins mid-session has no join for the players already in the game: their
/// time in game counts from the input's first event, not zero. At 30 % and 60 % of every
/// protocol-68 capture file, every player of the cut's summary with one stint in the full
/// capture has that stint's part within the cut's events (within 2 s), and nobody has more
/// than in the full capture.
#[test]
fn quake3_proto68_cut_summary_counts_time_in_game() {
    use quakecap::gameevent::summary::summarize;
    let files = proto68_capture_files();
    assert!(files.len() >= 10, "{files:?}");
    let mut checked = 0;
    for (label, src) in &files {
        let full = events_with(src, true);
        let full_sum = summarize(&full);
        let n = frame_count(src);
        for pct in [30u64, 60] {
            let skip = n * pct / 100;
            let dir = scratch(&format!("time-{skip}"));
            let cap = dir.join("cut.pcap");
            cut(src, skip, &cap);
            let got = events_with(&cap, true);
            let _ = std::fs::remove_dir_all(&dir);
            let Some(start) = got.iter().map(|e| e.time).reduce(f64::min) else {
                continue;
            };
            let end = got.iter().map(|e| e.time).fold(start, f64::max);
            for p in summarize(&got) {
                let Some(f) = full_sum.iter().find(|f| f.name == p.name) else {
                    continue;
                };
                assert!(
                    p.time_in_game <= f.time_in_game + 1.0,
                    "{label} cut {pct}%: {p:?} against the full capture's {f:?}"
                );
                // The player's one stint in the full capture (players with several are
                // not judged here): his time in the cut is that stint within the cut's
                // events (a cut file can stop before the capture's end).
                let of = |kind: quakecap::gameevent::Kind| -> Vec<f64> {
                    full.iter()
                        .filter(|e| e.kind == kind && e.describe().contains(&p.name))
                        .map(|e| e.time)
                        .collect()
                };
                let (joins, leaves) = (
                    of(quakecap::gameevent::Kind::Join),
                    of(quakecap::gameevent::Kind::Leave),
                );
                let full_end = full.iter().map(|e| e.time).fold(f64::MIN, f64::max);
                // A gamestate after the cut (a map change) lists its players as joining:
                // the cut counts from there, as it cannot know who was in before.
                let joins_in_cut = got.iter().any(|e| {
                    e.kind == quakecap::gameevent::Kind::Join && e.describe().contains(&p.name)
                });
                if joins_in_cut {
                    continue;
                }
                if let ([join], [] | [_]) = (joins.as_slice(), leaves.as_slice()) {
                    let leave = leaves.first().copied().unwrap_or(full_end);
                    let want = (leave.min(end) - join.max(start)).max(0.0);
                    assert!(
                        (p.time_in_game - want).abs() < 2.0,
                        "{label} cut {pct}%: {p:?}, want {want:.1} s (in the game \
                         {join:.1}-{leave:.1}, the cut's events {start:.1}-{end:.1})"
                    );
                    checked += 1;
                }
            }
        }
    }
    eprintln!("cuts: {checked} players' time in game checked against the full capture");
    assert!(checked > 20, "{checked}");
}
