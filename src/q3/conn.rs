//! One Quake 3 connection (server + client IP + qport): the netchan receivers of both ends,
//! the descrambling state, and the client's parse state. Both directions must be fed in
//! capture-time order (q3-protocol.md §3.4).
use std::net::SocketAddr;

use super::bits::BitReader;
use super::clc::{self, ClcContext};
use super::message::{Body, Message};
use super::netchan::{checksum71, Header, Protocol, Receiver, Rx};
use super::oob::Oob;
use super::scramble;
use super::state::{ClientState, MAX_RELIABLE_COMMANDS};
use super::svc;
use crate::flow::{Dir, FlowError, FlowSummary};
use crate::net::Datagram;

/// What the connection should produce.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Hand every decoded message to the caller (off: decode for the flow counters only).
    pub emit: bool,
    /// Keep descrambled server bodies on the events (for demo writing).
    pub keep_raw: bool,
}

impl Options {
    /// Full op records only when someone reads them; the flow table needs the state alone.
    pub fn detail(&self) -> svc::Detail {
        if self.emit || self.keep_raw {
            svc::Detail::Full
        } else {
            svc::Detail::StateOnly
        }
    }
}

/// A Quake 3 flow: a connection, or a connectionless exchange (query).
#[derive(Debug)]
pub struct Connection {
    pub summary: FlowSummary,
    pub server: SocketAddr,
    pub client: SocketAddr,
    pub proto: Protocol,
    pub challenge: Option<i32>,
    /// True once a `connect` (or netchan traffic) made this a connection.
    pub connected: bool,
    rx_server: Receiver,
    rx_client: Receiver,
    pub state: ClientState,
    client_cmds: Vec<String>,
    last_client_cmd: i32,
    opts: Options,
}

impl Connection {
    pub fn new(id: u32, server: SocketAddr, client: SocketAddr, opts: Options) -> Self {
        let summary = FlowSummary {
            id,
            game: "q3",
            kind: "query",
            server: server.to_string(),
            client_ip: client.ip().to_string(),
            client_ports: vec![client.port()],
            ..Default::default()
        };
        Connection {
            summary,
            server,
            client,
            proto: Protocol::V68,
            challenge: None,
            connected: false,
            rx_server: Receiver::new(),
            rx_client: Receiver::new(),
            state: ClientState::default(),
            client_cmds: vec![String::new(); MAX_RELIABLE_COMMANDS],
            last_client_cmd: 0,
            opts,
        }
    }

    fn error(&mut self, d: &Datagram<'_>, dir: Dir, message: String) {
        self.summary.push_error(FlowError {
            frame: d.frame,
            dir: Some(dir),
            message,
        });
    }

    fn message(
        &self,
        d: &Datagram<'_>,
        dir: Dir,
        seq: Option<i32>,
        kind: &'static str,
        body: Body,
    ) -> Message {
        Message {
            flow: self.summary.id,
            game: "q3",
            dir,
            frame: d.frame,
            time: d.ts_ns as f64 / 1e9,
            seq,
            fragmented: false,
            kind,
            body,
            error: None,
            raw: None,
            protocol: self.proto.number(),
            file_offset: None,
        }
    }

    /// Handle one datagram of this flow.
    pub fn handle(&mut self, dir: Dir, d: &Datagram<'_>, out: &mut Vec<Message>) {
        self.summary.count_packet(dir, d.payload.len(), d.ts_ns);
        if dir == Dir::C2s {
            self.summary.add_client_port(d.src.port());
            self.client = d.src;
        }
        if super::oob::is_oob(d.payload) {
            self.handle_oob(dir, d, out);
        } else {
            self.handle_netchan(dir, d, out);
        }
    }

    fn handle_oob(&mut self, dir: Dir, d: &Datagram<'_>, out: &mut Vec<Message>) {
        let oob = match Oob::parse(d.payload) {
            Ok(o) => o,
            Err(e) => {
                self.error(d, dir, e.to_string());
                if self.opts.emit {
                    let mut m = self.message(d, dir, None, "oob", Body::None);
                    m.error = Some(e.to_string());
                    out.push(m);
                }
                return;
            }
        };
        match (dir, oob.command.as_str()) {
            // Until the connect names it, the latest challengeResponse is the best guess.
            (Dir::S2c, "challengeResponse") if self.challenge.is_none() || !self.connected => {
                self.challenge = oob.arg_int(0).map(|c| c as i32);
            }
            (Dir::C2s, "connect") => self.on_connect(&oob),
            (Dir::S2c, "connectResponse") => {
                // A new netchan starts: both ends reset their sequences and rings (§3.4).
                self.rx_server.reset();
                self.rx_client.reset();
                self.client_cmds.iter_mut().for_each(String::clear);
                self.last_client_cmd = 0;
                self.state = ClientState::default();
                if let Some(c) = oob.arg_int(0) {
                    self.challenge.get_or_insert(c as i32);
                }
            }
            _ => {}
        }
        if self.opts.emit {
            out.push(self.message(d, dir, None, "oob", Body::Oob(oob)));
        }
    }

    fn on_connect(&mut self, oob: &Oob) {
        self.connected = true;
        self.summary.kind = "connection";
        if let Some(p) = oob.info("protocol").and_then(|p| p.parse::<i64>().ok()) {
            self.summary.protocol = Some(p as u32);
            if let Some(pr) = Protocol::from_number(p) {
                self.proto = pr;
            }
        }
        if let Some(q) = oob.info("qport").and_then(|q| q.parse::<i64>().ok()) {
            self.summary.qport = Some((q & 0xffff) as u16);
        }
        // The userinfo challenge is the one both ends key with (§2.5).
        if let Some(c) = oob.info("challenge").and_then(|c| c.parse::<i64>().ok()) {
            self.challenge = Some(c as i32);
        }
        self.summary.challenge = self.challenge.map(i64::from);
        if let Some(n) = oob.info("name") {
            self.summary.name = Some(n.to_string());
        }
    }

    fn handle_netchan(&mut self, dir: Dir, d: &Datagram<'_>, out: &mut Vec<Message>) {
        if !self.connected {
            self.connected = true;
            self.summary.kind = "connection";
        }
        let h = match Header::parse(d.payload, dir, self.proto) {
            Ok(h) => h,
            Err(e) => return self.error(d, dir, e.to_string()),
        };
        if dir == Dir::C2s && self.summary.qport.is_none() {
            self.summary.qport = h.qport;
        }
        if let (Some(sum), Some(ch)) = (h.checksum, self.challenge) {
            if sum != checksum71(ch, h.sequence) {
                return self.error(
                    d,
                    dir,
                    format!("bad protocol 71 checksum on sequence {}", h.sequence),
                );
            }
        }
        let rx = match dir {
            Dir::C2s => &mut self.rx_server,
            Dir::S2c => &mut self.rx_client,
        };
        let before = rx.stats;
        let res = rx.process(&h);
        let after = rx.stats;
        *self.summary.dropped.get_mut(dir) += after.dropped - before.dropped;
        *self.summary.duplicates.get_mut(dir) += after.duplicates - before.duplicates;
        *self.summary.out_of_order.get_mut(dir) += after.out_of_order - before.out_of_order;
        *self.summary.fragments.get_mut(dir) += after.fragmented - before.fragmented;
        if let Rx::Accepted {
            seq,
            body,
            fragmented,
        } = res
        {
            match dir {
                Dir::S2c => self.server_message(d, seq, body, fragmented, out),
                Dir::C2s => self.client_message(d, seq, body, fragmented, out),
            }
        }
    }

    fn server_message(
        &mut self,
        d: &Datagram<'_>,
        seq: i32,
        mut body: Vec<u8>,
        fragmented: bool,
        out: &mut Vec<Message>,
    ) {
        // The client reads reliableAcknowledge from the still-scrambled bytes (§3.2).
        let ack = {
            let mut r = BitReader::new(&body);
            r.read_long().ok().map(|a| (a, r.bit_pos()))
        };
        if self.proto == Protocol::V68 {
            if let Some((a, _)) = ack {
                let s = &self.client_cmds[(a as usize) & (MAX_RELIABLE_COMMANDS - 1)];
                scramble::s2c(&mut body, self.challenge.unwrap_or(0), seq, s.as_bytes());
            }
        }
        let mut m = self.message(d, Dir::S2c, Some(seq), "server", Body::None);
        m.fragmented = fragmented;
        let detail = self.opts.detail();
        {
            let mut r = BitReader::new(&body);
            let parsed = match ack {
                Some((a, bit)) => {
                    r.set_bit_pos(bit);
                    svc::parse_server_message_with(&mut r, Some(a), seq, &mut self.state, detail)
                }
                None => svc::parse_server_message_with(&mut r, None, seq, &mut self.state, detail),
            };
            if let Some(e) = &parsed.error {
                let text = format!("server message {seq}: {e}");
                self.error(d, Dir::S2c, text.clone());
                m.error = Some(text);
            }
            m.body = Body::Server(parsed);
        }
        if self.opts.keep_raw {
            m.raw = Some(body);
        }
        if self.opts.emit || self.opts.keep_raw {
            out.push(m);
        }
    }

    fn client_message(
        &mut self,
        d: &Datagram<'_>,
        seq: i32,
        mut body: Vec<u8>,
        fragmented: bool,
        out: &mut Vec<Message>,
    ) {
        let hdr = {
            let mut r = BitReader::new(&body);
            clc::read_header(&mut r).ok().map(|h| (h, r.bit_pos()))
        };
        let Some((hdr, bit)) = hdr else {
            let text = format!("client message {seq}: shorter than its header");
            self.error(d, Dir::C2s, text.clone());
            if self.opts.emit {
                let mut m = self.message(d, Dir::C2s, Some(seq), "client", Body::None);
                m.error = Some(text);
                out.push(m);
            }
            return;
        };
        let acked = self.state.server_command(hdr.2).as_bytes().to_vec();
        if self.proto == Protocol::V68 {
            scramble::c2s(&mut body, self.challenge.unwrap_or(0), hdr.0, hdr.1, &acked);
        }
        let mut r = BitReader::new(&body);
        r.set_bit_pos(bit);
        let ctx = ClcContext {
            checksum_feed: self.state.checksum_feed,
            acked_server_command: &acked,
            last_client_command: self.last_client_cmd,
        };
        let parsed = clc::parse_client_ops(&mut r, hdr, &ctx);
        for op in &parsed.ops {
            if let clc::ClientOp::ClientCommand {
                seq: cs,
                text,
                new: true,
                ..
            } = op
            {
                self.client_cmds[(*cs as usize) & (MAX_RELIABLE_COMMANDS - 1)] = text.clone();
                self.last_client_cmd = *cs;
            }
        }
        let mut m = self.message(d, Dir::C2s, Some(seq), "client", Body::None);
        m.fragmented = fragmented;
        if let Some(e) = &parsed.error {
            let text = format!("client message {seq}: {e}");
            self.error(d, Dir::C2s, text.clone());
            m.error = Some(text);
        }
        if self.opts.emit {
            m.body = Body::Client(parsed);
            out.push(m);
        }
    }

    /// True once netchan messages flowed (a later handshake is a new connection).
    pub fn established(&self) -> bool {
        self.rx_server.stats.accepted > 0
    }

    /// The flow's summary row.
    pub fn summary(&self) -> FlowSummary {
        let mut s = self.summary.clone();
        s.challenge = self.challenge.map(i64::from);
        if s.kind == "connection" && s.protocol.is_none() {
            s.protocol = Some(self.proto.number());
        }
        s
    }
}
