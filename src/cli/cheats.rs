//! `quakecap cheats`: aim and timing signals per player, with a verdict and the moments
//! behind it.
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use quakecap::analysis::cheats::sink::CheatsSink;
use quakecap::analysis::cheats::PlayerCheats;
use quakecap::pipeline::{Detail, Options};

#[derive(Debug, Args)]
pub struct CheatsArgs {
    /// Captures (pcap/pcapng) or Quake 3 demo files; `-` reads stdin, gzip/zstd are undone,
    /// a folder is walked.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Only these flow ids.
    #[arg(long = "flow")]
    pub flows: Vec<u32>,
    /// Only this player (colour codes and case ignored).
    #[arg(long)]
    pub player: Option<String>,
    /// A JSON array, one object per player.
    #[arg(long)]
    pub json: bool,
}

/// Run the command.
pub fn run(args: &CheatsArgs) -> Result<i32> {
    let opts = Options {
        detail: Detail::Frames,
        flows: (!args.flows.is_empty()).then(|| args.flows.clone()),
        ..Options::default()
    };
    let files = super::input::expand(&args.files)?;
    let mut sink = CheatsSink::new();
    let failed = super::run_each(&files, &opts, &mut sink);
    if failed == files.len() {
        return Ok(super::input::EXIT_INPUT);
    }
    if sink.quakeworld > 0 {
        eprintln!(
            "quakecap: {} QuakeWorld connection(s) or .qwd demo(s) not judged: an .mvd \
             carries the players' views, a capture its connection's commands; a .qwd neither",
            sink.quakeworld
        );
    }
    let wanted = args.player.as_deref().map(clean);
    let players: Vec<&PlayerCheats> = sink
        .players
        .iter()
        .filter(|p| wanted.as_ref().is_none_or(|w| clean(&p.player) == *w))
        .collect();
    let mut out = BufWriter::new(io::stdout().lock());
    if args.json {
        serde_json::to_writer(&mut out, &players)?;
        writeln!(out)?;
    } else {
        table(&mut out, &players)?;
    }
    out.flush()?;
    Ok(if failed > 0 {
        super::input::EXIT_INPUT
    } else if players.is_empty() {
        // Nobody to judge (`--player` matched no one, or no input had a player's view).
        super::input::EXIT_NOTHING
    } else {
        super::input::EXIT_OK
    })
}

fn clean(s: &str) -> String {
    quakecap::q3::color::plain(s).to_lowercase()
}

fn table(out: &mut impl Write, players: &[&PlayerCheats]) -> io::Result<()> {
    if players.is_empty() {
        return writeln!(
            out,
            "no player to judge (no player's view in the inputs, or --player matched nobody)"
        );
    }
    let mut file = "";
    for p in players {
        if p.file != file {
            file = &p.file;
            writeln!(out, "== {file}")?;
        }
        let flow = p.flow.map_or("demo".to_string(), |f| format!("flow {f}"));
        let verdict = format!("{:?}", p.verdict).to_lowercase();
        writeln!(
            out,
            "{:<20} {flow:<8} {verdict:<10} score {:.0}",
            p.player, p.score
        )?;
        let s = &p.signals;
        let aim = format!("aim: {}", s.aim_words());
        let holds = match s.upstream_holds {
            Some(h) => format!("upstream holds {h}"),
            None => "upstream holds: not judged in this input".to_string(),
        };
        let snaps = match s.snaps {
            Some(n) => format!("snaps {n}"),
            None => "snaps: not judged".to_string(),
        };
        writeln!(out, "    {aim}; {snaps}; {holds}")?;
        writeln!(out, "    {}", s.clock_words())?;
        for m in p.moments.iter().take(5) {
            let at = m.start.map_or(String::new(), |t| {
                super::timefmt::format_time(super::timefmt::TimeFormat::Utc, t, 0.0, false) + " "
            });
            writeln!(
                out,
                "    {:<6} {}: {}{}",
                m.kind,
                [
                    at.trim_end().to_string(),
                    m.game_span("-").unwrap_or_default()
                ]
                .join(" ")
                .trim(),
                m.target
                    .as_ref()
                    .map_or(String::new(), |t| format!("on {t}: ")),
                m.detail
            )?;
        }
        if p.moments.len() > 5 {
            writeln!(
                out,
                "    ... {} moments in all (--json lists them)",
                p.moments.len()
            )?;
        }
    }
    Ok(())
}
