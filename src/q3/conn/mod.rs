//! One Quake 3 connection (server + client IP + qport): the netchan receivers of both ends,
//! the descrambling state, and the client's parse state. Both directions must be fed in
//! capture-time order (q3-protocol.md §3.4).
//!
//! This file is the channel side ([`Connection`]: handshake, netchan, counters, routing to
//! the decoder); `decoder` decodes the accepted messages, `lock` holds the protocol-68
//! lock-on policy of a capture that starts mid-session, `work` the work protocol between the
//! channel and a decoder (inline or on a worker thread), `log` what decoding learnt of the
//! flow for its summary.
use std::borrow::Cow;
use std::net::SocketAddr;

use super::bits::BitReader;
use super::clc::{self, ClcContext};
use super::cmdring::CommandRing;
use super::message::{Body, Message};
use super::midsession::c2ssearch;
use super::midsession::feedsearch::FeedSearch;
use super::midsession::relock::{ClientKey, ClientRelock, Relock};
use super::netchan::{
    checksum71, DropReason, Header, Protocol, Receiver, Rx, MAX_MSGLEN, MAX_SEQ_JUMP,
    REORDER_WINDOW,
};
use super::oob::Oob;
use super::scramble;
use super::state::{ClientState, MAX_RELIABLE_COMMANDS};
use super::svc;
use crate::error::{Error, ErrorKind};
use crate::flow::{Dir, FlowSummary, MAX_KEPT_ERRORS};
use crate::net::Datagram;
use crate::vocab::sample::{Arrival, CmdStamp, Sample, SnapStamp};
use crate::vocab::Detail;

mod decoder;
mod lock;
mod log;
mod work;

pub use decoder::*;
use lock::*;
pub use log::*;
pub use work::*;

/// What the connection should produce.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// How much of each decoded message goes to the caller ([`Detail::None`]: decode for
    /// the flow counters only).
    pub detail: Detail,
    /// Keep descrambled server bodies on the events (for demo writing).
    pub keep_raw: bool,
    /// Decoding runs elsewhere (a worker thread): the connection hands out [`Work`] instead
    /// of running its [`Decoder`].
    pub detached: bool,
    /// Produce a network [`Sample`] per netchan datagram (the `net` analysis).
    pub samples: bool,
}

impl Options {
    /// Messages are handed out.
    pub fn emit(&self) -> bool {
        self.detail.emits()
    }

    /// Snapshots carry their head only and client moves no usercmd list
    /// ([`svc::Detail::Headers`]).
    pub fn headers_only(&self) -> bool {
        self.detail == Detail::Headers
    }

    /// Snapshots carry only their frame's obituary entities and client messages no usercmd
    /// list ([`svc::Detail::Events`]).
    pub fn events_only(&self) -> bool {
        self.detail == Detail::Events
    }

    /// Full op records only when someone reads them; the flow table needs the state alone.
    pub fn detail(&self) -> svc::Detail {
        if self.headers_only() && !self.keep_raw {
            svc::Detail::Headers
        } else if self.events_only() && !self.keep_raw {
            svc::Detail::Events
        } else if self.detail == Detail::Frames && !self.keep_raw {
            svc::Detail::Frames
        } else if self.emit() || self.keep_raw {
            svc::Detail::Full
        } else if self.samples {
            // `net`: only what the samples read (the flow table's error counts then miss
            // errors in what is left unread; `net` shows none).
            svc::Detail::Samples
        } else {
            svc::Detail::StateOnly
        }
    }
}

/// A connection stays decodable this long without traffic; after that its decode state is
/// released (the summary row stays). Both engines give up on a silent peer after 200 s
/// (`sv_timeout`, `cl_timeout`), so neither end could still be using that state.
pub use crate::flow::table::IDLE_RELEASE_NS;

/// A connection whose client left (it sent `disconnect` or was told to) and that has been
/// silent this long releases its decode state: the server dropped the client at once and the
/// client cleared its state, so only stray packets could follow, and neither engine would
/// decode them with that state. Without this a capture's finished sessions would hold their
/// state for [`IDLE_RELEASE_NS`], most of the memory when sessions follow each other.
pub const GONE_RELEASE_NS: i64 = 5_000_000_000;

/// A Quake 3 flow: a connection, or a connectionless exchange (query). This is the channel
/// side (handshake, netchan, counters); decoding is its [`Decoder`]'s.
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
    opts: Options,
    /// The decoder when it runs inline (not [`Options::detached`]).
    decoder: Option<Decoder>,
    /// Decode state was released for idleness.
    released: bool,
    /// The decoder was asked to release the state if the client left, since the last
    /// datagram ([`GONE_RELEASE_NS`]).
    gone_probed: bool,
    /// The capture started after the handshake: challenge and reliable commands unknown.
    mid_session: bool,
    /// The flow came back after its decode state was released for idleness, without a new
    /// handshake: decoded from there as mid-session (the challenge is still known).
    resumed: bool,
    /// Mid-session protocol 68 until the key search locks on (then `None` again).
    lock68: Option<Box<Lock68>>,
}

impl Connection {
    /// Decode work for accepted message `seq` of datagram `d`, keyed with `challenge`.
    fn accepted(
        &self,
        d: &Datagram<'_>,
        seq: i32,
        body: Vec<u8>,
        fragmented: bool,
        challenge: i32,
    ) -> Accepted {
        Accepted {
            flow: self.summary.id,
            frame: d.frame,
            ts_ns: d.ts_ns,
            seq,
            body,
            fragmented,
            challenge,
            proto: self.proto,
            mid_session: self.mid_session || self.resumed,
        }
    }

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
            opts,
            decoder: (!opts.detached).then(|| Decoder::new(opts)),
            released: false,
            gone_probed: false,
            mid_session: false,
            resumed: false,
            lock68: None,
        }
    }

    /// Count `e` as an error of datagram `d`.
    fn error(&mut self, d: &Datagram<'_>, dir: Dir, e: Error) {
        self.summary
            .push_error(e.flow(self.summary.id).frame(d.frame).dir(dir));
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
            client_gone: false,
            protocol: self.proto.number(),
            size: d.payload.len(),
            file_offset: None,
        }
    }

    /// Run `w` inline, or hand it out (tagged with the flow id) when detached.
    fn dispatch(&mut self, w: Work, out: &mut Vec<Message>, work: &mut WorkQueue) {
        match &mut self.decoder {
            Some(dec) => {
                // The buffer goes back to the queue's, shared by the connections: the next
                // message of any of them is copied into memory still in cache.
                if let Some(buf) = dec.run(w, out) {
                    if buf.capacity() <= SPARE_MAX && work.bodies.len() < SPARE_BODIES {
                        work.bodies.push(buf);
                    }
                }
            }
            None => work.items.push((self.summary.id, w)),
        }
    }

    /// Handle one datagram of this flow. Decoding work goes to the inline decoder or, when
    /// detached, to `work`.
    pub fn handle(
        &mut self,
        dir: Dir,
        d: &Datagram<'_>,
        out: &mut Vec<Message>,
        work: &mut WorkQueue,
    ) {
        self.summary.count_packet(dir, d.payload.len(), d.ts_ns);
        self.replay(dir, d, out, work);
    }

    /// Handle a datagram already counted in the summary (one held while the connection was
    /// being recognised mid-session: the flow adopted its counts).
    pub fn replay(
        &mut self,
        dir: Dir,
        d: &Datagram<'_>,
        out: &mut Vec<Message>,
        work: &mut WorkQueue,
    ) {
        if self.released {
            self.resume_after_release(d.frame);
        }
        self.gone_probed = false;
        // The client's port is in the summary's list since its address was last set: the list
        // (memory of its own, a cache miss per datagram with a thousand connections live) is
        // read only when the address changes (NAT rebinding).
        if dir == Dir::C2s && d.src != self.client {
            self.summary.add_client_port(d.src.port());
            self.client = d.src;
        }
        if d.payload.len() >= MAX_MSGLEN {
            // The engine's receive buffer is MAX_MSGLEN: it drops such a packet as oversize.
            let text = format!(
                "packet of {} bytes exceeds {MAX_MSGLEN}; dropped",
                d.payload.len()
            );
            return self.error(d, dir, Error::new(ErrorKind::Bounds, text));
        }
        if super::oob::is_oob(d.payload) {
            self.handle_oob(dir, d, out, work);
        } else {
            self.handle_netchan(dir, d, out, work);
        }
    }

    /// Prefetch what handling a datagram of this flow in `dir` with sequence `seq` will
    /// touch, one level of pointers per call: level 0 is this struct's own lines (counters,
    /// the receiver, the decoder's head); each later level reads only lines the level
    /// before asked for and asks for what they point to. The pipeline calls the levels on
    /// later datagrams, deepest for the next one to be handled (`crate::prefetch`).
    #[inline]
    pub fn prefetch(&self, level: u8, dir: Dir, seq: i32) {
        match level {
            0 => {
                crate::prefetch::write(&self.summary.packets);
                crate::prefetch::write(&self.summary.last_time);
                crate::prefetch::read(&self.decoder);
                match dir {
                    Dir::C2s => self.rx_server.prefetch(seq),
                    Dir::S2c => self.rx_client.prefetch(seq),
                }
            }
            _ => {
                if let Some(dec) = &self.decoder {
                    dec.prefetch(level - 1, dir);
                }
            }
        }
    }

    /// Free the decode state when the flow has been silent for [`IDLE_RELEASE_NS`] at
    /// capture time `now_ns`, or for [`GONE_RELEASE_NS`] if its client left (the decoder
    /// decides that one). Returns true when it released for idleness.
    pub fn release_if_idle(&mut self, now_ns: i64, work: &mut WorkQueue) -> bool {
        let last_ns = (self.summary.last_time * 1e9) as i64;
        let silent = now_ns.saturating_sub(last_ns);
        if !self.released && !self.gone_probed && silent >= GONE_RELEASE_NS {
            self.gone_probed = true;
            self.dispatch(Work::ReleaseIfGone, &mut Vec::new(), work);
        }
        if self.released || silent < IDLE_RELEASE_NS {
            return false;
        }
        self.released = true;
        self.rx_server.release_buffer();
        self.rx_client.release_buffer();
        self.dispatch(Work::Release, &mut Vec::new(), work);
        true
    }

    fn handle_oob(
        &mut self,
        dir: Dir,
        d: &Datagram<'_>,
        out: &mut Vec<Message>,
        work: &mut WorkQueue,
    ) {
        let oob = match Oob::parse(d.payload, dir) {
            Ok(o) => o,
            Err(e) => {
                let e = Error::from(&e)
                    .flow(self.summary.id)
                    .frame(d.frame)
                    .dir(dir);
                self.summary.push_error(e.clone());
                if self.opts.emit() {
                    let mut m = self.message(d, dir, None, "oob", Body::None);
                    m.error = Some(Box::new(e));
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
                // A new netchan starts: both ends reset their sequences and rings (§3.4);
                // from here the capture holds the whole connection.
                self.mid_session = false;
                self.resumed = false;
                self.rx_server.reset();
                self.rx_client.reset();
                self.dispatch(Work::Reset, out, work);
                if let Some(c) = oob.arg_int(0) {
                    self.challenge.get_or_insert(c as i32);
                }
            }
            _ => {}
        }
        if self.opts.emit() {
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

    fn handle_netchan(
        &mut self,
        dir: Dir,
        d: &Datagram<'_>,
        out: &mut Vec<Message>,
        work: &mut WorkQueue,
    ) {
        if !self.connected {
            self.connected = true;
            self.summary.kind = "connection";
        }
        let h = match Header::parse(d.payload, dir, self.proto) {
            Ok(h) => h,
            Err(e) => return self.error(d, dir, Error::from(&e)),
        };
        if dir == Dir::C2s && self.summary.qport.is_none() {
            self.summary.qport = h.qport;
        }
        if let (Some(sum), Some(ch)) = (h.checksum, self.challenge) {
            if sum != checksum71(ch, h.sequence) {
                let text = format!("bad protocol 71 checksum on sequence {}", h.sequence);
                return self.error(d, dir, Error::new(ErrorKind::Netchan, text));
            }
        }
        let rx = match dir {
            Dir::C2s => &mut self.rx_server,
            Dir::S2c => &mut self.rx_client,
        };
        let before = rx.stats;
        let rx_incoming = rx.incoming();
        let res = rx.process(&h);
        let after = rx.stats;
        if res == Rx::Dropped(DropReason::Implausible) {
            let text = format!(
                "sequence {} jumps more than {MAX_SEQ_JUMP} past {}: dropped as corrupt (the next \
                 packet, if it follows, confirms a real gap)",
                h.sequence, rx_incoming
            );
            self.error(d, dir, Error::new(ErrorKind::Netchan, text));
        }
        if res == Rx::Dropped(DropReason::Backwards) {
            let back = rx_incoming.wrapping_sub(h.sequence);
            let text = if (0..REORDER_WINDOW).contains(&back) {
                format!(
                    "sequence {} again with other content (after {rx_incoming}): the sender \
                     went back; dropped",
                    h.sequence
                )
            } else {
                format!(
                    "sequence {} goes back {back} from {rx_incoming}, further than any \
                     reordering; dropped",
                    h.sequence
                )
            };
            self.error(d, dir, Error::new(ErrorKind::Sequence, text));
        }
        if res == Rx::Dropped(DropReason::TooLong) {
            let text = format!(
                "fragmented message {} exceeds {MAX_MSGLEN} bytes (fragment at offset {}); dropped",
                h.sequence, h.frag_start
            );
            self.error(d, dir, Error::new(ErrorKind::Bounds, text));
        }
        *self.summary.dropped.get_mut(dir) += after.dropped - before.dropped;
        *self.summary.duplicates.get_mut(dir) += after.duplicates - before.duplicates;
        *self.summary.out_of_order.get_mut(dir) += after.out_of_order - before.out_of_order;
        *self.summary.fragments.get_mut(dir) += after.fragmented - before.fragmented;
        let mut sample = self.opts.samples.then(|| {
            let arrival = match res {
                Rx::Accepted { .. } => Arrival::Accepted,
                Rx::Pending => Arrival::Fragment,
                _ if after.duplicates > before.duplicates => Arrival::Duplicate,
                _ => Arrival::OutOfOrder,
            };
            let mut s = Sample::new(
                self.summary.id,
                dir,
                d.ts_ns as f64 / 1e9,
                d.payload.len(),
                i64::from(h.sequence),
                arrival,
            );
            s.gap = u32::try_from(after.dropped - before.dropped).unwrap_or(u32::MAX);
            s.frame = d.frame;
            s
        });
        if let Some(s) = &mut sample {
            // Only accepted messages are decoded; the rest are reported as they arrived.
            if !matches!(res, Rx::Accepted { .. }) {
                work.samples.push(*s);
                sample = None;
            } else if let Rx::Accepted { fragmented, .. } = res {
                s.fragmented = fragmented;
            }
        }
        if let Rx::Accepted {
            seq,
            body,
            fragmented,
        } = res
        {
            if self.mid_session && self.proto == Protocol::V68 && self.challenge.is_none() {
                let locked = self.lock_on68(d, dir, seq, &body, fragmented, out, work);
                if !locked {
                    work.samples.extend(sample);
                    return self.undecoded(d, dir, seq, fragmented, out);
                }
            }
            let body = match body {
                Cow::Owned(v) => v,
                Cow::Borrowed(b) => {
                    // Inline, the decoder gives the buffer back; detached, the workers do.
                    let mut v = work.bodies.pop().unwrap_or_default();
                    v.clear();
                    v.extend_from_slice(b);
                    v
                }
            };
            let a = self.accepted(d, seq, body, fragmented, self.challenge.unwrap_or(0));
            let w = match dir {
                Dir::S2c => Work::Server(a),
                Dir::C2s => Work::Client(a),
            };
            self.dispatch(w, out, work);
        }
        if let Some(mut s) = sample {
            // Samples need the inline decoder (the pipeline never detaches them).
            if let Some(dec) = &mut self.decoder {
                let st = std::mem::take(&mut dec.stamp);
                s.snapshot = st.snapshot;
                s.cmds = st.cmds;
                s.ack = st.ack;
            }
            work.samples.push(s);
        }
    }

    /// Mid-session protocol 68: offer accepted message `seq` to the key search. True once
    /// locked on (the key is set and the decoder knows the acknowledged command): this
    /// message and the next ones are decoded. Out of line and cold: only connections seen
    /// mid-session before their lock-on come here (inlined, it changed how the per-packet
    /// path of every connection was compiled).
    #[allow(clippy::too_many_arguments)]
    #[cold]
    #[inline(never)]
    fn lock_on68(
        &mut self,
        d: &Datagram<'_>,
        dir: Dir,
        seq: i32,
        body: &[u8],
        fragmented: bool,
        out: &mut Vec<Message>,
        work: &mut WorkQueue,
    ) -> bool {
        let Some(l) = self.lock68.as_mut() else {
            return false;
        };
        l.packets += 1;
        let first_ns = *l.first_ns.get_or_insert(d.ts_ns);
        if fragmented {
            return false;
        }
        if dir == Dir::C2s {
            return self.lock_on68_client(d, seq, body, first_ns, out, work);
        }
        let Some((ack, cmd, ch, from_ends)) = l.offer(seq, body) else {
            return false;
        };
        let (packets, tries, decodes) = (l.packets, l.tries, l.decodes);
        let mut prior: super::midsession::keysearch::Held =
            std::mem::take(&mut l.spilled).into_iter().collect();
        prior.append(&mut l.group.msgs);
        prior.pop(); // This message: decoded as usual next.
        let how = if from_ends {
            format!(
                "challenge byte {ch} (its low byte: all the key uses) and client command {ack} ({cmd:?}) read off the server messages' ends ({} reads, {decodes} body decodes): the latest {} server messages decode with them, and with no other text and challenge byte",
                l.tail_reads,
                super::midsession::keysearch::AckGroup::MAX,
            )
        } else {
            format!(
                "challenge byte {ch} (its low byte: all the key uses) and client command {ack} ({cmd:?}) found by key search ({tries} searches, {decodes} body decodes): {LOCK_GROUP}+ server messages decode with them and with no other guess",
                LOCK_GROUP = super::midsession::keysearch::AckGroup::SIZE,
            )
        };
        self.set_locked68(ch, packets, (d.ts_ns - first_ns) as f64 / 1e9, &how);
        let w = Work::ClientCommand {
            seq: ack,
            text: cmd,
        };
        self.dispatch(w, out, work);
        self.dispatch_prior(d, Dir::S2c, ch, prior, out, work);
        true
    }

    /// The lock-on group's earlier messages (direction `dir`) reached the other side: they
    /// are decoded for the state with challenge byte `ch`, nothing reported.
    fn dispatch_prior(
        &mut self,
        d: &Datagram<'_>,
        dir: Dir,
        ch: u8,
        prior: super::midsession::keysearch::Held,
        out: &mut Vec<Message>,
        work: &mut WorkQueue,
    ) {
        for (seq, body) in prior {
            let a = self.accepted(d, seq, body, false, i32::from(ch));
            self.dispatch(Work::Prior(dir, a), out, work);
        }
    }

    /// Mid-session protocol 68 locked on with challenge byte `ch` at packet `packets` of the
    /// connection (`secs` of its traffic), found as `how` says: the rest of the connection
    /// is decoded as far as its keys are known, and `flows` says so.
    fn set_locked68(&mut self, ch: u8, packets: u64, secs: f64, how: &str) {
        self.lock68 = None;
        self.challenge = Some(i32::from(ch));
        self.summary.protocol = Some(68);
        let text = format!(
            "capture starts after the connection's handshake: protocol 68 locked on at packet {packets} of the connection ({secs:.3} s), {how}; messages before are counted, not decoded, and so are later ones whose key string (a command sent before the capture) is unknown; until a gamestate the values of snapshot bases, entity baselines and the usercmd key are unknown: deltas from them give null values"
        );
        if let Some(e) = self
            .summary
            .error_details
            .iter_mut()
            .find(|e| e.kind == ErrorKind::MidSession)
        {
            e.message = text;
        }
    }

    /// Mid-session protocol 68: offer client message `seq` to the client-side lock-on
    /// search. True once locked on: the challenge byte is known and the decoder has the
    /// key stream of the client messages acknowledging this server command; the group's
    /// earlier messages are decoded for the state.
    fn lock_on68_client(
        &mut self,
        d: &Datagram<'_>,
        seq: i32,
        body: &[u8],
        first_ns: i64,
        out: &mut Vec<Message>,
        work: &mut WorkQueue,
    ) -> bool {
        let Some(l) = self.lock68.as_mut() else {
            return false;
        };
        let Some((ch, ack, found)) = l.offer_client(seq, body) else {
            return false;
        };
        let (packets, tries, decodes) = (l.packets, l.client_tries, l.client_decodes);
        let (s_tries, s_decodes) = (l.tries, l.decodes);
        let mut prior = std::mem::take(&mut l.client_group.msgs);
        prior.pop(); // This message: decoded as usual next.
        let what = match &found.text {
            Some(t) => format!("its text {:?}", String::from_utf8_lossy(t)),
            None => format!("its first {} key bytes", found.stream.len()),
        };
        let how = format!(
            "from client messages: challenge byte {ch} (its low byte: all the key uses) and the key stream of server command {ack} ({what}) found by key search ({tries} client-message searches, {decodes} body decodes; {s_tries} server-message searches, {s_decodes} body decodes): {MIN}+ client messages decode with them and with no other candidate",
            MIN = c2ssearch::MIN_WHOLE,
        );
        self.set_locked68(ch, packets, (d.ts_ns - first_ns) as f64 / 1e9, &how);
        let w = Work::ClientKey {
            ack,
            stream: found.stream,
            text: found.text,
        };
        self.dispatch(w, out, work);
        self.dispatch_prior(d, Dir::C2s, ch, prior, out, work);
        true
    }

    /// A message of a connection that cannot be descrambled: reported with its header only.
    fn undecoded(
        &mut self,
        d: &Datagram<'_>,
        dir: Dir,
        seq: i32,
        fragmented: bool,
        out: &mut Vec<Message>,
    ) {
        if self.opts.emit() {
            let kind = if dir == Dir::S2c { "server" } else { "client" };
            let mut m = self.message(d, dir, Some(seq), kind, Body::None);
            m.fragmented = fragmented;
            out.push(m);
        }
    }

    /// Traffic again after the decode state was released for idleness ([`IDLE_RELEASE_NS`]
    /// of silence: a capture with a gap, or merged from parts) and no new handshake: the
    /// decode state is made anew as for a capture starting here. The netchan sequences,
    /// the challenge and the protocol are still known; the reliable commands sent before are
    /// not (protocol 68 searches each acknowledged one, as mid-session), nor the gamestate.
    #[cold]
    fn resume_after_release(&mut self, frame: u64) {
        self.released = false;
        if !self.connected || self.resumed || self.mid_session {
            return;
        }
        self.resumed = true;
        let id = self.summary.id;
        self.summary.push_error(
            Error::new(
                ErrorKind::MidSession,
                "the connection was silent past the idle release (its decode state let go) and came back without a new handshake: decoded from here as a capture starting mid-session (reliable commands sent before unknown; until a gamestate the values of snapshot bases, entity baselines and the usercmd key are unknown: deltas from them give null values)",
            )
            .flow(id)
            .frame(frame),
        );
    }

    /// The capture missed this connection's handshake: the netchan is followed, but protocol
    /// 68 bodies cannot be descrambled without the challenge and the reliable commands.
    pub fn mark_mid_session(&mut self, frame: u64) {
        self.mid_session = true;
        self.lock68 = Some(Box::default());
        self.connected = true;
        self.summary.kind = "connection";
        let id = self.summary.id;
        self.summary.push_error(
            Error::new(
                ErrorKind::MidSession,
                "capture starts after the connection's handshake: challenge and reliable commands unknown, messages counted but not decoded",
            )
            .flow(id)
            .frame(frame),
        );
    }

    /// As [`Self::mark_mid_session`] for a protocol-71 channel whose challenge was solved from
    /// its checksums: the netchan is followed with checksums verified and the messages are
    /// decoded (71 bodies are not scrambled); `held` packets came before the one that
    /// confirmed it (they are replayed).
    pub fn mark_mid_session71(&mut self, frame: u64, challenge: i32, held: usize) {
        self.mid_session = true;
        self.connected = true;
        self.proto = Protocol::V71;
        self.challenge = Some(challenge);
        self.summary.kind = "connection";
        self.summary.protocol = Some(71);
        let id = self.summary.id;
        self.summary.push_error(
            Error::new(
                ErrorKind::MidSession,
                format!(
                    "capture starts after the connection's handshake: protocol 71 recognised at packet {} of the connection, challenge {challenge} solved from the netchan checksums (every packet verified with it); messages decoded from its first packet, but until a gamestate the values of snapshot bases, entity baselines and the usercmd key (checksumFeed) are unknown: deltas from them give null values",
                    held + 1
                ),
            )
            .flow(id)
            .frame(frame),
        );
    }

    /// True while the decode state is released for idleness.
    pub fn released(&self) -> bool {
        self.released
    }

    /// True once netchan messages flowed (a later handshake is a new connection).
    pub fn established(&self) -> bool {
        self.rx_server.stats.accepted > 0
    }

    /// The flow's summary row (with the inline decoder's errors).
    pub fn summary(&self) -> FlowSummary {
        let mut s = self.summary.clone();
        if let Some(dec) = &self.decoder {
            dec.log.merge_into(&mut s);
        }
        // Mid-session protocol 68 knows the challenge's low byte only (in the note).
        let byte_only = self.mid_session && self.proto == Protocol::V68;
        s.challenge = self.challenge.filter(|_| !byte_only).map(i64::from);
        if let Some(l) = &self.lock68 {
            if let Some(e) = s
                .error_details
                .iter_mut()
                .find(|e| e.kind == ErrorKind::MidSession)
            {
                e.message = format!(
                    "{}; key search: no lock-on in {} messages ({} searches, {} body decodes): no server messages that acknowledge a guessable client command ({:?}, or {:?} with a number below {})",
                    e.message,
                    l.packets,
                    l.tries,
                    l.decodes,
                    super::midsession::keysearch::GUESSABLE_COMMANDS,
                    super::midsession::keysearch::NUMBERED_COMMANDS,
                    super::midsession::keysearch::MAX_NUMBER
                );
            }
        }
        if s.kind == "connection" && s.protocol.is_none() && !self.mid_session {
            s.protocol = Some(self.proto.number());
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hostile input: server messages of ever new acknowledgements that no guess decodes
    /// start at most [`LOCK_TRIES`] searches, whatever their number.
    #[test]
    fn lock_on_searches_are_bounded() {
        let mut l = Lock68::default();
        let mut x = 0x1234_5678u32;
        for seq in 0..4000 {
            // Acknowledgement 1 + seq / 4 (Huffman-coded in the clear bytes), then noise.
            let mut w = crate::q3::bits::BitWriter::new();
            w.write_long(1 + seq / 4);
            for _ in 0..40 {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                w.write_byte(x as u8);
            }
            assert_eq!(l.offer(seq, &w.finish()), None);
        }
        assert_eq!(l.tries, LOCK_TRIES);
        assert!(l.decodes < LOCK_DECODES, "{} decodes", l.decodes);
    }

    /// A silent connection's decoder keeps its state unless its client left.
    #[test]
    fn release_if_gone_frees_only_a_left_clients_state() {
        let mut dec = Decoder::new(Options::default());
        dec.st = Some(DecodeState::boxed());
        assert!(dec.run(Work::ReleaseIfGone, &mut Vec::new()).is_none());
        assert!(dec.st.is_some(), "a client still there keeps its state");
        dec.st.as_mut().unwrap().client_gone = true;
        dec.run(Work::ReleaseIfGone, &mut Vec::new());
        assert!(dec.st.is_none(), "a client that left frees its state");
        dec.run(Work::ReleaseIfGone, &mut Vec::new());
        assert!(dec.st.is_none());
    }
}
