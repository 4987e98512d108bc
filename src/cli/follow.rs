//! `--follow` and `--replay` (issue 42): run one input as a live stream, its output written
//! as it becomes final, until the input ends or Ctrl-C.
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use anyhow::{bail, Result};
use clap::Args;
use quakecap::pipeline::{self, Event, FollowSetup, InputError, Options, Report, Sink};
use quakecap::sink;

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

/// End the follow as Ctrl-C does (`top`'s quit key).
#[cfg(feature = "tui")]
pub fn stop() {
    STOP.get_or_init(|| Arc::new(AtomicBool::new(false)))
        .store(true, Ordering::Relaxed);
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
    let reader = decompressed(reader).map_err(|source| InputError::Io {
        file: file.clone(),
        source,
    })?;
    pipeline::run_follow(reader, file, opts, sink, &setup)
}

/// A gzip or zstd input undone as it comes (`tcpdump -w - | gzip` over a pipe, a rotated
/// `.gz` still being written). A stream cut inside a compressed block (Ctrl-C on a file still
/// being written) ends with what came before it, as a plain capture cut inside a record.
fn decompressed(mut reader: Box<dyn Read + Send>) -> io::Result<Box<dyn Read + Send>> {
    // The magic number, read whole (a pipe may hand it over in pieces).
    let mut head = Vec::with_capacity(4);
    while head.len() < 4 {
        let mut b = [0u8; 4];
        match reader.read(&mut b[..4 - head.len()])? {
            0 => break,
            n => head.extend_from_slice(&b[..n]),
        }
    }
    let gzip = head.starts_with(&super::input::GZIP_MAGIC);
    let zstd = head.starts_with(&super::input::ZSTD_MAGIC);
    let whole = io::Cursor::new(head).chain(reader);
    Ok(if gzip {
        Box::new(flate2::read::MultiGzDecoder::new(whole))
    } else if zstd {
        Box::new(zstd::stream::read::Decoder::new(whole)?)
    } else {
        Box::new(whole)
    })
}

/// `flows --follow`: a line when a flow starts (`type` `start`: `id`, `game`, `server`,
/// `client`, `time`) and when its decoder lets it go (`type` `end` and the flow's row, as in
/// `flows --json`).
pub struct FlowLines {
    /// JSON Lines (else text).
    pub json: bool,
}

impl Sink for FlowLines {
    fn event(&mut self, e: Event<'_>) -> io::Result<()> {
        let mut out = io::stdout().lock();
        match e {
            Event::FlowStart(f) if self.json => {
                let v = serde_json::json!({"type": "start", "id": f.id, "game": f.game,
                    "server": f.server.to_string(), "client": f.client.to_string(),
                    "time": f.time});
                writeln!(out, "{v}")?;
            }
            Event::FlowStart(f) => writeln!(
                out,
                "start  {:<4} {} {} ← {}",
                f.id, f.game, f.server, f.client
            )?,
            Event::FlowEnd(f) if self.json => {
                let mut v = serde_json::to_value(f).map_err(io::Error::other)?;
                if let serde_json::Value::Object(m) = &mut v {
                    m.insert("type".into(), "end".into());
                }
                writeln!(out, "{v}")?;
            }
            Event::FlowEnd(f) => writeln!(
                out,
                "end    {:<4} {} {} {} {} packets c→s/s→c {}/{}",
                f.id,
                f.game,
                f.kind,
                f.server,
                f.name.as_deref().unwrap_or("-"),
                f.packets.c2s,
                f.packets.s2c
            )?,
            _ => return Ok(()),
        }
        out.flush()
    }
}

/// `decode --follow`: every message as the batch decode writes it, each line flushed.
pub fn decode(
    files: &[PathBuf],
    merge: bool,
    flows: Vec<u32>,
    json: bool,
    shownet: bool,
    live: &FollowArgs,
) -> Result<i32> {
    let path = one_input(files, merge)?;
    let opts = Options {
        detail: pipeline::Detail::Full,
        flows: (!flows.is_empty()).then_some(flows),
        ..Default::default()
    };
    let out = io::LineWriter::new(io::stdout());
    let r = if json {
        run(path, live, &opts, &mut sink::json::JsonLines::new(out))
    } else if shownet {
        run(path, live, &opts, &mut sink::shownet::Shownet::new(out))
    } else {
        run(path, live, &opts, &mut sink::text::Text::new(out))
    };
    match r {
        Ok(report) => {
            super::warn(&report);
            Ok(super::input::EXIT_OK)
        }
        Err(e @ InputError::Io { .. }) => Err(e.into()),
        Err(e) => {
            eprintln!("quakecap: {e}");
            Ok(super::input::EXIT_INPUT)
        }
    }
}
