//! `quakecap diff A B`: semantic comparison of two captures and/or demos. Exit 0 same,
//! 1 different, 2 unusable.
use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use quakecap::diff::{self, DiffError, Difference, Kind, Outcome, Side};

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// First capture or demo.
    pub a: PathBuf,
    /// Second capture or demo.
    pub b: PathBuf,
    /// One JSON object: `same` and `differences`.
    #[arg(long)]
    pub json: bool,
    /// Also compare encoding: op order, delta bases, acknowledgements, downloads.
    #[arg(long)]
    pub strict: bool,
    /// Differences shown in detail (text output).
    #[arg(long, default_value_t = 20)]
    pub show: usize,
}

/// Why `p` cannot be one side of a diff, said as the other commands say it (the reader's
/// own error for a missing file is an I/O error "at byte 0").
fn unusable_side(p: &std::path::Path) -> Option<String> {
    match std::fs::metadata(p) {
        Err(e) => Some(format!("{}: {e}", p.display())),
        Ok(m) if m.is_dir() => Some(format!(
            "{}: a folder; diff compares two captures or demos",
            p.display()
        )),
        Ok(_) => super::input::check_not_empty(p)
            .err()
            .map(|e| e.to_string()),
    }
}

pub fn run(args: &DiffArgs) -> Result<i32> {
    let bad: Vec<String> = [&args.a, &args.b]
        .into_iter()
        .filter(|p| p.as_os_str() != "-")
        .filter_map(|p| unusable_side(p))
        .collect();
    if !bad.is_empty() {
        for b in &bad {
            eprintln!("quakecap: {b}");
        }
        return Ok(2);
    }
    let opts = diff::Options {
        strict: args.strict,
        ..Default::default()
    };
    let outcome = match diff::diff_files(&args.a, &args.b, &opts) {
        Ok(o) => o,
        Err(DiffError::Input(e)) => {
            eprintln!("quakecap: {e}");
            return Ok(2);
        }
        Err(e) => {
            eprintln!("quakecap: diff: {e}");
            return Ok(2);
        }
    };
    let mut out = io::BufWriter::new(io::stdout().lock());
    if args.json {
        serde_json::to_writer(&mut out, &outcome)?;
        writeln!(out)?;
    } else {
        text(&mut out, args, &outcome)?;
    }
    out.flush()?;
    Ok(if outcome.same { 0 } else { 1 })
}

fn text(out: &mut impl Write, args: &DiffArgs, o: &Outcome) -> io::Result<()> {
    writeln!(
        out,
        "A: {}  ({})",
        args.a.display(),
        names(&o.connections[0])
    )?;
    writeln!(
        out,
        "B: {}  ({})",
        args.b.display(),
        names(&o.connections[1])
    )?;
    let verdict = if o.same { "same" } else { "different" };
    writeln!(
        out,
        "{verdict}: {} messages compared, {} differences, {} messages outside the span both cover",
        o.compared, o.total, o.uncovered
    )?;
    for d in o.differences.iter().take(args.show) {
        writeln!(out, "  {}", line(d))?;
    }
    if o.total as usize > args.show {
        writeln!(
            out,
            "  ... {} more",
            o.total as usize - args.show.min(o.total as usize)
        )?;
    }
    Ok(())
}

fn line(d: &Difference) -> String {
    let time = d.game_time.map(|t| format!(" t={t}")).unwrap_or_default();
    let at = format!("{} {} seq {}{time}", d.conn, d.dir.as_str(), d.seq);
    let v = |x: &Option<serde_json::Value>| x.as_ref().map_or("-".to_string(), |v| v.to_string());
    match (d.kind, d.side) {
        (Kind::Missing, Some(Side::A)) => format!("{at}: {} only in B: {}", d.what, v(&d.b)),
        (Kind::Missing, _) => format!("{at}: {} only in A: {}", d.what, v(&d.a)),
        (Kind::Changed, _) => format!("{at}: {}: {} -> {}", d.what, v(&d.a), v(&d.b)),
    }
}

/// The first connections' names (a capture may hold hundreds).
fn names(list: &[String]) -> String {
    let mut s = list.iter().take(6).cloned().collect::<Vec<_>>().join(", ");
    if list.len() > 6 {
        s.push_str(&format!(", ... {} connections", list.len()));
    }
    s
}
