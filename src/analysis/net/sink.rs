//! The pipeline side: a [`Sink`] that feeds samples to per-connection accumulations and
//! builds the reports when the input ends. It reads only [`Event::NetSample`] (the other
//! variants are ignored) and [`Sink::finish`].
use std::io;

use super::acc::FlowAcc;
use super::report::{build, NetQuality};
use super::sample::Sample;
use crate::flow::FlowMap;
use crate::pipeline::{Event, Report, Sink};

/// Collects the network quality of every connection of one input.
#[derive(Debug, Default)]
pub struct NetSink {
    interval: f64,
    /// Keep each connection's lagometer strip (the HTML report).
    strip: bool,
    /// Widen a connection's interval so its series has at most this many entries.
    max_points: Option<usize>,
    /// Accumulations by flow id, through an index: consecutive samples are mostly of the
    /// same flow, so the last lookup is kept.
    accs: Vec<FlowAcc>,
    index: FlowMap<u32, usize>,
    last: Option<(u32, usize)>,
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
        let i = match self.last {
            Some((id, i)) if id == s.flow => i,
            _ => {
                let next = self.accs.len();
                let i = *self.index.entry(s.flow).or_insert(next);
                if i == next {
                    let acc = FlowAcc::new(s.time);
                    self.accs
                        .push(if self.strip { acc.with_strip() } else { acc });
                }
                self.last = Some((s.flow, i));
                i
            }
        };
        if let Some(acc) = self.accs.get_mut(i) {
            acc.add(s);
        }
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
        }
        self.accs.clear();
        self.index.clear();
        self.last = None;
    }
}
