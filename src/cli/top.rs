//! `quakecap top`: a live view of a followed (or replayed) capture, refreshed every second:
//! one row per connection (player, server, ping now and a sparkline of the last minute, loss
//! each way, jitter, snapshots/s, fps, a flag during a lag event) and the last game events
//! below. Full-screen with the `tui` feature (ratatui) when stdout is a terminal; otherwise
//! the same rows as text each refresh.
//!
//! Keys (full screen): `s` sorts by the next column (flow, player, ping, loss), `↑`/`↓`
//! move the selection, `Enter` picks the selected player (the events below are then only
//! those naming the player; again to drop it), `q`, `Esc` or Ctrl-C quit.
use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::rc::Rc;
#[cfg(feature = "tui")]
use std::time::Duration;
use std::time::Instant;

use anyhow::Result;
use clap::Args;
use quakecap::analysis::net::LiveNet;
use quakecap::gameevent::GameEvent;
use quakecap::pipeline::{Detail, Event, InputError, Options, Report, Sink};
use quakecap::sink::events::EventSink;
use serde_json::Value;

#[derive(Debug, Args)]
pub struct TopArgs {
    /// One capture: `-` for standard input (`tcpdump -U -w - | quakecap top -`), or a file
    /// followed as it grows (or replayed with --replay).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// `--replay SPEED` plays a stored capture at its pace; without it the input is followed.
    #[command(flatten)]
    pub live: super::follow::FollowArgs,
    /// Seconds of capture time between two refreshes (text mode: blocks of rows; the full
    /// screen also refreshes every second of wall time).
    #[arg(long, default_value_t = 1.0)]
    pub interval: f64,
}

/// Pings kept per connection for the sparkline (a minute at one per second).
const SPARK: usize = 60;
/// Game events kept for the list below.
const EVENTS: usize = 50;
/// A lag flag stays this long (capture time, s) after the lag event ended.
const FLAG_S: f64 = 10.0;

/// One connection's row.
#[derive(Debug, Default, Clone)]
struct Row {
    flow: u32,
    name: String,
    server: String,
    ping: Option<f64>,
    pings: VecDeque<Option<f64>>,
    loss: (Option<f64>, Option<f64>),
    jitter: Option<f64>,
    snaps: Option<f64>,
    fps: Option<f64>,
    /// In a lag event now (its kind), or until this capture time after one.
    lagging: Option<String>,
    lag_until: f64,
    ended: bool,
}

/// What the view shows, fed by the net and events sinks' lines.
#[derive(Default)]
struct State {
    rows: BTreeMap<u32, Row>,
    events: VecDeque<GameEvent>,
    now: f64,
}

fn num(v: &Value) -> Option<f64> {
    v.as_f64()
}

impl State {
    fn net_line(&mut self, v: &Value) {
        let Some(flow) = v["flow"].as_u64().map(|f| f as u32) else {
            return;
        };
        let row = self.rows.entry(flow).or_insert_with(|| Row {
            flow,
            ..Default::default()
        });
        match v["type"].as_str().unwrap_or("") {
            "start" => row.server = v["server"].as_str().unwrap_or("").to_string(),
            "interval" => {
                row.ping = num(&v["ping"]).or(row.ping);
                row.pings.push_back(num(&v["ping"]));
                while row.pings.len() > SPARK {
                    row.pings.pop_front();
                }
                row.loss = (num(&v["loss"]["c2s"]), num(&v["loss"]["s2c"]));
            }
            "status" => {
                row.jitter = num(&v["jitter"]["s2c"])
                    .or(num(&v["jitter"]["c2s"]))
                    .or(num(&v["jitter"]["rtt"]));
                row.snaps = num(&v["snapshot_rate"]);
                row.fps = num(&v["fps"]);
                row.lagging = v["lagging"].as_str().map(String::from);
                if let Some(n) = v["name"].as_str() {
                    row.name = n.to_string();
                }
            }
            "lag" => {
                row.lag_until = num(&v["end"]).unwrap_or(0.0) + FLAG_S;
            }
            "end" => {
                row.ended = true;
                if let Some(n) = v["name"].as_str() {
                    row.name = n.to_string();
                }
            }
            _ => {}
        }
    }

    fn flag(&self, r: &Row) -> &'static str {
        if r.lagging.is_some() {
            "LAG"
        } else if self.now < r.lag_until {
            "lag"
        } else {
            ""
        }
    }
}

/// A sparkline of the pings (8 levels, scaled to the minute's highest).
fn sparkline(pings: &VecDeque<Option<f64>>) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let max = pings.iter().flatten().fold(1.0f64, |a, &b| a.max(b));
    pings
        .iter()
        .map(|p| match p {
            Some(p) => BARS[((p / max * 7.0).round() as usize).min(7)],
            None => ' ',
        })
        .collect()
}

fn cell(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.digits$}"))
}

fn pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{:.1}%", v * 100.0))
}

/// Sort orders `s` cycles through.
const SORTS: [&str; 4] = ["flow", "player", "ping", "loss"];

/// The rows in the chosen order.
fn sorted(state: &State, sort: usize) -> Vec<&Row> {
    let mut rows: Vec<&Row> = state.rows.values().filter(|r| !r.ended).collect();
    let loss = |r: &Row| r.loss.0.unwrap_or(0.0) + r.loss.1.unwrap_or(0.0);
    match SORTS[sort % SORTS.len()] {
        "player" => rows.sort_by(|a, b| a.name.cmp(&b.name)),
        "ping" => rows.sort_by(|a, b| b.ping.unwrap_or(0.0).total_cmp(&a.ping.unwrap_or(0.0))),
        "loss" => rows.sort_by(|a, b| loss(b).total_cmp(&loss(a))),
        _ => {}
    }
    rows
}

/// The header and one text line per row (the text mode, and the full screen's table).
fn row_cells(state: &State, r: &Row) -> [String; 10] {
    [
        r.flow.to_string(),
        if r.name.is_empty() {
            "-".into()
        } else {
            r.name.clone()
        },
        r.server.clone(),
        cell(r.ping, 0),
        sparkline(&r.pings),
        pct(r.loss.0),
        pct(r.loss.1),
        cell(r.jitter, 1),
        format!("{}/{}", cell(r.snaps, 0), cell(r.fps, 0)),
        state.flag(r).to_string(),
    ]
}

const HEADER: [&str; 10] = [
    "flow",
    "player",
    "server",
    "ping",
    "last minute",
    "loss up",
    "loss down",
    "jitter",
    "snaps/fps",
    "lag",
];

/// Column widths of the text rows (and of the full screen's table).
const WIDTHS: [u16; 10] = [4, 16, 21, 5, 60, 8, 9, 6, 9, 3];

/// One text row, columns padded (names cut to their width).
fn text_line(cells: &[String; 10]) -> String {
    let mut line = String::new();
    for (c, w) in cells.iter().zip(WIDTHS) {
        let w = usize::from(w);
        let cut: String = c.chars().take(w).collect();
        line.push_str(&format!("{cut:<w$} "));
    }
    line.trim_end().to_string()
}

#[cfg(feature = "tui")]
fn event_line(e: &GameEvent) -> String {
    let ms = e
        .game_time
        .filter(|_| e.server_clock)
        .unwrap_or_else(|| (e.session_time.unwrap_or(e.time) * 1000.0) as i64);
    format!(
        "{}  {:<11} {}",
        quakecap::gameevent::clock_ms(ms),
        e.kind.name(),
        e.describe()
    )
}

/// The view's side of the pass: the net and events sinks, and a refresh every second.
struct TopSink {
    net: LiveNet,
    events: EventSink,
    state: Rc<RefCell<State>>,
    view: View,
    last_draw: Option<Instant>,
    /// Text mode: capture time of the last block, and the seconds between two.
    last_block: f64,
    interval: f64,
}

/// Where the rows go.
enum View {
    Text,
    #[cfg(feature = "tui")]
    Screen(tui::Screen),
}

impl TopSink {
    fn refresh(&mut self, force: bool) -> io::Result<()> {
        let now = self.state.borrow().now;
        let due = match self.view {
            View::Text => now - self.last_block >= self.interval,
            #[cfg(feature = "tui")]
            // Every second, of wall time or of capture time (a replay's).
            View::Screen(_) => {
                now - self.last_block >= self.interval
                    || self
                        .last_draw
                        .is_none_or(|t| t.elapsed() >= Duration::from_secs(1))
            }
        };
        if !(force || due) {
            return Ok(());
        }
        self.last_draw = Some(Instant::now());
        self.last_block = now;
        let state = self.state.borrow();
        match &mut self.view {
            View::Text => {
                let mut out = io::stdout().lock();
                writeln!(
                    out,
                    "== {}",
                    super::timefmt::format_time(
                        super::timefmt::TimeFormat::Utc,
                        state.now,
                        0.0,
                        false
                    )
                )?;
                writeln!(out, "{}", text_line(&HEADER.map(String::from)))?;
                for r in sorted(&state, 0) {
                    writeln!(out, "{}", text_line(&row_cells(&state, r)))?;
                }
                writeln!(out)?;
                out.flush()
            }
            #[cfg(feature = "tui")]
            View::Screen(s) => s.draw(&state),
        }
    }
}

impl Sink for TopSink {
    fn event(&mut self, e: Event<'_>) -> io::Result<()> {
        // The connecting client's name, before the connection's report names it.
        if let Event::Q3(m) = e {
            if let quakecap::q3::message::Body::Oob(o) = &m.body {
                if o.command == "connect" {
                    if let Some((_, n)) = o.userinfo.iter().find(|(k, _)| k == "name") {
                        let mut st = self.state.borrow_mut();
                        let row = st.rows.entry(m.flow).or_default();
                        row.flow = m.flow;
                        row.name = n.clone();
                    }
                }
            }
        }
        self.net.event(e)?;
        self.events.event(e)?;
        if let Event::Clock(now) = e {
            self.state.borrow_mut().now = now;
            #[cfg(feature = "tui")]
            if let View::Screen(s) = &mut self.view {
                if s.keys()? {
                    super::follow::stop();
                }
            }
            self.refresh(false)?;
        }
        Ok(())
    }

    fn finish(&mut self, r: &Report) -> io::Result<()> {
        self.net.finish(r)?;
        self.events.finish(r)?;
        self.refresh(true)
    }
}

/// Run the command.
pub fn run(args: &TopArgs) -> Result<i32> {
    let path = super::follow::one_input(&args.files, false)?;
    if !(args.interval.is_finite() && args.interval > 0.0) {
        anyhow::bail!("--interval must be a positive number of seconds");
    }
    let mut live = args.live.clone();
    live.follow |= live.replay.is_none();
    let state = Rc::new(RefCell::new(State::default()));
    let s = state.clone();
    let net = LiveNet::new(
        1.0,
        Box::new(move |v| {
            s.borrow_mut().net_line(v);
            Ok(())
        }),
    )
    .with_status();
    let s = state.clone();
    let events = EventSink::follow(
        Box::new(move |e| {
            let mut st = s.borrow_mut();
            st.events.push_back(e.clone());
            while st.events.len() > EVENTS {
                st.events.pop_front();
            }
            Ok(())
        }),
        false,
    );
    let view = if io::stdout().is_terminal() {
        #[cfg(feature = "tui")]
        {
            View::Screen(tui::Screen::new()?)
        }
        #[cfg(not(feature = "tui"))]
        {
            View::Text
        }
    } else {
        View::Text
    };
    let mut sink = TopSink {
        net,
        events,
        state,
        view,
        last_draw: None,
        last_block: f64::NEG_INFINITY,
        interval: args.interval,
    };
    let opts = Options {
        samples: true,
        detail: Detail::Events,
        ..Options::default()
    };
    let r = super::follow::run(path, &live, &opts, &mut sink);
    #[cfg(feature = "tui")]
    if let View::Screen(s) = &mut sink.view {
        s.leave();
    }
    match r {
        Ok(report) => {
            super::warn(&report);
            Ok(super::input::EXIT_OK)
        }
        Err(e @ InputError::Io { .. }) => Err(e.into()),
        Err(e) => {
            eprintln!("quakecap: {e}");
            Ok(super::input::EXIT_INPUT)
        }
    }
}

/// The full-screen view (ratatui over crossterm).
#[cfg(feature = "tui")]
mod tui {
    use std::io::{self, Stdout};
    use std::time::Duration;

    use ratatui::backend::CrosstermBackend;
    use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
    use ratatui::crossterm::execute;
    use ratatui::crossterm::terminal::{
        disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
    };
    use ratatui::layout::{Constraint, Layout};
    use ratatui::style::{Modifier, Style};
    use ratatui::widgets::{Block, Borders, List, ListItem, Row, Table, TableState};
    use ratatui::Terminal;

    use super::{event_line, row_cells, sorted, State, HEADER, SORTS, WIDTHS};

    /// The terminal in raw mode on its alternate screen, and the view's choices.
    pub struct Screen {
        term: Terminal<CrosstermBackend<Stdout>>,
        sort: usize,
        selected: usize,
        /// The picked player: events naming them only.
        picked: Option<String>,
        /// The rows' players as last drawn (for picking).
        shown: Vec<String>,
        left: bool,
    }

    impl Screen {
        pub fn new() -> io::Result<Self> {
            enable_raw_mode()?;
            execute!(io::stdout(), EnterAlternateScreen)?;
            let term = Terminal::new(CrosstermBackend::new(io::stdout()))?;
            Ok(Screen {
                term,
                sort: 0,
                selected: 0,
                picked: None,
                shown: Vec::new(),
                left: false,
            })
        }

        /// The terminal as it was.
        pub fn leave(&mut self) {
            if !std::mem::replace(&mut self.left, true) {
                let _ = disable_raw_mode();
                let _ = execute!(io::stdout(), LeaveAlternateScreen);
                let _ = self.term.show_cursor();
            }
        }

        /// Handle the keys pressed; true to quit.
        pub fn keys(&mut self) -> io::Result<bool> {
            while event::poll(Duration::ZERO)? {
                let Event::Key(k) = event::read()? else {
                    continue;
                };
                if k.kind != KeyEventKind::Press {
                    continue;
                }
                match k.code {
                    KeyCode::Char('q') | KeyCode::Esc => return Ok(true),
                    KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                        return Ok(true)
                    }
                    KeyCode::Char('s') => self.sort = (self.sort + 1) % SORTS.len(),
                    KeyCode::Up => self.selected = self.selected.saturating_sub(1),
                    KeyCode::Down => self.selected += 1,
                    KeyCode::Enter | KeyCode::Char('p') => {
                        let name = self.shown.get(self.selected).cloned();
                        self.picked = if self.picked == name { None } else { name };
                    }
                    _ => {}
                }
            }
            Ok(false)
        }

        pub fn draw(&mut self, state: &State) -> io::Result<()> {
            let rows = sorted(state, self.sort);
            self.shown = rows.iter().map(|r| r.name.clone()).collect();
            self.selected = self.selected.min(rows.len().saturating_sub(1));
            let cells: Vec<Row> = rows
                .iter()
                .map(|r| Row::new(row_cells(state, r).to_vec()))
                .collect();
            let picked = self.picked.clone();
            let events: Vec<ListItem> = state
                .events
                .iter()
                .rev()
                .filter(|e| {
                    picked.as_deref().is_none_or(|p| {
                        e.names()
                            .iter()
                            .any(|n| super::super::filter::same_player(n, p))
                    })
                })
                .map(|e| ListItem::new(event_line(e)))
                .collect();
            let title = format!(
                " quakecap top  {}  sort: {} (s)  ↑↓ Enter: pick a player{}  q: quit ",
                super::super::timefmt::format_time(
                    super::super::timefmt::TimeFormat::Utc,
                    state.now,
                    0.0,
                    false
                ),
                SORTS[self.sort],
                picked.map(|p| format!(" [{p}]")).unwrap_or_default()
            );
            let mut table_state = TableState::default().with_selected(Some(self.selected));
            self.term.draw(|f| {
                let [top, bottom] =
                    Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)])
                        .areas(f.area());
                let widths = WIDTHS.map(Constraint::Length);
                let table = Table::new(cells, widths)
                    .header(
                        Row::new(HEADER.to_vec()).style(Style::new().add_modifier(Modifier::BOLD)),
                    )
                    .block(Block::default().borders(Borders::ALL).title(title))
                    .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED));
                f.render_stateful_widget(table, top, &mut table_state);
                let list = List::new(events).block(
                    Block::default()
                        .borders(Borders::ALL)
                        .title(" game events "),
                );
                f.render_widget(list, bottom);
            })?;
            Ok(())
        }
    }

    impl Drop for Screen {
        fn drop(&mut self) {
            self.leave();
        }
    }
}
