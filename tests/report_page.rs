//! The HTML report as a reader sees it, in the system's headless Chromium driven through the
//! DevTools protocol (`tests/report_page.mjs`, Node.js and its standard library alone): the
//! page makes no request but its own file and logs no error; each player's summary names
//! the impairing relay's spikes at their wall-clock times (truth: the relay's settings and
//! per-datagram log), the same labels for every player; a drag across one plot zooms all of
//! that player's plots to one narrower range, and the wheel zooms them out again.
//! Screenshots at 1400 px width go to `target/report-page/` (the README's pictures in
//! `docs/img/` were taken from there).
use std::path::{Path, PathBuf};
use std::process::Command;

mod skip;

use quakecap::pipeline::{self, Options};

fn captures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("captures")
}

struct NoSink;
impl pipeline::Sink for NoSink {}

/// Epoch seconds of the relay's time 0: the capture's first packet is the relay's first
/// datagram (its log's first line), as in tests/netquality.rs.
fn relay_zero(d: &Path) -> f64 {
    let first_t = std::fs::read_to_string(d.join("impair.jsonl"))
        .expect("impair.jsonl")
        .lines()
        .next()
        .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .and_then(|v| v["t"].as_f64())
        .expect("a first relay line");
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
    first - first_t
}

/// The relay's `--spike START:LEN:DELAY[:LOSS]` settings: (start, len, delay, loss).
fn spikes(d: &Path) -> Vec<(f64, f64, f64, f64)> {
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
            let at = |i: usize| v.get(i).copied().unwrap_or(0.0);
            (at(0), at(1), at(2), at(3))
        })
        .collect()
}

/// Share of the datagrams of one direction the relay dropped between relay times `a` and
/// `z`, all clients.
fn relay_loss(d: &Path, up: bool, a: f64, z: f64) -> f64 {
    let text = std::fs::read_to_string(d.join("impair.jsonl")).expect("impair.jsonl");
    let (mut n, mut lost) = (0u32, 0u32);
    for v in text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
    {
        let t = v["t"].as_f64().unwrap_or(-1.0);
        if (v["dir"] == "up") == up && t >= a && t <= z {
            n += 1;
            lost += u32::from(v["fate"] == "dropped");
        }
    }
    f64::from(lost) / f64::from(n.max(1))
}

/// `HH:MM:SS` UTC of epoch seconds, cut to the second (computed here, not by quakecap).
fn utc(t: f64) -> String {
    let s = (t.floor() as i64).rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// The labels a reader may see for an instant known to about a second.
fn near(t: f64) -> [String; 3] {
    [utc(t - 1.0), utc(t), utc(t + 1.0)]
}

fn tool(name: &str, arg: &str) -> bool {
    Command::new(name)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The page as the browser saw it (the driver's JSON), with the report at `html`.
fn look_at(html: &Path, shots: &Path) -> Option<serde_json::Value> {
    if !tool("node", "--version") {
        skip::tool("node (Node.js 18 or newer: apt-get install nodejs)");
        return None;
    }
    let Some(browser) = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| tool(b, "--version"))
    else {
        skip::tool("chromium (apt-get install chromium)");
        return None;
    };
    std::fs::create_dir_all(shots).unwrap();
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/report_page.mjs");
    let out = Command::new("node")
        .arg(&driver)
        .arg(browser)
        .arg(html)
        .arg(shots)
        .output()
        .expect("node runs");
    assert!(
        out.status.success(),
        "driver failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).expect("the driver's JSON"))
}

fn report(input: &Path, html: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_quakecap"))
        .args(["report", "--time", "utc"])
        .arg(input)
        .arg("-o")
        .arg(html)
        .output()
        .expect("quakecap runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn check_page(page: &serde_json::Value, name: &str) {
    let url = page["url"].as_str().unwrap();
    let requests: Vec<&str> = page["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r.as_str())
        .collect();
    assert_eq!(requests, [url], "{name}: the page asked for nothing else");
    assert_eq!(
        page["errors"].as_array().unwrap().len(),
        0,
        "{name}: console errors {}",
        page["errors"]
    );
    let title = page["title"].as_str().unwrap();
    assert_eq!(
        title,
        format!("quakecap report: {name}"),
        "the file's name, no path"
    );
    for p in page["players"].as_array().unwrap() {
        assert_eq!(
            p["canvases"], 6,
            "{name}: six plots drawn for {}",
            p["name"]
        );
        assert_eq!(
            p["charts"], 6,
            "{name}: six linked charts for {}",
            p["name"]
        );
    }
}

/// Every player's summary names the relay's spikes (those inside the player's connection)
/// at the relay's wall-clock time, to the second, and every player the same way.
/// Returns how many players each spike was checked on.
fn check_spikes(page: &serde_json::Value, d: &Path, name: &str, loss_knowable: bool) -> Vec<usize> {
    let mut checked = Vec::new();
    let zero = relay_zero(d);
    let players = page["players"].as_array().unwrap();
    assert!(!players.is_empty(), "{name}: players");
    for (start, len, delay, loss) in spikes(d) {
        let (a, z) = (zero + start, zero + start + len);
        let kind = if delay > 0.0 {
            "ping"
        } else if loss > 0.0 && loss_knowable {
            "loss"
        } else {
            continue;
        };
        let mut said = Vec::new();
        for p in players {
            let (first, last) = (p["first"].as_f64().unwrap(), p["last"].as_f64().unwrap());
            if a < first || z > last {
                continue;
            }
            let findings = p["findings"].as_array().unwrap();
            let hit = findings.iter().find_map(|f| {
                let text = f["text"].as_str()?;
                let (span, _) = text.split_once(": ")?;
                let (s, e) = span.split_once('–')?;
                (f["kind"] == kind
                    && near(a).iter().any(|x| x == s)
                    && near(z).iter().any(|x| x == e))
                .then(|| span.to_string())
            });
            let hit = hit.unwrap_or_else(|| {
                panic!(
                    "{name}: {}: no {kind} finding at {}–{} (relay {start} s): {findings:?}",
                    p["name"],
                    utc(a),
                    utc(z)
                )
            });
            said.push(hit);
        }
        let n = said.len();
        said.dedup();
        assert!(
            said.len() <= 1,
            "{name}: one label for all players: {said:?}"
        );
        println!("{name}: {kind} spike at relay {start} s: {said:?} for {n} players");
        checked.push(n);
    }
    checked
}

fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-page");
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

#[test]
fn q3_report_page_loads_offline_and_names_the_relays_spikes() {
    let Some(d) = skip::data_at(captures().join("q3-netquality")) else {
        return;
    };
    for file in ["capture.pcapng", "server-side.pcapng"] {
        let html = scratch(&format!("q3-{file}.html"));
        report(&d.join(file), &html);
        let shots = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target/report-page")
            .join(file);
        let Some(page) = look_at(&html, &shots) else {
            return;
        };
        check_page(&page, file);
        // The lag spike and the loss spike, each on both players.
        assert_eq!(check_spikes(&page, &d, file, true), [2, 2], "{file}");
        assert_eq!(page["players"].as_array().unwrap().len(), 2);
        // A drag across the first player's ping plot: all six of its plots show one
        // narrower range inside the one before; the wheel over the lagometer widens them all.
        let z = &page["zoom"];
        let range = |k: &str| -> Vec<(f64, f64)> {
            z[k].as_array()
                .unwrap()
                .iter()
                .map(|r| (r[0].as_f64().unwrap(), r[1].as_f64().unwrap()))
                .collect()
        };
        let (before, after, wheel) = (range("before"), range("after"), range("wheel"));
        assert_eq!(after.len(), 6, "{file}: six linked charts");
        assert!(
            after.iter().all(|r| *r == after[0]),
            "{file}: linked {after:?}"
        );
        assert!(
            wheel.iter().all(|r| *r == wheel[0]),
            "{file}: linked {wheel:?}"
        );
        let w = |r: (f64, f64)| r.1 - r.0;
        let (b, a, wh) = (before[0], after[0], wheel[0]);
        assert!(
            a.0 > b.0 && a.1 < b.1 && w(a) < 0.4 * w(b),
            "{file}: the drag zoomed in: {b:?} → {a:?}"
        );
        assert!(
            w(wh) > w(a) * 1.2,
            "{file}: the wheel zoomed out: {a:?} → {wh:?}"
        );
        for shot in ["report.png", "report-plots.png"] {
            let n = std::fs::metadata(shots.join(shot)).map_or(0, |m| m.len());
            assert!(n > 20_000, "{file}: screenshot {shot} of {n} bytes");
        }
    }
}

#[test]
fn qw_report_page_loads_offline_and_names_the_relays_spikes() {
    let Some(d) = skip::data_at(captures().join("qw-netquality")) else {
        return;
    };
    for file in ["capture.pcapng", "server-side.pcapng"] {
        let html = scratch(&format!("qw-{file}.html"));
        report(&d.join(file), &html);
        let shots = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("target/report-page/qw")
            .join(file);
        let Some(page) = look_at(&html, &shots) else {
            return;
        };
        check_page(&page, file);
        // The lag spike held only client 1's connection retries, before any player's
        // connection (README): nothing to say of it.
        assert_eq!(check_spikes(&page, &d, file, false), [0], "{file}");
        // The steady loss, said in words, as the relay made it while each played: at the
        // clients' side both ways together (mvdsv's echo cannot tell them apart), at the
        // server's side the client's packets.
        let zero = relay_zero(&d);
        for p in page["players"].as_array().unwrap() {
            let (a, z) = (
                p["first"].as_f64().unwrap() - zero,
                p["last"].as_f64().unwrap() - zero,
            );
            let (up, down) = (relay_loss(&d, true, a, z), relay_loss(&d, false, a, z));
            let want = if file == "capture.pcapng" {
                1.0 - (1.0 - up) * (1.0 - down)
            } else {
                up
            };
            let said = p["findings"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| f["kind"] == "loss-total")
                .filter_map(|f| f["text"].as_str()?.split(" %").next()?.parse::<f64>().ok())
                .next()
                .unwrap_or_else(|| panic!("{file}: {}: no loss said: {p}", p["name"]));
            println!(
                "qw {file}: {}: {said} % lost, relay {:.1} %",
                p["name"],
                want * 100.0
            );
            assert!(
                (said - want * 100.0).abs() < 2.0,
                "{file}: {}: {said} % against the relay's {:.1} %",
                p["name"],
                want * 100.0
            );
        }
    }
}
