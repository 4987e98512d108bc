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
