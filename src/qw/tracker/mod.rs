//! Finding QuakeWorld flows in a stream of UDP datagrams and running both directions of each
//! connection (spec §1, §2.4, §3, §4, §10).
//!
//! * Connectionless packets are recognised by content (any port): client commands
//!   (`getchallenge`, `connect`, `status`, `ping`, …) open a flow; server replies join the flow
//!   of their client address. A handshake flow becomes a connection at its `j` reply; a new
//!   `getchallenge` after an accepted connection starts a new flow.
//! * Netchan packets belong to the newest accepted connection of server + client IP + qport
//!   (c2s; a new client port is NAT rebinding) or server + client address (s2c).
//! * A connection whose handshake the capture missed is recognised by its netchan shape
//!   ([`MID_SESSION_CONFIRM`] client packets with one qport and rising sequences, and a server
//!   packet to the same address acknowledging one of them); its first packets are held
//!   (bounded) and replayed, so the netchan is emulated from the first packet. Its protocol
//!   extensions are found by decoding (see [`MidSession`]); entity values stay unknown until a
//!   serverdata gives the baselines.
//! * Flow ids and limits belong to [`FlowTable`]: past [`MAX_QUERY_FLOWS`] queries (and past
//!   [`MAX_CONNECTIONS`] handshakes) a client command is summed into its server's aggregate
//!   for that command; replies of a server with aggregates to unknown clients count as
//!   answered there.
use super::clc;
use super::cursor::Reader;
use super::ext::{self, Asked, Ext};
use super::message::{Message, NetchanStatus, Op, OpKind};
use super::netchan::{Header, Receiver, Verdict};
use super::oob::{self, Oob};
use super::qwd::RawPacket;
use super::svc::{self, ServerOp, ServerState};
use super::{Event, Options};
use crate::error::{Error, ErrorKind};
use crate::flow::held::{HeldPackets, HoldBudget};
use crate::flow::index::{PairIndex, QportIndex};
use crate::flow::table::{
    FlowTable, Released, IDLE_RELEASE_NS, MAX_CANDIDATES, MAX_CLIENT_PORTS, MAX_CONNECTIONS,
    MAX_FLOW_ROWS, MAX_QUERY_FLOWS,
};
use crate::flow::{Dir, FlowMap, FlowSummary};
use crate::net::Datagram;
use std::net::SocketAddr;

mod flow;
mod midsession;
mod reliable;

use flow::*;
pub use midsession::MID_SESSION_CONFIRM;
use midsession::*;
use reliable::*;

/// How often (capture time) flows are looked at for [`IDLE_RELEASE_NS`].
const IDLE_SCAN_NS: i64 = 10_000_000_000;

/// All QuakeWorld flows of one capture.
pub struct Tracker {
    opts: Options,
    flows: Vec<Flow>,
    /// (server, client address) → newest flow (indexes into `flows`, which only grows).
    by_pair: PairIndex<Option<usize>>,
    /// (server, client address) → newest accepted connection using that address.
    by_accepted_pair: PairIndex<Option<usize>>,
    /// (server, client IP, qport) → newest accepted connection.
    by_qport: QportIndex,
    /// Accepted connections (a `j` reply, or confirmed mid-session): each holds a decoder
    /// state. Handshakes not accepted (yet) count apart: spoofed `connect`s, never answered,
    /// must not use up the connections' room, or a real client connecting after a flood of
    /// them would not be followed at all.
    connections: usize,
    handshakes: usize,
    queries: usize,
    /// Capture time of the last idle scan.
    last_scan_ns: i64,
    /// Servers with summed queries (their replies to unknown clients count as answered);
    /// bounded by the table's aggregate limit.
    summarised_servers: FlowMap<SocketAddr, ()>,
    /// (server, client) pairs that may be connections seen mid-session (bounded by
    /// [`MAX_CANDIDATES`] pairs and the held bytes' budget).
    candidates: FlowMap<(SocketAddr, SocketAddr), Candidate>,
    held: HoldBudget,
    /// Flows released for idleness, for [`Tracker::take_ended`] ([`Tracker::with_flow_ends`]).
    ended: Released,
}

/// Client commands that are QuakeWorld connectionless requests (spec §3.1).
fn is_qw_client_command(o: &Oob, body: &[u8]) -> bool {
    match o {
        // Quake 3 sends `getchallenge` without the newline (ioquake3 adds arguments).
        Oob::Getchallenge => body.ends_with(b"\n"),
        Oob::Connect { protocol, .. } => *protocol == 28,
        Oob::Status { .. } | Oob::Ping => true,
        Oob::Command { name } => matches!(
            name.as_str(),
            "ip" | "log" | "rcon" | "lastscores" | "laststats" | "dlist" | "demolist" | "qtvusers"
        ),
        _ => false,
    }
}

fn dir_index(d: Dir) -> usize {
    match d {
        Dir::C2s => 0,
        Dir::S2c => 1,
    }
}

impl Tracker {
    /// Release the flows silent for [`IDLE_RELEASE_NS`] at capture time `now_ns`: each
    /// frees its decoder state and no longer counts as a connection, handshake or query.
    fn scan_idle(&mut self, now_ns: i64) {
        self.last_scan_ns = now_ns;
        for (i, f) in self
            .flows
            .iter_mut()
            .enumerate()
            .filter(|(_, f)| !f.released)
        {
            let last_ns = (f.sum.last_time * 1e9) as i64;
            if now_ns.saturating_sub(last_ns) < IDLE_RELEASE_NS {
                continue;
            }
            f.released = true;
            f.state = None;
            self.ended.push(i);
            let count = if f.accepted {
                &mut self.connections
            } else if f.handshake {
                &mut self.handshakes
            } else {
                &mut self.queries
            };
            *count = count.saturating_sub(1);
        }
    }

    pub fn new(opts: Options) -> Self {
        Tracker {
            opts,
            flows: Vec::new(),
            by_pair: PairIndex::default(),
            by_accepted_pair: PairIndex::default(),
            by_qport: QportIndex::default(),
            connections: 0,
            handshakes: 0,
            queries: 0,
            last_scan_ns: 0,
            summarised_servers: FlowMap::default(),
            candidates: FlowMap::default(),
            held: HoldBudget::default(),
            ended: Released::default(),
        }
    }

    /// Also keep the flows released for idleness, for [`Self::take_ended`] (whoever asks
    /// must take them after every offer).
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
        self.ended.take_into(&self.flows, summary_of, out);
    }

    fn decoding(&self) -> bool {
        self.opts.decode || self.opts.keep_raw
    }

    /// Offer one UDP datagram; false (nothing touched) when it is not QuakeWorld traffic.
    pub fn offer(&mut self, d: &Datagram<'_>, table: &mut FlowTable, out: &mut Vec<Event>) -> bool {
        if d.ts_ns.saturating_sub(self.last_scan_ns) >= IDLE_SCAN_NS {
            self.scan_idle(d.ts_ns);
        }
        if oob::is_oob(d.payload) {
            return self.offer_oob(d, table, out);
        }
        // Raw 1-byte ping reply 'l' (no FF prefix) to a query we know.
        if d.payload == b"l" {
            if let Some(i) = self.find_by_addrs(d.src, d.dst) {
                self.count(i, Dir::S2c, d, Some(Oob::Ack), out);
                return true;
            }
            return self.summarised_reply(d, b"ping", table);
        }
        if let Some(i) = self.find_netchan_c2s(d).or_else(|| self.learn_qport(d)) {
            self.netchan(i, Dir::C2s, d, out, true);
            return true;
        }
        if let Some(i) = self.find_netchan_s2c(d) {
            self.netchan(i, Dir::S2c, d, out, true);
            return true;
        }
        self.mid_session(d, table, out)
    }

    /// A netchan packet of no known connection: a candidate connection seen mid-session
    /// (see the module docs). Unconfirmed packets are left to the table (false) and held for
    /// replay; at confirmation the flow adopts the table's counts and replays what it held.
    fn mid_session(
        &mut self,
        d: &Datagram<'_>,
        table: &mut FlowTable,
        out: &mut Vec<Event>,
    ) -> bool {
        // A packet from the server of a candidate is that candidate's server packet, whatever
        // its bytes look like (a server packet can pass the client shape).
        let from_server = !self.candidates.is_empty()
            && self
                .candidates
                .get(&(d.src, d.dst))
                .is_some_and(|c| c.hits > 0);
        let (key, dir) = if let Some((h, checked)) = c2s_shape(d.payload).filter(|_| !from_server) {
            let (seq, qport) = (h.sequence(), h.qport().unwrap_or(0));
            let key = (d.dst, d.src);
            if !self.candidates.contains_key(&key) && self.candidates.len() >= MAX_CANDIDATES {
                self.candidates.clear();
                self.held.clear();
            }
            let c = self.candidates.entry(key).or_insert(Candidate {
                qport,
                first_seq: seq,
                seq,
                hits: 0,
                answered: false,
                moves: 0,
                held: HeldPackets::default(),
            });
            if c.hits > 0 && (c.qport != qport || seq <= c.seq || seq - c.seq > CANDIDATE_MAX_STEP)
            {
                self.held.release(&c.held);
                *c = Candidate {
                    qport,
                    first_seq: seq,
                    seq,
                    hits: 0,
                    answered: false,
                    moves: 0,
                    held: HeldPackets::default(),
                };
            }
            if c.hits == 0 {
                // Held server packets (if any) came first; the client packet names the qport.
                c.qport = qport;
                c.first_seq = seq;
            }
            c.hits = c.hits.saturating_add(1);
            c.moves = c.moves.saturating_add(u8::from(checked));
            c.seq = seq;
            (key, Dir::C2s)
        } else {
            let key = (d.src, d.dst);
            if oob::is_oob(d.payload) {
                return false;
            }
            let Some(h) = Header::new_checked(d.payload, Dir::S2c) else {
                return false;
            };
            if !self.candidates.contains_key(&key) {
                // A server packet before any client packet: held (a few) in case the client
                // turns out to be a connection, so that decoding starts at the first packet.
                if self.candidates.len() >= MAX_CANDIDATES || h.sequence() == 0 {
                    return false;
                }
                self.candidates.insert(
                    key,
                    Candidate {
                        qport: 0,
                        first_seq: 0,
                        seq: 0,
                        hits: 0,
                        answered: false,
                        moves: 0,
                        held: HeldPackets::default(),
                    },
                );
            }
            let Some(c) = self.candidates.get_mut(&key) else {
                return false;
            };
            if c.hits > 0 && (c.first_seq..=c.seq).contains(&h.ack()) {
                c.answered = true;
            }
            (key, Dir::S2c)
        };
        let Some(c) = self.candidates.get_mut(&key) else {
            return false;
        };
        if c.hits < MID_SESSION_CONFIRM || !c.answered || c.moves < MID_SESSION_CONFIRM - 1 {
            let room = if c.hits == 0 { 2 } else { CANDIDATE_HELD };
            self.held.hold(&mut c.held, room, dir, d);
            return false;
        }
        let Some(c) = self.candidates.remove(&key) else {
            return false;
        };
        self.held.release(&c.held);
        if self.flows.len() >= MAX_FLOW_ROWS {
            table.refuse_row(d.frame);
            return false;
        }
        if self.connections >= MAX_CONNECTIONS {
            return false;
        }
        self.connections += 1;
        let (server, client) = key;
        let claim = table.claim(server, client, true);
        let mut f = Flow::new(claim.id, server, client, true);
        // The flow starts at the adopted counts (the held packets are in them).
        let first_frame = c.held.first_frame().unwrap_or(d.frame);
        f.sum = FlowSummary {
            packets: Default::default(),
            bytes: Default::default(),
            client_ports: Vec::new(),
            ..f.sum
        };
        if let Some((prior, swapped)) = &claim.prior {
            f.sum.absorb(prior, *swapped);
        }
        f.sum.add_client_port(client.port());
        f.accepted = true;
        f.qport = Some(c.qport);
        f.sum.qport = Some(c.qport);
        f.state = Some(Box::new(ServerState {
            baselines_known: false,
            ..ServerState::new(false)
        }));
        let mut mid = MidSession::new(first_frame);
        mid.recognised_after = c.held.len() + 1;
        f.mid = Some(Box::new(mid));
        self.flows.push(f);
        let i = self.flows.len() - 1;
        self.by_pair.insert(key, Some(i));
        self.by_accepted_pair.insert(key, Some(i));
        self.by_qport.insert(server, client.ip(), c.qport, i);
        for (dir, dg) in c.held.datagrams() {
            self.netchan(i, dir, &dg, out, false);
        }
        self.netchan(i, dir, d, out, true);
        true
    }

    /// Newest flow with this server and client address.
    fn find_by_addrs(&mut self, server: SocketAddr, client: SocketAddr) -> Option<usize> {
        self.by_pair.get(&(server, client))
    }

    /// Newest accepted connection of server + client IP + qport (the server's own rule).
    fn find_netchan_c2s(&self, d: &Datagram<'_>) -> Option<usize> {
        let h = Header::new_checked(d.payload, Dir::C2s)?;
        let q = h.qport()?;
        self.by_qport.get(d.dst, d.src.ip(), q)
    }

    /// A client packet of a connection accepted without its `connect` ([`Self::accept_summarised`]):
    /// the first one names the qport the connection then goes by.
    fn learn_qport(&mut self, d: &Datagram<'_>) -> Option<usize> {
        let i = self.by_accepted_pair.get(&(d.dst, d.src))?;
        let q = Header::new_checked(d.payload, Dir::C2s)?.qport()?;
        let f = self.flows.get_mut(i).filter(|f| f.qport.is_none())?;
        f.qport = Some(q);
        f.sum.qport = Some(q);
        self.by_qport.insert(d.dst, d.src.ip(), q, i);
        Some(i)
    }

    /// Newest accepted connection the server sends to at this client address.
    fn find_netchan_s2c(&mut self, d: &Datagram<'_>) -> Option<usize> {
        Header::new_checked(d.payload, Dir::S2c)?;
        self.by_accepted_pair.get(&(d.src, d.dst))
    }

    fn offer_oob(&mut self, d: &Datagram<'_>, table: &mut FlowTable, out: &mut Vec<Event>) -> bool {
        let body = d.payload.get(4..).unwrap_or(&[]);
        let c2s = oob::parse_c2s(body);
        if is_qw_client_command(&c2s, body) {
            let handshake = matches!(c2s, Oob::Getchallenge | Oob::Connect { .. });
            let existing = self.find_by_addrs(d.dst, d.src);
            let reuse = match (existing, &c2s) {
                // A new getchallenge after an accepted connection starts a new connection;
                // before acceptance (e.g. a rejected try) it continues the same handshake.
                (Some(i), Oob::Getchallenge) => self
                    .flows
                    .get(i)
                    .is_some_and(|f| f.handshake && !f.accepted),
                (Some(i), Oob::Connect { .. }) => self
                    .flows
                    .get(i)
                    .is_some_and(|f| f.handshake && !f.accepted),
                (Some(i), _) => self
                    .flows
                    .get(i)
                    .is_some_and(|f| !f.handshake || f.accepted),
                (None, _) => false,
            };
            let i = match (reuse, existing) {
                (true, Some(i)) => i,
                _ => match self.new_flow(d, handshake, table) {
                    Some(i) => i,
                    None => {
                        table.aggregate_query("qw", d.dst, body, d, Dir::C2s);
                        self.note_summarised(d.dst);
                        return true;
                    }
                },
            };
            if let (
                Some(f),
                Oob::Connect {
                    qport,
                    challenge,
                    userinfo,
                    ..
                },
            ) = (self.flows.get_mut(i), &c2s)
            {
                f.qport = Some(*qport);
                f.sum.qport = Some(*qport);
                f.sum.challenge = Some(*challenge);
                f.sum.protocol = Some(28);
                f.sum.name = info_value(userinfo, "name");
            }
            self.count(i, Dir::C2s, d, Some(c2s), out);
            return true;
        }
        // A server reply to a client we know.
        if let Some(i) = self.find_by_addrs(d.src, d.dst) {
            let s2c = oob::parse_s2c(body);
            let (handshake, accepted, released) =
                self.flows.get(i).map_or((false, false, true), |f| {
                    (f.handshake, f.accepted, f.released)
                });
            match &s2c {
                // A re-accept restarts the netchan; past the connections' limit an accepted
                // handshake keeps its row but gets no decoder state (bounded memory). A
                // released flow accepted again (its client back after 200 s from the same
                // address) is a new session: it counts as a connection again.
                Oob::Accept
                    if handshake
                        && ((accepted && !released) || self.connections < MAX_CONNECTIONS) =>
                {
                    if released {
                        if let Some(f) = self.flows.get_mut(i) {
                            f.released = false;
                            f.accepted = false;
                        }
                    } else if !accepted {
                        self.handshakes = self.handshakes.saturating_sub(1);
                    }
                    self.accept(i, d);
                }
                Oob::Challenge { challenge, .. } => {
                    if let Some(f) = self.flows.get_mut(i) {
                        f.sum.challenge = Some(*challenge);
                    }
                }
                _ => {}
            }
            self.count(i, Dir::S2c, d, Some(s2c), out);
            return true;
        }
        if body.first() == Some(&b'j') && self.accept_summarised(d, table, out) {
            return true;
        }
        let request: &[u8] = match body.first() {
            Some(b'n') => b"status",
            Some(b'c') => b"getchallenge",
            Some(b'j') => b"connect",
            _ => return false,
        };
        self.summarised_reply(d, request, table)
    }

    /// The server accepts a client whose handshake was summed past the handshakes' limit (a
    /// flood of spoofed `connect`s filled it): the connection starts here, decoded from its
    /// first netchan packet as any other (its `connect`, and so its userinfo, stays in the
    /// aggregate). False when the server has no aggregates or the connections are full.
    fn accept_summarised(
        &mut self,
        d: &Datagram<'_>,
        table: &mut FlowTable,
        out: &mut Vec<Event>,
    ) -> bool {
        let summarised = self.summarised_servers.contains_key(&d.src);
        if !summarised || self.connections >= MAX_CONNECTIONS {
            return false;
        }
        if self.flows.len() >= MAX_FLOW_ROWS {
            table.refuse_row(d.frame);
            return false;
        }
        let i = self.push_flow(d.src, d.dst, true, table);
        self.accept(i, d);
        self.count(i, Dir::S2c, d, Some(Oob::Accept), out);
        true
    }

    /// Handshake flow `i` accepted by the server's `j` reply `d`: a netchan session starts
    /// (a new one at each accept), with a decoder state, counted as a connection.
    fn accept(&mut self, i: usize, d: &Datagram<'_>) {
        let Some(f) = self.flows.get_mut(i) else {
            return;
        };
        if !f.accepted {
            self.connections += 1;
        }
        f.accepted = true;
        f.client_port = d.dst.port();
        self.by_accepted_pair.insert((d.src, d.dst), Some(i));
        if let Some(q) = f.qport {
            self.by_qport.insert(d.src, d.dst.ip(), q, i);
        }
        f.rx_c2s = Receiver::default();
        f.rx_s2c = Receiver::default();
        f.rel = [RelTrack::default(), RelTrack::default()];
        f.state = Some(Box::new(ServerState::new(false)));
    }

    /// A new flow of server `d.dst` and client `d.src`, or None past its kind's limit.
    fn new_flow(
        &mut self,
        d: &Datagram<'_>,
        handshake: bool,
        table: &mut FlowTable,
    ) -> Option<usize> {
        let (count, limit) = if handshake {
            (&mut self.handshakes, MAX_CONNECTIONS)
        } else {
            (&mut self.queries, MAX_QUERY_FLOWS)
        };
        if self.flows.len() >= MAX_FLOW_ROWS {
            table.refuse_row(d.frame);
            return None;
        }
        if *count >= limit {
            return None;
        }
        *count += 1;
        Some(self.push_flow(d.dst, d.src, handshake, table))
    }

    /// A new flow of `server` and `client`, whatever the limits (the caller counted it).
    fn push_flow(
        &mut self,
        server: SocketAddr,
        client: SocketAddr,
        handshake: bool,
        table: &mut FlowTable,
    ) -> usize {
        // QuakeWorld never adopted other UDP: a QW flow starts with a client command (or, past
        // the handshakes' limit, the server's accept).
        let id = table.claim(server, client, false).id;
        self.flows.push(Flow::new(id, server, client, handshake));
        let i = self.flows.len() - 1;
        self.by_pair.insert((server, client), Some(i));
        i
    }

    fn note_summarised(&mut self, server: SocketAddr) {
        if self.summarised_servers.len() < crate::flow::table::MAX_AGGREGATES {
            self.summarised_servers.insert(server, ());
        }
    }

    /// A reply of a server whose queries were summed, to a client with no flow: counted as
    /// answered in the aggregate of `request`. False when the server has no aggregates.
    fn summarised_reply(
        &mut self,
        d: &Datagram<'_>,
        request: &[u8],
        table: &mut FlowTable,
    ) -> bool {
        if self.summarised_servers.is_empty() || !self.summarised_servers.contains_key(&d.src) {
            return false;
        }
        table.aggregate_query("qw", d.src, request, d, Dir::S2c);
        true
    }

    /// Count a connectionless packet and emit its message.
    fn count(
        &mut self,
        i: usize,
        dir: Dir,
        d: &Datagram<'_>,
        op: Option<Oob>,
        out: &mut Vec<Event>,
    ) {
        let decode = self.opts.decode;
        let Some(f) = self.flows.get_mut(i) else {
            return;
        };
        f.sum.count_packet(dir, d.payload.len(), d.ts_ns);
        if dir == Dir::C2s {
            f.sum.add_client_port(d.src.port());
        }
        if decode {
            let mut m = Message::new(f.id, dir, d.frame, d.ts_ns as f64 / 1e9, d.payload.len());
            m.connectionless = true;
            m.kind = "oob";
            if let Some(op) = op {
                m.ops.push(Op {
                    at: 4,
                    kind: OpKind::Oob(op),
                });
            }
            out.push(Event::Message(m));
        }
    }

    fn netchan(&mut self, i: usize, dir: Dir, d: &Datagram<'_>, out: &mut Vec<Event>, count: bool) {
        let decoding = self.decoding();
        let (emit, keep_raw) = (self.opts.decode, self.opts.keep_raw);
        let Some(f) = self.flows.get_mut(i) else {
            return;
        };
        if count {
            f.sum.count_packet(dir, d.payload.len(), d.ts_ns);
        }
        if f.released {
            // Both ends timed out long ago: no state to decode it with.
            return;
        }
        let Some(h) = Header::new_checked(d.payload, dir) else {
            return;
        };
        if let Some(mid) = &mut f.mid {
            if mid.lock.is_none() {
                mid.packets += 1;
            }
            let di = dir_index(dir);
            if let Some(false) = mid.started.get(di).copied() {
                // The netchan is taken up at the first packet of each direction: no drops
                // before it, and the peer's reliable parity as its acks say.
                mid.started[di] = true;
                let rx = match dir {
                    Dir::C2s => &mut f.rx_c2s,
                    Dir::S2c => &mut f.rx_s2c,
                };
                rx.incoming = h.sequence().saturating_sub(1);
                if let Some(t) = f.rel.get_mut(1 - di) {
                    t.parity = h.ack_reliable();
                    t.pending = None;
                }
            }
        }
        if dir == Dir::C2s
            && f.client_port != d.src.port()
            && f.sum.client_ports.len() < MAX_CLIENT_PORTS
        {
            // NAT rebinding: the server adopts the new port (spec §1).
            f.client_port = d.src.port();
            f.sum.add_client_port(d.src.port());
            self.by_pair.insert((d.dst, d.src), Some(i));
            self.by_accepted_pair.insert((d.dst, d.src), Some(i));
        }
        // Reliable delivery bookkeeping: this packet's ack tells the other direction's fate.
        let mut lost_s2c = None;
        let other = match dir {
            Dir::C2s => Dir::S2c,
            Dir::S2c => Dir::C2s,
        };
        if let Some(t) = f.rel.get_mut(dir_index(other)) {
            let lost = t.peer_ack(h.ack(), h.ack_reliable());
            if dir == Dir::C2s {
                lost_s2c = lost;
            }
        }
        let rx = match dir {
            Dir::C2s => &mut f.rx_c2s,
            Dir::S2c => &mut f.rx_s2c,
        };
        let verdict = rx.process(&h);
        let mut m = Message::new(f.id, dir, d.frame, d.ts_ns as f64 / 1e9, d.payload.len());
        m.seq = Some(i64::from(h.sequence()));
        m.ack = Some(i64::from(h.ack()));
        m.reliable = Some(h.reliable());
        m.ack_reliable = Some(h.ack_reliable());
        m.qport = h.qport();
        m.netchan = Some(match verdict {
            Verdict::Accepted { dropped } => {
                m.dropped = Some(dropped);
                *f.sum.dropped.get_mut(dir) += u64::from(dropped);
                NetchanStatus::Accepted
            }
            Verdict::Duplicate => {
                *f.sum.duplicates.get_mut(dir) += 1;
                NetchanStatus::Duplicate
            }
            Verdict::OutOfOrder => {
                *f.sum.out_of_order.get_mut(dir) += 1;
                NetchanStatus::OutOfOrder
            }
        });
        let accepted = matches!(verdict, Verdict::Accepted { .. });
        // Every reliable-flagged send counts, accepted or not: the very first c2s packet (seq 0,
        // "new") is dropped by the server and its block comes again in a later packet.
        if h.reliable() {
            if let Some(t) = f.rel.get_mut(dir_index(dir)) {
                let rt = t.sent_reliable(h.sequence());
                if accepted {
                    m.retransmit = Some(rt);
                }
            }
        }
        if !decoding {
            return;
        }
        let base = h.header_len();
        let mut raw_cmd = None;
        let mut drop = false;
        let mut spans = Vec::new();
        match dir {
            Dir::C2s => {
                // Client messages carry no state, so even packets the server drops are decoded
                // (their moves are still checksummed).
                let mut r = Reader::with_base(h.payload(), base);
                let ext = f.state.as_ref().map(|st| st.ext).unwrap_or_default();
                let (ops, err) = match f.mid.as_deref().filter(|m| !m.settled) {
                    // Only clc_tmove reads by the extensions (coordinate size): decoded with
                    // both sizes when the survivors differ, and kept only when they agree.
                    Some(mid) => {
                        let mut res = None;
                        let mut agree = true;
                        let mut tried: Vec<bool> = Vec::new();
                        for (e, _) in &mid.survivors {
                            if tried.contains(&e.big_coords()) {
                                continue;
                            }
                            tried.push(e.big_coords());
                            let mut rr = r.clone();
                            let got = clc::parse_message(&mut rr, h.sequence(), e);
                            match &res {
                                None => res = Some(got),
                                Some(x) => agree &= *x == got,
                            }
                        }
                        match res {
                            Some(x) if agree => x,
                            _ => (
                                Vec::new(),
                                Some(crate::qw::cursor::DecodeError {
                                    what: "client message left undecoded: coordinate size not yet determined".into(),
                                    at: base,
                                }),
                            ),
                        }
                    }
                    None => clc::parse_message(&mut r, h.sequence(), &ext),
                };
                for (_, op) in &ops {
                    if matches!(op, clc::ClientOp::Stringcmd { text } if text == "drop") {
                        drop = true;
                    }
                    if let clc::ClientOp::Move {
                        cmds, checksum_ok, ..
                    } = op
                    {
                        raw_cmd = Some(cmds[2]);
                        if !checksum_ok {
                            m.error.get_or_insert_with(|| {
                                Box::new(Error::new(
                                    ErrorKind::Checksum,
                                    "clc_move checksum mismatch",
                                ))
                            });
                        }
                    }
                }
                m.ops = ops
                    .into_iter()
                    .map(|(at, op)| Op {
                        at,
                        kind: OpKind::Client(op),
                    })
                    .collect();
                if let Some(e) = err {
                    m.error = Some(Box::new(Error::from(&e)));
                }
            }
            Dir::S2c if accepted => {
                let st = f
                    .state
                    .get_or_insert_with(|| Box::new(ServerState::new(false)));
                st.seq = h.sequence();
                let decoded = match f.mid.as_deref_mut() {
                    Some(mid) if !mid.settled => {
                        let got = decode_unsettled(st, mid, h.payload(), base);
                        if got.is_none() {
                            mid.undecoded += 1;
                        }
                        got
                    }
                    _ => {
                        let mut r = Reader::with_base(h.payload(), base);
                        Some(svc::parse_message(st, &mut r))
                    }
                };
                if let Some(mid) = f.mid.as_deref_mut() {
                    if decoded.is_some() && mid.lock.is_none() {
                        mid.lock = Some((d.frame, mid.packets));
                    }
                    if mid.settled && mid.settled_frame.is_none() {
                        mid.settled_frame = Some(d.frame);
                    }
                }
                let (ops, err) = decoded.unwrap_or_else(|| {
                    (
                        Vec::new(),
                        Some(crate::qw::cursor::DecodeError {
                            what: "server message left undecoded: protocol extensions not yet determined".into(),
                            at: base,
                        }),
                    )
                });
                let ends: Vec<usize> = ops
                    .iter()
                    .skip(1)
                    .map(|(at, _)| *at)
                    .chain(std::iter::once(d.payload.len()))
                    .collect();
                for ((at, op), end) in ops.iter().zip(ends) {
                    spans.push((*at, end, op.id()));
                    match op {
                        ServerOp::Serverdata(sd) => {
                            f.sum.protocol = u32::try_from(sd.protocol).ok();
                            if let Some(mid) = f.mid.as_deref_mut() {
                                mid.settled = true;
                                mid.settled_frame.get_or_insert(d.frame);
                                mid.serverdata_frame.get_or_insert(d.frame);
                            }
                        }
                        ServerOp::Modellist(l) | ServerOp::FteModellistshort(l) => {
                            if let Some(map) = l.map_name() {
                                f.sum.add_map(map);
                            }
                        }
                        _ => {}
                    }
                }
                m.ops = Op::servers(ops);
                m.error = err.map(|e| Box::new(Error::from(&e)));
            }
            Dir::S2c => {}
        }
        if let Some(e) = &mut m.error {
            // The decoders know the byte; the flow knows where the message is.
            e.pos.flow = Some(f.id);
            e.pos.frame = Some(d.frame);
            e.pos.dir = Some(dir);
            if e.message.ends_with("not yet determined") {
                // Counted in the flow's one mid-session report, not once per message.
                e.kind = ErrorKind::MidSession;
            } else {
                f.sum.push_error(Error::clone(e));
            }
        }
        if keep_raw {
            let raw = RawPacket {
                flow: f.id,
                dir,
                frame: d.frame,
                ts_ns: d.ts_ns,
                seq: h.sequence(),
                ack: h.ack(),
                accepted,
                payload: if dir == Dir::S2c && accepted {
                    d.payload.to_vec()
                } else {
                    Vec::new()
                },
                spans,
                cmd: raw_cmd,
                drop,
                lost_s2c,
                pre_signon: f.state.as_ref().is_some_and(|st| !st.baselines_known),
            };
            if (dir == Dir::S2c && accepted) || raw.cmd.is_some() || drop || lost_s2c.is_some() {
                out.push(Event::Raw(raw));
            }
        }
        if emit {
            out.push(Event::Message(m));
        }
    }

    /// End of input: one summary per QuakeWorld flow, in id order.
    pub fn finish(&mut self, _out: &mut Vec<Event>) -> Vec<FlowSummary> {
        self.flows.iter().map(summary_of).collect()
    }
}

/// A flow's row as the report shows it.
fn summary_of(f: &Flow) -> FlowSummary {
    let mut s = f.sum.clone();
    if let Some(mid) = &f.mid {
        s.push_error(
            Error::new(ErrorKind::MidSession, mid.report())
                .flow(f.id)
                .frame(mid.first_frame),
        );
    }
    if f.handshake && !f.accepted {
        // A handshake that was never accepted is not a connection.
        s.kind = "query";
    }
    s
}

/// Value of `key` in a `\k\v\k\v` info string.
fn info_value(info: &str, key: &str) -> Option<String> {
    let mut it = info.split('\\').skip(1);
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        if k == key {
            return Some(v.to_string());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::held::HELD_BYTES_MAX;

    /// Client-shaped packets from ever new addresses, and server-shaped answers: candidates
    /// stay bounded, nothing is claimed without a checksummed move (every datagram is left to
    /// the table), and no panic.
    #[test]
    fn mid_session_candidates_are_bounded() {
        let mut t = Tracker::new(Options {
            decode: true,
            keep_raw: false,
        });
        let mut table = FlowTable::default();
        let mut out = Vec::new();
        let server: SocketAddr = "10.0.0.1:27500".parse().unwrap();
        let mut x: u32 = 1;
        // Past the candidate limit by a quarter: enough to show it holds.
        for i in 0..(MAX_CANDIDATES as u32 * 5 / 4) {
            let client =
                SocketAddr::from(([10, 1, (i >> 8) as u8, i as u8], 27001 + (i % 7) as u16));
            for k in 0..3u32 {
                // seq, ack, qport, clc_move with a checksum that will not hold, padding.
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                let mut p = Vec::new();
                p.extend_from_slice(&(100 + k).to_le_bytes());
                p.extend_from_slice(&(50 + k).to_le_bytes());
                p.extend_from_slice(&1234u16.to_le_bytes());
                p.extend_from_slice(&[3, (x >> 24) as u8, 0, 0, 0, 0]);
                // clc_nop padding: the packet reads to its end.
                p.extend(std::iter::repeat_n(1u8, 1200));
                let d = Datagram {
                    frame: u64::from(i),
                    ts_ns: i64::from(i),
                    src: client,
                    dst: server,
                    payload: &p,
                };
                assert!(!t.offer(&d, &mut table, &mut out));
                let ans = [
                    &(60 + k).to_le_bytes()[..],
                    &(100 + k).to_le_bytes()[..],
                    &[1u8; 600][..],
                ]
                .concat();
                let d = Datagram {
                    frame: u64::from(i),
                    ts_ns: i64::from(i),
                    src: server,
                    dst: client,
                    payload: &ans,
                };
                t.offer(&d, &mut table, &mut out);
            }
            assert!(t.candidates.len() <= MAX_CANDIDATES);
            assert!(t.held.bytes() <= HELD_BYTES_MAX);
        }
        assert!(t.flows.is_empty(), "{} flows claimed", t.flows.len());
        assert!(
            t.held.bytes() > 0,
            "the client packets were never candidates"
        );
    }

    #[test]
    fn reliable_lost_then_retransmitted() {
        // Sender-side view (spec §2.4.3): reliable packet 10 goes out; the peer acks 10 with
        // its parity unchanged → lost; the next reliable packet (12) repeats the block.
        let mut t = RelTrack::default();
        assert!(!t.sent_reliable(10));
        assert_eq!(t.peer_ack(9, false), None); // older ack: no verdict yet
        assert!(t.pending.is_some());
        assert_eq!(t.peer_ack(10, false), Some(10));
        assert!(t.sent_reliable(12));
        // This time the peer flips its parity: delivered, the next block is new.
        assert_eq!(t.peer_ack(12, true), None);
        assert!(!t.sent_reliable(14));
        // A capture duplicate of 14 is not a new send.
        assert!(!t.sent_reliable(14));
    }
}
