//! Network quality (`quakecap net`) judged against the truth of what the path did: the
//! impairing relay's per-datagram log (`impair.jsonl`), its settings (`SETTINGS`) and the
//! servers' own pings (`server.log` status tables, `quakestat.txt`). Every expected number is
//! computed here from those stored files.
use std::path::{Path, PathBuf};

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

/// Median of the server's own ping of `name`: Quake 3 `status` tables, QuakeWorld quakestat.
fn server_ping(d: &Path, name: &str) -> f64 {
    let mut v: Vec<f64> = Vec::new();
    if let Ok(log) = std::fs::read_to_string(d.join("server.log")) {
        for l in log.lines() {
            let w: Vec<&str> = l.split_whitespace().collect();
            if w.len() >= 4 && w[3] == name && w[0].parse::<u32>().is_ok() {
                v.extend(w[2].parse::<f64>().ok());
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
    assert!(!v.is_empty(), "no server ping for {name}");
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
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
    let d = dir(name);
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
        assert_eq!(rows.len(), near_clients.len(), "{name}/{file}: connections");
        for r in &rows {
            let who = r.name.clone().unwrap_or_default();
            // The same player at the clients' side gives the relay's client address.
            let cs = near_clients
                .iter()
                .find(|c| c.name == r.name)
                .expect("same player at both sides");
            let client = relay_client(cs, &client_flows);
            let (from, to) = (cs.first_time - off, cs.last_time - off);
            let vantage = serde_json::to_value(r.vantage).unwrap();
            println!(
                "{name}/{file} flow {} {who} ({client}): vantage {vantage}",
                r.flow
            );
            assert_eq!(vantage, expect_vantage, "{name}/{file} {who}: vantage");
            check_loss(r, &log, &client, from, to);
            check_jitter(r, &log, &client, from, to);
            check_ping(r, &d, &who);
            check_spikes(r, &d, off);
        }
    }
}

fn check_loss(r: &NetQuality, log: &[Line], client: &str, from: f64, to: f64) {
    let v = serde_json::to_value(r.vantage).unwrap();
    let (kc, ks) = knowable(r.game, v.as_str().unwrap_or(""));
    for (up, got, known) in [(true, r.loss.c2s, kc), (false, r.loss.s2c, ks)] {
        let t = truth(log, client, up, from, to);
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
    let server = server_ping(d, who);
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

#[test]
fn qw_netquality_against_relay_and_server() {
    check_session("qw-netquality");
}

#[test]
fn clean_captures_show_no_loss_and_no_lag() {
    for name in ["q3-basic", "qw-basic"] {
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
            for j in [r.jitter.c2s, r.jitter.s2c].into_iter().flatten() {
                assert!(j < 3.0, "{name}: jitter {j}");
            }
            assert!(r.lag_events.is_empty(), "{name}: {:?}", r.lag_events);
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
