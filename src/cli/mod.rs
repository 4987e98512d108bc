//! Command-line front end: `flows`, `decode`, `demo`. No protocol knowledge here; it builds a
//! pipeline, chooses sinks and reports.
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use quakecap::pipeline::{self, InputError, Options, Report, Sink};
use quakecap::sink;

#[path = "check.rs"]
mod check;
#[path = "demo.rs"]
mod demo;
#[path = "diff.rs"]
mod diff;

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
        /// pcap / pcapng files (each on its own unless --merge).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print a JSON array instead of a table.
        #[arg(long)]
        json: bool,
        /// Treat all files as one capture (flow ids continue across files).
        #[arg(long)]
        merge: bool,
    },
    /// Decode every message of every flow (or the chosen ones), both directions.
    Decode {
        /// A capture (pcap/pcapng) or a demo file (.dm_66/67/68/71, .qwd, .mvd).
        file: PathBuf,
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
    },
    /// Write each client connection's server stream as a playable demo.
    Demo(demo::DemoArgs),
    /// Compare two captures and/or demos of the same session: exit 0 same, 1 different,
    /// 2 unusable.
    Diff(diff::DiffArgs),
    /// Conformance check of every connection and demo: exit 0 clean, 1 findings, 2 unusable.
    Check(check::CheckArgs),
}

/// Run the command and return the process exit code.
pub fn run(cli: Cli) -> i32 {
    let res = match cli.command {
        Command::Flows { files, json, merge } => flows(&files, json, merge),
        Command::Decode {
            file,
            flows,
            json,
            shownet,
        } => decode(&file, flows, json, shownet),
        Command::Demo(args) => demo::run(&args),
        Command::Diff(args) => diff::run(&args),
        Command::Check(args) => check::run(&args),
    };
    match res {
        Ok(code) => code,
        Err(e) => {
            // A closed pipe (`| head`) is not an error.
            let broken_pipe = |c: &(dyn std::error::Error + 'static)| {
                c.downcast_ref::<io::Error>()
                    .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
                    || matches!(c.downcast_ref::<InputError>(), Some(InputError::Io { source, .. }) if source.kind() == io::ErrorKind::BrokenPipe)
            };
            if e.chain().any(broken_pipe) {
                return 0;
            }
            // Our errors already carry their causes in their text: print them once.
            eprintln!("quakecap: {e}");
            if e.downcast_ref::<InputError>().is_some() {
                2
            } else {
                1
            }
        }
    }
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
    if pipeline::is_demo(path) {
        return pipeline::run_demo(path, opts, sink);
    }
    let pb = progress_for(path);
    let r = pipeline::run_capture(path, opts, sink, &mut |b| pb.set_position(b));
    pb.finish_and_clear();
    r
}

/// Print a report's file-level warnings to stderr.
pub fn warn(report: &Report) {
    for w in report.warnings.iter().take(20) {
        eprintln!("quakecap: {}: warning: {w}", report.file);
    }
    // Only the first warnings are kept in the report; the total counts them all.
    let total = report.warnings_total.max(report.warnings.len() as u64);
    if total > 20 {
        eprintln!(
            "quakecap: {}: ... {} more warnings",
            report.file,
            total - 20
        );
    }
}

struct NoSink;
impl Sink for NoSink {}

fn flows(files: &[PathBuf], json: bool, merge: bool) -> Result<i32> {
    let opts = Options::default();
    let mut all = Vec::new();
    let mut failed = 0;
    let mut tables = Vec::new();
    if merge {
        let report = pipeline::run_merged(files, &opts, &mut NoSink)?;
        warn(&report);
        all = report.flows.clone();
        all.extend(report.aggregates.iter().cloned());
        tables.push((report.file.clone(), report.flows, report.aggregates));
    } else {
        for f in files {
            match run_input(f, &opts, &mut NoSink) {
                Ok(report) => {
                    warn(&report);
                    all.extend(report.flows.iter().cloned());
                    all.extend(report.aggregates.iter().cloned());
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
    if json {
        serde_json::to_writer_pretty(&mut out, &all)?;
        writeln!(out)?;
    } else {
        for (file, flows, aggregates) in &tables {
            if tables.len() > 1 {
                writeln!(out, "{file}")?;
            }
            writeln!(out, "{}", sink::table::render(flows))?;
            write!(out, "{}", sink::table::render_aggregates(aggregates))?;
        }
    }
    Ok(if failed == files.len() { 2 } else { 0 })
}

fn decode(file: &Path, flows: Vec<u32>, json: bool, shownet: bool) -> Result<i32> {
    let opts = Options {
        emit: true,
        keep_raw: false,
        flows: (!flows.is_empty()).then_some(flows),
        threads: None,
        ..Default::default()
    };
    let out = io::BufWriter::new(io::stdout().lock());
    let report = if json {
        run_input(file, &opts, &mut sink::json::JsonLines::new(out))?
    } else if shownet {
        run_input(file, &opts, &mut sink::shownet::Shownet::new(out))?
    } else {
        run_input(file, &opts, &mut sink::text::Text::new(out))?
    };
    warn(&report);
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
    Ok(0)
}
