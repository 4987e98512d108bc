//! The command starts again with glibc's huge-page tunable set (`src/main.rs`, issue 16),
//! once, and leaves an environment that sets `GLIBC_TUNABLES` itself alone. Seen from
//! outside: the running process's environment (`/proc/PID/environ`) while it waits on stdin.
#![cfg(all(target_os = "linux", target_env = "gnu"))]

mod skip;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CAPTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/captures/q3-basic/capture.pcapng"
);

/// `quakecap flows -` started with `GLIBC_TUNABLES` as given (None: unset), its stdin held
/// open: the value of `GLIBC_TUNABLES` in the process's environment once it is stable, and
/// the flows it then printed for q3-basic written to its stdin.
fn tunables_seen(given: Option<&str>) -> (Option<String>, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_quakecap"));
    cmd.args(["flows", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    match given {
        Some(v) => cmd.env("GLIBC_TUNABLES", v),
        None => cmd.env_remove("GLIBC_TUNABLES"),
    };
    let mut child = cmd.spawn().expect("spawn quakecap");
    let environ = format!("/proc/{}/environ", child.id());
    let read = || -> Option<Option<String>> {
        let raw = std::fs::read(&environ).ok()?;
        Some(
            raw.split(|&b| b == 0)
                .filter_map(|kv| std::str::from_utf8(kv).ok())
                .find_map(|kv| kv.strip_prefix("GLIBC_TUNABLES=").map(String::from)),
        )
    };
    // Right after the spawn the environment may not be readable yet or still be the first
    // start's: wait for the variable (both cases end with it set), then a little longer to
    // see that no further start changes it.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = read().flatten();
    while seen.is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
        seen = read().flatten();
    }
    std::thread::sleep(Duration::from_millis(200));
    let later = read().flatten();
    assert_eq!(seen, later, "the environment changed again");
    let capture = std::fs::read(CAPTURE);
    let mut stdin = child.stdin.take().unwrap();
    if let Ok(c) = &capture {
        stdin.write_all(c).unwrap();
    } else {
        skip::data(std::path::Path::new(CAPTURE));
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    (later, String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn an_environment_without_the_tunable_starts_again_with_it_once() {
    let (seen, flows) = tunables_seen(None);
    // Huge pages, and malloc arenas capped at half the cores (at least two).
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let want = format!(
        "glibc.malloc.hugetlb=1:glibc.malloc.arena_max={}",
        (cores / 2).max(2)
    );
    // glibc 2.36 applies the arena cap but rewrites the variable without it.
    assert!(
        seen.as_deref() == Some(want.as_str()) || seen.as_deref() == Some("glibc.malloc.hugetlb=1"),
        "{seen:?}"
    );
    // The new start read the arguments and stdin as the first would have.
    let direct = Command::new(env!("CARGO_BIN_EXE_quakecap"))
        .args(["flows", "-"])
        .env("GLIBC_TUNABLES", "")
        .stdin(
            std::fs::File::open(CAPTURE)
                .map(Stdio::from)
                .unwrap_or_else(|_| Stdio::null()),
        )
        .output()
        .unwrap();
    assert_eq!(flows, String::from_utf8_lossy(&direct.stdout));
    // Both printed the session's flow (two empty outputs would be equal too).
    if std::path::Path::new(CAPTURE).exists() {
        assert!(flows.contains("LabPlayer1"), "{flows}");
    } else {
        skip::data(std::path::Path::new(CAPTURE));
    }
}

#[test]
fn an_environment_that_sets_the_tunables_is_left_alone() {
    for given in ["", "glibc.malloc.arena_max=1"] {
        let (seen, _) = tunables_seen(Some(given));
        assert_eq!(seen.as_deref(), Some(given));
    }
}
