//! `quakecap annotate`: the capture copied to pcapng with a comment on every game datagram
//! the decoders saw (Wireshark shows it as `frame.comment`).
//!
//! Each game datagram gets one comment saying what it is — game, flow and player, direction,
//! sequence and acknowledgements, then its messages in one line (`q3.rs`, `qw.rs`: one file
//! per game) and what failed with its position — and one more comment per game event it
//! carries (`kill: Sarge → LabPlayer1 (railgun)`), from the same extractors `quakecap events`
//! runs ([`EventSink::take_new`]). An event is placed on the datagram whose message gave it:
//! kills on the snapshot that carried the obituary, chat on the server command (or on the
//! client's own command), a gamestate's players on the first snapshot after it (it gives
//! their game time). Several connections that saw one event each carry their own copy: the
//! `events` timeline holds it once, with those flows.
//!
//! One pass, written as it goes: the decoders hand out messages, network samples and events
//! in capture order (but for the messages a mid-session key search held until it locked on),
//! so a packet `REORDER_FRAMES` behind the newest one told is final and is copied out
//! ([`CommentCopier`], reading the input a second time as a stream). What is held is the
//! comments of the packets not written yet and one small record per live flow.
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::{self, Read, Write};

use crate::capture::comment::{CommentCopier, CopyStats};
use crate::gameevent::{Detail, GameEvent};
use crate::pipeline::{Event, Report, Sink};
use crate::sink::events::EventSink;
use crate::vocab::info::value_any_case as info_value;
use crate::vocab::sample::{Arrival, Sample};
use crate::vocab::Dir;

mod q3;
mod qw;

/// How far behind the newest frame told a packet waits before it is written: messages come
/// in capture order, except a Quake 3 connection captured mid-session, whose messages before
/// its key search locked on come when it does (on the stored cuts within 2 s of traffic).
/// Comments of at most this many packets are held (a few MB on real captures).
const REORDER_FRAMES: u64 = 16_384;

/// Longest quoted text (a command, a print) in a comment, in characters.
const MAX_TEXT: usize = 160;
/// Longest datagram line, in bytes (a message of many commands): what is held waiting stays
/// under [`REORDER_FRAMES`] times this (32 MB) whatever the input.
const MAX_LINE: usize = 2048;

/// `text` cut to [`MAX_LINE`] bytes at a character boundary, `…` marking the cut.
fn bounded(mut text: String) -> String {
    if text.len() > MAX_LINE {
        let mut end = MAX_LINE;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// What one flow's comments say about it.
#[derive(Default)]
struct FlowInfo {
    /// "q3" or "qw", once a message told it.
    game: &'static str,
    /// The player's name, once known (the connect's userinfo, the gamestate's own slot).
    player: Option<String>,
    /// The last frame commented for the flow.
    last_frame: u64,
}

/// A packet's comments: its own line, its events'.
struct Current {
    line: Option<String>,
    /// The line is a network sample's, made before the datagram's message (QuakeWorld hands
    /// the sample first): the message's own line replaces it.
    provisional: bool,
    events: Vec<String>,
}

impl Current {
    fn comments(self) -> Vec<String> {
        self.line.into_iter().chain(self.events).collect()
    }
}

/// The sink of `annotate`: comments per frame, written through a [`CommentCopier`].
pub struct AnnotateSink<R: Read, W: Write> {
    copier: CommentCopier<R, W>,
    events: EventSink,
    flows: HashMap<u32, FlowInfo>,
    /// Comments of the packets not written yet, by frame.
    pending: BTreeMap<u64, Current>,
    /// The highest frame told so far.
    newest: u64,
    /// A write of the copy failed: given back at the end.
    failed: Option<io::Error>,
    /// Comments that came for a packet already written (none when the decoders keep capture
    /// order, which the pass does).
    pub late: u64,
    /// Events handed out at a flow's end or the input's end, after their datagram was
    /// written (a gamestate's players when no snapshot followed).
    pub unplaced: u64,
    /// Game datagrams commented.
    pub commented: u64,
    /// Game events placed.
    pub events_placed: u64,
}

impl<R: Read, W: Write> AnnotateSink<R, W> {
    /// A sink that writes the copy `copier` makes.
    pub fn new(copier: CommentCopier<R, W>) -> Self {
        AnnotateSink {
            copier,
            events: EventSink::new(),
            flows: HashMap::new(),
            pending: BTreeMap::new(),
            newest: 0,
            failed: None,
            late: 0,
            unplaced: 0,
            commented: 0,
            events_placed: 0,
        }
    }

    /// Copy the rest of the input; the output and what the copy did.
    pub fn finish_copy(mut self) -> io::Result<(W, CopyStats)> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        let pending = &mut self.pending;
        self.copier.finish(&mut |n| take(pending, n))
    }

    /// The comments of packet `frame`, to add to (None when it was written already). The
    /// packets more than [`REORDER_FRAMES`] before the newest frame told are written.
    fn at(&mut self, frame: u64) -> Option<&mut Current> {
        if self.copier.stats().packets >= frame {
            return None;
        }
        if frame > self.newest {
            self.newest = frame;
            let through = frame.saturating_sub(REORDER_FRAMES);
            if through > self.copier.stats().packets && self.failed.is_none() {
                let pending = &mut self.pending;
                if let Err(e) = self.copier.copy_through(through, &mut |n| take(pending, n)) {
                    self.failed = Some(e);
                }
            }
        }
        Some(self.pending.entry(frame).or_insert_with(|| Current {
            line: None,
            provisional: false,
            events: Vec::new(),
        }))
    }

    /// The datagram's own line (a second message of the same frame joins it; a message
    /// replaces a sample's provisional line).
    fn line(&mut self, frame: u64, text: String, provisional: bool) {
        let text = bounded(text);
        let Some(c) = self.at(frame) else {
            self.late += 1;
            return;
        };
        match &mut c.line {
            Some(first) if !c.provisional => {
                if first.len() < MAX_LINE {
                    first.push_str(" || ");
                    first.push_str(&text);
                }
            }
            Some(first) => {
                *first = text;
                c.provisional = provisional;
            }
            None => {
                c.line = Some(text);
                c.provisional = provisional;
                self.commented += 1;
            }
        }
    }

    /// An event's comment on `frame`.
    fn place(&mut self, frame: u64, e: &GameEvent) {
        let text = bounded(event_text(e));
        match (frame > 0).then(|| self.at(frame)).flatten() {
            Some(c) => {
                c.events.push(text);
                self.events_placed += 1;
            }
            None => self.unplaced += 1,
        }
    }

    /// The events the last message gave, on its frame.
    fn place_events(&mut self, frame: u64) {
        for (_, e) in self.events.take_new() {
            self.place(frame, &e);
        }
    }

    /// A sample of a datagram no message came of (a fragment, a duplicate, a stale packet),
    /// or the loss before an accepted one.
    fn sample(&mut self, s: &Sample) {
        if s.frame == 0 {
            return;
        }
        let game = self.flows.get(&s.flow).map_or("", |f| f.game);
        if let Some(Some(first)) = self.pending.get_mut(&s.frame).map(|c| c.line.as_mut()) {
            // The message's own line is there: add what only the netchan knew (Quake 3; a
            // QuakeWorld message says it itself).
            if s.gap > 0 && game == "q3" {
                let _ = write!(first, " · {} lost before", s.gap);
            }
            return;
        }
        let info = self.flows.entry(s.flow).or_default();
        info.last_frame = s.frame;
        let mut t = header(s.flow, info, s.dir);
        let _ = write!(t, " seq {}", s.seq);
        match s.arrival {
            Arrival::Fragment => t.push_str(" fragment (the message completes on a later packet)"),
            Arrival::Duplicate => t.push_str(" duplicate: a sequence already received, dropped"),
            Arrival::OutOfOrder => t.push_str(" out of order: an older sequence, dropped"),
            Arrival::Accepted => t.push_str(" accepted, not decoded"),
        }
        if s.gap > 0 {
            let _ = write!(t, " · {} lost before", s.gap);
        }
        self.line(s.frame, t, true);
    }
}

/// Comments of packet `n`, taken out of `pending`.
fn take(pending: &mut BTreeMap<u64, Current>, n: u64) -> Vec<String> {
    pending
        .remove(&n)
        .map(Current::comments)
        .unwrap_or_default()
}

/// One event's comment: `kill: Sarge → LabPlayer1 (railgun)`, `chat: Sarge: hello`.
pub fn event_text(e: &GameEvent) -> String {
    let d = e.describe();
    match &e.detail {
        Detail::Kill(_) => {
            let (who, how) = d.rsplit_once("  ").unwrap_or((d.as_str(), ""));
            let how = how.replace(" (team kill)", ", team kill");
            match who.strip_suffix(" (suicide)") {
                Some(victim) => format!("kill: {victim} (suicide, {how})"),
                None => format!("kill: {who} ({how})"),
            }
        }
        _ => format!("{}: {d}", e.kind.name()),
    }
}

/// `q3 flow 2 LabPlayer1 s2c`: the start of a datagram's line.
fn header(flow: u32, info: &FlowInfo, dir: Dir) -> String {
    let game = if info.game.is_empty() {
        "game"
    } else {
        info.game
    };
    let mut t = format!("{game} flow {flow}");
    if let Some(p) = &info.player {
        let _ = write!(t, " {p}");
    }
    let _ = write!(t, " {}", dir.as_str());
    t
}

/// `"text"`, control characters escaped, cut to [`MAX_TEXT`] characters.
fn quoted(out: &mut String, text: &str) {
    out.push('"');
    for (i, c) in text.chars().enumerate() {
        if i == MAX_TEXT {
            out.push('…');
            break;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

impl<R: Read, W: Write> Sink for AnnotateSink<R, W> {
    fn event(&mut self, e: Event<'_>) -> io::Result<()> {
        match e {
            Event::Q3(m) => {
                let info = self.flows.entry(m.flow).or_default();
                info.game = "q3";
                info.last_frame = m.frame;
                q3::learn(m, info);
                let mut t = header(m.flow, info, m.dir);
                q3::describe(m, &mut t);
                self.line(m.frame, t, false);
                self.events.event(e)?;
                self.place_events(m.frame);
            }
            Event::Qw(m) => {
                let info = self.flows.entry(m.flow).or_default();
                info.game = "qw";
                info.last_frame = m.frame;
                qw::learn(m, info);
                let mut t = header(m.flow, info, m.dir);
                qw::describe(m, &mut t);
                self.line(m.frame, t, false);
                self.events.event(e)?;
                self.place_events(m.frame);
            }
            Event::NetSample(s) => self.sample(s),
            Event::FlowEnd(f) => {
                self.events.event(e)?;
                let last = self.flows.remove(&f.id).map_or(0, |i| i.last_frame);
                self.place_events(last);
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, report: &Report) -> io::Result<()> {
        // The flows still open finish their extractors: what they give now goes on the
        // flow's last datagram when it is not written yet.
        let before = self.events.events.len();
        self.events.finish(report)?;
        let tail: Vec<GameEvent> = self.events.events.drain(before..).collect();
        for e in tail {
            let frame = e
                .flows
                .iter()
                .filter_map(|f| self.flows.get(f).map(|i| i.last_frame))
                .max()
                .unwrap_or(0);
            self.place(frame, &e);
        }
        self.flows.clear();
        Ok(())
    }
}
