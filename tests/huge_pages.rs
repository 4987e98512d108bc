//! The heap on transparent huge pages, set up inside the process (`src/main.rs`): the command
//! starts once (no second start with `GLIBC_TUNABLES`), its heap is advised for huge pages
//! once it has grown (the `hg` flag of the `[heap]` mapping in `/proc/PID/smaps`), and
//! `QUAKECAP_SMALL_PAGES=1` leaves the heap alone. The output is the same either way.
#![cfg(all(target_os = "linux", target_env = "gnu"))]

mod skip;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CAPTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/captures/q3-basic/capture.pcapng"
);

/// What `quakecap flows -` showed while its stdin was still open after the capture was
/// written to it: whether `[heap]` carried the huge-page advice (`hg`), its environment's
/// `GLIBC_TUNABLES`; then the flows it printed.
struct Seen {
    advised: bool,
    tunables: Option<String>,
    flows: String,
}

fn run(small_pages: bool) -> Seen {
    let capture = match std::fs::read(CAPTURE) {
        Ok(c) => c,
        Err(_) => {
            skip::data(std::path::Path::new(CAPTURE));
            return Seen {
                advised: !small_pages,
                tunables: None,
                flows: String::new(),
            };
        }
    };
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_quakecap"));
    cmd.args(["flows", "-"])
        .env_remove("GLIBC_TUNABLES")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if small_pages {
        cmd.env("QUAKECAP_SMALL_PAGES", "1");
    } else {
        cmd.env_remove("QUAKECAP_SMALL_PAGES");
    }
    let mut child = cmd.spawn().expect("spawn quakecap");
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&capture).unwrap();
    stdin.flush().unwrap();
    // The heap's flags: the `VmFlags:` lines of the `[heap]` mappings (the advised part of
    // the heap may be a mapping of its own).
    let heap_flags = || -> Option<String> {
        let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).ok()?;
        let mut flags = String::new();
        let mut in_heap = false;
        for line in smaps.lines() {
            if line.contains(" [heap]") || line.ends_with("[heap]") {
                in_heap = true;
            } else if line.starts_with("VmFlags:") {
                if in_heap {
                    flags.push_str(line);
                    flags.push('\n');
                }
                in_heap = false;
            }
        }
        Some(flags)
    };
    let advised = |f: &Option<String>| {
        f.as_deref()
            .is_some_and(|f| f.split_whitespace().any(|w| w == "hg"))
    };
    // The reader takes the capture in its own time: wait for the advice (up to 5 s) when it
    // is expected, 1 s otherwise.
    let wait = Duration::from_secs(if small_pages { 1 } else { 5 });
    let deadline = Instant::now() + wait;
    let mut flags = heap_flags();
    while !advised(&flags) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        flags = heap_flags();
    }
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    let tunables = environ
        .split(|&b| b == 0)
        .filter_map(|kv| std::str::from_utf8(kv).ok())
        .find_map(|kv| kv.strip_prefix("GLIBC_TUNABLES=").map(String::from));
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    Seen {
        advised: advised(&flags),
        tunables,
        flows: String::from_utf8_lossy(&out.stdout).into_owned(),
    }
}

#[test]
fn the_heap_is_advised_for_huge_pages_without_a_second_start() {
    let huge = run(false);
    assert!(huge.advised, "the heap carries no huge-page advice");
    assert_eq!(
        huge.tunables, None,
        "the process started again with GLIBC_TUNABLES"
    );
    let small = run(true);
    assert!(
        !small.advised,
        "QUAKECAP_SMALL_PAGES=1 still advised the heap"
    );
    // The same output, and a real one (two empty outputs would be equal too).
    assert_eq!(huge.flows, small.flows);
    if std::path::Path::new(CAPTURE).exists() {
        assert!(huge.flows.contains("LabPlayer1"), "{}", huge.flows);
    }
}

/// One `execve`, seen by strace where it is installed.
#[test]
fn the_command_starts_once() {
    let Ok(out) = Command::new("strace")
        .args(["-f", "-e", "trace=execve", "-o", "/dev/stdout", "-qq"])
        .arg(env!("CARGO_BIN_EXE_quakecap"))
        .arg("--help")
        .env_remove("GLIBC_TUNABLES")
        .stderr(Stdio::null())
        .output()
    else {
        skip::tool("strace (apt-get install strace)");
        return;
    };
    let trace = String::from_utf8_lossy(&out.stdout);
    let execs = trace.lines().filter(|l| l.contains("execve(")).count();
    assert_eq!(execs, 1, "{trace}");
}
