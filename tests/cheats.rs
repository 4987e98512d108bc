//! `quakecap cheats` against the lab's truth: the aimbot proxy's own log of every usercmd it
//! rewrote (`aimbot.jsonl`), the player's own side of the proxy (`client1-side.pcapng`), the
//! relay's log of every datagram it held (`impair.jsonl`), and every other stored capture
//! and real player's demo as a negative.
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

mod q3common;
mod skip;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn shared(rel: &str) -> Option<PathBuf> {
    skip::data_at(root().join("../shared").join(rel))
}

/// `cheats --json` over `inputs`: one object per player.
fn cheats(inputs: &[&Path]) -> Vec<Value> {
    let o = Command::new(env!("CARGO_BIN_EXE_quakecap"))
        .arg("cheats")
        .arg("--json")
        .args(inputs)
        .output()
        .expect("run quakecap");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).expect("cheats json");
    v.as_array().expect("an array").clone()
}

fn player<'a>(rows: &'a [Value], name: &str) -> &'a Value {
    rows.iter()
        .find(|r| r["player"] == name)
        .unwrap_or_else(|| panic!("no {name} in {rows:?}"))
}

/// The server times of the usercmds the proxy rewrote.
fn rewrites(dir: &Path) -> Vec<i64> {
    std::fs::read_to_string(dir.join("aimbot.jsonl"))
        .expect("aimbot.jsonl")
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).expect("jsonl")["server_time"]
                .as_i64()
                .unwrap()
        })
        .collect()
}

/// The exact aimbot (`q3-aimbot`): the player behind the proxy is `likely` from the server's
/// side and from his own demo (the server's snapshots of his rewritten view), `clean` from
/// his own side of the proxy (what he really sent); the clean client is `clean`; the aim
/// moments fall where the proxy rewrote (precision at least 0.9).
#[test]
fn the_exact_aimbot_is_found_where_it_aimed() {
    let Some(dir) = shared("captures/q3-aimbot") else {
        return;
    };
    let rewritten = rewrites(&dir);
    let server = cheats(&[&dir.join("capture.pcapng")]);
    let bot = player(&server, "LabPlayer1");
    assert_eq!(bot["verdict"], "likely", "{bot}");
    assert_eq!(bot["signals"]["aim_from"], "commands");
    assert_eq!(player(&server, "LabPlayer2")["verdict"], "clean");
    let moments: Vec<&Value> = bot["moments"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["kind"] == "aim")
        .collect();
    assert!(moments.len() >= 10, "{}", moments.len());
    let right = moments
        .iter()
        .filter(|m| {
            let (a, b) = (
                m["game_start"].as_i64().unwrap(),
                m["game_end"].as_i64().unwrap(),
            );
            rewritten.iter().any(|t| (a - 50..=b + 50).contains(t))
        })
        .count();
    let precision = right as f64 / moments.len() as f64;
    eprintln!(
        "aim moments: {right} of {} where the proxy rewrote",
        moments.len()
    );
    assert!(precision >= 0.9, "precision {precision}");
    // The moments name whom the bot aimed at: most of its kills (the game events, held to
    // server.log by the events tests) fall in a moment on their victim.
    let out = Command::new(env!("CARGO_BIN_EXE_quakecap"))
        .args(["events", "--json"])
        .arg(dir.join("capture.pcapng"))
        .output()
        .expect("events");
    let kills: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("event"))
        .filter(|e| e["kind"] == "kill" && e["killer"] == "LabPlayer1")
        .collect();
    let aimed = kills
        .iter()
        .filter(|k| {
            let t = k["time"].as_f64().unwrap();
            moments.iter().any(|m| {
                m["target"] == k["victim"]
                    && m["start"].as_f64().unwrap() - 1.0 <= t
                    && t <= m["end"].as_f64().unwrap() + 1.0
            })
        })
        .count();
    eprintln!(
        "kills in a moment on their victim: {aimed} of {}",
        kills.len()
    );
    assert!(
        kills.len() >= 10 && aimed * 10 >= kills.len() * 7,
        "{aimed} of {}",
        kills.len()
    );
    let demo = cheats(&[&dir.join("client1-demo0.dm_68")]);
    let d = player(&demo, "LabPlayer1");
    assert_eq!(d["verdict"], "likely", "{d}");
    assert_eq!(d["signals"]["aim_from"], "snapshots");
    assert!(d["flow"].is_null());
    let own = cheats(&[&dir.join("client1-side.pcapng")]);
    assert_eq!(player(&own, "LabPlayer1")["verdict"], "clean");
}

/// The smoothed aimbot (`q3-aimbot-smooth`: 60 % of the way, ±0.55° of noise) never locks
/// (its rewritten commands stay 3–11° off the target), but it moves the view in one
/// command: where it takes over, the fired command jumps 8–20° toward the target while the
/// commands either side turn little, and no hand does that at 60 commands a second. From
/// the server's capture he is `likely` on snaps alone, each snap a command the proxy
/// rewrote (`aimbot.jsonl`); LabPlayer2, and LabPlayer1's own side of the proxy (the same
/// script without the bot), have none. His demo has no commands: snaps are not judged
/// there (a demo's snapshot interval holds real players' flicks whole).
#[test]
fn the_smoothed_aimbot_is_found() {
    let Some(dir) = shared("captures/q3-aimbot-smooth") else {
        return;
    };
    let rewritten = rewrites(&dir);
    let server = cheats(&[&dir.join("capture.pcapng")]);
    let bot = player(&server, "LabPlayer1");
    assert_eq!(bot["verdict"], "likely", "{bot}");
    assert_eq!(bot["signals"]["aim_locks"], 0, "{bot}");
    snaps_where_rewritten(bot, &rewritten, 4);
    let clean = player(&server, "LabPlayer2");
    assert_eq!(clean["verdict"], "clean", "{clean}");
    assert_eq!(clean["signals"]["snaps"], 0);
    let own = cheats(&[&dir.join("client1-side.pcapng")]);
    let own = player(&own, "LabPlayer1");
    assert_eq!(own["verdict"], "clean", "{own}");
    assert_eq!(own["signals"]["snaps"], 0);
    let demo = cheats(&[&dir.join("client1-demo0.dm_68")]);
    assert!(player(&demo, "LabPlayer1")["signals"]["snaps"].is_null());
}

/// The exact aimbot snaps too, each snap on a command the proxy rewrote.
#[test]
fn the_exact_aimbot_snaps_where_it_aimed() {
    let Some(dir) = shared("captures/q3-aimbot") else {
        return;
    };
    let server = cheats(&[&dir.join("capture.pcapng")]);
    snaps_where_rewritten(player(&server, "LabPlayer1"), &rewrites(&dir), 10);
    assert_eq!(player(&server, "LabPlayer2")["signals"]["snaps"], 0);
}

/// `bot` has at least `least` snaps, as many as its `signals.snaps` says, and at least 90 %
/// of them end on a command the proxy rewrote (`rewritten`: their server times).
fn snaps_where_rewritten(bot: &Value, rewritten: &[i64], least: usize) {
    let snaps = moments(bot, "snap");
    assert!(snaps.len() >= least, "{snaps:?}");
    assert_eq!(bot["signals"]["snaps"], snaps.len());
    let right = snaps
        .iter()
        .filter(|m| rewritten.contains(&m["game_end"].as_i64().unwrap()))
        .count();
    eprintln!("snaps: {right} of {} on a rewritten command", snaps.len());
    assert!(right * 10 >= snaps.len() * 9, "{right} of {}", snaps.len());
}

/// A QuakeWorld lag switch (`captures/qw-lagswitch`: labplayer1's upstream held 3, 4 and
/// 3 s by the relay, its SETTINGS says): from the server's side each hold is his commands
/// standing and then coming at once, counted as a hold of no direction (`other_holds`):
/// mvdsv answers only what it hears, so whether he kept receiving no packet tells, and no
/// verdict is given on it. The clients' side, and labplayer2, show none.
#[test]
fn a_quakeworld_lag_switch_is_a_hold_of_no_direction() {
    let dir = root().join("captures/qw-lagswitch");
    let settings = std::fs::read_to_string(dir.join("SETTINGS")).expect("SETTINGS");
    assert_eq!(settings.matches("--switch").count(), 3, "{settings}");
    let server = cheats(&[&dir.join("server-side.pcapng")]);
    let held = player(&server, "labplayer1");
    assert_eq!(held["signals"]["other_holds"], 3, "{held}");
    assert_eq!(held["verdict"], "clean");
    assert!(held["signals"]["upstream_holds"].is_null());
    assert_eq!(player(&server, "labplayer2")["signals"]["other_holds"], 0);
    let clients = cheats(&[&dir.join("capture.pcapng")]);
    for p in ["labplayer1", "labplayer2"] {
        assert_eq!(player(&clients, p)["signals"]["other_holds"], 0, "{p}");
    }
}

/// Every session folder of the repository's `captures/` and of `../shared/captures` (a
/// missing folder is reported: a failure under CI).
fn sessions() -> Vec<PathBuf> {
    let mut v = Vec::new();
    for base in [root().join("captures"), root().join("../shared/captures")] {
        let Ok(rd) = std::fs::read_dir(&base) else {
            skip::data(&base);
            continue;
        };
        v.extend(rd.filter_map(|e| e.ok()).map(|e| e.path()));
    }
    v
}

/// A fast-clock lab session of the repository (`captures/NAME`), its SETTINGS checked to
/// name client 1's faked clock at `rate`.
fn faked_session(name: &str, rate: &str) -> PathBuf {
    let dir = root().join("captures").join(name);
    let settings = std::fs::read_to_string(dir.join("SETTINGS")).expect("SETTINGS");
    let faked = format!("FASTCLOCK: client 1 under faketime -f '+0 x{rate}'");
    assert!(settings.contains(&faked), "{settings}");
    dir
}

/// A player's moments of `kind`.
fn moments<'a>(p: &'a Value, kind: &str) -> Vec<&'a Value> {
    p["moments"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["kind"] == kind)
        .collect()
}

/// A client clock running fast, as a speed hack makes it (`captures/q3-fastclock-1.3` and
/// `-1.1`: LabPlayer1's ioquake3 under libfaketime at 1.3× and 1.1×, as each session's
/// SETTINGS says). From the capture he is `likely` for timing: his commands run ahead of
/// the snapshots they acknowledge in every judged window, one moment spans them. From his
/// own demo too (each snapshot's `commandTime` past its server time). LabPlayer2 is `clean`
/// from both, his clock behind the snapshots as an engine keeps it.
#[test]
fn a_fast_clock_is_found_from_the_capture_and_the_demo() {
    for rate in ["1.3", "1.1"] {
        let dir = faked_session(&format!("q3-fastclock-{rate}"), rate);
        let cap = dir.join("capture.pcapng");
        let rows = cheats(&[&cap]);
        let fast = player(&rows, "LabPlayer1");
        let s = &fast["signals"];
        assert_eq!(fast["verdict"], "likely", "{rate}: {fast}");
        assert_eq!(s["clock_from"], "messages");
        assert!(s["clock_lead_ms"].as_i64().unwrap() > 50, "{rate}: {s}");
        assert!(
            s["fast_clock_windows"].as_u64().unwrap() >= 3,
            "{rate}: {s}"
        );
        let timing = moments(fast, "timing");
        assert_eq!(timing.len(), 1, "{rate}: {timing:?}");
        let first = first_packet_time(&cap);
        let (start, end) = (
            timing[0]["start"].as_f64().unwrap(),
            timing[0]["end"].as_f64().unwrap(),
        );
        assert!(
            start - first < 10.0,
            "{rate}: starts {:.1} s in",
            start - first
        );
        assert!(end - start > 12.0, "{rate}: {:.1} s long", end - start);
        let clean = player(&rows, "LabPlayer2");
        assert_eq!(clean["verdict"], "clean", "{rate}: {clean}");
        assert_eq!(clean["signals"]["fast_clock_windows"], 0);
        assert!(clean["signals"]["clock_lead_ms"].as_i64().unwrap() < 0);
        let own = cheats(&[&dir.join("client1-demo0.dm_68")]);
        let d = player(&own, "LabPlayer1");
        assert_eq!(d["verdict"], "likely", "{rate}: {d}");
        assert_eq!(d["signals"]["clock_from"], "snapshots");
        let other = cheats(&[&dir.join("client2-demo0.dm_68")]);
        assert_eq!(player(&other, "LabPlayer2")["verdict"], "clean");
    }
}

/// QuakeWorld: a fast clock from the commands' `msec` (`captures/qw-fastclock-1.3` and
/// `-1.1`: the ezQuake client under libfaketime at the rate its SETTINGS names): the player
/// is `likely` for timing, his commands' msec add up to that rate of the capture's clock
/// (within 0.03), one moment spans his fast windows. Every other QuakeWorld capture's player
/// is `clean`, his rate at most 1.03 (less where commands were lost).
#[test]
fn a_quakeworld_fast_clock_is_found_from_the_commands() {
    for rate in ["1.3", "1.1"] {
        let dir = faked_session(&format!("qw-fastclock-{rate}"), rate);
        let rows = cheats(&[&dir.join("capture.pcapng")]);
        assert_eq!(rows.len(), 1, "{rows:?}");
        let p = &rows[0];
        assert_eq!(p["player"], "labplayer1");
        assert_eq!(p["verdict"], "likely", "{rate}: {p}");
        let s = &p["signals"];
        assert_eq!(s["clock_from"], "msec");
        let got = s["clock_rate"].as_f64().unwrap();
        let want: f64 = rate.parse().unwrap();
        assert!((got - want).abs() <= 0.03, "{rate}: rate {got}");
        let timing = moments(p, "timing");
        assert_eq!(timing.len(), 1, "{rate}: {timing:?}");
        assert!(
            timing[0]["game_start"].is_null(),
            "no server time in QuakeWorld commands"
        );
    }
    let mut others = 0;
    for session in sessions() {
        let name = session.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with("qw-") || name.starts_with("qw-fastclock") {
            continue;
        }
        for side in ["capture.pcapng", "server-side.pcapng"] {
            let cap = session.join(side);
            if !cap.exists() {
                continue;
            }
            for p in cheats(&[&cap]) {
                others += 1;
                assert_eq!(p["verdict"], "clean", "{}: {p}", cap.display());
                let r = p["signals"]["clock_rate"].as_f64().unwrap();
                assert!(r <= 1.03, "{}: rate {r}", cap.display());
            }
        }
    }
    assert!(others >= 10, "{others} QuakeWorld players judged");
}

/// The lag switch (`q3-lagswitch`): from both sides of the relay the switching player is
/// `likely` for timing with each held window found (start within 0.5 s, length within 1 s
/// of the relay's log), the clean client `clean`.
#[test]
fn the_lag_switch_is_found_with_each_window() {
    let Some(dir) = shared("captures/q3-lagswitch") else {
        return;
    };
    let windows = held_windows(&dir);
    assert_eq!(windows.len(), 3, "{windows:?}");
    for side in ["capture.pcapng", "server-side.pcapng"] {
        let cap = dir.join(side);
        let rows = cheats(&[&cap]);
        let sw = player(&rows, "LabPlayer1");
        assert_eq!(sw["verdict"], "likely", "{side}: {sw}");
        assert_eq!(sw["signals"]["upstream_holds"], 3, "{side}: {sw}");
        assert_eq!(player(&rows, "LabPlayer2")["verdict"], "clean", "{side}");
        let found: Vec<(f64, f64)> = sw["moments"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["kind"] == "timing")
            .map(|m| (m["start"].as_f64().unwrap(), m["end"].as_f64().unwrap()))
            .collect();
        assert_eq!(found.len(), 3, "{side}: {found:?}");
        let first = first_packet_time(&cap);
        for ((s, e), (ts, te)) in found.iter().zip(&windows) {
            let (ts, te) = (first + ts, first + te);
            assert!(
                (s - ts).abs() <= 0.5,
                "{side}: start {s:.2} against {ts:.2}"
            );
            assert!(
                ((e - s) - (te - ts)).abs() <= 1.0,
                "{side}: length {:.2} against {:.2}",
                e - s,
                te - ts
            );
        }
    }
}

/// The relay's held windows, in seconds after the capture's first packet: from the first
/// held datagram to the release of the last (its receive time plus its delay). The relay's
/// clock starts with the first datagram it logs, which is the capture's first packet.
fn held_windows(dir: &Path) -> Vec<(f64, f64)> {
    let text = std::fs::read_to_string(dir.join("impair.jsonl")).expect("impair.jsonl");
    let rows: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let t0 = rows[0]["t"].as_f64().unwrap();
    let mut windows: Vec<(f64, f64)> = Vec::new();
    for r in rows.iter().filter(|r| r["held"] == true) {
        let t = r["t"].as_f64().unwrap() - t0;
        let release = t + r["delays"][0].as_f64().unwrap() / 1000.0;
        match windows.last_mut() {
            Some(w) if t - w.1 < 0.5 => w.1 = w.1.max(release),
            _ => windows.push((t, release)),
        }
    }
    windows
}

fn first_packet_time(cap: &Path) -> f64 {
    let f = std::fs::File::open(cap).expect("capture");
    let mut r = quakecap::capture::CaptureReader::new(std::io::BufReader::new(f)).expect("reader");
    let frame = r.next_frame().expect("frame").expect("a first frame");
    frame.ts_ns as f64 / 1e9
}

/// No player of any other stored capture or real player's demo is above `clean`: the lab's
/// scripted sessions (both capture sides, every client demo), the real Quake 3 and Quake
/// Live demos (each named: Quake Live's player configstrings start at 529, not 544) and
/// every player of the real QuakeWorld MVDs.
/// The known cheaters of the aimbot and lag-switch sessions are the only exceptions.
#[test]
fn nobody_else_is_above_clean() {
    let mut inputs: Vec<PathBuf> = Vec::new();
    for dir in [
        root().join("captures"),
        root().join("../shared/captures"),
        root().join("../shared/demos/q3"),
        root().join("../shared/demos/ql"),
        root().join("../shared/demos/qw"),
    ] {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            skip::data(&dir);
            continue;
        };
        inputs.push(dir);
        drop(rd);
    }
    let refs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
    let rows = cheats(&refs);
    let cheater = |r: &Value| {
        let file = r["file"].as_str().unwrap_or("");
        let bot = file.contains("q3-aimbot")
            && (file.ends_with("capture.pcapng") || file.ends_with("client1-demo0.dm_68"));
        let switch = file.contains("q3-lagswitch") && file.ends_with(".pcapng");
        let fast = file.contains("q3-fastclock") && !file.ends_with("client2-demo0.dm_68");
        let qw_fast = file.contains("qw-fastclock") && file.ends_with(".pcapng");
        (bot || switch || fast) && r["player"] == "LabPlayer1"
            || qw_fast && r["player"] == "labplayer1"
    };
    let judged: Vec<&Value> = rows.iter().filter(|r| !cheater(r)).collect();
    let above: Vec<&&Value> = judged.iter().filter(|r| r["verdict"] != "clean").collect();
    eprintln!(
        "{} players judged clean of {}",
        judged.len() - above.len(),
        judged.len()
    );
    assert!(above.is_empty(), "{above:#?}");
    assert!(judged.len() >= 80, "{}", judged.len());
    let demos = judged.iter().filter(|r| r["flow"].is_null()).count();
    assert!(demos >= 20, "{demos}");
    let quake_live: Vec<&&Value> = judged
        .iter()
        .filter(|r| {
            let f = r["file"].as_str().unwrap_or("");
            [".dm_73", ".dm_90", ".dm_91"]
                .iter()
                .any(|e| f.ends_with(e))
        })
        .collect();
    assert!(
        quake_live.len() >= 14,
        "{} Quake Live demos judged",
        quake_live.len()
    );
    for r in &quake_live {
        let player = r["player"].as_str().unwrap_or("");
        assert!(!player.is_empty() && !player.starts_with('#'), "{r}");
    }
    // Every player of the real QuakeWorld MVDs is judged (an .mvd carries everyone's view).
    let mvd_players = judged
        .iter()
        .filter(|r| r["file"].as_str().is_some_and(|f| f.ends_with(".mvd")))
        .filter(|r| r["signals"]["aim_judged"].as_u64().unwrap_or(0) > 1000)
        .count();
    assert!(mvd_players >= 14, "{mvd_players}");
}

/// `Detail::Frames` (what `cheats` decodes with) gives every snapshot the same frame as the
/// full decode, and every client message the same usercmds, on a capture with two players
/// and on a demo.
#[test]
fn frames_detail_gives_the_full_decodes_frames_and_usercmds() {
    use quakecap::event::Event;
    use quakecap::pipeline::{Detail, Options, Sink};
    use quakecap::q3::clc::ClientOp;
    use quakecap::q3::svc::ServerOp;

    #[derive(Default)]
    struct Keep(Vec<String>);
    impl Sink for Keep {
        fn event(&mut self, e: Event<'_>) -> std::io::Result<()> {
            if let Event::Q3(m) = e {
                if let Some(s) = m.server() {
                    for op in &s.ops {
                        if let ServerOp::Snapshot(sn) = op {
                            self.0
                                .push(format!("{} {} {:?}", m.flow, sn.valid, sn.frame));
                        }
                    }
                }
                if let Some(c) = m.client() {
                    for op in &c.ops {
                        if let ClientOp::Move { cmds, .. } = op {
                            self.0
                                .push(format!("{} {} {:?}", m.flow, c.message_ack, cmds));
                        }
                    }
                }
            }
            Ok(())
        }
    }
    let (Some(cap), Some(demo)) = (
        shared("captures/q3-aimbot/capture.pcapng"),
        shared("captures/q3-aimbot/client1-demo0.dm_68"),
    ) else {
        return;
    };
    let run = |path: &Path, detail| {
        let opts = Options {
            detail,
            ..Default::default()
        };
        let mut k = Keep::default();
        if path.extension().is_some_and(|e| e == "pcapng") {
            quakecap::pipeline::run_capture(path, &opts, &mut k, &mut |_| {}).expect("capture");
        } else {
            quakecap::pipeline::run_demo(path, &opts, &mut k).expect("demo");
        }
        k.0
    };
    for path in [&cap, &demo] {
        let (full, frames) = (run(path, Detail::Full), run(path, Detail::Frames));
        assert!(full.len() > 1000, "{}", full.len());
        assert!(full == frames, "{}: the two decodes differ", path.display());
    }
}

/// A capture begun mid-session (the frames after the first 30 % and 60 %): the aimbot
/// player's fired commands are judged once the echo of his view gives `delta_angles` (the
/// playerstate sends them only at a respawn), and he is `likely` from the server's side and
/// `clean` from his own side of the proxy; the lag switch's holds after the cut are found.
#[test]
fn cuts_judge_the_commands_after_the_cut() {
    let (Some(bot), Some(switch)) = (
        shared("captures/q3-aimbot"),
        shared("captures/q3-lagswitch"),
    ) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("quakecap-cheats-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch");
    let cut_of = |src: &Path, pct: u64| {
        let out = dir.join(format!(
            "{}-{pct}.pcap",
            src.file_stem().unwrap().to_string_lossy()
        ));
        q3common::cut(src, q3common::frame_count(src) * pct / 100, &out);
        out
    };
    for pct in [30, 60] {
        let server = cheats(&[&cut_of(&bot.join("capture.pcapng"), pct)]);
        let likely: Vec<&Value> = server.iter().filter(|r| r["verdict"] == "likely").collect();
        assert_eq!(likely.len(), 1, "{pct}%: {server:?}");
        assert_eq!(likely[0]["signals"]["aim_from"], "commands", "{pct}%");
        let own = cheats(&[&cut_of(&bot.join("client1-side.pcapng"), pct)]);
        assert!(
            own.iter().all(|r| r["verdict"] == "clean"),
            "{pct}%: {own:?}"
        );
    }
    // 30 %: two of the three holds come after the cut.
    let rows = cheats(&[&cut_of(&switch.join("server-side.pcapng"), 30)]);
    let held: Vec<&Value> = rows.iter().filter(|r| r["verdict"] == "likely").collect();
    assert_eq!(held.len(), 1, "{rows:?}");
    assert_eq!(held[0]["signals"]["upstream_holds"], 2);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The cuts at 30 % and 60 % of every stored capture (where the mid-session guesses apply:
/// `delta_angles` from the echo, an unknown `pm_type` or view height) call nobody but the
/// cheater of the aimbot, lag-switch and fast-clock sessions of both games (one player
/// each, unnamed after a cut; the fast clock's in the 30 % cuts).
#[test]
fn cuts_call_nobody_else() {
    let dir = std::env::temp_dir().join(format!("quakecap-cheats-cuts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch");
    let mut made = 0;
    for session in sessions() {
        let Ok(files) = std::fs::read_dir(&session) else {
            continue;
        };
        for f in files.filter_map(|e| e.ok()).map(|e| e.path()) {
            if f.extension().is_none_or(|e| e != "pcapng") {
                continue;
            }
            let n = q3common::frame_count(&f);
            for pct in [30, 60] {
                let name = format!(
                    "{}-{}-{}-{pct}.pcap",
                    session.components().count(),
                    session.file_name().unwrap().to_string_lossy(),
                    f.file_stem().unwrap().to_string_lossy()
                );
                q3common::cut(&f, n * pct / 100, &dir.join(name));
                made += 1;
            }
        }
    }
    let rows = cheats(&[&dir]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(made >= 60, "{made}");
    let mut by_file: std::collections::BTreeMap<&str, Vec<&Value>> = Default::default();
    for r in &rows {
        by_file
            .entry(r["file"].as_str().unwrap())
            .or_default()
            .push(r);
    }
    for (file, players) in by_file {
        let called = players.iter().filter(|r| r["verdict"] != "clean").count();
        let cheater_session = (file.contains("q3-aimbot-") && file.contains("-capture-"))
            || file.contains("q3-lagswitch")
            || file.contains("q3-fastclock")
            || file.contains("qw-fastclock");
        assert!(
            called <= usize::from(cheater_session),
            "{file}: {players:#?}"
        );
        // The fast clock needs no gamestate: a cut calls its player too where a judged
        // window is left (the 60 % cuts keep 4–5 s of his connection: less than one).
        if file.contains("fastclock") && file.ends_with("-30.pcap") {
            assert_eq!(called, 1, "{file}: {players:#?}");
        }
    }
}

/// `--player` keeps one player's row (colour codes and case ignored); naming nobody exits 3
/// (nothing matched), as the other commands do.
#[test]
fn player_selects_and_nobody_exits_3() {
    let Some(cap) = shared("captures/q3-aimbot/capture.pcapng") else {
        return;
    };
    let run = |who: &str| {
        Command::new(env!("CARGO_BIN_EXE_quakecap"))
            .args(["cheats", "--json", "--player", who])
            .arg(&cap)
            .output()
            .expect("run")
    };
    let one = run("labplayer2");
    assert!(one.status.success());
    let rows: Vec<Value> = serde_json::from_slice(&one.stdout).expect("json");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["player"], "LabPlayer2");
    assert_eq!(run("nobody").status.code(), Some(3));
}

/// `report --cheats`: each player's summary says the `cheats` verdict (first when not
/// clean, with its first moment at its wall-clock time and server time), and the "Cheat
/// signals" section lists every player's verdict and the moments `cheats --json` gives;
/// a report without `--cheats` has none of it.
#[test]
fn report_says_the_verdicts_and_moments() {
    for (session, file) in [
        ("q3-aimbot", "capture.pcapng"),
        ("q3-lagswitch", "server-side.pcapng"),
    ] {
        let Some(cap) = shared(&format!("captures/{session}/{file}")) else {
            continue;
        };
        let rows = cheats(&[&cap]);
        let out = std::env::temp_dir().join(format!(
            "quakecap-report-cheats-{}-{session}.html",
            std::process::id()
        ));
        let report = |extra: &[&str]| {
            let o = Command::new(env!("CARGO_BIN_EXE_quakecap"))
                .args(["report", "-t", "utc", "-o"])
                .arg(&out)
                .args(extra)
                .arg(&cap)
                .output()
                .expect("run quakecap");
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            std::fs::read_to_string(&out).unwrap()
        };
        let plain = report(&[]);
        assert!(!plain.contains("data-kind=\"cheat\""), "{session}");
        assert!(!plain.contains("Cheat signals"), "{session}");
        let page = report(&["--cheats"]);
        let _ = std::fs::remove_file(&out);
        for r in &rows {
            let name = r["player"].as_str().unwrap();
            let verdict = r["verdict"].as_str().unwrap();
            // The player's summary at the top: its findings list, the cheat line in it.
            let at = page
                .find(&format!("data-name=\"{name}\""))
                .unwrap_or_else(|| panic!("{session}: no summary of {name}"));
            let list = &page[at..at + page[at..].find("</ul>").unwrap()];
            let line = format!("<li data-kind=\"cheat\" data-verdict=\"{verdict}\">");
            let pos = list
                .find(&line)
                .unwrap_or_else(|| panic!("{session}: {name}'s summary lacks {line}"));
            if verdict != "clean" {
                // Said first, with the first moment's server time as `demo` takes it.
                assert_eq!(pos, list.find("<li").unwrap(), "{session}: {name}");
                let m = &r["moments"][0];
                let g = format!("g{:.3}", m["game_start"].as_f64().unwrap() / 1000.0);
                assert!(list[pos..].contains(&g), "{session}: {name}: {g}");
            }
            // The section's row and the moments listed.
            let row = format!("<tr data-verdict=\"{verdict}\">");
            assert!(page.contains(&row), "{session}: {name}");
            if verdict != "clean" {
                let n = r["moments"].as_array().unwrap().len();
                let listed = page
                    .split("<details class=\"moments\">")
                    .find(|d| d.contains(&format!("<summary>{name}: {n} moments")))
                    .unwrap_or_else(|| panic!("{session}: {name}'s {n} moments"));
                let items = listed[..listed.find("</details>").unwrap()]
                    .matches("<li data-kind=")
                    .count();
                assert_eq!(items, n, "{session}: {name}");
            }
        }
        assert!(rows.iter().any(|r| r["verdict"] == "likely"), "{session}");
    }
}
