//! The pass's sink for `cheats`: one `Flow` per connection (or demo), answered when the
//! connection ends or the input does.
use std::collections::HashMap;
use std::io;

use super::q3::Flow;
use super::PlayerCheats;
use crate::event::Event;
use crate::pipeline::{Report, Sink};

/// Collects every player's signals; [`CheatsSink::players`] holds the answers.
#[derive(Debug, Default)]
pub struct CheatsSink {
    flows: HashMap<u32, (Flow, bool)>,
    ended: Vec<(u32, Flow, bool)>,
    /// The answers, per input in the order read, each input's by flow id.
    pub players: Vec<PlayerCheats>,
    /// QuakeWorld connections and demos seen: their signals are not built yet.
    pub quakeworld: u64,
    qw_flows: std::collections::HashSet<u32>,
}

impl CheatsSink {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Sink for CheatsSink {
    fn event(&mut self, e: Event<'_>) -> io::Result<()> {
        match e {
            Event::Q3(m) => {
                let demo = m.file_offset.is_some();
                let (f, _) = self
                    .flows
                    .entry(m.flow)
                    .or_insert_with(|| (Flow::default(), demo));
                f.message(m, demo);
            }
            Event::Qw(m) => {
                self.qw_flows.insert(m.flow);
            }
            Event::FlowEnd(s) => {
                if let Some((f, demo)) = self.flows.remove(&s.id) {
                    self.ended.push((s.id, f, demo));
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, report: &Report) -> io::Result<()> {
        self.quakeworld += self.qw_flows.len() as u64;
        self.qw_flows.clear();
        let mut all: Vec<(u32, Flow, bool)> = std::mem::take(&mut self.ended);
        all.extend(self.flows.drain().map(|(id, (f, d))| (id, f, d)));
        all.sort_by_key(|(id, _, _)| *id);
        for (id, mut f, demo) in all {
            if f.track.views == 0 {
                continue;
            }
            let player = f.player();
            let flow = (!demo).then_some(id);
            let track = std::mem::take(&mut f.track);
            let name = |n: i32| f.name(n);
            self.players
                .push(track.finish(player, flow, report.file.clone(), &name));
        }
        Ok(())
    }
}
