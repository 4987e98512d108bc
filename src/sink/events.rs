//! The game-events analyzer: a [`Sink`] that feeds each flow's decoded messages
//! ([`Event::Q3`], [`Event::Qw`]) to its game's extractor ([`crate::gameevent::q3`],
//! [`crate::gameevent::qw`]), which turn them into game-neutral [`GameEvent`]s; at the end of
//! each input the flows' events are merged into one timeline (`crate::gameevent::merge`).
//! The flow is one way: decoders → events → this sink; merging and summaries are game-blind.
use std::collections::HashMap;
use std::io;

use crate::error::Error;
use crate::flow::FlowMap;
use crate::gameevent::names::{Learned, LearnedName};
use crate::gameevent::q3 as q3x;
use crate::gameevent::qw as qwx;
use crate::gameevent::{merge, merge::merge, GameEvent, Warnings};
use crate::pipeline::{Event, Report, Sink, MAX_WARNINGS};

/// Flow ids below this have a slot in [`EventSink`]'s dense index (256 KB at most).
const DENSE_IDS: u32 = 1 << 16;

/// One flow's extractor, whichever game it is.
enum Extractor {
    Q3(Box<q3x::Extractor>),
    Qw(Box<qwx::Extractor>),
}

impl Extractor {
    fn finish(&mut self, out: &mut Vec<GameEvent>) {
        match self {
            Extractor::Q3(x) => x.finish(out),
            Extractor::Qw(x) => x.finish(out),
        }
    }
    fn take_warnings(&mut self) -> Warnings {
        match self {
            Extractor::Q3(x) => std::mem::take(&mut x.warnings),
            Extractor::Qw(x) => std::mem::take(&mut x.warnings),
        }
    }
    fn take_learned_names(&mut self) -> Vec<LearnedName> {
        match self {
            Extractor::Q3(x) => x.take_learned_names(),
            Extractor::Qw(_) => Vec::new(),
        }
    }
    fn demo(&self) -> bool {
        match self {
            Extractor::Q3(x) => x.is_demo(),
            Extractor::Qw(x) => x.is_demo(),
        }
    }
}

/// How far two captures' clocks may disagree and still record one session (seconds): the
/// same machine, or hosts kept in time by NTP (two lab recordings a minute apart of one
/// scripted play lined up 58 s apart).
const MAX_CLOCK_SKEW_S: f64 = 5.0;

/// The events are a capture's (they name flows; a demo's run on the server's clock).
fn is_capture(events: &[GameEvent]) -> bool {
    events.iter().any(|e| !e.flows.is_empty())
}

/// Collects game events over one or more inputs.
#[derive(Default)]
pub struct EventSink {
    /// The extractor of each flow, through an index: consecutive messages are mostly of the
    /// same flow, so the last lookup is kept.
    flows: Vec<(u32, Option<Extractor>)>,
    /// Slots of `flows` whose flow ended, for the next new one.
    free: Vec<usize>,
    index: FlowMap<u32, usize>,
    last: Option<(u32, usize)>,
    /// The same index for small flow ids (the flow table numbers flows from 1): extractor + 1
    /// by id, 0 for none. With many connections interleaved the last lookup mostly misses,
    /// and a slot is cheaper than hashing. Ids from [`DENSE_IDS`] on use the map alone.
    dense: Vec<u32>,
    /// Flows of the current input whose extractor finished at the flow's end
    /// ([`Event::FlowEnd`]): the flow, whether it was a demo, and its warnings.
    ended: Vec<(u32, bool, Warnings)>,
    /// Events of the current input, each with the flow that saw it.
    raw: Vec<(u32, GameEvent)>,
    /// Names the current input's flows learned after the events that needed them.
    learned: Vec<(u32, LearnedName)>,
    scratch: Vec<GameEvent>,
    /// Merged events of every finished input, in time order per input.
    pub events: Vec<GameEvent>,
    /// Each finished input: its file and where its events end in `events`.
    pub inputs: Vec<(String, usize)>,
    /// Problems found while extracting (malformed events or configstrings, unknown mods),
    /// with their file and position: the first [`MAX_WARNINGS`] of all inputs.
    pub warnings: Vec<Error>,
    /// Every such problem, kept in `warnings` or not.
    pub warnings_total: u64,
    /// Following a live input ([`EventSink::follow`]).
    live: Option<Live>,
}

/// Where each merged event of a followed input goes.
pub type EventOut = Box<dyn FnMut(&GameEvent) -> io::Result<()>>;

/// A followed input's events: merged with a watermark and handed out as they become final.
struct Live {
    merge: merge::LiveMerge,
    /// Each flow's server, told at its start ([`Event::FlowStart`]); a query flow's goes at
    /// its end.
    servers: HashMap<u32, String>,
    /// The first event's capture time (session times count from it).
    first: Option<f64>,
    out: EventOut,
    /// Also keep the events in [`EventSink::events`] (a summary at the end).
    keep: bool,
}

impl EventSink {
    /// A sink with no event and no input yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A sink for a followed input ([`crate::pipeline::run_follow`]): each event, merged
    /// across the flows that saw it (`crate::gameevent::merge::LiveMerge`), goes to `out`
    /// as soon as it is final, in time order; with `keep` the events are also kept in
    /// [`EventSink::events`] (for a summary). Names learned after the event that needed them
    /// are not filled in (the line is out already).
    pub fn follow(out: EventOut, keep: bool) -> Self {
        EventSink {
            live: Some(Live {
                merge: merge::LiveMerge::new(),
                servers: HashMap::new(),
                first: None,
                out,
                keep,
            }),
            ..Self::default()
        }
    }

    /// The events the last message gave (most give none: that check is inlined).
    #[inline]
    fn take(&mut self, flow: u32) {
        if !self.scratch.is_empty() {
            self.take_some(flow);
        }
    }

    #[inline(never)]
    fn take_some(&mut self, flow: u32) {
        if let Some(live) = &mut self.live {
            for mut e in self.scratch.drain(..) {
                e.flows.push(flow);
                e.server = live.servers.get(&flow).cloned();
                e.session_time = Some(e.time - *live.first.get_or_insert(e.time));
                live.merge.push(e);
            }
            return;
        }
        self.raw.extend(self.scratch.drain(..).map(|e| (flow, e)));
    }

    /// Following: capture time reached `now`; hand out what became final.
    fn advance(&mut self, now: f64) -> io::Result<()> {
        let Some(live) = &mut self.live else {
            return Ok(());
        };
        let (out, keep, events) = (&mut live.out, live.keep, &mut self.events);
        live.merge.advance(now, &mut |e| {
            if keep {
                events.push(e.clone());
            }
            out(e)
        })
    }

    /// The index of `flow`'s extractor, made by `new` on its first message.
    fn extractor(&mut self, flow: u32, new: impl FnOnce() -> Extractor) -> usize {
        match self.last {
            Some((id, i)) if id == flow => i,
            _ => {
                let i = match self.dense.get(flow as usize) {
                    Some(&k) if k > 0 => k as usize - 1,
                    _ => self.new_or_sparse(flow, new),
                };
                self.last = Some((flow, i));
                i
            }
        }
    }

    /// The extractor of a flow without a dense slot: a new flow, or a large id.
    #[cold]
    #[inline(never)]
    fn new_or_sparse(&mut self, flow: u32, new: impl FnOnce() -> Extractor) -> usize {
        let next = self.free.last().copied().unwrap_or(self.flows.len());
        let i = *self.index.entry(flow).or_insert(next);
        if i == next {
            if i == self.flows.len() {
                self.flows.push((flow, Some(new())));
            } else {
                self.free.pop();
                self.flows[i] = (flow, Some(new()));
            }
        }
        if flow < DENSE_IDS {
            let f = flow as usize;
            if self.dense.len() <= f {
                self.dense.resize(f + 1, 0);
            }
            self.dense[f] = u32::try_from(i + 1).unwrap_or(0);
        }
        i
    }
}

impl EventSink {
    /// The events handed out since the last call, each with the flow that saw it, taken out
    /// of the current input's events: for a sink that places each event on the message that
    /// gave it (`annotate` calls this after every message it passes on), rather than the
    /// merged timeline [`Sink::finish`] makes of what is left.
    pub fn take_new(&mut self) -> Vec<(u32, GameEvent)> {
        std::mem::take(&mut self.raw)
    }

    /// Flows with an extractor held now (those with decoded messages and not ended yet).
    pub fn open(&self) -> usize {
        self.index.len()
    }

    /// The timelines of the finished inputs, one per game session: inputs that report one
    /// session (a capture and its clients' demos, say) are merged into one timeline, each
    /// event once (`crate::gameevent::merge::merge_session`); others stay apart. Each with
    /// the files it comes from, the first giving its clock.
    pub fn sessions(&self) -> Vec<(Vec<String>, Vec<GameEvent>)> {
        let mut start = 0;
        let mut inputs = Vec::new();
        for (file, end) in &self.inputs {
            inputs.push((file.clone(), self.events[start..*end].to_vec()));
            start = *end;
        }
        // A capture (its events name flows) gives the clock before a demo.
        inputs.sort_by_key(|(_, ev)| !is_capture(ev));
        let mut groups: Vec<(Vec<String>, Vec<Vec<GameEvent>>)> = Vec::new();
        for (file, ev) in inputs {
            let g = groups.iter().position(|g| {
                merge::session_offset(&g.1[0], &ev).is_some_and(|off| {
                    // Two captures run on the wall clock: of one session only when their
                    // clocks agree (two recordings of one scripted play line up otherwise).
                    !(is_capture(&g.1[0]) && is_capture(&ev)) || off.abs() <= MAX_CLOCK_SKEW_S
                })
            });
            match g {
                Some(g) => {
                    groups[g].0.push(file);
                    groups[g].1.push(ev);
                }
                None => groups.push((vec![file], vec![ev])),
            }
        }
        groups
            .into_iter()
            .map(|(files, evs)| {
                let merged = if evs.len() == 1 {
                    evs.into_iter().next().unwrap_or_default()
                } else {
                    merge::merge_session(evs)
                };
                (files, merged)
            })
            .collect()
    }

    /// A flow's decoder let it go: no message of it can follow but those of the same client
    /// back later (a new extractor, as for a new connection). Its extractor finishes now and
    /// goes: the extractors held are those of the connections live at once.
    #[cold]
    fn flow_end(&mut self, flow: u32) {
        let Some(i) = self.index.remove(&flow) else {
            return;
        };
        if let Some(slot) = self.dense.get_mut(flow as usize) {
            *slot = 0;
        }
        if self.last.is_some_and(|(id, _)| id == flow) {
            self.last = None;
        }
        if let Some(x) = self.flows.get_mut(i).and_then(|f| f.1.take()) {
            let done = self.finish_extractor(flow, x);
            self.ended.push(done);
        }
        self.free.push(i);
    }

    /// The last events of a flow's extractor into this input's events; its flow, whether it
    /// read a demo, and its warnings.
    fn finish_extractor(&mut self, flow: u32, mut x: Extractor) -> (u32, bool, Warnings) {
        x.finish(&mut self.scratch);
        self.take(flow);
        self.learned
            .extend(x.take_learned_names().into_iter().map(|l| (flow, l)));
        (flow, x.demo(), x.take_warnings())
    }
}

impl Sink for EventSink {
    fn event(&mut self, e: Event<'_>) -> io::Result<()> {
        match e {
            Event::Q3(m) => {
                // A connectionless or undecoded message gives no event and its time is
                // overwritten by the next message's: no extractor (24 KB of configstrings)
                // is made for it. Query flows and spoofed handshakes never get one.
                let gives = m.server().is_some() || m.client().is_some();
                if !gives && !self.index.contains_key(&m.flow) {
                    return Ok(());
                }
                let demo = m.file_offset.is_some();
                let i = self.extractor(m.flow, || {
                    Extractor::Q3(Box::new(q3x::Extractor::new(demo)))
                });
                if let Some(Extractor::Q3(x)) = &mut self.flows[i].1 {
                    x.message(m, &mut self.scratch);
                }
                self.take(m.flow);
            }
            Event::Qw(m) => {
                let demo = m.block.is_some();
                let i = self.extractor(m.flow, || {
                    Extractor::Qw(Box::new(qwx::Extractor::new(demo)))
                });
                if let Some(Extractor::Qw(x)) = &mut self.flows[i].1 {
                    x.message(m, &mut self.scratch);
                }
                self.take(m.flow);
            }
            Event::FlowEnd(f) => {
                self.flow_end(f.id);
                if let Some(live) = &mut self.live {
                    // A connection may resume without a new start: its server stays known.
                    if f.kind != "connection" {
                        live.servers.remove(&f.id);
                    }
                    self.learned.clear();
                    // Its warnings now: nothing of an ended flow stays to the end.
                    let ended = std::mem::take(&mut self.ended);
                    // (The input's name comes with the report, at the end: not on these.)
                    self.keep_warnings(ended, None);
                }
            }
            Event::FlowStart(f) => {
                if let Some(live) = &mut self.live {
                    live.servers.insert(f.id, f.server.to_string());
                }
            }
            Event::Clock(now) => self.advance(now)?,
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, report: &Report) -> io::Result<()> {
        if self.live.is_some() {
            return self.finish_live(report);
        }
        let servers: HashMap<u32, &str> = report
            .flows
            .iter()
            .map(|f| (f.id, f.server.as_str()))
            .collect();
        let flows = std::mem::take(&mut self.flows);
        self.free.clear();
        self.index.clear();
        self.dense.clear();
        self.last = None;
        let mut done = std::mem::take(&mut self.ended);
        // In flow order, as the merge keeps the order of events at one time.
        let mut open: Vec<(u32, Extractor)> = flows
            .into_iter()
            .filter_map(|(f, x)| Some((f, x?)))
            .collect();
        open.sort_by_key(|f| f.0);
        for (flow, x) in open {
            done.push(self.finish_extractor(flow, x));
        }
        done.sort_by_key(|d| d.0);
        let mut demo = HashMap::new();
        for (flow, is_demo, warnings) in done {
            demo.insert(flow, is_demo);
            self.warnings_total += warnings.total();
            let room = MAX_WARNINGS.saturating_sub(self.warnings.len());
            let kept = warnings.into_kept().into_iter().take(room);
            self.warnings.extend(kept.map(|w| w.file(&report.file)));
        }
        let first = self
            .raw
            .iter()
            .map(|(_, e)| e.time)
            .fold(f64::INFINITY, f64::min);
        let mut learned = Learned::default();
        for (flow, l) in self.learned.drain(..) {
            learned.add(servers.get(&flow).copied(), l);
        }
        let mut events = Vec::with_capacity(self.raw.len());
        for (flow, mut e) in self.raw.drain(..) {
            if !demo.get(&flow).copied().unwrap_or(false) {
                e.flows.push(flow);
                e.server = servers.get(&flow).map(|s| s.to_string());
                e.session_time = Some(e.time - first);
                if !learned.is_empty() {
                    learned.fill(&mut e);
                }
            }
            events.push(e);
        }
        self.events.extend(merge(events));
        self.inputs.push((report.file.clone(), self.events.len()));
        Ok(())
    }
}

impl EventSink {
    /// End of a followed input: every extractor's last events, then everything held.
    fn finish_live(&mut self, report: &Report) -> io::Result<()> {
        let flows = std::mem::take(&mut self.flows);
        self.free.clear();
        self.index.clear();
        self.dense.clear();
        self.last = None;
        let mut open: Vec<(u32, Extractor)> = flows
            .into_iter()
            .filter_map(|(f, x)| Some((f, x?)))
            .collect();
        open.sort_by_key(|f| f.0);
        let mut done = std::mem::take(&mut self.ended);
        for (flow, x) in open {
            done.push(self.finish_extractor(flow, x));
        }
        self.learned.clear();
        self.keep_warnings(done, Some(&report.file));
        self.advance(f64::INFINITY)?;
        if let Some(live) = &mut self.live {
            live.servers.clear();
            live.first = None;
        }
        self.inputs.push((report.file.clone(), self.events.len()));
        Ok(())
    }
}

impl EventSink {
    /// Ended flows' warnings into [`EventSink::warnings`], naming `file` when given.
    fn keep_warnings(&mut self, done: Vec<(u32, bool, Warnings)>, file: Option<&str>) {
        for (_, _, warnings) in done {
            self.warnings_total += warnings.total();
            let room = MAX_WARNINGS.saturating_sub(self.warnings.len());
            let kept = warnings.into_kept().into_iter().take(room);
            self.warnings.extend(kept.map(|w| match file {
                Some(f) => w.file(f),
                None => w,
            }));
        }
    }
}
