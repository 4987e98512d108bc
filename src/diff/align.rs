//! Pairs the two sides' items and compares them as they arrive. Per lane (connection and
//! direction) each side's unmatched items wait in a map by sequence; an item is matched when
//! the other side brings the same sequence, and missing once the other side has gone past
//! it inside the span it covers. Items outside the other side's span (a demo that starts
//! later, a capture that ends earlier) are only counted. The number of waiting items is
//! bounded by the window: past it the oldest are decided on at once.
use std::collections::{BTreeMap, HashMap};
use std::sync::mpsc::Receiver;
use std::sync::Arc;

use serde_json::{json, Value};

use super::found::Finds;
use super::item::{Content, Feed, InputInfo, Item};
use super::{q3 as dq3, qw as dqw, DiffError, Difference, Kind, Options, Outcome, Side};
use crate::flow::Dir;

type LaneKey = (Arc<str>, Dir);

#[derive(Default)]
struct Lane {
    held: [BTreeMap<i64, Item>; 2],
    /// First and last sequence each side brought (recorder-made items aside).
    span: [Option<(i64, i64)>; 2],
}

fn ix(s: Side) -> usize {
    match s {
        Side::A => 0,
        Side::B => 1,
    }
}

/// The comparison state of one run.
pub struct Aligner {
    opts: Options,
    lanes: HashMap<LaneKey, Lane>,
    pending: [usize; 2],
    out: Outcome,
}

impl Aligner {
    pub fn new(opts: Options) -> Self {
        Aligner {
            opts,
            lanes: HashMap::new(),
            pending: [0; 2],
            out: Outcome::default(),
        }
    }

    /// Read both feeds to their ends, pulling from the side with fewer waiting items so the
    /// two advance together.
    pub fn run(&mut self, a: Receiver<Feed>, b: Receiver<Feed>) {
        let rx = [a, b];
        let mut ended = [false; 2];
        while !(ended[0] && ended[1]) {
            // Ties (nothing matchable waiting yet) go by everything waiting.
            let ma = (self.matchable(Side::A), self.pending[0]);
            let mb = (self.matchable(Side::B), self.pending[1]);
            let side = if ended[0] || (!ended[1] && mb < ma) {
                Side::B
            } else {
                Side::A
            };
            match rx[ix(side)].recv() {
                Ok(Feed::Item(it)) => self.take(side, it),
                Ok(Feed::End) | Err(_) => ended[ix(side)] = true,
            }
            while self.pending[0] + self.pending[1] > self.opts.window {
                self.evict();
            }
        }
    }

    fn take(&mut self, side: Side, it: Item) {
        let (s, o) = (ix(side), ix(side.other()));
        let key = (it.conn.clone(), it.dir);
        let lane = self.lanes.entry(key.clone()).or_default();
        let seq = it.seq;
        if let Some(other) = lane.held[o].remove(&seq) {
            self.pending[o] -= 1;
            if !it.synthetic {
                widen(&mut lane.span[s], seq);
            }
            let (a, b) = match side {
                Side::A => (it, other),
                Side::B => (other, it),
            };
            self.pair(&key, a, b);
            return;
        }
        if !it.synthetic {
            widen(&mut lane.span[s], seq);
        }
        // The other side already went past this sequence without it.
        if let Some((lo, hi)) = lane.span[o] {
            if hi > seq {
                if lo < seq && !it.synthetic {
                    let d = missing(&key, side.other(), &it);
                    self.out.push(d, self.opts.keep);
                } else {
                    self.out.uncovered += 1;
                }
                return;
            }
        }
        // This side went past the other side's older waiting items.
        let lane = self.lanes.get_mut(&key).expect("lane just used");
        let newer = lane.held[o].split_off(&seq);
        let older = std::mem::replace(&mut lane.held[o], newer);
        self.pending[o] -= older.len();
        let span = lane.span[s];
        for (k, x) in older {
            self.decide(&key, side, span, k, x);
        }
        let lane = self.lanes.get_mut(&key).expect("lane just used");
        if lane.held[s].insert(seq, it).is_none() {
            self.pending[s] += 1;
        }
    }

    /// An item of the other side that `side` lacks: missing when inside `side`'s span.
    fn decide(&mut self, key: &LaneKey, side: Side, span: Option<(i64, i64)>, k: i64, x: Item) {
        match span {
            Some((lo, hi)) if lo < k && k < hi && !x.synthetic => {
                let d = missing(key, side, &x);
                self.out.push(d, self.opts.keep);
            }
            _ => self.out.uncovered += 1,
        }
    }

    /// Items of `side` waiting in lanes the other side has brought something to: the ones a
    /// later item of the other side may still match. Items in a lane the other side has never
    /// used (a demo's missing client direction) wait for nothing and must not hold that side
    /// back when choosing which input to read next.
    fn matchable(&self, side: Side) -> usize {
        let (s, o) = (ix(side), ix(side.other()));
        let orphans: usize = self
            .lanes
            .values()
            .filter(|l| l.span[o].is_none())
            .map(|l| l.held[s].len())
            .sum();
        self.pending[s] - orphans
    }

    /// The window is full: first drop an item the other side has nothing to pair with (its
    /// lane unused there: outside the span both cover), else decide on the oldest item of the
    /// side holding the most.
    fn evict(&mut self) {
        let orphan = self.lanes.iter().find_map(|(k, l)| {
            (0..2)
                .find(|&s| l.span[1 - s].is_none() && !l.held[s].is_empty())
                .map(|s| (k.clone(), s))
        });
        if let Some((key, s)) = orphan {
            let lane = self.lanes.get_mut(&key).expect("lane found");
            if lane.held[s].pop_first().is_some() {
                self.pending[s] -= 1;
                self.out.uncovered += 1;
                return;
            }
        }
        let side = if self.pending[0] >= self.pending[1] {
            Side::A
        } else {
            Side::B
        };
        let s = ix(side);
        let Some(key) = self
            .lanes
            .iter()
            .max_by_key(|(_, l)| l.held[s].len())
            .map(|(k, _)| k.clone())
        else {
            return;
        };
        let lane = self.lanes.get_mut(&key).expect("lane found");
        let Some((k, x)) = lane.held[s].pop_first() else {
            self.pending[s] = 0;
            return;
        };
        self.pending[s] -= 1;
        let span = lane.span[ix(side.other())].map(|(lo, _)| (lo, i64::MAX));
        self.decide(&key, side.other(), span, k, x);
    }

    fn pair(&mut self, key: &LaneKey, a: Item, b: Item) {
        let mut f = Finds::default();
        let strict = self.opts.strict;
        match (&a.content, &b.content) {
            (Content::Q3Server(x), Content::Q3Server(y)) => {
                if a.synthetic || b.synthetic {
                    // A recorder's gamestate record meets a real message: compare only two
                    // gamestates.
                    if x.gamestate.is_none() || y.gamestate.is_none() {
                        return;
                    }
                }
                dq3::compare_server(x, y, strict, &mut f)
            }
            (Content::Q3Client(x), Content::Q3Client(y)) => {
                dq3::compare_client(x, y, strict, &mut f)
            }
            // A recorder-made block never pairs with a real message.
            (Content::Qw(_), Content::Qw(_)) if a.synthetic != b.synthetic => return,
            (Content::Qw(x), Content::Qw(y)) => dqw::compare(x, y, strict, &mut f),
            _ => f.changed("message", summary(&a.content), summary(&b.content)),
        }
        self.out.compared += 1;
        let game_time = a.game_time.or(b.game_time);
        for x in f.list {
            let d = Difference {
                kind: x.kind,
                side: x.side,
                conn: key.0.to_string(),
                dir: key.1,
                seq: a.seq,
                game_time,
                what: x.what,
                a: x.a,
                b: x.b,
            };
            self.out.push(d, self.opts.keep);
        }
    }

    /// Both inputs ended: decide on everything still waiting.
    pub fn finish(mut self, a: InputInfo, b: InputInfo) -> Result<Outcome, DiffError> {
        let keys: Vec<LaneKey> = self.lanes.keys().cloned().collect();
        for key in keys {
            let lane = self.lanes.get_mut(&key).expect("lane listed");
            let held = [
                std::mem::take(&mut lane.held[0]),
                std::mem::take(&mut lane.held[1]),
            ];
            let spans = lane.span;
            for (side, items) in [Side::A, Side::B].into_iter().zip(held) {
                let other = side.other();
                for (k, x) in items {
                    self.decide(&key, other, spans[ix(other)], k, x);
                }
            }
        }
        if !a.demo && !b.demo {
            for (side, list, other) in [
                (Side::B, &a.connections, &b.connections),
                (Side::A, &b.connections, &a.connections),
            ] {
                for c in list.iter().filter(|c| !other.contains(c)) {
                    let v = Some(Value::from(c.as_str()));
                    let (va, vb) = if side == Side::B {
                        (v, None)
                    } else {
                        (None, v)
                    };
                    let d = Difference {
                        kind: Kind::Missing,
                        side: Some(side),
                        conn: c.clone(),
                        dir: Dir::S2c,
                        seq: 0,
                        game_time: None,
                        what: "connection".into(),
                        a: va,
                        b: vb,
                    };
                    self.out.push(d, self.opts.keep);
                }
            }
        }
        self.out.connections = [a.connections, b.connections];
        if self.out.compared == 0 && self.out.total == 0 {
            return Err(DiffError::Unusable(
                "the inputs have no message in common (different sessions, or nothing decoded)"
                    .into(),
            ));
        }
        self.out.same = self.out.total == 0;
        Ok(self.out)
    }
}

fn widen(span: &mut Option<(i64, i64)>, seq: i64) {
    *span = Some(match *span {
        None => (seq, seq),
        Some((lo, hi)) => (lo.min(seq), hi.max(seq)),
    });
}

/// A whole message the `lacking` side does not have.
fn missing(key: &LaneKey, lacking: Side, it: &Item) -> Difference {
    let v = Some(summary(&it.content));
    let (a, b) = match lacking {
        Side::A => (None, v),
        Side::B => (v, None),
    };
    Difference {
        kind: Kind::Missing,
        side: Some(lacking),
        conn: key.0.to_string(),
        dir: key.1,
        seq: it.seq,
        game_time: it.game_time,
        what: "message".into(),
        a,
        b,
    }
}

/// A short description of a message: its ops.
fn summary(c: &Content) -> Value {
    match c {
        Content::Q3Server(s) => json!(s.ops),
        Content::Q3Client(c) => json!(c.ops),
        Content::Qw(m) => json!(m.ops.iter().map(|o| o.0).collect::<Vec<_>>()),
    }
}
