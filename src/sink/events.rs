//! The game-events sink: feeds each flow's decoded messages to its game's extractor, then at
//! the end of the input merges the flows' events into one timeline (see
//! [`crate::gameevent::merge`]). Written once for every game; only [`EventSink::q3_message`]
//! knows Quake 3 exists (the adapter to re-point at the pipeline's unified event type).
use std::collections::HashMap;
use std::io;

use crate::gameevent::{merge::merge, GameEvent};
use crate::pipeline::{Report, Sink};
use crate::q3;

/// Collects game events over one or more inputs.
pub struct EventSink {
    demo: bool,
    q3: HashMap<u32, q3::events::Extractor>,
    raw: Vec<GameEvent>,
    scratch: Vec<GameEvent>,
    /// Merged events of every finished input, in time order per input.
    pub events: Vec<GameEvent>,
    /// Problems found while extracting (malformed events or configstrings, unknown mods).
    pub warnings: Vec<String>,
}

impl EventSink {
    /// `demo`: the inputs are demo files (no flows, times from the demo's clock).
    pub fn new(demo: bool) -> Self {
        EventSink {
            demo,
            q3: HashMap::new(),
            raw: Vec::new(),
            scratch: Vec::new(),
            events: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// Start the next input (captures and demos may alternate on one command line).
    pub fn set_demo(&mut self, demo: bool) {
        self.demo = demo;
    }

    fn take(&mut self, flow: u32) {
        for mut e in self.scratch.drain(..) {
            if !self.demo {
                e.flows.push(flow);
            }
            self.raw.push(e);
        }
    }
}

impl Sink for EventSink {
    fn q3_message(&mut self, m: &q3::message::Message) -> io::Result<()> {
        let demo = self.demo;
        let ex = self
            .q3
            .entry(m.flow)
            .or_insert_with(|| q3::events::Extractor::new(demo));
        ex.message(m, &mut self.scratch);
        self.take(m.flow);
        Ok(())
    }

    fn finish(&mut self, report: &Report) -> io::Result<()> {
        let servers: HashMap<u32, &str> = report
            .flows
            .iter()
            .map(|f| (f.id, f.server.as_str()))
            .collect();
        let mut flows: Vec<(u32, q3::events::Extractor)> = self.q3.drain().collect();
        flows.sort_by_key(|f| f.0);
        for (flow, mut ex) in flows {
            ex.finish(&mut self.scratch);
            self.take(flow);
            for w in ex.warnings {
                self.warnings
                    .push(format!("{}: flow {flow}: {w}", report.file));
            }
        }
        let first = self
            .raw
            .iter()
            .map(|e| e.time)
            .fold(f64::INFINITY, f64::min);
        for e in &mut self.raw {
            if !self.demo {
                e.server = e
                    .flows
                    .first()
                    .and_then(|f| servers.get(f))
                    .map(|s| s.to_string());
                e.session_time = Some(e.time - first);
            }
        }
        self.events.extend(merge(std::mem::take(&mut self.raw)));
        Ok(())
    }
}
