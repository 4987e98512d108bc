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
    let rows: Vec<&FlowSummary> = flows.iter().collect();
    render_rows(&rows, opts)
}

/// [`render_with`] of some of a file's flows.
pub fn render_rows(flows: &[&FlowSummary], opts: &TableOptions<'_>) -> String {
    let mut t = Table::new();
    if opts.wide {
        t.load_preset(UTF8_FULL_CONDENSED);
        t.set_header(wide_header());
    } else {
        t.set_header(narrow_header());
        narrow(&mut t);
    }
    fit(&mut t, opts.width);
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
    if flows.iter().any(|f| mid_session(f)) {
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

/// Lay a table out as the narrow `flows` table is: no borders, the columns parted by one
/// blank, `─` under the header. Call it after the header is set (the padding is set per
/// column). Shared by the tables meant to fit 80 columns (`flows`, `net`).
pub fn narrow(t: &mut Table) {
    // No outer border and one-character padding: the narrow table is meant for 80 columns.
    t.load_preset(NARROW_PRESET);
    // Blank separators already part the columns: no padding on the left.
    for c in t.column_iter_mut() {
        c.set_padding((0, 1));
    }
}

/// Wrap a table's cells to fit `width` columns (the terminal, `COLUMNS`); None: no limit.
/// The helper every table of the command line fits its width with.
pub fn fit(t: &mut Table, width: Option<u16>) {
    if let Some(w) = width {
        t.set_content_arrangement(ContentArrangement::Dynamic);
        t.set_width(w);
    }
}

/// The widest line of a rendered text, in characters (what a terminal shows of
/// box-drawing and plain text alike).
pub fn widest(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

/// A line of text broken at blanks to fit `width` columns, the lines after the first
/// indented by `indent`; a word longer than the width stays whole. None: the line as it is.
pub fn wrap_line(line: &str, width: Option<u16>, indent: &str) -> String {
    let Some(width) = width.map(usize::from) else {
        return line.to_string();
    };
    let mut out = String::new();
    let mut len = 0;
    for word in line.split(' ').filter(|w| !w.is_empty()) {
        let n = word.chars().count();
        if len > 0 && len + 1 + n > width {
            out.push('\n');
            out.push_str(indent);
            len = indent.chars().count();
        } else if len > 0 {
            out.push(' ');
            len += 1;
        }
        out.push_str(word);
        len += n;
    }
    out
}

/// The game a row names: `ql` for a Quake Live protocol (the JSON's `game` stays `q3`, the
/// engine family, with its `protocol`).
fn game(f: &FlowSummary) -> &'static str {
    match f.protocol {
        Some(p) if f.game == "q3" && crate::q3::protocol::Protocol::of(p).is_quake_live() => "ql",
        _ => f.game,
    }
}

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
        format!("{}\n{}", game(f), kind(f)),
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
        game(f).to_string(),
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

/// The line that counts the UDP flows of no known game a table hides, e.g. `11 other UDP
/// datagrams in 2 flows (--all lists them)`; None when there are none.
pub fn other_udp_line<'a>(
    other: impl IntoIterator<Item = &'a FlowSummary>,
    how_to_list: &str,
) -> Option<String> {
    let (flows, datagrams) = other
        .into_iter()
        .fold((0u64, 0u64), |(n, d), f| (n + 1, d + f.packets.total()));
    (flows > 0).then(|| {
        format!(
            "{} other UDP datagrams in {} flows ({how_to_list})",
            grouped(datagrams),
            grouped(flows)
        )
    })
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
                "{} {} {}: {} requests from {} sources, {} answered (past the flow limits)\n",
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

/// A server's flows of one kind that its table sums instead of listing (see
/// [`sum_one_shot`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summed {
    /// `"q3"` or `"qw"`.
    pub game: &'static str,
    /// The server's `ip:port`.
    pub server: String,
    /// "connection" or "query".
    pub kind: &'static str,
    /// Flows summed.
    pub flows: u64,
    /// Client datagrams of these flows.
    pub datagrams: u64,
    /// Flows the server answered at all.
    pub answered: u64,
    /// Distinct client addresses.
    pub sources: u64,
}

impl Summed {
    /// The line under the table, e.g. `q3 1.2.3.4:27960: 10,000 connection attempts without
    /// a session (10,000 answered) from 9,871 sources (--all lists them)`; the client
    /// datagrams are said when a flow sent more than one.
    pub fn line(&self, how_to_list: &str) -> String {
        let what = if self.kind == "query" {
            "queries"
        } else {
            "connection attempts without a session"
        };
        let datagrams = if self.datagrams > self.flows {
            format!("{} datagrams, ", grouped(self.datagrams))
        } else {
            String::new()
        };
        format!(
            "{} {}: {} {what} ({datagrams}{} answered) from {} sources ({how_to_list})",
            self.game,
            self.server,
            grouped(self.flows),
            grouped(self.answered),
            grouped(self.sources)
        )
    }
}

/// A server's one-shot flows of one kind are listed up to this many; past it (a flood of
/// spoofed sources: ten thousand rows of a packet or two), they are summed in one line.
pub const MAX_ONE_SHOT_LISTED: usize = 16;
/// Most datagrams each way of a one-shot flow: a client retries its getchallenge and
/// connect a few times before giving up.
const ONE_SHOT_MAX_DATAGRAMS: u64 = 4;

/// A query, or a connection attempt that never became a game session (no gamestate or
/// map), of a few datagrams each way: what a flood of spoofed sources leaves, one per
/// source, whether the server answered the requests or not.
pub fn is_one_shot(f: &FlowSummary) -> bool {
    f.game != "udp"
        && f.aggregate.is_none()
        && (f.kind == "query" || (f.kind == "connection" && f.map.is_none()))
        && f.packets.c2s <= ONE_SHOT_MAX_DATAGRAMS
        && f.packets.s2c <= ONE_SHOT_MAX_DATAGRAMS
}

/// The flows a table lists, and the sums of those it does not: a server's one-shot flows of
/// one kind ([`is_one_shot`]) when there are more than [`MAX_ONE_SHOT_LISTED`], in the
/// order of their first flow. Everything else is listed, in its order.
pub fn sum_one_shot(flows: &[FlowSummary]) -> (Vec<&FlowSummary>, Vec<Summed>) {
    use std::collections::{HashMap, HashSet};
    let mut groups: HashMap<(&str, &str, &str), Vec<&FlowSummary>> = HashMap::new();
    let mut order = Vec::new();
    for f in flows.iter().filter(|f| is_one_shot(f)) {
        let key = (f.game, f.server.as_str(), f.kind);
        let g = groups.entry(key).or_default();
        if g.is_empty() {
            order.push(key);
        }
        g.push(f);
    }
    let mut summed = Vec::new();
    let mut hidden: HashSet<u32> = HashSet::new();
    for key in order {
        let g = &groups[&key];
        if g.len() <= MAX_ONE_SHOT_LISTED {
            continue;
        }
        hidden.extend(g.iter().map(|f| f.id));
        let sources: HashSet<&str> = g.iter().map(|f| f.client_ip.as_str()).collect();
        summed.push(Summed {
            game: g[0].game,
            server: g[0].server.clone(),
            kind: g[0].kind,
            flows: g.len() as u64,
            datagrams: g.iter().map(|f| f.packets.c2s).sum(),
            answered: g.iter().filter(|f| f.packets.s2c > 0).count() as u64,
            sources: sources.len() as u64,
        });
    }
    let listed = flows.iter().filter(|f| !hidden.contains(&f.id)).collect();
    (listed, summed)
}

#[cfg(test)]
mod tests {
    use super::{sum_one_shot, MAX_ONE_SHOT_LISTED};
    use crate::flow::{FlowSummary, PerDir};

    fn flow(
        id: u32,
        server: &str,
        kind: &'static str,
        ip: &str,
        c2s: u64,
        s2c: u64,
    ) -> FlowSummary {
        FlowSummary {
            id,
            game: "q3",
            kind,
            server: server.into(),
            client_ip: ip.into(),
            packets: PerDir { c2s, s2c },
            ..Default::default()
        }
    }

    #[test]
    fn a_servers_one_shot_flows_are_summed_past_the_limit() {
        let n = MAX_ONE_SHOT_LISTED as u32;
        let mut flows = vec![flow(1, "a:1", "connection", "9.9.9.9", 900, 800)];
        // One more than the limit of session-less connection attempts to a:1 (two from one
        // address, one with a retry, one answered), the limit exactly of queries to a:1, one
        // attempt to b:1.
        for i in 0..=n {
            let ip = format!("10.0.0.{}", i.min(n - 1));
            let c2s = 1 + u64::from(i == 0);
            flows.push(flow(
                2 + i,
                "a:1",
                "connection",
                &ip,
                c2s,
                u64::from(i == 1),
            ));
        }
        for i in 0..n {
            flows.push(flow(100 + i, "a:1", "query", &format!("10.1.0.{i}"), 1, 1));
        }
        flows.push(flow(200, "b:1", "connection", "10.2.0.1", 1, 0));
        // A game session (its map), or more datagrams than a client's retries: listed
        // whatever their number.
        for i in 0..2 * n {
            let mut f = flow(300 + i, "a:1", "connection", "10.3.0.1", 2, 1);
            f.map = Some("q3dm17".into());
            flows.push(f);
            flows.push(flow(400 + i, "a:1", "connection", "10.4.0.1", 5, 0));
        }
        let (listed, summed) = sum_one_shot(&flows);
        assert_eq!(summed.len(), 1, "{summed:?}");
        let s = &summed[0];
        assert_eq!((s.server.as_str(), s.kind), ("a:1", "connection"));
        let n64 = u64::from(n);
        assert_eq!(
            (s.flows, s.datagrams, s.answered, s.sources),
            (n64 + 1, n64 + 2, 1, n64)
        );
        // The others, in their order.
        let want: Vec<&FlowSummary> = flows
            .iter()
            .filter(|f| !(2..=n + 2).contains(&f.id))
            .collect();
        assert_eq!(listed, want);
        assert_eq!(
            s.line("--all lists them"),
            format!(
                "q3 a:1: {} connection attempts without a session ({} datagrams, 1 answered) from {} sources (--all lists them)",
                n + 1,
                n + 2,
                n
            )
        );
    }

    #[test]
    fn lines_wrap_at_blanks_to_the_width() {
        let l = "flow 12: 1.0–2.0 s: 40% of server packets lost (worst half-second 90%)";
        assert_eq!(super::wrap_line(l, None, "  "), l);
        let w = super::wrap_line(l, Some(30), "  ");
        assert!(w.lines().all(|x| x.chars().count() <= 30), "{w}");
        assert!(w.lines().skip(1).all(|x| x.starts_with("  ")), "{w}");
        assert_eq!(
            w.split_whitespace().collect::<Vec<_>>(),
            l.split(' ').collect::<Vec<_>>()
        );
        assert_eq!(
            super::wrap_line("averyveryverylongword x", Some(5), ""),
            "averyveryverylongword\nx"
        );
    }

    #[test]
    fn grouped_thousands() {
        assert_eq!(super::grouped(0), "0");
        assert_eq!(super::grouped(999), "999");
        assert_eq!(super::grouped(400_000), "400,000");
        assert_eq!(super::grouped(1_234_567), "1,234,567");
    }
}
