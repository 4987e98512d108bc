//! `quakecap demo`: write each client connection's server stream as a playable demo
//! (`.dm_68` / `.dm_71`, QuakeWorld `.qwd`), re-write a Quake 3 demo file, or cut either.
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::Args;
use quakecap::flow::FlowSummary;
use quakecap::pipeline::{InputError, Options, Report};
use quakecap::sink::demo::{DemoOptions, DemoOutput, DemoSink, DemoStats};

use super::input::NothingDone;

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Captures (pcap/pcapng) or demo files to re-write; `-` reads stdin, gzip/zstd are
    /// undone, a folder is walked.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Only these flow ids.
    #[arg(long = "flow")]
    pub flows: Vec<u32>,
    /// Directory for the written demos (created when missing).
    #[arg(long, default_value = ".")]
    pub out_dir: PathBuf,
    /// One output file (only when a single demo is written). `--output` is the old spelling.
    #[arg(short = 'o', long = "out", visible_alias = "output")]
    pub output: Option<PathBuf>,
    /// One file per map is the default; kept so older command lines still run.
    #[arg(long, hide = true, conflicts_with = "one_file")]
    pub split_maps: bool,
    /// Keep a map change in the same file, as Quake 3 1.32 records it (ioquake3 renders
    /// little after the second gamestate), instead of one file per map.
    #[arg(long)]
    pub one_file: bool,
    /// Re-encode every snapshot as a full snapshot (the demo can be cut anywhere).
    #[arg(long)]
    pub full_snapshots: bool,
    /// Treat all captures as one, interleaved by time (a ring buffer's files): a connection
    /// that spans several files becomes one demo.
    #[arg(long)]
    pub merge: bool,
    /// `--from`/`--to` write a cut (Quake 3: it starts with the map's gamestate, and its
    /// first snapshot is re-encoded as a full one; QuakeWorld .qwd/.mvd: the level's signon
    /// and state, then the window with its first entity update re-encoded as a full one);
    /// `--player` picks that player's connection.
    #[command(flatten)]
    pub select: super::Select,
}

/// Files named `<capture>-flow<id>[-<part>]-<player>-<map>.dm_<proto>`.
struct Files {
    dir: PathBuf,
    stem: String,
    single: Option<PathBuf>,
    written: Vec<(PathBuf, u32, DemoStats)>,
    pending: Vec<(u32, u32, PathBuf)>,
    /// `-o`: the one complete demo, renamed only when the whole run succeeded (a second demo
    /// may still turn up and fail it).
    ready: Option<(PartFile, u32, DemoStats)>,
    /// A cut (`--from`/`--to`): a map part with no snapshot in the window is not written.
    drop_empty: bool,
    /// The file extension when it is not the protocol's (an .mvd cut).
    ext: Option<&'static str>,
}

fn clean(s: &str) -> String {
    // Drop Quake colour codes (^N) and anything that does not belong in a file name.
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '^' && chars.peek().is_some() {
            chars.next();
            continue;
        }
        if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            out.push(c);
        }
    }
    if out.is_empty() {
        "unknown".into()
    } else {
        out
    }
}

/// A demo being written: bytes go to a hidden temporary file in the destination folder,
/// renamed to the real name only when the demo is complete, so a failed or interrupted run
/// never leaves a truncated demo under the real name. A destination that exists and is no
/// regular file (`/dev/stdout`, a link, a named pipe, a device) is written in place:
/// renaming over it would replace the device node or the link itself.
pub struct PartFile {
    out: BufWriter<File>,
    /// The hidden part file; None when writing in place.
    part: Option<PathBuf>,
    dest: PathBuf,
    /// What is written, for the errors ("demo", "report").
    what: &'static str,
    done: bool,
}

impl PartFile {
    pub fn create(dest: PathBuf) -> io::Result<Self> {
        Self::create_for(dest, "demo")
    }

    /// A part file of something other than a demo (`what` names it in the errors).
    pub fn create_for(dest: PathBuf, what: &'static str) -> io::Result<Self> {
        // The link itself, not its target: `/dev/stdout` is a link, to a regular file when
        // stdout is redirected to one.
        let in_place = std::fs::symlink_metadata(&dest).is_ok_and(|m| !m.is_file() && !m.is_dir());
        let part = (!in_place).then(|| Self::part_name(&dest));
        let file = File::create(part.as_ref().unwrap_or(&dest))
            .map_err(|e| output_error_of(&dest, what, e))?;
        Ok(PartFile {
            out: BufWriter::new(file),
            part,
            dest,
            what,
            done: false,
        })
    }

    /// The hidden part file's name beside `dest`, unique per file of this run (with `-o` two
    /// parts may aim at the same name).
    fn part_name(dest: &Path) -> PathBuf {
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "demo".into());
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        dest.with_file_name(format!(".{name}.{}-{n}.part", std::process::id()))
    }

    /// A write error as one of this file's ("PATH: cannot write WHAT: ...").
    pub fn blame(&self, e: io::Error) -> io::Error {
        output_error_of(&self.dest, self.what, e)
    }

    /// Flush and give the file its real name.
    pub fn commit(mut self) -> io::Result<PathBuf> {
        let (dest, what) = (&self.dest, self.what);
        self.out
            .flush()
            .map_err(|e| output_error_of(dest, what, e))?;
        if let Some(part) = &self.part {
            std::fs::rename(part, dest).map_err(|e| output_error_of(dest, what, e))?;
        }
        self.done = true;
        Ok(self.dest.clone())
    }
}

impl Write for PartFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl Drop for PartFile {
    fn drop(&mut self) {
        if let (false, Some(part)) = (self.done, &self.part) {
            // Best effort: the run is already failing; a leftover hidden part is harmless.
            let _ = std::fs::remove_file(part);
        }
    }
}

/// An output problem, carried through the pipeline's `io::Error` so the message blames the
/// output path rather than the input file.
#[derive(Debug, thiserror::Error)]
#[error("{path}: cannot write {what}: {message}")]
pub struct OutputError {
    path: String,
    what: &'static str,
    message: String,
}

fn output_error(path: &Path, e: impl std::fmt::Display) -> io::Error {
    output_error_of(path, "demo", e)
}

fn output_error_of(path: &Path, what: &'static str, e: impl std::fmt::Display) -> io::Error {
    io::Error::other(OutputError {
        path: path.display().to_string(),
        what,
        message: e.to_string(),
    })
}

impl DemoOutput for Files {
    type W = PartFile;

    fn open(
        &mut self,
        flow: u32,
        part: u32,
        protocol: u32,
        map: Option<&str>,
        player: Option<&str>,
    ) -> io::Result<Self::W> {
        let path = match &self.single {
            Some(p) => p.clone(),
            None => {
                let part = if part > 0 {
                    format!("-{part}")
                } else {
                    String::new()
                };
                // QuakeWorld (protocol 28) writes .qwd; Quake 3 .dm_<protocol>.
                let ext = if let Some(e) = self.ext {
                    e.to_string()
                } else if protocol == 28 {
                    "qwd".to_string()
                } else {
                    format!("dm_{protocol}")
                };
                let name = format!(
                    "{}-flow{flow}{part}-{}-{}.{ext}",
                    self.stem,
                    clean(player.unwrap_or("player")),
                    clean(map.unwrap_or("map"))
                );
                self.dir.join(name)
            }
        };
        self.pending.push((flow, part, path.clone()));
        PartFile::create(path)
    }

    fn closed(&mut self, flow: u32, part: u32, w: Self::W, stats: &DemoStats) -> io::Result<()> {
        if let Some(i) = self
            .pending
            .iter()
            .position(|(f, p, _)| *f == flow && *p == part)
        {
            self.pending.remove(i);
        }
        if self.drop_empty && stats.snapshots == 0 {
            // Dropping the part deletes it: a gamestate alone is not a cut of anything.
            return Ok(());
        }
        if let Some(p) = &self.single {
            if self.ready.is_some() {
                return Err(output_error(
                    p,
                    "-o names one file but this input gives more than one demo (several connections or maps); use --out-dir, or choose one with --flow",
                ));
            }
            self.ready = Some((w, flow, stats.clone()));
            return Ok(());
        }
        let path = w.commit()?;
        self.written.push((path, flow, stats.clone()));
        Ok(())
    }
}

impl Files {
    /// The run succeeded: give `-o`'s demo its name.
    fn commit_ready(&mut self) -> io::Result<()> {
        if let Some((w, flow, stats)) = self.ready.take() {
            let path = w.commit()?;
            self.written.push((path, flow, stats));
        }
        Ok(())
    }
}

/// The folder demos go to: `--out-dir` is created when missing; `-o`'s folder must exist
/// (a typo there should not create directories).
fn prepare_output(args: &DemoArgs) -> Result<()> {
    if let Some(o) = &args.output {
        let parent = o.parent().filter(|p| !p.as_os_str().is_empty());
        if let Some(dir) = parent.filter(|d| !d.is_dir()) {
            bail!(OutputError {
                path: o.display().to_string(),
                what: "demo",
                message: format!("folder {} does not exist", dir.display()),
            });
        }
        return Ok(());
    }
    std::fs::create_dir_all(&args.out_dir).map_err(|e| OutputError {
        path: args.out_dir.display().to_string(),
        what: "demo",
        message: format!("cannot create the output folder: {e}"),
    })?;
    if !args.out_dir.is_dir() {
        bail!("{}: not a directory", args.out_dir.display());
    }
    Ok(())
}

/// The output error inside a failed run, if that is what stopped it.
fn as_output_error(e: &InputError) -> Option<&OutputError> {
    match e {
        InputError::Io { source, .. } => source.get_ref()?.downcast_ref::<OutputError>(),
        _ => None,
    }
}

/// Raise this process's soft limit of open files to its hard limit: a demo is open from its
/// connection's gamestate to the connection's end, so a capture of more connections live at
/// once than the usual soft limit (1,024) would otherwise fail on `EMFILE` (the Go runtime
/// does the same at start). Best effort: unchanged when the call fails.
#[cfg(unix)]
#[allow(unsafe_code)] // getrlimit/setrlimit: libc calls (see the SAFETY note)
fn raise_open_file_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit read or write only the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

#[cfg(not(unix))]
fn raise_open_file_limit() {}

pub fn run(args: &DemoArgs) -> Result<i32> {
    raise_open_file_limit();
    let files = super::input::expand(&args.files)?;
    if args.merge {
        return run_merged(args, &files);
    }
    if files.len() == 1 {
        return run_one(args, &files[0]);
    }
    if let Some(o) = &args.output {
        bail!(OutputError {
            path: o.display().to_string(),
            what: "demo",
            message: "-o names one file but several inputs were given; use --out-dir".into(),
        });
    }
    // Each input on its own; the worst outcome decides the exit status.
    let mut worst = super::input::EXIT_OK;
    for f in &files {
        let code = match run_one(args, f) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("quakecap: {e}");
                if e.downcast_ref::<InputError>().is_some() {
                    super::input::EXIT_INPUT
                } else if e.downcast_ref::<NothingDone>().is_some() {
                    super::input::EXIT_NOTHING
                } else {
                    return Err(e);
                }
            }
        };
        worst = worst.max(code);
    }
    Ok(worst)
}

/// `--merge`: the captures as one input, their demos named after the first.
fn run_merged(args: &DemoArgs, files: &[PathBuf]) -> Result<i32> {
    let s = &args.select;
    if s.from.is_some() || s.to.is_some() || s.player.is_some() {
        bail!("--from, --to and --player work on single inputs, not with --merge");
    }
    for f in files {
        super::input::check_not_empty(f)?;
    }
    prepare_output(args)?;
    let stem = files.first().map_or("capture".into(), |f| stem_of(f));
    write_demos(
        args,
        &format!("{stem}-merged"),
        &args.flows,
        false,
        |opts, sink| quakecap::pipeline::run_merged(files, opts, sink),
    )
}

/// The file name a demo's name starts with.
fn stem_of(file: &Path) -> String {
    let logical = PathBuf::from(super::input::logical_name(file));
    logical
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("capture")
        .to_string()
}

fn run_one(args: &DemoArgs, file: &Path) -> Result<i32> {
    super::input::check_not_empty(file)?;
    prepare_output(args)?;
    let logical = PathBuf::from(super::input::logical_name(file));
    if quakecap::pipeline::is_qw_demo(&logical) && !args.select.window(true)?.is_open() {
        return cut_qw_demo_file(args, file);
    }
    if quakecap::pipeline::is_qw_demo(file) {
        bail!(
            "{}: re-writing QuakeWorld demo files is not supported (QuakeWorld demos are written from captures)",
            file.display()
        );
    }
    let chosen = args.select.flows(file, &args.flows)?;
    let is_demo = quakecap::pipeline::is_demo(Path::new(&super::input::logical_name(file)));
    write_demos(args, &stem_of(file), &chosen, is_demo, |opts, sink| {
        super::run_input(file, opts, sink)
    })
}

/// Run the input through the demo writer and say what was written, and why a chosen
/// connection was not.
fn write_demos(
    args: &DemoArgs,
    stem: &str,
    chosen: &[u32],
    is_demo: bool,
    run_input: impl FnOnce(&Options, &mut dyn quakecap::pipeline::Sink) -> Result<Report, InputError>,
) -> Result<i32> {
    let files = Files {
        dir: args.out_dir.clone(),
        stem: clean(stem),
        single: args.output.clone(),
        written: Vec::new(),
        pending: Vec::new(),
        ready: None,
        drop_empty: !args.select.window(true)?.is_open(),
        ext: None,
    };
    let window = args.select.window(true)?;
    let dopts = DemoOptions {
        qw_cut: (!window.is_open()).then(|| window.qw()),
        full_snapshots: args.full_snapshots,
        // One playable file per map unless the single file is asked for.
        split_maps: !args.one_file,
    };
    let mut sink = DemoSink::new(files, dopts);
    let opts = Options {
        detail: quakecap::pipeline::Detail::None,
        keep_raw: true,
        flows: (!chosen.is_empty()).then(|| chosen.to_vec()),
        threads: None,
        ..Default::default()
    };
    let run = if window.is_open() {
        run_input(&opts, &mut sink)
    } else {
        run_input(&opts, &mut super::filter::Filter::new(&mut sink, window))
    };
    let report = match run {
        Ok(r) => r,
        // Dropping the sink removes the unfinished parts.
        Err(e) => match as_output_error(&e) {
            Some(o) => bail!("{o}"),
            None => return Err(e.into()),
        },
    };
    super::warn(&report);
    let missing = sink.no_gamestate.clone();
    let not_cut = sink.qw_not_cut.clone();
    let mut files = sink.into_output();
    files.commit_ready()?;
    // Demos close when their connection ends or at the end of the input: listed by flow
    // (a flow's parts stay in their order).
    files.written.sort_by_key(|w| w.1);
    let mut out = summary_out(&files.written);
    for (path, flow, s) in &files.written {
        print_demo(&mut out, path, *flow, s)?;
    }
    let from_demo = report.flows.iter().any(|f| f.kind == "demo") || is_demo;
    for f in report.flows.iter().filter(|f| is_chosen_conn(args, f)) {
        if files.written.iter().any(|(_, id, _)| *id == f.id) {
            continue;
        }
        let seen = missing
            .iter()
            .find(|(id, _)| *id == f.id)
            .map_or(0, |(_, n)| *n);
        if let Some((_, why)) = not_cut.iter().find(|(id, _)| *id == f.id) {
            eprintln!("quakecap: flow {}: no demo written: {why}", f.id);
            continue;
        }
        let why = if from_demo && f.game == "qw" {
            // A demo file's name decides the QuakeWorld path above; standard input has none.
            "QuakeWorld demos are cut from a named file (`quakecap demo --from A --to B x.qwd`), not from standard input"
        } else if from_demo {
            "the demo file holds no gamestate quakecap could read (unsupported or damaged demo)"
        } else {
            "the capture holds no gamestate for this connection; it started after the client loaded the map"
        };
        eprintln!(
            "quakecap: flow {}: no demo written ({seen} server messages before a gamestate): {why}",
            f.id
        );
    }
    if args.full_snapshots && files.written.iter().any(|(p, _, _)| is_qwd(p)) {
        eprintln!("quakecap: note: --full-snapshots applies to Quake 3 only; QuakeWorld demos are written as recorded");
    }
    if files.written.is_empty() {
        return Err(NothingDone(nothing_written(args, &report)).into());
    }
    Ok(super::input::EXIT_OK)
}

/// `demo --from/--to` on a QuakeWorld demo file: a .qwd is cut ([`quakecap::qw::cut`]), an
/// .mvd too ([`quakecap::qw::cut_mvd`]).
fn cut_qw_demo_file(args: &DemoArgs, file: &Path) -> Result<i32> {
    let name = super::input::logical_name(file);
    let mvd = name.to_ascii_lowercase().ends_with(".mvd");
    // gzip/zstd undone, as for any input.
    let mut data = Vec::new();
    super::input::open_stream(file)?
        .read_to_end(&mut data)
        .map_err(|source| InputError::Io {
            file: name.clone(),
            source,
        })?;
    let window = args.select.window(true)?.qw();
    let cut = if mvd {
        quakecap::qw::cut_mvd::cut(&data, &window)
    } else {
        quakecap::qw::cut::cut(&data, &window, None)
    };
    let (bytes, cs) = match cut {
        Ok(c) => c,
        Err(e) => {
            return Err(NothingDone(format!("{}: no demo written: {e}", file.display())).into())
        }
    };
    // Only the summary (map, recording player) is read: no message is kept.
    let sum = quakecap::qw::decode_demo_stream(&name, &data, &mut |_| true);
    let first = sum.first();
    let map = first.and_then(|f| f.maps.first().cloned());
    let player = first.and_then(|f| f.name.clone());
    let mut files = Files {
        dir: args.out_dir.clone(),
        stem: clean(&stem_of(file)),
        single: args.output.clone(),
        written: Vec::new(),
        pending: Vec::new(),
        ready: None,
        drop_empty: false,
        ext: mvd.then_some("mvd"),
    };
    let stats = DemoStats {
        records: (cs.packets + cs.cmds) as u64,
        snapshots: cs.packets as u64,
        reencoded: cs.reencoded as u64,
        gamestates: 1,
        map,
        player,
        qw_cut: Some(cs),
        ..Default::default()
    };
    let mut w = files.open(1, 0, 28, stats.map.as_deref(), stats.player.as_deref())?;
    w.write_all(&bytes)?;
    files.closed(1, 0, w, &stats)?;
    files.commit_ready()?;
    // Demos close when their connection ends or at the end of the input: listed by flow
    // (a flow's parts stay in their order).
    files.written.sort_by_key(|w| w.1);
    let mut out = summary_out(&files.written);
    for (path, flow, s) in &files.written {
        print_demo(&mut out, path, *flow, s)?;
    }
    Ok(super::input::EXIT_OK)
}

fn is_qwd(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "qwd")
}

/// A client connection (or demo) the user asked for, or any when no `--flow` was given.
fn is_chosen_conn(args: &DemoArgs, f: &FlowSummary) -> bool {
    (f.kind == "connection" || f.kind == "demo")
        && (args.flows.is_empty() || args.flows.contains(&f.id))
}

/// Why no demo came out of the input.
fn nothing_written(args: &DemoArgs, report: &Report) -> String {
    let file = &report.file;
    let present: Vec<u32> = report.flows.iter().map(|f| f.id).collect();
    if let Some(m) = super::input::missing_flows(&args.flows, &present, file) {
        return m;
    }
    let is_conn = |f: &&FlowSummary| f.kind == "connection" || f.kind == "demo";
    let chosen: Vec<&FlowSummary> = report
        .flows
        .iter()
        .filter(|f| args.flows.is_empty() || args.flows.contains(&f.id))
        .collect();
    if let Some(q) = chosen.iter().find(|f| !is_conn(f)) {
        if chosen.iter().all(|f| !is_conn(f)) {
            return format!(
                "{file}: flow {} is a {} flow, not a client connection: no demo to write",
                q.id, q.kind
            );
        }
    }
    if chosen.iter().any(is_conn) {
        return format!("{file}: no demo written");
    }
    format!("{file}: no client connection found: no demo to write")
}

/// Where the summary of the written demos goes: stdout, unless a demo went to a stream
/// itself (`-o /dev/stdout`, a pipe): then stderr, so that a piped demo stays a demo.
fn summary_out(written: &[(PathBuf, u32, DemoStats)]) -> Box<dyn Write> {
    let stdout = std::fs::canonicalize("/dev/stdout").ok();
    let streamed = written.iter().any(|(p, _, _)| {
        std::fs::metadata(p).is_ok_and(|m| !m.is_file())
            || (stdout.is_some() && std::fs::canonicalize(p).ok() == stdout)
    });
    if streamed {
        Box::new(io::stderr().lock())
    } else {
        Box::new(io::stdout().lock())
    }
}

fn print_demo(out: &mut impl Write, path: &Path, flow: u32, s: &DemoStats) -> io::Result<()> {
    let mvd = path.extension().is_some_and(|e| e == "mvd");
    if path.extension().is_some_and(|e| e == "qwd") || mvd {
        writeln!(out, "{}", path.display())?;
        writeln!(
            out,
            "  flow {flow}, player {}, map {}: {} blocks",
            s.player.as_deref().unwrap_or("?"),
            s.map.as_deref().unwrap_or("?"),
            s.records
        )?;
        if let Some(c) = &s.qw_cut {
            let (what, steps) = if mvd {
                ("blocks", "frames")
            } else {
                ("server packets", "commands")
            };
            writeln!(
                out,
                "  cut: {} {what} and {} {steps} of the window, {} state messages from before it, {} delta entity updates re-encoded as full",
                c.packets, c.cmds, c.state_messages, c.reencoded
            )?;
        }
        return Ok(());
    }
    let span = match (s.first_server_time, s.last_server_time) {
        (Some(_), Some(_)) if s.gamestates > 1 => format!(
            "{:.1} s of game time over {} maps",
            s.game_ms as f64 / 1000.0,
            s.gamestates
        ),
        // Server time may restart without a second gamestate in the file (a stale snapshot of
        // the previous map): then the range says nothing.
        (Some(a), Some(b)) if b >= a => {
            format!("{:.1} s of game time ({a}..{b})", s.game_ms as f64 / 1000.0)
        }
        (Some(_), Some(_)) => format!("{:.1} s of game time", s.game_ms as f64 / 1000.0),
        _ => "no snapshots".into(),
    };
    writeln!(out, "{}", path.display())?;
    writeln!(
        out,
        "  flow {flow}, player {}, map {}: {} records, {} snapshots, {} gamestates, {span}",
        s.player.as_deref().unwrap_or("?"),
        s.map.as_deref().unwrap_or("?"),
        s.records,
        s.snapshots,
        s.gamestates
    )?;
    if s.reencoded + s.dropped_snapshots + s.skipped_bad + s.before_gamestate + s.downloads_removed
        > 0
    {
        writeln!(
            out,
            "  repaired: {} delta snapshots re-encoded as full, {} snapshots dropped (state unknown), {} undecodable messages skipped, {} messages before the gamestate skipped, {} download blocks removed",
            s.reencoded, s.dropped_snapshots, s.skipped_bad, s.before_gamestate, s.downloads_removed
        )?;
    }
    if s.gamestates > 1 {
        writeln!(
            out,
            "  note: {} gamestates (map changes) in one file (--one-file); ioquake3 reads past the second one but renders little of it — without --one-file each map gets its own fully playable demo",
            s.gamestates
        )?;
    }
    Ok(())
}
