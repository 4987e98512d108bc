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
mod handshake;
mod midsession;
mod netchan;
mod reliable;

use flow::*;
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

    /// A tracker with no flows yet, decoding as `opts` asks.
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
    crate::vocab::info::value(info, key).map(str::to_string)
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
