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
    qw: HashMap<u32, Demo>,
    /// Answers of connections that ended before the input did (their file is set at the
    /// input's end): a long capture keeps the state of the connections live at once only.
    ended: Vec<PlayerCheats>,
    /// The answers, per input in the order read, each input's in flow order.
    pub players: Vec<PlayerCheats>,
    /// QuakeWorld connections and demos without view angles to judge (captures, .qwd).
    pub quakeworld: u64,
}

impl CheatsSink {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// The answers of Quake 3 connection (or demo) `id`: none when it showed no snapshot.
    fn q3_answer(id: u32, mut f: Flow, demo: bool, out: &mut Vec<PlayerCheats>) {
        if f.track.views == 0 {
            return;
        }
        let player = f.player();
        let track = std::mem::take(&mut f.track);
        let name = |n: i32| f.name(n);
        out.push(track.finish(player, (!demo).then_some(id), String::new(), &name));
    }

    /// The answers of a QuakeWorld flow: one per player with views (an .mvd), or the
    /// connection's player by his commands (a capture, flow `id`); false when a flow of game
    /// messages (not only status queries) gave none.
    fn qw_answers(id: u32, mut d: Demo, out: &mut Vec<PlayerCheats>) -> bool {
        let before = out.len();
        let game = d.game;
        if d.conn.msec_judged() {
            let track = std::mem::take(&mut d.conn);
            let player = d.me.map_or("-".to_string(), |n| d.name(n as i32));
            let name = |n: i32| d.name(n);
            out.push(track.finish(player, Some(id), String::new(), &name));
        }
        for slot in 0..d.tracks.len() {
            let track = std::mem::take(&mut d.tracks[slot]);
            if track.views == 0 {
                continue;
            }
            let name = |n: i32| d.name(n);
            let player = d.name(slot as i32);
            out.push(track.finish(player, None, String::new(), &name));
        }
        out.len() > before || !game
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
                    Self::q3_answer(s.id, f, demo, &mut self.ended);
                }
                if let Some(d) = self.qw.remove(&s.id) {
                    if !Self::qw_answers(s.id, d, &mut self.ended) {
                        self.quakeworld += 1;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, report: &Report) -> io::Result<()> {
        let mut answers = std::mem::take(&mut self.ended);
        let mut qw: Vec<(u32, Demo)> = self.qw.drain().collect();
        qw.sort_by_key(|(id, _)| *id);
        for (id, d) in qw {
            if !Self::qw_answers(id, d, &mut answers) {
                self.quakeworld += 1;
            }
        }
        let mut q3: Vec<(u32, (Flow, bool))> = self.flows.drain().collect();
        q3.sort_by_key(|(id, _)| *id);
        for (id, (f, demo)) in q3 {
            Self::q3_answer(id, f, demo, &mut answers);
        }
        answers.sort_by_key(|a| a.flow);
        for mut a in answers {
            a.file = report.file.clone();
            self.players.push(a);
        }
        Ok(())
    }
}
