//! The `quakecap net` table: one row per connection, its lag events listed under it.
use comfy_table::{presets::UTF8_FULL_CONDENSED, ContentArrangement, Table};

use crate::analysis::net::report::{LagEvent, NetQuality};

fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.digits$}"))
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "?".into(), |x| format!("{:.1}%", x * 100.0))
}

/// Render the connections of one input.
pub fn render(rows: &[NetQuality]) -> String {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(118);
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
    for r in rows {
        t.add_row(vec![
            r.flow.to_string(),
            r.name.clone().unwrap_or_else(|| "-".into()),
            serde_json::to_value(r.vantage)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default(),
            format!("{}/{}", num(r.ping.median, 0), num(r.ping.p95, 0)),
            format!("{}/{}", pct(r.loss.c2s), pct(r.loss.s2c)),
            format!("{}/{}", num(r.jitter.c2s, 1), num(r.jitter.s2c, 1)),
            num(r.snapshot_rate, 1),
            format!("{:.1}", r.client_packet_rate),
            num(r.fps, 0),
            r.lag_events.len().to_string(),
        ]);
    }
    let mut out = t.to_string();
    for r in rows {
        for e in &r.lag_events {
            out.push('\n');
            out.push_str(&event_line(r, e));
        }
        if let Some(t) = r.binned_until {
            out.push_str(&format!(
                "\nflow {}: from {:.1} s on, counted but not timed: too few packets for the \
                 connection's span (damaged or hostile timestamps)",
                r.flow,
                t - r.first_time
            ));
        }
    }
    out
}

/// "flow 3: 42.7–48.9 s: ping 98 → 352 ms" (times since the connection's first packet).
fn event_line(r: &NetQuality, e: &LagEvent) -> String {
    let (a, z) = (e.start - r.first_time, e.end - r.first_time);
    match e.kind {
        "ping" => format!(
            "flow {}: {a:.1}–{z:.1} s: ping {:.0} → {:.0} ms",
            r.flow, e.baseline, e.peak
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
