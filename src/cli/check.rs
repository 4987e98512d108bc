//! `quakecap check FILE...`: conformance of every connection and demo. Exit 0 clean,
//! 1 findings, 2 unusable.
use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use quakecap::check::{self, FileCheck};

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Captures (pcap/pcapng) and demo files; `-` reads stdin, gzip/zstd are undone, a folder
    /// is walked.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// JSON Lines: one object per finding.
    #[arg(long)]
    pub json: bool,
    /// Also write a JUnit XML report (one testcase per connection or demo) to this file.
    #[arg(long)]
    pub junit: Option<PathBuf>,
}

pub fn run(args: &CheckArgs) -> Result<i32> {
    let mut results: Vec<FileCheck> = Vec::new();
    let mut unusable = 0;
    let mut out = io::BufWriter::new(io::stdout().lock());
    let files = super::input::expand(&args.files)?;
    for f in &files {
        let name = super::input::logical_name(f);
        let demo = quakecap::pipeline::is_demo(std::path::Path::new(&name));
        let pb = super::progress_for(f);
        let checked = check::check_input(&name, demo, |opts, sink| {
            super::input::run(f, opts, sink, &mut |b| pb.set_position(b))
        });
        pb.finish_and_clear();
        match checked {
            Ok(r) => {
                // JSON Lines stream as each input is checked; the text waits for its status.
                if args.json {
                    for g in &r.findings {
                        serde_json::to_writer(&mut out, g)?;
                        writeln!(out)?;
                    }
                }
                results.push(r);
            }
            Err(e) => {
                eprintln!("quakecap: {e}");
                unusable += 1;
            }
        }
    }
    let findings: usize = results.iter().map(|r| r.findings.len()).sum();
    let units: usize = results.iter().map(|r| r.units.len()).sum();
    if !args.json {
        // The status first, then the findings: `check … | head` (or a pager quit early)
        // still shows whether the inputs passed and how many findings there are.
        writeln!(
            out,
            "{}: {} files, {units} connections/demos checked, {findings} findings{}",
            if findings > 0 || unusable > 0 {
                "FAIL"
            } else {
                "PASS"
            },
            results.len(),
            if unusable > 0 {
                format!(", {unusable} files unusable")
            } else {
                String::new()
            }
        )?;
        for g in results.iter().flat_map(|r| &r.findings) {
            writeln!(out, "{}", check::line(g))?;
        }
    }
    out.flush()?;
    if let Some(path) = &args.junit {
        // Written whole or not at all: a CI system must never read half a report.
        let mut part = super::demo::PartFile::create_for(path.clone(), "JUnit report")?;
        part.write_all(check::junit::render(&results).as_bytes())?;
        part.commit()?;
    }
    Ok(if unusable > 0 && results.is_empty() {
        2
    } else if findings > 0 || unusable > 0 {
        1
    } else {
        0
    })
}
