//! The library's runnable examples (`examples/`) on stored files: `cargo test` builds them
//! beside the binary, and they must answer what the files hold.
use std::path::{Path, PathBuf};
use std::process::Command;

fn example(name: &str) -> PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_quakecap"));
    let p = bin
        .parent()
        .expect("target dir")
        .join("examples")
        .join(name);
    assert!(
        p.exists(),
        "{} not built (cargo test builds the examples)",
        p.display()
    );
    p
}

fn run(name: &str, input: &Path) -> String {
    assert!(
        input.exists(),
        "{} missing: the project's own data",
        input.display()
    );
    let o = Command::new(example(name))
        .arg(input)
        .output()
        .expect("run example");
    assert!(
        o.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("utf-8")
}

fn shared(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared")
        .join(rel)
}

/// `demo_kills` on a client's demo gives the server log's kills (killer, victim, means).
#[test]
fn demo_kills_prints_the_server_logs_kills() {
    let dir = shared("captures/q3-events");
    let out = run("demo_kills", &dir.join("client1-demo0.dm_68"));
    let log = std::fs::read_to_string(dir.join("server.log")).expect("server.log");
    // `Kill: 1 4 1: Grunt killed LabPlayer2 by MOD_SHOTGUN`
    let truth: Vec<String> = log
        .lines()
        .filter_map(|l| l.split_once("Kill: ")?.1.split_once(": "))
        .filter_map(|(_, t)| {
            let (killer, rest) = t.split_once(" killed ")?;
            let (victim, means) = rest.split_once(" by ")?;
            Some(format!("{killer} -> {victim}  {means}"))
        })
        .collect();
    let got: Vec<String> = out
        .lines()
        .filter(|l| l.contains(" -> "))
        .map(|l| {
            let l = l.trim_start();
            l.split_once("  ").map_or(l, |(_, r)| r).trim().to_string()
        })
        .collect();
    assert_eq!(got.len(), truth.len(), "{out}");
    for (g, t) in got.iter().zip(&truth) {
        assert_eq!(g, t);
    }
    assert!(out.contains(&format!("{} kills", truth.len())));
}

/// `capture_ping` lists the capture's two connections with their players and a ping.
#[test]
fn capture_ping_lists_the_connections() {
    let out = run(
        "capture_ping",
        &shared("captures/q3-netquality/server-side.pcapng"),
    );
    for player in ["LabPlayer1", "LabPlayer2"] {
        let row = out
            .lines()
            .find(|l| l.contains(player))
            .unwrap_or_else(|| panic!("{player} missing: {out}"));
        let ping: f64 = row
            .split_whitespace()
            .nth(3)
            .and_then(|p| p.parse().ok())
            .expect("ping");
        assert!(ping > 0.0, "{row}");
    }
    assert!(out.contains("2 connections"), "{out}");
}
