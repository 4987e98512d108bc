//! Network quality (`quakecap net`) judged against the truth of what the path did: the
//! impairing relay's per-datagram log (`impair.jsonl`), its settings (`SETTINGS`) and the
//! servers' own pings (`server.log` status tables, `quakestat.txt`). Every expected number is
//! computed here from those stored files.
use std::path::{Path, PathBuf};

mod skip;

use quakecap::analysis::net::{NetQuality, NetSink};
use quakecap::pipeline::{self, Options};

fn dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("captures")
        .join(name)
}

fn net(path: &Path) -> Vec<NetQuality> {
    let opts = Options {
        samples: true,
        threads: Some(1),
        ..Options::default()
    };
    let mut sink = NetSink::new(1.0);
    pipeline::run_capture(path, &opts, &mut sink, &mut |_| {}).expect("capture reads");
    sink.reports
}

/// One relay decision.
struct Line {
    t: f64,
    up: bool,
    client: String,
    dropped: bool,
    delay: Option<f64>,
}

fn relay_log(d: &Path) -> Vec<Line> {
    let text = std::fs::read_to_string(d.join("impair.jsonl")).expect("impair.jsonl");
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| Line {
            t: v["t"].as_f64().unwrap_or(0.0),
            up: v["dir"] == "up",
            client: v["client"].as_str().unwrap_or("").to_string(),
            dropped: v["fate"] == "dropped",
            delay: v["delays"].get(0).and_then(|x| x.as_f64()),
        })
        .collect()
}

/// What the relay did to one client's datagrams of one direction within a time window.
struct Truth {
    loss: f64,
    /// Mean absolute difference of successive one-way delays (ms).
    jitter: f64,
}

fn truth(log: &[Line], client: &str, up: bool, from: f64, to: f64) -> Truth {
    let lines: Vec<&Line> = log
        .iter()
        .filter(|l| l.client == client && l.up == up && l.t >= from && l.t <= to)
        .collect();
    let lost = lines.iter().filter(|l| l.dropped).count();
    let delays: Vec<f64> = lines.iter().filter_map(|l| l.delay).collect();
    let diffs: Vec<f64> = delays.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    Truth {
        loss: lost as f64 / lines.len().max(1) as f64,
        jitter: diffs.iter().sum::<f64>() / diffs.len().max(1) as f64,
    }
}

/// Relay time of a capture time: the relay's first datagram is the client-side capture's
/// first packet.
fn relay_offset(d: &Path, log: &[Line]) -> f64 {
    let r = pipeline::run_capture(
        &d.join("capture.pcapng"),
        &Options::default(),
        &mut NoSink,
        &mut |_| {},
    )
    .expect("capture");
    let first = r
        .flows
        .iter()
        .map(|f| f.first_time)
        .fold(f64::INFINITY, f64::min);
    first - log.first().map_or(0.0, |l| l.t)
}

struct NoSink;
impl pipeline::Sink for NoSink {}

/// The relay's `--spike START:LEN:DELAY[:LOSS]` settings (relay time).
struct Spike {
    start: f64,
    len: f64,
    delay: f64,
    loss: f64,
}

fn spikes(d: &Path) -> Vec<Spike> {
    let s = std::fs::read_to_string(d.join("SETTINGS")).expect("SETTINGS");
    let words: Vec<&str> = s.split_whitespace().collect();
    words
        .windows(2)
        .filter(|w| w[0] == "--spike")
        .map(|w| {
            let v: Vec<f64> = w[1]
                .trim_matches('\'')
                .split(':')
                .filter_map(|x| x.parse().ok())
                .collect();
            Spike {
                start: v[0],
                len: v[1],
                delay: v.get(2).copied().unwrap_or(0.0),
                loss: v.get(3).copied().unwrap_or(0.0),
            }
        })
        .collect()
}

/// The relay's `--switch START:LEN:DIR:PORT` settings (relay time): the client of UDP port
/// PORT had every datagram it sent (`up`) or was sent (`down`) held for LEN seconds.
fn switches(d: &Path) -> Vec<(f64, f64, &'static str, String)> {
    let s = std::fs::read_to_string(d.join("SETTINGS")).expect("SETTINGS");
    let words: Vec<&str> = s.split_whitespace().collect();
    words
        .windows(2)
        .filter(|w| w[0] == "--switch")
        .filter_map(|w| {
            let v: Vec<&str> = w[1].trim_matches('\'').split(':').collect();
            let dir = match v.get(2) {
                Some(&"up") => "c2s",
                Some(&"down") => "s2c",
                _ => return None,
            };
            (v.len() == 4).then(|| {
                (
                    v[0].parse().unwrap_or(f64::NAN),
                    v[1].parse().unwrap_or(f64::NAN),
                    dir,
                    v[3].to_string(),
                )
            })
        })
        .collect()
}

/// Each lag-switch window of this client that fell while he played is a ping lag event of
/// the direction it held (`c2s`: the client's upstream, `s2c`: its downstream), starting
/// within 1 s of the window and as long (cut short where the player left during it); the
/// other client shows none. A QuakeWorld server answers only what it hears: at the
/// clients' side its silence through an upstream hold is a loss either way too, and the
/// event has no direction.
fn check_switches(r: &NetQuality, d: &Path, log: &[Line], off: f64, client: &str) {
    let unknown_up = r.game == "qw" && serde_json::to_value(r.vantage).unwrap() == "client";
    let all = switches(d);
    // The player's last datagram, by the relay's log.
    let left = log
        .iter()
        .filter(|l| l.up && l.client == client)
        .map(|l| l.t + off)
        .fold(f64::NEG_INFINITY, f64::max);
    // A window counts where the player was in the game: his client sent at least 20
    // datagrams in the second before it (a client loading the map sends a few in 5 s).
    let playing = |a: f64| {
        log.iter()
            .filter(|l| l.up && l.client == client && (a - 1.0..a).contains(&(l.t + off)))
            .count()
            >= 20
    };
    for dir in ["c2s", "s2c"] {
        let mine: Vec<&(f64, f64, &str, String)> = all
            .iter()
            .filter(|s| s.2 == dir && client.ends_with(&format!(":{}", s.3)))
            .filter(|s| playing(s.0 + off))
            .collect();
        let want = (dir == "s2c" || !unknown_up).then_some(dir);
        let found: Vec<&quakecap::analysis::net::report::LagEvent> = r
            .lag_events
            .iter()
            .filter(|e| e.dir.map(|d| d.as_str()) == want && e.kind == "ping")
            .collect();
        for (start, len, ..) in &mine {
            let a = start + off;
            let e = found.iter().find(|e| (e.start - a).abs() <= 1.0);
            println!(
                "  lag switch {dir} at {:.2}+{len}s: {:?}",
                a - r.first_time,
                e.map(|e| (e.start - r.first_time, e.end - e.start))
            );
            let e = e.unwrap_or_else(|| panic!("lag switch found as a {want:?} lag event"));
            let len = len.min(left - a);
            assert!((e.end - e.start - len).abs() <= 1.0, "switch length");
        }
        if all.iter().any(|s| s.2 == dir) && want.is_some() {
            assert_eq!(found.len(), mine.len(), "{dir} lag events: {found:?}");
        }
    }
}

/// Median of the server's own ping of `name`: Quake 3 `status` tables, QuakeWorld quakestat
/// (None when the session never asked the server for one). A Quake 3 `status` row of 999 is
/// no measurement: ioq3's SV_CalcPings gives 999 to a client not yet active (still loading
/// or downloading the map), so those rows are left out.
fn server_ping_of(d: &Path, name: &str) -> Option<f64> {
    let mut v: Vec<f64> = Vec::new();
    if let Ok(log) = std::fs::read_to_string(d.join("server.log")) {
        for l in log.lines() {
            let w: Vec<&str> = l.split_whitespace().collect();
            if w.len() >= 4 && w[3] == name && w[0].parse::<u32>().is_ok() {
                v.extend(w[2].parse::<f64>().ok().filter(|&p| p != 999.0));
            }
        }
    }
    if let Ok(qs) = std::fs::read_to_string(d.join("quakestat.txt")) {
        for l in qs
            .lines()
            .filter(|l| l.split_whitespace().nth(5) == Some(name))
        {
            let ping = l.split('@').nth(1).and_then(|x| x.split("ms").next());
            v.extend(ping.and_then(|p| p.parse::<f64>().ok()));
        }
    }
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

/// The relay's client address of a connection seen at the clients' side.
fn relay_client(c: &NetQuality, client_side: &[quakecap::flow::FlowSummary]) -> String {
    let f = client_side.iter().find(|f| f.id == c.flow).expect("flow");
    format!("{}:{}", f.client_ip, f.client_ports[0])
}

fn flows_of(path: &Path) -> Vec<quakecap::flow::FlowSummary> {
    pipeline::run_capture(path, &Options::default(), &mut NoSink, &mut |_| {})
        .expect("capture")
        .flows
}

/// Which loss each vantage can know: (c2s, s2c).
fn knowable(game: &str, vantage: &str) -> (bool, bool) {
    match (game, vantage) {
        ("q3", "client") => (false, true),
        ("q3", "server") => (true, true),
        ("qw", "server") => (true, false),
        _ => (false, false),
    }
}

fn check_session(name: &str) {
    check_session_with(name, true);
}

/// `jitter`: also hold the jitter to the relay's (q3-lagswitch: not yet, see the test).
fn check_session_with(name: &str, jitter: bool) {
    check_session_at(&dir(name), name, jitter, false);
}

/// [`check_session_with`] on the relay session in folder `d` (named `name` in the output).
/// `soft`: a failed check is returned (what, session, file, player, why) instead of ending
/// the test, and the next one runs.
fn check_session_at(d: &Path, name: &str, jitter: bool, soft: bool) -> Vec<String> {
    let d = d.to_path_buf();
    let mut failed: Vec<String> = Vec::new();
    let mut attempt = |label: &str, f: &dyn Fn()| {
        if !soft {
            f();
        } else if let Err(e) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
            let why = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failed.push(format!("{label}: {why}"));
        }
    };
    let log = relay_log(&d);
    let off = relay_offset(&d, &log);
    let client_flows = flows_of(&d.join("capture.pcapng"));
    let near_clients = net(&d.join("capture.pcapng"));
    assert!(!near_clients.is_empty());
    for (file, expect_vantage) in [
        ("capture.pcapng", "client"),
        ("server-side.pcapng", "server"),
    ] {
        let rows = net(&d.join(file));
        attempt(&format!("{name}/{file}"), &|| {
            assert_eq!(rows.len(), near_clients.len(), "{name}/{file}: connections")
        });
        for r in &rows {
            let who = r.name.clone().unwrap_or_default();
            // The same player at the clients' side gives the relay's client address.
            let Some(cs) = near_clients.iter().find(|c| c.name == r.name) else {
                attempt(&format!("{name}/{file} {who}"), &|| {
                    panic!("same player at both sides")
                });
                continue;
            };
            let client = relay_client(cs, &client_flows);
            let (from, to) = (cs.first_time - off, cs.last_time - off);
            let vantage = serde_json::to_value(r.vantage).unwrap();
            println!(
                "{name}/{file} flow {} {who} ({client}): vantage {vantage}",
                r.flow
            );
            let at = |what: &str| format!("{name}/{file} {who} {what}");
            attempt(&at("vantage"), &|| {
                assert_eq!(vantage, expect_vantage, "{name}/{file} {who}: vantage")
            });
            attempt(&at("loss"), &|| {
                check_loss(r, &log, &client, (from, to), off)
            });
            if jitter {
                attempt(&at("jitter"), &|| check_jitter(r, &log, &client, from, to));
            }
            attempt(&at("ping"), &|| check_ping(r, &d, &who));
            attempt(&at("spikes"), &|| check_spikes(r, &d, off));
            attempt(&at("switches"), &|| {
                check_switches(r, &d, &log, off, &client)
            });
        }
    }
    failed
}

fn check_loss(r: &NetQuality, log: &[Line], client: &str, (from, to): (f64, f64), off: f64) {
    let v = serde_json::to_value(r.vantage).unwrap();
    let (kc, ks) = knowable(r.game, v.as_str().unwrap_or(""));
    // At the server's side the loss of server packets is judged on snapshot messages
    // (the client's commands say which it must have had, see the guide): the gamestate and
    // an in-band download before the snapshots stream are not judged, so the relay's truth
    // starts with the stream too (q3-held-download: 685 download messages, 20 s, before
    // it). The stream: the first of 5 intervals in a row with snapshots in each, on the
    // relay's clock.
    let judged_from = match (r.loss_method.s2c, r.game) {
        (Some("acks"), "q3") => r
            .series
            .windows(5)
            .find(|w| w.iter().all(|i| i.snapshots > 0))
            .map_or(from, |w| from.max(w[0].start - off)),
        _ => from,
    };
    for (up, got, known) in [(true, r.loss.c2s, kc), (false, r.loss.s2c, ks)] {
        let t = truth(log, client, up, if up { from } else { judged_from }, to);
        println!(
            "  loss {}: ours {:?} truth {:.4}",
            if up { "c2s" } else { "s2c" },
            got,
            t.loss
        );
        assert_eq!(got.is_some(), known, "loss known exactly where it can be");
        if let Some(g) = got {
            assert!((g - t.loss).abs() <= 0.015, "loss {g} vs truth {}", t.loss);
        }
    }
    // QuakeWorld's client side tells neither direction alone, only both together (mvdsv
    // answers each client packet with one numbered like it): what ezQuake shows as loss.
    let rt_known = r.game == "qw" && v == "client";
    assert_eq!(
        r.round_trip_loss.is_some(),
        rt_known,
        "round-trip loss where it can be"
    );
    if let Some(g) = r.round_trip_loss {
        let (up, down) = (
            truth(log, client, true, from, to).loss,
            truth(log, client, false, from, to).loss,
        );
        let t = 1.0 - (1.0 - up) * (1.0 - down);
        println!("  round-trip loss: ours {g:.4} truth {t:.4} (up {up:.4}, down {down:.4})");
        assert!((g - t).abs() <= 0.015, "round-trip loss {g} vs truth {t}");
    }
}

fn check_jitter(r: &NetQuality, log: &[Line], client: &str, from: f64, to: f64) {
    for (up, got) in [(true, r.jitter.c2s), (false, r.jitter.s2c)] {
        let t = truth(log, client, up, from, to);
        println!(
            "  jitter {}: ours {:?} truth {:.2} ms",
            if up { "c2s" } else { "s2c" },
            got,
            t.jitter
        );
        if let Some(g) = got {
            assert!(
                g <= t.jitter * 1.5 && g >= t.jitter / 1.5,
                "jitter {g} vs truth {}",
                t.jitter
            );
        }
    }
}

fn check_ping(r: &NetQuality, d: &Path, who: &str) {
    let Some(server) = server_ping_of(d, who) else {
        println!(
            "  ping median: ours {:?}, the server printed none",
            r.ping.median
        );
        return;
    };
    let ours = r.ping.median.expect("a ping");
    println!("  ping median: ours {ours:.1} server {server:.0}");
    let tol = (server * 0.15).max(10.0);
    assert!(
        (ours - server).abs() <= tol,
        "ping {ours} vs server {server}"
    );
}

fn check_spikes(r: &NetQuality, d: &Path, off: f64) {
    for s in spikes(d) {
        let (start, end) = (s.start + off, s.start + s.len + off);
        // Only spikes that fell while the player was playing.
        if start < r.first_time || end > r.last_time {
            continue;
        }
        if s.delay > 0.0 {
            let e = r
                .lag_events
                .iter()
                .find(|e| e.kind == "ping" && (e.start - start).abs() <= 1.0);
            println!(
                "  lag spike at {:.2}+{:.0}s: {:?}",
                start - r.first_time,
                s.len,
                e.map(|e| (e.start - r.first_time, e.end - e.start, e.peak))
            );
            let e = e.expect("ping event found");
            assert!((e.end - e.start - s.len).abs() <= 1.5, "spike length");
        }
        if s.loss > 0.0 {
            let dirs = [("c2s", r.loss.c2s), ("s2c", r.loss.s2c)];
            for (dname, known) in dirs {
                if known.is_none() {
                    continue;
                }
                let e = r.lag_events.iter().find(|e| {
                    e.kind == "loss"
                        && e.dir.map(|d| d.as_str()) == Some(dname)
                        && (e.start - start).abs() <= 1.0
                });
                println!(
                    "  loss spike {dname} at {:.2}+{:.0}s: {:?}",
                    start - r.first_time,
                    s.len,
                    e.map(|e| (e.start - r.first_time, e.end - e.start, e.peak))
                );
                let e = e.expect("loss burst found");
                assert!((e.end - e.start - s.len).abs() <= 1.5, "burst length");
            }
        }
    }
}

#[test]
fn q3_netquality_against_relay_and_server() {
    check_session("q3-netquality");
}

/// A lag switch holds one client's upstream for seconds: the server hears nothing, then all
/// at once. Held client packets are neither client packets lost nor server packets lost.
#[test]
fn q3_lagswitch_against_relay() {
    // Jitter is not held here yet: the clients' side reads 5.2 ms of server-packet jitter
    // where the relay's delays vary by 3.4 ms (open).
    check_session_with("q3-lagswitch", false);
}

#[test]
fn qw_netquality_against_relay_and_server() {
    check_session("qw-netquality");
}

/// Every stored relay session (a folder of `captures/` or `../shared/captures` with the
/// relay's log and both captures), the held-out ones recorded for this check included: loss
/// each way within 1.5 points of the relay's, ping within 15 % or 10 ms of the server's own,
/// spikes and lag switches found, jitter aside (see [`q3_lagswitch_against_relay`]). Every
/// check of every session runs before the test fails, each failure named.
#[test]
fn every_relay_session_against_relay_and_server() {
    let mut seen = std::collections::BTreeMap::new();
    for root in [
        Path::new(env!("CARGO_MANIFEST_DIR")).join("captures"),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/captures"),
    ] {
        let Ok(rd) = std::fs::read_dir(&root) else {
            skip::data(&root);
            continue;
        };
        for d in rd.flatten().map(|e| e.path()) {
            let name = d
                .file_name()
                .map_or(String::new(), |n| n.to_string_lossy().into_owned());
            if d.join("impair.jsonl").exists() && d.join("server-side.pcapng").exists() {
                seen.entry(name).or_insert(d);
            }
        }
    }
    assert!(seen.len() >= 6, "relay sessions: {:?}", seen.keys());
    let mut failed = Vec::new();
    for (name, d) in &seen {
        failed.extend(check_session_at(d, name, false, true));
    }
    assert!(failed.is_empty(), "relay sessions: {failed:#?}");
}

#[test]
fn clean_captures_show_no_loss_and_no_lag() {
    for name in [
        "q3-basic",
        "q3-two-clients",
        "q3-download",
        "q3-ctf",
        "qw-basic",
    ] {
        for r in net(&dir(name).join("capture.pcapng")) {
            println!(
                "{name} flow {}: loss {:?} jitter {:?} events {}",
                r.flow,
                r.loss,
                r.jitter,
                r.lag_events.len()
            );
            assert!(
                r.loss.c2s.is_some() || r.loss.s2c.is_some(),
                "some loss known"
            );
            for l in [r.loss.c2s, r.loss.s2c].into_iter().flatten() {
                assert!(l == 0.0, "{name}: loss {l}");
            }
            // (Jitter held on the first two only: q3-two-clients reads 11 ms of client jitter
            // on loopback, open.)
            if name.ends_with("-basic") {
                for j in [r.jitter.c2s, r.jitter.s2c].into_iter().flatten() {
                    assert!(j < 3.0, "{name}: jitter {j}");
                }
            }
            assert!(r.lag_events.is_empty(), "{name}: {:?}", r.lag_events);
        }
    }
}

/// What a sink saw, in the order it saw it: (is a sample, flow, capture time).
#[derive(Default)]
struct Order(Vec<(bool, u32, f64)>);

impl pipeline::Sink for Order {
    fn event(&mut self, e: pipeline::Event<'_>) -> std::io::Result<()> {
        match e {
            pipeline::Event::NetSample(s) => self.0.push((true, s.flow, s.time)),
            pipeline::Event::Q3(m) => self.0.push((false, m.flow, m.time)),
            pipeline::Event::Qw(m) => self.0.push((false, m.flow, m.time)),
            _ => {}
        }
        Ok(())
    }
}

fn order(path: &Path, emit: bool) -> Vec<(bool, u32, f64)> {
    let opts = Options {
        detail: if emit {
            quakecap::pipeline::Detail::Full
        } else {
            quakecap::pipeline::Detail::None
        },
        samples: true,
        threads: Some(1),
        ..Options::default()
    };
    let mut sink = Order::default();
    pipeline::run_capture(path, &opts, &mut sink, &mut |_| {}).expect("capture reads");
    sink.0
}

/// The capture times of a file's frames, in file order (seconds since the Unix epoch).
fn frame_times(path: &Path) -> Vec<f64> {
    let mut r = quakecap::capture::CaptureReader::open(path).expect("capture opens");
    let mut v = Vec::new();
    while let Ok(Some(f)) = r.next_frame() {
        v.push(f.ts_ns as f64 / 1e9);
    }
    v
}

/// Network samples are held back and handed out in batches (`net` has little else to
/// hand out): the sinks still see every one, in the capture's order among the messages,
/// with `net` alone (no messages) as with the messages of `report`.
#[test]
fn samples_reach_the_sinks_in_capture_order() {
    for rel in [
        "q3-basic/capture.pcapng",
        "q3-two-clients/capture.pcapng",
        "q3-impaired/server-side.pcapng",
        "qw-basic/capture.pcapng",
    ] {
        let path = dir(rel);
        if !path.exists() {
            skip::data(&path);
            continue;
        }
        let times = frame_times(&path);
        // Each event's place in the file, by its capture time (times two frames share are
        // left out: the clock alone cannot order them).
        let mut place: std::collections::HashMap<u64, Option<usize>> = Default::default();
        for (i, t) in times.iter().enumerate() {
            place
                .entry(t.to_bits())
                .and_modify(|p| *p = None)
                .or_insert(Some(i));
        }
        let with_messages = order(&path, true);
        let alone = order(&path, false);
        let samples: Vec<(u32, f64)> = with_messages
            .iter()
            .filter(|e| e.0)
            .map(|e| (e.1, e.2))
            .collect();
        let samples_alone: Vec<(u32, f64)> = alone.iter().map(|e| (e.1, e.2)).collect();
        println!(
            "{rel}: {} frames, {} events, {} samples",
            times.len(),
            with_messages.len(),
            samples.len()
        );
        assert!(samples.len() > 1000, "{rel}: samples");
        assert_eq!(samples, samples_alone, "{rel}: the same samples either way");
        assert!(
            samples.iter().all(|s| place.contains_key(&s.1.to_bits())),
            "{rel}: each sample at the time of a frame of the capture"
        );
        for (what, v) in [("with messages", &with_messages), ("alone", &alone)] {
            let places: Vec<usize> = v
                .iter()
                .filter_map(|e| place.get(&e.2.to_bits()).copied().flatten())
                .collect();
            assert!(places.len() * 10 > v.len() * 9, "{rel}: most times placed");
            let bad = places.windows(2).position(|w| w[0] > w[1]);
            assert_eq!(bad, None, "{rel} {what}: events in the capture's order");
        }
    }
}

fn quakecap(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_quakecap"))
        .args(args)
        .output()
        .expect("runs")
}

#[test]
fn net_json_keys() {
    let p = dir("q3-netquality").join("capture.pcapng");
    let out = quakecap(&["net", "--json", "--interval", "2", p.to_str().unwrap()]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let rows = v.as_array().expect("array");
    assert_eq!(rows.len(), 2);
    for r in rows {
        for k in [
            "flow",
            "name",
            "first_time",
            "last_time",
            "vantage",
            "ping",
            "loss",
            "jitter",
            "snapshot_rate",
            "client_packet_rate",
            "lag_events",
            "series",
        ] {
            assert!(r.get(k).is_some(), "key {k}");
        }
        for k in ["median", "p95", "max"] {
            assert!(r["ping"][k].is_number());
        }
        assert!(r["loss"]["c2s"].is_null() && r["loss"]["s2c"].is_number());
        let span = r["last_time"].as_f64().unwrap() - r["first_time"].as_f64().unwrap();
        let n = r["series"].as_array().unwrap().len() as f64;
        assert!(
            (n - span / 2.0).abs() <= 1.5,
            "2 s intervals: {n} for {span} s"
        );
        for e in r["lag_events"].as_array().unwrap() {
            assert!(e["kind"] == "ping" || (e["kind"] == "loss" && e["dir"].is_string()));
            assert!(e["start"].as_f64() <= e["end"].as_f64());
        }
    }
    let table = quakecap(&["net", p.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("LabPlayer1") && text.contains("ping 86") || text.contains("ping "));
    assert!(text.lines().all(|l| l.chars().count() <= 120), "{text}");
}

#[test]
fn demo_files_and_empty_captures_are_refused_clearly() {
    let demo = dir("qw-basic").join("client1-demo0.qwd");
    let out = quakecap(&["net", demo.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs a capture"));

    // A capture of one UDP datagram of no game, and one of a few game packets.
    let tmp = std::env::temp_dir().join(format!("netq-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let empty = tmp.join("other.pcap");
    std::fs::write(&empty, pcap(&[udp(1234, 5678, b"hello")])).unwrap();
    let out = quakecap(&["net", empty.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no game connection"));

    // The first packets of a real connection only: no panic, a row or a clear message.
    let src = std::fs::read(dir("q3-basic").join("capture.pcapng")).unwrap();
    let short = tmp.join("short.pcapng");
    std::fs::write(&short, &src[..src.len().min(6000)]).unwrap();
    let out = quakecap(&["net", "--json", short.to_str().unwrap()]);
    assert!(out.status.code().is_some_and(|c| c == 0 || c == 2));
    let _ = std::fs::remove_dir_all(&tmp);
}

/// A classic pcap (Ethernet) of the given frames.
fn pcap(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    v.extend_from_slice(&2u16.to_le_bytes());
    v.extend_from_slice(&4u16.to_le_bytes());
    v.extend_from_slice(&[0; 8]);
    v.extend_from_slice(&65535u32.to_le_bytes());
    v.extend_from_slice(&1u32.to_le_bytes());
    for (i, f) in frames.iter().enumerate() {
        v.extend_from_slice(&(1_700_000_000u32 + i as u32).to_le_bytes());
        v.extend_from_slice(&0u32.to_le_bytes());
        v.extend_from_slice(&(f.len() as u32).to_le_bytes());
        v.extend_from_slice(&(f.len() as u32).to_le_bytes());
        v.extend_from_slice(f);
    }
    v
}

/// An Ethernet/IPv4/UDP frame on 127.0.0.1 (checksums zero: not checked).
fn udp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; 12];
    f.extend_from_slice(&[0x08, 0x00]);
    let total = 20 + 8 + payload.len();
    f.extend_from_slice(&[
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        0,
        0x40,
        0,
        64,
        17,
        0,
        0,
    ]);
    f.extend_from_slice(&[127, 0, 0, 1, 127, 0, 0, 1]);
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(payload);
    f
}

/// Tag balance of an XHTML-style document (void elements self-closed or `meta`): every
/// element closed in order, no stray `<`.
fn well_formed(html: &str) -> Result<(), String> {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find('<') {
        rest = &rest[i + 1..];
        if let Some(r) = rest.strip_prefix("!DOCTYPE") {
            rest = &r[r.find('>').ok_or("unclosed doctype")? + 1..];
            continue;
        }
        // The tag's end: the first '>' outside quotes.
        let mut quote = None;
        let end = rest
            .char_indices()
            .find(|&(_, c)| match (quote, c) {
                (None, '"') => {
                    quote = Some('"');
                    false
                }
                (Some('"'), '"') => {
                    quote = None;
                    false
                }
                (None, '>') => true,
                _ => false,
            })
            .map(|(i, _)| i)
            .ok_or("unclosed tag")?;
        let tag = &rest[..end];
        rest = &rest[end + 1..];
        // A script's or style's text is no markup: skipped to its closing tag.
        let raw = ["script", "style"]
            .into_iter()
            .find(|r| tag == *r || tag.starts_with(&format!("{r} ")));
        if let Some(raw) = raw {
            let close = format!("</{raw}>");
            let at = rest.find(&close).ok_or(format!("unclosed {raw}"))?;
            rest = &rest[at + close.len()..];
            continue;
        }
        let closing = tag.starts_with('/');
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        if name.is_empty() {
            return Err(format!("stray '<' before {:?}", &tag[..tag.len().min(20)]));
        }
        if closing {
            match stack.pop() {
                Some(open) if open == name => {}
                other => return Err(format!("</{name}> closes {other:?}")),
            }
        } else if !(tag.ends_with('/') || name == "meta") {
            stack.push(name);
        }
    }
    if stack.is_empty() {
        Ok(())
    } else {
        Err(format!("unclosed: {stack:?}"))
    }
}

/// Player names the server itself listed (Quake 3 `status` tables, QuakeWorld quakestat).
fn server_names(d: &Path) -> Vec<String> {
    let mut v = Vec::new();
    if let Ok(log) = std::fs::read_to_string(d.join("server.log")) {
        for l in log.lines() {
            let w: Vec<&str> = l.split_whitespace().collect();
            if w.len() >= 5 && w[0].parse::<u32>().is_ok() && w[2].parse::<u32>().is_ok() {
                v.push(w[3].to_string());
            }
        }
    }
    if let Ok(qs) = std::fs::read_to_string(d.join("quakestat.txt")) {
        for l in qs.lines().filter(|l| l.contains("ms")) {
            v.extend(l.split_whitespace().nth(5).map(String::from));
        }
    }
    v
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let k = format!("{name}=\"");
    let i = tag.find(&k)? + k.len();
    Some(tag[i..].split('"').next()?.to_string())
}

/// The `<figure class="…">` blocks of a player's section.
fn figure<'a>(section: &'a str, class: &str) -> Option<&'a str> {
    let i = section.find(&format!("<figure class=\"{class}\">"))?;
    let z = section[i..].find("</figure>")?;
    Some(&section[i..i + z])
}

fn report_of(path: &Path) -> String {
    let tmp = std::env::temp_dir().join(format!(
        "netq-report-{}-{}.html",
        std::process::id(),
        path.display().to_string().replace('/', "_")
    ));
    let out = quakecap(&[
        "report",
        path.to_str().unwrap(),
        "-o",
        tmp.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&tmp).expect("report written");
    let _ = std::fs::remove_file(&tmp);
    html
}

/// The rows of the report's game-events table: (kind, what).
fn event_rows(html: &str) -> Vec<(String, String)> {
    let Some(i) = html.find("<table class=\"game-events\">") else {
        return Vec::new();
    };
    let table = &html[i..i + html[i..].find("</table>").unwrap_or(0)];
    table
        .split("<tr data-kind=\"")
        .skip(1)
        .map(|row| {
            let kind = row.split('"').next().unwrap_or("").to_string();
            let cells: Vec<&str> = row.split("<td class=\"l\">").skip(1).collect();
            let what = cells
                .get(1)
                .and_then(|c| c.split("</td>").next())
                .unwrap_or("");
            (kind, what.to_string())
        })
        .collect()
}

/// The report carries `quakecap events`' timeline: on a team deathmatch with bots, every
/// `Kill:` line of the server's log is one kill row naming its victim (and killer, unless
/// the world or a suicide), every `say:` line a chat row with its text, and each player's
/// section lists the kills naming them, on the plots' time axis. Truth: server.log.
#[test]
fn report_lists_the_game_events_of_server_log() {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/captures/q3-events");
    let (Ok(log), true) = (
        std::fs::read_to_string(d.join("server.log")),
        d.join("capture.pcapng").exists(),
    ) else {
        skip::data(&d);
        return;
    };
    let html = report_of(&d.join("capture.pcapng"));
    let rows = event_rows(&html);
    let kills: Vec<&(String, String)> = rows.iter().filter(|r| r.0 == "kill").collect();
    let logged: Vec<(String, String)> = log
        .lines()
        .filter_map(|l| l.strip_prefix("Kill: "))
        .filter_map(|l| l.split_once(": ").map(|(_, who)| who.to_string()))
        .filter_map(|who| {
            let (killer, rest) = who.split_once(" killed ")?;
            let (victim, _) = rest.split_once(" by ")?;
            Some((killer.to_string(), victim.to_string()))
        })
        .collect();
    assert!(!logged.is_empty(), "server.log has Kill: lines");
    assert_eq!(
        kills.len(),
        logged.len(),
        "kill rows {kills:?} against {logged:?}"
    );
    for (killer, victim) in &logged {
        let shown = kills.iter().any(|(_, what)| {
            what.contains(victim.as_str())
                && (killer == "<world>" || killer == victim || what.contains(killer.as_str()))
        });
        assert!(
            shown,
            "Kill {killer} → {victim} not in the report: {kills:?}"
        );
    }
    for text in log.lines().filter_map(|l| l.strip_prefix("say: ")) {
        let said = text.split_once(": ").map_or(text, |(_, t)| t);
        assert!(
            rows.iter().any(|(k, w)| k == "chat" && w.contains(said)),
            "say {said:?} not in the report"
        );
    }
    // Each player's own section: the kills that name them.
    for section in html.split("<section class=\"player\"").skip(1) {
        let name = section
            .split("data-name=\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .unwrap_or("");
        let theirs = logged
            .iter()
            .filter(|(k, v)| k == name || v == name)
            .count();
        let listed = section.matches("<li data-kind=\"kill\">").count();
        assert_eq!(listed, theirs, "{name}: kills listed in the section");
    }
}

/// The JSON of a player's plots (`<script type="application/json" class="series">`).
fn series_data(section: &str) -> serde_json::Value {
    let k = "<script type=\"application/json\" class=\"series\">";
    let i = section.find(k).expect("the player's data") + k.len();
    let z = section[i..].find("</script>").expect("closed");
    serde_json::from_str(&section[i..i + z]).expect("the player's data is JSON")
}

fn numbers(v: &serde_json::Value) -> Vec<Option<f64>> {
    v.as_array()
        .map(|a| a.iter().map(serde_json::Value::as_f64).collect())
        .unwrap_or_default()
}

const FIGURES: [&str; 6] = ["ping", "loss", "jitter", "rates", "bandwidth", "lagometer"];

#[test]
fn report_html_against_relay_and_server() {
    for name in ["q3-netquality", "qw-netquality"] {
        let d = dir(name);
        let log = relay_log(&d);
        let off = relay_offset(&d, &log);
        let names = server_names(&d);
        let client_flows = flows_of(&d.join("capture.pcapng"));
        let near_clients = net(&d.join("capture.pcapng"));
        for file in ["capture.pcapng", "server-side.pcapng"] {
            let html = report_of(&d.join(file));
            well_formed(&html).unwrap_or_else(|e| panic!("{name}/{file}: {e}"));
            assert!(
                html.len() <= 2_000_000,
                "{name}/{file}: {} bytes",
                html.len()
            );
            assert!(!html.contains("plot failed"), "{name}/{file}");
            assert!(!html.contains("http://") || !html.contains("src=\"http"));
            let sections: Vec<&str> = html.split("<section class=\"player\"").skip(1).collect();
            assert_eq!(sections.len(), near_clients.len(), "{name}/{file}: players");
            println!(
                "{name}/{file}: {} bytes, {} players",
                html.len(),
                sections.len()
            );
            for s in sections {
                let head = &s[..s.find('>').unwrap()];
                let who = attr(head, "data-name").unwrap();
                assert!(names.contains(&who), "{who}: a player the server listed");
                for f in FIGURES {
                    let fig = figure(s, f).unwrap_or_else(|| panic!("{who}: figure {f}"));
                    assert_eq!(
                        fig.matches("<div class=\"plot\">").count(),
                        1,
                        "{who}: one plot in {f}"
                    );
                }
                let data = series_data(s);
                // Packets per second each way are known for every interval.
                let x = numbers(&data["pc"]);
                assert!(!x.is_empty() && data["x0"].is_number(), "{who}: intervals");
                for k in [
                    "ping", "pmax", "lc", "ls", "jc", "js", "pc", "ps", "sn", "bc", "bs",
                ] {
                    // An array without any value is left out.
                    let n = numbers(&data[k]).len();
                    assert!(n == x.len() || data.get(k).is_none(), "{who}: {k}");
                }
                assert!(!numbers(&data["ping"]).is_empty(), "{who}: pings");
                // Lag events listed, and each one shaded on the ping plot.
                // (The player's game events are list items too, in their own list.)
                let lag_list = s
                    .find("<ul class=\"lag-events\">")
                    .map_or("", |i| &s[i..i + s[i..].find("</ul>").unwrap()]);
                let events: Vec<(String, String, f64, f64)> = lag_list
                    .split("<li ")
                    .skip(1)
                    .map(|li| {
                        let t = &li[..li.find('>').unwrap()];
                        let f = |k| attr(t, k).unwrap();
                        (
                            f("data-kind"),
                            f("data-dir"),
                            f("data-start").parse().unwrap(),
                            f("data-end").parse().unwrap(),
                        )
                    })
                    .collect();
                let lag = data["lag"].as_array().unwrap();
                let shaded = |k: u64| lag.iter().filter(|e| e[2].as_u64() == Some(k)).count();
                let n_ping = events.iter().filter(|e| e.0 == "ping").count();
                assert_eq!(shaded(0), n_ping, "{who}: ping events shaded");
                assert_eq!(
                    shaded(1),
                    events.len() - n_ping,
                    "{who}: loss events shaded"
                );
                // The relay's spikes while the player played: found in the report.
                let cs = near_clients
                    .iter()
                    .find(|c| c.name.as_deref() == Some(who.as_str()))
                    .expect("same player at the clients' side");
                for sp in spikes(&d) {
                    let (a, z) = (sp.start + off, sp.start + sp.len + off);
                    if a < cs.first_time || z > cs.last_time || sp.delay == 0.0 {
                        continue;
                    }
                    let e = events
                        .iter()
                        .find(|e| e.0 == "ping" && (e.2 - a).abs() <= 1.0)
                        .unwrap_or_else(|| panic!("{who}: spike at {a} in the report"));
                    assert!((e.3 - e.2 - sp.len).abs() <= 1.5);
                }
                // The lagometer shows server packets lost exactly when the relay dropped
                // some that way and the vantage can know it.
                let client = relay_client(cs, &client_flows);
                let t = truth(
                    &log,
                    &client,
                    false,
                    cs.first_time - off,
                    cs.last_time - off,
                );
                let lost = numbers(&data["sp"]);
                let red = lost.iter().filter(|l| l.is_some_and(|l| l > 0.0)).count();
                let green = numbers(&data["sl"]).iter().filter(|l| l.is_some()).count();
                let known = lost.iter().any(Option::is_some);
                assert_eq!(
                    known,
                    !figure(s, "lagometer")
                        .unwrap()
                        .contains("unknown from here"),
                    "{who}: the caption says whether loss is known"
                );
                println!("  {who}: {} events, lagometer {green} green {red} red, s2c loss known {known}, truth {:.3}", events.len(), t.loss);
                assert!(green > 100, "{who}: latency columns");
                assert_eq!(red > 0, known && t.loss > 0.0, "{who}: red columns");
            }
        }
    }
}

#[test]
fn report_of_clean_captures_and_demos() {
    for name in ["q3-basic", "qw-basic"] {
        let html = report_of(&dir(name).join("capture.pcapng"));
        well_formed(&html).unwrap();
        let n = html.matches("<section class=\"player\"").count();
        assert!(n >= 1, "{name}: players");
        assert_eq!(html.matches("No lag events").count(), n, "{name}");
        for s in html.split("<section class=\"player\"").skip(1) {
            let lost = numbers(&series_data(s)["sp"]);
            assert!(
                lost.iter().all(|l| l.is_none_or(|l| l == 0.0)),
                "{name}: nothing lost"
            );
            assert!(
                s.contains("<li data-kind=\"none\">No trouble seen"),
                "{name}"
            );
        }
    }
    let demo = dir("qw-basic").join("client1-demo0.qwd");
    let out = quakecap(&["report", demo.to_str().unwrap(), "-o", "/dev/null"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs a capture"));
}

/// On loopback the server's own `status` ping is a few ms (ioq3's SV_CalcPings: the frame
/// time at the message's last acknowledgement less its frame time when sent), not one server
/// frame. Truth: q3-events' server.log status tables.
#[test]
fn loopback_ping_is_the_servers_status_ping() {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/captures/q3-events");
    if !d.join("capture.pcapng").exists() {
        skip::data(&d);
        return;
    }
    let rows = net(&d.join("capture.pcapng"));
    assert!(!rows.is_empty());
    for r in &rows {
        let who = r.name.clone().unwrap_or_default();
        let server = server_ping_of(&d, &who).expect("status ping");
        let ours = r.ping.median.expect("a ping");
        println!("q3-events {who}: ping ours {ours:.1} server {server:.0}");
        assert!((ours - server).abs() <= 10.0, "{who}: {ours} vs {server}");
    }
}
