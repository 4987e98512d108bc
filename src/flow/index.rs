//! Endpoint keying, written once for both games' trackers: which flow a datagram belongs to,
//! by its address pair (both games) or by the client's qport (both netchans carry one, and
//! both servers follow a client by it when NAT changes its port).
//!
//! What a pair maps to is the tracker's business (Quake 3 keeps the flows of both orders
//! of a pair in one value, QuakeWorld the newest flow); how it is looked up fast is this
//! module's.
use std::net::{IpAddr, SocketAddr};

use super::FlowMap;

/// A pair of endpoints, in the order a lookup names them.
pub type Pair = (SocketAddr, SocketAddr);

/// Slots of [`PairIndex`]'s memo (a power of two). A flow's datagrams look up both orders of
/// its pair, so a thousand live connections hold two thousand keys: with 256 slots most
/// lookups missed into the map (a hundred instructions and a cold bucket each); 4,096 slots
/// (of 32 bytes for Quake 3's values: 128 KB, within one core's L2) answer most of them
/// (docs/performance.md, 2026-12-02); 16,384 were no faster (the memo itself fell out of cache).
const MEMO_SLOTS: usize = 4096;

/// A value per address pair, with a direct-mapped memo of recent IPv4 lookups in front:
/// most datagrams belong to a few busy flows, and a memo probe (one integer compare) costs a
/// fraction of a hash-map lookup. A change to a pair drops that pair from the memo, so it
/// always answers as the map would. A pair never inserted reads as `V::default()`.
#[derive(Debug)]
pub struct PairIndex<V> {
    /// IPv4 pairs by their packed key ([`pack_v4`]): a 16-byte key hashes in two steps and
    /// compares in one, and the table is a third the size of one keyed by the two socket
    /// addresses (32 bytes each), which with a thousand live connections is out of cache
    /// at every lookup.
    v4: FlowMap<u128, V>,
    /// The other pairs (IPv6).
    map: FlowMap<Pair, V>,
    /// (packed pair, its value); a key of 0 marks an empty slot (packed keys are never 0).
    memo: Vec<(u128, V)>,
}

impl<V: Copy + Default> Default for PairIndex<V> {
    fn default() -> Self {
        PairIndex {
            v4: FlowMap::default(),
            map: FlowMap::default(),
            memo: vec![(0, V::default()); MEMO_SLOTS],
        }
    }
}

/// An IPv4 pair as one integer: both addresses and ports, and a marker bit so that no
/// pair packs to 0. None for IPv6 (such pairs skip the memo).
fn pack_v4(p: &Pair) -> Option<u128> {
    pack_v4_ends(&p.0, &p.1)
}

fn pack_v4_ends(a: &SocketAddr, b: &SocketAddr) -> Option<u128> {
    let (SocketAddr::V4(a), SocketAddr::V4(b)) = (a, b) else {
        return None;
    };
    let end =
        |e: &std::net::SocketAddrV4| (u64::from(e.ip().to_bits()) << 16) | u64::from(e.port());
    Some((1 << 127) | (u128::from(end(a)) << 48) | u128::from(end(b)))
}

fn memo_slot(key: u128) -> usize {
    let h = (key as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ ((key >> 64) as u64).wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
    (h >> (64 - MEMO_SLOTS.trailing_zeros())) as usize % MEMO_SLOTS
}

impl<V: Copy + Default> PairIndex<V> {
    /// The value of `p` (`V::default()` when none was stored). The memo's hit is inlined
    /// into the router (one datagram in each calls it); a miss takes the call.
    #[inline]
    pub fn get(&mut self, p: &Pair) -> V {
        self.get_ends(&p.0, &p.1)
    }

    /// [`Self::get`] of the pair (`a`, `b`), without the pair built unless the memo misses.
    #[inline]
    pub fn get_ends(&mut self, a: &SocketAddr, b: &SocketAddr) -> V {
        if let Some(key) = pack_v4_ends(a, b) {
            if let Some((k, v)) = self.memo.get(memo_slot(key)) {
                if *k == key {
                    return *v;
                }
            }
        }
        self.get_missed(&(*a, *b))
    }

    /// [`Self::get`] past the memo: the maps, and the memo refilled.
    #[inline(never)]
    fn get_missed(&mut self, p: &Pair) -> V {
        let Some(key) = pack_v4(p) else {
            return self.map.get(p).copied().unwrap_or_default();
        };
        let v = self.v4.get(&key).copied().unwrap_or_default();
        if let Some(m) = self.memo.get_mut(memo_slot(key)) {
            *m = (key, v);
        }
        v
    }

    /// Change the value of `p` (starting from `V::default()`). Only `p`'s memo slot can hold
    /// its old value; clearing every slot instead (as before) would write the whole memo
    /// (128–192 KB) per new flow.
    pub fn update(&mut self, p: Pair, f: impl FnOnce(&mut V)) {
        match pack_v4(&p) {
            Some(key) => f(self.v4.entry(key).or_default()),
            None => f(self.map.entry(p).or_default()),
        }
        if let Some(key) = pack_v4(&p) {
            if let Some(m) = self.memo.get_mut(memo_slot(key)) {
                if m.0 == key {
                    *m = (0, V::default());
                }
            }
        }
    }

    /// Set the value of `p`.
    pub fn insert(&mut self, p: Pair, v: V) {
        self.update(p, |x| *x = v);
    }
}

/// (server, client IP, qport): how a server tells its clients apart behind one address, and
/// follows one whose NAT changed its port.
pub type QportKey = (SocketAddr, IpAddr, u16);

/// Flow index by [`QportKey`] (the newest flow keeps the key). Both trackers ask it for
/// every client packet (QuakeWorld for its server packets too), so IPv4 keys are packed
/// into one integer, which hashes in two steps where the three-part key took a hundred
/// instructions.
#[derive(Debug, Default)]
pub struct QportIndex {
    v4: FlowMap<u128, usize>,
    /// The other keys (IPv6).
    map: FlowMap<QportKey, usize>,
}

/// An IPv4 [`QportKey`] as one integer (None for IPv6).
fn pack_qport_v4(server: &SocketAddr, client: &IpAddr, qport: u16) -> Option<u128> {
    let (SocketAddr::V4(s), IpAddr::V4(c)) = (server, client) else {
        return None;
    };
    Some(
        (u128::from(s.ip().to_bits()) << 64)
            | (u128::from(s.port()) << 48)
            | (u128::from(c.to_bits()) << 16)
            | u128::from(qport),
    )
}

impl QportIndex {
    pub fn get(&self, server: SocketAddr, client: IpAddr, qport: u16) -> Option<usize> {
        match pack_qport_v4(&server, &client, qport) {
            // Not hashed while empty: a capture of one game asks the other's index too.
            Some(_) if self.v4.is_empty() => None,
            Some(k) => self.v4.get(&k).copied(),
            None => self.map.get(&(server, client, qport)).copied(),
        }
    }

    pub fn insert(&mut self, server: SocketAddr, client: IpAddr, qport: u16, flow: usize) {
        match pack_qport_v4(&server, &client, qport) {
            Some(k) => self.v4.insert(k, flow),
            None => self.map.insert((server, client, qport), flow),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The memoized index answers every lookup as a plain map would, through updates
        /// that invalidate it and lookups that collide in its slots.
        #[test]
        fn pair_index_answers_as_a_map(
            ops in proptest::collection::vec((any::<bool>(), 0u8..12, 0u8..12, 0usize..50), 1..200),
        ) {
            // Few hosts and ports, IPv4 and IPv6, so pairs repeat and slots collide.
            let addr = |n: u8| -> SocketAddr {
                if n % 3 == 0 {
                    SocketAddr::new(IpAddr::V6(std::net::Ipv6Addr::LOCALHOST), 27960 + u16::from(n))
                } else {
                    SocketAddr::new(IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, n % 4)), 27960 + u16::from(n / 4))
                }
            };
            let mut index: PairIndex<Option<usize>> = PairIndex::default();
            let mut model: std::collections::HashMap<Pair, usize> = Default::default();
            for (insert, a, b, i) in ops {
                let (a, b) = (addr(a), addr(b));
                if insert {
                    index.insert((a, b), Some(i));
                    model.insert((a, b), i);
                } else {
                    let want = model.get(&(a, b)).copied();
                    prop_assert_eq!(index.get(&(a, b)), want);
                    prop_assert_eq!(index.get(&(a, b)), want);
                }
            }
        }

        /// The qport index answers as a plain map of the whole key, IPv4 and IPv6 alike;
        /// keys that differ in one part only never meet.
        #[test]
        fn qport_index_answers_as_a_map(
            ops in proptest::collection::vec((any::<bool>(), 0u8..8, 0u8..8, 0u16..4, 0usize..50), 1..200),
        ) {
            let ip = |n: u8| -> IpAddr {
                if n % 4 == 0 {
                    IpAddr::V6(std::net::Ipv6Addr::LOCALHOST)
                } else {
                    IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, n % 3))
                }
            };
            let mut index = QportIndex::default();
            let mut model: std::collections::HashMap<QportKey, usize> = Default::default();
            for (insert, s, c, q, i) in ops {
                let server = SocketAddr::new(ip(s), 27960 + u16::from(s / 3));
                let key = (server, ip(c), q);
                if insert {
                    index.insert(key.0, key.1, key.2, i);
                    model.insert(key, i);
                } else {
                    prop_assert_eq!(index.get(key.0, key.1, key.2), model.get(&key).copied());
                }
            }
        }
    }

    /// Two pairs that share a memo slot: each lookup evicts the other, and a change to one
    /// is seen whichever of them the slot holds.
    #[test]
    fn pairs_sharing_a_memo_slot_answer_as_a_map() {
        let v4 =
            |n: u16| SocketAddr::new(IpAddr::V4([10, 0, (n >> 8) as u8, n as u8].into()), 27960);
        let server = v4(0);
        let slot = |n| memo_slot(pack_v4(&(server, v4(n))).unwrap());
        let other = (2..u16::MAX).find(|&n| slot(n) == slot(1)).unwrap();
        let (a, b) = ((server, v4(1)), (server, v4(other)));
        let mut index: PairIndex<Option<usize>> = PairIndex::default();
        index.insert(a, Some(1));
        index.insert(b, Some(2));
        for round in 0..3 {
            let (va, vb) = (Some(1 + round * 10), Some(2 + round * 10));
            assert_eq!(index.get(&a), va);
            assert_eq!(index.get(&b), vb);
            // The slot holds b: a change to a leaves it, a change to b must clear it.
            index.insert(a, Some(11 + round * 10));
            assert_eq!(index.get(&b), vb);
            index.insert(b, Some(12 + round * 10));
            assert_eq!(index.get(&b), Some(12 + round * 10));
        }
    }

    #[test]
    fn packed_pairs_are_distinct_and_never_empty() {
        let v4 = |ip: [u8; 4], port| SocketAddr::new(IpAddr::V4(ip.into()), port);
        let v6 = SocketAddr::new(IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED), 0);
        let zero = v4([0; 4], 0);
        let max = v4([255; 4], u16::MAX);
        assert_ne!(pack_v4(&(zero, zero)), Some(0));
        assert_ne!(pack_v4(&(zero, max)), pack_v4(&(max, zero)));
        assert_ne!(
            pack_v4(&(v4([1, 0, 0, 0], 0), zero)),
            pack_v4(&(v4([0; 4], 1), zero))
        );
        assert_eq!(pack_v4(&(v6, zero)), None);
        for p in [(zero, max), (max, max), (max, zero)] {
            assert!(memo_slot(pack_v4(&p).unwrap()) < MEMO_SLOTS);
        }
    }
}
