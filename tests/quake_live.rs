//! Quake Live demos (protocols 73, 90, 91) of `../shared/demos/ql` against Uber Demo Tools'
//! output for each (`udt/NAME.json`, a peer's answer): every intact demo decodes with no
//! error, the truncated one to its last whole record; kills, chat, the players and teams of
//! the gamestate equal UDT's; a cut decodes again and gives the same events in its window.
mod q3common;
mod skip;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use q3common::{decode, shared};
use quakecap::gameevent::{Detail, GameEvent, Kind};
use quakecap::pipeline::{self, Options};
use quakecap::sink::events::EventSink;

/// The Quake Live demos, sorted (none when the folder is missing: a visible skip, a
/// failure under CI).
fn demos() -> Vec<PathBuf> {
    let dir = shared("demos/ql");
    let Ok(rd) = std::fs::read_dir(&dir) else {
        skip::data(&dir);
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| pipeline::is_demo(p))
        .collect();
    v.sort();
    assert_eq!(v.len(), 14, "{v:?}");
    v
}

fn name_of(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

fn udt(p: &Path) -> serde_json::Value {
    let json = p
        .parent()
        .unwrap()
        .join("udt")
        .join(format!("{}.json", name_of(p)));
    let text = std::fs::read_to_string(&json)
        .unwrap_or_else(|e| panic!("{}: UDT's output: {e}", json.display()));
    serde_json::from_str(&text).unwrap()
}

fn events_of(path: &Path) -> Vec<GameEvent> {
    let mut sink = EventSink::new();
    let opts = Options {
        detail: quakecap::pipeline::Detail::Events,
        ..Default::default()
    };
    pipeline::run_demo(path, &opts, &mut sink).expect("demo");
    sink.events
}

/// A demo's events as server time in ms: a demo's event time is its snapshot's.
fn ms(e: &GameEvent) -> i64 {
    (e.time * 1000.0).round() as i64
}

/// UDT's cause of death as quakecap names it (`MOD_ROCKET_SPLASH` for "rocket splash").
fn means_word(ours: &str) -> String {
    let w = ours
        .trim_start_matches("MOD_")
        .to_ascii_lowercase()
        .replace('_', " ");
    match w.as_str() {
        // UDT's words where they are not the game's constant.
        "machinegun" => "machine gun".into(),
        "hmg" => "heavy machine gun".into(),
        "nail" => "nailgun".into(),
        "chaingun" => "chain gun".into(),
        "proximity mine" => "proximity mine".into(),
        "switch teams" => "team switch".into(),
        "telefrag" => "telefrag".into(),
        "target laser" => "target laser".into(),
        "trigger hurt" => "trigger hurt".into(),
        "falling" => "fall".into(),
        _ => w,
    }
}

type Bag = HashMap<String, i64>;

fn common(a: &Bag, b: &Bag) -> i64 {
    a.iter()
        .map(|(k, n)| (*n).min(b.get(k).copied().unwrap_or(0)))
        .sum()
}

fn total(a: &Bag) -> i64 {
    a.values().sum()
}

fn differences(a: &Bag, b: &Bag) -> Vec<String> {
    let mut v: Vec<String> = a
        .iter()
        .filter(|(k, n)| b.get(*k).copied().unwrap_or(0) < **n)
        .map(|(k, n)| format!("{k} ×{}", n - b.get(k).copied().unwrap_or(0)))
        .collect();
    v.sort();
    v
}

/// Every intact Quake Live demo decodes with no error; the truncated one decodes every
/// whole record and says where it was cut.
#[test]
fn every_quake_live_demo_decodes() {
    for p in demos() {
        let (report, msgs) = decode(&p, false);
        let errors: Vec<String> = report
            .flows
            .iter()
            .flat_map(|f| f.error_details.iter().map(|e| e.to_string()))
            .collect();
        let name = name_of(&p);
        assert!(msgs.len() > 300, "{name}: {} messages", msgs.len());
        if name == "truncated.dm_73" {
            assert_eq!(errors.len(), 1, "{name}: {errors:?}");
            assert!(errors[0].contains("truncated"), "{errors:?}");
            assert!(msgs.iter().all(|m| m.error.is_none()));
        } else {
            assert!(errors.is_empty(), "{name}: {errors:?}");
        }
    }
}

/// The `flows` table names a Quake Live demo's game `ql` (its JSON keeps `game` "q3", the
/// engine family, beside `protocol`), and a Quake 3 demo's `q3`.
#[test]
fn the_flows_table_says_quake_live() {
    let row = |p: &Path| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_quakecap"))
            .arg("flows")
            .arg(p)
            .output()
            .expect("flows");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let line = text
            .lines()
            .find(|l| l.starts_with("1 "))
            .unwrap_or("")
            .to_string();
        line.split_whitespace().nth(1).unwrap_or("").to_string()
    };
    let all = demos();
    if all.is_empty() {
        return; // said by `demos` (a failure under CI)
    }
    for p in all {
        assert_eq!(row(&p), "ql", "{}", name_of(&p));
    }
    let q3 =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/demos/q3/excellent_impressive.dm_68");
    assert!(q3.exists(), "{}", q3.display());
    assert_eq!(row(&q3), "q3");
}

/// A Quake Live demo read with no telling name (standard input), or renamed `.dm_68`, is
/// read by the protocol its first gamestate's serverinfo names (`protocol\\90`): the
/// same events as from its own name. They were read with protocol 68's tables before, and
/// gave garbage without an error (flag events at 00:00.000).
#[test]
fn quake_live_demos_are_known_by_their_content() {
    let opts = Options {
        detail: quakecap::pipeline::Detail::Events,
        ..Default::default()
    };
    let events = |data: &[u8], name: &str, protocol| {
        let mut sink = EventSink::new();
        pipeline::run_q3_demo_bytes(data, name.into(), protocol, &opts, &mut sink).expect("demo");
        sink.events
    };
    for p in demos() {
        let want = events_of(&p);
        let data = std::fs::read(&p).unwrap();
        let name = name_of(&p);
        assert_eq!(events(&data, "-", None), want, "{name} with no name");
        assert_eq!(
            events(&data, "x.dm_68", Some(68)),
            want,
            "{name} named .dm_68"
        );
        assert_eq!(
            pipeline::demo_protocol_of(Path::new("-"), &data),
            pipeline::demo_protocol(&p),
            "{name}"
        );
    }
    // The command line on standard input: the same lines as from the file.
    let p = shared("demos/ql/dm_91_duel.dm_91");
    if !p.exists() {
        return skip::data(&p);
    }
    let run = |args: &[&str], stdin: std::process::Stdio| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_quakecap"))
            .args(args)
            .stdin(stdin)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let file = run(
        &["events", "--json", p.to_str().unwrap()],
        std::process::Stdio::null(),
    );
    let piped = run(
        &["events", "--json", "-"],
        std::fs::File::open(&p).unwrap().into(),
    );
    assert!(file.contains("\"kind\":\"kill\""), "{file}");
    assert_eq!(piped, file);
}

/// Kills (server time, attacker, target, means of death) and chat lines (sender's client
/// number, team flag, clean text) equal UDT's as multisets, on every demo: recall and
/// precision 1 (the issue asks for 0.99).
///
/// Chat times differ by one snapshot, and quakecap is right: a server command travels in
/// the message before that message's snapshot, and the game shows it when it processes
/// that snapshot (cgame executes the commands up to the snapshot's `serverCommandSequence`);
/// UDT stamps it with the snapshot it had read before. So each chat line's time here is
/// the demo's next snapshot after UDT's.
///
/// Two more differences, where the demo shows UDT wrong:
/// * a kill whose means of death is 33 (`MOD_RAILGUN_HEADSHOT`) is an obituary entity like
///   any other, but not in UDT's table, and UDT drops an obituary it cannot name (3 kills);
/// * a clan tag holding a colon (`^1<|^7:)`): UDT cuts the line at that colon and reports
///   " Chefscout: tyy" where the line (`…Chef^1scout^7^7\x19: ^2tyy`) says "tyy" (6 lines).
#[test]
fn quake_live_kills_and_chat_equal_uber_demo_tools() {
    let (mut udt_n, mut ours_n, mut both_n) = (0, 0, 0);
    let mut report = Vec::new();
    let (mut headshots, mut colon_clans) = (0, 0);
    for p in demos() {
        let name = name_of(&p);
        let u = udt(&p);
        let snaps = snapshot_times(&p);
        let mut theirs: Bag = HashMap::new();
        for o in u["obituaries"].as_array().into_iter().flatten() {
            let key = format!(
                "kill {} {}→{} {}",
                o["serverTime"],
                o["attackerClientNumber"].as_i64().unwrap_or(1022),
                o["targetClientNumber"],
                o["causeOfDeath"].as_str().unwrap_or("?")
            );
            *theirs.entry(key).or_default() += 1;
        }
        let mut chat_times: HashMap<String, (Vec<i64>, Vec<i64>)> = HashMap::new();
        for c in u["chat"].as_array().into_iter().flatten() {
            let mut text = c["cleanMessage"].as_str().unwrap_or("");
            let command = c["command"].as_str().unwrap_or("");
            let sender = command.split('\u{19}').next().unwrap_or("");
            if sender.split_once(' ').is_some_and(|(_, s)| s.contains(':')) {
                colon_clans += 1;
                text = text.split_once(": ").map_or(text, |(_, t)| t);
            }
            let key = format!(
                "chat #{} team={} {}",
                c["clientNumber"], c["teamChat"], text
            );
            let t = c["serverTime"].as_i64().unwrap();
            chat_times.entry(key.clone()).or_default().0.push(t);
            *theirs.entry(key).or_default() += 1;
        }
        let mut ours: Bag = HashMap::new();
        for e in events_of(&p) {
            let key = match &e.detail {
                Detail::Kill(k) if k.means == "MOD_RAILGUN_HEADSHOT" => {
                    headshots += 1;
                    continue;
                }
                Detail::Kill(k) => format!(
                    "kill {} {}→{} {}",
                    ms(&e),
                    k.killer_num.unwrap_or(1022),
                    k.victim_num.unwrap_or(-1),
                    means_word(&k.means)
                ),
                Detail::Chat(c) if c.mode != "console" => {
                    let key = format!("chat #{} team={} {}", c.num.unwrap_or(-1), c.team, c.text);
                    chat_times.entry(key.clone()).or_default().1.push(ms(&e));
                    key
                }
                _ => continue,
            };
            *ours.entry(key).or_default() += 1;
        }
        for (key, (udt_t, our_t)) in &chat_times {
            for (u, o) in udt_t.iter().zip(our_t) {
                let next = snaps.iter().find(|&&t| t > *u);
                if next != Some(o) {
                    report.push(format!("{name}: {key}: UDT at {u}, ours at {o}"));
                }
            }
        }
        let both = common(&theirs, &ours);
        udt_n += total(&theirs);
        ours_n += total(&ours);
        both_n += both;
        if both != total(&theirs) || both != total(&ours) {
            report.push(format!(
                "{name}: UDT {} ours {} common {both}\n  only UDT: {:?}\n  only ours: {:?}",
                total(&theirs),
                total(&ours),
                differences(&theirs, &ours),
                differences(&ours, &theirs)
            ));
        }
    }
    eprintln!("UDT {udt_n}, ours {ours_n}, common {both_n}");

    assert!(udt_n > 800, "UDT gives {udt_n} kills and chat lines");
    assert!(report.is_empty(), "{}", report.join("\n"));
    assert_eq!((headshots, colon_clans), (3, 6));
}

/// The server times of a demo's snapshots, in order.
fn snapshot_times(p: &Path) -> Vec<i64> {
    let (_, msgs) = decode(p, false);
    msgs.iter()
        .filter_map(|m| m.server())
        .flat_map(|s| s.ops.iter())
        .filter_map(|op| match op {
            quakecap::q3::svc::ServerOp::Snapshot(s) => Some(i64::from(s.server_time)),
            _ => None,
        })
        .collect()
}

/// UDT's team word as quakecap's.
fn team_word(udt: &str) -> &str {
    match udt {
        "spectators" => "spectator",
        t => t,
    }
}

/// The players of each gamestate (client number, clean name, team) equal UDT's: those UDT
/// lists from the gamestate's start are quakecap's joins at the gamestate.
///
/// Protocol 91 puts the clan tag inside the name (`n\^7[^2MD^7] toxjq`, its `cn` empty);
/// UDT then takes the name to be what follows the last space or dot, which its own source
/// calls ambiguous ("MVPz Zorak" → "Zorak"). quakecap keeps the name the configstring
/// holds, as the game shows it: there UDT's name must be the end of quakecap's.
#[test]
fn quake_live_gamestate_players_equal_uber_demo_tools() {
    for p in demos() {
        let name = name_of(&p);
        let u = udt(&p);
        let gs = &u["gameStates"][0];
        let start = gs["startTime"].as_i64().unwrap();
        let mut theirs: Vec<(i64, String, String)> = gs["players"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|pl| pl["startTime"].as_i64() == Some(start))
            .map(|pl| {
                (
                    pl["clientNumber"].as_i64().unwrap(),
                    pl["cleanName"].as_str().unwrap().to_string(),
                    team_word(pl["team"].as_str().unwrap()).to_string(),
                )
            })
            .collect();
        theirs.sort();
        theirs.dedup();
        let events = events_of(&p);
        // The gamestate's joins come before its first match-flow or map restart event.
        let mut ours: Vec<(i64, String, String)> = events
            .iter()
            .skip(1)
            .take_while(|e| e.kind == Kind::Join)
            .filter_map(|e| match &e.detail {
                Detail::Player(pl) => Some((
                    i64::from(pl.num),
                    pl.name.clone(),
                    pl.team.clone().unwrap_or_default(),
                )),
                _ => None,
            })
            .collect();
        ours.sort();
        assert!(!theirs.is_empty(), "{name}");
        if name.ends_with(".dm_91") {
            for (o, t) in ours.iter_mut().zip(&theirs) {
                if o.1 != t.1 && o.1.ends_with(&format!(" {}", t.1)) {
                    o.1 = t.1.clone();
                }
            }
        }
        assert_eq!(ours, theirs, "{name}");
    }
}

/// Clan arena and red rover rounds, attack and defend turns: every round the demo's round
/// status configstring (661) says is on (`\round\N` without a countdown `time`; in attack
/// and defend `\turn\T\state\2` after the countdown of round N), as UDT's raw commands
/// list them, is a `match_start` "round N" ("round N turn T+1") event at that server time,
/// and there is no other. (12 rounds in clan arena, 2 in red rover, 8 turns in A&D.)
#[test]
fn quake_live_rounds_follow_the_round_status() {
    let mut checked = 0;
    for p in demos() {
        let name = name_of(&p);
        let u = udt(&p);
        let mut theirs: Vec<(i64, String)> = Vec::new();
        let mut countdown_round: Option<String> = None;
        for c in u["rawCommands"].as_array().into_iter().flatten() {
            let raw = c["rawCommand"].as_str().unwrap_or("");
            let Some(v) = raw.strip_prefix("cs 661 \"") else {
                continue;
            };
            let v = v.trim_end().trim_end_matches('"');
            let keys: Vec<&str> = v.trim_start_matches('\\').split('\\').collect();
            let get = |k: &str| keys.chunks(2).find(|c| c[0] == k).and_then(|c| c.get(1));
            let at = c["serverTime"].as_i64().unwrap();
            if get("state") == Some(&"2") {
                // Attack and defend: the turn starts; its round is the countdown's before it.
                if let (Some(n), Some(t)) = (countdown_round.take(), get("turn")) {
                    let t: u32 = t.parse().unwrap();
                    theirs.push((at, format!("round {n} turn {}", t + 1)));
                }
            } else if get("time").is_none() {
                if let Some(n) = get("round") {
                    theirs.push((at, format!("round {n}")));
                }
            } else {
                countdown_round = get("round").map(|n| n.to_string());
            }
        }
        theirs.dedup_by(|a, b| a.1 == b.1);
        let ours: Vec<(i64, String)> = events_of(&p)
            .iter()
            .filter_map(|e| match &e.detail {
                Detail::Match(m) if m.reason.starts_with("round ") => {
                    Some((ms(e), m.reason.clone()))
                }
                _ => None,
            })
            .collect();
        // A command's time is the snapshot before it (UDT); ours the one it came with.
        same_in_order(&name, &ours, &theirs, 0);
        checked += theirs.len();
    }
    assert!(checked >= 22, "{checked} rounds");
}

/// `ours` and `theirs` say the same things in the same order, ours at UDT's server time or
/// up to 100 ms (a snapshot) later, but for the first `untimed` (compared by value only).
fn same_in_order(name: &str, ours: &[(i64, String)], theirs: &[(i64, String)], untimed: usize) {
    let said = |v: &[(i64, String)]| v.iter().map(|x| x.1.clone()).collect::<Vec<_>>();
    assert_eq!(said(ours), said(theirs), "{name}");
    for (o, t) in ours.iter().zip(theirs).skip(untimed) {
        assert!((0..=100).contains(&(o.0 - t.0)), "{name}: {o:?} {t:?}");
    }
}

/// The score the game shows (`CS_SCORES1`/`CS_SCORES2`, and Quake Live's first and second
/// place names): every change UDT lists is a `scoreline` event with the same scores, team
/// mode and place holders (UDT's clean names; its -9999 and "none" for an empty place are
/// null), at the same server time or the snapshot after; so the final scores equal UDT's
/// last entry. UDT's first entry (the gamestate's) it times at the first snapshot; ours
/// comes with the gamestate, so the first is compared by value only.
#[test]
fn quake_live_scorelines_equal_uber_demo_tools() {
    let mut compared = 0;
    for p in demos() {
        let name = name_of(&p);
        let u = udt(&p);
        let theirs: Vec<(i64, String)> = u["scores"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| {
                let score = |k: &str| match s[k].as_i64() {
                    Some(-9999) | None => "-".to_string(),
                    Some(v) => v.to_string(),
                };
                let place = |k: &str| match s[k].as_str() {
                    Some("none") | None => "?".to_string(),
                    Some(n) => n.to_string(),
                };
                let line = if s["teamMode"].as_bool() == Some(true) {
                    format!("red {} : {} blue", score("score1"), score("score2"))
                } else {
                    format!(
                        "{} {} : {} {}",
                        place("cleanName1"),
                        score("score1"),
                        score("score2"),
                        place("cleanName2")
                    )
                };
                (s["serverTime"].as_i64().unwrap_or(0), line)
            })
            .collect();
        let ours: Vec<(i64, String)> = events_of(&p)
            .iter()
            .filter_map(|e| match &e.detail {
                Detail::Scoreline(s) => {
                    let score = |v: Option<i32>| v.map_or("-".to_string(), |v| v.to_string());
                    let place = |n: &Option<String>| n.clone().unwrap_or("?".into());
                    let line = if s.teams {
                        format!("red {} : {} blue", score(s.score1), score(s.score2))
                    } else {
                        format!(
                            "{} {} : {} {}",
                            place(&s.name1),
                            score(s.score1),
                            score(s.score2),
                            place(&s.name2)
                        )
                    };
                    Some((ms(e), line))
                }
                _ => None,
            })
            .collect();
        // UDT adds an entry for every message that sets a score configstring, also when
        // the message ends with the value it had (dm_90_ffa at 491875: `cs 6 "39"` then
        // `cs 6 "38"` in one message, a frag taken back): the score shown did not change,
        // no event.
        let mut theirs = theirs;
        theirs.dedup_by(|b, a| a.1 == b.1);
        assert!(!theirs.is_empty(), "{name}");
        same_in_order(&name, &ours, &theirs, 1);
        compared += theirs.len();
    }
    assert!(compared >= 100, "{compared} scorelines");
}

/// The final scoreboard: each demo whose match ends in it (UDT's match statistics have an
/// intermission) gives a final `score` event per player of the last scoreboard command
/// (`scores`, `scores_duel`, `scores_ca`, `scores_ctf`, `rrscores`: as many as its count
/// says, or more: the first scoreboard of the intermission is the final one, and a player
/// may leave during it), each with the score UDT's player statistics give that client
/// number (attack and defend's `adscores` holds team numbers only). UDT also lists players
/// who left before the end, from earlier scoreboards: not final scores. Demos cut before
/// their intermission give none.
#[test]
fn quake_live_final_scores_equal_uber_demo_tools() {
    let mut compared = 0;
    for p in demos() {
        let name = name_of(&p);
        let u = udt(&p);
        let ours: Vec<(i64, i64, i64)> = events_of(&p)
            .iter()
            .filter_map(|e| match &e.detail {
                Detail::Score(s) if s.is_final => {
                    Some((i64::from(s.num), i64::from(s.score), i64::from(s.ping)))
                }
                _ => None,
            })
            .collect();
        let stats = u["matchStats"].as_array().and_then(|m| m.last());
        let ended = stats.is_some_and(|m| m.get("intermissionEndTime").is_some());
        if !ended {
            assert!(
                ours.is_empty(),
                "{name}: final scores without an intermission"
            );
            continue;
        }
        // The last scoreboard command's player count (the count is the first argument;
        // `scores_ctf`'s comes after 34 team numbers).
        let (last, last_time) = u["rawCommands"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| Some((c["rawCommand"].as_str()?, c["serverTime"].as_i64())))
            .rfind(|(c, _)| {
                let w = c.split(' ').next().unwrap_or("");
                [
                    "scores",
                    "scores_duel",
                    "scores_ca",
                    "scores_ctf",
                    "rrscores",
                ]
                .contains(&w)
            })
            .unwrap_or_else(|| panic!("{name}: no scoreboard command"));
        let words: Vec<&str> = last.split_whitespace().collect();
        let at = if words[0] == "scores_ctf" { 35 } else { 1 };
        let count: usize = words[at].parse().unwrap();
        // The first scoreboard of the intermission; a player who leaves during it is not
        // on the later ones (red rover: 12 players, then 10).
        assert!(ours.len() >= count, "{name}: {ours:?}, {count} on the last");
        let players = stats.unwrap()["playerStats"].as_array().unwrap();
        // Our ping is the intermission's first scoreboard's, UDT's its last's: compared
        // where they are one (red rover sent three, at 3636475, 3639175 and 3640350).
        let one = last_time == stats.unwrap()["endTime"].as_i64();
        for (num, score, ping) in &ours {
            let theirs = players
                .iter()
                .find(|s| s["clientNumber"].as_i64() == Some(*num))
                .unwrap_or_else(|| panic!("{name}: client {num} not in UDT's statistics"));
            assert_eq!(
                theirs["score"].as_i64(),
                Some(*score),
                "{name}: client {num}"
            );
            if one {
                assert_eq!(theirs["ping"].as_i64(), Some(*ping), "{name}: client {num}");
            }
        }
        compared += ours.len();
    }
    assert!(compared >= 50, "{compared} final scores compared");
}

/// Capture the flag: each player's flag captures (Quake Live prints "RED TEAM CAPTURED the
/// flag! (NAME captured in 0:14.003)", naming the player with his clan tag) equal the
/// captures of UDT's player statistics where the demo holds the whole match, and every
/// flag event that names a player gives his client number.
#[test]
fn quake_live_flag_captures_equal_uber_demo_tools() {
    let mut compared = 0;
    for p in demos() {
        let name = name_of(&p);
        let u = udt(&p);
        let Some(stats) = u["matchStats"].as_array().and_then(|m| m.last()) else {
            continue;
        };
        // The server's statistics count the whole match: compared where the demo holds it
        // from its start (attack and defend's demo begins in its 7th round).
        let demo_start = u["gameStates"][0]["startTime"].as_i64().unwrap_or(i64::MAX);
        if stats["startTime"].as_i64().is_none_or(|t| t < demo_start) {
            continue;
        }
        let mut theirs: Vec<(i64, i64)> = stats["playerStats"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| Some((s["clientNumber"].as_i64()?, s["captures"].as_i64()?)))
            .filter(|(_, c)| *c > 0)
            .collect();
        let events = events_of(&p);
        let flags: Vec<_> = events
            .iter()
            .filter_map(|e| match &e.detail {
                Detail::Flag(f) => Some(f),
                _ => None,
            })
            .collect();
        if theirs.is_empty() && flags.is_empty() {
            continue;
        }
        let mut ours: HashMap<i64, i64> = HashMap::new();
        for f in &flags {
            if f.action == "captured" {
                *ours
                    .entry(i64::from(f.num.expect("a capture names its player")))
                    .or_default() += 1;
            }
            if f.action != "returned" || f.name.is_some() {
                assert!(f.num.is_some(), "{name}: {f:?}");
            }
        }
        let mut ours: Vec<(i64, i64)> = ours.into_iter().collect();
        ours.sort();
        theirs.sort();
        assert_eq!(ours, theirs, "{name}");
        compared += theirs.iter().map(|c| c.1).sum::<i64>();
    }
    assert!(compared >= 9, "{compared} captures compared");
}
