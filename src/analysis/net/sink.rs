//! The pipeline side: a [`Sink`] that feeds samples to per-connection accumulations and
//! builds the reports when the input ends. Only [`Sink::net_sample`] and [`Sink::finish`]
//! are used, so re-pointing it to another event type is a matter of this adapter.
use std::io;

use super::acc::FlowAcc;
use super::report::{build, NetQuality};
use super::sample::Sample;
use crate::flow::FlowMap;
use crate::pipeline::{Report, Sink};

/// Collects the network quality of every connection of one input.
#[derive(Debug, Default)]
pub struct NetSink {
    interval: f64,
    flows: FlowMap<u32, FlowAcc>,
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
}

impl Sink for NetSink {
    fn net_sample(&mut self, s: &Sample) -> io::Result<()> {
        if s.time.is_finite() {
            self.flows
                .entry(s.flow)
                .or_insert_with(|| FlowAcc::new(s.time))
                .add(s);
        }
        Ok(())
    }

    fn finish(&mut self, r: &Report) -> io::Result<()> {
        for f in r.flows.iter().filter(|f| f.kind == "connection") {
            if let Some(mut acc) = self.flows.remove(&f.id) {
                acc.finish();
                self.reports.push(build(&acc, f, self.interval));
            }
        }
        self.flows.clear();
        Ok(())
    }
}
