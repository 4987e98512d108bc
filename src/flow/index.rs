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

/// Slots of [`PairIndex`]'s memo (a power of two).
const MEMO_SLOTS: usize = 256;

/// A value per address pair, with a direct-mapped memo of recent IPv4 lookups in front:
/// most datagrams belong to a few busy flows, and a memo probe (one integer compare) costs a
/// fraction of a hash-map lookup. The memo is cleared whenever the map changes, so it always
/// answers as the map would. A pair never inserted reads as `V::default()`.
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
    let (SocketAddr::V4(a), SocketAddr::V4(b)) = p else {
        return None;
    };
    let end =
        |e: &std::net::SocketAddrV4| (u64::from(e.ip().to_bits()) << 16) | u64::from(e.port());
    Some((1 << 127) | (u128::from(end(a)) << 48) | u128::from(end(b)))
}

fn memo_slot(key: u128) -> usize {
    let h = (key as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ ((key >> 64) as u64).wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
    (h >> 56) as usize % MEMO_SLOTS
}

impl<V: Copy + Default> PairIndex<V> {
    /// The value of `p` (`V::default()` when none was stored). The memo's hit is inlined
    /// into the router (one datagram in each calls it); a miss takes the call.
    #[inline]
    pub fn get(&mut self, p: &Pair) -> V {
        if let Some(key) = pack_v4(p) {
            if let Some((k, v)) = self.memo.get(memo_slot(key)) {
                if *k == key {
                    return *v;
                }
            }
        }
        self.get_missed(p)
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

    /// Change the value of `p` (starting from `V::default()`).
    pub fn update(&mut self, p: Pair, f: impl FnOnce(&mut V)) {
        match pack_v4(&p) {
            Some(key) => f(self.v4.entry(key).or_default()),
            None => f(self.map.entry(p).or_default()),
        }
        self.memo.fill((0, V::default()));
    }

    /// Set the value of `p`.
    pub fn insert(&mut self, p: Pair, v: V) {
        self.update(p, |x| *x = v);
    }
}

/// (server, client IP, qport): how a server tells its clients apart behind one address, and
/// follows one whose NAT changed its port.
pub type QportKey = (SocketAddr, IpAddr, u16);

/// Flow index by [`QportKey`] (the newest flow keeps the key).
#[derive(Debug, Default)]
pub struct QportIndex(FlowMap<QportKey, usize>);

impl QportIndex {
    pub fn get(&self, server: SocketAddr, client: IpAddr, qport: u16) -> Option<usize> {
        self.0.get(&(server, client, qport)).copied()
    }

    pub fn insert(&mut self, server: SocketAddr, client: IpAddr, qport: u16, flow: usize) {
        self.0.insert((server, client, qport), flow);
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
