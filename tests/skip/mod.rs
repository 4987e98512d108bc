//! "This check needs X": the one way a test skips (issue 44 item 8).
//!
//! A skip must be visible and, under CI, fatal when CI could have provided the input:
//!
//! * The line `SKIPPED <binary>::<test>: needs <what>` is written to the process's standard
//!   error through `std::io::stderr()` itself, not `eprintln!`: libtest captures only the
//!   `print!`/`eprint!` macros of a passing test, so the line shows in `cargo test` output
//!   (among the `test ... ok` lines, `-q` too) and in a CI log.
//! * The same line is appended to `target/test-skips/skips.txt` (`$CARGO_TARGET_DIR` when
//!   set), which `.ci/run` empties before `cargo test` and prints after it: a summary that
//!   parallel test output cannot bury. (A plain `cargo test` appends to it run after run.)
//! * When the environment variable `CI` is set (to anything but empty, `0` or `false`), a
//!   missing [`data`] file (the project's own: `captures/...`, `../shared/...`) or a missing
//!   [`tool`] that `.ci/run` installs panics instead, after the line (then `MISSING (CI)`):
//!   the test fails. Only [`unavailable`] inputs, which CI cannot provide (the real game
//!   engines, a lab session named by an environment variable, an OS facility), skip under CI
//!   too, visibly.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};

/// Whether the run is a CI run (`CI` set, and not empty, `0` or `false`).
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && !v.eq_ignore_ascii_case("false"))
}

/// The project's own data at `path` is missing (a `captures/` link dangling, `../shared`
/// absent): skips visibly; panics under CI.
pub fn data(path: &Path) {
    report(&format!("{} (project data)", path.display()), true);
}

/// `path` when it exists; else [`data`] reports it and gives `None`.
pub fn data_at(path: impl Into<PathBuf>) -> Option<PathBuf> {
    let path = path.into();
    if path.exists() {
        Some(path)
    } else {
        data(&path);
        None
    }
}

/// A tool `.ci/run` installs is missing (`what` names it and how to get it): skips visibly;
/// panics under CI.
pub fn tool(what: &str) {
    report(&format!("{what} (a tool .ci/run installs)"), true);
}

/// Something CI cannot provide (a real game engine, a lab session, an OS facility) is
/// missing: skips visibly, under CI too.
pub fn unavailable(what: &str) {
    report(what, false);
}

fn report(what: &str, fatal_under_ci: bool) {
    let test = std::thread::current().name().unwrap_or("?").to_string();
    let binary = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .map(|s| match s.rsplit_once('-') {
            Some((name, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) => name.to_string(),
            _ => s,
        })
        .unwrap_or_default();
    let fatal = fatal_under_ci && under_ci();
    let line = format!(
        "{} {binary}::{test}: needs {what}",
        if fatal { "MISSING (CI)" } else { "SKIPPED" }
    );
    // Not eprintln!: libtest would capture it and show it only when the test fails.
    let _ = writeln!(std::io::stderr(), "{line}");
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"))
        .join("test-skips");
    if std::fs::create_dir_all(&dir).is_ok() {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("skips.txt"))
        {
            let _ = f.write_all(format!("{line}\n").as_bytes());
        }
    }
    assert!(
        !fatal,
        "{what} is missing, and CI=true: CI provides it (.ci/run), so this check must run"
    );
}
