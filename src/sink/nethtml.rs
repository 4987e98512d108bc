//! `quakecap report`: one self-contained HTML file (no script, no fetch: it opens offline)
//! with the flows table, the network-quality table and, per connection, plots laid out by
//! plotters and written as inline SVG by [`SvgOut`] (a lean plotters backend: plotters' own
//! SVG backend was most of the plots' cost): ping over time with the lag events shaded, loss
//! per interval each way, jitter each way, packet and snapshot rates, bandwidth, and a
//! lagometer strip in the style of Quake 3's `cg_lagometer`.
//!
//! Size: every series has at most [`MAX_POINTS`] entries (the report widens the interval for
//! long connections) and the strip at most `strip::MAX_COLS` columns, so a connection costs
//! about the same whatever the match length (well under 200 KB).
use std::collections::HashMap;
use std::fmt::Write as _;

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::markup::escape as esc;
use super::svg::SvgOut;
use crate::analysis::net::acc::RttMethod;
use crate::analysis::net::report::{Interval, LagEvent, NetQuality};
use crate::analysis::net::strip;
use crate::flow::{Dir, FlowSummary};
use crate::gameevent::{clock_ms, Detail, GameEvent};

/// Entries per series the report asks for (about a point per two pixels).
pub const MAX_POINTS: usize = 450;

const W: u32 = 900;
const H: u32 = 190;
/// Lag events shaded on the ping plot (class names for the checks: these exact colours).
pub const PING_EVENT: RGBColor = RGBColor(0xE0, 0x31, 0x31);
/// Shade of a `loss` lag event on the ping plot (the tests look for this exact colour).
pub const LOSS_EVENT: RGBColor = RGBColor(0x8E, 0x44, 0xAD);
const C2S: RGBColor = RGBColor(0x1F, 0x77, 0xB4);
const S2C: RGBColor = RGBColor(0xD6, 0x27, 0x28);
const THIRD: RGBColor = RGBColor(0x2C, 0xA0, 0x2C);
/// cg_lagometer's colours: latency green, rate-delayed yellow, dropped red.
const LAG_OK: RGBColor = RGBColor(0x00, 0xB0, 0x00);
const LAG_RATE: RGBColor = RGBColor(0xE6, 0xC2, 0x00);
const LAG_DROP: RGBColor = RGBColor(0xE0, 0x00, 0x00);

fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "–".into(), |x| format!("{x:.digits$}"))
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "unknown".into(), |x| format!("{:.1} %", x * 100.0))
}

/// `content-visibility:auto` on the players' sections: a browser lays out and paints only
/// those near the view (the report of a capture of 1,900 connections, 38 MB and 11,000
/// plots, took headless Chromium 20–28 s to its first screenshot, 6 s with it); the
/// intrinsic size (a section is about 1,400 px high) keeps the scroll bar steady until each is
/// drawn, and the sections stay searchable and printable.
const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;color:#222;max-width:960px}\
table{border-collapse:collapse;font-size:13px;margin:.5em 0 1.5em}\
td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}\
th{background:#f0f0f0}td.l,th.l{text-align:left}\
figure{margin:.4em 0}figcaption{font-size:13px;color:#555}\
.note{font-size:13px;color:#555}section{border-top:2px solid #ddd;margin-top:1.5em}\
section.player{content-visibility:auto;contain-intrinsic-size:auto 1400px}";

/// The whole report of one capture: `flows` are the capture's flows (all kinds), `rows` the
/// network quality of its connections, `events` the game events (`quakecap events`).
///
/// Written to `w` a piece at a time: the head and tables, then each connection's section as
/// it is drawn, so the report is never whole in memory (tens of MB for a capture of a
/// thousand connections, copied again at every doubling of one string).
pub fn render_to<W: std::io::Write>(
    w: &mut W,
    file: &str,
    flows: &[FlowSummary],
    aggregates: &[FlowSummary],
    rows: &[NetQuality],
    events: &[GameEvent],
) -> std::io::Result<()> {
    render_with(w, file, flows, aggregates, rows, events, &mut |_| Ok(None))
}

/// [`render_to`] with rows that may hold only their heads: `full` gives a row's whole
/// report when its series and strip are kept elsewhere (`None`: the row is whole), and is
/// asked for one row at a time as its section is written (the report's spool,
/// [`super::spool`]).
pub fn render_with<W: std::io::Write>(
    w: &mut W,
    file: &str,
    flows: &[FlowSummary],
    aggregates: &[FlowSummary],
    rows: &[NetQuality],
    events: &[GameEvent],
    full: &mut dyn FnMut(&NetQuality) -> std::io::Result<Option<NetQuality>>,
) -> std::io::Result<()> {
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\" />\n");
    let _ = writeln!(
        h,
        "<title>quakecap report: {}</title>\n<style>{STYLE}</style>\n</head>\n<body>",
        esc(file)
    );
    let _ = writeln!(h, "<h1>Network quality: {}</h1>", esc(file));
    h.push_str(
        "<p class=\"note\">Times are seconds since each connection's first packet. \
         How each figure is measured: see the README of quakecap (Network quality). \
         “unknown”: the capture's vantage point cannot tell.</p>\n",
    );
    flows_table(&mut h, flows, aggregates);
    quality_table(&mut h, rows);
    if rows.is_empty() {
        h.push_str("<p>No game connection with netchan traffic in this capture.</p>\n");
    }
    game_events_table(&mut h, events);
    let by_flow = events_by_flow(events);
    // A flow that resumed after its end has a report per stretch, in order.
    let mut stretches: HashMap<u32, usize> = HashMap::new();
    for r in rows {
        w.write_all(h.as_bytes())?;
        h.clear();
        let seen = by_flow.get(&r.flow).map_or(&[][..], Vec::as_slice);
        let n = stretches.entry(r.flow).or_insert(0);
        *n += 1;
        match full(r)? {
            Some(whole) => connection(&mut h, &whole, seen, *n),
            None => connection(&mut h, r, seen, *n),
        }
    }
    h.push_str("</body>\n</html>\n");
    w.write_all(h.as_bytes())
}

/// The flows table: game flows, a flood's one-shot connection attempts and queries summed (as in
/// `quakecap flows`), UDP of no known game counted in a line, then the traffic past the flow
/// limits (`aggregates`).
fn flows_table(h: &mut String, flows: &[FlowSummary], aggregates: &[FlowSummary]) {
    h.push_str("<h2>Flows</h2>\n<table class=\"flows\">\n<tr><th>id</th><th class=\"l\">game</th><th class=\"l\">kind</th><th class=\"l\">server</th><th class=\"l\">client</th><th class=\"l\">player</th><th>duration s</th><th>packets c2s/s2c</th><th>bytes c2s/s2c</th></tr>\n");
    let (listed, summed) = crate::sink::table::sum_one_shot(flows);
    let (game, other): (Vec<&FlowSummary>, Vec<&FlowSummary>) =
        listed.into_iter().partition(|f| f.game != "udp");
    for f in game {
        let ports: Vec<String> = f.client_ports.iter().map(ToString::to_string).collect();
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}:{}</td><td class=\"l\">{}</td><td>{:.1}</td><td>{}/{}</td><td>{}/{}</td></tr>",
            f.id,
            f.game,
            f.kind,
            esc(&f.server),
            esc(&f.client_ip),
            ports.join(","),
            esc(f.name.as_deref().unwrap_or("–")),
            f.last_time - f.first_time,
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
}

fn quality_table(h: &mut String, rows: &[NetQuality]) {
    h.push_str("<h2>Connections</h2>\n<table class=\"net\">\n<tr><th>flow</th><th class=\"l\">player</th><th class=\"l\">vantage</th><th>ping median / p95 / max ms</th><th>loss c2s</th><th>loss s2c</th><th>jitter c2s / s2c ms</th><th>snaps/s</th><th>client pkts/s</th><th>fps</th><th>lag events</th></tr>\n");
    for r in rows {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{} / {} / {}</td><td>{}</td><td>{}</td><td>{} / {}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td></tr>",
            r.flow,
            esc(r.name.as_deref().unwrap_or("–")),
            vantage(r),
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

/// One connection's section. `seen`: the events this connection saw ([`events_by_flow`]);
/// `stretch`: 1 for a flow's first report, 2 for the one after it resumed, ...
fn connection(h: &mut String, r: &NetQuality, seen: &[&GameEvent], stretch: usize) {
    let who = r.name.as_deref().unwrap_or("(unnamed)");
    let (id, which) = match stretch {
        0 | 1 => (r.flow.to_string(), r.flow.to_string()),
        n => (
            format!("{}-{n}", r.flow),
            format!("{}, stretch {n}", r.flow),
        ),
    };
    let _ = writeln!(
        h,
        "<section class=\"player\" id=\"flow-{id}\" data-flow=\"{}\" data-name=\"{}\">\n<h2>{} — flow {which} ({}, capture near the {})</h2>",
        r.flow,
        esc(who),
        esc(who),
        r.game,
        vantage(r)
    );
    let _ = writeln!(
        h,
        "<p class=\"note\">Ping method: {} ({} samples). Loss c2s {} ({}), s2c {} ({}). Series step {} s.</p>",
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
            "<p class=\"note\">From {:.1} s on, packets are counted but not timed: too few \
             packets for the connection's span (damaged or hostile timestamps).</p>",
            t - r.first_time
        );
    }
    events_list(h, r);
    let mine = player_events(r, seen);
    player_events_list(h, r, &mine);
    let span = (r.last_time - r.first_time).max(1.0);
    let x = |i: &Interval| i.start - r.first_time;
    let figs: [(&str, String, Result<String, String>); 5] = [
        (
            "ping",
            "Ping (ms): mean per interval, highest per interval (light); lag events shaded \
             (red: ping, purple: loss); grey: the connection's median; ticks at the top: \
             the player's frags (green) and deaths (black)"
                .into(),
            plot_ping(r, span, &mine),
        ),
        (
            "loss",
            format!(
                "Loss per interval (%): client→server (blue){}, server→client (red){}",
                if r.loss.c2s.is_none() { " unknown" } else { "" },
                if r.loss.s2c.is_none() { " unknown" } else { "" }
            ),
            lines(
                span,
                "%",
                &[
                    series(r, &x, |i| i.loss.c2s.map(|v| v * 100.0), C2S, "c2s"),
                    series(r, &x, |i| i.loss.s2c.map(|v| v * 100.0), S2C, "s2c"),
                ],
                Some(100.0),
                &Marks::default(),
            ),
        ),
        (
            "jitter",
            format!(
                "Jitter (ms, RFC 3550 over the sender's timestamps): c2s (blue), s2c (red){}",
                if r.jitter.c2s.is_none() && r.jitter.s2c.is_none() {
                    format!(
                        " — not measurable from here; variation of successive pings {} ms",
                        num(r.jitter.rtt, 1)
                    )
                } else {
                    String::new()
                }
            ),
            lines(
                span,
                "ms",
                &[
                    series(r, &x, |i| i.jitter.c2s, C2S, "c2s"),
                    series(r, &x, |i| i.jitter.s2c, S2C, "s2c"),
                ],
                None,
                &Marks::default(),
            ),
        ),
        (
            "rates",
            "Rates (per second): client packets (blue), server packets (red), snapshots (green)"
                .into(),
            lines(
                span,
                "/s",
                &[
                    series(
                        r,
                        &x,
                        |i| i.packets.c2s.map(|p| f64::from(p) / r.interval),
                        C2S,
                        "client pkts",
                    ),
                    series(
                        r,
                        &x,
                        |i| i.packets.s2c.map(|p| f64::from(p) / r.interval),
                        S2C,
                        "server pkts",
                    ),
                    series(
                        r,
                        &x,
                        |i| r.snapshot_rate.map(|_| f64::from(i.snapshots) / r.interval),
                        THIRD,
                        "snapshots",
                    ),
                ],
                None,
                &Marks::default(),
            ),
        ),
        (
            "bandwidth",
            "Bandwidth (kB/s of UDP payload): client→server (blue), server→client (red)".into(),
            lines(
                span,
                "kB/s",
                &[
                    series(
                        r,
                        &x,
                        |i| i.bytes.c2s.map(|b| b as f64 / 1000.0 / r.interval),
                        C2S,
                        "c2s",
                    ),
                    series(
                        r,
                        &x,
                        |i| i.bytes.s2c.map(|b| b as f64 / 1000.0 / r.interval),
                        S2C,
                        "s2c",
                    ),
                ],
                None,
                &Marks::default(),
            ),
        ),
    ];
    for (class, caption, svg) in figs {
        figure(h, class, &caption, svg);
    }
    let strip_caption = format!(
        "Lagometer: one column per server packet{} — height its latency (ms), yellow when \
         rate-delayed (the client's rate is too low), red where server packets were lost \
         before it{}",
        r.strip
            .as_ref()
            .filter(|s| s.per_col > 1)
            .map_or(String::new(), |s| format!(
                " (merged by {}: worst latency)",
                s.per_col
            )),
        if r.loss.s2c.is_none() {
            " (unknown from here: none shown)"
        } else {
            ""
        }
    );
    figure(h, "lagometer", &strip_caption, plot_strip(r, span));
    h.push_str("</section>\n");
}

fn events_list(h: &mut String, r: &NetQuality) {
    if r.lag_events.is_empty() {
        h.push_str("<p class=\"note\">No lag events.</p>\n");
        return;
    }
    h.push_str("<ul class=\"lag-events\">\n");
    for e in &r.lag_events {
        let (a, z) = (e.start - r.first_time, e.end - r.first_time);
        let text = match e.kind {
            "ping" => format!("{a:.1}–{z:.1} s: ping {:.0} → {:.0} ms", e.baseline, e.peak),
            _ => format!(
                "{a:.1}–{z:.1} s: {:.0} % of {} packets lost (worst {:.0} %)",
                e.baseline * 100.0,
                if e.dir == Some(Dir::C2s) {
                    "client"
                } else {
                    "server"
                },
                e.peak * 100.0
            ),
        };
        let _ = writeln!(
            h,
            "<li data-kind=\"{}\" data-dir=\"{}\" data-start=\"{:.3}\" data-end=\"{:.3}\">{}</li>",
            e.kind,
            dir_name(e.dir),
            e.start,
            e.end,
            esc(&text)
        );
    }
    h.push_str("</ul>\n");
}

fn figure(h: &mut String, class: &str, caption: &str, svg: Result<String, String>) {
    let _ = write!(
        h,
        "<figure class=\"{class}\">\n<figcaption>{}</figcaption>\n",
        esc(caption)
    );
    match svg {
        Ok(s) => {
            // An XML declaration-free <svg> element: inlined as is.
            h.push_str(s.trim());
            h.push('\n');
        }
        Err(e) => {
            let _ = writeln!(h, "<p class=\"note\">plot failed: {}</p>", esc(&e));
        }
    }
    h.push_str("</figure>\n");
}

/// What a plot marks besides its lines: shaded spans (start, end, colour) and ticks at the
/// top (time, colour).
#[derive(Default)]
struct Marks {
    shade: Vec<(f64, f64, RGBColor)>,
    ticks: Vec<(f64, RGBColor)>,
}

/// Rows of the game-events table at most (an hour of a busy server stays readable); a note
/// says how many were left out.
const MAX_EVENT_ROWS: usize = 2_000;
/// Events listed under one connection at most.
const MAX_PLAYER_EVENTS: usize = 300;

/// The capture's game events (those of `quakecap events`), on the capture's clock.
fn game_events_table(h: &mut String, events: &[GameEvent]) {
    h.push_str("<h2>Game events</h2>\n");
    if events.is_empty() {
        h.push_str("<p class=\"note\">No game events (kills, chat, players, scores) in this capture.</p>\n");
        return;
    }
    h.push_str("<p class=\"note\">Capture s: seconds since the capture's first game packet. Game time: the server's clock since the level started.</p>\n<table class=\"game-events\">\n<tr><th>capture s</th><th>game time</th><th class=\"l\">kind</th><th class=\"l\">what</th><th class=\"l\">flows</th></tr>\n");
    for e in events.iter().take(MAX_EVENT_ROWS) {
        let flows: Vec<String> = e.flows.iter().map(ToString::to_string).collect();
        let _ = writeln!(
            h,
            "<tr data-kind=\"{}\"><td>{}</td><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            e.kind.name(),
            num(e.session_time, 1),
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

/// The events this connection saw (`seen`) that name its player (frags, deaths, chat, joins).
fn player_events<'e>(r: &NetQuality, seen: &[&'e GameEvent]) -> Vec<&'e GameEvent> {
    let Some(name) = r.name.as_deref() else {
        return Vec::new();
    };
    seen.iter()
        .copied()
        .filter(|e| e.names().contains(&name))
        .collect()
}

/// The player's events, on the connection's time axis (that of the plots below).
fn player_events_list(h: &mut String, r: &NetQuality, mine: &[&GameEvent]) {
    if mine.is_empty() {
        return;
    }
    h.push_str("<details class=\"player-events\"><summary>Game events of this player (seconds on the plots' axis)</summary>\n<ul>\n");
    for e in mine.iter().take(MAX_PLAYER_EVENTS) {
        let _ = writeln!(
            h,
            "<li data-kind=\"{}\">{:.1} s: {} {}</li>",
            e.kind.name(),
            e.time - r.first_time,
            e.kind.name(),
            esc(&e.describe())
        );
    }
    if mine.len() > MAX_PLAYER_EVENTS {
        let _ = writeln!(h, "<li>… {} more</li>", mine.len() - MAX_PLAYER_EVENTS);
    }
    h.push_str("</ul></details>\n");
}

/// One line of a plot: runs of points (a gap where the value is unknown).
struct Line {
    runs: Vec<Vec<(f64, f64)>>,
    color: RGBColor,
    label: &'static str,
}

fn series(
    r: &NetQuality,
    x: &dyn Fn(&Interval) -> f64,
    y: impl Fn(&Interval) -> Option<f64>,
    color: RGBColor,
    label: &'static str,
) -> Line {
    let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
    for i in &r.series {
        match y(i).filter(|v| v.is_finite()) {
            Some(v) => {
                if let Some(run) = runs.last_mut() {
                    level_push(run, (x(i), v));
                }
            }
            None if runs.last().is_some_and(|r| !r.is_empty()) => runs.push(Vec::new()),
            None => {}
        }
    }
    runs.retain(|r| !r.is_empty());
    Line { runs, color, label }
}

/// Append `p` to a line's points; a level stretch keeps only its two ends. Its inner points
/// draw nothing the straight segment between the ends does not, and most of a connection's
/// series are level for long stretches (no loss, a steady snapshot rate): each point is
/// mapped, laid out and written.
fn level_push(run: &mut Vec<(f64, f64)>, p: (f64, f64)) {
    match run.as_mut_slice() {
        [.., a, b] if a.1 == p.1 && b.1 == p.1 => *b = p,
        _ => run.push(p),
    }
}

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

type Area<'a> = DrawingArea<SvgOut<'a>, Shift>;

type TimeChart<'a, 'b> = ChartContext<'a, SvgOut<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The frame every plot shares: seconds since the connection's first packet across (0 to
/// `span`), 0 to `top` up, room for the axes' labels.
fn time_chart<'a, 'b>(
    root: &'a Area<'b>,
    span: f64,
    top: f64,
) -> Result<TimeChart<'a, 'b>, String> {
    ChartBuilder::on(root)
        .margin(6)
        .x_label_area_size(26)
        .y_label_area_size(52)
        .build_cartesian_2d(0f64..span, 0f64..top)
        .map_err(err)
}

/// Point `p` moved into the window of a chart `span` across and `top` up (unchanged when
/// inside it). plotters maps a point far outside its window to a pixel past `i32` (an
/// overflow: a debug build panics, a release build draws at a wrapped position); only a
/// damaged capture's figures fall outside. Never panics, NaN bounds included.
fn inside(p: (f64, f64), span: f64, top: f64) -> (f64, f64) {
    (p.0.max(0.0).min(span), p.1.max(0.0).min(top))
}

/// A time plot with the given lines, shaded windows (start, end, colour) behind them.
fn lines(
    span: f64,
    unit: &str,
    ls: &[Line],
    ymax: Option<f64>,
    marks: &Marks,
) -> Result<String, String> {
    let top = ymax.unwrap_or_else(|| {
        let m = ls
            .iter()
            .flat_map(|l| l.runs.iter().flatten())
            .map(|p| p.1)
            .fold(0.0, f64::max);
        (m * 1.1).max(1.0)
    });
    let mut svg = String::with_capacity(16 * 1024);
    {
        let root: Area = SvgOut::new(&mut svg, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut chart = time_chart(&root, span, top)?;
        chart
            .configure_mesh()
            .x_desc("s")
            .y_desc(unit)
            .light_line_style(TRANSPARENT)
            .max_light_lines(0)
            // Five values up a 190-pixel plot read as well as eleven, six along 840 pixels as
            // well as ten, and each label with its grid line is a few SVG elements: the axes
            // were half the plots' cost.
            .y_labels(5)
            .x_labels(6)
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| format!("{v:.0}"))
            .draw()
            .map_err(err)?;
        chart
            .draw_series(marks.shade.iter().map(|&(a, z, c)| {
                Rectangle::new(
                    [
                        inside((a, 0.0), span, top),
                        inside((z.max(a + span / W as f64), top), span, top),
                    ],
                    c.mix(0.22).filled(),
                )
            }))
            .map_err(err)?;
        chart
            .draw_series(marks.ticks.iter().map(|&(t, c)| {
                let t = inside((t, 0.0), span, top).0;
                PathElement::new(vec![(t, top * 0.92), (t, top)], c.stroke_width(2))
            }))
            .map_err(err)?;
        let mut labelled = false;
        for l in ls {
            for (n, run) in l.runs.iter().enumerate() {
                let drawn = if run.len() == 1 {
                    let p = inside(run[0], span, top);
                    chart.draw_series(std::iter::once(Circle::new(p, 2, l.color.filled())))
                } else {
                    chart.draw_series(LineSeries::new(
                        run.iter().map(|&p| inside(p, span, top)),
                        l.color.stroke_width(1),
                    ))
                }
                .map_err(err)?;
                if n == 0 {
                    let c = l.color;
                    drawn
                        .label(l.label)
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c));
                    labelled = true;
                }
            }
        }
        if labelled {
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()
                .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(svg)
}

fn plot_ping(r: &NetQuality, span: f64, mine: &[&GameEvent]) -> Result<String, String> {
    let x = |i: &Interval| i.start - r.first_time;
    let mean = series(r, &x, |i| i.ping, C2S, "mean");
    let max = series(r, &x, |i| i.ping_max, RGBColor(0x9E, 0xC5, 0xE8), "max");
    let shade: Vec<(f64, f64, RGBColor)> = r
        .lag_events
        .iter()
        .map(|e: &LagEvent| {
            (
                e.start - r.first_time,
                e.end - r.first_time,
                if e.kind == "ping" {
                    PING_EVENT
                } else {
                    LOSS_EVENT
                },
            )
        })
        .collect();
    let mut ls = vec![max, mean];
    if let Some(m) = r.ping.median {
        // The median as one grey line (plotters draws no dashes: sixty dash elements per
        // plot cost more than the rest of the plot).
        ls.push(Line {
            runs: vec![vec![(0.0, m), (span, m)]],
            color: RGBColor(0x88, 0x88, 0x88),
            label: "median",
        });
    }
    let ticks = mine
        .iter()
        .filter_map(|e| match &e.detail {
            Detail::Kill(k) if k.suicide || k.killer.as_deref() != r.name.as_deref() => {
                Some((e.time - r.first_time, BLACK))
            }
            Detail::Kill(_) => Some((e.time - r.first_time, THIRD)),
            _ => None,
        })
        .collect();
    lines(span, "ms", &ls, None, &Marks { shade, ticks })
}

fn plot_strip(r: &NetQuality, span: f64) -> Result<String, String> {
    let Some(strip) = r.strip.as_deref() else {
        return Err("no lagometer data".into());
    };
    let k = r.ping_method.unwrap_or(RttMethod::AckS2c) as usize;
    let lost = |c: &strip::Col| match r.loss_method.s2c {
        Some("gaps") => c.lost_gap,
        Some(_) => c.lost_ack,
        None => 0,
    };
    let top = strip
        .cols
        .iter()
        .map(|c| f64::from(c.latency[k]))
        .fold(0.0, f64::max)
        .max(50.0)
        * 1.1;
    let mut svg = String::with_capacity(16 * 1024);
    {
        let root: Area = SvgOut::new(&mut svg, (W, 120)).into_drawing_area();
        root.fill(&RGBColor(0x10, 0x10, 0x10)).map_err(err)?;
        let mut chart = time_chart(&root, span, top)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc("s")
            .y_desc("ms")
            .axis_style(WHITE)
            .y_labels(3)
            .x_labels(6)
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| format!("{v:.0}"))
            .label_style(("sans-serif", 12).into_font().color(&WHITE))
            .draw()
            .map_err(err)?;
        let cols = &strip.cols;
        let px = span / f64::from(W);
        // One column per server packet: (start, end, height, colour), None for a packet
        // without a latency (a gap in the strip).
        let bars = cols.iter().enumerate().map(|(i, c)| {
            let a = c.start - r.first_time;
            let z = cols
                .get(i + 1)
                .map_or(c.end - r.first_time, |n| n.start - r.first_time)
                .max(a + px);
            if lost(c) > 0 {
                return Some((a, z, top, LAG_DROP));
            }
            let l = f64::from(c.latency[k]);
            let color = if c.rate_delayed > 0 { LAG_RATE } else { LAG_OK };
            (l >= 0.0).then_some((a, z, l, color))
        });
        // Neighbouring columns of one colour are one polygon (their skyline): a thousand
        // rectangles cost more to write than the rest of the report's plots together.
        chart
            .draw_series(skylines(bars).map(|(pts, c)| {
                let pts = pts
                    .into_iter()
                    .map(|p| inside(p, span, top))
                    .collect::<Vec<_>>();
                Polygon::new(pts, c.filled())
            }))
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

/// Runs of touching columns (start, end, height, colour) of one colour, each as the outline
/// of its columns from the axis up: (points, colour).
fn skylines(
    bars: impl Iterator<Item = Option<(f64, f64, f64, RGBColor)>>,
) -> impl Iterator<Item = (Vec<(f64, f64)>, RGBColor)> {
    let mut runs: Vec<(Vec<(f64, f64)>, RGBColor)> = Vec::new();
    let mut open = false;
    for bar in bars {
        let Some((a, z, h, c)) = bar else {
            open = false;
            continue;
        };
        match runs.last_mut() {
            Some((pts, rc)) if open && *rc == c && pts.last().is_some_and(|p| p.0 == a) => {
                // A column as high as the one before only carries its roof on.
                match pts.as_mut_slice() {
                    [.., l] if l.1 == h => l.0 = z,
                    _ => pts.extend([(a, h), (z, h)]),
                }
            }
            _ => runs.push((vec![(a, 0.0), (a, h), (z, h)], c)),
        }
        open = true;
    }
    runs.into_iter().map(|(mut pts, c)| {
        if let Some(&(z, _)) = pts.last() {
            pts.push((z, 0.0));
        }
        (pts, c)
    })
}

#[cfg(test)]
mod tests {
    use super::{level_push, lines, skylines, Line, Marks, C2S, LAG_DROP, LAG_OK};

    #[test]
    fn a_level_stretch_keeps_its_ends() {
        let mut run = Vec::new();
        let ys = [1.0, 2.0, 2.0, 2.0, 2.0, 3.0, 3.0, 1.0, 1.0, 1.0];
        for (x, y) in ys.into_iter().enumerate() {
            level_push(&mut run, (x as f64, y));
        }
        assert_eq!(
            run,
            [
                (0.0, 1.0),
                (1.0, 2.0),
                (4.0, 2.0),
                (5.0, 3.0),
                (6.0, 3.0),
                (7.0, 1.0),
                (9.0, 1.0)
            ]
        );
    }

    #[test]
    fn touching_columns_of_one_height_share_one_roof() {
        let bars = [
            Some((0.0, 1.0, 5.0, LAG_OK)),
            Some((1.0, 2.0, 5.0, LAG_OK)),
            Some((2.0, 3.0, 5.0, LAG_OK)),
            Some((3.0, 4.0, 7.0, LAG_OK)),
        ];
        let runs: Vec<_> = skylines(bars.into_iter()).collect();
        assert_eq!(
            runs[0].0,
            vec![
                (0.0, 0.0),
                (0.0, 5.0),
                (3.0, 5.0),
                (3.0, 7.0),
                (4.0, 7.0),
                (4.0, 0.0)
            ]
        );
    }

    #[test]
    fn touching_columns_of_one_colour_are_one_outline() {
        let bars = [
            Some((0.0, 1.0, 5.0, LAG_OK)),
            Some((1.0, 2.0, 7.0, LAG_OK)),
            Some((2.0, 3.0, 9.0, LAG_DROP)),
            None,
            Some((4.0, 5.0, 3.0, LAG_DROP)),
            Some((6.0, 7.0, 3.0, LAG_DROP)),
        ];
        let runs: Vec<_> = skylines(bars.into_iter()).collect();
        assert_eq!(
            runs.len(),
            4,
            "a colour change, a gap and a hole split runs"
        );
        assert_eq!(
            runs[0].0,
            vec![
                (0.0, 0.0),
                (0.0, 5.0),
                (1.0, 5.0),
                (1.0, 7.0),
                (2.0, 7.0),
                (2.0, 0.0)
            ]
        );
        assert_eq!(
            runs[1].0,
            vec![(2.0, 0.0), (2.0, 9.0), (3.0, 9.0), (3.0, 0.0)]
        );
        assert_eq!(runs[3].1, LAG_DROP);
    }

    /// Figures far outside a plot's window (a damaged capture's) are drawn at its edge:
    /// plotters' pixel arithmetic overflowed on them (a panic where overflow is checked, as
    /// in this test build; a wrapped position in a release build).
    #[test]
    fn figures_far_outside_the_window_are_drawn_at_its_edge() {
        let far = Line {
            runs: vec![
                vec![(0.0, 10.0), (1.0, -1.6e10), (2.0, 12.0)],
                vec![(3e12, 5.0)],
            ],
            color: C2S,
            label: "mean",
        };
        let marks = Marks {
            shade: vec![(-1e15, 1e15, LAG_DROP)],
            ticks: vec![(-4e13, LAG_OK)],
        };
        let svg = lines(10.0, "ms", &[far], Some(20.0), &marks).expect("drawn");
        assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(80)]);
    }
}
