//! `--follow` (issue 42): a feeder writes a stored capture at its own pace times [`SPEED`],
//! record by record, into `events --follow --json` and `net --follow --json` (through a pipe
//! to `-`, and as a growing file), and the test measures when each line comes.
//!
//! * every game event comes before the feeder stops (the pipe is still open, the file still
//!   followed), each within [`LATENCY`] wall time of the write of the datagram that made it
//!   (the record with the event's capture time); the lines equal `events --json`'s, but for
//!   the `flows` of player events (a client that connects later and finds a player already
//!   in adds its flow to the batch answer's join, after the live line was written);
//! * the `lag` lines are the batch `net --json` lag events (kind, start, end, dir, peak and
//!   baseline), each within [`LATENCY`] of the write of the record at its end plus the
//!   1.5 s of capture time a lag waits to be over (`LAG_OVER_S`), and a `lag_start` line
//!   came first; a `start` and an `end` line per connection;
//! * a growing file is followed until SIGINT, which ends the run with exit 0;
//! * a pcap stream (nanosecond pcap, as `tcpdump -U -w -` writes it) the same;
//! * `quakecap top --replay`: its text rows (stdout not a terminal) and its full screen under
//!   tmux (`capture-pane`) show both players, their ping about 100 ms before the relay's
//!   +250 ms spike and above 300 ms with the lag flag in it.
//!
//! The only timed assertion is the issue's own bound of 1 s (the events are held 0.5 s of
//! capture time, 17 ms of wall time at 30×: the slack is for a loaded 2-core CI machine).
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use quakecap::capture::{CaptureReader, PcapWriter, TsPrecision};
use serde_json::Value;

mod skip;

/// Capture time runs this many times faster than the wall clock: the 144 s session is fed
/// in about 5 s.
const SPEED: f64 = 30.0;
/// The bound: a game event within 1 s of the datagram that completes it.
const LATENCY: Duration = Duration::from_secs(1);
/// A lag line waits this long past the lag's end (capture time, `analysis::net::live`).
const LAG_OVER_S: f64 = 1.5;

fn capture() -> Option<PathBuf> {
    skip::data_at(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("captures/q3-netquality/capture.pcapng"),
    )
}

fn quakecap(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_quakecap"));
    c.args(args);
    c
}

/// The capture's bytes and each record's (file offset, capture time in ns).
fn records(path: &Path) -> (Vec<u8>, Vec<(usize, i64)>) {
    let bytes = std::fs::read(path).unwrap();
    let mut r = CaptureReader::new(std::io::Cursor::new(&bytes[..])).unwrap();
    let mut recs = Vec::new();
    while let Some(f) = r.next_frame().unwrap() {
        recs.push((f.file_offset as usize, f.ts_ns));
    }
    (bytes, recs)
}

/// Write the capture to every `out` at its pace times [`SPEED`]: the header at once, then
/// each record when it is due. When each record (by capture time) was written.
fn feed(bytes: &[u8], recs: &[(usize, i64)], outs: &mut [&mut dyn Write]) -> Vec<(i64, Instant)> {
    let put = |outs: &mut [&mut dyn Write], b: &[u8]| {
        for o in outs.iter_mut() {
            o.write_all(b).unwrap();
            o.flush().unwrap();
        }
    };
    put(outs, &bytes[..recs[0].0]);
    let (t0, w0) = (recs[0].1, Instant::now());
    let mut written = Vec::with_capacity(recs.len());
    for (i, &(at, ts)) in recs.iter().enumerate() {
        let due = w0 + Duration::from_secs_f64((ts - t0) as f64 / 1e9 / SPEED);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            thread::sleep(wait);
        }
        let end = recs.get(i + 1).map_or(bytes.len(), |r| r.0);
        put(outs, &bytes[at..end]);
        written.push((ts, Instant::now()));
    }
    written
}

/// Each line of `child`'s stdout, with when it came, on a channel.
fn lines(child: &mut Child) -> mpsc::Receiver<(Instant, Value)> {
    let (tx, rx) = mpsc::channel();
    let out = child.stdout.take().unwrap();
    thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let line = line.unwrap();
            let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
            if tx.send((Instant::now(), v)).is_err() {
                return;
            }
        }
    });
    rx
}

/// When the record of capture time `t` (s) was written: the last record at or before it.
fn written_at(written: &[(i64, Instant)], t: f64) -> Instant {
    let ns = (t * 1e9).round() as i64 + 1_000;
    let i = written.partition_point(|&(ts, _)| ts <= ns);
    written[i.saturating_sub(1)].1
}

/// The batch answers: `events --json` lines and every `lag_events` entry of `net --json`.
fn batch(path: &Path) -> (Vec<Value>, Vec<Value>) {
    let o = quakecap(&["events", "--json"]).arg(path).output().unwrap();
    assert!(o.status.success());
    let events = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let o = quakecap(&["net", "--json"]).arg(path).output().unwrap();
    assert!(o.status.success());
    let reports: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
    let mut lags = Vec::new();
    for r in &reports {
        for e in r["lag_events"].as_array().unwrap() {
            let mut e = e.clone();
            e["flow"] = r["flow"].clone();
            lags.push(e);
        }
    }
    (events, lags)
}

/// A player event's `flows` depend on who connected later (see the module doc).
fn comparable(mut e: Value) -> Value {
    let player = ["join", "leave", "rename", "team"].contains(&e["kind"].as_str().unwrap_or(""));
    if let Value::Object(m) = &mut e {
        if player {
            m.remove("flows");
        }
        m.remove("type");
    }
    e
}

/// Everything both children printed so far, waiting up to `wait` for `events` to reach
/// `want` lines.
fn drain(
    rx: &mpsc::Receiver<(Instant, Value)>,
    got: &mut Vec<(Instant, Value)>,
    want: Option<usize>,
    wait: Duration,
) {
    let until = Instant::now() + wait;
    loop {
        if want.is_some_and(|n| got.len() >= n) {
            // Anything already there too.
            while let Ok(x) = rx.try_recv() {
                got.push(x);
            }
            return;
        }
        let left = until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(x) => got.push(x),
            Err(_) => return,
        }
    }
}

/// The checks of both runs: `events` lines (all there before the feeder stopped) and `net`
/// lines.
fn check(
    written: &[(i64, Instant)],
    events: &[(Instant, Value)],
    net: &[(Instant, Value)],
    batch_events: &[Value],
    batch_lags: &[Value],
) {
    let live: Vec<Value> = events.iter().map(|(_, v)| comparable(v.clone())).collect();
    let want: Vec<Value> = batch_events.iter().cloned().map(comparable).collect();
    assert_eq!(live, want, "the live events are the batch events");
    let mut worst = Duration::ZERO;
    for (seen, e) in events {
        let at = written_at(written, e["time"].as_f64().unwrap());
        let late = seen.saturating_duration_since(at);
        worst = worst.max(late);
        assert!(late <= LATENCY, "{e} came {late:?} after its datagram");
    }
    eprintln!(
        "events: {} lines, the latest {worst:?} after its datagram",
        events.len()
    );
    let key = |v: &Value| {
        (
            v["flow"].as_u64(),
            v["start"].as_f64().map(|s| (s * 1e6) as i64),
        )
    };
    let mut lags: Vec<Value> = net
        .iter()
        .filter(|(_, v)| v["type"] == "lag")
        .map(|(_, v)| comparable(v.clone()))
        .collect();
    lags.sort_by_key(key);
    let mut batch_lags = batch_lags.to_vec();
    batch_lags.sort_by_key(key);
    assert!(!batch_lags.is_empty());
    assert_eq!(lags, batch_lags, "the live lag events are the batch ones");
    let mut worst = Duration::ZERO;
    for (seen, v) in net.iter().filter(|(_, v)| v["type"] == "lag") {
        let over = v["end"].as_f64().unwrap() + LAG_OVER_S;
        let late = seen.saturating_duration_since(written_at(written, over));
        worst = worst.max(late);
        assert!(late <= LATENCY, "{v} came {late:?} after its end");
        let begun = net.iter().any(|(t, s)| {
            s["type"] == "lag_start"
                && s["flow"] == v["flow"]
                && s["start"] == v["start"]
                && t <= seen
        });
        assert!(begun, "no lag_start before {v}");
    }
    eprintln!(
        "net: {} lag lines, the latest {worst:?} after its end",
        lags.len()
    );
    let count = |ty: &str| net.iter().filter(|(_, v)| v["type"] == ty).count();
    assert_eq!(count("start"), 2, "one start per connection");
    assert_eq!(count("end"), 2, "one end per connection");
    assert!(
        count("interval") > 200,
        "an entry a second of each connection"
    );
}

#[test]
fn a_piped_capture_is_followed_as_it_comes() {
    let Some(path) = capture() else { return };
    let (batch_events, batch_lags) = batch(&path);
    let (bytes, recs) = records(&path);
    let spawn = |cmd: &str| {
        quakecap(&[cmd, "--follow", "--json", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (mut ev, mut net) = (spawn("events"), spawn("net"));
    let (ev_rx, net_rx) = (lines(&mut ev), lines(&mut net));
    let (mut ev_in, mut net_in) = (ev.stdin.take().unwrap(), net.stdin.take().unwrap());
    let written = feed(&bytes, &recs, &mut [&mut ev_in, &mut net_in]);
    // The feeder has written everything but keeps the pipes open: every event must come
    // without the end of the input.
    let mut events = Vec::new();
    drain(
        &ev_rx,
        &mut events,
        Some(batch_events.len()),
        Duration::from_secs(3),
    );
    assert_eq!(
        events.len(),
        batch_events.len(),
        "every event before the input ended"
    );
    drop((ev_in, net_in));
    drain(&ev_rx, &mut events, None, Duration::from_secs(5));
    let mut net_lines = Vec::new();
    drain(&net_rx, &mut net_lines, None, Duration::from_secs(5));
    assert!(ev.wait().unwrap().success());
    assert!(net.wait().unwrap().success());
    check(&written, &events, &net_lines, &batch_events, &batch_lags);
}

#[test]
fn a_growing_file_is_followed_until_sigint() {
    growing_file_is_followed_until_sigint("growing.pcapng", |f| Box::new(f));
}

/// A gzip stream (`tcpdump -U -w - | gzip`, a rotated `.gz` still being written) is undone
/// as it comes: a growing `.gz` whose compressor flushes each record gives the same lines
/// within the same bounds, and Ctrl-C while the stream is still open (no gzip trailer yet)
/// ends the run with exit 0.
#[test]
fn a_growing_gzip_file_is_followed_until_sigint() {
    growing_file_is_followed_until_sigint("growing.pcapng.gz", |f| {
        Box::new(flate2::write::GzEncoder::new(
            f,
            flate2::Compression::fast(),
        ))
    });
}

/// The capture written to file `name` through `wrap` record by record, `events` and `net`
/// following it, then Ctrl-C: every line, in time, exit 0.
fn growing_file_is_followed_until_sigint(name: &str, wrap: fn(std::fs::File) -> Box<dyn Write>) {
    let Some(path) = capture() else { return };
    let (batch_events, batch_lags) = batch(&path);
    let (bytes, recs) = records(&path);
    let dir = std::env::temp_dir().join(format!("quakecap-follow-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(name);
    let mut w = wrap(std::fs::File::create(&file).unwrap());
    let spawn = |cmd: &str| {
        quakecap(&[cmd, "--follow", "--json"])
            .arg(&file)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap()
    };
    // The header first: the reader knows the format before the records come.
    w.write_all(&bytes[..recs[0].0]).unwrap();
    w.flush().unwrap();
    let (mut ev, mut net) = (spawn("events"), spawn("net"));
    let (ev_rx, net_rx) = (lines(&mut ev), lines(&mut net));
    let written = feed(&bytes[recs[0].0..], &shift(&recs), &mut [&mut w]);
    let mut events = Vec::new();
    drain(
        &ev_rx,
        &mut events,
        Some(batch_events.len()),
        Duration::from_secs(3),
    );
    assert_eq!(
        events.len(),
        batch_events.len(),
        "every event while the file is followed"
    );
    // Still following: Ctrl-C ends both cleanly (the connections' reports flushed).
    for c in [&ev, &net] {
        let ok = Command::new("kill")
            .args(["-INT", &c.id().to_string()])
            .status()
            .unwrap();
        assert!(ok.success());
    }
    drain(&ev_rx, &mut events, None, Duration::from_secs(5));
    let mut net_lines = Vec::new();
    drain(&net_rx, &mut net_lines, None, Duration::from_secs(5));
    assert_eq!(ev.wait().unwrap().code(), Some(0));
    assert_eq!(net.wait().unwrap().code(), Some(0));
    drop(w);
    std::fs::remove_dir_all(&dir).ok();
    check(&written, &events, &net_lines, &batch_events, &batch_lags);
}

/// A pcap stream (what `tcpdump -U -w -` writes) of the same packets: each event before the
/// feeder stops, within the bound, the batch lines.
#[test]
fn a_pcap_stream_is_followed_as_it_comes() {
    let Some(path) = capture() else { return };
    let (batch_events, _) = batch(&path);
    let mut r = CaptureReader::open(&path).unwrap();
    let mut w = None;
    while let Some(f) = r.next_frame().unwrap() {
        let w = w
            .get_or_insert_with(|| PcapWriter::new(Vec::new(), f.link, TsPrecision::Nano).unwrap());
        w.write_packet(f.ts_ns, f.data, f.orig_len).unwrap();
    }
    let bytes = w.unwrap().finish().unwrap();
    let mut recs = Vec::new();
    let mut r = CaptureReader::new(std::io::Cursor::new(&bytes[..])).unwrap();
    while let Some(f) = r.next_frame().unwrap() {
        recs.push((f.file_offset as usize, f.ts_ns));
    }
    let mut ev = quakecap(&["events", "--follow", "--json", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let rx = lines(&mut ev);
    let mut input = ev.stdin.take().unwrap();
    let written = feed(&bytes, &recs, &mut [&mut input]);
    let mut events = Vec::new();
    drain(
        &rx,
        &mut events,
        Some(batch_events.len()),
        Duration::from_secs(3),
    );
    assert_eq!(
        events.len(),
        batch_events.len(),
        "every event before the input ended"
    );
    drop(input);
    drain(&rx, &mut events, None, Duration::from_secs(5));
    assert!(ev.wait().unwrap().success());
    let live: Vec<Value> = events.iter().map(|(_, v)| comparable(v.clone())).collect();
    // Nanosecond pcap (`tcpdump --time-stamp-precision nano`): the pcapng's times exactly.
    let want: Vec<Value> = batch_events.iter().cloned().map(comparable).collect();
    assert_eq!(live, want);
    for (seen, e) in &events {
        let at = written_at(&written, e["time"].as_f64().unwrap());
        let late = seen.saturating_duration_since(at);
        assert!(late <= LATENCY, "{e} came {late:?} after its datagram");
    }
}

/// The records' offsets after the header (already written).
fn shift(recs: &[(usize, i64)]) -> Vec<(usize, i64)> {
    let h = recs[0].0;
    recs.iter().map(|&(o, t)| (o - h, t)).collect()
}

/// `top`'s rows of one text block: (player, ping, flag).
fn top_rows(block: &str) -> Vec<(String, Option<f64>, String)> {
    block
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<&str>>())
        .filter(|w| w.len() > 3 && w[0].parse::<u32>().is_ok() && w[1].starts_with("LabPlayer"))
        .map(|w| {
            let flag = match w.last() {
                Some(&f) if f == "LAG" || f == "lag" => f.to_string(),
                _ => String::new(),
            };
            (w[1].to_string(), w[3].parse().ok(), flag)
        })
        .collect()
}

/// `quakecap top --replay` with stdout not a terminal: a block of rows per second of
/// capture time; before the relay's +250 ms spike (capture time 42.7–48.7 s, the folder's
/// README) both players' pings are about 100 ms, during it above 300 ms with the lag flag on.
#[test]
fn top_prints_rows_with_the_lag_spike() {
    let Some(path) = capture() else { return };
    let o = quakecap(&["top", "--replay", "40"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    let blocks: Vec<&str> = text.split("== ").filter(|b| !b.is_empty()).collect();
    assert!(blocks.len() > 30, "{} blocks", blocks.len());
    let rows: Vec<_> = blocks.iter().map(|b| top_rows(b)).collect();
    let calm = rows
        .iter()
        .any(|r| r.len() == 2 && r.iter().all(|(_, p, _)| p.is_some_and(|p| p < 150.0)));
    let spike = rows.iter().any(|r| {
        r.len() == 2
            && r.iter()
                .all(|(_, p, f)| p.is_some_and(|p| p > 300.0) && f == "LAG")
    });
    assert!(calm, "no block with both players under 150 ms");
    assert!(
        spike,
        "no block with both players over 300 ms and lagging:\n{text}"
    );
}

/// The full screen under tmux: `capture-pane` shows the players' rows and, in the spike, the
/// raised ping and the lag flag.
#[test]
fn top_full_screen_under_tmux() {
    let Some(path) = capture() else { return };
    if Command::new("tmux").arg("-V").output().is_err() {
        skip::tool("tmux (apt install tmux)");
        return;
    }
    let session = format!("quakecap-top-{}", std::process::id());
    let cmd = format!(
        "{} top --replay 10 {}; sleep 5",
        env!("CARGO_BIN_EXE_quakecap"),
        path.display()
    );
    let ok = Command::new("tmux")
        .args([
            "new-session",
            "-d",
            "-s",
            &session,
            "-x",
            "190",
            "-y",
            "30",
            &cmd,
        ])
        .status()
        .unwrap();
    assert!(ok.success());
    // Capture time 42.7-48.7 s is 4.3-4.9 s of wall time at 10x (the rows follow within the
    // refresh); look until 9 s.
    let start = Instant::now();
    let mut seen = (false, false);
    let mut last = String::new();
    while start.elapsed() < Duration::from_secs(9) && !(seen.0 && seen.1) {
        thread::sleep(Duration::from_millis(250));
        let o = Command::new("tmux")
            .args(["capture-pane", "-p", "-t", &session])
            .output()
            .unwrap();
        last = String::from_utf8_lossy(&o.stdout).into_owned();
        let rows = top_rows(&last.replace('│', " "));
        seen.0 |= rows.len() == 2 && rows.iter().all(|(_, p, _)| p.is_some_and(|p| p < 150.0));
        seen.1 |= rows
            .iter()
            .any(|(_, p, f)| p.is_some_and(|p| p > 300.0) && f == "LAG");
    }
    let _ = Command::new("tmux")
        .args(["kill-session", "-t", &session])
        .status();
    assert!(seen.0, "no screen with both players under 150 ms:\n{last}");
    assert!(
        seen.1,
        "no screen with a ping over 300 ms and the lag flag:\n{last}"
    );
}
