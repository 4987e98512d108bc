//! `quakecap export FILE... --out DIR`: Parquet tables of every input, one Hive partition per
//! input (`DIR/<table>/source=<name>/part-0.parquet`), inputs exported in parallel (one per
//! core). An input that cannot be read is reported and skipped (exit 2); the others are
//! exported. Each source replaces its older partitions only when all its tables are complete.
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use anyhow::{Context, Result};
use clap::Args;
use quakecap::pipeline::InputError;
use quakecap::sink::export::{self, partition, ExportSink};

use super::input::{NothingDone, EXIT_FAILURE, EXIT_INPUT, EXIT_OK};

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Captures (pcap/pcapng) or demo files (.dm_66–.dm_71, .qwd, .mvd); `-` reads stdin,
    /// gzip/zstd are undone, a folder is walked.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Output folder: `<table>/source=<input name>/part-0.parquet` under it.
    #[arg(short = 'o', long)]
    pub out: PathBuf,
    /// The partition name of the one input (`source=NAME`) instead of its file stem: for
    /// drivers that run one export per input (scripts/spark_export.py).
    #[arg(long, value_name = "NAME")]
    pub source: Option<String>,
    /// Inputs exported at once (default: `QUAKECAP_THREADS`, else one per core).
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
}

/// How one input ended.
enum Outcome {
    Done(export::Counts),
    /// The input could not be read: skipped.
    Input(InputError),
    /// Writing the output failed.
    Output(anyhow::Error),
}

/// Run the command.
pub fn run(args: &ExportArgs) -> Result<i32> {
    let files = super::input::expand(&args.files)?;
    if files.is_empty() {
        return Err(NothingDone(format!(
            "no capture or demo in {}",
            args.files
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .into());
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("{}: cannot create the output folder", args.out.display()))?;
    let names = match &args.source {
        None => partition::source_names(&files),
        Some(name) => {
            if files.len() != 1 {
                anyhow::bail!("--source names one input; {} were given", files.len());
            }
            let clean = partition::clean(name);
            if clean != *name {
                anyhow::bail!(
                    "--source {name:?}: use letters, digits, '.', '-' and '_' (e.g. {clean:?})"
                );
            }
            vec![clean]
        }
    };
    let jobs = args
        .jobs
        .unwrap_or_else(quakecap::parallel::worker_threads)
        .clamp(1, files.len().max(1));
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Outcome>>> = Mutex::new((0..files.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let (Some(file), Some(name)) = (files.get(i), names.get(i)) else {
                    break;
                };
                let outcome = export_one(file, &args.out, name);
                if let Ok(mut r) = results.lock() {
                    if let Some(slot) = r.get_mut(i) {
                        *slot = Some(outcome);
                    }
                }
            });
        }
    });
    partition::remove_staging(&args.out);
    let results = results.into_inner().unwrap_or_default();
    let (mut bad_input, mut bad_output) = (0, 0);
    // The first failed write to stdout: no more lines there, but every input's failure is
    // still said on stderr (`println!` would panic on a closed pipe).
    let mut stdout = io::stdout().lock();
    let mut stdout_err: Option<io::Error> = None;
    for ((file, name), r) in files.iter().zip(&names).zip(results) {
        match r {
            Some(Outcome::Done(counts)) => {
                let parts: Vec<String> = counts.iter().map(|(t, n)| format!("{n} {t}")).collect();
                if stdout_err.is_none() {
                    let line = format!("{} -> source={name}: {}", file.display(), parts.join(", "));
                    stdout_err = writeln!(stdout, "{line}").err();
                }
            }
            Some(Outcome::Input(e)) => {
                eprintln!("quakecap: {e} (skipped)");
                bad_input += 1;
            }
            Some(Outcome::Output(e)) => {
                eprintln!("quakecap: {}: export failed: {e:#}", file.display());
                bad_output += 1;
            }
            None => {
                eprintln!("quakecap: {}: not exported", file.display());
                bad_output += 1;
            }
        }
    }
    // A closed pipe is no failure (the exports are done); another write error is one.
    if let Some(e) = stdout_err.filter(|e| e.kind() != io::ErrorKind::BrokenPipe) {
        return Err(e.into());
    }
    Ok(if bad_output > 0 {
        EXIT_FAILURE
    } else if bad_input > 0 {
        EXIT_INPUT
    } else {
        EXIT_OK
    })
}

/// Export one input into its staging folder, then put it in place.
fn export_one(file: &Path, out: &Path, name: &str) -> Outcome {
    let mut sink = match ExportSink::new(out, name) {
        Ok(s) => s,
        Err(e) => return Outcome::Output(anyhow::Error::new(e).context("cannot start the export")),
    };
    let report = match super::input::run(file, &export::options(), &mut sink, &mut |_| {}) {
        Ok(r) => r,
        // A write error comes back from the pipeline as an error of the input: the sink
        // knows it was its own (dropping the sink removes its staging folder either way).
        Err(e) => {
            return match sink.write_error() {
                Some(w) => Outcome::Output(anyhow::anyhow!("{w}")),
                None => Outcome::Input(e),
            }
        }
    };
    super::warn(&report);
    super::warn_events(sink.warnings(), sink.warnings_total());
    match sink.commit() {
        Ok(counts) => Outcome::Done(counts),
        Err(e) => Outcome::Output(anyhow::Error::new(e).context("cannot write the partition")),
    }
}
