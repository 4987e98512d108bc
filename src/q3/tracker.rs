//! All Quake 3 flows of one capture stream: recognises Quake 3 traffic on any port by its
//! connectionless handshake, routes every datagram to exactly one flow, and follows a client
//! whose UDP port changes (NAT rebinding) by its qport, as the server does (§1.1). Flow ids,
//! limits and the summaries of traffic past them belong to [`FlowTable`]; this file owns the
//! Quake 3 classification and the per-flow state.
use std::net::SocketAddr;

use super::bits::BitReader;
use super::conn::{Connection, DecodeLog, Options, WorkQueue};
use super::message::Message;
use super::netchan::{checksum71, solve_challenge71, Header, Protocol};
use super::oob;
use crate::flow::held::{HeldPackets, HoldBudget};
use crate::flow::index::{self, Pair, QportIndex};
use crate::flow::table::{self, FlowTable};
use crate::flow::{Dir, FlowMap, FlowSummary};
use crate::net::Datagram;

/// Which side sends a connectionless command.
fn oob_role(payload: &[u8]) -> Option<(Dir, bool)> {
    // (direction, starts a connection)
    let text = payload.get(4..)?;
    let word_end = text.iter().position(|&c| c <= b' ').unwrap_or(text.len());
    let word = &text[..word_end];
    let next = text.get(word_end).copied();
    let w = |s: &str| word.eq_ignore_ascii_case(s.as_bytes());
    // QuakeWorld ends its getchallenge with '\n'; Quake 3 sends none (1.32) or arguments (ioq3).
    if w("getchallenge") && next != Some(b'\n') {
        return Some((Dir::C2s, true));
    }
    if word == b"connect" && text.len() > 10 && is_q3_connect(payload) {
        return Some((Dir::C2s, true));
    }
    if w("getinfo") || w("getstatus") || w("rcon") {
        return Some((Dir::C2s, false));
    }
    if w("challengeResponse") || w("connectResponse") {
        return Some((Dir::S2c, true));
    }
    if w("infoResponse") || w("statusResponse") {
        return Some((Dir::S2c, false));
    }
    None
}

/// False when [`oob_role`] cannot be `Some((Dir::C2s, true))`: that needs a word starting
/// with `g`/`G` (getchallenge, any case) or `c` (connect) at byte 4.
fn may_start_connection(payload: &[u8]) -> bool {
    matches!(payload.get(4), Some(b'g' | b'G' | b'c'))
}

/// A Quake 3 connect carries an adaptive-Huffman userinfo that decodes to `"\...`: its
/// first two bytes tell, read without a tree (decoding the whole userinfo took 20 µs a
/// packet, and a flood of spoofed connects multiplies it).
fn is_q3_connect(payload: &[u8]) -> bool {
    payload
        .get(12..)
        .and_then(|b| super::huffman::adaptive::adaptive_first_two(b).ok())
        .is_some_and(|t| t.starts_with(b"\"\\"))
}

pub use crate::flow::table::{MAX_CLIENT_PORTS, MAX_CONNECTIONS, MAX_FLOW_ROWS, MAX_QUERY_FLOWS};

/// The direction a sequenced Quake 3 packet travels, judged from its shape alone (for
/// connections whose handshake was not captured): a client packet's body starts with three
/// Huffman-coded longs (serverId, messageAcknowledge, reliableAcknowledge) that are never
/// scrambled; a server packet's with a small reliableAcknowledge followed by a server op.
/// Random or QuakeWorld bytes almost never pass (q3-protocol.md §3.6).
pub fn netchan_shape(p: &[u8]) -> Option<Dir> {
    if p.len() < 8 || oob::is_oob(p) {
        return None;
    }
    if c2s_body_shape(p, Protocol::V68).is_some() {
        return Some(Dir::C2s);
    }
    s2c_shape(p, Protocol::V68)
}

/// A server packet's shape on a channel of `proto` (see [`netchan_shape`]).
fn s2c_shape(p: &[u8], proto: Protocol) -> Option<Dir> {
    let small = |v: i32, max: i32| (0..max).contains(&v);
    let h = Header::parse(p, Dir::S2c, proto).ok()?;
    if h.fragmented || h.sequence <= 0 {
        return None;
    }
    let mut r = BitReader::new(h.payload);
    let ack = r.read_long().ok()?;
    let op = r.read_byte().ok()?;
    (small(ack, 1 << 16) && matches!(op, 1 | 5 | 6 | 7 | 8) && r.bit_pos() <= 32)
        .then_some(Dir::S2c)
}

/// A client packet's shape on a channel of `proto` (see [`netchan_shape`]): its header, when
/// the body starts with three plausible Huffman-coded longs.
fn c2s_shape(p: &[u8], proto: Protocol) -> Option<Header<'_>> {
    if p.len() < 8 || oob::is_oob(p) {
        return None;
    }
    c2s_body_shape(p, proto)
}

/// [`c2s_shape`] once the length and the connectionless prefix are checked.
#[inline]
fn c2s_body_shape(p: &[u8], proto: Protocol) -> Option<Header<'_>> {
    let small = |v: i32, max: i32| (0..max).contains(&v);
    let h = Header::parse(p, Dir::C2s, proto).ok()?;
    let mut r = BitReader::new(h.payload);
    let (sid, ack, rel) = (
        r.read_long().ok()?,
        r.read_long().ok()?,
        r.read_long().ok()?,
    );
    (!h.fragmented && sid >= 0 && small(ack, 1 << 26) && small(rel, 1 << 16) && h.sequence > 0)
        .then_some(h)
}

/// Cheap test before [`c2s_shape`] on a 71 channel: a QuakeWorld packet (the other
/// sequenced traffic that reaches the candidate test) has its acknowledgement, a sequence
/// near its own, where a 71 client packet has its qport and half its checksum.
fn maybe_71(p: &[u8]) -> bool {
    p.len() >= 14 && !quakeworld_words(p)
}

/// True for a QuakeWorld netchan packet's shape: its second word is its acknowledgement, a
/// sequence near its own. No Quake 3 packet has it (there the word is the qport and Huffman
/// bits, the checksum, or Huffman bits), so QuakeWorld traffic skips the Quake 3 shape tests
/// and is never held by a mid-session candidate.
fn quakeworld_words(p: &[u8]) -> bool {
    let word = |at: usize| {
        p.get(at..at + 4).map_or(0, |b| {
            u32::from_le_bytes([b[0], b[1], b[2], b[3]]) & 0x7fff_ffff
        })
    };
    p.len() >= 8 && word(0).abs_diff(word(4)) < 4096
}

/// The request a server reply answers (the aggregate it counts in).
fn request_of_reply(text: &[u8]) -> &'static [u8] {
    let word_end = text.iter().position(|&c| c <= b' ').unwrap_or(text.len());
    match &text[..word_end] {
        b"infoResponse" => b"getinfo",
        b"statusResponse" => b"getstatus",
        b"challengeResponse" => b"getchallenge",
        b"connectResponse" => b"connect",
        _ => b"other",
    }
}

/// True for a `connect` packet (a flow it starts counts as a connection).
fn is_connect(payload: &[u8]) -> bool {
    payload.get(4..11) == Some(&b"connect"[..])
}

/// Client packets of one shape in a row before a connection without handshake is claimed.
pub const MID_SESSION_CONFIRM: u8 = 3;
/// Unconfirmed candidate pairs kept at most (memory stays bounded on hostile captures).
const MAX_CANDIDATES: usize = table::MAX_CANDIDATES;

/// Where [`Tracker::route`] put a datagram.
enum Routed {
    Flow(usize, Dir),
    /// Past the flow limits: summed into the table's aggregates.
    Summarised,
}

/// The longest packet from a candidate's server side weighed as a client's while the roles
/// rest on one packet ([`Tracker::mid_session_candidate`]).
const WEAK_ROLE_MAX_LEN: usize = 400;

/// Packets one candidate holds for replay once confirmed: a client loading a map sends
/// nothing for seconds while the server sends its gamestate and snapshots (20/s).
const CANDIDATE_HELD: usize = 128;

/// A pair that looks like a Quake 3 connection seen mid-session, not yet confirmed.
#[derive(Debug)]
struct Candidate {
    qport: u16,
    seq: i32,
    hits: u8,
    /// Protocol 71: the challenge solved from an even sequence's checksum, the packets it
    /// verified (with the one it came from), and whether some packet ruled 71 out.
    ch71: Option<i32>,
    ok71: u8,
    not71: bool,
    /// Its packets so far (both directions), replayed once it is confirmed as protocol 71.
    held: HeldPackets,
}

impl Candidate {
    fn new(qport: u16, seq: i32) -> Self {
        Candidate {
            qport,
            seq,
            hits: 0,
            ch71: None,
            ok71: 0,
            not71: false,
            held: HeldPackets::default(),
        }
    }

    /// Weigh one client packet as protocol 71 (`h`: its V71 header, when it has that shape).
    fn evidence71(&mut self, h: Option<&Header<'_>>) {
        let Some((seq, sum)) = h.and_then(|h| Some((h.sequence, h.checksum?))) else {
            self.not71 = true;
            return;
        };
        match self.ch71 {
            Some(ch) if checksum71(ch, seq) == sum => self.ok71 = self.ok71.saturating_add(1),
            Some(_) => {
                self.not71 = true;
                self.ch71 = None;
            }
            None if !self.not71 => {
                self.ch71 = solve_challenge71(seq, sum);
                self.ok71 = u8::from(self.ch71.is_some());
            }
            None => {}
        }
    }
}

/// The flows of an address pair `(a, b)`, as 32-bit flow numbers: the pair index's memo slot
/// is then 32 bytes (key and value), two to a cache line, where `usize`s made it 48 (a
/// thousand live connections' lookups miss the memo less when it takes less cache).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct PairFlows {
    /// The flow with server `a` and client `b`.
    a: Option<u32>,
    /// The flow with server `b` and client `a`.
    b: Option<u32>,
}

impl PairFlows {
    /// The flow with server `a` and client `b`.
    fn a_serves(self) -> Option<usize> {
        self.a.map(|i| i as usize)
    }

    /// The flow with server `b` and client `a`.
    fn b_serves(self) -> Option<usize> {
        self.b.map(|i| i as usize)
    }
}

/// A flow's number as [`PairFlows`] keeps it. The flow rows are bounded far below 2³²
/// ([`MAX_FLOW_ROWS`]); a number past it would be kept as no flow, never as another.
fn flow_number(i: usize) -> Option<u32> {
    u32::try_from(i).ok()
}

/// The flows of every address pair, under both orders of the pair: one lookup per datagram
/// finds its flow in either direction.
#[derive(Debug, Default)]
struct PairIndex {
    index: index::PairIndex<PairFlows>,
    /// Insertions so far: a lookup made earlier still holds while this is unchanged.
    generation: u64,
}

impl PairIndex {
    /// The flows of `p` (none known: both `None`).
    fn get(&mut self, p: &Pair) -> PairFlows {
        self.index.get(p)
    }

    /// [`Self::get`] of the pair (`a`, `b`): the router's lookup, inlined.
    #[inline]
    fn get_ends(&mut self, a: &SocketAddr, b: &SocketAddr) -> PairFlows {
        self.index.get_ends(a, b)
    }

    /// Map `(server, client)` to flow `i`.
    fn insert(&mut self, server: SocketAddr, client: SocketAddr, i: usize) {
        self.generation += 1;
        self.index
            .update((server, client), |f| f.a = flow_number(i));
        self.index
            .update((client, server), |f| f.b = flow_number(i));
    }
}

/// A datagram not handled yet, and the flow it will go to (as far as the index knows
/// now): what its later prefetch levels need ([`Tracker::prefetch_ahead`]).
#[derive(Debug, Clone, Copy)]
pub struct Ahead {
    /// The pair as routing looks it up, what the index held for it, and the index's
    /// generation then: while no pair was inserted since, routing the datagram can take
    /// `known` instead of looking it up again.
    key: Pair,
    known: PairFlows,
    generation: u64,
    flow: Option<usize>,
    dir: Dir,
    seq: i32,
}

/// Which limit a new flow counts against ([`Tracker::new_flow`]).
#[derive(Debug, Clone, Copy)]
enum Budget {
    Connect,
    MidSession,
    Query,
}

/// Tracks every Quake 3 flow of a capture.
#[derive(Debug, Default)]
pub struct Tracker {
    opts: Options,
    flows: Vec<Connection>,
    /// Flows created by a `connect`, by a netchan recognised mid-session, and by anything
    /// else (see the limits above). A `connect` and a recognised netchan count apart: a
    /// flood of spoofed `connect`s, never answered, must not leave no room for a real client
    /// whose own `connect` came past the limit, recognised by its netchan instead.
    connections: usize,
    mid_session: usize,
    queries: usize,
    /// The limit each flow counts against, by flow index, and whether it counts now: a flow
    /// that went idle (its state released) stops counting, and counts again if it comes
    /// back (as an existing row, even past the limit).
    charged: Vec<(Budget, bool)>,
    /// (server, client address) -> flow index, kept under both orders of the pair so that
    /// one lookup per datagram finds its flow in either direction.
    by_pair: PairIndex,
    /// (server, client IP, qport) -> connection index.
    by_qport: QportIndex,
    /// (server, client) pairs that may be connections seen mid-session.
    candidates: FlowMap<(SocketAddr, SocketAddr), Candidate>,
    /// Bytes the candidates hold.
    held: HoldBudget,
    /// Capture time of the last idle scan.
    last_scan_ns: i64,
    /// See [`Self::active`].
    active: usize,
    /// See [`Self::hints_taken`].
    hints_taken: u64,
    /// Flows released for idleness, for [`Self::take_ended`] ([`Self::with_flow_ends`]).
    ended: table::Released,
}

/// Capture time between two scans for idle connections.
const IDLE_SCAN_NS: i64 = 10_000_000_000;

impl Tracker {
    pub fn new(opts: Options) -> Self {
        Tracker {
            opts,
            ..Default::default()
        }
    }

    /// Also keep the flows whose decode state is released for idleness, for
    /// [`Self::take_ended`] (whoever asks must take them after every offer).
    pub fn with_flow_ends(mut self) -> Self {
        self.ended.keep();
        self
    }

    /// True when flows were released since the last [`Self::take_ended`].
    #[inline]
    pub fn has_ended(&self) -> bool {
        self.ended.any()
    }

    /// The summaries of the flows released since the last call, in the order released.
    #[cold]
    pub fn take_ended(&mut self, out: &mut Vec<FlowSummary>) {
        self.ended.take_into(&self.flows, Connection::summary, out);
    }

    /// Offer one datagram. Returns false, touching nothing, when it is not Quake 3 traffic
    /// this tracker knows or recognises. A new flow takes its id from `table`. Decoded
    /// messages go to `out`; with detached decoders the decoding work goes to `work` instead.
    pub fn offer(
        &mut self,
        d: &Datagram<'_>,
        table: &mut FlowTable,
        out: &mut Vec<Message>,
        work: &mut WorkQueue,
    ) -> bool {
        self.offer_hinted(d, None, table, out, work)
    }

    /// [`Self::offer`], with what [`Self::prefetch_ahead`] found for `d` when it was a
    /// datagram ahead (`hint`: checked, not trusted).
    pub fn offer_hinted(
        &mut self,
        d: &Datagram<'_>,
        hint: Option<&Ahead>,
        table: &mut FlowTable,
        out: &mut Vec<Message>,
        work: &mut WorkQueue,
    ) -> bool {
        self.scan_idle(d.ts_ns, work);
        let (idx, dir) = match self.route(d, hint, table, out, work) {
            Some(Routed::Flow(i, dir)) => (i, dir),
            Some(Routed::Summarised) => return true,
            None => return false,
        };
        if self.flows[idx].released() {
            self.counts_again(idx);
        }
        let conn = &mut self.flows[idx];
        let was_connected = conn.summary.qport;
        conn.handle(dir, d, out, work);
        // A connect names the qport: from now on the server follows the client by it.
        if conn.summary.qport != was_connected {
            if let Some(q) = conn.summary.qport {
                let (server, client) = (conn.server, conn.client.ip());
                self.by_qport.insert(server, client, q, idx);
            }
        }
        true
    }

    /// Look up the flow of `d`, a datagram that comes later (it is not handled here), and
    /// prefetch its connection's first level ([`Connection::prefetch`]). The lookup leaves
    /// the pair in the index's memo, where routing `d` finds it again. None for a datagram
    /// of no known flow.
    pub fn prefetch_ahead(&mut self, d: &Datagram<'_>) -> Ahead {
        let key = (d.dst, d.src);
        let known = self.by_pair.get(&key);
        let (flow, dir) = match (known.a_serves(), known.b_serves()) {
            (Some(i), _) => (Some(i), Dir::C2s),
            (None, Some(i)) => (Some(i), Dir::S2c),
            (None, None) => (None, Dir::C2s),
        };
        let seq = d
            .payload
            .get(..4)
            .map_or(0, |b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        let a = Ahead {
            key,
            known,
            generation: self.by_pair.generation,
            flow,
            dir,
            seq,
        };
        self.prefetch(&a, 0);
        a
    }

    /// Prefetch level `level` of the connection of `a` (see [`Connection::prefetch`]).
    #[inline]
    pub fn prefetch(&self, a: &Ahead, level: u8) {
        if let Some(c) = a.flow.and_then(|i| self.flows.get(i)) {
            c.prefetch(level, a.dir, a.seq);
        }
    }

    /// The flows of the pair `d` travels on: from `hint` (its [`Self::prefetch_ahead`])
    /// when that was made for this pair and no pair was inserted since, else looked up.
    #[inline]
    fn pair_flows(&mut self, d: &Datagram<'_>, hint: Option<&Ahead>) -> PairFlows {
        match hint {
            Some(h)
                if h.generation == self.by_pair.generation
                    && h.key.0 == d.dst
                    && h.key.1 == d.src =>
            {
                self.hints_taken += 1;
                h.known
            }
            _ => self.by_pair.get_ends(&d.dst, &d.src),
        }
    }

    /// Datagrams routed with the lookup made for them ahead ([`Self::offer_hinted`]).
    pub fn hints_taken(&self) -> u64 {
        self.hints_taken
    }

    /// Now and then, release the decode state of connections silent for long: memory then
    /// follows the number of live connections, not the length of the capture.
    fn scan_idle(&mut self, now_ns: i64, work: &mut WorkQueue) {
        if now_ns.saturating_sub(self.last_scan_ns) < IDLE_SCAN_NS {
            return;
        }
        self.last_scan_ns = now_ns;
        let mut active = 0;
        for (i, conn) in self.flows.iter_mut().enumerate() {
            if conn.release_if_idle(now_ns, work) {
                self.ended.push(i);
                if let Some((b, counts)) = self.charged.get_mut(i).filter(|c| c.1) {
                    *counts = false;
                    let n = Self::count_of(
                        b,
                        &mut self.connections,
                        &mut self.mid_session,
                        &mut self.queries,
                    );
                    *n = n.saturating_sub(1);
                }
            }
            let last_ns = (conn.summary.last_time * 1e9) as i64;
            active += usize::from(now_ns.saturating_sub(last_ns) < IDLE_SCAN_NS);
        }
        self.active = active;
    }

    /// The counter of limit `b`.
    fn count_of<'a>(
        b: &Budget,
        connections: &'a mut usize,
        mid_session: &'a mut usize,
        queries: &'a mut usize,
    ) -> &'a mut usize {
        match b {
            Budget::Connect => connections,
            Budget::MidSession => mid_session,
            Budget::Query => queries,
        }
    }

    /// Flow `i`, released for idleness, has traffic again: it counts against its limit again.
    #[cold]
    fn counts_again(&mut self, i: usize) {
        if let Some((b, counts)) = self.charged.get_mut(i).filter(|c| !c.1) {
            *counts = true;
            *Self::count_of(
                b,
                &mut self.connections,
                &mut self.mid_session,
                &mut self.queries,
            ) += 1;
        }
    }

    /// Connections that sent or received within the last idle scan's interval (10 s of
    /// capture time), as of that scan: how many interleave, so how much state the caches
    /// would have to hold.
    pub fn active(&self) -> usize {
        self.active
    }

    /// Map `(server, client)` to flow `i`.
    fn insert_pair(&mut self, server: SocketAddr, client: SocketAddr, i: usize) {
        self.by_pair.insert(server, client, i);
    }

    fn route(
        &mut self,
        d: &Datagram<'_>,
        hint: Option<&Ahead>,
        table: &mut FlowTable,
        out: &mut Vec<Message>,
        work: &mut WorkQueue,
    ) -> Option<Routed> {
        let known = self.pair_flows(d, hint);
        if let Some(i) = known.a_serves() {
            // A new handshake after an established netchan starts a new connection.
            // established() and the first letter first: they are cheap, and this runs for
            // every client packet; oob_role may decompress a connect.
            let restart = self.flows[i].established()
                && may_start_connection(d.payload)
                && matches!(oob_role(d.payload), Some((Dir::C2s, true)));
            if !restart {
                return Some(Routed::Flow(i, Dir::C2s));
            }
            return Some(self.new_or_summarised(d, Dir::C2s, table));
        }
        if let Some(i) = known.b_serves() {
            return Some(Routed::Flow(i, Dir::S2c));
        }
        if oob::is_oob(d.payload) {
            let (dir, _) = oob_role(d.payload)?;
            return Some(self.new_or_summarised(d, dir, table));
        }
        // A sequenced client packet from a new port with a known qport: NAT rebinding.
        if let Some(q) = Header::parse(d.payload, Dir::C2s, Protocol::V68)
            .ok()
            .and_then(|h| h.qport)
        {
            if let Some(i) = self.by_qport.get(d.dst, d.src.ip(), q) {
                if self.flows[i].summary.client_ports.len() >= MAX_CLIENT_PORTS {
                    return None;
                }
                self.insert_pair(d.dst, d.src, i);
                return Some(Routed::Flow(i, Dir::C2s));
            }
        }
        self.mid_session_candidate(d, table, out, work)
            .map(|(i, dir)| Routed::Flow(i, dir))
    }

    /// A new flow for a connectionless packet sent in `dir`, or, past the limits, the packet
    /// summed into its server's aggregate for the command (a reply: for the request it
    /// answers).
    fn new_or_summarised(&mut self, d: &Datagram<'_>, dir: Dir, table: &mut FlowTable) -> Routed {
        let (server, client) = match dir {
            Dir::C2s => (d.dst, d.src),
            Dir::S2c => (d.src, d.dst),
        };
        let budget = match is_connect(d.payload) {
            true => Budget::Connect,
            false => Budget::Query,
        };
        if let Some(i) = self.new_flow(server, client, budget, d.frame, table) {
            return Routed::Flow(i, dir);
        }
        let text = d.payload.get(4..).unwrap_or_default();
        let command = match dir {
            Dir::C2s => text,
            Dir::S2c => request_of_reply(text),
        };
        table.aggregate_query("q3", server, command, d, dir);
        Routed::Summarised
    }

    /// A connection whose handshake the capture missed, recognised by its netchan shape: it is
    /// claimed only after [`MID_SESSION_CONFIRM`] client packets in a row keep one qport and
    /// rising sequences (a single packet of another game can pass the shape test by chance;
    /// a QuakeWorld client's bytes 4..6 are its changing acknowledgement).
    fn mid_session_candidate(
        &mut self,
        d: &Datagram<'_>,
        table: &mut FlowTable,
        out: &mut Vec<Message>,
        work: &mut WorkQueue,
    ) -> Option<(usize, Dir)> {
        // A packet from the server of a candidate is that candidate's server packet, whatever
        // its bytes look like (a server packet can pass the client shape): once a client
        // packet named the pair's roles, or the sender sent server packets before. (One odd
        // client packet with a server's shape must not turn the roles round.)
        let prior = if self.candidates.is_empty() {
            None
        } else {
            self.candidates
                .get(&(d.src, d.dst))
                .map(|c| (c.hits, c.held.len()))
        };
        // One client-shaped packet and nothing else names the roles only weakly: a cut can
        // open with a server packet that passes the client shape, and the real client's
        // packets would then all be held as the server's. So while a candidate rests on
        // that one packet, a small packet the other way with a client's shape is weighed
        // as a client's instead (small: a client's moves are 15–60 bytes; the server's
        // signon is fragments of a kilobyte and more).
        let weak = prior.is_some_and(|(hits, held)| hits == 1 && held == 1)
            && d.payload.len() <= WEAK_ROLE_MAX_LEN
            && netchan_shape(d.payload) == Some(Dir::C2s);
        if !weak && prior.is_some_and(|(hits, held)| hits > 0 || held >= 2) {
            self.hold_server_packet(d, false);
            return None;
        }
        if quakeworld_words(d.payload) {
            return None;
        }
        let h71 = maybe_71(d.payload)
            .then(|| c2s_shape(d.payload, Protocol::V71))
            .flatten();
        let shape = if h71.is_some() {
            Some(Dir::C2s)
        } else {
            netchan_shape(d.payload)
        };
        if shape != Some(Dir::C2s) {
            let shaped = shape == Some(Dir::S2c)
                || (d.payload.len() >= 12 && s2c_shape(d.payload, Protocol::V71).is_some());
            self.hold_server_packet(d, shaped);
            return None;
        }
        let h = Header::parse(d.payload, Dir::C2s, Protocol::V68).ok()?;
        let qport = h.qport?;
        let key = (d.dst, d.src);
        if self.candidates.len() >= MAX_CANDIDATES && !self.candidates.contains_key(&key) {
            self.candidates.clear();
            self.held.clear();
        }
        let c = self
            .candidates
            .entry(key)
            .or_insert(Candidate::new(qport, h.sequence));
        if c.hits > 0 && (c.qport != qport || h.sequence <= c.seq) {
            self.held.release(&c.held);
            *c = Candidate::new(qport, h.sequence);
        }
        // Held server packets (if any) came first; the client packet names the qport.
        c.qport = qport;
        c.hits = c.hits.saturating_add(1);
        c.seq = h.sequence;
        c.evidence71(h71.as_ref());
        // Protocol 71 once one challenge verified two packets; 68 once 71 is ruled out (or
        // never settled over many packets: an odd-only run cannot last).
        let ch71 = c.ch71.filter(|_| c.ok71 >= 2);
        if c.hits < MID_SESSION_CONFIRM || (ch71.is_none() && !c.not71 && c.hits < 8) {
            self.held.hold(&mut c.held, CANDIDATE_HELD, Dir::C2s, d);
            return None;
        }
        let c = self.candidates.remove(&key)?;
        self.held.release(&c.held);
        let i = self.new_flow(d.dst, d.src, Budget::MidSession, d.frame, table)?;
        match ch71 {
            Some(ch) => {
                self.flows[i].mark_mid_session71(d.frame, ch, c.held.len());
                // The held packets are in the counts the flow adopted: replayed, not counted.
                for (dir, dg) in c.held.datagrams() {
                    self.flows[i].replay(dir, &dg, out, work);
                }
            }
            None => {
                // Protocol 68: the held packets are replayed as for 71: they feed the key
                // search, and once it locks on, their commands feed the keys.
                self.flows[i].mark_mid_session(d.frame);
                for (dir, dg) in c.held.datagrams() {
                    self.flows[i].replay(dir, &dg, out, work);
                }
            }
        }
        Some((i, Dir::C2s))
    }

    /// A packet that is not a client's, to an address that may be a client seen
    /// mid-session: held for the replay by its candidate. `shaped`: it has a server packet's
    /// shape, which starts a candidate (the server may send for seconds before the client
    /// does, e.g. the gamestate and snapshots while the client loads the map).
    fn hold_server_packet(&mut self, d: &Datagram<'_>, shaped: bool) {
        if oob::is_oob(d.payload) || (self.candidates.is_empty() && !shaped) {
            return;
        }
        let key = (d.src, d.dst);
        if shaped && !self.candidates.contains_key(&key) {
            if self.candidates.len() >= MAX_CANDIDATES {
                return;
            }
            self.candidates.insert(key, Candidate::new(0, 0));
        }
        if let Some(c) = self.candidates.get_mut(&key) {
            self.held.hold(&mut c.held, CANDIDATE_HELD, Dir::S2c, d);
        }
    }

    /// A new flow, or None when its budget's limit (of flows live at a time) or the limit of
    /// rows is reached: a connection for a flow that starts with a `connect` or in the middle
    /// of a netchan, else a query. What these
    /// endpoints sent before as other UDP is adopted (its id and counts).
    fn new_flow(
        &mut self,
        server: SocketAddr,
        client: SocketAddr,
        budget: Budget,
        frame: u64,
        table: &mut FlowTable,
    ) -> Option<usize> {
        if self.flows.len() >= MAX_FLOW_ROWS {
            table.refuse_row(frame);
            return None;
        }
        let (count, limit) = match budget {
            Budget::Connect => (&mut self.connections, MAX_CONNECTIONS),
            Budget::MidSession => (&mut self.mid_session, MAX_CONNECTIONS),
            Budget::Query => (&mut self.queries, MAX_QUERY_FLOWS),
        };
        if *count >= limit {
            return None;
        }
        *count += 1;
        self.charged.push((budget, true));
        let claim = table.claim(server, client, true);
        let mut conn = Connection::new(claim.id, server, client, self.opts);
        if let Some((prior, swapped)) = &claim.prior {
            conn.summary.absorb(prior, *swapped);
        }
        self.flows.push(conn);
        let i = self.flows.len() - 1;
        self.insert_pair(server, client, i);
        Some(i)
    }

    /// One summary per flow, in id order.
    pub fn summaries(&self) -> Vec<FlowSummary> {
        self.flows.iter().map(Connection::summary).collect()
    }

    /// As [`Self::summaries`], adding the errors of decoders that ran detached.
    pub fn summaries_with(&self, logs: &FlowMap<u32, DecodeLog>) -> Vec<FlowSummary> {
        self.flows
            .iter()
            .map(|c| {
                let mut s = c.summary();
                if let Some(log) = logs.get(&s.id) {
                    log.merge_into(&mut s);
                }
                s
            })
            .collect()
    }

    /// The flows (for sinks that need their final state).
    pub fn flows(&self) -> &[Connection] {
        &self.flows
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::net::IpAddr;

    proptest! {
        /// A pair's flows are found under both orders, as a plain model says.
        #[test]
        fn pair_index_keeps_both_orders(
            ops in proptest::collection::vec((any::<bool>(), 0u8..12, 0u8..12, 0usize..50), 1..200),
        ) {
            let addr = |n: u8| -> SocketAddr {
                SocketAddr::new(IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, n % 4)), 27960 + u16::from(n / 4))
            };
            let mut index = PairIndex::default();
            let mut model: std::collections::HashMap<Pair, PairFlows> = Default::default();
            for (insert, a, b, i) in ops {
                let (a, b) = (addr(a), addr(b));
                if insert {
                    index.insert(a, b, i);
                    model.entry((a, b)).or_default().a = Some(i as u32);
                    model.entry((b, a)).or_default().b = Some(i as u32);
                } else {
                    let want = model.get(&(a, b)).copied().unwrap_or_default();
                    prop_assert_eq!(index.get(&(a, b)), want);
                }
            }
        }
    }
}
