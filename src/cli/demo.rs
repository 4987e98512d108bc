//! `quakecap demo`: write playable demos (filled in by the demo writer).
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// A capture (or a demo file to re-write).
    pub file: PathBuf,
    /// Only these flow ids.
    #[arg(long = "flow")]
    pub flows: Vec<u32>,
    /// Directory for the written demos.
    #[arg(long, default_value = ".")]
    pub out_dir: PathBuf,
    /// One output file (only with a single connection).
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
    /// One file per map (gamestate) instead of continuing in the same file.
    #[arg(long)]
    pub split_maps: bool,
    /// Re-encode every snapshot as a full snapshot.
    #[arg(long)]
    pub full_snapshots: bool,
}

pub fn run(_args: &DemoArgs) -> Result<i32> {
    anyhow::bail!("demo writing is not implemented yet")
}
