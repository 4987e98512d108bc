//! Issue 17, protocol 68: the key search of `q3::keysearch` on the server messages that follow
//! a cut of each stored protocol-68 capture. The truth is the handshake the cut misses: the
//! full capture's challenge (`flows --json`) and the client command each message
//! acknowledges (`decode --json`), from which the real key stream is computed. The search
//! must find that stream or give up; it must never return another one.
mod q3common;
mod skip;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use q3common::{stored_capture, PROTO68_CAPTURES};
use quakecap::capture::CaptureReader;
use quakecap::flow::Dir;
use quakecap::net::NetDecoder;
use quakecap::q3::midsession::c2ssearch::{self, ClientScrambled, First};
use quakecap::q3::midsession::keysearch::{self, Outcome, Scrambled};
use quakecap::q3::midsession::tailsearch;
use quakecap::q3::netchan::{Header, Protocol};
use quakecap::q3::scramble;
use serde_json::Value;

const CUTS: [u64; 4] = [10, 30, 50, 80];
/// Server messages after the cut given to the search (about a second of snapshots).
const WINDOW: usize = 24;
/// Body decodes per search: the search gives up within it (a debug build: ~0.3 s).
const BUDGET: usize = 20_000;

fn run(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_quakecap"))
        .args(args)
        .output()
        .expect("run quakecap");
    String::from_utf8(o.stdout).expect("utf-8")
}

/// A protocol-68 connection of the full capture: server, client, challenge, and its client
/// commands by sequence.
struct Conn {
    server: SocketAddr,
    client_ip: String,
    client_ports: Vec<u16>,
    challenge: i32,
    commands: HashMap<i64, String>,
    /// The server commands by sequence (what client messages acknowledge).
    server_commands: HashMap<i64, String>,
}

fn connections(cap: &Path) -> Vec<Conn> {
    let path = cap.to_string_lossy();
    let rows: Value = serde_json::from_str(&run(&["flows", "--json", &path])).expect("flows");
    let mut conns: HashMap<u64, Conn> = HashMap::new();
    for f in rows.as_array().into_iter().flatten() {
        if f["kind"] == "connection" && f["protocol"] == 68 {
            conns.insert(
                f["id"].as_u64().unwrap_or(0),
                Conn {
                    server: f["server"].as_str().unwrap_or("").parse().expect("server"),
                    client_ip: f["client_ip"].as_str().unwrap_or("").to_string(),
                    client_ports: f["client_ports"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|p| p.as_u64().map(|p| p as u16))
                        .collect(),
                    challenge: f["challenge"].as_i64().unwrap_or(0) as i32,
                    commands: HashMap::new(),
                    server_commands: HashMap::new(),
                },
            );
        }
    }
    for line in run(&["decode", "--json", &path]).lines() {
        let m: Value = serde_json::from_str(line).expect("json");
        let Some(c) = conns.get_mut(&m["flow"].as_u64().unwrap_or(0)) else {
            continue;
        };
        let to = if m["dir"] == "c2s" {
            &mut c.commands
        } else {
            &mut c.server_commands
        };
        for op in m["ops"].as_array().into_iter().flatten() {
            let command = op["op"] == "clientCommand" || op["op"] == "serverCommand";
            if let (true, Some(seq), Some(text)) =
                (command, op["seq"].as_i64(), op["text"].as_str())
            {
                to.entry(seq).or_insert_with(|| text.to_string());
            }
        }
    }
    let mut v: Vec<(u64, Conn)> = conns.into_iter().collect();
    v.sort_by_key(|(id, _)| *id);
    v.into_iter().map(|(_, c)| c).collect()
}

/// (frame, sequence, body) of every unfragmented sequenced message of `c` in direction
/// `dir`, and the capture's frame count.
fn messages(cap: &Path, c: &Conn, dir: Dir) -> (Vec<(u64, i32, Vec<u8>)>, u64) {
    let mut r = CaptureReader::open(cap).expect("open");
    let mut net = NetDecoder::new();
    let mut out = Vec::new();
    let mut frames = 0;
    while let Ok(Some(fr)) = r.next_frame() {
        frames += 1;
        let Ok(Some(d)) = net.decode(&fr) else {
            continue;
        };
        let (server, client) = match dir {
            Dir::S2c => (d.src, d.dst),
            Dir::C2s => (d.dst, d.src),
        };
        if server != c.server
            || client.ip().to_string() != c.client_ip
            || !c.client_ports.contains(&client.port())
            || d.payload.starts_with(&[0xff; 4])
        {
            continue;
        }
        let Ok(h) = Header::parse(d.payload, dir, Protocol::V68) else {
            continue;
        };
        if !h.fragmented {
            out.push((frames, h.sequence, h.payload.to_vec()));
        }
    }
    (out, frames)
}

/// (frame, sequence, body) of every unfragmented sequenced server message to `c`'s client,
/// and the capture's frame count.
fn server_messages(cap: &Path, c: &Conn) -> (Vec<(u64, i32, Vec<u8>)>, u64) {
    messages(cap, c, Dir::S2c)
}

/// The largest group of messages with one acknowledgement among the first [`WINDOW`]
/// after frame `skip`.
fn largest_group(msgs: &[(u64, i32, Vec<u8>)], skip: u64) -> Option<(i32, Vec<Scrambled<'_>>)> {
    let mut groups: HashMap<i32, Vec<Scrambled<'_>>> = HashMap::new();
    for (_, seq, body) in msgs.iter().filter(|m| m.0 > skip).take(WINDOW) {
        if let Some((ack, _)) = keysearch::reliable_ack(body) {
            groups
                .entry(ack)
                .or_default()
                .push(Scrambled { seq: *seq, body });
        }
    }
    groups.into_iter().max_by_key(|(a, g)| (g.len(), *a))
}

/// `f(capture, connection, cut %, ack, group)` for every cut of every connection of the
/// captures `names`: the largest group of server messages acknowledging one client command
/// among the first [`WINDOW`] after the cut.
fn for_each_cut_group(names: &[&str], mut f: impl FnMut(&str, &Conn, u64, i32, &[Scrambled<'_>])) {
    for &name in names {
        let Some(cap) = stored_capture(name) else {
            skip::data(&Path::new("captures").join(name));
            continue;
        };
        for c in connections(&cap) {
            let (msgs, frames) = server_messages(&cap, &c);
            for pct in CUTS {
                if let Some((ack, group)) = largest_group(&msgs, frames * pct / 100) {
                    f(name, &c, pct, ack, &group);
                }
            }
        }
    }
}

/// The real `u` of messages acknowledging `command` (see `keysearch`), `n` bytes.
fn true_stream(challenge: i32, command: &str, n: usize) -> Vec<u8> {
    let mut b = vec![0u8; scramble::S2C_START + n];
    scramble::s2c(&mut b, challenge, 0, command.as_bytes());
    b[scramble::S2C_START..].to_vec()
}

/// Every cut of every protocol-68 capture: the largest group of messages (one
/// acknowledgement) among the first [`WINDOW`] after the cut is searched. A stream found is
/// the real one; the real command's characters and the challenge byte follow from it when
/// the command repeats within the stream.
#[test]
fn key_search_finds_the_real_stream_or_nothing() {
    let mut found = 0;
    let mut tried = 0;
    // One capture: on every stored one the search runs out of budget (see the module).
    for_each_cut_group(&["q3-basic"], |name, c, pct, ack, group| {
        let t = Instant::now();
        let (outcome, work) = keysearch::search_s2c(group, BUDGET);
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        tried += 1;
        let command = c.commands.get(&i64::from(ack));
        let what = match &outcome {
            Outcome::Found(u) => {
                found += 1;
                let cmd = command.expect("the acknowledged command is in the full decode");
                assert_eq!(
                    u,
                    &true_stream(c.challenge, cmd, u.len()),
                    "{name} {pct}%: a stream that is not the real one"
                );
                let solved = keysearch::command_and_challenge(u, 4);
                if let Some((s, ch)) = &solved {
                    assert_eq!(ch, &(c.challenge as u8), "{name} {pct}%: challenge byte");
                    assert_eq!(s.as_slice(), cmd.as_bytes(), "{name} {pct}%: command");
                }
                format!(
                    "found {} bytes, command and challenge {}",
                    u.len(),
                    if solved.is_some() {
                        "solved"
                    } else {
                        "not repeated"
                    }
                )
            }
            other => {
                assert_ne!(
                    other,
                    &Outcome::None,
                    "{name} {pct}%: the real stream was rejected"
                );
                format!("{other:?}")
            }
        };
        eprintln!(
            "{name} {}:{} cut {pct}%: group of {} messages (ack {ack}: {:?}, lengths {:?}): {what}, {} decodes, {ms:.1} ms",
            c.server,
            c.client_ports[0],
            group.len(),
            command.map(|s| s.chars().take(30).collect::<String>()),
            group.iter().map(|m| m.body.len()).collect::<Vec<_>>(),
            work.decodes
        );
    });
    eprintln!("streams found: {found} of {tried}");
}

/// Every cut of every protocol-68 capture: under the real challenge and command (from the
/// handshake the cut misses) every message of the group decodes to its end, and no other
/// challenge byte does; with any guessable command that is not the real one, no challenge
/// byte decodes them (a wrong key never gives plausible messages).
#[test]
fn guessed_commands_give_the_challenge_or_nothing() {
    let mut solved = 0;
    let mut tried = 0;
    for_each_cut_group(&PROTO68_CAPTURES, |name, c, pct, ack, group| {
        // Before its first command a client has acknowledged none: the key string is
        // empty (the server's lastClientCommandString starts empty).
        let cmd = match c.commands.get(&i64::from(ack)) {
            Some(cmd) => cmd.as_str(),
            None if ack == 0 => "",
            None => panic!("{name} {pct}%: command {ack} not in the full decode"),
        };
        tried += 1;
        let (real, _) = keysearch::challenges_for(group, cmd.as_bytes());
        assert_eq!(
            real,
            vec![c.challenge as u8],
            "{name} {pct}%: the real key must decode every message, and only it"
        );
        let t = Instant::now();
        let mut decodes = 0;
        let mut guessed = None;
        for g in keysearch::GUESSABLE_COMMANDS {
            let (found, work) = keysearch::challenges_for(group, g.as_bytes());
            decodes += work.decodes;
            if g == cmd {
                assert_eq!(found, vec![c.challenge as u8], "{name} {pct}%: {g}");
                guessed = Some(g);
                solved += 1;
            } else {
                assert!(
                    found.is_empty(),
                    "{name} {pct}%: {g:?} taken for {cmd:?}: {found:?}"
                );
            }
        }
        eprintln!(
            "{name} {}:{} cut {pct}%: {} messages acknowledge {:?}: {}, {decodes} decodes, {:.1} ms",
            c.server,
            c.client_ports[0],
            group.len(),
            cmd.chars().take(30).collect::<String>(),
            match guessed {
                Some(g) => format!("challenge byte found from the guess {g:?}"),
                None => "not guessable, no guess decodes".to_string(),
            },
            t.elapsed().as_secs_f64() * 1000.0
        );
    });
    eprintln!("challenge bytes from guessed commands: {solved} of {tried} cuts");
}

/// Diagnostic (slow: `--ignored`): streams surviving each byte of the general search on
/// every cut's group, from nothing and from the real first 4/8/12 key bytes (see
/// `keysearch::survivors`).
#[test]
#[ignore]
fn survivors_per_byte() {
    for_each_cut_group(&PROTO68_CAPTURES, |name, c, pct, ack, group| {
        let cmd = c.commands.get(&i64::from(ack)).cloned().unwrap_or_default();
        let group = &group[..group.len().min(12)];
        let mut rows = vec![(0, keysearch::survivors(group, &[], 4, 200_000))];
        for known in [4, 8, 12] {
            let u = true_stream(c.challenge, &cmd, known);
            rows.push((known, keysearch::survivors(group, &u, known + 3, 100_000)));
        }
        eprintln!(
            "{name} {} cut {pct}% ({:?}): (key bytes given, survivors per byte) {rows:?}",
            c.client_ports[0],
            cmd.chars().take(20).collect::<String>()
        );
    });
}

/// `nextdl` runs checked by [`numbered_commands_give_the_block_and_challenge_or_nothing`].
const NEXTDL_RUNS: usize = 10;

/// Runs of at least 4 consecutive server messages acknowledging one client command, with
/// that command, over a whole connection.
fn runs<'m>(msgs: &'m [(u64, i32, Vec<u8>)]) -> Vec<(i32, Vec<Scrambled<'m>>)> {
    let mut out: Vec<(i32, Vec<Scrambled<'m>>)> = Vec::new();
    for (_, seq, body) in msgs {
        let Some((ack, _)) = keysearch::reliable_ack(body) else {
            continue;
        };
        let m = Scrambled { seq: *seq, body };
        match out.last_mut() {
            Some((a, run)) if *a == ack => run.push(m),
            _ => out.push((ack, vec![m])),
        }
    }
    out.retain(|(_, run)| run.len() >= 4);
    out
}

/// q3-download: each run of server messages acknowledging a `nextdl N` (the full capture's
/// client command; the first [`NEXTDL_RUNS`], to keep the test short) gives exactly
/// (N, challenge byte) from its first 4 messages, or nothing; runs acknowledging any other
/// command give nothing.
#[test]
fn numbered_commands_give_the_block_and_challenge_or_nothing() {
    let Some(cap) = stored_capture("q3-download") else {
        return skip::data(Path::new("captures/q3-download"));
    };
    let (mut found, mut tried, mut others) = (0, 0, 0);
    for c in connections(&cap) {
        let (msgs, _) = server_messages(&cap, &c);
        for (ack, run) in runs(&msgs) {
            let cmd = c.commands.get(&i64::from(ack)).map_or("", String::as_str);
            let next = cmd.strip_prefix("nextdl ");
            if next.is_some() && tried >= NEXTDL_RUNS {
                continue;
            }
            let (hits, _) = keysearch::numbered_for(&run[..4], "nextdl ");
            match next {
                Some(n) => {
                    tried += 1;
                    let want = (n.parse::<u32>().expect("a block number"), c.challenge as u8);
                    assert!(
                        hits.is_empty() || hits == vec![want],
                        "ack {ack} ({cmd}): {hits:?}"
                    );
                    found += usize::from(!hits.is_empty());
                }
                None => {
                    others += 1;
                    assert!(hits.is_empty(), "ack {ack} ({cmd:?}) taken for {hits:?}");
                }
            }
        }
    }
    eprintln!("nextdl runs solved: {found} of {tried}; {others} other runs, none taken");
    assert!(found > 0, "no nextdl run solved");
}

/// After a lock-on (challenge byte known): on every cut's group, the real command is the
/// one `command_for` picks among the guessable commands and it (when the messages reach
/// past its text), and without it no guess is taken.
#[test]
fn command_for_picks_the_real_command_or_nothing() {
    let (mut picked, mut tried) = (0, 0);
    for_each_cut_group(&PROTO68_CAPTURES, |name, c, pct, ack, group| {
        let cmd = c.commands.get(&i64::from(ack)).map_or("", String::as_str);
        let ch = c.challenge as u8;
        let wrong: Vec<&str> = keysearch::GUESSABLE_COMMANDS
            .into_iter()
            .filter(|g| *g != cmd)
            .collect();
        let (none, _) = keysearch::command_for(group, ch, wrong.iter().copied());
        assert_eq!(none, None, "{name} {pct}%: a wrong guess taken for {cmd:?}");
        let mut all = wrong.clone();
        all.push(cmd);
        let (got, _) = keysearch::command_for(group, ch, all);
        tried += 1;
        if let Some(got) = got {
            assert_eq!(got, cmd, "{name} {pct}%");
            picked += 1;
        }
    });
    eprintln!("real command picked after lock-on: {picked} of {tried} groups");
    assert!(picked > 0);
}

/// (frame, body) of every unfragmented sequenced client message of `c`.
fn client_messages(cap: &Path, c: &Conn) -> Vec<(u64, Vec<u8>)> {
    let (msgs, _) = messages(cap, c, Dir::C2s);
    msgs.into_iter().map(|(f, _, b)| (f, b)).collect()
}

/// The real `u` of client messages acknowledging server command `text` (see
/// `c2ssearch`), `n` bytes.
fn true_c2s_stream(challenge: i32, text: &str, n: usize) -> Vec<u8> {
    let mut b = vec![0u8; scramble::C2S_START + n + 1];
    scramble::c2s(&mut b, challenge, 0, 0, text.as_bytes());
    b[scramble::C2S_START..scramble::C2S_START + n].to_vec()
}

/// Client messages acknowledging one server command: the first `size` after each cut that
/// acknowledge what the first client message after the cut acknowledges (a command the
/// server sent before the cut), with that command's text.
fn for_each_cut_c2s_group(
    names: &[&str],
    size: usize,
    mut f: impl FnMut(&str, &Conn, u64, i32, &str, &[ClientScrambled<'_>]),
) {
    for &name in names {
        let Some(cap) = stored_capture(name) else {
            skip::data(&Path::new("captures").join(name));
            continue;
        };
        let (_, frames) = {
            let c = connections(&cap);
            let Some(first) = c.first() else { continue };
            server_messages(&cap, first)
        };
        for c in connections(&cap) {
            let msgs = client_messages(&cap, &c);
            for pct in CUTS {
                let skip = frames * pct / 100;
                let after: Vec<(i32, ClientScrambled<'_>)> = msgs
                    .iter()
                    .filter(|m| m.0 > skip)
                    .filter_map(|(_, b)| ClientScrambled::new(b))
                    .collect();
                let Some(&(ack, _)) = after.first() else {
                    continue;
                };
                let Some(text) = c.server_commands.get(&i64::from(ack)) else {
                    continue;
                };
                let group: Vec<ClientScrambled<'_>> = after
                    .iter()
                    .filter(|(a, m)| *a == ack && m.body.len() > scramble::C2S_START)
                    .map(|(_, m)| *m)
                    .take(size)
                    .collect();
                f(name, &c, pct, ack, text, &group);
            }
        }
    }
}

/// Diagnostic (`--ignored`): client-message candidates surviving each byte of the c2s
/// search on every cut's first group, with the challenge byte known (after a lock-on) and
/// unknown.
#[test]
#[ignore]
fn c2s_survivors_per_byte() {
    for size in [8, 16, 32] {
        for_each_cut_c2s_group(&PROTO68_CAPTURES, size, |name, c, pct, ack, text, group| {
            let known = c2ssearch::survivors(group, First::Challenge(c.challenge as u8), 24, 5000);
            let any = c2ssearch::survivors(group, First::Any, 12, 5000);
            eprintln!(
                "{name} {} cut {pct}% size {size} ({} msgs, lengths {:?}) ack {ack} {:?}: known ch {known:?}; any {any:?}",
                c.client_ports[0],
                group.len(),
                group.iter().map(|m| m.body.len()).collect::<Vec<_>>(),
                text.chars().take(24).collect::<String>(),
            );
        });
    }
}

/// A c2s search's answer checked against the truth: its stream is the real one (the full
/// capture's challenge and the text of the server command acknowledged), and so is its
/// whole text when it gives one. Says what was found.
fn checked_c2s_found(
    name: &str,
    c: &Conn,
    pct: u64,
    text: &str,
    ch: u8,
    f: &c2ssearch::Found,
) -> String {
    let u = &f.stream;
    assert_eq!(
        u,
        &true_c2s_stream(c.challenge, text, u.len()),
        "{name} {pct}%: a stream that is not the real one"
    );
    if let Some(t) = &f.text {
        assert_eq!(
            t.as_slice(),
            text.as_bytes(),
            "{name} {pct}%: the command's text"
        );
    }
    format!(
        "{} bytes ({:?}{})",
        u.len(),
        String::from_utf8_lossy(&c2ssearch::command_text(ch, u)),
        if f.text.is_some() {
            ", the whole text"
        } else {
            ""
        }
    )
}

/// One line per searched group of client messages.
#[allow(clippy::too_many_arguments)]
fn print_c2s_group(
    name: &str,
    c: &Conn,
    pct: u64,
    ack: i32,
    text: &str,
    group: &[ClientScrambled<'_>],
    what: &str,
    decodes: usize,
    ms: f64,
) {
    eprintln!(
        "{name} {} cut {pct}%: {} client messages acknowledge server command {ack} ({:?}), lengths {}..{}: {what}, {decodes} decodes, {ms:.1} ms",
        c.client_ports[0],
        group.len(),
        text.chars().take(30).collect::<String>(),
        group.iter().map(|m| m.body.len()).min().unwrap_or(0),
        group.iter().map(|m| m.body.len()).max().unwrap_or(0),
    );
}

/// Every cut of every protocol-68 capture: the c2s search on the first client messages
/// after the cut that acknowledge one server command (sent before the cut), with the
/// challenge byte known (as after a lock-on), finds the real key stream (from the full
/// capture's challenge and the text of that server command) or nothing; never another.
#[test]
fn c2s_search_finds_the_real_stream_or_nothing() {
    let limits = c2ssearch::Limits {
        beam: 2000,
        decodes: 40_000,
    };
    let (mut found, mut tried) = (0, 0);
    for_each_cut_c2s_group(&PROTO68_CAPTURES, 32, |name, c, pct, ack, text, group| {
        let t = Instant::now();
        let ch = c.challenge as u8;
        let (got, work) = c2ssearch::search_c2s(group, ch, None, limits);
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        tried += 1;
        let what = match &got {
            Some(f) => {
                found += 1;
                checked_c2s_found(name, c, pct, text, ch, f)
            }
            None => "nothing".to_string(),
        };
        print_c2s_group(name, c, pct, ack, text, group, &what, work.decodes, ms);
    });
    eprintln!("c2s streams found: {found} of {tried}");
    assert!(tried == 0 || found > 0, "no c2s stream found");
}

/// The same groups searched before any lock-on, the challenge byte unknown
/// (`lock_search`): what it finds is the real challenge byte and the real stream, or
/// nothing; never another. With [`LOCK_LIMITS`], the bounds the decoder uses.
#[test]
fn c2s_lock_search_finds_the_real_challenge_or_nothing() {
    let (mut found, mut tried) = (0, 0);
    for_each_cut_c2s_group(&PROTO68_CAPTURES, 32, |name, c, pct, ack, text, group| {
        let t = Instant::now();
        let c2ssearch::LockOutcome {
            found: got, work, ..
        } = c2ssearch::lock_search(group, c2ssearch::LOCK_LIMITS);
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        tried += 1;
        let what = match &got {
            Some((ch, f)) => {
                assert_eq!(
                    *ch, c.challenge as u8,
                    "{name} {pct}%: a wrong challenge byte"
                );
                found += 1;
                format!(
                    "challenge byte and {}",
                    checked_c2s_found(name, c, pct, text, *ch, f)
                )
            }
            None => "nothing".to_string(),
        };
        print_c2s_group(name, c, pct, ack, text, group, &what, work.decodes, ms);
    });
    eprintln!("c2s lock-on streams found: {found} of {tried}");
    assert!(tried == 0 || found > 0, "no c2s lock-on stream found");
}

/// The c2s search on groups that end with the first client messages carrying a command
/// (longer than the others) after each cut, with 1 to 4 of them (the client repeats a
/// command until the server acknowledges it): a stream found is the real one, and a whole
/// server command text found is the real text (from the full capture's decode).
#[test]
fn c2s_search_on_command_messages() {
    let mut whole = 0;
    let limits = c2ssearch::Limits {
        beam: 2000,
        decodes: 40_000,
    };
    for_each_cut_c2s_group(&PROTO68_CAPTURES, 400, |name, c, pct, ack, text, group| {
        let short = group
            .iter()
            .take(8)
            .map(|m| m.body.len())
            .min()
            .unwrap_or(0);
        let long: Vec<usize> = (0..group.len())
            .filter(|&i| group[i].body.len() >= short + 8)
            .collect();
        for copies in 1..=4 {
            let Some(&j) = long.get(copies - 1) else {
                break;
            };
            let g = &group[(j + 1).saturating_sub(32)..=j];
            let t = Instant::now();
            let ch = c.challenge as u8;
            let (got, work) = c2ssearch::search_c2s(g, ch, None, limits);
            if let Some(t) = got.as_ref().and_then(|f| f.text.as_ref()) {
                assert_eq!(t.as_slice(), text.as_bytes(), "{name} {pct}%: wrong text");
                whole += 1;
            }
            let ok = got
                .as_ref()
                .is_none_or(|f| f.stream == true_c2s_stream(c.challenge, text, f.stream.len()));
            assert!(ok, "{name} {pct}%: wrong stream");
            eprintln!(
                "{name} {} cut {pct}% ack {ack}: {copies} long ({:?}): {:?}, {} decodes, {:.1} ms",
                c.client_ports[0],
                long.iter()
                    .take(copies)
                    .map(|&i| group[i].body.len())
                    .collect::<Vec<_>>(),
                got.map(|f| (
                    f.stream.len(),
                    String::from_utf8_lossy(
                        &f.text
                            .unwrap_or_else(|| c2ssearch::command_text(ch, &f.stream))
                    )
                    .into_owned()
                )),
                work.decodes,
                t.elapsed().as_secs_f64() * 1000.0
            );
        }
    });
    eprintln!("whole server command texts found: {whole}");
    assert!(whole > 0, "no whole text found");
}

/// The characters a command keys with (`%` and bytes above 127 key as `.`), one period.
fn key_text(text: &str) -> Vec<u8> {
    text.bytes()
        .map(|c| if c > 127 || c == b'%' { b'.' } else { c })
        .collect()
}

/// Two texts key alike: the same character at every offset of the stream.
fn keys_alike(a: &[u8], b: &[u8]) -> bool {
    !a.is_empty()
        && !b.is_empty()
        && (0..2 * a.len().max(b.len())).all(|k| a[k % a.len()] == b[k % b.len()])
}

/// Every run of server messages acknowledging one client command, on every protocol-68
/// capture: the texts `tailsearch` reads off the messages' last bytes (with the real
/// challenge byte), checked by `command_for` on the run's first 8 messages, are the real
/// command (from the full decode) or nothing. A run of at least 40 message lengths whose
/// command is at most 32 characters long shows every character in some message end: it is
/// read. The same with the challenge byte unknown (the read before a lock-on): the one
/// (byte, text) pair that decodes the 8 messages is the real byte and command, or none is
/// taken.
#[test]
fn tail_search_reads_the_real_command_or_nothing() {
    let (mut read, mut runs_seen, mut due, mut due_read) = (0, 0, 0, 0);
    let (mut read_any, mut due_read_any) = (0, 0);
    for &name in &PROTO68_CAPTURES {
        let Some(cap) = stored_capture(name) else {
            skip::data(&Path::new("captures").join(name));
            continue;
        };
        for c in connections(&cap) {
            let (msgs, _) = server_messages(&cap, &c);
            for (ack, run) in runs(&msgs) {
                let Some(cmd) = c.commands.get(&i64::from(ack)).filter(|t| !t.is_empty()) else {
                    continue;
                };
                runs_seen += 1;
                let ch = c.challenge as u8;
                let mut tails = tailsearch::Tails::default();
                for m in &run {
                    tails.push(m.seq, m.body);
                }
                let texts = tails.texts(ch);
                let group = &run[..run.len().min(8)];
                let (got, _) = keysearch::command_for(group, ch, texts.iter().map(String::as_str));
                let truth = key_text(cmd);
                if let Some(got) = got {
                    assert!(
                        keys_alike(got.as_bytes(), &truth),
                        "{name} ack {ack}: read {got:?} for {cmd:?}"
                    );
                    read += 1;
                }
                // Before a lock-on the challenge byte is unknown: it is solved with the text
                // (`texts_any`), and a read is taken only when one (byte, text) pair
                // decodes the group, which must then be the real byte and text.
                let hits: Vec<(u8, String)> = tails
                    .texts_any()
                    .into_iter()
                    .filter(|(c, t)| keysearch::command_for(group, *c, [t.as_str()]).0.is_some())
                    .collect();
                let got_any = match hits.as_slice() {
                    [(c, t)] => {
                        assert_eq!(*c, ch, "{name} ack {ack}: a wrong challenge byte read");
                        assert!(
                            keys_alike(t.as_bytes(), &truth),
                            "{name} ack {ack}: read {t:?} for {cmd:?} (challenge unknown)"
                        );
                        read_any += 1;
                        true
                    }
                    _ => false,
                };
                let mut lengths: Vec<usize> = run.iter().map(|m| m.body.len()).collect();
                lengths.sort_unstable();
                lengths.dedup();
                let must = lengths.len() >= 40 && truth.len() <= 32;
                due += usize::from(must);
                due_read += usize::from(must && got.is_some());
                due_read_any += usize::from(must && got_any);
                eprintln!(
                    "{name} ack {ack} {:?}: {} messages, {} lengths: read {got:?}{}",
                    cmd.chars().take(40).collect::<String>(),
                    run.len(),
                    lengths.len(),
                    if must { " (must be read)" } else { "" }
                );
            }
        }
    }
    eprintln!(
        "commands read off message ends: {read} of {runs_seen} runs; {due_read} of the {due} with 40 lengths and at most 32 characters"
    );
    eprintln!("with the challenge byte unknown: {read_any} runs read; {due_read_any} of the {due}");
    assert!(due > 0, "no run with 40 message lengths");
    assert_eq!(due_read, due, "runs with 40 message lengths not read");
    assert_eq!(
        due_read_any, due,
        "runs with 40 message lengths not read with the challenge byte unknown"
    );
}
