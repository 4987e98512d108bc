//! JSON that any parser accepts: no object of any JSON output holds a key twice (a parser
//! keeps one of the two, or refuses the line). Every JSON output (`flows`, `events`, `net`,
//! `check`, `decode`) of every stored capture and demo is read with duplicate keys refused.
//! `decode --json` of the stored inputs is 1.1 GB of lines of a few dozen shapes: each
//! input's first lines (every op kind of a session's start) and every line that carries an
//! error (where the duplicate was) are read.
use std::path::{Path, PathBuf};

mod skip;
use std::process::{Command, Stdio};

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A JSON value read with duplicate keys refused.
struct Strict;

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Strict;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_str<E>(self, _: &str) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_unit<E>(self) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Strict, A::Error> {
        while a.next_element::<Strict>()?.is_some() {}
        Ok(Strict)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Strict, A::Error> {
        let mut keys: Vec<String> = Vec::new();
        while let Some(k) = a.next_key::<String>()? {
            if keys.contains(&k) {
                return Err(de::Error::custom(format!("duplicate key {k:?}")));
            }
            a.next_value::<Strict>()?;
            keys.push(k);
        }
        Ok(Strict)
    }
}

fn strict(text: &str) -> Result<(), String> {
    serde_json::from_str::<Strict>(text)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[test]
fn the_checker_refuses_a_duplicate_key() {
    assert!(strict(r#"{"a":1,"b":{"c":[{"d":1}]}}"#).is_ok());
    assert!(strict(r#"{"a":1,"b":{"c":[{"d":1,"d":2}]}}"#).is_err());
    assert!(strict(r#"{"error":"x","error":{"kind":"bad_op"}}"#).is_err());
}

fn shared() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared")
}

/// Every stored capture and demo file.
fn inputs() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in ["captures", "demos/q3", "demos/qw", "demos/ql"] {
        let Ok(rd) = std::fs::read_dir(shared().join(dir)) else {
            skip::data(&shared().join(dir));
            continue;
        };
        let mut entries: Vec<PathBuf> = rd.filter_map(|e| Some(e.ok()?.path())).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                let Ok(sub) = std::fs::read_dir(&p) else {
                    continue;
                };
                let mut files: Vec<PathBuf> = sub.filter_map(|e| Some(e.ok()?.path())).collect();
                files.sort();
                out.extend(files.into_iter().filter(|f| is_input(f)));
            } else if is_input(&p) {
                out.push(p);
            }
        }
    }
    out
}

fn is_input(p: &Path) -> bool {
    let name = p.to_string_lossy();
    [".pcapng", ".pcap", ".dm_68", ".dm_71", ".qwd", ".mvd"]
        .iter()
        .any(|e| name.ends_with(e))
}

/// `quakecap ARGS` on `input`: its standard output (any exit status: a damaged input's
/// JSON is JSON too).
fn output(args: &[&str], input: &Path) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_quakecap"))
        .args(args)
        .arg(input)
        .stderr(Stdio::null())
        .output()
        .expect("run quakecap");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Lines of `decode --json` read: the first this many of each input, and every one with an
/// error.
const DECODE_LINES: usize = 3000;

#[test]
fn every_json_output_of_the_stored_inputs_has_each_key_once() {
    let inputs = inputs();
    if inputs.is_empty() {
        return skip::data(&shared());
    }
    assert!(inputs.len() >= 40, "stored inputs: {}", inputs.len());
    let mut read = 0usize;
    for input in &inputs {
        let name = input.display();
        for args in [
            &["flows", "--json"][..],
            &["events", "--json"],
            &["net", "--json"],
            &["check", "--json"],
        ] {
            let text = output(args, input);
            // One JSON document or one per line.
            let docs: Vec<&str> = if text.trim_start().starts_with('[') {
                vec![text.as_str()]
            } else {
                text.lines().filter(|l| !l.trim().is_empty()).collect()
            };
            for d in docs {
                strict(d).unwrap_or_else(|e| panic!("{name} {args:?}: {e}"));
                read += 1;
            }
        }
        let text = output(&["decode", "--json"], input);
        for (i, line) in text.lines().enumerate() {
            if i < DECODE_LINES || line.contains("\"error\"") {
                strict(line).unwrap_or_else(|e| panic!("{name} decode --json line {i}: {e}"));
                read += 1;
            }
        }
    }
    eprintln!(
        "{} inputs: {read} JSON documents and lines read",
        inputs.len()
    );
    assert!(read > 10_000, "{read}");
}
