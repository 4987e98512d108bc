//! All Quake 3 flows of one capture stream: recognises Quake 3 traffic on any port by its
//! connectionless handshake, routes every datagram to exactly one flow, and follows a client
//! whose UDP port changes (NAT rebinding) by its qport, as the server does (§1.1).
use std::net::{IpAddr, SocketAddr};

use super::conn::{Connection, ErrorLog, Options, Work};
use super::message::Message;
use super::netchan::{Header, Protocol};
use super::oob;
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

/// A Quake 3 connect carries an adaptive-Huffman userinfo that decodes to `"\...`.
fn is_q3_connect(payload: &[u8]) -> bool {
    payload
        .get(12..)
        .and_then(|b| super::huffman::adaptive_decompress(b).ok())
        .is_some_and(|t| t.starts_with(b"\"\\"))
}

/// Tracks every Quake 3 flow of a capture.
#[derive(Debug, Default)]
pub struct Tracker {
    opts: Options,
    flows: Vec<Connection>,
    /// (server, client address) -> flow index.
    by_pair: FlowMap<(SocketAddr, SocketAddr), usize>,
    /// (server, client IP, qport) -> connection index.
    by_qport: FlowMap<(SocketAddr, IpAddr, u16), usize>,
    /// Capture time of the last idle scan.
    last_scan_ns: i64,
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

    /// Offer one datagram. Returns false, touching nothing, when it is not Quake 3 traffic
    /// this tracker knows or recognises. A new flow takes its id from `next_id`. Decoded
    /// messages go to `out`; with detached decoders the decoding work goes to `work` instead.
    pub fn offer(
        &mut self,
        d: &Datagram<'_>,
        next_id: &mut u32,
        out: &mut Vec<Message>,
        work: &mut Vec<(u32, Work)>,
    ) -> bool {
        self.scan_idle(d.ts_ns, work);
        let Some((idx, dir)) = self.route(d, next_id) else {
            return false;
        };
        let conn = &mut self.flows[idx];
        let was_connected = conn.summary.qport;
        conn.handle(dir, d, out, work);
        // A connect names the qport: from now on the server follows the client by it.
        if conn.summary.qport != was_connected {
            if let Some(q) = conn.summary.qport {
                let key = (conn.server, conn.client.ip(), q);
                self.by_qport.insert(key, idx);
            }
        }
        true
    }

    /// Now and then, release the decode state of connections silent for long: memory then
    /// follows the number of live connections, not the length of the capture.
    fn scan_idle(&mut self, now_ns: i64, work: &mut Vec<(u32, Work)>) {
        if now_ns.saturating_sub(self.last_scan_ns) < IDLE_SCAN_NS {
            return;
        }
        self.last_scan_ns = now_ns;
        for conn in &mut self.flows {
            conn.release_if_idle(now_ns, work);
        }
    }

    fn route(&mut self, d: &Datagram<'_>, next_id: &mut u32) -> Option<(usize, Dir)> {
        if let Some(&i) = self.by_pair.get(&(d.dst, d.src)) {
            // A new handshake after an established netchan starts a new connection.
            // established() first: it is cheap, oob_role may decompress a connect.
            let restart = self.flows[i].established()
                && matches!(oob_role(d.payload), Some((Dir::C2s, true)));
            if !restart {
                return Some((i, Dir::C2s));
            }
            return Some((self.new_flow(d.dst, d.src, next_id), Dir::C2s));
        }
        if let Some(&i) = self.by_pair.get(&(d.src, d.dst)) {
            return Some((i, Dir::S2c));
        }
        if oob::is_oob(d.payload) {
            let (dir, _) = oob_role(d.payload)?;
            let (server, client) = match dir {
                Dir::C2s => (d.dst, d.src),
                Dir::S2c => (d.src, d.dst),
            };
            return Some((self.new_flow(server, client, next_id), dir));
        }
        // A sequenced client packet from a new port with a known qport: NAT rebinding.
        let h = Header::parse(d.payload, Dir::C2s, Protocol::V68).ok()?;
        let q = h.qport?;
        let &i = self.by_qport.get(&(d.dst, d.src.ip(), q))?;
        self.by_pair.insert((d.dst, d.src), i);
        Some((i, Dir::C2s))
    }

    fn new_flow(&mut self, server: SocketAddr, client: SocketAddr, next_id: &mut u32) -> usize {
        let id = *next_id;
        *next_id += 1;
        self.flows
            .push(Connection::new(id, server, client, self.opts));
        let i = self.flows.len() - 1;
        self.by_pair.insert((server, client), i);
        i
    }

    /// One summary per flow, in id order.
    pub fn summaries(&self) -> Vec<FlowSummary> {
        self.flows.iter().map(Connection::summary).collect()
    }

    /// As [`Self::summaries`], adding the errors of decoders that ran detached.
    pub fn summaries_with(&self, logs: &FlowMap<u32, ErrorLog>) -> Vec<FlowSummary> {
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
