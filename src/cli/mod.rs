//! Command-line front end: `flows`, `decode`, `demo`. No protocol knowledge here; it builds a
//! pipeline, chooses sinks and reports.
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use quakecap::pipeline::{self, InputError, Options, Report, Sink};
use quakecap::sink;

#[path = "annotate.rs"]
mod annotate;
#[path = "cheats.rs"]
mod cheats;
#[path = "check.rs"]
mod check;
#[path = "demo.rs"]
pub mod demo;
#[path = "filter.rs"]
pub mod filter;
#[path = "follow.rs"]
pub mod follow;
#[path = "input.rs"]
pub mod input;
#[path = "timefmt.rs"]
pub mod timefmt;

use input::{NothingDone, EXIT_FAILURE, EXIT_INPUT, EXIT_NOTHING, EXIT_OK};
use timefmt::TimeFormat;
#[path = "diff.rs"]
mod diff;
#[path = "events.rs"]
mod events;
#[path = "export.rs"]
mod export;
#[path = "net.rs"]
mod net;
#[path = "top.rs"]
mod top;

/// Offline analyzer of Quake 3 and QuakeWorld network captures.
#[derive(Debug, Parser)]
#[command(name = "quakecap", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// One row per flow (connection or query): addresses, qport, challenge, player, counters.
    Flows {
        /// pcap / pcapng captures or demo files (each on its own unless --merge); `-` reads
        /// stdin, gzip/zstd are undone, a folder is walked.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print a JSON array instead of a table.
        #[arg(long)]
        json: bool,
        /// Treat all files as one capture (flow ids continue across files).
        #[arg(long)]
        merge: bool,
        /// Every column (protocol, qport, challenge, bytes, fragments, duplicates, ...).
        #[arg(long)]
        wide: bool,
        /// How start times are shown: local date-time, relative to the first packet,
        /// raw epoch seconds, or UTC.
        #[arg(long, short = 't', value_enum, default_value_t = TimeFormat::Abs)]
        time: TimeFormat,
        /// Also list UDP flows of no known game (hidden by default, counted in one line).
        #[arg(long)]
        all: bool,
        /// `--follow` / `--replay SPEED`: a live input; each flow's start and end as a line
        /// when it happens, the table at the end.
        #[command(flatten)]
        live: follow::FollowArgs,
    },
    /// Decode every message of every flow (or the chosen ones), both directions.
    Decode {
        /// Captures (pcap/pcapng) or demo files (.dm_66/67/68/71, .qwd, .mvd); `-` reads
        /// stdin, gzip/zstd are undone, a folder is walked.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Treat all captures as one (flow ids continue across files).
        #[arg(long)]
        merge: bool,
        /// Only these flow ids.
        #[arg(long = "flow")]
        flows: Vec<u32>,
        /// JSON Lines, one object per message.
        #[arg(long, conflicts_with = "shownet")]
        json: bool,
        /// The engine's own trace format, server messages only: Quake 3 `cl_shownet 4`,
        /// QuakeWorld ezQuake's `cl_shownet 2`.
        #[arg(long)]
        shownet: bool,
        #[command(flatten)]
        select: Select,
        /// `--follow` / `--replay SPEED`: a live input, each message written (and flushed) as
        /// it is decoded.
        #[command(flatten)]
        live: follow::FollowArgs,
    },
    /// Write each client connection's server stream as a playable demo.
    Demo(demo::DemoArgs),
    /// Game events (kills, chat, players, scores, match flow) as a timeline and a per-player
    /// summary.
    Events(events::EventsArgs),
    /// Network quality per connection: vantage, ping, loss each way, jitter, rates, lag events.
    Net(net::NetArgs),
    /// One self-contained HTML file (opens offline): the flows, and per connection plots of
    /// ping, loss, jitter, rates and a lagometer strip, lag events marked.
    Report(net::ReportArgs),
    /// Compare two captures and/or demos of the same session: exit 0 same, 1 different,
    /// 2 unusable.
    Diff(diff::DiffArgs),
    /// Conformance check of every connection and demo: exit 0 clean, 1 findings, 2 unusable.
    Check(check::CheckArgs),
    /// Who cheated: aim and timing signals per player, a verdict (clean, suspicious, likely)
    /// and the moments behind it.
    Cheats(cheats::CheatsArgs),
    /// The capture as pcapng with a comment on every game datagram (what it carries, its
    /// game events), for Wireshark's `frame.comment`.
    Annotate(annotate::AnnotateArgs),
    /// Apache Parquet tables (flows, messages, usercmds, player_states, server_commands,
    /// events, samples) of every input, one Hive partition per input, for DuckDB or Spark.
    Export(export::ExportArgs),
    /// A live view of a followed (or replayed) capture, refreshed every second: a row per
    /// connection (ping and its last minute, loss, jitter, snapshots/s, fps, lag), the last
    /// game events below; text rows each second when stdout is not a terminal.
    Top(top::TopArgs),
}

/// `--from`, `--to`, `--player`: the part of the inputs a command looks at.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Select {
    /// Start here: capture time as `mm:ss` / `h:mm:ss` / seconds after the first game packet,
    /// an epoch time (`1795361230.5`), or game time `g<time>` (Quake 3 server time;
    /// QuakeWorld: time since the level's serverdata).
    #[arg(long)]
    pub from: Option<String>,
    /// Stop after this time (same forms as --from).
    #[arg(long)]
    pub to: Option<String>,
    /// Only the connections of this player (colour codes and case ignored).
    #[arg(long)]
    pub player: Option<String>,
}

impl Select {
    /// The time window, parsed.
    pub fn window(&self, keep_gamestates: bool) -> Result<filter::Window> {
        Ok(filter::Window {
            from: self.from.as_deref().map(filter::parse_bound).transpose()?,
            to: self.to.as_deref().map(filter::parse_bound).transpose()?,
            keep_gamestates,
        })
    }

    /// The flows of `file` to look at: `--flow` ids, narrowed to `--player`'s connections
    /// (found by a first, summary-only pass over the file).
    pub fn flows(&self, file: &Path, asked: &[u32]) -> Result<Vec<u32>> {
        let Some(player) = &self.player else {
            return Ok(asked.to_vec());
        };
        if file.as_os_str() == "-" {
            anyhow::bail!("--player reads the input twice: give a file, not stdin");
        }
        let report = run_input(file, &Options::default(), &mut NoSink)?;
        let ids: Vec<u32> = report
            .flows
            .iter()
            .filter(|f| {
                f.name
                    .as_deref()
                    .is_some_and(|n| filter::same_player(n, player))
            })
            .filter(|f| asked.is_empty() || asked.contains(&f.id))
            .map(|f| f.id)
            .collect();
        if ids.is_empty() {
            let mut names: Vec<String> =
                report.flows.iter().filter_map(|f| f.name.clone()).collect();
            names.sort();
            names.dedup();
            return Err(NothingDone(format!(
                "{}: no connection of player {player:?} (players: {})",
                report.file,
                if names.is_empty() {
                    "none".into()
                } else {
                    names.join(", ")
                }
            ))
            .into());
        }
        Ok(ids)
    }
}

/// Run the command and return the process exit code.
pub fn run(cli: Cli) -> i32 {
    let res = match input::check_env() {
        Err(e) => Err(e),
        Ok(()) => match cli.command {
            Command::Flows {
                files,
                json,
                merge,
                wide,
                time,
                all,
                live,
            } => flows(
                &files,
                &FlowsView {
                    json,
                    merge,
                    wide,
                    time,
                    all,
                },
                &live,
            ),
            Command::Decode {
                files,
                merge,
                flows,
                json,
                shownet,
                select,
                live,
            } if live.live() => {
                if select.from.is_some() || select.to.is_some() || select.player.is_some() {
                    Err(anyhow::anyhow!(
                        "--from, --to and --player read stored captures: not with --follow or --replay"
                    ))
                } else {
                    follow::decode(&files, merge, flows, json, shownet, &live)
                }
            }
            Command::Decode {
                files,
                merge,
                flows,
                json,
                shownet,
                select,
                live: _,
            } => decode(&files, merge, flows, json, shownet, &select),
            Command::Demo(args) => demo::run(&args),
            Command::Events(args) => events::run(&args),
            Command::Net(args) => net::run(&args),
            Command::Report(args) => net::report(&args),
            Command::Diff(args) => diff::run(&args),
            Command::Check(args) => check::run(&args),
            Command::Cheats(args) => cheats::run(&args),
            Command::Export(args) => export::run(&args),
            Command::Annotate(args) => annotate::run(&args),
            Command::Top(args) => top::run(&args),
        },
    };
    match res {
        Ok(code) => code,
        Err(e) => {
            if is_broken_pipe(&e) {
                return EXIT_OK;
            }
            // Our errors already carry their causes in their text: print them once.
            eprintln!("quakecap: {e}");
            if e.downcast_ref::<InputError>().is_some() {
                EXIT_INPUT
            } else if e.downcast_ref::<NothingDone>().is_some() {
                EXIT_NOTHING
            } else {
                EXIT_FAILURE
            }
        }
    }
}

/// A closed stdout (`| head`, a pager quit early): the reader has what it wanted, so the
/// run ends quietly with exit 0, as the usual command-line tools do.
///
/// Handled here, on the error that comes back, rather than by putting SIGPIPE back to its
/// default at start: a process killed by the signal exits 141 (no status at all for a
/// caller that waits on it), and dies before its outputs written whole or not at all
/// (`demo`, `report`, `export`, `--junit`) can remove their partial files. The closed pipe
/// reaches here wrapped in several ways: a plain `io::Error`, an input's
/// [`InputError::Io`] (a sink's write failed inside the pipeline), or a `serde_json`
/// error (JSON written straight to stdout), whose `source()` skips the `io::Error` itself.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    let pipe = |k: io::ErrorKind| k == io::ErrorKind::BrokenPipe;
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>().is_some_and(|io| pipe(io.kind()))
            || matches!(c.downcast_ref::<InputError>(), Some(InputError::Io { source, .. }) if pipe(source.kind()))
            || c.downcast_ref::<serde_json::Error>()
                .and_then(serde_json::Error::io_error_kind)
                .is_some_and(pipe)
    })
}

/// A progress bar on stderr when it is a terminal and the file is large, hidden otherwise.
pub fn progress_for(path: &Path) -> ProgressBar {
    let len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    if !io::stderr().is_terminal() || len < 64 << 20 {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template(
        "{msg} {wide_bar} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
    ) {
        pb.set_style(style);
    }
    pb.set_message(path.display().to_string());
    pb
}

/// Run one input (capture or demo) through the pipeline.
pub fn run_input(path: &Path, opts: &Options, sink: &mut dyn Sink) -> Result<Report, InputError> {
    let pb = progress_for(path);
    let r = input::run(path, opts, sink, &mut |b| pb.set_position(b));
    pb.finish_and_clear();
    r
}

/// Run each input through `sink` on its own, its warnings to stderr; the number of inputs
/// that could not be read (each said why).
pub fn run_each(files: &[PathBuf], opts: &Options, sink: &mut dyn Sink) -> usize {
    let mut failed = 0;
    for f in files {
        match run_input(f, opts, sink) {
            Ok(report) => warn(&report),
            Err(e) => {
                eprintln!("quakecap: {e}");
                failed += 1;
            }
        }
    }
    failed
}

/// Print a report's file-level warnings to stderr.
pub fn warn(report: &Report) {
    let prefix = format!("quakecap: {}: ", report.file);
    print_warnings(&prefix, &report.warnings, report.warnings_total, "warnings");
}

/// The game events' warnings (malformed events, configstrings, unknown mods; each names its
/// file and position) as [`warn`] prints an input's.
pub fn warn_events(kept: &[quakecap::error::Error], total: u64) {
    print_warnings("quakecap: ", kept, total, "game-event warnings");
}

/// The first 20 of `kept`, then how many more of `total` (only the first warnings are kept;
/// the total counts them all).
fn print_warnings(prefix: &str, kept: &[quakecap::error::Error], total: u64, what: &str) {
    for w in kept.iter().take(20) {
        eprintln!("{prefix}warning: {w}");
    }
    let total = total.max(kept.len() as u64);
    if total > 20 {
        eprintln!("{prefix}... {} more {what}", total - 20);
    }
}

struct NoSink;
impl Sink for NoSink {}

/// How `flows` shows its result.
struct FlowsView {
    json: bool,
    merge: bool,
    wide: bool,
    time: TimeFormat,
    all: bool,
}

fn flows(files: &[PathBuf], view: &FlowsView, live: &follow::FollowArgs) -> Result<i32> {
    let mut opts = Options::default();
    let mut failed = 0;
    let mut tables = Vec::new();
    if live.live() {
        let path = follow::one_input(files, view.merge)?;
        // In capture order (no worker threads): the flows' ends are told.
        opts.threads = Some(1);
        let mut lines = follow::FlowLines { json: view.json };
        let report = match follow::run(path, live, &opts, &mut lines) {
            Ok(r) => r,
            Err(e @ InputError::Io { .. }) => return Err(e.into()),
            Err(e) => {
                eprintln!("quakecap: {e}");
                return Ok(EXIT_INPUT);
            }
        };
        warn(&report);
        tables.push((report.file.clone(), report.flows, report.aggregates));
    }
    if !live.live() && view.merge {
        let files = &input::expand(files)?;
        let report = pipeline::run_merged(files, &opts, &mut NoSink)?;
        warn(&report);
        tables.push((report.file.clone(), report.flows, report.aggregates));
    } else if !live.live() {
        for f in &input::expand(files)? {
            match run_input(f, &opts, &mut NoSink) {
                Ok(report) => {
                    warn(&report);
                    tables.push((report.file.clone(), report.flows, report.aggregates));
                }
                Err(e) => {
                    eprintln!("quakecap: {e}");
                    failed += 1;
                }
            }
        }
    }
    let mut out = io::stdout().lock();
    if view.json {
        flows_json(&mut out, &tables)?;
    } else {
        for (file, flows, aggregates) in &tables {
            if tables.len() > 1 {
                writeln!(out, "{file}")?;
            }
            flows_table(&mut out, flows, view)?;
            write!(out, "{}", sink::table::render_aggregates(aggregates))?;
        }
    }
    // Every input must have been used: a missing file among good ones is still a failure.
    Ok(if failed > 0 { EXIT_INPUT } else { EXIT_OK })
}

/// One file's flows and its aggregate rows (traffic past a flow limit).
type FileFlows = (
    String,
    Vec<quakecap::flow::FlowSummary>,
    Vec<quakecap::flow::FlowSummary>,
);

/// One JSON array of every file's flows; each object names its `file` (ids restart per file).
fn flows_json(out: &mut impl Write, tables: &[FileFlows]) -> Result<()> {
    /// A flow with the file it comes from, serialized straight to the output: building a JSON
    /// value per flow first cost 6 KB each (60 MB for a capture of 10,000 flows).
    #[derive(serde::Serialize)]
    struct Row<'a> {
        file: &'a str,
        #[serde(flatten)]
        flow: &'a quakecap::flow::FlowSummary,
    }
    let rows = tables.iter().flat_map(|(file, flows, aggregates)| {
        flows
            .iter()
            .chain(aggregates)
            .map(move |flow| Row { file, flow })
    });
    let mut w = io::BufWriter::new(&mut *out);
    serde::Serializer::collect_seq(&mut serde_json::Serializer::pretty(&mut w), rows)?;
    writeln!(w)?;
    w.flush()?;
    Ok(())
}

/// The table of one file: game flows, then one line counting the hidden UDP of no known game.
fn flows_table(
    out: &mut impl Write,
    flows: &[quakecap::flow::FlowSummary],
    view: &FlowsView,
) -> io::Result<()> {
    let (shown, other): (Vec<_>, Vec<_>) = flows
        .iter()
        .cloned()
        .partition(|f| view.all || f.game != "udp");
    let base = flows
        .iter()
        .map(|f| f.first_time)
        .filter(|t| *t > 0.0)
        .fold(f64::INFINITY, f64::min);
    let fmt = view.time;
    // One date for the whole table when every flow started that day: the cells keep the time.
    let date = (!view.wide)
        .then(|| timefmt::common_date(fmt, shown.iter().map(|f| f.first_time)))
        .flatten();
    let day_only = date.is_some();
    let start = move |t: f64| timefmt::format_time(fmt, t, base, day_only);
    let opts = sink::table::TableOptions {
        wide: view.wide,
        width: table_width(),
        start: &start,
        duration: &timefmt::duration,
        date,
    };
    // A flood of spoofed connects or queries is summed, not listed a row per source.
    let (listed, summed) = if view.all {
        (shown.iter().collect(), Vec::new())
    } else {
        sink::table::sum_one_shot(&shown)
    };
    if listed.is_empty() && summed.is_empty() {
        writeln!(out, "no Quake 3 or QuakeWorld flow")?;
    } else if !listed.is_empty() {
        writeln!(out, "{}", sink::table::render_rows(&listed, &opts))?;
    }
    for s in &summed {
        writeln!(out, "{}", s.line("--all lists them"))?;
    }
    if let Some(line) = sink::table::other_udp_line(&other, "--all lists them") {
        writeln!(out, "{line}")?;
    }
    Ok(())
}

/// The width to fit: `COLUMNS` when set (as shells export it), else the terminal's; a pipe
/// without `COLUMNS` gets the unwrapped table.
fn table_width() -> Option<u16> {
    if let Some(w) = std::env::var("COLUMNS")
        .ok()
        .and_then(|v| v.trim().parse::<u16>().ok())
        .filter(|w| *w > 0)
    {
        return Some(w);
    }
    if !io::stdout().is_terminal() {
        return None;
    }
    comfy_table::Table::new().width()
}

fn decode(
    files: &[PathBuf],
    merge: bool,
    flows: Vec<u32>,
    json: bool,
    shownet: bool,
    select: &Select,
) -> Result<i32> {
    let files = input::expand(files)?;
    let window = select.window(false)?;
    let mut opts = Options {
        detail: quakecap::pipeline::Detail::Full,
        keep_raw: false,
        flows: (!flows.is_empty()).then_some(flows.clone()),
        threads: None,
        ..Default::default()
    };
    let mut out = io::BufWriter::new(io::stdout().lock());
    if merge {
        if select.player.is_some() || !window.is_open() {
            anyhow::bail!("--from, --to and --player work on single inputs, not with --merge");
        }
        let report = match (json, shownet) {
            (true, _) => pipeline::run_merged(&files, &opts, &mut sink::json::JsonLines::new(out))?,
            (_, true) => {
                pipeline::run_merged(&files, &opts, &mut sink::shownet::Shownet::new(out))?
            }
            _ => pipeline::run_merged(&files, &opts, &mut sink::text::Text::new(out))?,
        };
        decode_done(&report, &flows)?;
        return Ok(EXIT_OK);
    }
    let mut failed = 0;
    let mut present = Vec::new();
    let mut last = String::new();
    for file in &files {
        if files.len() > 1 && !json {
            // Text and trace output name the file they come from; JSON lines stay pure.
            writeln!(out, "==> {} <==", file.display())?;
        }
        let chosen = select.flows(file, &flows)?;
        opts.flows = (!chosen.is_empty()).then_some(chosen);
        match decode_one(file, &opts, json, shownet, window, &mut out) {
            Ok((report, passed)) => {
                present.extend(report.flows.iter().map(|f| f.id));
                last = report.file.clone();
                decode_done(&report, &[])?;
                if passed == 0 {
                    // An empty window matched nothing: not a quiet success.
                    let m = format!("{}: no message between --from and --to", report.file);
                    return Err(NothingDone(m).into());
                }
            }
            Err(e) if files.len() > 1 => {
                eprintln!("quakecap: {e}");
                failed += 1;
            }
            Err(e) => return Err(e.into()),
        }
    }
    out.flush()?;
    if failed == 0 {
        let name = if files.len() == 1 {
            last
        } else {
            "the inputs".into()
        };
        if let Some(m) = input::missing_flows(&flows, &present, &name) {
            return Err(NothingDone(m).into());
        }
    }
    Ok(if failed > 0 { EXIT_INPUT } else { EXIT_OK })
}

/// Decode one input into `out` in the chosen format, inside the time window; also how many
/// messages the window let through (1 when there is no window).
fn decode_one(
    file: &Path,
    opts: &Options,
    json: bool,
    shownet: bool,
    window: filter::Window,
    out: &mut dyn Write,
) -> Result<(Report, u64), InputError> {
    let mut j;
    let mut sn;
    let mut t;
    let inner: &mut dyn Sink = if json {
        j = sink::json::JsonLines::new(out);
        &mut j
    } else if shownet {
        sn = sink::shownet::Shownet::new(out);
        &mut sn
    } else {
        t = sink::text::Text::new(out);
        &mut t
    };
    if window.is_open() {
        return Ok((run_input(file, opts, inner)?, 1));
    }
    let mut f = filter::Filter::new(inner, window);
    let report = run_input(file, opts, &mut f)?;
    Ok((report, f.passed))
}

/// Warnings and failed messages of a decoded input; the flows asked for must exist.
fn decode_done(report: &Report, asked: &[u32]) -> Result<()> {
    warn(report);
    let errors: u64 = report.flows.iter().map(|f| f.errors).sum();
    if errors > 0 {
        eprintln!(
            "quakecap: {}: {errors} messages or packets failed to decode",
            report.file
        );
        for f in &report.flows {
            for e in f.error_details.iter().take(5) {
                eprintln!("  {e}");
            }
        }
    }
    let present: Vec<u32> = report.flows.iter().map(|f| f.id).collect();
    if let Some(m) = input::missing_flows(asked, &present, &report.file) {
        return Err(NothingDone(m).into());
    }
    Ok(())
}
