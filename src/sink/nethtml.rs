//! `quakecap report`: one self-contained HTML file (no request when opened: the plotting
//! library, its style, the page's script and every figure are inside it) with, per input, a
//! summary in words of what happened to each player, the flows and connections tables, the
//! game events, and per player interactive plots drawn in the browser by uPlot (MIT licence,
//! embedded from `assets/uplot/`): ping with the lag events and the player's frags and
//! deaths, loss, jitter, rates, bandwidth and a lagometer, zoomed and panned together.
//!
//! **One clock.** Every time shown is the capture's wall clock ([`Clock`]: local time at a
//! fixed offset, or UTC): the date once per input, then `HH:MM:SS`, cut (never rounded) to
//! the second, so one instant has one label in the tables, the summaries, the lists and the
//! plots' axes (the page's script formats exactly as [`Clock::hms`] does). Hovering a time
//! shows its seconds since the input's first packet.
//!
//! **Data.** Each player's figures are embedded as one JSON object of number arrays (see
//! `series_json`): the connection's per-interval series (1 s, widened for long connections
//! so that no series has more than [`MAX_POINTS`] entries: an hour at 1 s) and the lagometer
//! strip (a column per server packet, up to `strip::MAX_COLS` columns, merged pairwise
//! beyond: worst latency, counts summed). At most about 0.2 MB for an hour of one player.
use std::collections::HashMap;
use std::fmt::Write as _;

use super::markup::escape as esc;
use crate::analysis::cheats::{PlayerCheats, Verdict};
use crate::analysis::net::acc::RttMethod;
use crate::analysis::net::report::{LagEvent, NetQuality};
use crate::flow::{Dir, FlowSummary};
use crate::gameevent::{clock_ms, Detail, GameEvent};

/// Entries per series the report asks for: an hour of a connection at one per second.
pub const MAX_POINTS: usize = 3_600;

/// The plotting library's version (`assets/uplot/`), said in the page.
pub const UPLOT_VERSION: &str = "1.6.32";
const UPLOT_JS: &str = include_str!("../../assets/uplot/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../../assets/uplot/uPlot.min.css");
const PAGE_JS: &str = include_str!("../../assets/report.js");
const PAGE_CSS: &str = include_str!("../../assets/report.css");

/// How the report shows times: the capture's wall clock at a fixed offset from UTC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clock {
    /// Seconds added to UTC (the local zone's offset at the capture's start; 0 for UTC).
    pub offset: i64,
    /// The zone's name as the page says it ("UTC", "local time, UTC+01:00").
    pub zone: String,
}

impl Clock {
    /// Coordinated Universal Time.
    pub fn utc() -> Self {
        Clock {
            offset: 0,
            zone: "UTC".into(),
        }
    }

    /// Local time `offset` seconds ahead of UTC.
    pub fn local(offset: i64) -> Self {
        let sign = if offset < 0 { '-' } else { '+' };
        let a = offset.unsigned_abs();
        Clock {
            offset,
            zone: format!("local time, UTC{sign}{:02}:{:02}", a / 3600, a / 60 % 60),
        }
    }

    fn secs(&self, t: f64) -> i64 {
        if t.is_finite() {
            (t.floor() as i64).saturating_add(self.offset)
        } else {
            0
        }
    }

    /// `HH:MM:SS` of capture time `t` (epoch seconds), cut to the second.
    pub fn hms(&self, t: f64) -> String {
        crate::vocab::civil::hms(self.secs(t))
    }

    /// `YYYY-MM-DD` of capture time `t`.
    pub fn date(&self, t: f64) -> String {
        crate::vocab::civil::civil(self.secs(t)).0
    }
}

/// One input of the report: its file name (not its path), flows, connections and game
/// events.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    /// The input's file name.
    pub name: &'a str,
    /// Its flows (all kinds).
    pub flows: &'a [FlowSummary],
    /// Its traffic past the flow limits.
    pub aggregates: &'a [FlowSummary],
    /// The network quality of its connections (maybe heads only, see [`render_with`]).
    pub rows: &'a [NetQuality],
    /// Its game events (`quakecap events`).
    pub events: &'a [GameEvent],
    /// Its players' cheat signals (`quakecap cheats`), when asked for (`report --cheats`).
    pub cheats: Option<&'a [PlayerCheats]>,
}

impl Input<'_> {
    /// The input's first packet (of any flow), the origin of the "seconds since" on hover.
    fn start(&self) -> f64 {
        let t = self
            .flows
            .iter()
            .chain(self.aggregates)
            .map(|f| f.first_time)
            .chain(self.rows.iter().map(|r| r.first_time))
            .filter(|t| t.is_finite() && *t > 0.0)
            .fold(f64::INFINITY, f64::min);
        if t.is_finite() {
            t
        } else {
            0.0
        }
    }

    fn end(&self) -> f64 {
        self.flows
            .iter()
            .chain(self.aggregates)
            .map(|f| f.last_time)
            .chain(self.rows.iter().map(|r| r.last_time))
            .filter(|t| t.is_finite())
            .fold(0.0, f64::max)
    }
}

fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "–".into(), |x| format!("{x:.digits$}"))
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "unknown".into(), |x| format!("{:.1} %", x * 100.0))
}

/// The whole report of one capture (see [`render_with`]), on `clock`.
pub fn render_to<W: std::io::Write>(
    w: &mut W,
    inputs: &[Input<'_>],
    clock: &Clock,
) -> std::io::Result<()> {
    render_with(w, inputs, clock, &mut |_| Ok(None))
}

/// The report of `inputs`, a section each, written to `w` a piece at a time (the head,
/// then each input's tables, then each connection's section as it is made: the report is
/// never whole in memory). Rows may hold only their heads: `full` gives a row's whole
/// report when its series and strip are kept elsewhere (`None`: the row is whole), one row
/// at a time (the report's spool, [`super::spool`]).
pub fn render_with<W: std::io::Write>(
    w: &mut W,
    inputs: &[Input<'_>],
    clock: &Clock,
    full: &mut dyn FnMut(&NetQuality) -> std::io::Result<Option<NetQuality>>,
) -> std::io::Result<()> {
    let mut h = String::with_capacity(128 * 1024);
    let names: Vec<&str> = inputs.iter().map(|i| i.name).collect();
    let title = match names.len() {
        0 => "no input".to_string(),
        1..=3 => names.join(", "),
        n => format!("{}, … ({n} captures)", names[..2].join(", ")),
    };
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\" />\n");
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\" />\n");
    let _ = writeln!(h, "<title>quakecap report: {}</title>", esc(&title));
    let _ = writeln!(h, "<style>{UPLOT_CSS}\n{PAGE_CSS}</style>\n</head>\n<body>");
    let _ = writeln!(h, "<h1>Network quality: {}</h1>", esc(&title));
    let _ = writeln!(
        h,
        "<p class=\"note\">Times are the capture's clock ({}); hover one for its seconds since \
         its capture's first packet. Plots: drag across to zoom, the wheel to zoom, \
         Shift+drag or the arrows to pan, double-click to see all; one player's plots move \
         together. How each figure is measured: the guide of quakecap (Network quality). \
         “unknown”: the capture's vantage point cannot tell. Plots drawn by \
         <a href=\"https://github.com/leeoniya/uPlot\">uPlot</a> {UPLOT_VERSION} (MIT \
         licence, © Leon Sorokin), embedded.</p>",
        esc(&clock.zone)
    );
    if inputs.len() > 1 {
        h.push_str("<nav><ul class=\"inputs\">\n");
        for (n, i) in inputs.iter().enumerate() {
            let _ = writeln!(
                h,
                "<li><a href=\"#input-{}\">{}</a> ({} connections)</li>",
                n + 1,
                esc(i.name),
                i.rows.len()
            );
        }
        h.push_str("</ul></nav>\n");
    }
    for (n, input) in inputs.iter().enumerate() {
        render_input(w, &mut h, n + 1, input, clock, full)?;
    }
    let _ = write!(
        h,
        "<script>{UPLOT_JS}</script>\n<script>\nconst QC_OFFSET = {};\n{PAGE_JS}</script>\n</body>\n</html>\n",
        clock.offset
    );
    w.write_all(h.as_bytes())
}

fn render_input<W: std::io::Write>(
    w: &mut W,
    h: &mut String,
    n: usize,
    input: &Input<'_>,
    clock: &Clock,
    full: &mut dyn FnMut(&NetQuality) -> std::io::Result<Option<NetQuality>>,
) -> std::io::Result<()> {
    let t0 = input.start();
    let tl = Tl { clock, t0 };
    let _ = writeln!(
        h,
        "<section class=\"input\" id=\"input-{n}\" data-file=\"{}\" data-start=\"{t0:.3}\">\n<h2>{}</h2>",
        esc(input.name),
        esc(input.name)
    );
    if t0 > 0.0 {
        let _ = writeln!(
            h,
            "<p class=\"when\">{} ({}), {}–{}, {} connection{}.</p>",
            clock.date(t0),
            esc(&clock.zone),
            tl.time(t0),
            tl.time(input.end()),
            input.rows.len(),
            if input.rows.len() == 1 { "" } else { "s" }
        );
    }
    summaries(h, input, &tl);
    if let Some(c) = input.cheats {
        cheats_table(h, c, &tl);
    }
    quality_table(h, input.rows, &tl);
    if input.rows.is_empty() {
        h.push_str("<p>No game connection with netchan traffic in this capture.</p>\n");
    }
    flows_table(h, input.flows, input.aggregates, &tl);
    game_events_table(h, input.events, &tl);
    let by_flow = events_by_flow(input.events);
    // A flow that resumed after its end has a report per stretch, in order.
    let mut stretches: HashMap<u32, usize> = HashMap::new();
    for r in input.rows {
        w.write_all(h.as_bytes())?;
        h.clear();
        let seen = by_flow.get(&r.flow).map_or(&[][..], Vec::as_slice);
        let k = stretches.entry(r.flow).or_insert(0);
        *k += 1;
        let others = Others(input.rows);
        let cheat = input
            .cheats
            .and_then(|c| c.iter().find(|p| p.flow == Some(r.flow)));
        match full(r)? {
            Some(whole) => connection(h, &whole, seen, *k, &tl, &others, cheat),
            None => connection(h, r, seen, *k, &tl, &others, cheat),
        }
    }
    h.push_str("</section>\n");
    Ok(())
}

/// An input's timeline: its clock and first packet.
struct Tl<'a> {
    clock: &'a Clock,
    t0: f64,
}

impl Tl<'_> {
    /// `<time>` of capture time `t`: its label, its seconds since the input's start on hover.
    fn time(&self, t: f64) -> String {
        format!(
            "<time data-t=\"{:.1}\" title=\"+{:.1} s since the capture's start\">{}</time>",
            t - self.t0,
            t - self.t0,
            self.clock.hms(t)
        )
    }

    /// A span `HH:MM:SS–HH:MM:SS` of `<time>`s.
    fn span(&self, a: f64, z: f64) -> String {
        format!("{}–{}", self.time(a), self.time(z))
    }
}

/// The other connections of the input (their heads: lag events and names).
struct Others<'a>(&'a [NetQuality]);

impl Others<'_> {
    /// The players of other connections with a lag event of `kind` overlapping `a..z`.
    fn at_the_same_time(&self, me: &NetQuality, kind: &str, a: f64, z: f64) -> Vec<String> {
        let mut v: Vec<String> = self
            .0
            .iter()
            .filter(|r| !(r.flow == me.flow && r.first_time == me.first_time))
            .filter(|r| {
                r.lag_events
                    .iter()
                    .any(|e| e.kind == kind && e.start <= z && e.end >= a)
            })
            .map(|r| esc(r.name.as_deref().unwrap_or("(unnamed)")))
            .collect();
        v.dedup();
        v
    }

    fn players(&self) -> usize {
        self.0.len()
    }
}

/// The summary of each player at the input's top, then linked to its section.
fn summaries(h: &mut String, input: &Input<'_>, tl: &Tl<'_>) {
    if input.rows.is_empty() {
        return;
    }
    h.push_str("<h3>What happened</h3>\n<div class=\"summaries\">\n");
    let others = Others(input.rows);
    let mut stretches: HashMap<u32, usize> = HashMap::new();
    for r in input.rows {
        let k = stretches.entry(r.flow).or_insert(0);
        *k += 1;
        let _ = writeln!(
            h,
            "<div class=\"summary\" data-flow=\"{}\" data-name=\"{}\"><h4><a href=\"#flow-{}\">{}</a> <span class=\"note\">flow {}</span></h4>",
            r.flow,
            esc(r.name.as_deref().unwrap_or("")),
            section_id(r.flow, *k),
            esc(r.name.as_deref().unwrap_or("(unnamed)")),
            r.flow
        );
        let cheat = input
            .cheats
            .and_then(|c| c.iter().find(|p| p.flow == Some(r.flow)));
        summary_list(h, r, tl, &others, cheat);
        h.push_str("</div>\n");
    }
    h.push_str("</div>\n");
}

fn section_id(flow: u32, stretch: usize) -> String {
    match stretch {
        0 | 1 => flow.to_string(),
        n => format!("{flow}-{n}"),
    }
}

/// Findings shown per player at most (the lists below have the rest).
const MAX_FINDINGS: usize = 6;

/// One thing that happened to a player: how much harm (seconds of play spoiled, roughly),
/// its kind, span, and the sentence.
struct Finding {
    harm: f64,
    kind: &'static str,
    span: Option<(f64, f64)>,
    text: String,
}

fn dir_word(d: Option<Dir>) -> &'static str {
    match d {
        Some(Dir::C2s) => "client",
        _ => "server",
    }
}

/// What happened to the player, worst first, in words (from the connection's head: totals
/// and lag events, with the other players' lag events for the cause).
fn findings(r: &NetQuality, tl: &Tl<'_>, others: &Others<'_>) -> Vec<Finding> {
    let mut v = Vec::new();
    let dur = (r.last_time - r.first_time).max(0.0);
    let whole = tl.span(r.first_time, r.last_time);
    for (d, loss, method) in [
        (Dir::S2c, r.loss.s2c, r.loss_method.s2c),
        (Dir::C2s, r.loss.c2s, r.loss_method.c2s),
    ] {
        let Some(l) = loss.filter(|l| *l >= 0.01) else {
            continue;
        };
        let in_bursts: f64 = r
            .lag_events
            .iter()
            .filter(|e| e.kind == "loss" && e.dir == Some(d))
            .map(|e| e.end - e.start)
            .sum();
        let steady = if in_bursts < dur * 0.25 {
            "steady, not only in bursts: a lossy path"
        } else {
            "mostly in the bursts below"
        };
        v.push(Finding {
            harm: dur * l * 2.0,
            kind: "loss-total",
            span: Some((r.first_time, r.last_time)),
            text: format!(
                "{:.1} % of {} packets lost all connection long ({whole}) — {steady} ({})",
                l * 100.0,
                dir_word(Some(d)),
                if method == Some("gaps") {
                    "sequence gaps"
                } else {
                    "never acknowledged"
                }
            ),
        });
    }
    if let Some(l) = r.round_trip_loss.filter(|l| *l >= 0.01) {
        v.push(Finding {
            harm: dur * l * 2.0,
            kind: "loss-total",
            span: Some((r.first_time, r.last_time)),
            text: format!(
                "{:.1} % of the client's packets got no answer all connection long ({whole}) — \
                 lost one way or the other on the path (this capture cannot tell which)",
                l * 100.0
            ),
        });
    }
    for e in &r.lag_events {
        v.push(lag_finding(r, e, tl, others));
    }
    if let Some(m) = r.ping.median.filter(|m| *m >= 150.0) {
        v.push(Finding {
            harm: dur * (m - 100.0) / 200.0,
            kind: "ping-total",
            span: Some((r.first_time, r.last_time)),
            text: format!(
                "ping {m:.0} ms (median) all connection long ({whole}) — a long path to the \
                 server"
            ),
        });
    }
    if let Some(rd) = r.rate_delayed.filter(|x| *x >= 0.05) {
        v.push(Finding {
            harm: dur * rd,
            kind: "rate",
            span: Some((r.first_time, r.last_time)),
            text: format!(
                "{:.0} % of snapshots held back by the server for the client's `rate` — the \
                 player's setting, not the path (raise `rate`)",
                rd * 100.0
            ),
        });
    }
    for (d, j) in [(Dir::S2c, r.jitter.s2c), (Dir::C2s, r.jitter.c2s)] {
        if let Some(j) = j.filter(|j| *j >= 20.0) {
            v.push(Finding {
                harm: dur * j / 200.0,
                kind: "jitter",
                span: None,
                text: format!(
                    "jitter {j:.0} ms on the {} packets — an uneven path",
                    dir_word(Some(d))
                ),
            });
        }
    }
    v.sort_by(|a, b| b.harm.total_cmp(&a.harm));
    v
}

fn lag_finding(r: &NetQuality, e: &LagEvent, tl: &Tl<'_>, others: &Others<'_>) -> Finding {
    let span = tl.span(e.start, e.end);
    let len = (e.end - e.start).max(0.0);
    let also = others.at_the_same_time(r, e.kind, e.start, e.end);
    let shared = if also.is_empty() {
        String::new()
    } else if also.len() + 1 >= others.players() && others.players() > 2 {
        " — every player at once: the server or the path they share".to_string()
    } else {
        format!(
            "; {} too at the same time: the server or a stretch of path they share",
            also.join(", ")
        )
    };
    match e.kind {
        "ping" => {
            let cause = match e.dir {
                Some(Dir::C2s) => {
                    "the client's packets were held back: its uplink or machine stalled"
                }
                Some(Dir::S2c) => {
                    "nothing the server sent reached the client while it kept sending: \
                     its downlink or the path down stalled"
                }
                // A QuakeWorld server answers only what it hears: from the client's side a
                // held upstream and a loss either way look alike.
                None if r.game == "qw"
                    && r.vantage == crate::analysis::net::report::Vantage::Client =>
                {
                    "the server's answers stopped: the path either way, or the client's \
                     uplink held (a capture at the server's side tells which)"
                }
                _ => "the path, not the player (the client's packets were not held back)",
            };
            Finding {
                harm: len * ((e.peak - e.baseline) / 100.0).clamp(0.5, 4.0),
                kind: "ping",
                span: Some((e.start, e.end)),
                text: format!(
                    "{span}: ping {:.0} → {:.0} ms — {cause}{shared}",
                    e.baseline, e.peak
                ),
            }
        }
        _ => Finding {
            harm: len * e.baseline * 4.0,
            kind: "loss",
            span: Some((e.start, e.end)),
            text: format!(
                "{span}: {:.0} % of {} packets lost (worst half-second {:.0} %) — the \
                 path{shared}",
                e.baseline * 100.0,
                dir_word(e.dir),
                e.peak * 100.0
            ),
        },
    }
}

fn summary_list(
    h: &mut String,
    r: &NetQuality,
    tl: &Tl<'_>,
    others: &Others<'_>,
    cheat: Option<&PlayerCheats>,
) {
    let f = findings(r, tl, others);
    h.push_str("<ul class=\"findings\">\n");
    // A cheat signal is said first: it is what the admin came for.
    if let Some(c) = cheat.filter(|c| c.verdict != Verdict::Clean) {
        let _ = writeln!(
            h,
            "<li data-kind=\"cheat\" data-verdict=\"{}\">{}</li>",
            verdict_word(c.verdict),
            text_with_times(&cheat_words(c, tl))
        );
    }
    if f.is_empty() {
        let _ = writeln!(
            h,
            "<li data-kind=\"none\">No trouble seen ({}): ping {} ms median, loss {} / {} (server / client packets), no lag events.</li>",
            tl.span(r.first_time, r.last_time),
            num(r.ping.median, 0),
            pct(r.loss.s2c),
            pct(r.loss.c2s)
        );
    }
    for x in f.iter().take(MAX_FINDINGS) {
        let _ = write!(h, "<li data-kind=\"{}\"", x.kind);
        if let Some((a, z)) = x.span {
            let _ = write!(h, " data-start=\"{a:.3}\" data-end=\"{z:.3}\"");
        }
        let _ = writeln!(h, ">{}</li>", text_with_times(&x.text));
    }
    if f.len() > MAX_FINDINGS {
        let _ = writeln!(
            h,
            "<li class=\"note\">… {} more below.</li>",
            f.len() - MAX_FINDINGS
        );
    }
    if let Some(c) = cheat.filter(|c| c.verdict == Verdict::Clean) {
        let _ = writeln!(
            h,
            "<li data-kind=\"cheat\" data-verdict=\"clean\">{}</li>",
            text_with_times(&cheat_words(c, tl))
        );
    }
    h.push_str("</ul>\n");
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Clean => "clean",
        Verdict::Suspicious => "suspicious",
        Verdict::Likely => "likely",
    }
}

/// A player's cheat signals in words: the verdict and score, what the signals measured, and
/// the strongest moment (its wall-clock span and game time, to cut a demo there).
fn cheat_words(c: &PlayerCheats, tl: &Tl<'_>) -> String {
    let s = &c.signals;
    let aim = format!("aim: {}", s.aim_words());
    let holds = match s.upstream_holds {
        Some(0) => "no upstream hold".to_string(),
        Some(1) => "1 upstream hold while receiving (a lag switch's signature)".to_string(),
        Some(n) => format!("{n} upstream holds while receiving (a lag switch's signature)"),
        None => "no upstream holds to judge in this input".to_string(),
    };
    let snaps = match s.snaps {
        Some(0) => "no snap".to_string(),
        Some(1) => "1 snap (the view jumped onto a player in one command)".to_string(),
        Some(n) => format!("{n} snaps (the view jumped onto a player in one command)"),
        None => "no commands to judge snaps by".to_string(),
    };
    let mut t = format!(
        "Cheat signals: <b>{}</b> (score {:.0} of 100) — {aim}; {snaps}; {holds}; {}",
        verdict_word(c.verdict),
        c.score,
        s.clock_words()
    );
    if c.verdict != Verdict::Clean {
        if let Some(m) = c.moments.first() {
            let _ = write!(
                t,
                ". First moment {}{}: {}{}",
                moment_when(m, tl),
                m.game_span("–").map_or(String::new(), |g| format!(
                    " (server time {g}, as `demo --from`/`--to` take it)"
                )),
                m.target
                    .as_ref()
                    .map_or(String::new(), |p| format!("on {}: ", esc(p))),
                esc(&m.detail)
            );
            if c.moments.len() > 1 {
                let _ = write!(t, " ({} moments in all, listed below)", c.moments.len());
            }
        }
    }
    t
}

/// A moment's wall-clock time: one label when it lasts under a second, else its span.
fn moment_when(m: &crate::analysis::cheats::Moment, tl: &Tl<'_>) -> String {
    match (m.start, m.end) {
        (Some(a), Some(z)) if z - a >= 1.0 => tl.span(a, z),
        (Some(a), _) => tl.time(a),
        _ => "–".to_string(),
    }
}

/// Every player's cheat verdict, then the moments of those not clean.
fn cheats_table(h: &mut String, players: &[PlayerCheats], tl: &Tl<'_>) {
    h.push_str("<h3>Cheat signals</h3>\n");
    if players.is_empty() {
        h.push_str("<p>No player's view to judge in this input.</p>\n");
        return;
    }
    h.push_str("<table class=\"cheats\">\n<tr><th>flow</th><th class=\"l\">player</th><th class=\"l\">verdict</th><th>score</th><th>aim locks / judged</th><th>median aim error</th><th>snaps</th><th>upstream holds</th><th>moments</th></tr>\n");
    for c in players {
        let s = &c.signals;
        let opt = |v: Option<u32>| v.map_or("–".to_string(), |v| v.to_string());
        let _ = writeln!(
            h,
            "<tr data-verdict=\"{}\"><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{:.0}</td><td>{} / {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            verdict_word(c.verdict),
            c.flow.map_or("–".to_string(), |f| f.to_string()),
            esc(&c.player),
            verdict_word(c.verdict),
            c.score,
            opt(s.aim_locks),
            opt(s.aim_judged),
            s.aim_error_median.map_or("–".into(), |m| format!("{m:.2}°")),
            opt(s.snaps),
            opt(s.upstream_holds),
            c.moments.len()
        );
    }
    h.push_str("</table>\n");
    for c in players.iter().filter(|c| c.verdict != Verdict::Clean) {
        let _ = writeln!(
            h,
            "<details class=\"moments\"><summary>{}: {} moments (capture clock; game time to cut a demo with <code>quakecap demo --from g… --to g…</code>)</summary>\n<ul>",
            esc(&c.player),
            c.moments.len()
        );
        for m in &c.moments {
            let _ = writeln!(
                h,
                "<li data-kind=\"{}\">{} {} {}: {}{}</li>",
                m.kind,
                moment_when(m, tl),
                m.game_span("–").unwrap_or_default(),
                m.kind,
                m.target
                    .as_ref()
                    .map_or(String::new(), |p| format!("on {}: ", esc(p))),
                esc(&m.detail)
            );
        }
        h.push_str("</ul></details>\n");
    }
}

/// A finding's text is built of escaped pieces and `<time>` elements: the player's name and
/// such come escaped in already; the rest is ours. (Backquoted words become `<code>`.)
fn text_with_times(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 16);
    let mut code = false;
    for c in s.chars() {
        if c == '`' {
            o.push_str(if code { "</code>" } else { "<code>" });
            code = !code;
        } else {
            o.push(c);
        }
    }
    if code {
        o.push_str("</code>");
    }
    o
}

/// The flows table: game flows, a flood's one-shot connection attempts and queries summed
/// (as in `quakecap flows`), UDP of no known game counted in a line, then the traffic past
/// the flow limits (`aggregates`).
fn flows_table(h: &mut String, flows: &[FlowSummary], aggregates: &[FlowSummary], tl: &Tl<'_>) {
    h.push_str("<details class=\"flows\"><summary>Flows</summary>\n<table class=\"flows\">\n<tr><th>id</th><th class=\"l\">game</th><th class=\"l\">kind</th><th class=\"l\">server</th><th class=\"l\">client</th><th class=\"l\">player</th><th>start</th><th>end</th><th>packets c2s/s2c</th><th>bytes c2s/s2c</th></tr>\n");
    let (listed, summed) = crate::sink::table::sum_one_shot(flows);
    let (game, other): (Vec<&FlowSummary>, Vec<&FlowSummary>) =
        listed.into_iter().partition(|f| f.game != "udp");
    for f in game {
        let ports: Vec<String> = f.client_ports.iter().map(ToString::to_string).collect();
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}:{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}/{}</td><td>{}/{}</td></tr>",
            f.id,
            f.game,
            f.kind,
            esc(&f.server),
            esc(&f.client_ip),
            ports.join(","),
            esc(f.name.as_deref().unwrap_or("–")),
            tl.time(f.first_time),
            tl.time(f.last_time),
            f.packets.c2s,
            f.packets.s2c,
            f.bytes.c2s,
            f.bytes.s2c
        );
    }
    h.push_str("</table>\n");
    for s in &summed {
        let _ = writeln!(
            h,
            "<p class=\"note\">{}</p>",
            esc(&s.line("flows --json lists them"))
        );
    }
    if let Some(line) = crate::sink::table::other_udp_line(other, "flows --all lists them") {
        let _ = writeln!(h, "<p class=\"note\">{}</p>", esc(&line));
    }
    for line in crate::sink::table::render_aggregates(aggregates).lines() {
        let _ = writeln!(h, "<p class=\"note\">{}</p>", esc(line));
    }
    h.push_str("</details>\n");
}

fn quality_table(h: &mut String, rows: &[NetQuality], tl: &Tl<'_>) {
    if rows.is_empty() {
        return;
    }
    h.push_str("<table class=\"net\">\n<tr><th>flow</th><th class=\"l\">player</th><th class=\"l\">vantage</th><th>from</th><th>to</th><th>ping median / p95 / max ms</th><th>loss c2s</th><th>loss s2c</th><th>jitter c2s / s2c ms</th><th>snaps/s</th><th>client pkts/s</th><th>fps</th><th>lag events</th></tr>\n");
    for r in rows {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{} / {} / {}</td><td>{}</td><td>{}</td><td>{} / {}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td></tr>",
            r.flow,
            esc(r.name.as_deref().unwrap_or("–")),
            vantage(r),
            tl.time(r.first_time),
            tl.time(r.last_time),
            num(r.ping.median, 0),
            num(r.ping.p95, 0),
            num(r.ping.max, 0),
            pct(r.loss.c2s),
            pct(r.loss.s2c),
            num(r.jitter.c2s, 1),
            num(r.jitter.s2c, 1),
            num(r.snapshot_rate, 1),
            r.client_packet_rate,
            num(r.fps, 0),
            r.lag_events.len()
        );
    }
    h.push_str("</table>\n");
}

fn vantage(r: &NetQuality) -> String {
    serde_json::to_value(r.vantage)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

fn dir_name(d: Option<Dir>) -> &'static str {
    match d {
        Some(Dir::C2s) => "c2s",
        Some(Dir::S2c) => "s2c",
        None => "",
    }
}

/// The plots of a player's section, by class.
const FIGURES: [&str; 6] = ["ping", "loss", "jitter", "rates", "bandwidth", "lagometer"];

/// One connection's section. `seen`: the events this connection saw ([`events_by_flow`]);
/// `stretch`: 1 for a flow's first report, 2 for the one after it resumed, ...
fn connection(
    h: &mut String,
    r: &NetQuality,
    seen: &[&GameEvent],
    stretch: usize,
    tl: &Tl<'_>,
    others: &Others<'_>,
    cheat: Option<&PlayerCheats>,
) {
    let who = r.name.as_deref().unwrap_or("(unnamed)");
    let id = section_id(r.flow, stretch);
    let which = match stretch {
        0 | 1 => r.flow.to_string(),
        n => format!("{}, stretch {n}", r.flow),
    };
    let _ = writeln!(
        h,
        "<section class=\"player\" id=\"flow-{id}\" data-flow=\"{}\" data-name=\"{}\" data-first=\"{:.3}\" data-last=\"{:.3}\">\n<h2>{} — flow {which} ({}, capture near the {})</h2>",
        r.flow,
        esc(who),
        r.first_time,
        r.last_time,
        esc(who),
        r.game,
        vantage(r)
    );
    summary_list(h, r, tl, others, cheat);
    let _ = writeln!(
        h,
        "<p class=\"note\">{}. Ping method: {} ({} samples). Loss c2s {} ({}), s2c {} ({}). Series step {} s.</p>",
        tl.span(r.first_time, r.last_time),
        r.ping.method.unwrap_or("none"),
        r.ping.samples,
        pct(r.loss.c2s),
        r.loss_method.c2s.unwrap_or("not knowable here"),
        pct(r.loss.s2c),
        r.loss_method.s2c.unwrap_or("not knowable here"),
        r.interval
    );
    if let Some(rt) = r.round_trip_loss {
        let _ = writeln!(
            h,
            "<p class=\"note\">Round-trip loss {} (client packets that got no answer, rate-limit skips aside: both directions together, as ezQuake counts it).</p>",
            pct(Some(rt))
        );
    }
    if let Some(t) = r.binned_until {
        let _ = writeln!(
            h,
            "<p class=\"note\">Until {}, packets are counted but not timed: too few \
             packets for the connection's span (damaged or hostile timestamps).</p>",
            tl.time(t)
        );
    }
    let mine = player_events(r, seen);
    let _ = writeln!(
        h,
        "<div class=\"charts\" data-flow=\"{id}\"><div class=\"tools\"><button data-pan=\"-1\" title=\"earlier\">◀</button><button data-zoom=\"0.5\" title=\"zoom in\">+</button><button data-zoom=\"2\" title=\"zoom out\">−</button><button data-pan=\"1\" title=\"later\">▶</button><button data-reset=\"1\">all</button></div>"
    );
    for f in FIGURES {
        let _ = writeln!(
            h,
            "<figure class=\"{f}\">\n<figcaption>{}</figcaption>\n<div class=\"plot\"></div>\n</figure>",
            caption(f, r)
        );
    }
    h.push_str("<script type=\"application/json\" class=\"series\">");
    // About 70 bytes per interval and 22 per lagometer column.
    let cols = r.strip.as_ref().map_or(0, |s| s.cols.len());
    h.reserve(r.series.len() * 80 + cols * 24 + 1024);
    series_json(h, r, &mine, tl.t0);
    h.push_str("</script>\n</div>\n");
    events_list(h, r, tl);
    player_events_list(h, &mine, tl);
    h.push_str("</section>\n");
}

fn caption(f: &str, r: &NetQuality) -> String {
    match f {
        "ping" => "Ping (ms): mean per interval, highest per interval (light), the \
                   connection's median (grey); lag events shaded (red: ping, purple: loss); \
                   ticks at the top: the player's frags (green) and deaths (black)"
            .into(),
        "loss" => format!(
            "Loss per interval (%): client→server (blue){}, server→client (red){}{}",
            if r.loss.c2s.is_none() {
                " — unknown from here"
            } else {
                ""
            },
            if r.loss.s2c.is_none() {
                " — unknown from here"
            } else {
                ""
            },
            if r.loss.s2c.is_none() && r.round_trip_loss.is_some() {
                "; drawn instead (grey): the server's sequences missing per interval, lost \
                 either way or skipped for the rate limit"
            } else {
                ""
            }
        ),
        "jitter" => format!(
            "Jitter (ms, RFC 3550 over the sender's timestamps): c2s (blue), s2c (red){}",
            if r.jitter.c2s.is_none() && r.jitter.s2c.is_none() {
                format!(
                    " — not measurable from here (no sender timestamps crossed the path before \
                     the capture); variation of successive pings {} ms; drawn instead (grey): \
                     the spread of the ping within each interval (highest − mean)",
                    num(r.jitter.rtt, 1)
                )
            } else {
                String::new()
            }
        ),
        "rates" => format!(
            "Rates (per second): client packets (blue), server packets (red){}",
            if r.snapshot_rate.is_some() {
                ", snapshots (green)"
            } else {
                " (snapshots: Quake 3 only)"
            }
        ),
        "bandwidth" => {
            "Bandwidth (kB/s of UDP payload): client→server (blue), server→client (red)".into()
        }
        _ => format!(
            "Lagometer: up, the latency of each server packet (ms; green, yellow when the \
             server held it back for the client's rate); down, the share of server packets \
             lost before it (red, %{}){}",
            if r.loss.s2c.is_none() {
                ": unknown from here, none shown"
            } else {
                ""
            },
            r.strip
                .as_ref()
                .filter(|s| s.per_col > 1)
                .map_or(String::new(), |s| format!(
                    "; a column per {} packets (worst latency)",
                    s.per_col
                ))
        ),
    }
}

/// Writes `v` with at most `digits` (0 to 3) decimals, rounded, no trailing zeros; `null`
/// when not finite. By integer arithmetic: the figures are most of a report's numbers, and
/// `format!`'s float printing cost more than the rest of the report's writing together.
fn push_num(o: &mut String, v: f64, digits: usize) {
    const SCALE: [f64; 4] = [1.0, 10.0, 100.0, 1000.0];
    let digits = digits.min(3);
    let scaled = (v * SCALE[digits]).round();
    // Past 2^53 an f64 has no decimals to show; `format!` says it best.
    if !scaled.is_finite() {
        o.push_str("null");
        return;
    }
    if scaled.abs() >= 9.0e15 {
        let _ = write!(o, "{v:.0}");
        return;
    }
    let n = scaled as i64;
    if n < 0 {
        o.push('-');
    }
    let n = n.unsigned_abs();
    let unit = SCALE[digits] as u64;
    let (int, mut frac) = (n / unit, n % unit);
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut x = int;
    loop {
        i -= 1;
        buf[i] = b'0' + (x % 10) as u8;
        x /= 10;
        if x == 0 {
            break;
        }
    }
    o.push_str(std::str::from_utf8(&buf[i..]).unwrap_or("0"));
    if frac > 0 {
        let mut width = digits;
        while frac % 10 == 0 {
            frac /= 10;
            width -= 1;
        }
        o.push('.');
        let mut d = [b'0'; 3];
        for k in (0..width).rev() {
            d[k] = b'0' + (frac % 10) as u8;
            frac /= 10;
        }
        o.push_str(std::str::from_utf8(&d[..width]).unwrap_or(""));
    }
}

/// `"key":[…],` of the values; nothing when `it` has no value at all (an unknowable figure,
/// such as a vantage's hidden loss: the page draws it as unknown).
fn push_array<I: Iterator<Item = Option<f64>> + Clone>(
    o: &mut String,
    key: &str,
    it: I,
    digits: usize,
) {
    if !it.clone().any(|v| v.is_some()) {
        return;
    }
    let _ = write!(o, "\"{key}\":[");
    for (i, v) in it.enumerate() {
        if i > 0 {
            o.push(',');
        }
        match v {
            Some(x) => push_num(o, x, digits),
            None => o.push_str("null"),
        }
    }
    o.push_str("],");
}

/// A JSON string that cannot end the `<script>` it is in.
fn push_str_json(o: &mut String, s: &str) {
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '<' => o.push_str("\\u003c"),
            '>' => o.push_str("\\u003e"),
            '&' => o.push_str("\\u0026"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
}

/// A player's figures as one JSON object, times in seconds since the input's start `t0`:
/// `t0`; `x0` the first interval's start (the others follow at `step`); `ping`, `pmax`
/// (ms); `lc`, `ls` loss (%); `jc`, `js`
/// jitter (ms); `pc`, `ps` packets/s; `sn` snapshots/s; `bc`, `bs` kB/s; `med` the median
/// ping; `lag` the lag events `[start, end, 0 ping | 1 loss]`; `ev` the player's frags and
/// deaths `[time, 1 frag | 0 death]`; `rt` (QuakeWorld at the client's side) the server's
/// missing sequences per interval (%); `sx`, `sl`, `sc`, `sp` the lagometer's columns: start,
/// latency (ms, null when none), 1 when rate-delayed, share of server packets lost before
/// it (%, null when unknowable); `end` the connection's last packet. An array without any
/// value is left out (`sc` too when no column was rate-delayed).
fn series_json(o: &mut String, r: &NetQuality, mine: &[&GameEvent], t0: f64) {
    o.push('{');
    let _ = write!(o, "\"t0\":{t0:.3},\"step\":");
    push_num(o, r.interval, 3);
    o.push_str(",\"end\":");
    push_num(o, r.last_time - t0, 2);
    o.push_str(",\"med\":");
    push_num(o, r.ping.median.unwrap_or(f64::NAN), 1);
    o.push(',');
    let s = &r.series;
    let rate = |v: Option<f64>| v.map(|x| x / r.interval);
    // The intervals are regular: their first start and `step` give them all.
    o.push_str("\"x0\":");
    push_num(o, s.first().map_or(f64::NAN, |i| i.start - t0), 2);
    o.push(',');
    push_array(o, "ping", s.iter().map(|i| i.ping), 1);
    push_array(o, "pmax", s.iter().map(|i| i.ping_max), 1);
    push_array(o, "lc", s.iter().map(|i| i.loss.c2s.map(|v| v * 100.0)), 1);
    push_array(o, "ls", s.iter().map(|i| i.loss.s2c.map(|v| v * 100.0)), 1);
    push_array(o, "jc", s.iter().map(|i| i.jitter.c2s), 1);
    push_array(o, "js", s.iter().map(|i| i.jitter.s2c), 1);
    push_array(
        o,
        "pc",
        s.iter().map(|i| rate(i.packets.c2s.map(f64::from))),
        1,
    );
    push_array(
        o,
        "ps",
        s.iter().map(|i| rate(i.packets.s2c.map(f64::from))),
        1,
    );
    let snaps = r.snapshot_rate.is_some();
    push_array(
        o,
        "sn",
        s.iter()
            .map(|i| snaps.then(|| f64::from(i.snapshots) / r.interval)),
        1,
    );
    push_array(
        o,
        "bc",
        s.iter()
            .map(|i| rate(i.bytes.c2s.map(|b| b as f64 / 1000.0))),
        2,
    );
    push_array(
        o,
        "bs",
        s.iter()
            .map(|i| rate(i.bytes.s2c.map(|b| b as f64 / 1000.0))),
        2,
    );
    // QuakeWorld at the client's side: neither direction's loss is knowable, but the
    // server's missing sequences per interval are (lost either way, or skipped for the rate
    // limit), from the lagometer's columns.
    let cols = r.strip.as_deref().map_or(&[][..], |st| st.cols.as_slice());
    if r.loss.s2c.is_none() && r.round_trip_loss.is_some() && !s.is_empty() {
        let (mut lost, mut got) = (vec![0u64; s.len()], vec![0u64; s.len()]);
        for c in cols {
            let i = s
                .partition_point(|iv| iv.start <= c.start)
                .saturating_sub(1);
            if let (Some(l), Some(g)) = (lost.get_mut(i), got.get_mut(i)) {
                *l += u64::from(c.lost_gap);
                *g += u64::from(c.packets);
            }
        }
        push_array(
            o,
            "rt",
            lost.iter()
                .zip(&got)
                .map(|(l, g)| (l + g > 0).then(|| 100.0 * *l as f64 / (l + g) as f64)),
            1,
        );
    }
    o.push_str("\"lag\":[");
    for (n, e) in r.lag_events.iter().enumerate() {
        if n > 0 {
            o.push(',');
        }
        o.push('[');
        push_num(o, e.start - t0, 2);
        o.push(',');
        push_num(o, e.end - t0, 2);
        o.push_str(if e.kind == "ping" { ",0]" } else { ",1]" });
    }
    o.push_str("],\"ev\":[");
    let mut first = true;
    for e in mine {
        let Detail::Kill(k) = &e.detail else {
            continue;
        };
        let frag = !k.suicide && k.killer.as_deref() == r.name.as_deref();
        if !first {
            o.push(',');
        }
        first = false;
        o.push('[');
        push_num(o, e.time - t0, 2);
        o.push_str(if frag { ",1," } else { ",0," });
        push_str_json(o, &e.describe());
        o.push(']');
    }
    o.push_str("],");
    let k = r.ping_method.unwrap_or(RttMethod::AckS2c) as usize;
    let lost = |c: &crate::analysis::net::StripColumn| match r.loss_method.s2c {
        Some("gaps") => Some(c.lost_gap),
        Some(_) => Some(c.lost_ack),
        None => None,
    };
    push_array(o, "sx", cols.iter().map(|c| Some(c.start - t0)), 2);
    push_array(
        o,
        "sl",
        cols.iter()
            .map(|c| Some(f64::from(c.latency[k])).filter(|l| *l >= 0.0)),
        0,
    );
    // Rate-delayed columns are rare: none, no array.
    if cols.iter().any(|c| c.rate_delayed > 0) {
        push_array(
            o,
            "sc",
            cols.iter()
                .map(|c| Some(f64::from(u8::from(c.rate_delayed > 0)))),
            0,
        );
    }
    push_array(
        o,
        "sp",
        cols.iter()
            .map(|c| lost(c).map(|l| 100.0 * f64::from(l) / f64::from((l + c.packets).max(1)))),
        0,
    );
    // The trailing comma of the last array.
    if o.ends_with(',') {
        o.pop();
    }
    o.push('}');
}

fn events_list(h: &mut String, r: &NetQuality, tl: &Tl<'_>) {
    if r.lag_events.is_empty() {
        h.push_str("<p class=\"note\">No lag events.</p>\n");
        return;
    }
    h.push_str("<h3>Lag events</h3>\n<ul class=\"lag-events\">\n");
    for e in &r.lag_events {
        let text = match e.kind {
            "ping" => format!(
                "ping {:.0} → {:.0} ms{}",
                e.baseline,
                e.peak,
                e.stalled().map(|w| format!(", {w}")).unwrap_or_default()
            ),
            _ => format!(
                "{:.0} % of {} packets lost (worst half-second {:.0} %)",
                e.baseline * 100.0,
                dir_word(e.dir),
                e.peak * 100.0
            ),
        };
        let _ = writeln!(
            h,
            "<li data-kind=\"{}\" data-dir=\"{}\" data-start=\"{:.3}\" data-end=\"{:.3}\">{}: {}</li>",
            e.kind,
            dir_name(e.dir),
            e.start,
            e.end,
            tl.span(e.start, e.end),
            esc(&text)
        );
    }
    h.push_str("</ul>\n");
}

/// Rows of the game-events table at most (an hour of a busy server stays readable); a note
/// says how many were left out.
const MAX_EVENT_ROWS: usize = 2_000;
/// Events listed under one connection at most.
const MAX_PLAYER_EVENTS: usize = 300;

/// The capture's game events (those of `quakecap events`), on the capture's clock.
fn game_events_table(h: &mut String, events: &[GameEvent], tl: &Tl<'_>) {
    if events.is_empty() {
        h.push_str("<p class=\"note\">No game events (kills, chat, players, scores) in this capture.</p>\n");
        return;
    }
    let _ = writeln!(
        h,
        "<details class=\"game-events\"><summary>Game events ({})</summary>\n<p class=\"note\">Game time: the server's clock since the level started.</p>\n<table class=\"game-events\">\n<tr><th>time</th><th>game time</th><th class=\"l\">kind</th><th class=\"l\">what</th><th class=\"l\">flows</th></tr>",
        events.len()
    );
    for e in events.iter().take(MAX_EVENT_ROWS) {
        let flows: Vec<String> = e.flows.iter().map(ToString::to_string).collect();
        let _ = writeln!(
            h,
            "<tr data-kind=\"{}\"><td>{}</td><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            e.kind.name(),
            tl.time(e.time),
            e.game_time.map_or_else(|| "–".into(), clock_ms),
            e.kind.name(),
            esc(&e.describe()),
            flows.join(",")
        );
    }
    h.push_str("</table>\n");
    if events.len() > MAX_EVENT_ROWS {
        let _ = writeln!(
            h,
            "<p class=\"note\">{} more events not shown (`quakecap events` lists them all).</p>",
            events.len() - MAX_EVENT_ROWS
        );
    }
    h.push_str("</details>\n");
}

/// The events each flow saw, in the events' order. Built once: looking through every event
/// for every connection cost O(connections × events) (2.5 % of the report of a capture of
/// 1,640 connections, growing with both).
fn events_by_flow(events: &[GameEvent]) -> HashMap<u32, Vec<&GameEvent>> {
    let mut m: HashMap<u32, Vec<&GameEvent>> = HashMap::new();
    for e in events {
        for &f in &e.flows {
            let v = m.entry(f).or_default();
            // Once per event, as a flow named twice would be.
            if !v.last().is_some_and(|l| std::ptr::eq(*l, e)) {
                v.push(e);
            }
        }
    }
    m
}

/// The events this connection saw (`seen`) that name its player (frags, deaths, chat, joins),
/// within the connection's time.
fn player_events<'e>(r: &NetQuality, seen: &[&'e GameEvent]) -> Vec<&'e GameEvent> {
    let Some(name) = r.name.as_deref() else {
        return Vec::new();
    };
    seen.iter()
        .copied()
        .filter(|e| e.names().contains(&name))
        .collect()
}

/// The player's events, on the capture's clock.
fn player_events_list(h: &mut String, mine: &[&GameEvent], tl: &Tl<'_>) {
    if mine.is_empty() {
        return;
    }
    h.push_str(
        "<details class=\"player-events\"><summary>Game events of this player</summary>\n<ul>\n",
    );
    for e in mine.iter().take(MAX_PLAYER_EVENTS) {
        let _ = writeln!(
            h,
            "<li data-kind=\"{}\">{}: {} {}</li>",
            e.kind.name(),
            tl.time(e.time),
            e.kind.name(),
            esc(&e.describe())
        );
    }
    if mine.len() > MAX_PLAYER_EVENTS {
        let _ = writeln!(h, "<li>… {} more</li>", mine.len() - MAX_PLAYER_EVENTS);
    }
    h.push_str("</ul></details>\n");
}

#[cfg(test)]
mod tests {
    use super::{push_num, push_str_json, render_to, Clock, Input, MAX_POINTS};
    use crate::analysis::net::report::{Both, Interval};
    use crate::analysis::net::strip::{Col, Strip, MAX_COLS};

    /// An hour of one player at the worst: every interval with every figure known and
    /// unround, a full lagometer with loss known: the page stays under 2 MB.
    #[test]
    fn an_hour_of_one_player_is_under_two_megabytes() {
        let t0 = 1_795_530_956.284;
        let acc = crate::analysis::net::acc::FlowAcc::new(t0);
        let f = crate::flow::FlowSummary {
            id: 1,
            game: "q3",
            kind: "connection",
            name: Some("LabPlayer1".into()),
            first_time: t0,
            last_time: t0 + 3600.0,
            ..Default::default()
        };
        let mut q = crate::analysis::net::report::build(&acc, &f, 1.0);
        let odd = |k: usize, m: f64| Some(m + (k as f64 * 0.377).sin() * m * 0.31);
        q.series = (0..MAX_POINTS)
            .map(|k| Interval {
                start: t0 + k as f64,
                ping: odd(k, 97.3),
                ping_max: odd(k, 151.7),
                loss: Both {
                    c2s: odd(k, 0.0213),
                    s2c: odd(k, 0.0817),
                },
                packets: Both {
                    c2s: Some(61),
                    s2c: Some(19),
                },
                bytes: Both {
                    c2s: Some(1377 + k as u64 % 97),
                    s2c: Some(9123 + k as u64 % 1013),
                },
                snapshots: 19,
                rate_delayed: 1,
                jitter: Both {
                    c2s: odd(k, 7.31),
                    s2c: odd(k, 11.7),
                },
            })
            .collect();
        q.last_time = t0 + 3600.0;
        q.snapshot_rate = Some(19.0);
        q.loss_method = Both {
            c2s: Some("gaps"),
            s2c: Some("gaps"),
        };
        let step = 3600.0 / MAX_COLS as f64;
        q.strip = Some(Box::new(Strip {
            cols: (0..MAX_COLS)
                .map(|k| Col {
                    start: t0 + k as f64 * step,
                    end: t0 + (k as f64 + 0.9) * step,
                    seq_first: k as i64 * 64,
                    seq_last: k as i64 * 64 + 63,
                    packets: 64,
                    latency: [93.0 + (k % 117) as f32; 4],
                    rate_delayed: (k % 3) as u32,
                    lost_gap: (k % 7) as u32,
                    lost_ack: 0,
                })
                .collect(),
            per_col: 64,
        }));
        let rows = [q];
        let input = Input {
            name: "hour.pcapng",
            flows: std::slice::from_ref(&f),
            aggregates: &[],
            rows: &rows,
            events: &[],
            cheats: None,
        };
        let mut page = Vec::new();
        render_to(&mut page, &[input], &Clock::utc()).unwrap();
        println!("an hour of one player: {} bytes", page.len());
        assert!(page.len() < 2_000_000, "{} bytes", page.len());
        assert!(
            page.len() > 200_000,
            "every figure written: {} bytes",
            page.len()
        );
    }

    #[test]
    fn one_instant_one_label() {
        let c = Clock::utc();
        // 2026-11-24 14:36:36.62 UTC, cut to the second.
        assert_eq!(c.hms(1_795_530_996.62), "14:36:36");
        assert_eq!(c.hms(1_795_530_996.99), "14:36:36");
        assert_eq!(c.date(1_795_530_996.62), "2026-11-24");
        let l = Clock::local(3600);
        assert_eq!(l.hms(1_795_530_996.62), "15:36:36");
        assert_eq!(l.zone, "local time, UTC+01:00");
        assert_eq!(Clock::local(-5400).zone, "local time, UTC-01:30");
        assert_eq!(c.hms(f64::NAN), "00:00:00");
    }

    #[test]
    fn numbers_are_short_and_strings_cannot_close_the_script() {
        let mut o = String::new();
        for (v, d) in [
            (1.50, 2),
            (2.0, 1),
            (-0.01, 1),
            (f64::INFINITY, 1),
            (96.04, 1),
        ] {
            push_num(&mut o, v, d);
            o.push(' ');
        }
        assert_eq!(o, "1.5 2 0 null 96 ");
        let mut s = String::new();
        push_str_json(&mut s, "a</script>\"\\\n");
        assert_eq!(s, "\"a\\u003c/script\\u003e\\\"\\\\\\u000a\"");
    }
}
