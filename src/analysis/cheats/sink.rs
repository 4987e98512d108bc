//! The pass's sink for `cheats`: one `Flow` per Quake 3 connection (or demo), one `Demo`
//! per QuakeWorld .mvd (every player of it), answered when the connection ends or the
//! input does.
use std::collections::HashMap;
use std::io;

use super::q3::Flow;
use super::qw::Demo;
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
    /// QuakeWorld connections and demos without view angles to judge (captures, .qwd).
    pub quakeworld: u64,
    qw: HashMap<u32, Demo>,
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
            Event::Qw(m) => self.qw.entry(m.flow).or_default().message(m),
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
        let mut qw: Vec<(u32, Demo)> = self.qw.drain().collect();
        qw.sort_by_key(|(id, _)| *id);
        for (_, mut d) in qw {
            let before = self.players.len();
            for slot in 0..d.tracks.len() {
                let track = std::mem::take(&mut d.tracks[slot]);
                if track.views == 0 {
                    continue;
                }
                let name = |n: i32| d.name(n);
                let player = d.name(slot as i32);
                self.players
                    .push(track.finish(player, None, report.file.clone(), &name));
            }
            if self.players.len() == before {
                self.quakeworld += 1;
            }
        }
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
