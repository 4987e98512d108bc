//! The one flow table of a capture stream: owns flow ids, the per-kind limits on what an
//! unauthenticated sender can make us keep, the flows of UDP traffic of no known game, and
//! the summaries of what went past a limit (aggregated, never dropped silently).
//!
//! Game trackers classify datagrams and keep per-flow decode state; they ask the table for
//! an id ([`FlowTable::claim`]) when they start a flow. A game flow whose endpoints were first
//! counted as other UDP takes over that flow's id and counts at that moment (adoption), so
//! no id is ever patched after the fact.
use std::hash::{BuildHasher, BuildHasherDefault, Hash};
use std::net::SocketAddr;

use super::{Dir, FlowHasher, FlowMap, FlowSummary};

/// Query flows (anything not starting a connection) one game keeps as flows of their own
/// at a time (flows silent for [`IDLE_RELEASE_NS`] no longer count). A real
/// server capture holds a handful; past this, queries are aggregated per server and
/// command ([`QueryAggregate`]), which costs a few KiB per (server, command) whatever the
/// number of senders.
pub const MAX_QUERY_FLOWS: usize = 4_096;
/// Connections (a `connect` or a confirmed mid-session netchan) one game keeps at a time;
/// each may hold a full decoder state. Only live ones count: a connection silent for
/// [`IDLE_RELEASE_NS`] has let its state go, so a long capture follows every connection,
/// not its first ten thousand.
pub const MAX_CONNECTIONS: usize = 10_000;
/// Flows of one game kept in all, live or not: the bound when the live limits are not
/// (spoofed connects spread over hours). A row holds about 3 KB once its flow is idle (its
/// summary, counters and netchan receivers): 40,000 connect-only rows peak at 127 MB,
/// under issue 11's 150 MB.
pub const MAX_FLOW_ROWS: usize = 40_000;
/// A flow silent this long (capture time) releases its decoder state and stops counting
/// against the limits above: Quake 3's engines give up on a silent peer after 200 s
/// (`sv_timeout`, `cl_timeout`), mvdsv after its `timeout` (65 s by default).
pub const IDLE_RELEASE_NS: i64 = 200_000_000_000;

/// UDP flows of no known game kept; datagrams of further endpoint pairs are summarised.
pub const MAX_OTHER_FLOWS: usize = 10_000;
/// Unconfirmed mid-session candidates (Quake 3) kept at most.
pub const MAX_CANDIDATES: usize = 4_096;
/// Client ports one connection follows at most (NAT rebinding).
pub const MAX_CLIENT_PORTS: usize = 64;
/// (server, game, command) aggregates kept; further keys share one catch-all row.
pub const MAX_AGGREGATES: usize = 1_024;
/// Command words are cut to this many bytes (the word is attacker-chosen).
const MAX_COMMAND_LEN: usize = 32;

/// The flows a tracker released for idleness since the pipeline last asked, when it asks
/// at all (for `Event::FlowEnd`): flow indexes of the tracker, in the order released.
#[derive(Debug, Default, Clone)]
pub struct Released {
    on: bool,
    flows: Vec<usize>,
}

impl Released {
    /// Keep the released flows from now on (whoever asks must take them after every offer).
    pub fn keep(&mut self) {
        self.on = true;
    }
    /// Flow `i` was released.
    pub fn push(&mut self, i: usize) {
        if self.on {
            self.flows.push(i);
        }
    }
    /// Flows were released and not taken yet.
    #[inline]
    pub fn any(&self) -> bool {
        !self.flows.is_empty()
    }
    /// The rows (`summary` of each of `flows`) of the flows released since the last call,
    /// in the order released.
    pub fn take_into<F>(
        &mut self,
        flows: &[F],
        summary: impl Fn(&F) -> super::FlowSummary,
        out: &mut Vec<super::FlowSummary>,
    ) {
        out.extend(
            self.flows
                .drain(..)
                .filter_map(|i| flows.get(i))
                .map(summary),
        );
    }
}

/// Counts distinct sources in bounded memory: exact up to [`EXACT_SOURCES`] distinct
/// addresses, then a HyperLogLog estimate over [`HLL_REGISTERS`] one-byte registers (standard
/// error about 1.04/sqrt(1024) ≈ 3.3%).
#[derive(Debug, Clone, Default)]
pub struct SourceCount {
    exact: Vec<u64>,
    registers: Vec<u8>,
}

/// Distinct sources counted exactly (as hashes; a 64-bit collision is negligible).
pub const EXACT_SOURCES: usize = 256;
const HLL_BITS: u32 = 10;
/// Registers of the estimate (1 KiB per aggregate once past the exact range).
pub const HLL_REGISTERS: usize = 1 << HLL_BITS;

impl SourceCount {
    /// Count one sender.
    pub fn add(&mut self, src: &SocketAddr) {
        let h = hash_of(&src.ip());
        if self.registers.is_empty() {
            if self.exact.contains(&h) {
                return;
            }
            if self.exact.len() < EXACT_SOURCES {
                self.exact.push(h);
                return;
            }
            self.registers = vec![0; HLL_REGISTERS];
            for e in std::mem::take(&mut self.exact) {
                self.add_hash(e);
            }
        }
        self.add_hash(h);
    }

    fn add_hash(&mut self, h: u64) {
        // FlowHasher's low bits are weak: mix once more before splitting.
        let h = splitmix(h);
        let idx = (h >> (64 - HLL_BITS)) as usize;
        let rank = ((h << HLL_BITS) | (1 << (HLL_BITS - 1))).leading_zeros() as u8 + 1;
        if let Some(r) = self.registers.get_mut(idx) {
            *r = (*r).max(rank);
        }
    }

    /// The count: exact, or the HyperLogLog estimate (with the small-range correction).
    pub fn estimate(&self) -> u64 {
        if self.registers.is_empty() {
            return self.exact.len() as u64;
        }
        let m = HLL_REGISTERS as f64;
        let sum: f64 = self
            .registers
            .iter()
            .map(|&r| 2f64.powi(-i32::from(r)))
            .sum();
        let raw = 0.7213 / (1.0 + 1.079 / m) * m * m / sum;
        let zeros = self.registers.iter().filter(|&&r| r == 0).count();
        if raw <= 2.5 * m && zeros > 0 {
            return (m * (m / zeros as f64).ln()).round() as u64;
        }
        raw.round() as u64
    }
}

fn hash_of<T: Hash>(v: &T) -> u64 {
    BuildHasherDefault::<FlowHasher>::default().hash_one(v)
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Traffic past a limit, summed per (game, server, command).
#[derive(Debug, Clone, Default)]
pub struct QueryAggregate {
    /// `"q3"`, `"qw"`, or `"udp"` for other UDP.
    pub game: &'static str,
    /// "query_aggregate" or "other_aggregate".
    pub kind: &'static str,
    /// The server's `ip:port`; `*` for other UDP and the catch-all row past [`MAX_AGGREGATES`].
    pub server: String,
    /// The request's command word, lowercased and cut to 32 bytes (`other` for other UDP,
    /// `*` for the catch-all row).
    pub command: String,
    /// Requests (client to server datagrams).
    pub requests: u64,
    /// UDP payload bytes of the requests.
    pub bytes: u64,
    /// Distinct source IP addresses of the requests (exact to 256, then estimated).
    pub sources: SourceCount,
    /// Server replies to a request of this aggregate.
    pub answered: u64,
    /// First datagram summed, seconds since the Unix epoch.
    pub first_time: f64,
    /// Last datagram summed, seconds since the Unix epoch.
    pub last_time: f64,
}

/// Key of an aggregate: game, server (None: the catch-all), command.
type AggKey = (&'static str, Option<SocketAddr>, String);

/// Other UDP flows, keyed by their endpoint pair (both orders).
#[derive(Debug, Default)]
struct OtherFlows {
    flows: Vec<FlowSummary>,
    by_pair: FlowMap<(SocketAddr, SocketAddr), (usize, Dir)>,
}

/// The flow table of one capture stream (see the module docs).
#[derive(Debug)]
pub struct FlowTable {
    next_id: u32,
    other: OtherFlows,
    aggregates: FlowMap<AggKey, QueryAggregate>,
    /// Datagrams of other UDP past [`MAX_OTHER_FLOWS`] (summarised as one aggregate).
    untracked: u64,
    first_untracked_frame: u64,
    /// Datagrams that would have started a flow but for [`MAX_FLOW_ROWS`] (summed instead),
    /// and the frame of the first.
    rows_refused: u64,
    first_refused_frame: u64,
    /// When following a live input: the flows claimed since the last
    /// [`FlowTable::take_claims`] (id, server, client).
    claims: Option<Vec<(u32, SocketAddr, SocketAddr)>>,
}

impl Default for FlowTable {
    fn default() -> Self {
        FlowTable {
            next_id: 1,
            other: OtherFlows::default(),
            aggregates: FlowMap::default(),
            untracked: 0,
            first_untracked_frame: 0,
            rows_refused: 0,
            first_refused_frame: 0,
            claims: None,
        }
    }
}

/// What [`FlowTable::claim`] hands a game starting a flow.
#[derive(Debug)]
pub struct Claim {
    /// The new flow's id (that of the adopted other-UDP flow when one is handed over).
    pub id: u32,
    /// What was counted for these endpoints as other UDP before (to absorb), and whether its
    /// first sender was the server (its directions are then reversed).
    pub prior: Option<(FlowSummary, bool)>,
}

impl FlowTable {
    /// An id for a new game flow of `(server, client)`. With `adopt`, an other-UDP flow of the
    /// same endpoints is handed over (its id becomes the game flow's id).
    pub fn claim(&mut self, server: SocketAddr, client: SocketAddr, adopt: bool) -> Claim {
        let c = self.claim_id(server, client, adopt);
        if let Some(v) = &mut self.claims {
            v.push((c.id, server, client));
        }
        c
    }

    /// Keep the flows claimed from now on, for [`FlowTable::take_claims`] (a follow tells
    /// each flow's start).
    pub fn watch_claims(&mut self) {
        self.claims.get_or_insert_with(Vec::new);
    }

    /// The flows claimed since the last call (none unless [`FlowTable::watch_claims`]).
    pub fn take_claims(&mut self) -> Vec<(u32, SocketAddr, SocketAddr)> {
        match &mut self.claims {
            Some(v) if !v.is_empty() => std::mem::take(v),
            _ => Vec::new(),
        }
    }

    fn claim_id(&mut self, server: SocketAddr, client: SocketAddr, adopt: bool) -> Claim {
        if adopt && !self.other.by_pair.is_empty() {
            if let Some(prior) = self.other.take(client, server) {
                let swapped = prior.server != server.to_string();
                return Claim {
                    id: prior.id,
                    prior: Some((prior, swapped)),
                };
            }
        }
        Claim {
            id: self.fresh_id(),
            prior: None,
        }
    }

    fn fresh_id(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id = self.next_id.saturating_add(1);
        id
    }

    /// Count a datagram no game took on its other-UDP flow; past [`MAX_OTHER_FLOWS`] it is
    /// summarised in the other-UDP aggregate.
    pub fn offer_other(&mut self, d: &crate::net::Datagram<'_>) {
        if let Some(&(i, dir)) = self.other.by_pair.get(&(d.src, d.dst)) {
            if let Some(f) = self.other.flows.get_mut(i) {
                f.count_packet(dir, d.payload.len(), d.ts_ns);
            }
            return;
        }
        if self.other.flows.len() >= MAX_OTHER_FLOWS {
            if self.untracked == 0 {
                self.first_untracked_frame = d.frame;
            }
            self.untracked += 1;
            self.aggregate("udp", "other_aggregate", None, "other", d, Dir::C2s);
            return;
        }
        let id = self.fresh_id();
        self.other.insert(id, d);
    }

    /// Sum a query past the limits into its (game, server, command) aggregate. `dir` S2c
    /// counts a reply (answered) to the aggregate of `command`, the request it answers.
    pub fn aggregate_query(
        &mut self,
        game: &'static str,
        server: SocketAddr,
        command: &[u8],
        d: &crate::net::Datagram<'_>,
        dir: Dir,
    ) {
        let cmd = command_word(command);
        self.aggregate(game, "query_aggregate", Some(server), &cmd, d, dir);
    }

    fn aggregate(
        &mut self,
        game: &'static str,
        kind: &'static str,
        server: Option<SocketAddr>,
        command: &str,
        d: &crate::net::Datagram<'_>,
        dir: Dir,
    ) {
        let mut key: AggKey = (game, server, command.to_string());
        if !self.aggregates.contains_key(&key) && self.aggregates.len() >= MAX_AGGREGATES {
            key = (game, None, "*".to_string());
        }
        let a = self
            .aggregates
            .entry(key)
            .or_insert_with_key(|(g, s, c)| QueryAggregate {
                game: g,
                kind,
                server: s.map_or_else(|| "*".to_string(), |s| s.to_string()),
                command: c.clone(),
                ..Default::default()
            });
        let t = d.ts_ns as f64 / 1e9;
        if a.requests + a.answered == 0 {
            a.first_time = t;
        }
        a.last_time = t;
        match dir {
            Dir::C2s => {
                a.requests += 1;
                a.bytes += d.payload.len() as u64;
                a.sources.add(&d.src);
            }
            Dir::S2c => a.answered += 1,
        }
    }

    /// A game refused to start a flow for the datagram of `frame`: it holds
    /// [`MAX_FLOW_ROWS`] already.
    pub fn refuse_row(&mut self, frame: u64) {
        if self.rows_refused == 0 {
            self.first_refused_frame = frame;
        }
        self.rows_refused += 1;
    }

    /// Datagrams refused a flow for [`MAX_FLOW_ROWS`] and the frame of the first.
    pub fn rows_refused(&self) -> (u64, u64) {
        (self.rows_refused, self.first_refused_frame)
    }

    /// Datagrams of other UDP past [`MAX_OTHER_FLOWS`], and the frame of the first.
    pub fn untracked(&self) -> (u64, u64) {
        (self.untracked, self.first_untracked_frame)
    }

    /// The other-UDP flows that still hold packets (adopted ones are left empty).
    pub fn other_summaries(&self) -> impl Iterator<Item = &FlowSummary> {
        self.other.flows.iter().filter(|f| f.packets.total() > 0)
    }

    /// The aggregates, in a stable order (game, server, command).
    pub fn aggregates(&self) -> Vec<QueryAggregate> {
        let mut v: Vec<_> = self.aggregates.values().cloned().collect();
        v.sort_by(|a, b| (a.game, &a.server, &a.command).cmp(&(b.game, &b.server, &b.command)));
        v
    }
}

impl OtherFlows {
    /// Remove and return the flow of these endpoints, if any (its row is left empty so that
    /// indices stay stable).
    fn take(&mut self, a: SocketAddr, b: SocketAddr) -> Option<FlowSummary> {
        let (i, _) = self.by_pair.remove(&(a, b))?;
        self.by_pair.remove(&(b, a));
        self.flows.get_mut(i).map(std::mem::take)
    }

    fn insert(&mut self, id: u32, d: &crate::net::Datagram<'_>) {
        // The first sender is taken as the client.
        let mut s = FlowSummary {
            id,
            game: "udp",
            kind: "other",
            server: d.dst.to_string(),
            client_ip: d.src.ip().to_string(),
            client_ports: vec![d.src.port()],
            ..Default::default()
        };
        s.count_packet(Dir::C2s, d.payload.len(), d.ts_ns);
        self.flows.push(s);
        let i = self.flows.len() - 1;
        self.by_pair.insert((d.src, d.dst), (i, Dir::C2s));
        self.by_pair.insert((d.dst, d.src), (i, Dir::S2c));
    }
}

/// The first word of a connectionless command, lowercased and cut to [`MAX_COMMAND_LEN`],
/// non-printable bytes as '?'.
fn command_word(text: &[u8]) -> String {
    text.iter()
        .take_while(|&&c| c > b' ')
        .take(MAX_COMMAND_LEN)
        .map(|&c| {
            if c.is_ascii_graphic() {
                char::from(c.to_ascii_lowercase())
            } else {
                '?'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn sources_exact_then_estimated_within_error() {
        for n in [1u32, 200, 256, 257, 5_000, 400_000] {
            let mut c = SourceCount::default();
            for i in 0..n {
                let a = SocketAddr::from((Ipv4Addr::from(0x0a00_0000 + i), 1000));
                c.add(&a);
                c.add(&a);
            }
            let e = c.estimate() as f64;
            let err = (e - f64::from(n)).abs() / f64::from(n);
            if n as usize <= EXACT_SOURCES {
                assert_eq!(e as u32, n);
            } else {
                assert!(err < 0.1, "{n}: {e}");
            }
        }
    }

    #[test]
    fn command_words_are_bounded() {
        assert_eq!(command_word(b"Status 23\n"), "status");
        assert_eq!(command_word(&[b'a'; 100]).len(), MAX_COMMAND_LEN);
        assert_eq!(command_word(&[0xff, b'x']), "?x");
    }
}
