//! Game-agnostic flow bookkeeping: directions, per-direction counters and the summary row
//! every game fills in for `quakecap flows`. [`table`] owns flow ids, limits and what went
//! past them.
use crate::error::Error;
use serde::Serialize;

pub mod table;
internal_mod!(held, index);
pub use table::FlowTable;

pub use crate::vocab::Dir;

/// A pair of counters, one per direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PerDir {
    /// Client to server.
    pub c2s: u64,
    /// Server to client.
    pub s2c: u64,
}

impl PerDir {
    /// The counter of direction `d`.
    pub fn get_mut(&mut self, d: Dir) -> &mut u64 {
        match d {
            Dir::C2s => &mut self.c2s,
            Dir::S2c => &mut self.s2c,
        }
    }
    /// The count of direction `d`.
    pub fn get(&self, d: Dir) -> u64 {
        match d {
            Dir::C2s => self.c2s,
            Dir::S2c => self.s2c,
        }
    }
    /// Both directions together.
    pub fn total(&self) -> u64 {
        self.c2s + self.s2c
    }
}

/// At most this many errors are kept per flow (all are counted).
pub const MAX_KEPT_ERRORS: usize = 100;

/// One row of `quakecap flows` (and one object of its `--json` array). Every game fills it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FlowSummary {
    /// 1.. in order of the flow's first packet.
    pub id: u32,
    /// "q3", "qw" or "udp" (UDP traffic of no known game).
    pub game: &'static str,
    /// "connection", "query" or "other".
    pub kind: &'static str,
    /// The game protocol (Quake 3: 68 or 71; QuakeWorld: 28), when known.
    pub protocol: Option<u32>,
    /// "ip:port" (IPv6 as "\[ip\]:port").
    pub server: String,
    /// The client's IP address.
    pub client_ip: String,
    /// Every client UDP port seen, in order of first use (NAT rebinding adds ports).
    pub client_ports: Vec<u16>,
    /// The client's qport (connections).
    pub qport: Option<u16>,
    /// The handshake's challenge (Quake 3 protocol 71 mid-session: solved).
    pub challenge: Option<i64>,
    /// The player's name, when the flow tells it.
    pub name: Option<String>,
    /// Datagrams each way.
    pub packets: PerDir,
    /// UDP payload bytes each way.
    pub bytes: PerDir,
    /// Messages that arrived in fragments (counted once per reassembled message).
    pub fragments: PerDir,
    /// Sequence gaps (messages the receiver never got).
    pub dropped: PerDir,
    /// Duplicates each way (netchan sequence seen before).
    pub duplicates: PerDir,
    /// Packets each way that came after a newer one.
    pub out_of_order: PerDir,
    /// Number of errors in this flow (malformed packets, failed messages).
    pub errors: u64,
    /// The first [`MAX_KEPT_ERRORS`] errors.
    pub error_details: Vec<Error>,
    /// Seconds since the Unix epoch of the first packet.
    pub first_time: f64,
    /// Seconds since the Unix epoch of the last packet.
    pub last_time: f64,
    /// Only on rows of kind "query_aggregate" / "other_aggregate": traffic past a flow limit.
    #[serde(flatten)]
    pub aggregate: Option<AggregateCounts>,
    /// The map of the first gamestate (Quake 3 `mapname`, QuakeWorld's first model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub map: Option<String>,
    /// Demo files: the players seen in the game (spectators aside), in order of appearance
    /// (the first [`MAX_PLAYERS`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub players: Vec<String>,
    /// Every map in order (the first 32), serialized when the server changed map.
    #[serde(skip_serializing_if = "one_or_none")]
    pub maps: Vec<String>,
    /// Demo files: the game time they cover, in seconds (forward steps between snapshots;
    /// a demo has no capture time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub game_seconds: Option<f64>,
    /// Quake 3 and Quake Live demo files: the game type of the first gamestate, as the game
    /// names it (`g_gametype`: "free for all", "clan arena", ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub game_type: Option<String>,
}

/// The counts of an aggregate row (see [`table::QueryAggregate`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AggregateCounts {
    /// The request's command word ("other" for UDP of no known game).
    pub command: String,
    /// Datagrams from clients summed in this row.
    pub requests: u64,
    /// Distinct client IP addresses: exact up to 256, then a HyperLogLog estimate (~3%).
    pub sources: u64,
    /// Server replies to these requests.
    pub answered: u64,
}

/// Most maps a summary lists.
pub const MAX_MAPS: usize = 32;
/// Most players a summary lists (both engines allow at most 64 clients at once).
pub const MAX_PLAYERS: usize = 64;

fn one_or_none(v: &[String]) -> bool {
    v.len() < 2
}

impl FlowSummary {
    /// A player of the game, listed once.
    pub fn add_player(&mut self, name: &str) {
        if self.players.len() < MAX_PLAYERS && !self.players.iter().any(|p| p == name) {
            self.players.push(name.to_string());
        }
    }

    /// A gamestate of map `name`: `map` is the first, `maps` lists each change (a server
    /// cycling maps for days keeps its first [`MAX_MAPS`]).
    pub fn add_map(&mut self, name: &str) {
        if self.map.is_none() {
            self.map = Some(name.to_string());
        }
        if self.maps.len() < MAX_MAPS && self.maps.last().map(String::as_str) != Some(name) {
            self.maps.push(name.to_string());
        }
    }

    /// Record an error: always counted, kept while fewer than [`MAX_KEPT_ERRORS`].
    pub fn push_error(&mut self, e: Error) {
        self.errors += 1;
        if self.error_details.len() < MAX_KEPT_ERRORS {
            self.error_details.push(e);
        }
    }

    /// Count one packet of `len` bytes at time `ts_ns`.
    #[inline]
    pub fn count_packet(&mut self, dir: Dir, len: usize, ts_ns: i64) {
        let t = ts_ns as f64 / 1e9;
        if self.packets.total() == 0 {
            self.first_time = t;
        }
        self.last_time = t;
        *self.packets.get_mut(dir) += 1;
        *self.bytes.get_mut(dir) += len as u64;
    }

    /// Take over the counts of `prior`, an earlier flow of the same endpoints (its directions
    /// reversed when `swapped`); the earlier id and start time win.
    pub fn absorb(&mut self, prior: &FlowSummary, swapped: bool) {
        let flip = |p: &PerDir| {
            if swapped {
                PerDir {
                    c2s: p.s2c,
                    s2c: p.c2s,
                }
            } else {
                *p
            }
        };
        let add = |a: &mut PerDir, b: PerDir| {
            a.c2s += b.c2s;
            a.s2c += b.s2c;
        };
        let empty = self.packets.total() == 0;
        add(&mut self.packets, flip(&prior.packets));
        add(&mut self.bytes, flip(&prior.bytes));
        self.id = self.id.min(prior.id);
        if empty {
            // Absorbed before this flow's first packet (the flow table hands it over then).
            self.first_time = prior.first_time;
            self.last_time = prior.last_time;
        } else if prior.packets.total() > 0 {
            self.first_time = self.first_time.min(prior.first_time);
        }
        for e in &prior.error_details {
            self.push_error(e.clone());
        }
        // The merged flow keeps the earlier id: its errors name that one.
        let id = self.id;
        for e in &mut self.error_details {
            e.pos.flow = Some(id);
        }
    }

    /// Note a client port, keeping first-use order.
    #[inline]
    pub fn add_client_port(&mut self, port: u16) {
        if !self.client_ports.contains(&port) {
            self.client_ports.push(port);
        }
    }
}

/// The hasher of the per-datagram flow lookups: the multiply-rotate hash of rustc's FxHash.
/// The default SipHash cost about 8% of a full decode for two lookups of a small key per
/// datagram; collision resistance against a hostile capture buys nothing in an offline
/// analyzer (at worst a crafted file runs slower).
#[derive(Debug, Default, Clone, Copy)]
pub struct FlowHasher(u64);

impl FlowHasher {
    const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;

    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(Self::K);
    }
}

impl std::hash::Hasher for FlowHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w) ^ ((rest.len() as u64) << 59));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u128(&mut self, i: u128) {
        self.add(i as u64);
        self.add((i >> 64) as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A hash map keyed by flow addresses, with [`FlowHasher`].
pub type FlowMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<FlowHasher>>;
