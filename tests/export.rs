//! Issue 16, items 3–4: `quakecap export` to Parquet. Every stored capture and the shared demos
//! (`../shared/demos`; when absent a visible skip, fatal under CI) are exported, read back with
//! the `parquet` crate, and their row counts compared with what `quakecap decode --json` shows
//! for the same input (counted here from decode's output; for the large shared demos, from the
//! same decoded messages counted in-process, a count that equals decode --json's on every
//! stored capture). Bad inputs are skipped (exit 2), a re-run replaces a partition, a failed
//! export leaves the old partition whole. The README's DuckDB queries and the Spark script run
//! when DuckDB / pyspark and Java are installed (.ci/run installs them; a missing one is a
//! visible skip, fatal under CI).
use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

mod skip;
use std::process::{Command, Output};
use std::sync::OnceLock;

use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use quakecap::pipeline::{Event, Report, Sink, Tee};
use quakecap::sink::export::{self, partition, schema, ExportSink};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_quakecap"));
    c.env_remove("QUAKECAP_THREADS");
    c
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh empty folder for one test.
fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("export-{name}"));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).expect("temp dir");
    d
}

fn captures() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(repo().join("captures"))
        .expect("captures/")
        .filter_map(|e| e.ok().map(|e| e.path().join("capture.pcapng")))
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}

/// The demos of `../shared/demos/{q3,qw}`, or None (a skip, fatal under CI) when the folder
/// is absent.
fn shared_demos() -> Option<Vec<PathBuf>> {
    let dir = repo().join("../shared/demos");
    if !dir.is_dir() {
        skip::data(&dir);
        return None;
    }
    let mut v = Vec::new();
    for game in ["q3", "qw"] {
        let Ok(rd) = fs::read_dir(dir.join(game)) else {
            skip::data(&dir.join(game));
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let n = p.to_string_lossy().to_ascii_lowercase();
            let demo = n.ends_with(".mvd")
                || n.ends_with(".qwd")
                || p.extension()
                    .is_some_and(|x| x.to_string_lossy().starts_with("dm_"));
            if p.is_file() && demo {
                v.push(p);
            }
        }
    }
    v.sort();
    Some(v)
}

fn run(c: &mut Command) -> Output {
    c.output().expect("quakecap runs")
}

/// Rows of one partition file, from its footer.
fn rows(out: &Path, table: &str, source: &str) -> i64 {
    let p = partition::partition_dir(out, table, source).join(partition::PART_FILE);
    let f = fs::File::open(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let r = SerializedFileReader::new(f).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    r.metadata().file_metadata().num_rows()
}

/// What `decode --json` shows for one input, counted per table.
#[derive(Debug, Default, PartialEq, Eq)]
struct Expected {
    messages: i64,
    usercmds: i64,
    player_states: i64,
    server_commands: i64,
}

fn expected_from_decode(input: &Path) -> Expected {
    let out = run(bin().arg("decode").arg("--json").arg(input));
    assert!(
        out.status.code() == Some(0),
        "decode --json {}: {:?}",
        input.display(),
        out.status
    );
    let mut e = Expected::default();
    for line in out.stdout.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let m: serde_json::Value = serde_json::from_slice(line).expect("a JSON line");
        e.messages += 1;
        let kind = m["kind"].as_str().unwrap_or("");
        let game = m["game"].as_str().unwrap_or("");
        let Some(ops) = m["ops"].as_array() else {
            continue;
        };
        for op in ops {
            let name = op["op"].as_str().unwrap_or("");
            match (kind, game, name) {
                ("client", _, _) => {
                    if let Some(cmds) = op["cmds"].as_array() {
                        e.usercmds += cmds.len() as i64;
                    } else if op.get("cmd").is_some() {
                        e.usercmds += 1;
                    }
                }
                ("server", "q3", "serverCommand") => e.server_commands += 1,
                ("server", "q3", "snapshot") => e.player_states += 1,
                ("server", "qw", "print" | "stufftext" | "centerprint") => e.server_commands += 1,
                ("server", "qw", "playerinfo") => e.player_states += 1,
                _ => {}
            }
        }
    }
    e
}

/// The same counts as [`expected_from_decode`], taken from the decoded messages in-process
/// (the messages `decode --json` prints one line each): the shared demos give 1 GB of JSON,
/// which a debug build takes minutes to write and parse.
fn expected_from_messages(input: &Path) -> Expected {
    use quakecap::q3::clc::ClientOp as Q3Client;
    use quakecap::q3::svc::ServerOp as Q3Server;
    use quakecap::qw::clc::ClientOp as QwClient;
    use quakecap::qw::message::OpKind;
    use quakecap::qw::svc::ServerOp as QwServer;
    struct Count(Expected);
    impl Sink for Count {
        fn event(&mut self, e: Event<'_>) -> io::Result<()> {
            let c = &mut self.0;
            match e {
                Event::Q3(m) => {
                    c.messages += 1;
                    for op in m.client().map_or(&[][..], |x| &x.ops[..]) {
                        if let Q3Client::Move { cmds, .. } = op {
                            c.usercmds += cmds.len() as i64;
                        }
                    }
                    for op in m.server().map_or(&[][..], |x| &x.ops[..]) {
                        match op {
                            Q3Server::ServerCommand { .. } => c.server_commands += 1,
                            Q3Server::Snapshot(_) => c.player_states += 1,
                            _ => {}
                        }
                    }
                }
                Event::Qw(m) => {
                    c.messages += 1;
                    for op in &m.ops {
                        match &op.kind {
                            OpKind::Client(QwClient::Move { cmds, .. }) => {
                                c.usercmds += cmds.len() as i64
                            }
                            OpKind::Client(QwClient::Democmd { .. }) => c.usercmds += 1,
                            OpKind::Server(
                                QwServer::Print { .. }
                                | QwServer::Stufftext { .. }
                                | QwServer::Centerprint { .. },
                            ) => c.server_commands += 1,
                            OpKind::Server(QwServer::Playerinfo(_)) => c.player_states += 1,
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
            Ok(())
        }
    }
    let mut count = Count(Expected::default());
    let opts = quakecap::pipeline::Options {
        detail: quakecap::pipeline::Detail::Full,
        ..Default::default()
    };
    let r = if quakecap::pipeline::is_demo(input) {
        quakecap::pipeline::run_demo(input, &opts, &mut count)
    } else {
        quakecap::pipeline::run_capture(input, &opts, &mut count, &mut |_| {})
    };
    r.unwrap_or_else(|e| panic!("{}: {e}", input.display()));
    count.0
}

/// Every stored capture and shared demo, in the order they are exported.
fn all_inputs() -> Vec<PathBuf> {
    let mut v = captures();
    v.extend(shared_demos().unwrap_or_default());
    v
}

/// One export of [`all_inputs`] shared by the tests that only read it (under the target's
/// temporary folder, replaced by the next run).
fn full_export() -> &'static Path {
    static OUT: OnceLock<PathBuf> = OnceLock::new();
    OUT.get_or_init(|| {
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("export-all");
        let _ = fs::remove_dir_all(&out);
        let r = run(bin()
            .arg("export")
            .args(all_inputs())
            .arg("--out")
            .arg(&out));
        assert_eq!(
            r.status.code(),
            Some(0),
            "export: {}",
            String::from_utf8_lossy(&r.stderr)
        );
        assert!(!out.join(partition::STAGING_DIR).exists(), "staging left");
        out
    })
}

/// Check every table of `inputs` (part of [`all_inputs`]) in the shared export against decode.
fn compare_with_decode(name: &str, inputs: &[PathBuf], via_json: bool) {
    let out = full_export();
    let all = all_inputs();
    let names = partition::source_names(&all);
    let source = |p: &PathBuf| -> String {
        let i = all.iter().position(|a| a == p).expect("an exported input");
        names[i].clone()
    };
    // Decode runs two at a time (the machine is shared).
    let expected: Vec<Expected> = std::thread::scope(|s| {
        let half = inputs.len().div_ceil(2).max(1);
        let parts: Vec<_> = inputs
            .chunks(half)
            .map(|c| {
                s.spawn(move || {
                    c.iter()
                        .map(|p| {
                            let counted = expected_from_messages(p);
                            if via_json {
                                // The in-process count is decode --json's count.
                                assert_eq!(expected_from_decode(p), counted, "{}", p.display());
                            }
                            counted
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        parts
            .into_iter()
            .flat_map(|h| h.join().expect("decode thread"))
            .collect()
    });
    let mut checked = 0;
    for (input, want) in inputs.iter().zip(expected) {
        let source = source(input);
        let got = Expected {
            messages: rows(out, "messages", &source),
            usercmds: rows(out, "usercmds", &source),
            player_states: rows(out, "player_states", &source),
            server_commands: rows(out, "server_commands", &source),
        };
        assert_eq!(got, want, "{}: export vs decode --json", input.display());
        assert!(got.messages > 0, "{}: no message", input.display());
        // The tables decode does not show are there too.
        for t in schema::TABLES {
            rows(out, t.name, &source);
        }
        assert!(rows(out, "flows", &source) > 0);
        checked += 1;
    }
    eprintln!("{name}: {checked} inputs, row counts equal decode --json's");
}

#[test]
fn stored_captures_match_decode_json() {
    let caps = captures();
    assert!(caps.len() >= 10, "the stored captures are in captures/");
    compare_with_decode("captures", &caps, true);
}

#[test]
fn shared_demos_match_decode_json() {
    let Some(demos) = shared_demos() else { return };
    assert!(demos.len() >= 25, "only {} shared demos", demos.len());
    assert!(
        demos.iter().any(|p| p.to_string_lossy().contains("/q3/"))
            && demos.iter().any(|p| p.to_string_lossy().contains("/qw/")),
        "demos of both games"
    );
    compare_with_decode("demos", &demos, false);
}

/// The files read back whole: every column of every row of a small export, and the values of
/// a few cells against decode.
#[test]
fn files_read_back_with_their_schema() {
    let out = scratch("readback");
    let cap = repo().join("captures/q3-basic/capture.pcapng");
    let res = run(bin().arg("export").arg(&cap).arg("--out").arg(&out));
    assert_eq!(res.status.code(), Some(0));
    for t in schema::TABLES {
        let p = partition::partition_dir(&out, t.name, "capture").join(partition::PART_FILE);
        let r = SerializedFileReader::new(fs::File::open(&p).expect("part file")).expect("parquet");
        let names: Vec<String> = r
            .metadata()
            .file_metadata()
            .schema_descr()
            .columns()
            .iter()
            .map(|c| c.name().to_string())
            .collect();
        let want: Vec<&str> = t.columns.iter().map(|c| c.name).collect();
        assert_eq!(names, want, "{} columns", t.name);
        let mut n = 0;
        for row in r.get_row_iter(None).expect("rows") {
            let row = row.expect("a row");
            assert_eq!(row.len(), t.columns.len());
            n += 1;
        }
        assert_eq!(n, r.metadata().file_metadata().num_rows(), "{}", t.name);
    }
    // The first message equals decode's first line.
    let dec = run(bin().arg("decode").arg("--json").arg(&cap));
    let first: serde_json::Value =
        serde_json::from_slice(dec.stdout.split(|b| *b == b'\n').next().expect("a line"))
            .expect("json");
    let p = partition::partition_dir(&out, "messages", "capture").join(partition::PART_FILE);
    let r = SerializedFileReader::new(fs::File::open(&p).expect("messages")).expect("parquet");
    let row = r
        .get_row_iter(None)
        .expect("rows")
        .next()
        .expect("a row")
        .expect("ok");
    let cols: BTreeMap<String, Field> = row
        .get_column_iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(
        cols["flow"],
        Field::Long(first["flow"].as_i64().expect("flow"))
    );
    assert_eq!(
        cols["frame"],
        Field::Long(first["frame"].as_i64().expect("frame"))
    );
    assert_eq!(
        cols["time"],
        Field::Double(first["time"].as_f64().expect("time"))
    );
    assert_eq!(
        cols["kind"],
        Field::Str(first["kind"].as_str().expect("kind").into())
    );
    let _ = fs::remove_dir_all(&out);
}

#[test]
fn unreadable_input_is_reported_skipped_and_exits_2() {
    let dir = scratch("bad-input");
    let junk = dir.join("junk.pcap");
    fs::write(&junk, b"this is not a capture at all, just some text\n").expect("junk");
    let missing = dir.join("missing.pcapng");
    let good = repo().join("captures/q3-basic/capture.pcapng");
    let good2 = repo().join("captures/qw-basic/capture.pcapng");
    let out = dir.join("out");
    let res = run(bin()
        .arg("export")
        .arg(&good)
        .arg(&junk)
        .arg(&missing)
        .arg(&good2)
        .arg("--out")
        .arg(&out));
    let err = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(2), "stderr: {err}");
    assert!(
        err.contains("junk.pcap") && err.contains("skipped"),
        "{err}"
    );
    assert!(err.contains("missing.pcapng"), "{err}");
    for t in schema::TABLES {
        // The good inputs (distinct names from their folders) are there, the bad ones not.
        for s in ["q3-basic_capture", "qw-basic_capture"] {
            assert!(partition::partition_dir(&out, t.name, s)
                .join("part-0.parquet")
                .is_file());
        }
        for s in ["junk", "missing"] {
            assert!(!partition::partition_dir(&out, t.name, s).exists(), "{s}");
        }
    }
    assert!(rows(&out, "messages", "q3-basic_capture") > 0);
    assert!(!out.join(partition::STAGING_DIR).exists());
    let _ = fs::remove_dir_all(&dir);
}

/// The partition files of one source, with their bytes.
fn snapshot(out: &Path, source: &str) -> BTreeMap<String, Vec<u8>> {
    let mut m = BTreeMap::new();
    for t in schema::TABLES {
        let d = partition::partition_dir(out, t.name, source);
        for e in fs::read_dir(&d).expect("partition").flatten() {
            let name = format!("{}/{}", t.name, e.file_name().to_string_lossy());
            m.insert(name, fs::read(e.path()).expect("file"));
        }
    }
    m
}

#[test]
fn rerun_replaces_a_partition_atomically() {
    let dir = scratch("rerun");
    let out = dir.join("out");
    let a = repo().join("captures/q3-basic/capture.pcapng");
    let b = repo().join("captures/q3-proto71/capture.pcapng");
    let export_as = |input: &Path| {
        let r = run(bin()
            .arg("export")
            .arg(input)
            .arg("--source")
            .arg("match")
            .arg("--out")
            .arg(&out));
        assert_eq!(
            r.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&r.stderr)
        );
    };
    export_as(&a);
    let first = snapshot(&out, "match");
    let first_rows = rows(&out, "messages", "match");
    // Same input again: the same files, one each.
    export_as(&a);
    assert_eq!(
        snapshot(&out, "match").keys().collect::<Vec<_>>(),
        first.keys().collect::<Vec<_>>()
    );
    assert_eq!(rows(&out, "messages", "match"), first_rows);
    // Another input under the same name replaces every table's partition.
    export_as(&b);
    let second = snapshot(&out, "match");
    assert_eq!(second.len(), schema::TABLES.len(), "one file per table");
    assert_ne!(second, first);
    assert_ne!(rows(&out, "messages", "match"), first_rows);
    assert!(!out.join(partition::STAGING_DIR).exists());

    // A failed export (the output fails midway) leaves the old partition as it was.
    struct FailAfter(usize);
    impl Sink for FailAfter {
        fn event(&mut self, _e: Event<'_>) -> io::Result<()> {
            if self.0 == 0 {
                return Err(io::Error::other("disk full (simulated)"));
            }
            self.0 -= 1;
            Ok(())
        }
        fn finish(&mut self, _r: &Report) -> io::Result<()> {
            Ok(())
        }
    }
    let mut sink = ExportSink::new(&out, "match").expect("export sink");
    let mut fail = FailAfter(500);
    {
        let mut tee = Tee(vec![&mut sink, &mut fail]);
        let r = quakecap::pipeline::run_capture(&a, &export::options(), &mut tee, &mut |_| {});
        assert!(r.is_err(), "the failing sink stops the run");
    }
    let staged = || {
        fs::read_dir(out.join(partition::STAGING_DIR))
            .map(|d| d.count())
            .unwrap_or(0)
    };
    assert_eq!(staged(), 1, "the source is staged while it is written");
    drop(sink);
    assert_eq!(snapshot(&out, "match"), second, "old partition untouched");
    assert_eq!(staged(), 0, "the failed source's staging folder is removed");
    let _ = fs::remove_dir_all(&dir);
}

/// A Python interpreter with `module`, if any.
fn python_with(module: &str) -> Option<String> {
    for py in ["python3", "python"] {
        let ok = Command::new(py)
            .args(["-c", &format!("import {module}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return Some(py.to_string());
        }
    }
    None
}

/// The queries' results by DuckDB: the Python package (scripts/duckdb_export.py), else the
/// `duckdb` CLI; None when neither is installed.
fn duckdb_results(out: &Path) -> Option<serde_json::Value> {
    let Some(py) = python_with("duckdb") else {
        return duckdb_cli_results(out);
    };
    let r = run(Command::new(py)
        .arg(repo().join("scripts/duckdb_export.py"))
        .arg(out)
        .arg("--json"));
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    Some(serde_json::from_slice(&r.stdout).expect("json results"))
}

#[test]
fn duckdb_queries_run_over_the_export() {
    let cli = Command::new("duckdb")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    if python_with("duckdb").is_none() && !cli {
        return skip::tool(
            "DuckDB: the duckdb Python package or the duckdb CLI (pip install duckdb duckdb-cli)",
        );
    }
    let res = duckdb_results(full_export()).expect("duckdb");
    let ping = res["players_by_median_ping"].as_array().expect("ping rows");
    assert!(!ping.is_empty(), "players with a ping");
    for row in ping {
        let ms = row[2].as_f64().expect("median ping");
        assert!((0.0..2000.0).contains(&ms), "{row}");
    }
    let frags = res["frags_per_player"].as_array().expect("frag rows");
    assert!(!frags.is_empty(), "kills in the captures and demos");
    eprintln!(
        "duckdb: {} players with a ping, {} with frags",
        ping.len(),
        frags.len()
    );
}

#[test]
fn spark_script_runs_the_same_queries() {
    let java = Command::new("java")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    let pyspark = python_with("pyspark");
    let Some(py) = pyspark.clone().filter(|_| java) else {
        let missing = match (pyspark.is_some(), java) {
            (false, false) => "pyspark and Java",
            (false, true) => "pyspark",
            _ => "Java",
        };
        return skip::tool(&format!(
            "{missing} not installed (the Spark test needs pyspark and a JRE: pip install pyspark, apt-get install default-jre-headless)"
        ));
    };
    let inputs = all_inputs();
    let out = scratch("spark");
    let list = out.join("inputs.txt");
    let text: String = inputs
        .iter()
        .map(|p| format!("{}\n", p.display()))
        .collect();
    fs::write(&list, text).expect("list");
    let parts = out.join("parquet");
    let r = run(Command::new(py)
        .arg(repo().join("scripts/spark_export.py"))
        .arg("--quakecap")
        .arg(env!("CARGO_BIN_EXE_quakecap"))
        .arg("--out")
        .arg(&parts)
        .args(["--master", "local[2]", "--json"])
        .arg(&list));
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let text = String::from_utf8_lossy(&r.stdout);
    let last = text.lines().last().expect("results");
    let spark: serde_json::Value = serde_json::from_str(last).expect("json results");
    for name in ["players_by_median_ping", "frags_per_player"] {
        assert!(
            spark[name].as_array().is_some_and(|a| !a.is_empty()),
            "{name}"
        );
    }
    // Same export, same queries: DuckDB and Spark agree.
    if let Some(duck) = duckdb_results(&parts) {
        assert_eq!(spark, duck, "Spark SQL and DuckDB results");
    } else {
        skip::tool("DuckDB, to compare the Spark results (pip install duckdb duckdb-cli)");
    }
    let _ = fs::remove_dir_all(&out);
}

/// The Spark driver names partitions as `quakecap export` does (it passes `--source`).
#[test]
fn spark_script_names_sources_like_quakecap() {
    let Some(py) = python_with("json") else {
        return skip::tool("python3");
    };
    let paths = [
        "captures/q3-basic/capture.pcapng",
        "captures/qw-basic/capture.pcapng",
        "demos/1on1[tron].mvd.gz",
        "a/x.dm_68",
        "b/a_x.dm_68",
        "a/x.dm_68",
        "solo.qwd",
    ];
    let code = format!(
        "import sys, json; sys.path.insert(0, {:?}); import spark_export; print(json.dumps(spark_export.source_names(json.loads(sys.argv[1]))))",
        repo().join("scripts").display().to_string()
    );
    let r = run(Command::new(py)
        .args(["-c", &code])
        .arg(serde_json::to_string(&paths).expect("json")));
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let py_names: Vec<String> = serde_json::from_slice(&r.stdout).expect("names");
    let rust: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
    assert_eq!(py_names, partition::source_names(&rust));
}

#[test]
fn nothing_to_export_exits_3() {
    let dir = scratch("nothing");
    fs::write(dir.join("notes.txt"), "no capture here\n").expect("notes");
    let r = run(bin()
        .arg("export")
        .arg(&dir)
        .arg("--out")
        .arg(dir.join("out")));
    assert_eq!(
        r.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    assert!(String::from_utf8_lossy(&r.stderr).contains("no capture or demo"));
    let _ = fs::remove_dir_all(&dir);
}

/// `(name, sql)` of each `-- name:` block of scripts/export_queries.sql.
fn export_queries() -> Vec<(String, String)> {
    let text = fs::read_to_string(repo().join("scripts/export_queries.sql")).expect("queries");
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("-- name:") {
            out.push((name.trim().to_string(), String::new()));
        } else if let Some((_, sql)) = out.last_mut() {
            if !line.starts_with("--") {
                sql.push_str(line);
                sql.push('\n');
            }
        }
    }
    for (_, sql) in &mut out {
        *sql = sql.trim().trim_end_matches(';').to_string();
    }
    out
}

/// The queries' rows through the `duckdb` CLI, as the Python runner gives them (first column
/// text, the others numbers).
fn duckdb_cli_results(out: &Path) -> Option<serde_json::Value> {
    let present = Command::new("duckdb")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !present {
        return None;
    }
    let mut views = String::new();
    for t in schema::TABLES {
        let glob = out.join(t.name).join("*").join("*.parquet");
        views.push_str(&format!(
            "CREATE VIEW {} AS SELECT * FROM read_parquet('{}', hive_partitioning = true);\n",
            t.name,
            glob.display().to_string().replace('\'', "''")
        ));
    }
    let mut results = serde_json::Map::new();
    for (name, sql) in export_queries() {
        let r = run(Command::new("duckdb")
            .args([":memory:", "-noheader", "-list", "-separator", "\t", "-c"])
            .arg(format!("{views}{sql};")));
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        let rows: Vec<serde_json::Value> = String::from_utf8_lossy(&r.stdout)
            .lines()
            .filter(|l| !l.is_empty())
            .map(|l| {
                let cells = l.split('\t').enumerate().map(|(i, c)| {
                    let number = (i > 0)
                        .then(|| {
                            c.parse::<i64>()
                                .map(serde_json::Value::from)
                                .or_else(|_| c.parse::<f64>().map(serde_json::Value::from))
                                .ok()
                        })
                        .flatten();
                    number.unwrap_or_else(|| serde_json::Value::from(c))
                });
                serde_json::Value::Array(cells.collect())
            })
            .collect();
        results.insert(name, serde_json::Value::Array(rows));
    }
    Some(serde_json::Value::Object(results))
}

/// Where both DuckDB front ends are installed, they give the same rows.
#[test]
fn duckdb_cli_and_python_agree() {
    let cli = Command::new("duckdb")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    if python_with("duckdb").is_none() || !cli {
        return skip::tool(
            "both the duckdb Python package and the duckdb CLI, to compare them (pip install duckdb duckdb-cli)",
        );
    }
    let py_results = duckdb_results(full_export()).expect("python duckdb");
    let cli_results = duckdb_cli_results(full_export()).expect("duckdb CLI");
    assert_eq!(cli_results, py_results);
}
