//! `quakecap events`: the game events of captures and demo files as a timeline and a
//! per-player summary, or as JSON Lines.
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use quakecap::gameevent::summary::{summarize, PlayerSummary};
use quakecap::gameevent::{clock_ms, GameEvent, Kind, ALL_KINDS};
use quakecap::pipeline::Options;
use quakecap::sink::events::EventSink;

#[derive(Debug, Args)]
pub struct EventsArgs {
    /// Captures (pcap/pcapng) or demo files (.dm_66–.dm_71, .qwd, .mvd); `-` reads stdin,
    /// gzip/zstd are undone, a folder is walked.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Treat all captures as one, interleaved by time (flow ids continue across files).
    #[arg(long)]
    pub merge: bool,
    /// Only these flow ids.
    #[arg(long = "flow")]
    pub flows: Vec<u32>,
    /// Only these kinds (comma-separated: kill,chat,join,leave,rename,team,map,match_start,
    /// match_end,score,flag,scoreline).
    #[arg(long, value_delimiter = ',')]
    pub kind: Vec<String>,
    /// JSON Lines, one event per line.
    #[arg(long)]
    pub json: bool,
    /// `--from`/`--to` keep the events in a time window; `--player` those naming a player.
    #[command(flatten)]
    pub select: super::Select,
    /// `--follow` / `--replay SPEED`: a live input, each event written once it is final.
    #[command(flatten)]
    pub live: super::follow::FollowArgs,
}

/// Run the command.
pub fn run(args: &EventsArgs) -> Result<i32> {
    let kinds = parse_kinds(&args.kind)?;
    let opts = Options {
        detail: quakecap::pipeline::Detail::Events,
        keep_raw: false,
        flows: (!args.flows.is_empty()).then(|| args.flows.clone()),
        // The events read commands, gamestates and the frames' obituary entities only.
        ..Options::default()
    };
    let window = args.select.window(false)?;
    if args.live.live() {
        if !window.is_open() {
            bail!("--from/--to select a stored capture's part: not with --follow or --replay");
        }
        return follow(args, kinds, opts);
    }
    let mut sink = EventSink::new();
    let files = super::input::expand(&args.files)?;
    let mut failed = 0;
    if args.merge {
        let report = quakecap::pipeline::run_merged(&files, &opts, &mut sink)?;
        super::warn(&report);
    } else {
        failed = super::run_each(&files, &opts, &mut sink);
    }
    super::warn_events(&sink.warnings, sink.warnings_total);
    // No input could be read: each said why; an empty table would read as "no events".
    if !args.merge && failed == files.len() {
        return Ok(super::input::EXIT_INPUT);
    }
    // One timeline and summary per game session: inputs that report one session (a capture
    // and its clients' demos) are one timeline, each event once; others stay apart.
    let sessions = sink.sessions();
    let several = sessions.len() > 1;
    let mut out = BufWriter::new(io::stdout().lock());
    let mut shown_any = false;
    for (files, events) in &sessions {
        let first = events.iter().map(|e| e.time).fold(f64::INFINITY, f64::min);
        let shown: Vec<&GameEvent> = events
            .iter()
            .filter(|e| kinds.as_ref().is_none_or(|k| k.contains(&e.kind)))
            .filter(|e| in_window(e, &window, first))
            .filter(|e| names_player(e, args))
            .collect();
        if shown.is_empty() {
            continue;
        }
        if args.json {
            for e in &shown {
                if several {
                    serde_json::to_writer(
                        &mut out,
                        &InSession {
                            session: files[0].as_str(),
                            event: e,
                        },
                    )?;
                } else {
                    serde_json::to_writer(&mut out, e)?;
                }
                writeln!(out)?;
            }
            shown_any = true;
            continue;
        }
        if shown_any {
            writeln!(out)?;
        }
        shown_any = true;
        if several {
            writeln!(out, "== {}", files.join(" + "))?;
        }
        for e in &shown {
            writeln!(out, "{}", timeline_line(e))?;
        }
        writeln!(out)?;
        // The summary covers the time window and --player (not --kind: frags need the kills,
        // and a player's line needs the others' kills of them).
        let kept: Vec<GameEvent> = events
            .iter()
            .filter(|e| in_window(e, &window, first))
            .cloned()
            .collect();
        let summary: Vec<PlayerSummary> = summarize(&kept)
            .into_iter()
            .filter(|p| {
                args.select
                    .player
                    .as_deref()
                    .is_none_or(|want| named(p, want))
            })
            .collect();
        write_summary(&mut out, &summary)?;
    }
    if !shown_any {
        drop(out);
        eprintln!("quakecap: {}", nothing_shown(args, &sink.events));
        // An input without game events is an answer (as `net` on a capture without
        // connections); a selection that matched nothing is not.
        let selected = !args.flows.is_empty()
            || kinds.is_some()
            || !window.is_open()
            || args.select.player.is_some();
        return Ok(if failed > 0 {
            super::input::EXIT_INPUT
        } else if selected {
            super::input::EXIT_NOTHING
        } else {
            super::input::EXIT_OK
        });
    }
    out.flush()?;
    // A missing file among good ones is still a failure.
    Ok(if failed > 0 {
        super::input::EXIT_INPUT
    } else {
        super::input::EXIT_OK
    })
}

/// `events --follow` / `--replay`: each event (of the asked kinds and player) as a line,
/// flushed, as soon as the merge across the flows decides it; the summary at the end (text).
fn follow(args: &EventsArgs, kinds: Option<Vec<Kind>>, opts: Options) -> Result<i32> {
    let path = super::follow::one_input(&args.files, args.merge)?;
    let json = args.json;
    let player = args.select.player.clone();
    let out = move |e: &GameEvent| -> io::Result<()> {
        if !kinds.as_ref().is_none_or(|k| k.contains(&e.kind)) {
            return Ok(());
        }
        if let Some(p) = &player {
            if !e.names().iter().any(|n| super::filter::same_player(n, p)) {
                return Ok(());
            }
        }
        let mut out = io::stdout().lock();
        if json {
            serde_json::to_writer(&mut out, e)?;
            writeln!(out)?;
        } else {
            writeln!(out, "{}", timeline_line(e))?;
        }
        out.flush()
    };
    let mut sink = EventSink::follow(Box::new(out), !json);
    let report = match super::follow::run(path, &args.live, &opts, &mut sink) {
        Ok(r) => r,
        // A closed stdout ends the run quietly (see `is_broken_pipe`).
        Err(e @ quakecap::pipeline::InputError::Io { .. }) => return Err(e.into()),
        Err(e) => {
            eprintln!("quakecap: {e}");
            return Ok(super::input::EXIT_INPUT);
        }
    };
    super::warn(&report);
    super::warn_events(&sink.warnings, sink.warnings_total);
    if !json {
        let summary: Vec<PlayerSummary> = summarize(&sink.events)
            .into_iter()
            .filter(|p| {
                args.select
                    .player
                    .as_deref()
                    .is_none_or(|want| named(p, want))
            })
            .collect();
        let mut out = io::stdout().lock();
        writeln!(out)?;
        write_summary(&mut out, &summary)?;
        out.flush()?;
    }
    Ok(super::input::EXIT_OK)
}

/// An event of one of several sessions, with the session's first file (`session`).
#[derive(serde::Serialize)]
struct InSession<'a> {
    session: &'a str,
    #[serde(flatten)]
    event: &'a GameEvent,
}

/// The event names `--player` (every event without one).
fn names_player(e: &GameEvent, args: &EventsArgs) -> bool {
    args.select
        .player
        .as_deref()
        .is_none_or(|p| e.names().iter().any(|n| super::filter::same_player(n, p)))
}

/// Why no event is shown: the inputs hold none (of the asked flows), nobody of that name, or
/// none of the asked kinds and window.
fn nothing_shown(args: &EventsArgs, events: &[GameEvent]) -> String {
    let flows = if args.flows.is_empty() {
        String::new()
    } else {
        let ids: Vec<String> = args.flows.iter().map(ToString::to_string).collect();
        format!(" of flow {}", ids.join(", "))
    };
    if events.is_empty() {
        return format!("no game event{flows} in the input");
    }
    if let Some(p) = args.select.player.as_deref() {
        let named = events
            .iter()
            .any(|e| e.names().iter().any(|n| super::filter::same_player(n, p)));
        if !named {
            // One summary row per name, in name order.
            let players: Vec<String> = summarize(events).into_iter().map(|s| s.name).collect();
            return format!(
                "no event{flows} names player {p:?} (players: {})",
                players.join(", ")
            );
        }
    }
    format!("no event{flows} matches the --kind, --from/--to and --player selection")
}

/// The event is inside `--from`/`--to`: capture time (epoch, or after the first event),
/// or game time.
fn in_window(e: &GameEvent, w: &super::filter::Window, first: f64) -> bool {
    use super::filter::Bound;
    let at = |b: &Bound| -> Option<f64> {
        match b {
            Bound::Epoch(_) => Some(e.time),
            Bound::Relative(_) => Some(e.session_time.unwrap_or(e.time - first)),
            Bound::Game(_) => e.game_time.map(|g| g as f64 / 1000.0),
        }
    };
    let secs = |b: &Bound| match b {
        Bound::Epoch(t) | Bound::Relative(t) => *t,
        Bound::Game(ms) => *ms as f64 / 1000.0,
    };
    let after = w
        .from
        .as_ref()
        .is_none_or(|b| at(b).is_some_and(|t| t >= secs(b)));
    let before =
        w.to.as_ref()
            .is_none_or(|b| at(b).is_some_and(|t| t <= secs(b)));
    after && before
}

fn parse_kinds(words: &[String]) -> Result<Option<Vec<Kind>>> {
    if words.is_empty() {
        return Ok(None);
    }
    let mut v = Vec::new();
    for w in words {
        match Kind::parse(w.trim()) {
            Some(k) => v.push(k),
            None => {
                let names: Vec<&str> = ALL_KINDS.iter().map(|k| k.name()).collect();
                bail!("unknown event kind {w:?} (kinds: {})", names.join(","));
            }
        }
    }
    Ok(Some(v))
}

/// `mm:ss.mmm` of game time when it is the server's clock, else of the session time (the
/// demo's clock for demo files): one time axis for every line.
fn clock(e: &GameEvent) -> String {
    let ms = e
        .game_time
        .filter(|_| e.server_clock)
        .unwrap_or_else(|| (e.session_time.unwrap_or(e.time) * 1000.0) as i64);
    clock_ms(ms)
}

fn timeline_line(e: &GameEvent) -> String {
    format!("{}  {:<11} {}", clock(e), e.kind.name(), e.describe())
}

/// The table, fitted to 80 columns: names past 20 characters are cut (with `~`); CTF
/// columns (flags taken, captured, returned) only when a player has one.
/// The summary row is `want`'s: by his name or one he had before a rename.
fn named(p: &PlayerSummary, want: &str) -> bool {
    std::iter::once(&p.name)
        .chain(&p.other_names)
        .any(|n| super::filter::same_player(n, want))
}

fn write_summary(out: &mut impl Write, players: &[PlayerSummary]) -> io::Result<()> {
    const NAME: usize = 20;
    let ctf = players
        .iter()
        .any(|p| p.flag_takes + p.flag_captures + p.flag_returns > 0);
    let width = players
        .iter()
        .map(|p| p.name.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(6, NAME);
    write!(
        out,
        "{:<width$} {:>5} {:>6} {:>4} {:>3} {:>4} {:>6} {:>5}",
        "player", "frags", "deaths", "suic", "tk", "chat", "time", "score"
    )?;
    if ctf {
        write!(out, " {:>5} {:>4} {:>3}", "takes", "caps", "ret")?;
    }
    writeln!(out)?;
    for p in players {
        let score = p.final_score.map_or("-".to_string(), |s| s.to_string());
        let t = p.time_in_game.round() as u64;
        let name: String = if p.name.chars().count() > width {
            p.name.chars().take(width - 1).chain(['~']).collect()
        } else {
            p.name.clone()
        };
        write!(
            out,
            "{:<width$} {:>5} {:>6} {:>4} {:>3} {:>4} {:>3}:{:02} {:>5}",
            name,
            p.frags,
            p.deaths,
            p.suicides,
            p.team_kills,
            p.chat_lines,
            t / 60,
            t % 60,
            score
        )?;
        if ctf {
            write!(
                out,
                " {:>5} {:>4} {:>3}",
                p.flag_takes, p.flag_captures, p.flag_returns
            )?;
        }
        writeln!(out)?;
        // The names he had before a rename, under his row (within the 80 columns).
        if !p.other_names.is_empty() {
            let was = format!("  (was {})", p.other_names.join(", "));
            let was: String = if was.chars().count() > 80 {
                was.chars().take(78).chain("~)".chars()).collect()
            } else {
                was
            };
            writeln!(out, "{was}")?;
        }
    }
    Ok(())
}
