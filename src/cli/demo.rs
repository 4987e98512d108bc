//! `quakecap demo`: write each Quake 3 client connection's server stream as a playable demo
//! (`.dm_68` / `.dm_71`), or re-write a demo file.
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::Args;
use quakecap::pipeline::Options;
use quakecap::sink::demo::{DemoOptions, DemoOutput, DemoSink, DemoStats};

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// A capture (pcap/pcapng), or a demo file to re-write.
    pub file: PathBuf,
    /// Only these flow ids.
    #[arg(long = "flow")]
    pub flows: Vec<u32>,
    /// Directory for the written demos.
    #[arg(long, default_value = ".")]
    pub out_dir: PathBuf,
    /// One output file (only when a single demo is written).
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
    /// One file per map (gamestate) instead of continuing in the same file.
    #[arg(long)]
    pub split_maps: bool,
    /// Re-encode every snapshot as a full snapshot (the demo can be cut anywhere).
    #[arg(long)]
    pub full_snapshots: bool,
}

/// Files named `<capture>-flow<id>[-<part>]-<player>-<map>.dm_<proto>`.
struct Files {
    dir: PathBuf,
    stem: String,
    single: Option<PathBuf>,
    written: Vec<(PathBuf, u32, DemoStats)>,
    pending: Vec<(u32, u32, PathBuf)>,
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

impl DemoOutput for Files {
    type W = BufWriter<File>;

    fn open(
        &mut self,
        flow: u32,
        part: u32,
        protocol: u32,
        map: Option<&str>,
        player: Option<&str>,
    ) -> io::Result<Self::W> {
        let path = match &self.single {
            Some(p) if self.pending.is_empty() && self.written.is_empty() => p.clone(),
            Some(_) => {
                return Err(io::Error::other(
                    "-o names one file but more than one demo is being written; use --out-dir",
                ))
            }
            None => {
                let part = if part > 0 {
                    format!("-{part}")
                } else {
                    String::new()
                };
                // QuakeWorld (protocol 28) writes .qwd; Quake 3 .dm_<protocol>.
                let ext = if protocol == 28 {
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
        Ok(BufWriter::new(File::create(&path)?))
    }

    fn closed(
        &mut self,
        flow: u32,
        part: u32,
        mut w: Self::W,
        stats: &DemoStats,
    ) -> io::Result<()> {
        w.flush()?;
        if let Some(i) = self
            .pending
            .iter()
            .position(|(f, p, _)| *f == flow && *p == part)
        {
            let (_, _, path) = self.pending.remove(i);
            self.written.push((path, flow, stats.clone()));
        }
        Ok(())
    }
}

pub fn run(args: &DemoArgs) -> Result<i32> {
    if !args.out_dir.is_dir() {
        bail!("{}: not a directory", args.out_dir.display());
    }
    if quakecap::pipeline::is_qw_demo(&args.file) {
        bail!(
            "{}: re-writing QuakeWorld demo files is not supported (QuakeWorld demos are written from captures)",
            args.file.display()
        );
    }
    let stem = args
        .file
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("capture")
        .to_string();
    let files = Files {
        dir: args.out_dir.clone(),
        stem: clean(&stem),
        single: args.output.clone(),
        written: Vec::new(),
        pending: Vec::new(),
    };
    let dopts = DemoOptions {
        full_snapshots: args.full_snapshots,
        split_maps: args.split_maps,
    };
    let mut sink = DemoSink::new(files, dopts);
    let opts = Options {
        emit: false,
        keep_raw: true,
        flows: (!args.flows.is_empty()).then(|| args.flows.clone()),
        threads: None,
        ..Default::default()
    };
    let report = super::run_input(&args.file, &opts, &mut sink)?;
    super::warn(&report);
    let missing = sink.no_gamestate.clone();
    let files = sink.into_output();
    let mut out = io::stdout().lock();
    for (path, flow, s) in &files.written {
        print_demo(&mut out, path, *flow, s)?;
    }
    for (flow, n) in missing {
        let f = report.flows.iter().find(|f| f.id == flow);
        if f.is_some_and(|f| f.kind == "connection" || f.kind == "demo") {
            writeln!(
                out,
                "flow {flow}: no demo written: the capture holds no gamestate for this connection ({n} server messages seen); it started after the client loaded the map"
            )?;
        }
    }
    let conns = report
        .flows
        .iter()
        .filter(|f| f.kind == "connection" || f.kind == "demo")
        .count();
    if conns == 0 {
        writeln!(out, "{}: no client connection found", args.file.display())?;
    }
    Ok(0)
}

fn print_demo(out: &mut impl Write, path: &Path, flow: u32, s: &DemoStats) -> io::Result<()> {
    if path.extension().is_some_and(|e| e == "qwd") {
        writeln!(out, "{}", path.display())?;
        return writeln!(
            out,
            "  flow {flow}, player {}, map {}: {} blocks",
            s.player.as_deref().unwrap_or("?"),
            s.map.as_deref().unwrap_or("?"),
            s.records
        );
    }
    let span = match (s.first_server_time, s.last_server_time) {
        (Some(a), Some(b)) => format!("{:.1} s of game time ({a}..{b})", (b - a) as f64 / 1000.0),
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
            "  note: {} gamestates (map changes) in one file; ioquake3 reads past the second one but renders little of it — use --split-maps for one fully playable demo per map",
            s.gamestates
        )?;
    }
    Ok(())
}
