//! The `quakecap net` table: one row per connection, its lag events listed under it.
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};

use crate::analysis::net::report::{LagEvent, NetQuality};

fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.digits$}"))
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "?".into(), |x| format!("{:.1}%", x * 100.0))
}

/// Render the connections of one input, 118 columns wide at most.
pub fn render(rows: &[NetQuality]) -> String {
    render_fit(rows, Some(118))
}

/// Render the connections of one input to fit `width` columns (the terminal, `COLUMNS`;
/// None: no limit). The boxed table when it fits; else the narrow layout of `flows` (no
/// borders, headers on two lines) with its cells wrapped to the width
/// ([`super::table::fit`]); the lines under it broken at blanks.
pub fn render_fit(rows: &[NetQuality], width: Option<u16>) -> String {
    let cells: Vec<Vec<String>> = rows.iter().map(row).collect();
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec![
        "flow",
        "player",
        "vantage",
        "ping ms med/p95",
        "loss up/down",
        "jitter ms up/down",
        "snaps/s",
        "cl pkt/s",
        "fps",
        "lag",
    ]);
    t.add_rows(cells.clone());
    let mut out = t.to_string();
    if width.is_some_and(|w| super::table::widest(&out) > usize::from(w)) {
        let mut t = Table::new();
        t.set_header(vec![
            "flow",
            "player",
            "vantage",
            "ping ms\nmed/p95",
            "loss\nup/down",
            "jitter ms\nup/down",
            "snaps\n/s",
            "cl pkt\n/s",
            "fps",
            "lag",
        ]);
        super::table::narrow(&mut t);
        super::table::fit(&mut t, width);
        t.add_rows(cells);
        out = t.to_string();
    }
    let mut line = |l: String| {
        out.push('\n');
        out.push_str(&super::table::wrap_line(&l, width, "  "));
    };
    for r in rows {
        for e in &r.lag_events {
            line(event_line(r, e));
        }
        if let Some(t) = r.binned_until {
            line(format!(
                "flow {}: from {:.1} s on, counted but not timed: too few packets for the \
                 connection's span (damaged or hostile timestamps)",
                r.flow,
                t - r.first_time
            ));
        }
    }
    out
}

/// One connection's cells.
fn row(r: &NetQuality) -> Vec<String> {
    vec![
        r.flow.to_string(),
        r.name.clone().unwrap_or_else(|| "-".into()),
        serde_json::to_value(r.vantage)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default(),
        format!("{}/{}", num(r.ping.median, 0), num(r.ping.p95, 0)),
        match (r.loss.c2s, r.loss.s2c, r.round_trip_loss) {
            // Neither way alone, both together (QuakeWorld client side).
            (None, None, Some(rt)) => format!("rt {}", pct(Some(rt))),
            (c2s, s2c, _) => format!("{}/{}", pct(c2s), pct(s2c)),
        },
        format!("{}/{}", num(r.jitter.c2s, 1), num(r.jitter.s2c, 1)),
        num(r.snapshot_rate, 1),
        format!("{:.1}", r.client_packet_rate),
        num(r.fps, 0),
        r.lag_events.len().to_string(),
    ]
}

/// "flow 3: 42.7–48.9 s: ping 98 → 352 ms" (times since the connection's first packet), and
/// the stalled direction when known (", upstream stalled").
fn event_line(r: &NetQuality, e: &LagEvent) -> String {
    let (a, z) = (e.start - r.first_time, e.end - r.first_time);
    match e.kind {
        "ping" => format!(
            "flow {}: {a:.1}–{z:.1} s: ping {:.0} → {:.0} ms{}",
            r.flow,
            e.baseline,
            e.peak,
            e.stalled().map(|w| format!(", {w}")).unwrap_or_default()
        ),
        _ => format!(
            "flow {}: {a:.1}–{z:.1} s: {:.0}% of {} packets lost (worst half-second {:.0}%)",
            r.flow,
            e.baseline * 100.0,
            match e.dir {
                Some(crate::flow::Dir::C2s) => "client",
                _ => "server",
            },
            e.peak * 100.0
        ),
    }
}
