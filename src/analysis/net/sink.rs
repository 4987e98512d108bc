//! The pipeline side: a [`Sink`] that feeds samples to per-connection accumulations and
//! builds the reports when the input ends. It reads only [`Event::NetSample`] (the other
//! variants are ignored) and [`Sink::finish`].
use std::io;

use super::acc::FlowAcc;
use super::report::{build, NetQuality};
use super::sample::Sample;
use crate::flow::FlowMap;
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
    /// Accumulations by flow id, through an index.
    accs: Vec<FlowAcc>,
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

    /// At most `n` entries per series: long connections get a wider interval (whole seconds).
    pub fn with_max_points(mut self, n: usize) -> Self {
        self.max_points = Some(n.max(1));
        self
    }
}

impl Sink for NetSink {
    fn event(&mut self, e: Event<'_>) -> io::Result<()> {
        let Event::NetSample(s) = e else {
            return Ok(());
        };
        self.sample(s);
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
        let next = self.accs.len();
        let i = *self.index.entry(s.flow).or_insert(next);
        if i == next {
            let acc = FlowAcc::new(s.time);
            self.accs
                .push(if self.strip { acc.with_strip() } else { acc });
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

    /// End of one input: a report per connection of `r` that had samples.
    pub fn finish_report(&mut self, r: &Report) {
        for f in r.flows.iter().filter(|f| f.kind == "connection") {
            let Some(acc) = self.index.get(&f.id).and_then(|&i| self.accs.get_mut(i)) else {
                continue;
            };
            acc.finish();
            let span = acc.t_last - acc.t0;
            let interval = match self.max_points {
                Some(n) if span.is_finite() => self.interval.max((span / n as f64).ceil()),
                _ => self.interval,
            };
            self.reports.push(build(acc, f, interval));
            // Its report holds all that is shown: the accumulation goes now, not with the
            // others at the end (the reports and the accumulations of every connection of a
            // large capture were in memory at once).
            *acc = FlowAcc::default();
        }
        self.accs.clear();
        self.index.clear();
        self.dense.clear();
    }
}
