//! `quakecap net` (network quality per connection, as a table or JSON) and `quakecap report`
//! (the same analysis as one self-contained HTML file with plots).
use std::collections::HashMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::Args;
use quakecap::analysis::cheats::sink::CheatsSink;
use quakecap::analysis::cheats::PlayerCheats;
use quakecap::analysis::net::report::NetQuality;
use quakecap::analysis::net::NetSink;
use quakecap::pipeline::{self, Event, Options, Report, Sink};
use quakecap::sink;
use quakecap::sink::events::EventSink;
use quakecap::sink::spool::{Spilled, Spool};

use super::input::{NothingDone, EXIT_INPUT, EXIT_OK};
use super::timefmt::TimeFormat;

#[derive(Debug, Args)]
pub struct NetArgs {
    /// Captures (pcap/pcapng; demo files hold no packets); `-` reads stdin, gzip/zstd are
    /// undone, a folder is walked.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Treat all captures as one, interleaved by time (flow ids continue across files).
    #[arg(long)]
    pub merge: bool,
    /// Only these flow ids.
    #[arg(long = "flow")]
    pub flows: Vec<u32>,
    /// Print a JSON array, one object per connection.
    #[arg(long)]
    pub json: bool,
    /// Seconds per entry of each connection's series.
    #[arg(long, default_value_t = 1.0)]
    pub interval: f64,
    /// `--follow` / `--replay SPEED`: a live input, as JSON Lines (or text lines) written as
    /// they become final: connection starts, an entry per interval, lag events as they begin
    /// and end, each connection's report at its end.
    #[command(flatten)]
    pub live: super::follow::FollowArgs,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Captures (pcap/pcapng; demo files hold no packets); `-` reads stdin, gzip/zstd are
    /// undone, a folder is walked. Several inputs make one report: flow ids continue across
    /// inputs, and the report's title names each input with its flows.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The HTML file to write (written whole or not at all).
    #[arg(short = 'o', long = "out")]
    pub out: PathBuf,
    /// Only these flow ids.
    #[arg(long = "flow")]
    pub flows: Vec<u32>,
    /// The clock of every time shown: the capture's local date and time (`abs`, the local
    /// zone's offset at the capture's start) or UTC (`utc`).
    #[arg(long, short = 't', value_enum, default_value_t = TimeFormat::Abs)]
    pub time: TimeFormat,
    /// Also judge each player for cheats, as `quakecap cheats` does: a verdict with its
    /// moments in each player's summary and a section of its own. It decodes every
    /// snapshot whole, so it costs about as much again as the report.
    #[arg(long)]
    pub cheats: bool,
}

fn options(flows: &[u32]) -> Options {
    Options {
        samples: true,
        flows: (!flows.is_empty()).then(|| flows.to_vec()),
        ..Options::default()
    }
}

/// A demo file holds no packets: said once, counted as an unusable input.
fn is_refused_demo(f: &Path) -> bool {
    let demo = pipeline::is_demo(Path::new(&super::input::logical_name(f)));
    if demo {
        eprintln!(
            "quakecap: {}: a demo file holds no packets; network quality needs a capture \
             (pcap/pcapng)",
            f.display()
        );
    }
    demo
}

fn say_if_empty(ns: &NetSink, file: &str) {
    if ns.reports.is_empty() {
        eprintln!("quakecap: {file}: no game connection with netchan traffic in this capture");
    }
}

/// `net --follow` / `--replay`: the live lines ([`quakecap::analysis::net::LiveNet`]),
/// JSON Lines with `--json`, else one line of text each.
fn follow(args: &NetArgs) -> Result<i32> {
    let path = super::follow::one_input(&args.files, args.merge)?;
    let json = args.json;
    let out = move |v: &serde_json::Value| -> io::Result<()> {
        let mut out = io::stdout().lock();
        if json {
            serde_json::to_writer(&mut out, v)?;
            writeln!(out)?;
        } else {
            writeln!(out, "{}", live_text(v))?;
        }
        out.flush()
    };
    let mut sink = quakecap::analysis::net::LiveNet::new(args.interval, Box::new(out));
    match super::follow::run(path, &args.live, &options(&args.flows), &mut sink) {
        Ok(report) => {
            super::warn(&report);
            Ok(EXIT_OK)
        }
        // A closed stdout ends the run quietly (see `is_broken_pipe`).
        Err(e @ pipeline::InputError::Io { .. }) => Err(e.into()),
        Err(e) => {
            eprintln!("quakecap: {e}");
            Ok(EXIT_INPUT)
        }
    }
}

/// One live line as text: `flow N  type  what`.
fn live_text(v: &serde_json::Value) -> String {
    let f = |k: &str| v.get(k).cloned().unwrap_or(serde_json::Value::Null);
    let num = |x: serde_json::Value, digits: usize| {
        x.as_f64()
            .map_or("-".to_string(), |x| format!("{x:.digits$}"))
    };
    let kind = f("type");
    let what = match kind.as_str().unwrap_or("") {
        "start" => format!(
            "{} server {} client {}",
            f("game"),
            f("server"),
            f("client")
        ),
        "interval" => format!(
            "ping {} ms  loss up {} down {}  snaps {}",
            num(f("ping"), 0),
            num(f("loss")["c2s"].clone(), 3),
            num(f("loss")["s2c"].clone(), 3),
            f("snapshots")
        ),
        "lag_start" => format!("lag started: {} {}", f("kind"), f("dir")),
        "lag" => format!(
            "lag: {} {} for {} s, peak {}",
            f("kind"),
            f("dir"),
            num(
                serde_json::json!(
                    f("end").as_f64().unwrap_or(0.0) - f("start").as_f64().unwrap_or(0.0)
                ),
                1
            ),
            num(f("peak"), 1)
        ),
        "end" => format!(
            "ended: {} ping {} ms",
            f("name"),
            num(f("ping")["median"].clone(), 0)
        ),
        _ => v.to_string(),
    };
    format!(
        "flow {}  {:<9} {what}",
        f("flow"),
        kind.as_str().unwrap_or("")
    )
}

/// `quakecap net`: the network analysis of each capture (or of all as one with `--merge`).
pub fn run(args: &NetArgs) -> Result<i32> {
    if !(args.interval.is_finite() && args.interval > 0.0) {
        bail!("--interval must be a positive number of seconds");
    }
    if args.live.live() {
        return follow(args);
    }
    let files = super::input::expand(&args.files)?;
    let opts = options(&args.flows);
    let mut failed = 0;
    let mut missing = false;
    let mut tables = Vec::new();
    // The table shows no series: each connection keeps its summary and lag events alone.
    let new_sink = || {
        let ns = NetSink::new(args.interval);
        if args.json {
            ns
        } else {
            ns.without_series()
        }
    };
    if args.merge {
        if files.iter().any(|f| is_refused_demo(f)) {
            return Ok(EXIT_INPUT);
        }
        let mut ns = new_sink();
        let report = pipeline::run_merged(&files, &opts, &mut ns)?;
        super::warn(&report);
        missing |= say_missing_or_empty(&args.flows, &report, &ns);
        tables.push((report.file, ns.reports));
    } else {
        for f in &files {
            if is_refused_demo(f) {
                failed += 1;
                continue;
            }
            let mut ns = new_sink();
            match super::run_input(f, &opts, &mut ns) {
                Ok(report) => {
                    super::warn(&report);
                    missing |= say_missing_or_empty(&args.flows, &report, &ns);
                    tables.push((report.file, ns.reports));
                }
                Err(e) => {
                    eprintln!("quakecap: {e}");
                    failed += 1;
                }
            }
        }
    }
    let mut out = io::stdout().lock();
    if args.json {
        let all: Vec<_> = tables.iter().flat_map(|(_, r)| r.iter()).collect();
        serde_json::to_writer_pretty(&mut out, &all)?;
        writeln!(out)?;
    } else {
        // Fit the terminal (`COLUMNS`) as `flows` does; a pipe without `COLUMNS` keeps the
        // 118 columns the table always had.
        let width = super::table_width().or(Some(118));
        for (file, rows) in tables.iter().filter(|(_, r)| !r.is_empty()) {
            if tables.len() > 1 {
                writeln!(out, "{file}")?;
            }
            writeln!(out, "{}", sink::nettable::render_fit(rows, width))?;
        }
    }
    // A missing file among good ones is still a failure; `--flow` naming no flow of any
    // input did nothing.
    let shown = tables.iter().any(|(_, r)| !r.is_empty());
    Ok(if failed > 0 {
        EXIT_INPUT
    } else if missing && !shown {
        super::input::EXIT_NOTHING
    } else {
        EXIT_OK
    })
}

/// Says which `--flow` ids the input lacks (true when some), else that it has no
/// connection to measure, if so.
fn say_missing_or_empty(asked: &[u32], report: &Report, ns: &NetSink) -> bool {
    let present: Vec<u32> = report.flows.iter().map(|f| f.id).collect();
    match super::input::missing_flows(asked, &present, &report.file) {
        Some(m) => {
            eprintln!("quakecap: {m}");
            true
        }
        None => {
            say_if_empty(ns, &report.file);
            false
        }
    }
}

/// One input's part of a report: its flows, analyses and spool.
struct ReportPart {
    /// The input's name, the ids of all its flows (its own), and the report's ids of its
    /// flows (first and last).
    file: String,
    present: Vec<u32>,
    ids: Option<(u32, u32)>,
    flows: Vec<quakecap::flow::FlowSummary>,
    aggregates: Vec<quakecap::flow::FlowSummary>,
    net: Vec<NetQuality>,
    events: Vec<quakecap::gameevent::GameEvent>,
    /// The cheat signals' answers (`--cheats`).
    cheats: Option<Vec<PlayerCheats>>,
    spool: Option<Spool>,
    spilled: HashMap<(u32, u64), Spilled>,
}

/// `quakecap report`: the HTML report of the inputs, written whole or not at all. Each input
/// is analysed on its own (as `net` does); their flows then take ids that continue across
/// the inputs (the report keys its sections, events and plots by flow id).
pub fn report(args: &ReportArgs) -> Result<i32> {
    if matches!(args.time, TimeFormat::Rel | TimeFormat::Epoch) {
        bail!("report shows the capture's wall clock: --time abs (local) or utc");
    }
    let files = super::input::expand(&args.files)?;
    let several = files.len() > 1;
    // The game events of `quakecap events` come from the same pass.
    // `--cheats` reads the whole snapshots and the usercmds (what the events read too).
    let opts = Options {
        detail: if args.cheats {
            quakecap::pipeline::Detail::Frames
        } else {
            quakecap::pipeline::Detail::Events
        },
        ..options(&args.flows)
    };
    let mut parts: Vec<ReportPart> = Vec::new();
    let mut present: Vec<u32> = Vec::new();
    let mut failed = 0;
    let mut next_id = 0u32;
    for file in &files {
        let one = super::input::check_not_empty(file)
            .map_err(anyhow::Error::from)
            .and_then(|()| {
                if is_refused_demo(file) {
                    return Ok(None);
                }
                // A spool is an open file: past a few hundred inputs the reports stay in
                // memory, so that the report itself can still be opened.
                let spool = parts.len() < MAX_SPOOLS;
                report_part(file, &opts, &args.out, spool, args.cheats).map(Some)
            });
        let mut part = match one {
            Ok(Some(p)) => p,
            Ok(None) if several => {
                failed += 1;
                continue;
            }
            Ok(None) => return Ok(EXIT_INPUT),
            Err(e) if several => {
                eprintln!("quakecap: {e}");
                failed += 1;
                continue;
            }
            Err(e) => return Err(e),
        };
        present.extend(&part.present);
        if several {
            next_id = renumber(&mut part, next_id);
        }
        parts.push(part);
    }
    if parts.is_empty() {
        return Ok(EXIT_INPUT);
    }
    let name = if several {
        "the inputs".to_string()
    } else {
        parts[0].file.clone()
    };
    if let Some(m) = super::input::missing_flows(&args.flows, &present, &name) {
        return Err(NothingDone(m).into());
    }
    let clock = match args.time {
        // (`rel` and `epoch` were refused before the analysis.)
        TimeFormat::Utc | TimeFormat::Rel | TimeFormat::Epoch => sink::nethtml::Clock::utc(),
        TimeFormat::Abs => {
            let start = parts
                .iter()
                .flat_map(|p| p.flows.iter().map(|f| f.first_time))
                .filter(|t| *t > 0.0)
                .fold(f64::INFINITY, f64::min);
            let start = if start.is_finite() { start } else { 0.0 };
            sink::nethtml::Clock::local(super::timefmt::local_offset(start.floor() as i64))
        }
    };
    // Where each spilled report's series and strip are: its input's spool, and the place.
    let mut spools = Vec::new();
    let mut spilled: HashMap<(u32, u64), (usize, Spilled)> = HashMap::new();
    for (i, p) in parts.iter_mut().enumerate() {
        spilled.extend(
            std::mem::take(&mut p.spilled)
                .into_iter()
                .map(|(k, at)| (k, (i, at))),
        );
        spools.push(p.spool.take());
    }
    let names: Vec<String> = parts.iter().map(|p| file_name(&p.file)).collect();
    let inputs: Vec<sink::nethtml::Input<'_>> = parts
        .iter()
        .zip(&names)
        .map(|(p, name)| sink::nethtml::Input {
            name,
            flows: &p.flows,
            aggregates: &p.aggregates,
            rows: &p.net,
            events: &p.events,
            cheats: p.cheats.as_deref(),
        })
        .collect();
    let mut out = super::demo::PartFile::create_for(args.out.clone(), "report")?;
    let mut full = |r: &NetQuality| -> io::Result<Option<NetQuality>> {
        let Some((i, at)) = spilled.get(&spill_key(r)) else {
            return Ok(None);
        };
        let Some(sp) = spools.get_mut(*i).and_then(Option::as_mut) else {
            return Ok(None);
        };
        let mut whole = r.clone();
        sp.restore(at, &mut whole)?;
        Ok(Some(whole))
    };
    sink::nethtml::render_with(&mut out, &inputs, &clock, &mut full).map_err(|e| out.blame(e))?;
    out.commit()?;
    // A missing file among good ones is still a failure (the report covers the others).
    Ok(if failed > 0 { EXIT_INPUT } else { EXIT_OK })
}

/// An input's file name without its folders (the report names no path of this machine);
/// stdin as `-`.
fn file_name(file: &str) -> String {
    Path::new(file)
        .file_name()
        .map_or_else(|| file.to_string(), |n| n.to_string_lossy().into_owned())
}

/// Inputs of a report that get a spool each (see [`report`]).
const MAX_SPOOLS: usize = 256;

/// Analyse one input for the report: warnings said, a spool beside `out` for the series
/// (when `spool`).
fn report_part(
    file: &Path,
    opts: &Options,
    out: &Path,
    spool: bool,
    cheats: bool,
) -> Result<ReportPart> {
    let mut both = ReportSink {
        cheats: cheats.then(CheatsSink::new),
        net: NetSink::new(1.0)
            .with_strip()
            .with_max_points(sink::nethtml::MAX_POINTS),
        events: EventSink::new(),
        // Without a spool (no scratch file can be made) the reports stay in memory.
        spool: spool.then(|| Spool::create_for(out).ok()).flatten(),
        spilled: HashMap::new(),
        looked_at: 0,
    };
    let report = super::run_input(file, opts, &mut both)?;
    let ReportSink {
        net: ns,
        events: es,
        cheats,
        spool,
        spilled,
        ..
    } = both;
    super::warn(&report);
    // The game events' own warnings (malformed events), as `quakecap events` prints them.
    super::warn_events(&es.warnings, es.warnings_total);
    let present: Vec<u32> = report.flows.iter().map(|f| f.id).collect();
    // An input without the `--flow` ids asked for is no input without connections.
    if opts
        .flows
        .as_ref()
        .is_none_or(|w| w.iter().all(|id| present.contains(id)))
    {
        say_if_empty(&ns, &report.file);
    }
    let ids = present.iter().min().zip(present.iter().max());
    Ok(ReportPart {
        ids: ids.map(|(a, z)| (*a, *z)),
        present,
        file: report.file,
        // The flows chosen by their own ids, before they take the report's.
        flows: report
            .flows
            .into_iter()
            .filter(|f| opts.flows.as_ref().is_none_or(|w| w.contains(&f.id)))
            .collect(),
        // Traffic past the flow limits is the capture's, not a chosen flow's.
        aggregates: if opts.flows.is_none() {
            report.aggregates
        } else {
            Vec::new()
        },
        net: ns.reports,
        events: es.events,
        cheats: cheats.map(|c| c.players),
        spool,
        spilled,
    })
}

/// Give an input's flows the ids after `last` (the highest id of the inputs before it):
/// its flows, connection reports, their spool keys and the game events'
/// flows. Returns the highest id now taken.
fn renumber(p: &mut ReportPart, last: u32) -> u32 {
    let id = |f: u32| f.saturating_add(last);
    // Aggregate rows have no id (0): they are no flow.
    for f in &mut p.flows {
        f.id = id(f.id);
    }
    p.ids = p.ids.map(|(a, z)| (id(a), id(z)));
    for r in &mut p.net {
        r.flow = id(r.flow);
    }
    for e in &mut p.events {
        for f in &mut e.flows {
            *f = id(*f);
        }
    }
    for c in p.cheats.iter_mut().flatten() {
        c.flow = c.flow.map(id);
    }
    p.spilled = std::mem::take(&mut p.spilled)
        .into_iter()
        .map(|((f, t), at)| ((id(f), t), at))
        .collect();
    p.ids.map_or(last, |(_, z)| z)
}

/// The report's analyses fed by one pass: network samples to the network analysis,
/// decoded messages to the game events (and, with `--cheats`, to the cheat signals), a
/// flow's end to all of them. Each event goes to the sinks
/// that read it (a [`pipeline::Tee`] offers every event to both: two dynamic calls per
/// event, one of them ignored, for a sample per datagram and a message per datagram).
/// The reports of ended connections go to the spool as they are built, but for their heads.
struct ReportSink {
    net: NetSink,
    events: EventSink,
    cheats: Option<CheatsSink>,
    spool: Option<Spool>,
    /// Where each spilled report's series and strip are, by [`spill_key`].
    spilled: HashMap<(u32, u64), Spilled>,
    /// Reports of `net.reports` already offered to the spool.
    looked_at: usize,
}

/// A report's key in the spool: its flow and first time (a flow that resumed after its
/// end has a report per stretch).
fn spill_key(r: &NetQuality) -> (u32, u64) {
    (r.flow, r.first_time.to_bits())
}

impl ReportSink {
    /// Spill the reports built since the last call. A report whose key is taken (never
    /// for a real capture) stays whole in memory, as do all after a write error.
    fn spill(&mut self) {
        let Some(sp) = &mut self.spool else {
            return;
        };
        for r in &mut self.net.reports[self.looked_at..] {
            let key = spill_key(r);
            if self.spilled.contains_key(&key) {
                continue;
            }
            match sp.put(r) {
                Ok(at) => {
                    self.spilled.insert(key, at);
                }
                Err(_) => {
                    self.spool = None;
                    break;
                }
            }
        }
        self.looked_at = self.net.reports.len();
    }
}

impl Sink for ReportSink {
    fn event(&mut self, e: Event<'_>) -> io::Result<()> {
        if let Some(c) = &mut self.cheats {
            if matches!(e, Event::Q3(_) | Event::Qw(_) | Event::FlowEnd(_)) {
                c.event(e)?;
            }
        }
        match e {
            Event::NetSample(s) => {
                self.net.sample(s);
                Ok(())
            }
            Event::FlowEnd(_) => {
                self.net.event(e)?;
                self.spill();
                self.events.event(e)
            }
            e => self.events.event(e),
        }
    }

    fn finish(&mut self, r: &Report) -> io::Result<()> {
        self.net.finish(r)?;
        if let Some(c) = &mut self.cheats {
            c.finish(r)?;
        }
        self.events.finish(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sessions one after another: every connection that ends before the input does goes
    /// to the spool as it ends, and only its head stays in memory (the bytes of the report
    /// itself are compared with one rendered from memory in `tests/net_flow_end.rs`).
    #[test]
    fn ended_connections_leave_only_their_heads_in_memory() {
        const REPLAYS: usize = 5;
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let cap = std::fs::read(root.join("captures/q3-basic/capture.pcapng")).unwrap();
        let bytes =
            quakecap::flood::repeat_session(&cap, usize::MAX, REPLAYS, 300_000_000_000).unwrap();
        let dir = std::env::temp_dir().join(format!("quakecap-spool-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("many.pcapng");
        std::fs::write(&input, bytes).unwrap();
        let mut sink = ReportSink {
            net: NetSink::new(1.0)
                .with_strip()
                .with_max_points(sink::nethtml::MAX_POINTS),
            events: EventSink::new(),
            cheats: None,
            spool: Some(Spool::create_for(&dir.join("r.html")).unwrap()),
            spilled: HashMap::new(),
            looked_at: 0,
        };
        let opts = Options {
            detail: quakecap::pipeline::Detail::Events,
            samples: true,
            threads: Some(1),
            ..Options::default()
        };
        pipeline::run_capture(&input, &opts, &mut sink, &mut |_| {}).unwrap();
        let r = &sink.net.reports;
        assert_eq!(r.len(), REPLAYS);
        let spilled = r
            .iter()
            .filter(|q| sink.spilled.contains_key(&spill_key(q)));
        assert_eq!(spilled.clone().count(), REPLAYS - 1, "all but the last");
        assert!(spilled
            .clone()
            .all(|q| q.series.is_empty() && q.strip.is_none()));
        let last = r.iter().find(|q| !sink.spilled.contains_key(&spill_key(q)));
        assert!(last.is_some_and(|q| !q.series.is_empty() && q.strip.is_some()));
        // And each comes back whole.
        let sp = sink.spool.as_mut().unwrap();
        for q in r
            .iter()
            .filter(|q| sink.spilled.contains_key(&spill_key(q)))
        {
            let mut whole = q.clone();
            sp.restore(&sink.spilled[&spill_key(q)], &mut whole)
                .unwrap();
            assert!(!whole.series.is_empty() && whole.strip.is_some());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
