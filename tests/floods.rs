//! Floods of spoofed datagrams (400,000, each from a source of its own, or to a client of its
//! own for the server's packets; built by `quakecap::flood` from a stored capture) leave the
//! real connection exactly as in the clean capture, are summarised (aggregate rows, never
//! silently dropped) and keep memory bounded.
mod skip;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use quakecap::flood::{merge_flood, FloodKind};
use serde_json::Value;

const COUNT: usize = 400_000;
/// Peak RSS allowed for `quakecap flows` on a flooded capture (issue 11: under 150 MB).
const MAX_RSS_KB: u64 = 150 * 1024;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_quakecap")
}

/// `quakecap ARGS...`, which must succeed, and its peak RSS (KB) when GNU time is there to
/// measure it. The measurement goes to the test's scratch folder, named after `tag` (tests
/// run in parallel).
fn measured(args: &[&OsStr], tag: &str) -> (Output, Option<u64>) {
    let time = Path::new("/usr/bin/time");
    let tag: String = tag
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let rss_file = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{tag}.rss"));
    let out = if time.exists() {
        Command::new(time)
            .args(["-f", "%M", "-o"])
            .arg(&rss_file)
            .arg(bin())
            .args(args)
            .output()
    } else {
        Command::new(bin()).args(args).output()
    }
    .expect("run quakecap");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rss = time
        .exists()
        .then(|| std::fs::read_to_string(&rss_file).ok())
        .flatten()
        .and_then(|s| s.trim().lines().last()?.parse().ok());
    (out, rss)
}

/// `flows --json` of a file: its rows, the peak RSS (see [`measured`]) and its stderr.
fn flows_said(path: &Path) -> (Vec<Value>, Option<u64>, String) {
    let args = ["flows".as_ref(), "--json".as_ref(), path.as_os_str()];
    let (out, rss) = measured(&args, &path.to_string_lossy());
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    (
        serde_json::from_slice(&out.stdout).expect("JSON"),
        rss,
        said,
    )
}

/// `flows --json` of a file and its peak RSS.
fn flows(path: &Path) -> (Vec<Value>, Option<u64>) {
    let (rows, rss, _) = flows_said(path);
    (rows, rss)
}

/// The connection rows without their ids (flood flows may take earlier ids) and file names,
/// but those of the flood's own sources (10.0.0.0/8: a connect flood's first spoofed
/// requests get connection rows of their own).
fn connections(rows: &[Value]) -> Vec<Value> {
    rows.iter()
        .filter(|r| r["kind"] == "connection")
        .filter(|r| {
            !r["client_ip"]
                .as_str()
                .is_some_and(|ip| ip.starts_with("10."))
        })
        .map(|r| {
            let mut r = r.clone();
            if let Some(o) = r.as_object_mut() {
                o.remove("id");
                o.remove("file");
            }
            r
        })
        .collect()
}

/// A stored capture (`captures/BASE/capture.pcapng`) and, written to the test's scratch
/// folder as NAME, that capture with each of `floods` (kind, seed) merged in, in turn.
fn flooded(base: &str, floods: &[(FloodKind, u64)], name: &str) -> (PathBuf, PathBuf) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("floods");
    std::fs::create_dir_all(&dir).unwrap();
    let clean =
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("captures/{base}/capture.pcapng"));
    let mut bytes = std::fs::read(&clean).expect("stored capture");
    for &(kind, seed) in floods {
        bytes = merge_flood(&bytes, kind, COUNT, seed).unwrap();
    }
    let out = dir.join(name);
    std::fs::write(&out, bytes).unwrap();
    (clean, out)
}

/// The connection rows of the real clients (127.0.0.1), whole.
fn real_connections(rows: &[Value]) -> Vec<Value> {
    rows.iter()
        .filter(|r| r["kind"] == "connection" && r["client_ip"] == "127.0.0.1")
        .cloned()
        .collect()
}

fn check(base: &str, kind: FloodKind, aggregate_kind: &str, command: &str) {
    let name = format!("{base}-{}.pcapng", kind.name());
    let (clean, flooded) = flooded(base, &[(kind, 0x5eed)], &name);
    let (clean_rows, _) = flows(&clean);
    let (rows, rss) = flows(&flooded);
    // The real connection: exactly the clean capture's counts.
    let want = connections(&clean_rows);
    assert!(!want.is_empty());
    assert_eq!(connections(&rows), want, "{base} + {}", kind.name());
    // Everything the flood sent is counted: in flows of its own, or in one aggregate row.
    let agg: Vec<&Value> = rows
        .iter()
        .filter(|r| r["kind"] == aggregate_kind)
        .collect();
    assert_eq!(agg.len(), 1, "one aggregate row: {agg:?}");
    let a = agg[0];
    assert_eq!(a["command"], command);
    let flood_flows = rows
        .iter()
        .filter(|r| !r["kind"].as_str().unwrap_or("").ends_with("aggregate"))
        .count()
        - clean_rows.len();
    let requests = a["requests"].as_u64().unwrap();
    assert_eq!(requests as usize + flood_flows, COUNT, "{a}");
    // Every flood datagram has its own source (the estimate is within 5% of the truth), but
    // the server's packets to spoofed clients, which all come from the server.
    let sources = a["sources"].as_u64().unwrap() as f64;
    if kind == FloodKind::ServerNetchan {
        assert_eq!(sources, 1.0, "{a}");
    } else {
        assert!((sources / requests as f64 - 1.0).abs() < 0.05, "{a}");
    }
    match rss {
        Some(kb) => assert!(kb < MAX_RSS_KB, "peak RSS {kb} KB"),
        None => {
            skip::tool("GNU time at /usr/bin/time, for the memory bound (apt-get install time)")
        }
    }
}

#[test]
fn quake3_getinfo_flood() {
    check(
        "q3-basic",
        FloodKind::Q3Getinfo,
        "query_aggregate",
        "getinfo",
    );
}

#[test]
fn quakeworld_status_flood() {
    check("qw-basic", FloodKind::QwStatus, "query_aggregate", "status");
}

#[test]
fn quake3_client_netchan_flood() {
    check(
        "q3-basic",
        FloodKind::ClientNetchan,
        "other_aggregate",
        "other",
    );
}

#[test]
fn quakeworld_client_netchan_flood() {
    check(
        "qw-basic",
        FloodKind::ClientNetchan,
        "other_aggregate",
        "other",
    );
}

#[test]
fn quake3_connect_flood() {
    // Replays of the capture's own connect: each passes as a Quake 3 connect (its userinfo
    // starts `"\`), so the first spoofed sources get connection rows, the rest the aggregate.
    check(
        "q3-basic",
        FloodKind::Q3Connect,
        "query_aggregate",
        "connect",
    );
}

#[test]
fn quake3_server_netchan_flood() {
    // The server's own packets to spoofed clients: no connection joined mid-session.
    check(
        "q3-basic",
        FloodKind::ServerNetchan,
        "other_aggregate",
        "other",
    );
}

#[test]
fn quakeworld_connect_flood() {
    // 10,000 spoofed handshakes fill the handshakes' room before the real client connects:
    // its getchallenge and connect are summed, but the server's accept starts its
    // connection, decoded whole from there (same map, qport and netchan packets; only the
    // two handshake requests and the challenge reply are in the aggregates).
    let floods = [(FloodKind::QwConnect, 0x5eed)];
    let (clean, flooded) = flooded("qw-basic", &floods, "qw-basic-qw-connect.pcapng");
    let (clean_rows, _) = flows(&clean);
    let (rows, rss) = flows(&flooded);
    let (want, got) = (real_connections(&clean_rows), real_connections(&rows));
    assert_eq!((want.len(), got.len()), (1, 1), "{got:?}");
    let (w, g) = (&want[0], &got[0]);
    for k in ["map", "qport", "errors", "error_details"] {
        assert_eq!(g.get(k), w.get(k), "{k}");
    }
    let packets = |r: &Value, d: &str| r["packets"][d].as_u64().unwrap();
    assert_eq!(
        packets(g, "c2s"),
        packets(w, "c2s") - 2,
        "getchallenge and connect summed"
    );
    assert_eq!(
        packets(g, "s2c"),
        packets(w, "s2c") - 1,
        "the challenge reply summed"
    );
    let connect = rows
        .iter()
        .find(|r| r["kind"] == "query_aggregate" && r["command"] == "connect")
        .expect("a connect aggregate");
    assert_eq!(connect["requests"], COUNT as u64 - 10_000 + 1, "{connect}");
    if let Some(kb) = rss {
        assert!(kb < MAX_RSS_KB, "peak RSS {kb} KB");
    }
}

#[test]
fn quake3_late_client_after_query_and_connect_floods() {
    // A getinfo flood fills the query flows and a connect flood the connections before the
    // second client arrives (5 s in): its getchallenge and connect are summed, and it is
    // recognised by its netchan, as a connection joined mid-session (not other UDP).
    let floods = [
        (FloodKind::Q3Getinfo, 0x5eed),
        (FloodKind::Q3Connect, 0x5eee),
    ];
    let name = "q3-two-clients-getinfo-connect.pcapng";
    let (clean, flooded) = flooded("q3-two-clients", &floods, name);
    let (clean_rows, _) = flows(&clean);
    let (rows, _) = flows(&flooded);
    let (want, got) = (real_connections(&clean_rows), real_connections(&rows));
    assert_eq!((want.len(), got.len()), (2, 2), "{got:?}");
    let late = &got[1];
    assert_eq!(late["qport"], want[1]["qport"]);
    let c2s = |r: &Value| r["packets"]["c2s"].as_u64().unwrap();
    // Its getchallenge and connect are in the aggregates.
    assert_eq!(c2s(late), c2s(&want[1]) - 2, "{late}");
    assert!(
        late["error_details"][0]["kind"] == "mid_session",
        "{}",
        late["error_details"]
    );
}

#[test]
fn game_events_and_report_stay_bounded_under_floods() {
    // Every flow of a flood got a game-events extractor (24 KB of configstrings) from its
    // first connectionless packet: 278 MB for `events` on a connect flood.
    for kind in [FloodKind::Q3Connect, FloodKind::Q3Getinfo] {
        let name = format!("q3-basic-{}-events.pcapng", kind.name());
        let (_, flooded) = flooded("q3-basic", &[(kind, 0x5eed)], &name);
        let html = flooded.with_extension("html");
        let runs: [Vec<&OsStr>; 2] = [
            vec!["events".as_ref(), flooded.as_os_str()],
            vec![
                "report".as_ref(),
                flooded.as_os_str(),
                "-o".as_ref(),
                html.as_os_str(),
            ],
        ];
        for args in &runs {
            match measured(args, &format!("{name}-{:?}", args[0])).1 {
                Some(kb) => assert!(kb < MAX_RSS_KB, "{args:?}: peak RSS {kb} KB"),
                None => skip::tool(
                    "GNU time at /usr/bin/time, for the memory bound (apt-get install time)",
                ),
            }
        }
    }
}

#[test]
fn ip_fragment_flood() {
    // Lone first fragments never make a datagram: no flow, but the real connection as in the
    // clean capture and every one of them said, once, on stderr.
    let floods = [(FloodKind::IpFragments, 0x5eed)];
    let (clean, flooded) = flooded("q3-basic", &floods, "q3-basic-ip-fragments.pcapng");
    let (clean_rows, _) = flows(&clean);
    let (rows, rss, stderr) = flows_said(&flooded);
    assert_eq!(connections(&rows), connections(&clean_rows));
    assert_eq!(rows.len(), clean_rows.len(), "no flow of the flood's");
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("fragmented IP datagrams never completed"))
        .collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(
        said[0].contains(&format!("{COUNT} fragmented")),
        "{}",
        said[0]
    );
    if let Some(kb) = rss {
        assert!(kb < MAX_RSS_KB, "peak RSS {kb} KB");
    }
}

#[test]
fn random_udp_flood() {
    check("q3-basic", FloodKind::RandomUdp, "other_aggregate", "other");
}

/// `quakecap ARGS...` (which must succeed): its standard output.
fn stdout_of(args: &[&OsStr]) -> String {
    let out = Command::new(bin())
        .args(args)
        .output()
        .expect("run quakecap");
    assert!(out.status.success(), "{args:?}");
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn tables_sum_a_floods_one_shot_flows() {
    // Ten thousand rows of a packet or two (a connection attempt or a query per spoofed
    // source) made the `flows` table and the report's flows table unreadable (and the report
    // 2 MB): past 16 of one kind per server they are one line, computed here from the JSON
    // rows. The spread-out connects are answered (a getchallenge, its challenge, a connect).
    let spread = {
        let clean = Path::new(env!("CARGO_MANIFEST_DIR")).join("captures/q3-basic/capture.pcapng");
        let base = std::fs::read(clean).expect("stored capture");
        let bytes = quakecap::flood::repeat_session(&base, 3, 2_000, 50_000_000).unwrap();
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("floods");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("q3-basic-answered-connects-table.pcapng");
        std::fs::write(&path, bytes).unwrap();
        path
    };
    let floods = [
        (
            FloodKind::Q3Connect,
            "connection attempts without a session",
        ),
        (FloodKind::Q3Getinfo, "queries"),
    ];
    let mut inputs: Vec<(PathBuf, &str)> = floods
        .iter()
        .map(|&(kind, what)| {
            let name = format!("q3-basic-{}-table.pcapng", kind.name());
            (flooded("q3-basic", &[(kind, 0x5eed)], &name).1, what)
        })
        .collect();
    inputs.push((spread, "connection attempts without a session"));
    for (flooded, what) in inputs {
        let (rows, _) = flows(&flooded);
        let one_shot: Vec<&Value> = rows
            .iter()
            .filter(|r| r["kind"] == "query" || (r["kind"] == "connection" && r["map"].is_null()))
            .filter(|r| {
                r["packets"]["s2c"].as_u64() <= Some(4) && r["packets"]["c2s"].as_u64() <= Some(4)
            })
            .collect();
        assert!(one_shot.len() > 1000, "{}", one_shot.len());
        let server = one_shot[0]["server"].as_str().unwrap();
        assert!(one_shot.iter().all(|r| r["server"] == server));
        let sources: std::collections::HashSet<&str> = one_shot
            .iter()
            .map(|r| r["client_ip"].as_str().unwrap())
            .collect();
        let count = |v: usize| quakecap::sink::table::grouped(v as u64);
        let datagrams: u64 = one_shot
            .iter()
            .map(|r| r["packets"]["c2s"].as_u64().unwrap())
            .sum();
        let datagrams = if datagrams > one_shot.len() as u64 {
            format!("{} datagrams, ", count(datagrams as usize))
        } else {
            String::new()
        };
        let answered = one_shot.iter().filter(|r| r["packets"]["s2c"] != 0).count();
        let line = format!(
            "q3 {server}: {} {what} ({datagrams}{} answered) from {} sources",
            count(one_shot.len()),
            count(answered),
            count(sources.len())
        );
        let spoofed = |text: &str| text.matches("10.0.").count();
        let table = stdout_of(&["flows".as_ref(), flooded.as_os_str()]);
        assert!(
            table.contains(&format!("{line} (--all lists them)")),
            "{line}\n{table}"
        );
        assert_eq!(spoofed(&table), 0, "{table}");
        let all = stdout_of(&["flows".as_ref(), "--all".as_ref(), flooded.as_os_str()]);
        assert_eq!(spoofed(&all), one_shot.len(), "--all lists every one");
        assert!(!all.contains(&line));
        let html = flooded.with_extension("table.html");
        let args = ["report".as_ref(), flooded.as_os_str(), "-o".as_ref()];
        stdout_of(&[&args[..], &[html.as_os_str()]].concat());
        let page = std::fs::read_to_string(&html).unwrap();
        assert!(
            page.contains(&format!("{line} (flows --json lists them)")),
            "{line}"
        );
        assert!(page.len() < 200_000, "report of {} bytes", page.len());
        if !rows.iter().any(|r| r["kind"] == "query_aggregate") {
            continue;
        }
        assert!(page.contains("(past the flow limits)"), "the aggregate");
        assert!(
            table.contains("127.0.0.1:27961"),
            "the real client: {table}"
        );
    }
}

#[test]
fn connects_spread_over_time_stay_bounded_by_the_rows_limit() {
    // The live limits bound a flood within 200 s (the idle release time); spread over
    // longer, flows stop counting as they go idle, so the rows themselves are capped. Here
    // a real getchallenge, challenge and connect from a new source every 50 ms, 45,000
    // times (37 minutes): at most MAX_FLOW_ROWS rows, the rest summed, memory bounded.
    use quakecap::flow::table::MAX_FLOW_ROWS;
    let clean = Path::new(env!("CARGO_MANIFEST_DIR")).join("captures/q3-basic/capture.pcapng");
    let base = std::fs::read(clean).expect("stored capture");
    let sessions = MAX_FLOW_ROWS + 5_000;
    let bytes = quakecap::flood::repeat_session(&base, 3, sessions, 50_000_000).unwrap();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("floods");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("q3-basic-slow-connects.pcapng");
    std::fs::write(&path, bytes).unwrap();
    let (rows, rss, said) = flows_said(&path);
    let flows = rows.iter().filter(|r| r["kind"] == "connection").count();
    assert_eq!(
        flows, MAX_FLOW_ROWS,
        "rows up to the limit, all connections"
    );
    // Every session's connect is a row or summed in its aggregate.
    let connects: u64 = rows
        .iter()
        .filter(|r| r["kind"] == "query_aggregate" && r["command"] == "connect")
        .map(|r| r["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(flows as u64 + connects, sessions as u64, "{said}");
    // Said once, with the frame of the first refused flow.
    assert_eq!(said.matches("flow rows full").count(), 1, "{said}");
    match rss {
        Some(kb) => assert!(kb < MAX_RSS_KB, "peak RSS {kb} KB"),
        None => {
            skip::tool("GNU time at /usr/bin/time, for the memory bound (apt-get install time)")
        }
    }
}
