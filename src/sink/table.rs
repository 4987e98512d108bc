//! The `quakecap flows` table: one comfy-table row per flow.
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};

use crate::flow::{FlowSummary, PerDir};

fn pair(p: &PerDir) -> String {
    format!("{}/{}", p.c2s, p.s2c)
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref()
        .map(ToString::to_string)
        .unwrap_or_else(|| "-".into())
}

/// Render flows as a table. Counters are shown as `c2s/s2c`.
pub fn render(flows: &[FlowSummary]) -> String {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec![
        "id",
        "game",
        "kind",
        "proto",
        "server",
        "client",
        "qport",
        "challenge",
        "name",
        "start",
        "dur s",
        "packets",
        "bytes",
        "frag msgs",
        "dropped",
        "dup",
        "ooo",
        "errors",
    ]);
    for f in flows {
        let ports: Vec<String> = f.client_ports.iter().map(ToString::to_string).collect();
        t.add_row(vec![
            f.id.to_string(),
            f.game.to_string(),
            f.kind.to_string(),
            opt(&f.protocol),
            f.server.clone(),
            format!("{}:{}", f.client_ip, ports.join(",")),
            opt(&f.qport),
            opt(&f.challenge),
            opt(&f.name),
            format!("{:.3}", f.first_time),
            format!("{:.3}", f.last_time - f.first_time),
            pair(&f.packets),
            pair(&f.bytes),
            pair(&f.fragments),
            pair(&f.dropped),
            pair(&f.duplicates),
            pair(&f.out_of_order),
            f.errors.to_string(),
        ]);
    }
    t.to_string()
}

/// Thousands separated by commas (the summary lines are read by people).
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// One line per aggregate row (traffic past the flow limits), under the table, e.g.
/// `qw 1.2.3.4:27500 status: 400,000 requests from 399,871 sources, 0 answered`.
pub fn render_aggregates(rows: &[FlowSummary]) -> String {
    let mut s = String::new();
    for f in rows {
        let Some(a) = &f.aggregate else { continue };
        let line = if f.kind == "other_aggregate" {
            format!(
                "other UDP past the flow limit: {} datagrams from {} sources\n",
                grouped(a.requests),
                grouped(a.sources)
            )
        } else {
            format!(
                "{} {} {}: {} requests from {} sources, {} answered (past the query flow limit)\n",
                f.game,
                f.server,
                a.command,
                grouped(a.requests),
                grouped(a.sources),
                grouped(a.answered)
            )
        };
        s.push_str(&line);
    }
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn grouped_thousands() {
        assert_eq!(super::grouped(0), "0");
        assert_eq!(super::grouped(999), "999");
        assert_eq!(super::grouped(400_000), "400,000");
        assert_eq!(super::grouped(1_234_567), "1,234,567");
    }
}
