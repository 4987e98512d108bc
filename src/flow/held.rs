//! Packets a tracker holds for a candidate connection seen mid-session until it is confirmed
//! (then they are replayed through the new flow, in order), within one byte budget per
//! tracker so that hostile captures cannot grow memory. Both games' trackers use it.
use std::net::SocketAddr;

use super::Dir;
use crate::net::Datagram;

/// Bytes all candidates of one tracker hold together at most (past it they hold nothing
/// more: decoding starts later, memory stays bounded).
pub const HELD_BYTES_MAX: usize = 1 << 22;

/// A packet held by a candidate.
#[derive(Debug)]
struct Held {
    dir: Dir,
    frame: u64,
    ts_ns: i64,
    src: SocketAddr,
    dst: SocketAddr,
    payload: Vec<u8>,
}

/// The packets one candidate holds, oldest first.
#[derive(Debug, Default)]
pub struct HeldPackets(Vec<Held>);

impl HeldPackets {
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Frame number of the first packet held.
    pub fn first_frame(&self) -> Option<u64> {
        self.0.first().map(|p| p.frame)
    }

    /// The held packets in order, as datagrams with their direction.
    pub fn datagrams(&self) -> impl Iterator<Item = (Dir, Datagram<'_>)> {
        self.0.iter().map(|p| {
            let d = Datagram {
                frame: p.frame,
                ts_ns: p.ts_ns,
                src: p.src,
                dst: p.dst,
                payload: &p.payload,
            };
            (p.dir, d)
        })
    }

    fn bytes(&self) -> usize {
        self.0.iter().map(|p| p.payload.len()).sum()
    }
}

/// The bytes held by all candidates of one tracker.
#[derive(Debug, Default)]
pub struct HoldBudget {
    bytes: usize,
}

impl HoldBudget {
    /// Keep a copy of `d` in `held` when it holds fewer than `room` packets and the budget
    /// has room for it.
    pub fn hold(&mut self, held: &mut HeldPackets, room: usize, dir: Dir, d: &Datagram<'_>) {
        if held.len() < room && self.bytes + d.payload.len() <= HELD_BYTES_MAX {
            self.bytes += d.payload.len();
            held.0.push(Held {
                dir,
                frame: d.frame,
                ts_ns: d.ts_ns,
                src: d.src,
                dst: d.dst,
                payload: d.payload.to_vec(),
            });
        }
    }

    /// A candidate's packets leave the budget (it was dropped, or confirmed and replayed).
    pub fn release(&mut self, held: &HeldPackets) {
        self.bytes = self.bytes.saturating_sub(held.bytes());
    }

    /// Every candidate was dropped.
    pub fn clear(&mut self) {
        self.bytes = 0;
    }

    /// Bytes held now.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dg(payload: &[u8]) -> Datagram<'_> {
        Datagram {
            frame: 7,
            ts_ns: 1,
            src: "127.0.0.1:1".parse().unwrap(),
            dst: "127.0.0.1:2".parse().unwrap(),
            payload,
        }
    }

    #[test]
    fn holds_within_room_and_budget_and_replays_in_order() {
        let mut budget = HoldBudget::default();
        let mut a = HeldPackets::default();
        budget.hold(&mut a, 2, Dir::C2s, &dg(b"one"));
        budget.hold(&mut a, 2, Dir::S2c, &dg(b"two!"));
        budget.hold(&mut a, 2, Dir::C2s, &dg(b"three"));
        assert_eq!((a.len(), budget.bytes()), (2, 7));
        let got: Vec<_> = a
            .datagrams()
            .map(|(d, g)| (d, g.payload.to_vec()))
            .collect();
        assert_eq!(
            got,
            vec![(Dir::C2s, b"one".to_vec()), (Dir::S2c, b"two!".to_vec())]
        );
        let big = vec![0u8; HELD_BYTES_MAX];
        let mut b = HeldPackets::default();
        budget.hold(&mut b, 10, Dir::C2s, &dg(&big));
        assert!(b.is_empty(), "past the budget nothing is held");
        budget.release(&a);
        assert_eq!(budget.bytes(), 0);
    }
}
