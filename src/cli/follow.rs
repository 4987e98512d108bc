//! `--follow` and `--replay` (issue 42): run one input as a live stream, its output written
//! as it becomes final, until the input ends or Ctrl-C.
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use anyhow::{bail, Result};
use clap::Args;
use quakecap::pipeline::{self, FollowSetup, InputError, Options, Report, Sink};

/// How to read the input live.
#[derive(Debug, Clone, Default, Args)]
pub struct FollowArgs {
    /// Follow a capture still being written: `-` (from `tcpdump -U -w -` or `dumpcap -w -`)
    /// until it ends, or a file as it grows (like `tail -f`) until Ctrl-C; output is written
    /// as it becomes final, a line per item.
    #[arg(long)]
    pub follow: bool,
    /// Replay a stored capture at its own pace times SPEED (1: real time), output as with
    /// --follow.
    #[arg(long, value_name = "SPEED")]
    pub replay: Option<f64>,
}

impl FollowArgs {
    /// Either asked.
    pub fn live(&self) -> bool {
        self.follow || self.replay.is_some()
    }
}

/// Set by SIGINT: the follow ends cleanly.
static STOP: OnceLock<Arc<AtomicBool>> = OnceLock::new();

#[cfg(unix)]
extern "C" fn on_sigint(_: libc::c_int) {
    // Only an atomic load and store: safe in a signal handler.
    if let Some(s) = STOP.get() {
        s.store(true, Ordering::Relaxed);
    }
}

/// The stop flag, set by the first Ctrl-C (a second one kills as usual).
fn stop_on_sigint() -> Arc<AtomicBool> {
    let stop = STOP
        .get_or_init(|| Arc::new(AtomicBool::new(false)))
        .clone();
    #[cfg(unix)]
    #[allow(unsafe_code)]
    // SAFETY: installs a handler that only touches an atomic; SA_RESETHAND restores the
    // default for the next SIGINT.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_sigint as extern "C" fn(libc::c_int) as usize;
        sa.sa_flags = libc::SA_RESETHAND | libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
    }
    stop
}

/// The one input of a follow (a file or `-`), checked.
pub fn one_input(files: &[std::path::PathBuf], merge: bool) -> Result<&Path> {
    if merge || files.len() != 1 {
        bail!("--follow and --replay read one input (a file, or - for standard input)");
    }
    Ok(&files[0])
}

/// Run `path` live through `sink`: standard input as it comes, a file followed as it grows
/// or, with `--replay`, read at its pace. Ends at the input's end or on Ctrl-C.
pub fn run(
    path: &Path,
    args: &FollowArgs,
    opts: &Options,
    sink: &mut dyn Sink,
) -> Result<Report, InputError> {
    if let Some(s) = args.replay {
        if !(s.is_finite() && s > 0.0) {
            return Err(InputError::Unusable {
                file: path.display().to_string(),
                message: "--replay needs a positive speed".into(),
            });
        }
    }
    let setup = FollowSetup {
        stop: stop_on_sigint(),
        replay: args.replay,
    };
    let file = super::input::logical_name(path);
    let reader: Box<dyn Read + Send> = if path.as_os_str() == "-" {
        Box::new(io::stdin())
    } else {
        let f = File::open(path).map_err(|source| InputError::Io {
            file: file.clone(),
            source,
        })?;
        if args.follow && args.replay.is_none() {
            Box::new(pipeline::tail(f, setup.stop.clone()))
        } else {
            Box::new(f)
        }
    };
    pipeline::run_follow(reader, file, opts, sink, &setup)
}
