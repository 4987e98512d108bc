//! IP fragment reassembly (IPv4, and IPv6 Fragment headers with the same logic).
//!
//! Bounded: at most [`MAX_PENDING`] datagrams in progress (the oldest is dropped to make
//! room), at most [`MAX_DATAGRAM`] bytes each, and a datagram still incomplete
//! [`EXPIRE_NS`] of capture time after its first fragment is dropped.

use std::collections::HashMap;
use std::net::IpAddr;

pub(crate) const MAX_PENDING: usize = 1024;
pub(crate) const MAX_DATAGRAM: usize = 65_535;
pub(crate) const EXPIRE_NS: i64 = 30_000_000_000;

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
    completed: Vec<u8>,
    /// Datagrams dropped unfinished (expired or evicted).
    pub dropped: u64,
}

impl Defragmenter {
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
        if !self.pending.contains_key(&key) && self.pending.len() >= MAX_PENDING {
            self.evict_oldest();
        }
        let p = self.pending.entry(key).or_insert_with(|| Pending {
            first_ts_ns: ts_ns,
            ..Pending::default()
        });
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

    /// Drop datagrams whose first fragment is older than [`EXPIRE_NS`].
    fn expire(&mut self, now: i64) {
        let before = self.pending.len();
        self.pending
            .retain(|_, p| now.saturating_sub(p.first_ts_ns) <= EXPIRE_NS);
        self.dropped += (before - self.pending.len()) as u64;
    }

    fn evict_oldest(&mut self) {
        let oldest = self
            .pending
            .iter()
            .min_by_key(|(_, p)| p.first_ts_ns)
            .map(|(k, _)| *k);
        if let Some(k) = oldest {
            self.pending.remove(&k);
            self.dropped += 1;
        }
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
