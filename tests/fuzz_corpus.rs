//! Issue 5: the minimized fuzz corpus (`fuzz/corpus/<target>/`) replayed on stable through
//! the very harness functions the cargo-fuzz targets call (`quakecap::fuzzing`), so every
//! input the fuzzer kept, including each crash it found once, stays a regression test.
use std::path::PathBuf;
use std::time::{Duration, Instant};

use quakecap::fuzzing::TARGETS;

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus")
}

fn files(target: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(corpus_dir().join(target))
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn every_corpus_directory_is_a_target() {
    let names: Vec<&str> = TARGETS.iter().map(|t| t.0).collect();
    for e in std::fs::read_dir(corpus_dir()).expect("fuzz/corpus is in the repo") {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            names.contains(&name.as_str()),
            "fuzz/corpus/{name} names no target"
        );
    }
}

#[test]
fn every_target_replays_its_corpus_without_panic() {
    for (name, run) in TARGETS {
        let files = files(name);
        assert!(!files.is_empty(), "fuzz/corpus/{name} is empty");
        for f in files {
            let data = std::fs::read(&f).unwrap();
            let start = Instant::now();
            run(&data);
            // A debug build is ~20x slower than the fuzzer's; still far from a hang.
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "{} took {:?}",
                f.display(),
                start.elapsed()
            );
        }
    }
}
