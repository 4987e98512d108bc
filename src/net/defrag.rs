//! IP fragment reassembly (IPv4, and IPv6 Fragment headers with the same logic).
//!
//! Bounded: at most [`MAX_PENDING`] datagrams in progress (the oldest is dropped to make
//! room), at most [`MAX_DATAGRAM`] bytes each, and a datagram still incomplete
//! [`EXPIRE_NS`] of capture time after its first fragment is dropped. Each fragment costs
//! the same whatever is pending: a flood of first fragments that never complete (a classic
//! attack) must not make every packet walk the 1,024 datagrams held.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

/// Most datagrams in reassembly at once; past it the oldest is dropped to make room.
pub const MAX_PENDING: usize = 1024;
pub(crate) const MAX_DATAGRAM: usize = 65_535;
/// Capture time in ns (30 s) after its first fragment past which an incomplete datagram is
/// dropped.
pub const EXPIRE_NS: i64 = 30_000_000_000;
/// [`Defragmenter::order`] is compacted past this many times [`MAX_PENDING`] items: a pass
/// over it every few thousand datagrams at most.
const ORDER_SLACK: usize = 4;

/// Identifies the fragments of one datagram (RFC 791: source, destination, protocol, id).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct FragKey {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub proto: u8,
    pub id: u32,
}

/// One fragment as seen in a packet.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fragment<'a> {
    pub offset: usize,
    pub more: bool,
    pub data: &'a [u8],
}

/// A datagram being reassembled.
#[derive(Debug, Default)]
struct Pending {
    /// Its place in [`Defragmenter::order`].
    seq: u64,
    first_ts_ns: i64,
    data: Vec<u8>,
    /// Byte ranges received, unordered (datagrams have few fragments).
    pieces: Vec<(usize, usize)>,
    received: usize,
    /// Known once the last fragment (MF clear) arrived.
    total: Option<usize>,
}

/// Result of offering one fragment.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Held until the rest arrives.
    Held,
    /// An exact repeat of a fragment already held: ignored.
    Duplicate,
    /// The datagram is whole: see [`Defragmenter::completed`].
    Complete,
}

#[derive(Debug, Default)]
pub(crate) struct Defragmenter {
    pending: HashMap<FragKey, Pending>,
    /// The pending datagrams in the order they started, each with its `seq`: capture times
    /// run forward, so the front is the oldest, and expiry and eviction look at the front
    /// alone. An item whose datagram has completed or been dropped (its key gone, or held
    /// by a later datagram with another `seq`) stays until it reaches the front, or until
    /// the queue holds [`ORDER_SLACK`] times [`MAX_PENDING`] items and is compacted.
    order: VecDeque<(u64, FragKey)>,
    next_seq: u64,
    completed: Vec<u8>,
    /// Datagrams dropped unfinished (expired or evicted).
    pub dropped: u64,
}

impl Defragmenter {
    /// Datagrams waiting for more fragments.
    pub(crate) fn pending(&self) -> usize {
        self.pending.len()
    }

    /// The last completed datagram's payload (valid after [`Outcome::Complete`]).
    pub(crate) fn completed(&self) -> &[u8] {
        &self.completed
    }

    /// Offer one fragment at capture time `ts_ns`. Inconsistent fragments (overlap with
    /// different bytes or bounds, a datagram over 64 KiB, two different ends) drop the
    /// whole datagram and are reported as `Err(message)`.
    pub(crate) fn push(
        &mut self,
        key: FragKey,
        ts_ns: i64,
        frag: Fragment<'_>,
    ) -> Result<Outcome, String> {
        self.expire(ts_ns);
        if !self.pending.contains_key(&key) {
            if self.pending.len() >= MAX_PENDING {
                self.evict_oldest();
            }
            self.start(key, ts_ns);
        }
        let Some(p) = self.pending.get_mut(&key) else {
            return Ok(Outcome::Held);
        };
        match add(p, frag) {
            Ok(Outcome::Complete) => {
                if let Some(mut p) = self.pending.remove(&key) {
                    p.data.truncate(p.total.unwrap_or(p.data.len()));
                    self.completed = p.data;
                }
                Ok(Outcome::Complete)
            }
            Ok(o) => Ok(o),
            Err(e) => {
                self.pending.remove(&key);
                self.dropped += 1;
                Err(e)
            }
        }
    }

    /// A new pending datagram for `key`, at the back of the order.
    fn start(&mut self, key: FragKey, ts_ns: i64) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.pending.insert(
            key,
            Pending {
                seq,
                first_ts_ns: ts_ns,
                ..Pending::default()
            },
        );
        self.order.push_back((seq, key));
        if self.order.len() > ORDER_SLACK * MAX_PENDING {
            let pending = &self.pending;
            self.order
                .retain(|(seq, k)| pending.get(k).is_some_and(|p| p.seq == *seq));
        }
    }

    /// The oldest pending datagram (dropping the order's items of finished ones on the way).
    fn oldest(&mut self) -> Option<(FragKey, i64)> {
        while let Some(&(seq, k)) = self.order.front() {
            match self.pending.get(&k) {
                Some(p) if p.seq == seq => return Some((k, p.first_ts_ns)),
                _ => {
                    self.order.pop_front();
                }
            }
        }
        None
    }

    /// Drop datagrams whose first fragment is older than [`EXPIRE_NS`] (from the oldest on:
    /// in a capture whose times go back, a datagram started later but stamped earlier
    /// waits until those before it are gone).
    fn expire(&mut self, now: i64) {
        while let Some((k, first)) = self.oldest() {
            if now.saturating_sub(first) <= EXPIRE_NS {
                break;
            }
            self.drop_front(k);
        }
    }

    fn evict_oldest(&mut self) {
        if let Some((k, _)) = self.oldest() {
            self.drop_front(k);
        }
    }

    /// Give up the datagram at the front of the order, `k`.
    fn drop_front(&mut self, k: FragKey) {
        self.order.pop_front();
        self.pending.remove(&k);
        self.dropped += 1;
    }
}

/// Add a fragment's bytes to a pending datagram, checking it against what is known.
fn add(p: &mut Pending, f: Fragment<'_>) -> Result<Outcome, String> {
    let start = f.offset;
    let end = start + f.data.len();
    if end > MAX_DATAGRAM {
        return Err(format!(
            "fragments reach byte {end}, beyond the 65535-byte limit"
        ));
    }
    if f.more && f.data.len() % 8 != 0 {
        return Err(format!(
            "non-last fragment of {} bytes (not a multiple of 8)",
            f.data.len()
        ));
    }
    if !f.more {
        match p.total {
            Some(t) if t != end => {
                return Err(format!("two last fragments, ending at {t} and {end}"))
            }
            _ => p.total = Some(end),
        }
    }
    if let Some(t) = p.total {
        if let Some(&(_, e)) = p.pieces.iter().find(|&&(_, e)| e > t) {
            return Err(format!(
                "fragment data up to byte {e} after the datagram ends at {t}"
            ));
        }
    }
    for &(s, e) in &p.pieces {
        if s < end && start < e {
            if (s, e) == (start, end) && p.data.get(s..e) == Some(f.data) {
                return Ok(Outcome::Duplicate);
            }
            return Err(format!(
                "fragment bytes {start}..{end} overlap bytes {s}..{e} already received"
            ));
        }
    }
    if p.data.len() < end {
        p.data.resize(end, 0);
    }
    if let Some(dst) = p.data.get_mut(start..end) {
        dst.copy_from_slice(f.data);
    }
    p.pieces.push((start, end));
    p.received += f.data.len();
    match p.total {
        Some(t) if p.received == t => Ok(Outcome::Complete),
        _ => Ok(Outcome::Held),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(id: u32) -> FragKey {
        FragKey {
            src: IpAddr::from([127, 0, 0, 1]),
            dst: IpAddr::from([127, 0, 0, 1]),
            proto: 17,
            id,
        }
    }

    fn frag(offset: usize, more: bool, data: &[u8]) -> Fragment<'_> {
        Fragment { offset, more, data }
    }

    #[test]
    fn in_order_out_of_order_and_duplicates() {
        let d: Vec<u8> = (0..40u8).collect();
        let mut r = Defragmenter::default();
        assert_eq!(
            r.push(key(1), 0, frag(16, true, &d[16..32])),
            Ok(Outcome::Held)
        );
        assert_eq!(
            r.push(key(1), 0, frag(32, false, &d[32..])),
            Ok(Outcome::Held)
        );
        assert_eq!(
            r.push(key(1), 0, frag(32, false, &d[32..])),
            Ok(Outcome::Duplicate)
        );
        assert_eq!(
            r.push(key(1), 0, frag(0, true, &d[..16])),
            Ok(Outcome::Complete)
        );
        assert_eq!(r.completed(), &d[..]);
        // in order, another id
        assert_eq!(r.push(key(2), 0, frag(0, true, &d[..8])), Ok(Outcome::Held));
        assert_eq!(
            r.push(key(2), 0, frag(8, false, &d[8..20])),
            Ok(Outcome::Complete)
        );
        assert_eq!(r.completed(), &d[..20]);
    }

    #[test]
    fn inconsistencies_are_errors() {
        let d = [7u8; 64];
        let mut r = Defragmenter::default();
        r.push(key(1), 0, frag(0, true, &d[..16])).unwrap();
        assert!(r.push(key(1), 0, frag(8, true, &d[..16])).is_err()); // overlap
        r.push(key(2), 0, frag(0, false, &d[..16])).ok();
        r.push(key(3), 0, frag(16, false, &d[..8])).unwrap();
        assert!(r.push(key(3), 0, frag(32, false, &d[..8])).is_err()); // two ends
        assert!(r.push(key(4), 0, frag(65_530, false, &d[..8])).is_err()); // > 64 KiB
        assert!(r.push(key(5), 0, frag(0, true, &d[..5])).is_err()); // not a multiple of 8
        r.push(key(6), 0, frag(0, false, &d[..8])).ok();
        r.push(key(7), 0, frag(16, true, &d[..16])).unwrap();
        assert!(r.push(key(7), 0, frag(0, false, &d[..8])).is_err()); // data beyond the end
                                                                      // a changed repeat is an overlap, not a duplicate
        r.push(key(8), 0, frag(0, true, &d[..8])).unwrap();
        assert!(r.push(key(8), 0, frag(0, true, &[1u8; 8])).is_err());
    }

    /// The order queue stays bounded while one old datagram waits at its front and others
    /// complete behind it, and eviction takes the oldest still pending.
    #[test]
    fn order_stays_bounded_and_eviction_takes_the_oldest() {
        let d = [0u8; 8];
        let mut r = Defragmenter::default();
        r.push(key(0), 0, frag(0, true, &d)).unwrap();
        for id in 1..20_000 {
            // A whole datagram in one fragment of its own (offset 0, no more): complete.
            assert_eq!(
                r.push(key(id), 1, frag(0, false, &d)),
                Ok(Outcome::Complete)
            );
            assert!(r.order.len() <= ORDER_SLACK * MAX_PENDING + 1);
        }
        assert_eq!((r.pending.len(), r.dropped), (1, 0));
        for id in 100_000..100_000 + MAX_PENDING as u32 {
            r.push(key(id), 2, frag(0, true, &d)).unwrap();
        }
        // Full: the next one evicted key 0, the first to start.
        assert_eq!(r.dropped, 1);
        assert!(!r.pending.contains_key(&key(0)));
        assert!(r.pending.contains_key(&key(100_000)));
    }

    #[test]
    fn expiry_and_eviction_bound_memory() {
        let d = [0u8; 8];
        let mut r = Defragmenter::default();
        r.push(key(1), 0, frag(0, true, &d)).unwrap();
        r.push(key(2), EXPIRE_NS + 1, frag(0, true, &d)).unwrap();
        assert_eq!(r.pending.len(), 1);
        assert_eq!(r.dropped, 1);
        for id in 10..(10 + MAX_PENDING as u32 + 5) {
            r.push(key(id), EXPIRE_NS + 2, frag(0, true, &d)).unwrap();
        }
        assert_eq!(r.pending.len(), MAX_PENDING);
        // the late fragment of an expired datagram starts a new one that never completes
        assert_eq!(
            r.push(key(1), EXPIRE_NS + 3, frag(8, false, &d)),
            Ok(Outcome::Held)
        );
    }
}
