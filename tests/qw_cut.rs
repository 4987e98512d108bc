//! Issue 14 item 11 for QuakeWorld: `quakecap demo --from/--to` writes a .qwd cut, from a
//! capture connection and from a client's own .qwd, that plays in the real ezQuake and holds
//! the same client state as the full input at the same server packet.
//!
//! Engine results (ezQuake 3.6.1 via shared/lab/qw/playback.sh, 2026-11-24): each cut plays
//! to its end with one timedemo frame per recorded command (an .mvd: per frame) but the last
//! one or two:
//!   qw-basic capture          --from 0:12 --to 0:26          frames 808 (810 commands in the window)
//!   qw-mapchange-reconnect    --flow 2 --from 0:50 --to 1:10 frames 857 (858; across the map change)
//!   qw-basic client1 .qwd     --from 0:10 --to 0:20          frames 578 (580)
//!   qw-noext client1 .qwd     --from g10 --to g20            frames 715 (717)
//!   qw-basic server .mvd      --from 0:03 --to 0:07          frames 93 (95 frames in the window)
//!   qw-mapchange server-demo1 --from g10 --to g20            frames 247 (249)
//! The expected count is derived from the input: the client's moves in the window (capture),
//! the dem_cmd blocks (.qwd) or the blocks that start a frame (.mvd) in the window. Where the
//! crate stores ezQuake's trace of the whole demo, the cut's trace after its first entity
//! frame must be a stretch of it.
mod qw_common;
mod skip;
use quakecap::qw::svc::ServerOp;
use quakecap::qw::{self, Event, Message, NetchanStatus, OpKind};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const PLAYBACK: &str = "../shared/lab/qw/playback.sh";
const EZQUAKE: &str = "/usr/lib/games/ezquake/ezquake";
const XVFB: &str = "/usr/bin/Xvfb";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn quakecap(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_quakecap"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run quakecap")
}

fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("qw_cut-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

/// One cut: input (relative to the crate), the flow (captures), the window.
struct Case {
    input: &'static str,
    flow: Option<u32>,
    from: &'static str,
    to: &'static str,
}

/// Server demos: the same checks on MVD frames.
const MVD_CASES: [Case; 2] = [
    Case {
        input: "captures/qw-basic/server-demo0.mvd",
        flow: None,
        from: "0:03",
        to: "0:07",
    },
    Case {
        input: "captures/qw-mapchange-reconnect/server-demo1.mvd",
        flow: None,
        from: "g10",
        to: "g20",
    },
];

const CASES: [Case; 4] = [
    Case {
        input: "captures/qw-basic/capture.pcapng",
        flow: Some(2),
        from: "0:12",
        to: "0:26",
    },
    Case {
        input: "captures/qw-mapchange-reconnect/capture.pcapng",
        flow: Some(2),
        from: "0:50",
        to: "1:10",
    },
    Case {
        input: "captures/qw-basic/client1-demo0.qwd",
        flow: None,
        from: "0:10",
        to: "0:20",
    },
    Case {
        input: "captures/qw-noext/client1-demo0.qwd",
        flow: None,
        from: "g10",
        to: "g20",
    },
];

fn secs(t: &str) -> f64 {
    let t = t.trim_start_matches('g');
    t.split(':')
        .fold(0.0, |a, p| a * 60.0 + p.parse::<f64>().unwrap())
}

/// Run the cut; the cut's bytes.
fn cut(case: &Case, dir: &Path, name: &str) -> Vec<u8> {
    let out = dir.join(name);
    let o = out.to_string_lossy().into_owned();
    let flow = case.flow.map(|f| f.to_string());
    let mut args = vec!["demo", "--from", case.from, "--to", case.to, "-o", &o];
    if let Some(f) = &flow {
        args.extend(["--flow", f]);
    }
    args.push(case.input);
    let r = quakecap(&args);
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}: {}",
        case.input,
        String::from_utf8_lossy(&r.stderr)
    );
    std::fs::read(&out).expect("the cut was written")
}

/// (time, block type) of every .qwd block, read with nothing but the file format.
fn block_times(data: &[u8]) -> Vec<(f32, u8)> {
    let mut v = Vec::new();
    let mut i = 0;
    while i + 5 <= data.len() {
        let t = f32::from_le_bytes(data[i..i + 4].try_into().unwrap());
        let kind = data[i + 4] & 7;
        i += 5;
        i += match kind {
            0 => 36,
            2 => 8,
            _ => 4 + i32::from_le_bytes(data[i..i + 4].try_into().unwrap()) as usize,
        };
        v.push((t, kind));
    }
    v
}

/// (demo time in s, msec byte, block type) of every .mvd block, read with nothing but the
/// file format.
fn mvd_blocks(data: &[u8]) -> Vec<(f64, u8, u8)> {
    let mut v = Vec::new();
    let (mut i, mut ms) = (0, 0u64);
    while i + 2 <= data.len() {
        let (msec, kind) = (data[i], data[i + 1] & 7);
        ms += u64::from(msec);
        i += 2;
        v.push((ms as f64 / 1000.0, msec, kind));
        if kind == 2 {
            i += 8;
            continue;
        }
        if kind == 3 {
            i += 4;
        }
        let len = i32::from_le_bytes(data[i..i + 4].try_into().unwrap()) as usize;
        i += 4 + len;
    }
    v
}

/// The level's start in an .mvd (its serverdata block's time), or 0 for demo-time windows.
fn mvd_base(case: &Case, data: &[u8]) -> f64 {
    if !case.from.starts_with('g') {
        return 0.0;
    }
    let mut ev = Vec::new();
    qw::decode_demo_file(case.input, data, &mut ev);
    let t = qw_common::messages(&ev)
        .find(|m| has(m, |op| matches!(op, ServerOp::Serverdata(_))))
        .unwrap()
        .time;
    t
}

/// The commands the client sent in the window (an .mvd: the frames), counted on the input.
fn expected_commands(case: &Case) -> usize {
    let (from, to) = (secs(case.from), secs(case.to));
    if case.input.ends_with(".mvd") {
        let data = std::fs::read(root().join(case.input)).unwrap();
        let base = mvd_base(case, &data);
        return mvd_blocks(&data)
            .iter()
            .filter(|(t, msec, _)| *msec > 0 && t - base >= from && t - base <= to)
            .count();
    }
    if let Some(flow) = case.flow {
        // A capture: the client's moves, by capture time after the file's first game packet.
        let p = Path::new(case.input);
        let dir = p.parent().unwrap().file_name().unwrap().to_str().unwrap();
        let opts = qw::Options {
            decode: false,
            keep_raw: true,
        };
        let run = qw_common::run_capture_file(dir, "capture.pcapng", opts);
        let first = run
            .flows
            .iter()
            .map(|f| f.first_time)
            .fold(f64::MAX, f64::min);
        return run
            .events
            .iter()
            .filter(|e| match e {
                Event::Raw(r) if r.flow == flow && r.cmd.is_some() => {
                    let t = r.ts_ns as f64 / 1e9 - first;
                    t >= from && t <= to
                }
                _ => false,
            })
            .count();
    }
    // A .qwd: dem_cmd blocks by demo time after the first block, or game time after the
    // serverdata's block.
    let data = std::fs::read(root().join(case.input)).unwrap();
    let blocks = block_times(&data);
    let base = if case.from.starts_with('g') {
        let mut ev = Vec::new();
        qw::decode_demo_file(case.input, &data, &mut ev);
        let t = qw_common::messages(&ev)
            .find(|m| has(m, |op| matches!(op, ServerOp::Serverdata(_))))
            .unwrap()
            .time;
        t
    } else {
        f64::from(blocks[0].0)
    };
    blocks
        .iter()
        .filter(|(t, k)| *k == 0 && f64::from(*t) - base >= from && f64::from(*t) - base <= to)
        .count()
}

fn has(m: &Message, f: impl Fn(&ServerOp) -> bool) -> bool {
    m.ops
        .iter()
        .any(|op| matches!(&op.kind, OpKind::Server(s) if f(s)))
}

/// ezQuake's own trace of the whole input, where the crate stores one.
fn full_trace(case: &Case) -> Option<PathBuf> {
    let p = root().join(case.input);
    let t = match case.flow {
        Some(f) => p.with_file_name(format!("written-flow{f}.qwd.shownet.txt")),
        None => p.with_file_name(format!("{}.shownet.txt", p.file_name()?.to_string_lossy())),
    };
    t.exists().then_some(t)
}

/// ezQuake parsed the cut's window as it parsed the same messages of the whole demo: after
/// the cut's first (re-encoded, full) entity update, the cut's trace (every message: svc
/// names at their offsets, and its size) appears, unchanged and in one piece, in the trace
/// of the whole demo.
fn check_trace(case: &Case, cut_trace: &Path, full: &Path) {
    let cut = qw_common::read_trace(&cut_trace.to_string_lossy());
    let full = qw_common::read_trace(&full.to_string_lossy());
    let first = cut
        .iter()
        .position(|(ops, _)| ops.iter().any(|(_, n)| n == "svc_packetentities"))
        .expect("a full entity update in the cut's trace");
    let mut tail = &cut[first + 1..];
    // The .mvd cut's own closing svc_disconnect (traced without a size) is not the
    // whole demo's at this place.
    if let Some(((ops, None), rest)) = tail.split_last() {
        if ops.iter().all(|(_, n)| n == "svc_disconnect") {
            tail = rest;
        }
    }
    assert!(
        tail.len() > 100,
        "{}: {} traced messages",
        case.input,
        tail.len()
    );
    let at = full.windows(tail.len()).position(|w| w == tail);
    assert!(
        at.is_some(),
        "{}: the cut's {} messages after its first entity update are not a stretch of the whole demo's trace",
        case.input,
        tail.len()
    );
    eprintln!(
        "{}: ezQuake's trace of the cut's {} messages after its first frame = the whole demo's messages {}..",
        case.input,
        tail.len(),
        at.unwrap_or(0)
    );
}

fn playback(demo: &Path, trace: Option<&Path>) -> Result<u64, String> {
    let o = Command::new("bash")
        .arg(PLAYBACK)
        .arg(demo)
        .args(trace)
        .current_dir(root())
        .output()
        .expect("run playback.sh");
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix("frames ")?.trim().parse().ok())
        .filter(|_| o.status.success())
        .ok_or(text)
}

#[test]
fn qw_cuts_play_in_ezquake() {
    let needs = [EZQUAKE, XVFB, PLAYBACK];
    if let Some(missing) = needs.iter().find(|p| !root().join(p).exists()) {
        if *missing == PLAYBACK {
            return skip::data(&root().join(missing));
        }
        return skip::unavailable(&format!(
            "{missing}: engine playback of QuakeWorld cuts (Debian: ezquake xvfb libgl1-mesa-dri)"
        ));
    }
    let dir = scratch("play");
    for (i, case) in CASES.iter().chain(&MVD_CASES).enumerate() {
        let ext = if case.input.ends_with(".mvd") {
            "mvd"
        } else {
            "qwd"
        };
        let name = format!("cut{i}.{ext}");
        cut(case, &dir, &name);
        let full = full_trace(case);
        let trace = dir.join(format!("cut{i}.shownet.txt"));
        let frames = playback(&dir.join(&name), full.as_ref().map(|_| trace.as_path()))
            .unwrap_or_else(|e| panic!("{}: ezQuake refused the cut: {e}", case.input));
        if let Some(full) = &full {
            check_trace(case, &trace, full);
        }
        let cmds = expected_commands(case) as u64;
        eprintln!(
            "{} {}..{}: frames {frames}, {cmds} commands in the window",
            case.input, case.from, case.to
        );
        // Timedemo draws a frame per command; the window's edges may gain or lose a few.
        assert!(cmds > 80, "{}: window too small", case.input);
        let slack = 3 + cmds / 50;
        assert!(
            frames + slack >= cmds && frames <= cmds + slack,
            "{}: {frames} frames for {cmds} commands",
            case.input
        );
    }
}

/// The messages of one connection's server stream, from a decoded cut or input.
fn server_messages(events: &[Event], flow: u32) -> Vec<&Message> {
    qw_common::messages(events)
        .filter(|m| m.flow == flow && m.netchan == Some(NetchanStatus::Accepted))
        .collect()
}

/// Entity frames by server sequence, rebuilt from each message's changes on its base.
fn frames(msgs: &[&Message]) -> BTreeMap<i64, Vec<qw::entity::EntityState>> {
    let mut out: BTreeMap<i64, Vec<qw::entity::EntityState>> = BTreeMap::new();
    for m in msgs {
        for op in &m.ops {
            let (pe, full) = match &op.kind {
                OpKind::Server(ServerOp::Packetentities(p)) => (p, true),
                OpKind::Server(ServerOp::Deltapacketentities(p)) => (p, false),
                _ => continue,
            };
            if pe.base_missing || pe.approximate {
                continue;
            }
            let mut f = if full {
                Vec::new()
            } else {
                match pe.base_seq.and_then(|b| out.get(&i64::from(b))) {
                    Some(b) => b.clone(),
                    None => continue,
                }
            };
            f.retain(|e| {
                !pe.removed.contains(&e.num) && !pe.entities.iter().any(|n| n.num == e.num)
            });
            f.extend(pe.entities.iter().copied());
            f.sort_by_key(|e| e.num);
            out.insert(m.seq.unwrap(), f);
        }
    }
    out
}

/// What the client keeps from the messages: userinfo (with setinfo), frags, ping, pl, stats,
/// lightstyles, serverinfo.
fn client_state(msgs: &[&Message]) -> BTreeMap<String, String> {
    let mut s = BTreeMap::new();
    for m in msgs {
        for op in &m.ops {
            let OpKind::Server(op) = &op.kind else {
                continue;
            };
            let (k, v) = match op {
                ServerOp::Serverdata(_) => {
                    s.clear();
                    continue;
                }
                ServerOp::Updateuserinfo { slot, userinfo, .. } => {
                    s.retain(|k: &String, _| !k.starts_with(&format!("setinfo {slot} ")));
                    (format!("userinfo {slot}"), userinfo.clone())
                }
                ServerOp::Setinfo { slot, key, value } => {
                    (format!("setinfo {slot} {key}"), value.clone())
                }
                ServerOp::Updatefrags { slot, frags } => {
                    (format!("frags {slot}"), frags.to_string())
                }
                ServerOp::Updateping { slot, ping } => (format!("ping {slot}"), ping.to_string()),
                ServerOp::Updatepl { slot, pl } => (format!("pl {slot}"), pl.to_string()),
                ServerOp::Updatestat { stat, value } | ServerOp::Updatestatlong { stat, value } => {
                    (format!("stat {stat}"), value.to_string())
                }
                ServerOp::Lightstyle { index, style } => (format!("style {index}"), style.clone()),
                ServerOp::Serverinfo { key, value } => (format!("serverinfo {key}"), value.clone()),
                _ => continue,
            };
            s.insert(k, v);
        }
    }
    s
}

/// The cut of `case` written as `name` in `dir`, decoded by quakecap; it decodes cleanly.
fn decoded_cut(case: &Case, dir: &Path, name: &str) -> Vec<Event> {
    let bytes = cut(case, dir, name);
    let mut ev = Vec::new();
    let sums = qw::decode_demo_file(name, &bytes, &mut ev);
    assert_eq!(sums[0].errors, 0, "{}: the cut decodes cleanly", case.input);
    ev
}

/// The full input's server stream, decoded by quakecap: the capture's connection or the .qwd.
fn full_input(case: &Case) -> Vec<Event> {
    if case.flow.is_some() {
        let p = Path::new(case.input);
        let dir = p.parent().unwrap().file_name().unwrap().to_str().unwrap();
        let opts = qw::Options {
            decode: true,
            keep_raw: false,
        };
        return qw_common::run_capture_file(dir, "capture.pcapng", opts).events;
    }
    let data = std::fs::read(root().join(case.input)).unwrap();
    let mut ev = Vec::new();
    qw::decode_demo_file(case.input, &data, &mut ev);
    ev
}

/// Decoding the cut gives, at every server packet of the window from its first entity frame
/// on, the same entity frame as decoding the whole input gives at that packet; the client
/// state (userinfo, frags, stats, lightstyles, …) the cut sets up before its window equals
/// the state the whole input had reached there; and every packet of the window carries the
/// same messages (the re-encoded first frame as a full update).
#[test]
fn qw_cut_state_equals_the_full_input() {
    let dir = scratch("state");
    for (i, case) in CASES.iter().enumerate() {
        let cut_ev = decoded_cut(case, &dir, &format!("cut{i}.qwd"));
        let cut_msgs = server_messages(&cut_ev, 1);
        let full_ev = full_input(case);
        let full_msgs = server_messages(&full_ev, case.flow.unwrap_or(1));
        // The window starts after the dem_set: the state blocks before it.
        let set_at = qw_common::messages(&cut_ev)
            .position(|m| m.block == Some("set"))
            .expect("a dem_set before the window");
        let set_frame = qw_common::messages(&cut_ev).nth(set_at).unwrap().frame;
        let (state, window): (Vec<&Message>, Vec<&Message>) =
            cut_msgs.iter().partition(|m| m.frame < set_frame);
        let first_seq = window[0].seq.unwrap();
        let full_before: Vec<&Message> = full_msgs
            .iter()
            .copied()
            .filter(|m| m.seq.unwrap() < first_seq)
            .collect();
        let kept = client_state(&state);
        assert!(
            kept.len() > 50,
            "{}: {} state entries",
            case.input,
            kept.len()
        );
        assert_eq!(
            kept,
            client_state(&full_before),
            "{}: client state at the window's start",
            case.input
        );
        // Same messages per packet.
        let by_seq: HashMap<i64, &Message> =
            full_msgs.iter().map(|m| (m.seq.unwrap(), *m)).collect();
        let names = |m: &Message| -> Vec<&'static str> {
            m.ops
                .iter()
                .map(|o| match o.name() {
                    "svc_deltapacketentities" => "svc_packetentities",
                    n => n,
                })
                .filter(|n| *n != "svc_download")
                .collect()
        };
        for m in &window {
            let f = by_seq
                .get(&m.seq.unwrap())
                .unwrap_or_else(|| panic!("{}: sequence {:?} not in the input", case.input, m.seq));
            assert_eq!(names(m), names(f), "{}: sequence {:?}", case.input, m.seq);
        }
        // Same entity frames.
        let (cf, ff) = (frames(&window), frames(&full_msgs));
        let first_frame = *cf.keys().next().expect("an entity frame in the cut");
        assert!(
            cf.len() + 2
                >= window
                    .iter()
                    .filter(|m| has(m, |op| matches!(
                        op,
                        ServerOp::Packetentities(_) | ServerOp::Deltapacketentities(_)
                    )))
                    .count(),
            "{}: every entity update of the cut decodes",
            case.input
        );
        let mut compared = 0;
        for (seq, f) in &cf {
            if let Some(full) = ff.get(seq) {
                assert_eq!(f, full, "{}: entities at sequence {seq}", case.input);
                compared += 1;
            }
        }
        eprintln!(
            "{}: {} state messages, window from sequence {first_seq} (first frame {first_frame}), {compared} entity frames equal",
            case.input,
            state.iter().map(|m| m.ops.len()).sum::<usize>()
        );
        assert!(
            compared + 2 >= cf.len() && compared > 100,
            "{}: {compared} of {} frames compared",
            case.input,
            cf.len()
        );
    }
}

#[test]
fn qw_cut_of_an_empty_window_writes_nothing() {
    let dir = scratch("refuse");
    let d = dir.to_string_lossy().into_owned();
    // A window past the end: nothing written, exit 3, said why.
    for input in [
        "captures/qw-basic/client1-demo0.qwd",
        "captures/qw-basic/capture.pcapng",
        "captures/qw-basic/server-demo0.mvd",
    ] {
        let o = quakecap(&[
            "demo",
            "--from",
            "50:00",
            "--to",
            "51:00",
            "--out-dir",
            &d,
            input,
        ]);
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(3), "{input}: {e}");
        assert!(
            e.contains("the window holds no server packet"),
            "{input}: {e}"
        );
    }
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "nothing written"
    );
}

/// A QuakeWorld demo piped to `demo`: standard input has no name to send it down the cut
/// path, so it is refused with what to do instead (exit 3), never blamed on the demo.
#[test]
fn qw_demo_on_stdin_is_refused_with_what_to_do() {
    let input = root().join("captures/qw-basic/client1-demo0.qwd");
    let Ok(file) = std::fs::File::open(&input) else {
        skip::data(&input);
        return;
    };
    let dir = scratch("stdin");
    let out = dir.join("cut.qwd");
    let o = Command::new(env!("CARGO_BIN_EXE_quakecap"))
        .args(["demo", "--from", "0:10", "--to", "0:20", "-o"])
        .arg(&out)
        .arg("-")
        .stdin(file)
        .current_dir(root())
        .output()
        .expect("run quakecap");
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{e}");
    assert!(e.contains("cut from a named file"), "{e}");
    assert!(!out.exists(), "nothing written");
}

/// QuakeWorld game time (`g…`) is the time since the level's `svc_serverdata`: `decode`
/// keeps exactly the demo's blocks from 10 s to 12 s after the serverdata's block.
#[test]
fn qw_game_time_counts_from_the_serverdata() {
    let input = "captures/qw-basic/client1-demo0.qwd";
    let data = std::fs::read(root().join(input)).unwrap();
    let mut ev = Vec::new();
    qw::decode_demo_file(input, &data, &mut ev);
    let level = qw_common::messages(&ev)
        .find(|m| has(m, |op| matches!(op, ServerOp::Serverdata(_))))
        .unwrap()
        .time;
    let want: Vec<f64> = block_times(&data)
        .iter()
        .map(|(t, _)| f64::from(*t))
        .filter(|t| *t - level >= 10.0 && *t - level <= 12.0)
        .collect();
    let o = quakecap(&["decode", "--json", "--from", "g10", "--to", "g12", input]);
    assert_eq!(o.status.code(), Some(0));
    let got: Vec<f64> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v.get("time")?.as_f64())
        .collect();
    assert!(want.len() > 20, "{} blocks in the window", want.len());
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() < 1e-4, "{g} vs {w}");
    }
}

/// Entity frames in stream order, each rebuilt from the previous one (MVD deltas).
fn mvd_frames(msgs: &[&Message]) -> Vec<Vec<qw::entity::EntityState>> {
    let mut out: Vec<Vec<qw::entity::EntityState>> = Vec::new();
    for m in msgs {
        for op in &m.ops {
            let (pe, full) = match &op.kind {
                OpKind::Server(ServerOp::Packetentities(p)) => (p, true),
                OpKind::Server(ServerOp::Deltapacketentities(p)) => (p, false),
                _ => continue,
            };
            let mut f = if full {
                Vec::new()
            } else {
                out.last().cloned().unwrap_or_default()
            };
            f.retain(|e| {
                !pe.removed.contains(&e.num) && !pe.entities.iter().any(|n| n.num == e.num)
            });
            f.extend(pe.entities.iter().copied());
            f.sort_by_key(|e| e.num);
            out.push(f);
        }
    }
    out
}

fn mvd_players(msgs: &[&Message]) -> Vec<qw::playerinfo::PlayerInfo> {
    msgs.iter()
        .flat_map(|m| m.ops.iter())
        .filter_map(|op| match &op.kind {
            OpKind::Server(ServerOp::Playerinfo(p)) => Some(*p),
            _ => None,
        })
        .collect()
}

/// An .mvd cut decodes, from its first (re-encoded) entity frame on, to the whole demo's
/// frames at the same place, and every player's state to the whole demo's; its state
/// messages leave the client as the whole demo had it at the window's start.
#[test]
fn mvd_cut_holds_the_full_demo_frames() {
    let dir = scratch("mvd-state");
    for (i, case) in MVD_CASES.iter().enumerate() {
        let cut_ev = decoded_cut(case, &dir, &format!("cut{i}.mvd"));
        let data = std::fs::read(root().join(case.input)).unwrap();
        let full_ev = full_input(case);
        let cut_msgs: Vec<&Message> = qw_common::messages(&cut_ev).collect();
        let full_msgs: Vec<&Message> = qw_common::messages(&full_ev).collect();
        // The state blocks come at time 0, the window's first block has its own msec.
        let (state, window): (Vec<&Message>, Vec<&Message>) =
            cut_msgs.iter().partition(|m| m.time == 0.0);
        let base = mvd_base(case, &data);
        let (from, to) = (secs(case.from), secs(case.to));
        let start = mvd_blocks(&data)
            .iter()
            .position(|(t, msec, _)| *msec > 0 && t - base >= from && t - base <= to)
            .unwrap() as u64
            + 1;
        let full_before: Vec<&Message> = full_msgs
            .iter()
            .copied()
            .filter(|m| m.frame < start)
            .collect();
        let global = |s: BTreeMap<String, String>| -> BTreeMap<String, String> {
            s.into_iter()
                .filter(|(k, _)| !k.starts_with("stat "))
                .collect()
        };
        let kept = global(client_state(&state));
        assert!(
            kept.len() > 20,
            "{}: {} state entries",
            case.input,
            kept.len()
        );
        assert_eq!(
            kept,
            global(client_state(&full_before)),
            "{}: state at the window's start",
            case.input
        );
        let full_window: Vec<&Message> = full_msgs
            .iter()
            .copied()
            .filter(|m| m.frame >= start)
            .collect();
        // The whole demo's frames are rebuilt from its start; the window's are its tail.
        let cf = mvd_frames(&window);
        let ff = mvd_frames(&full_msgs);
        let ff = &ff[mvd_frames(&full_before).len()..];
        assert!(cf.len() > 50, "{}: {} frames", case.input, cf.len());
        let differ = (0..cf.len()).find(|&k| ff.get(k) != cf.get(k));
        assert_eq!(
            differ, None,
            "{}: first entity frame that differs",
            case.input
        );
        let (cp, fp) = (mvd_players(&window), mvd_players(&full_window));
        assert!(cp.len() > 50, "{}: {} player states", case.input, cp.len());
        let differ = (0..cp.len()).find(|&k| fp.get(k) != cp.get(k));
        assert_eq!(
            differ, None,
            "{}: first player state that differs",
            case.input
        );
        eprintln!(
            "{}: {} state messages, {} entity frames and {} player states equal",
            case.input,
            state.iter().map(|m| m.ops.len()).sum::<usize>(),
            cf.len(),
            cp.len()
        );
    }
}

/// A gzipped .qwd is cut like the plain file (the input is undone as any input is).
#[test]
fn gzipped_qwd_cuts_the_same() {
    use std::io::Write;
    let dir = scratch("gz");
    let plain = root().join("captures/qw-basic/client1-demo0.qwd");
    let gz = dir.join("client1-demo0.qwd.gz");
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(&std::fs::read(&plain).unwrap()).unwrap();
    std::fs::write(&gz, e.finish().unwrap()).unwrap();
    let mut outs = Vec::new();
    for (name, input) in [("a.qwd", plain), ("b.qwd", gz)] {
        let out = dir.join(name);
        let o = quakecap(&[
            "demo",
            "--from",
            "0:10",
            "--to",
            "0:20",
            "-o",
            &out.to_string_lossy(),
            &input.to_string_lossy(),
        ]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        outs.push(std::fs::read(&out).unwrap());
    }
    assert!(outs[0] == outs[1], "the two cuts differ");
}
