//! The pipeline side: a [`Sink`] that feeds samples to per-connection accumulations and
//! builds each connection's report when the connection ends ([`Event::FlowEnd`]) or the
//! input does ([`Sink::finish`]): the accumulations held are those of the connections live
//! at once, not every connection of a long capture. It reads only [`Event::NetSample`] and
//! [`Event::FlowEnd`] (the other variants are ignored).
use std::io;

use super::acc::FlowAcc;
use super::report::{build, NetQuality};
use super::sample::Sample;
use crate::flow::{FlowMap, FlowSummary};
use crate::pipeline::{Event, Report, Sink};

/// Flow ids below this have a slot in [`NetSink`]'s dense index (256 KB at most).
const DENSE_IDS: u32 = 1 << 16;

/// Collects the network quality of every connection of one input.
#[derive(Debug, Default)]
pub struct NetSink {
    interval: f64,
    /// Keep each connection's lagometer strip (the HTML report).
    strip: bool,
    /// Widen a connection's interval so its series has at most this many entries.
    max_points: Option<usize>,
    /// Keep each report's per-interval series (off: the table of `quakecap net` alone).
    no_series: bool,
    /// Accumulations by flow id, through an index.
    accs: Vec<FlowAcc>,
    /// Slots of `accs` whose connection ended, for the next new one.
    free: Vec<usize>,
    /// Where this input's reports start in `reports`.
    input_start: usize,
    index: FlowMap<u32, usize>,
    /// The same index for the small flow ids (the flow table numbers flows from 1, so a
    /// capture's ids are small and dense): accumulation + 1 by id, 0 for none. Samples of
    /// many connections interleave, so a lookup per sample is the common case, and a slot is
    /// cheaper than hashing. Ids from [`DENSE_IDS`] on use the map alone.
    dense: Vec<u32>,
    /// The reports of the inputs finished so far.
    pub reports: Vec<NetQuality>,
}

impl NetSink {
    /// `interval`: seconds per entry of each connection's series.
    pub fn new(interval: f64) -> Self {
        NetSink {
            interval,
            ..Default::default()
        }
    }

    /// Also keep each connection's lagometer strip (`NetQuality::strip`).
    pub fn with_strip(mut self) -> Self {
        self.strip = true;
        self
    }

    /// Drop each report's per-interval series (a table needs the summary and lag events).
    pub fn without_series(mut self) -> Self {
        self.no_series = true;
        self
    }

    /// At most `n` entries per series: long connections get a wider interval (whole seconds).
    pub fn with_max_points(mut self, n: usize) -> Self {
        self.max_points = Some(n.max(1));
        self
    }
}

impl Sink for NetSink {
    fn event(&mut self, e: Event<'_>) -> io::Result<()> {
        match e {
            Event::NetSample(s) => self.sample(s),
            Event::FlowEnd(f) => self.flow_end(f),
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, r: &Report) -> io::Result<()> {
        self.finish_report(r);
        Ok(())
    }
}

impl NetSink {
    /// One sample into its connection's accumulation.
    pub fn sample(&mut self, s: &Sample) {
        if !s.time.is_finite() {
            return;
        }
        let i = match self.dense.get(s.flow as usize) {
            Some(&k) if k > 0 => k as usize - 1,
            _ => self.new_or_sparse(s),
        };
        if let Some(acc) = self.accs.get_mut(i) {
            acc.add(s);
        }
    }

    /// The accumulation of a flow without a dense slot: a new flow, or a large id.
    #[cold]
    #[inline(never)]
    fn new_or_sparse(&mut self, s: &Sample) -> usize {
        let (next, reused) = match self.free.last() {
            Some(&i) => (i, true),
            None => (self.accs.len(), false),
        };
        let i = *self.index.entry(s.flow).or_insert(next);
        if i == next {
            let acc = FlowAcc::new(s.time);
            let acc = if self.strip { acc.with_strip() } else { acc };
            if reused {
                self.free.pop();
                self.accs[i] = acc;
            } else {
                self.accs.push(acc);
            }
        }
        if s.flow < DENSE_IDS {
            let f = s.flow as usize;
            if self.dense.len() <= f {
                self.dense.resize(f + 1, 0);
            }
            self.dense[f] = u32::try_from(i + 1).unwrap_or(0);
        }
        i
    }

    /// The connections with an accumulation held now, by flow id (for a follow's partial
    /// reports).
    pub(crate) fn open_accs(&self) -> impl Iterator<Item = (u32, &FlowAcc)> {
        self.index
            .iter()
            .filter_map(|(&flow, &i)| Some((flow, self.accs.get(i)?)))
    }

    /// Connections with an accumulation held now (those with samples and not ended yet).
    pub fn open(&self) -> usize {
        self.index.len()
    }

    /// A connection's decoder let it go: its report now, its accumulation freed. Samples
    /// that come later for the same flow (it resumed without a new handshake) start a new
    /// accumulation, reported apart.
    #[cold]
    fn flow_end(&mut self, f: &FlowSummary) {
        if f.kind != "connection" {
            return;
        }
        let Some(i) = self.index.remove(&f.id) else {
            return;
        };
        if let Some(slot) = self.dense.get_mut(f.id as usize) {
            *slot = 0;
        }
        self.report_of(i, f);
        self.free.push(i);
    }

    /// The report of the accumulation in slot `i`, for flow `f`; the accumulation goes now
    /// (the reports and the accumulations of every connection of a large capture were in
    /// memory at once).
    fn report_of(&mut self, i: usize, f: &FlowSummary) {
        let Some(acc) = self.accs.get_mut(i) else {
            return;
        };
        acc.finish();
        let span = acc.t_last - acc.t0;
        let interval = match self.max_points {
            Some(n) if span.is_finite() => self.interval.max((span / n as f64).ceil()),
            _ => self.interval,
        };
        let mut q = build(acc, f, interval);
        if self.no_series {
            q.series = Vec::new();
        }
        self.reports.push(q);
        *acc = FlowAcc::default();
    }

    /// End of one input: a report per connection of `r` that had samples and is still
    /// open, then this input's reports in flow order (a flow that resumed after its end
    /// has one per stretch, earliest first).
    pub fn finish_report(&mut self, r: &Report) {
        for f in r.flows.iter().filter(|f| f.kind == "connection") {
            if let Some(i) = self.index.get(&f.id).copied() {
                self.report_of(i, f);
            }
        }
        self.reports[self.input_start..].sort_by(|a, b| {
            (a.flow, a.first_time)
                .partial_cmp(&(b.flow, b.first_time))
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        self.input_start = self.reports.len();
        self.accs.clear();
        self.free.clear();
        self.index.clear();
        self.dense.clear();
    }
}
