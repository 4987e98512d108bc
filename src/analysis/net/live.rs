//! Network quality of a followed input (issue 42), as lines written when they become final:
//! a connection's start, one entry of its series every interval, a lag event when it begins
//! (`lag_start`) and when it ends (`lag`), and at its end its whole report (`end`), the
//! object of `quakecap net --json`. The accumulation is [`NetSink`]'s; a partial report is
//! built from it at most every quarter second of capture time.
//!
//! Lag events are found as the whole-capture analysis finds them, on the connection so far:
//! the ping baseline is the median up to now, so a `lag` line can differ from the batch
//! report's event in `baseline` (and, near the threshold, in being found at all); the `end`
//! line's `lag_events` are those of the connection as a whole.
use std::collections::HashMap;
use std::io;

use serde_json::{json, Value};

use super::report::{build, LagEvent, NetQuality};
use super::sink::NetSink;
use crate::flow::FlowSummary;
use crate::pipeline::{Event, Report, Sink};

/// An entry of the series is final this long after its end (capture time, s): the
/// acknowledgements that time its packets have come.
const SETTLE_S: f64 = 1.0;
/// A lag event is over when capture time is this far past its end: the bins after it are
/// whole and unmarked (a single hole inside a run is bridged).
const LAG_OVER_S: f64 = 1.5;
/// A connection's first seconds set its baseline and settle its loss method (vantage): lag
/// events starting in them are told at its end, from the whole report.
const WARMUP_S: f64 = 10.0;
/// Partial reports are built at most this often (capture time, s).
const EVERY_S: f64 = 0.25;

/// Where each line goes: a JSON object with `type` (`"start"`, `"interval"`, `"lag_start"`,
/// `"lag"`, `"end"`).
pub type LineOut = Box<dyn FnMut(&Value) -> io::Result<()>>;

/// What is told so far of one connection.
#[derive(Debug, Default)]
struct Told {
    game: &'static str,
    server: String,
    client: String,
    started: bool,
    /// Entries of the series written.
    intervals: usize,
    /// Lag events whose start was written, and those written whole: (kind, dir, start ms).
    begun: Vec<(&'static str, Option<&'static str>, i64)>,
    ended: Vec<(&'static str, Option<&'static str>, i64)>,
    /// Capture time of the last partial report.
    built: f64,
}

/// The `net` analysis of a followed input ([`crate::pipeline::run_follow`]).
pub struct LiveNet {
    ns: NetSink,
    interval: f64,
    flows: HashMap<u32, Told>,
    out: LineOut,
    /// Also a `status` line per connection at each partial report (`quakecap top`).
    status: bool,
}

fn lag_key(e: &LagEvent) -> (&'static str, Option<&'static str>, i64) {
    (
        e.kind,
        e.dir.map(dir_name),
        (e.start * 1000.0).round() as i64,
    )
}

fn dir_name(d: crate::flow::Dir) -> &'static str {
    match d {
        crate::flow::Dir::C2s => "c2s",
        crate::flow::Dir::S2c => "s2c",
    }
}

/// `v` (an object) with `type` and the connection's `flow` set.
fn tagged(kind: &str, flow: u32, v: impl serde::Serialize) -> io::Result<Value> {
    let mut v = serde_json::to_value(v).map_err(io::Error::other)?;
    if let Value::Object(m) = &mut v {
        m.insert("type".into(), json!(kind));
        m.insert("flow".into(), json!(flow));
    }
    Ok(v)
}

/// The line saying a lag event began.
fn lag_start(flow: u32, e: &LagEvent) -> io::Result<Value> {
    tagged(
        "lag_start",
        flow,
        json!({"kind": e.kind, "start": e.start, "dir": e.dir.map(dir_name)}),
    )
}

impl LiveNet {
    /// Lines to `out`; `interval`: seconds per entry of the series.
    pub fn new(interval: f64, out: LineOut) -> Self {
        LiveNet {
            ns: NetSink::new(interval),
            interval,
            flows: HashMap::new(),
            out,
            status: false,
        }
    }

    /// Also write, at each partial report, a `status` line per connection: the report so
    /// far without its series and lag events (`ping`, `loss`, `jitter`, `snapshot_rate`,
    /// `fps`, ...) and `lagging` (the kind of a lag event going on, or null), for a live
    /// view.
    pub fn with_status(mut self) -> Self {
        self.status = true;
        self
    }

    /// Connections followed now.
    pub fn open(&self) -> usize {
        self.ns.open()
    }

    fn summary(flow: u32, t: &Told) -> FlowSummary {
        FlowSummary {
            id: flow,
            game: t.game,
            kind: "connection",
            server: t.server.clone(),
            client_ip: t.client.clone(),
            ..Default::default()
        }
    }

    /// Capture time reached `now`: each connection's final entries and lag events.
    fn advance(&mut self, now: f64) -> io::Result<()> {
        let mut lines = Vec::new();
        for (flow, acc) in self.ns.open_accs() {
            let t = self.flows.entry(flow).or_default();
            if !t.started {
                t.started = true;
                lines.push(tagged(
                    "start",
                    flow,
                    json!({"game": t.game, "server": t.server, "client": t.client,
                           "time": acc.t0}),
                )?);
            }
            if now - t.built < EVERY_S {
                continue;
            }
            t.built = now;
            let mut q = build(acc, &Self::summary(flow, t), self.interval);
            for e in q.series.iter().skip(t.intervals) {
                if e.start + q.interval + SETTLE_S > now {
                    break;
                }
                t.intervals += 1;
                lines.push(tagged("interval", flow, e)?);
            }
            for e in &q.lag_events {
                let k = lag_key(e);
                if t.ended.contains(&k) || e.start < acc.t0 + WARMUP_S {
                    continue;
                }
                if !t.begun.contains(&k) {
                    t.begun.push(k);
                    lines.push(lag_start(flow, e)?);
                }
                if e.end + LAG_OVER_S <= now {
                    t.ended.push(k);
                    t.begun.retain(|b| *b != k);
                    lines.push(tagged("lag", flow, e)?);
                }
            }
            if self.status {
                let lagging = q
                    .lag_events
                    .iter()
                    .find(|e| e.end + LAG_OVER_S > now)
                    .map(|e| e.kind);
                q.series = Vec::new();
                q.lag_events = Vec::new();
                let mut v = tagged("status", flow, &q)?;
                v["lagging"] = json!(lagging);
                lines.push(v);
            }
        }
        lines.iter().try_for_each(|l| (self.out)(l))
    }

    /// The reports [`NetSink`] finished: their lag events not yet told, then the report.
    fn ended(&mut self) -> io::Result<()> {
        let reports: Vec<NetQuality> = std::mem::take(&mut self.ns.reports);
        for q in reports {
            let mut t = self.flows.remove(&q.flow).unwrap_or_default();
            for e in &q.lag_events {
                let k = lag_key(e);
                if !t.ended.contains(&k) {
                    t.ended.push(k);
                    if !t.begun.contains(&k) {
                        (self.out)(&lag_start(q.flow, e)?)?;
                    }
                    (self.out)(&tagged("lag", q.flow, e)?)?;
                }
            }
            (self.out)(&tagged("end", q.flow, &q)?)?;
        }
        Ok(())
    }
}

impl Sink for LiveNet {
    fn event(&mut self, e: Event<'_>) -> io::Result<()> {
        match e {
            Event::FlowStart(f) => {
                let t = self.flows.entry(f.id).or_default();
                t.game = f.game;
                t.server = f.server.to_string();
                t.client = f.client.to_string();
            }
            Event::FlowEnd(f) => {
                self.ns.event(e)?;
                if f.kind == "connection" {
                    self.ended()?;
                }
                // A query flow never had samples: what was told of it goes.
                if self.ns.open_accs().all(|(id, _)| id != f.id) {
                    self.flows.remove(&f.id);
                }
            }
            Event::Clock(now) => self.advance(now)?,
            _ => self.ns.event(e)?,
        }
        Ok(())
    }

    fn finish(&mut self, r: &Report) -> io::Result<()> {
        self.ns.finish_report(r);
        self.ended()?;
        self.flows.clear();
        Ok(())
    }
}
