//! The `quakecap flows` table: one comfy-table row per flow.
use comfy_table::{presets::UTF8_FULL_CONDENSED, ContentArrangement, Table};

use crate::error::ErrorKind;
use crate::flow::{FlowSummary, PerDir};

fn pair(p: &PerDir) -> String {
    format!("{}/{}", p.c2s, p.s2c)
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref()
        .map(ToString::to_string)
        .unwrap_or_else(|| "-".into())
}

/// How the table is laid out; times are formatted by the caller (time zone, `--time`).
pub struct TableOptions<'a> {
    /// Every column (`--wide`) instead of the ones that matter day to day.
    pub wide: bool,
    /// Wrap cells to fit this many columns (the terminal, `COLUMNS`); None: no limit.
    pub width: Option<u16>,
    /// A flow's start time (epoch seconds) as shown.
    pub start: &'a dyn Fn(f64) -> String,
    /// A flow's duration (seconds) as shown.
    pub duration: &'a dyn Fn(f64) -> String,
    /// The date every flow started on, when `start` shows only the time of day.
    pub date: Option<String>,
}

/// Render flows as the wide table with epoch times (counters as `c2s/s2c`).
pub fn render(flows: &[FlowSummary]) -> String {
    let opts = TableOptions {
        wide: true,
        width: None,
        start: &|t| format!("{t:.3}"),
        duration: &|d| format!("{d:.3}"),
        date: None,
    };
    render_with(flows, &opts)
}

/// Render flows with the chosen columns, width and time formats.
pub fn render_with(flows: &[FlowSummary], opts: &TableOptions<'_>) -> String {
    let mut t = Table::new();
    if opts.wide {
        t.load_preset(UTF8_FULL_CONDENSED);
    } else {
        // No outer border and one-character padding: the narrow table is meant for 80 columns.
        t.load_preset(NARROW_PRESET);
    }
    if let Some(w) = opts.width {
        t.set_content_arrangement(ContentArrangement::Dynamic);
        t.set_width(w);
    }
    if opts.wide {
        t.set_header(wide_header());
    } else {
        t.set_header(narrow_header());
        // Blank separators already part the columns: no padding on the left.
        for c in t.column_iter_mut() {
            c.set_padding((0, 1));
        }
    }
    for f in flows {
        let row = if opts.wide {
            wide_row(f, opts)
        } else {
            narrow_row(f, opts)
        };
        t.add_row(row);
    }
    let table = match &opts.date {
        Some(d) => format!("flows started on {d}\n{t}"),
        None => t.to_string(),
    };
    if flows.iter().any(mid_session) {
        // Its one "error" is the note of what was recovered, which only the JSON shows.
        format!("{table}\n{MID_SESSION_NOTE}")
    } else {
        table
    }
}

/// Under a table with mid-session connections.
const MID_SESSION_NOTE: &str =
    "mid-session: the capture starts after the connection's handshake;\n\
`flows --json` says what was recovered (its error of kind mid_session)";

/// The capture started after the connection's handshake.
fn mid_session(f: &FlowSummary) -> bool {
    f.error_details
        .iter()
        .any(|e| e.kind == ErrorKind::MidSession)
}

/// The flow's kind as the table shows it: a connection captured mid-session says so.
fn kind(f: &FlowSummary) -> &'static str {
    if mid_session(f) {
        "mid-session"
    } else {
        f.kind
    }
}

/// No borders: columns separated by blanks, `─` under the header (tshark-like, fits 80).
const NARROW_PRESET: &str = "     ─             ";

fn narrow_header() -> Vec<&'static str> {
    vec![
        "id",
        "game\nkind",
        "server\nclient",
        "player\nmap",
        "start\nduration",
        "packets c→s/s→c\ngaps c→s/s→c",
        "errors",
    ]
}

/// The columns that matter day to day: who, when, how long, how much and how well; pairs
/// stacked in one cell so the table fits 80 columns.
fn narrow_row(f: &FlowSummary, opts: &TableOptions<'_>) -> Vec<String> {
    vec![
        f.id.to_string(),
        format!("{}\n{}", f.game, kind(f)),
        endpoints(f),
        format!("{}\n{}", name(f), map(f)),
        format!(
            "{}\n{}",
            (opts.start)(f.first_time),
            (opts.duration)(duration(f))
        ),
        format!("{}\n{}", pair(&f.packets), pair(&f.dropped)),
        f.errors.to_string(),
    ]
}

fn wide_header() -> Vec<&'static str> {
    vec![
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
        "dur",
        "packets\nc→s/s→c",
        "bytes\nc→s/s→c",
        "frag msgs\nc→s/s→c",
        "seq gaps\nc→s/s→c",
        "dup\nc→s/s→c",
        "ooo\nc→s/s→c",
        "errors",
    ]
}

fn wide_row(f: &FlowSummary, opts: &TableOptions<'_>) -> Vec<String> {
    vec![
        f.id.to_string(),
        f.game.to_string(),
        kind(f).to_string(),
        opt(&f.protocol),
        f.server.clone(),
        client(f),
        opt(&f.qport),
        opt(&f.challenge),
        name(f),
        (opts.start)(f.first_time),
        (opts.duration)(duration(f)),
        pair(&f.packets),
        pair(&f.bytes),
        pair(&f.fragments),
        pair(&f.dropped),
        pair(&f.duplicates),
        pair(&f.out_of_order),
        f.errors.to_string(),
    ]
}

/// A demo's own game time; a capture flow's time from first to last packet.
fn duration(f: &FlowSummary) -> f64 {
    f.game_seconds.unwrap_or(f.last_time - f.first_time)
}

/// Server over client; a demo file has neither, its row names the file (without folders,
/// which `flows` prints above the table).
fn endpoints(f: &FlowSummary) -> String {
    if f.kind == "demo" {
        let name = f.server.rsplit(['/', '\\']).next().unwrap_or(&f.server);
        return format!("{name}\n(demo file)");
    }
    format!("{}\n{}", f.server, client(f))
}

fn client(f: &FlowSummary) -> String {
    let ports: Vec<String> = f.client_ports.iter().map(ToString::to_string).collect();
    format!("{}:{}", f.client_ip, ports.join(","))
}

/// The player name as a terminal shows it (see [`super::text::readable`]).
fn name(f: &FlowSummary) -> String {
    match f.name.as_deref() {
        None if !f.players.is_empty() => players(f),
        None => "-".into(),
        Some(n) if f.game == "qw" => super::text::readable::qw_plain(n).replace('\n', " "),
        Some(n) => super::text::readable::q3_plain(n).replace('\n', " "),
    }
}

/// The map, and how many maps followed it.
fn map(f: &FlowSummary) -> String {
    match (f.map.as_deref(), f.maps.len()) {
        (None, _) => String::new(),
        (Some(m), n) if n > 1 => format!("{m} +{}", n - 1),
        (Some(m), _) => m.to_string(),
    }
}

/// A demo's players in one short cell: the first three and how many more.
fn players(f: &FlowSummary) -> String {
    let plain = |n: &String| match f.game {
        "qw" => super::text::readable::qw_plain(n).replace('\n', " "),
        _ => super::text::readable::q3_plain(n).replace('\n', " "),
    };
    let mut s: Vec<String> = f.players.iter().take(3).map(plain).collect();
    if f.players.len() > 3 {
        s.push(format!("+{}", f.players.len() - 3));
    }
    s.join(", ")
}

/// Thousands separated by commas (the summary lines are read by people): `412,345`.
pub fn grouped(n: u64) -> String {
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
