//! One Quake 3 connection (server + client IP + qport): the netchan receivers of both ends,
//! the descrambling state, and the client's parse state. Both directions must be fed in
//! capture-time order (q3-protocol.md §3.4).
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

/// What the connection should produce.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Hand every decoded message to the caller (off: decode for the flow counters only).
    pub emit: bool,
    /// Keep descrambled server bodies on the events (for demo writing).
    pub keep_raw: bool,
    /// Decoding runs elsewhere (a worker thread): the connection hands out [`Work`] instead
    /// of running its [`Decoder`].
    pub detached: bool,
    /// Produce a network [`Sample`] per netchan datagram (the `net` analysis).
    pub samples: bool,
    /// With `emit`: snapshots carry their head only and client moves no usercmd list
    /// ([`svc::Detail::Headers`]; what `quakecap check` reads).
    pub headers_only: bool,
    /// With `emit`: snapshots carry only their frame's obituary entities and client messages
    /// no usercmd list ([`svc::Detail::Events`]; what `quakecap events` reads).
    pub events_only: bool,
}

impl Options {
    /// Full op records only when someone reads them; the flow table needs the state alone.
    pub fn detail(&self) -> svc::Detail {
        if self.headers_only && self.emit && !self.keep_raw {
            svc::Detail::Headers
        } else if self.events_only && self.emit && !self.keep_raw {
            svc::Detail::Events
        } else if self.emit || self.keep_raw {
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

/// A message buffer larger than this (one reassembled from fragments: a gamestate, a
/// download block) is not kept for the next message, which is almost always one packet.
const SPARE_MAX: usize = 2048;
/// Message buffers an inline decoder gives back that the queue keeps (one is in use at a
/// time; demo writing keeps bodies, so the queue may run dry).
const SPARE_BODIES: usize = 4;

/// A netchan message the receiving engine accepted, ready to decode.
#[derive(Debug)]
pub struct Accepted {
    pub flow: u32,
    pub frame: u64,
    pub ts_ns: i64,
    pub seq: i32,
    pub body: Vec<u8>,
    pub fragmented: bool,
    pub challenge: i32,
    pub proto: Protocol,
    /// The capture missed the connection's start (see [`ClientState::mid_session`]).
    pub mid_session: bool,
}

/// What a connection asks of its decoder, in capture order.
#[derive(Debug)]
pub enum Work {
    Server(Accepted),
    Client(Accepted),
    /// A new netchan started (connectResponse): forget everything.
    Reset,
    /// Mid-session protocol 68: the key search found the text of client command `seq` (the
    /// one the server messages acknowledge).
    ClientCommand {
        seq: i32,
        text: String,
    },
    /// Mid-session protocol 68: a message of direction `Dir` received before the lock-on,
    /// decodable now; decoded for the client's state only (it was reported undecoded): a
    /// server message's commands and snapshots are the client's state, a client message's
    /// commands feed the server messages' keys.
    Prior(Dir, Accepted),
    /// Mid-session protocol 68: the lock-on came from client messages acknowledging server
    /// command `ack`: their key stream (or the command's whole text) was found.
    ClientKey {
        ack: i32,
        stream: Vec<u8>,
        text: Option<Vec<u8>>,
    },
    /// The connection went idle ([`IDLE_RELEASE_NS`]): free the decode state.
    Release,
    /// The connection has been silent for [`GONE_RELEASE_NS`]: free the decode state if the
    /// client left (only the decoder knows).
    ReleaseIfGone,
}

/// Decoding work handed out by detached connections (tagged with the flow id), and message
/// buffers the workers gave back, which the next messages are copied into.
#[derive(Debug, Default)]
pub struct WorkQueue {
    pub items: Vec<(u32, Work)>,
    pub bodies: Vec<Vec<u8>>,
    /// Network samples of the datagrams just handled (only with [`Options::samples`]).
    pub samples: Vec<Sample>,
}

/// What decoding learnt of one flow for its summary: errors (all counted, the first
/// [`MAX_KEPT_ERRORS`] kept) and the maps of its gamestates. Decoders that run on worker
/// threads hand it back at the end.
#[derive(Debug, Clone, Default)]
pub struct DecodeLog {
    pub count: u64,
    pub kept: Vec<Error>,
    pub maps: Vec<String>,
    /// Mid-session protocol 68 after the lock-on: what stayed undecodable and how often
    /// decoding resumed (see [`super::midsession::relock`]).
    pub mid68: Mid68Log,
}

/// What a mid-session protocol-68 decoder could not descramble after the lock-on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mid68Log {
    /// Server messages acknowledging a client command whose text is unknown.
    pub server_undecoded: u64,
    /// Client messages acknowledging a server command whose text is unknown.
    pub client_undecoded: u64,
    /// Client commands whose text a search over guesses found after the lock-on.
    pub resumed: u32,
    pub searches: u32,
    pub decodes: usize,
    /// Key streams of client messages (acknowledging a server command whose text is
    /// unknown) found by search, and what the searches cost (see [`ClientRelock`]).
    pub client_keys: u32,
    pub client_searches: u32,
    pub client_decodes: usize,
}

impl DecodeLog {
    fn push(&mut self, e: Error) {
        self.count += 1;
        if self.kept.len() < MAX_KEPT_ERRORS {
            self.kept.push(e);
        }
    }

    /// Add what stayed undecodable after a protocol-68 lock-on to the mid-session note.
    fn note_mid68(&self, s: &mut FlowSummary) {
        let m = &self.mid68;
        if *m == Mid68Log::default() {
            return;
        }
        let Some(e) = s
            .error_details
            .iter_mut()
            .find(|e| e.kind == ErrorKind::MidSession)
        else {
            return;
        };
        e.message = format!(
            "{}; after the lock-on {} server and {} client messages stayed undecodable (their key string, a command the capture did not show, unknown); {} client commands found after the lock-on, guessed or read off message ends ({} searches, {} body decodes); {} client-message key streams found by search ({} searches, {} body decodes)",
            e.message,
            m.server_undecoded,
            m.client_undecoded,
            m.resumed,
            m.searches,
            m.decodes,
            m.client_keys,
            m.client_searches,
            m.client_decodes
        );
    }

    fn map(&mut self, name: Option<String>) {
        if let Some(name) = name {
            if self.maps.len() < crate::flow::MAX_MAPS && self.maps.last() != Some(&name) {
                self.maps.push(name);
            }
        }
    }

    /// Fold into a summary whose own errors come from other datagrams: each datagram's
    /// errors come from one side only, so ordering by frame restores capture order.
    pub fn merge_into(&self, s: &mut FlowSummary) {
        for m in &self.maps {
            s.add_map(m);
        }
        self.note_mid68(s);
        if self.count == 0 {
            return;
        }
        s.errors += self.count;
        // Decoded after the flow may have adopted an earlier one: name the summary's id.
        s.error_details
            .extend(self.kept.iter().cloned().map(|e| e.flow(s.id)));
        s.error_details.sort_by_key(Error::frame_or_record);
        s.error_details.truncate(MAX_KEPT_ERRORS);
    }
}

/// The parse state of a connection: what its client knows.
#[derive(Debug)]
struct DecodeState {
    state: ClientState,
    /// The client's reliable commands (`clc.reliableCommands`), by sequence.
    client_cmds: CommandRing,
    /// The server's count of received client commands (`lastClientCommand`); `None`
    /// mid-session until a server message tells it.
    last_client_cmd: Option<i32>,
    /// Mid-session, while `last_client_cmd` is unknown: a client message without commands
    /// showed that the server had every command sent so far, so the next ones are new.
    client_cmds_all_acked: bool,
    /// The client left (sent `disconnect` or was told to): it processes nothing more, so
    /// what follows is marked for the demo writer.
    client_gone: bool,
    /// Descrambling key streams of each direction (protocol 68).
    keys_s2c: scramble::KeyCache,
    keys_c2s: scramble::KeyCache,
    /// The usercmd key hash of the acknowledged server command, and the client parse's
    /// buffers: kept so a client message allocates nothing.
    key_hash: clc::KeyHashCache,
    clc_scratch: clc::ClcScratch,
    /// Mid-session: the client's server command sequence was learnt (from its header).
    cmd_seq_known: bool,
    /// Mid-session protocol 68: the command number whose text each ring slot of
    /// `client_cmds` holds ([`UNKNOWN_CMD`]: none known); a server message acknowledging
    /// another command is not descrambled (a slot is reused every 64 commands: a download
    /// sends hundreds of `nextdl`).
    client_cmd_nums: [i32; MAX_RELIABLE_COMMANDS],
    /// Mid-session protocol 68: server messages acknowledging an unknown client command,
    /// searched for its text.
    relock: Relock,
    /// Mid-session protocol 68: client messages acknowledging an unknown server command,
    /// searched for their key stream.
    client_relock: ClientRelock,
    /// Mid-session protocol 68 before a gamestate: the search for the usercmd key's
    /// checksumFeed part (made when usercmds are first decoded with it unknown).
    feed: Option<Box<FeedSearch>>,
}

/// No command's text known in a ring slot (command numbers start at 1).
const UNKNOWN_CMD: i32 = i32::MIN;

/// The decode state, made on the first message (marked mid-session when the capture
/// missed the connection's start).
fn state<'s>(st: &'s mut Option<Box<DecodeState>>, a: &Accepted) -> &'s mut DecodeState {
    state_of(st, a.mid_session)
}

/// [`state`] for a connection whose start the capture missed (`mid_session`) or not.
fn state_of(st: &mut Option<Box<DecodeState>>, mid_session: bool) -> &mut DecodeState {
    st.get_or_insert_with(|| {
        let mut st = DecodeState::boxed();
        st.state.mid_session = mid_session;
        if mid_session {
            st.last_client_cmd = None;
        }
        st
    })
}

/// Mid-session protocol 68: server message `a` acknowledges client command `ack`, whose
/// text is unknown; search it among guesses (the challenge byte is known by now). True
/// when found (the ring slot then holds it). Out of line: it never runs with a handshake.
#[cold]
#[inline(never)]
fn resume_mid68(
    st: &mut DecodeState,
    log: &mut Mid68Log,
    a: &Accepted,
    ack: i32,
) -> Option<super::midsession::keysearch::Held> {
    let slot = (ack as usize) & (MAX_RELIABLE_COMMANDS - 1);
    let (cmds, nums) = (&st.client_cmds, &st.client_cmd_nums);
    let seen = (0..MAX_RELIABLE_COMMANDS)
        .filter(|&i| nums[i] != UNKNOWN_CMD)
        .map(|i| cmds.slot_text(i));
    let before = (st.relock.searches, st.relock.decodes);
    let found = st
        .relock
        .offer(ack, a.seq, &a.body, a.challenge as u8, seen);
    log.searches += st.relock.searches - before.0;
    log.decodes += st.relock.decodes - before.1;
    let Some((text, prior)) = found else {
        log.server_undecoded += 1;
        return None;
    };
    log.resumed += 1;
    st.client_cmds.set(ack, text);
    st.client_cmd_nums[slot] = ack;
    Some(prior)
}

/// `disconnect` (with or without a reason) as a reliable command in either direction.
fn is_disconnect(text: &str) -> bool {
    text.split_whitespace().next() == Some("disconnect")
}

impl DecodeState {
    /// A fresh state, boxed. Out of line: it is large and made once per connection, and
    /// keeping it apart keeps the per-message `get_or_insert_with` small enough to inline.
    #[inline(never)]
    fn boxed() -> Box<DecodeState> {
        Box::default()
    }
}

impl Default for DecodeState {
    fn default() -> Self {
        DecodeState {
            state: ClientState::default(),
            client_cmds: CommandRing::default(),
            last_client_cmd: Some(0),
            client_cmds_all_acked: false,
            client_gone: false,
            keys_s2c: scramble::KeyCache::new(),
            keys_c2s: scramble::KeyCache::new(),
            key_hash: clc::KeyHashCache::default(),
            clc_scratch: clc::ClcScratch::default(),
            cmd_seq_known: false,
            client_cmd_nums: [UNKNOWN_CMD; MAX_RELIABLE_COMMANDS],
            relock: Relock::default(),
            client_relock: ClientRelock::default(),
            feed: None,
        }
    }
}

/// Everything after the netchan: descrambling and decoding, for one connection. It runs
/// inline or on a worker thread; fed the same [`Work`] in the same order it does the same.
#[derive(Debug, Default)]
pub struct Decoder {
    opts: Options,
    /// None until the first message, and again after a reset or release (a fresh state is
    /// what a reset means; it also keeps idle connections small).
    st: Option<Box<DecodeState>>,
    pub log: DecodeLog,
    /// What the last message said about the senders' clocks (only with [`Options::samples`]).
    stamp: Stamp,
    /// Highest usercmd serverTime seen: later commands are the client's new frames.
    max_cmd_time: Option<i32>,
    /// The next client message is already descrambled (see [`Self::resume_client68`]).
    plain_next: bool,
    /// With [`Options::events_only`]: the game events know the game time, a valid snapshot
    /// having been handed out since the last gamestate (see [`Self::quiet_for_events`]).
    events_timed: bool,
    /// The serverTime of the latest snapshot left out since the last message handed out
    /// ([`Message::quiet_snapshot`]).
    quiet_snapshot: Option<i32>,
}

/// The timing fields of one decoded message, for its network sample.
#[derive(Debug, Clone, Copy, Default)]
struct Stamp {
    snapshot: Option<SnapStamp>,
    cmds: Option<CmdStamp>,
    ack: Option<i64>,
}

/// SNAPFLAG_RATE_DELAYED (q_shared.h).
const SNAPFLAG_RATE_DELAYED: u8 = 1;

fn message(a: &Accepted, dir: Dir, kind: &'static str, body: Body) -> Message {
    Message {
        flow: a.flow,
        game: "q3",
        dir,
        frame: a.frame,
        time: a.ts_ns as f64 / 1e9,
        seq: Some(a.seq),
        fragmented: a.fragmented,
        kind,
        body,
        error: None,
        raw: None,
        client_gone: false,
        protocol: a.proto.number(),
        size: a.body.len(),
        file_offset: None,
        quiet_snapshot: None,
    }
}

impl Decoder {
    pub fn new(opts: Options) -> Self {
        Decoder {
            opts,
            ..Default::default()
        }
    }

    /// Do one piece of work; decoded messages go to `out` when the options ask for them.
    /// Returns the message body when nothing kept it, for the caller to reuse its buffer.
    pub fn run(&mut self, w: Work, out: &mut Vec<Message>) -> Option<Vec<u8>> {
        match w {
            Work::Server(a) => self.server_message(a, out),
            Work::Prior(Dir::S2c, a) => self.for_state(Work::Server(a)),
            Work::Prior(Dir::C2s, a) => self.for_state(Work::Client(a)),
            Work::ClientKey { ack, stream, text } => {
                let st = state_of(&mut self.st, true);
                st.client_relock.install(ack, ClientKey::new(stream, text));
                self.log.mid68.client_keys += 1;
                None
            }
            Work::Client(a) => self.client_message(a, out),
            Work::ClientCommand { seq, text } => {
                let st = state_of(&mut self.st, true);
                let slot = (seq as usize) & (MAX_RELIABLE_COMMANDS - 1);
                st.client_cmds.set(seq, text);
                st.client_cmd_nums[slot] = seq;
                None
            }
            Work::Reset | Work::Release => {
                self.max_cmd_time = None;
                self.st = None;
                None
            }
            Work::ReleaseIfGone => {
                if self.st.as_ref().is_some_and(|st| st.client_gone) {
                    self.max_cmd_time = None;
                    self.st = None;
                }
                None
            }
        }
    }

    /// Prefetch, `level` pointers deep, what decoding a message in `dir` will touch (see
    /// [`Connection::prefetch`]); a few lines per level, those a thousand live connections
    /// made miss (sampled: the key streams, the snapshot state's head, the frame a snapshot
    /// is built in): more fill the CPU's miss buffers and stall the prefetches themselves.
    /// 0, the decode state's fields; 1, the slots of the rings they head (the acknowledged
    /// command's slot: its version tells the key caches their text is unchanged, so the
    /// texts are not read); 2, what those slots point to; 3, the entity lists.
    #[inline]
    fn prefetch(&self, level: u8, dir: Dir) {
        use crate::prefetch::read;
        let Some(st) = self.st.as_deref() else {
            return;
        };
        match (level, dir) {
            (0, Dir::S2c) => {
                st.state.prefetch(0);
                read(&st.keys_s2c);
                read(&st.client_cmds);
                read(&st.last_client_cmd);
            }
            (0, Dir::C2s) => {
                read(&st.keys_c2s);
                read(&st.key_hash);
                read(st.state.server_commands());
            }
            (1, Dir::S2c) => {
                st.state.prefetch(1);
                st.keys_s2c.prefetch_stream(256);
                if let Some(slot) = last_client_cmd_slot(st) {
                    read(slot);
                }
            }
            (1, Dir::C2s) => {
                st.keys_c2s.prefetch_stream(64);
                // The client acknowledges the latest server command it received.
                read(
                    st.state
                        .server_commands()
                        .slot_ptr(st.state.server_command_seq),
                );
            }
            (n, Dir::S2c) => st.state.prefetch(n),
            _ => {}
        }
    }

    /// Decode message work `w` for the client's state only: nothing is reported (the
    /// message was reported undecoded when it came). Through `run`, so the per-message
    /// paths keep one inlined copy each. Out of line: it never runs with a handshake.
    #[cold]
    #[inline(never)]
    fn for_state(&mut self, w: Work) -> Option<Vec<u8>> {
        let opts = self.opts;
        self.opts.emit = false;
        self.opts.keep_raw = false;
        self.opts.samples = false;
        let body = self.run(w, &mut Vec::new());
        self.opts = opts;
        body
    }

    /// Mid-session protocol 68: server message `a` acknowledges client command `ack`, whose
    /// text is unknown: search it ([`resume_mid68`]); when found, the earlier messages of
    /// the group it was found on are decoded for the client's state (they were reported
    /// undecoded, but the server commands they carried reached the client).
    #[cold]
    #[inline(never)]
    fn resume_server68(&mut self, a: &Accepted, ack: i32) -> bool {
        let st = state(&mut self.st, a);
        let Some(prior) = resume_mid68(st, &mut self.log.mid68, a, ack) else {
            return false;
        };
        for (seq, body) in prior {
            let p = Accepted {
                seq,
                body,
                fragmented: false,
                ..*a
            };
            self.for_state(Work::Server(p));
        }
        true
    }

    /// Count `e` as an error of message `a`; returns it for the event.
    fn error(&mut self, a: &Accepted, dir: Dir, e: Error) -> Box<Error> {
        let e = Box::new(e.flow(a.flow).frame(a.frame).dir(dir));
        self.log.push(Error::clone(&e));
        e
    }

    /// Record why message `a` did not decode to its end; returns it for the event. Out of
    /// line and called only with an error: most messages have none.
    #[cold]
    #[inline(never)]
    fn decode_error(&mut self, a: &Accepted, dir: Dir, mut e: Error) -> Option<Box<Error>> {
        let what = match dir {
            Dir::S2c => "server",
            Dir::C2s => "client",
        };
        e.message = format!("{what} message {}: {}", a.seq, e.message);
        Some(self.error(a, dir, e))
    }

    /// A mid-session message whose key is not known yet: reported with its header only.
    fn undecoded(&mut self, a: Accepted, dir: Dir, out: &mut Vec<Message>) -> Option<Vec<u8>> {
        if self.opts.emit && !self.quiet_for_events(true, false) {
            let kind = if dir == Dir::S2c { "server" } else { "client" };
            self.hand_out(message(&a, dir, kind, Body::None), out);
        }
        Some(a.body)
    }

    // Inlined into `run`, its only caller (messages decoded for the state come back through
    // it): the per-message path of captures with handshakes stays as fast.
    #[inline(always)]
    fn server_message(&mut self, mut a: Accepted, out: &mut Vec<Message>) -> Option<Vec<u8>> {
        let mut st = state(&mut self.st, &a);
        // The client reads reliableAcknowledge from the still-scrambled bytes (§3.2).
        let ack = {
            let mut r = BitReader::new(&a.body);
            r.read_long().ok().map(|ack| (ack, r.bit_pos()))
        };
        if a.proto == Protocol::V68 {
            if let Some((ack, _)) = ack {
                let slot = (ack as usize) & (MAX_RELIABLE_COMMANDS - 1);
                if a.mid_session && st.client_cmd_nums[slot] != ack {
                    if !self.resume_server68(&a, ack) {
                        let st = state(&mut self.st, &a);
                        st.state.mark_unseen(a.seq);
                        return self.undecoded(a, Dir::S2c, out);
                    }
                    st = state(&mut self.st, &a);
                }
                let (s, version) = st.client_cmds.keyed(ack);
                st.keys_s2c
                    .s2c(&mut a.body, a.challenge, a.seq, (s.as_bytes(), version));
            }
        }
        if let (None, Some((ack, _))) = (st.last_client_cmd, ack) {
            // Mid-session: the server acknowledges the last client command it received.
            st.last_client_cmd = Some(ack);
        }
        let detail = self.opts.detail();
        let gamestates = st.state.gamestates;
        let parsed = {
            let mut r = BitReader::new(&a.body);
            let st = &mut st.state;
            match ack {
                Some((ack, bit)) => {
                    r.set_bit_pos(bit);
                    svc::parse_server_message_with(&mut r, Some(ack), a.seq, st, detail)
                }
                None => svc::parse_server_message_with(&mut r, None, a.seq, st, detail),
            }
        };
        // The client never processed what came after it left; a `disconnect` server command
        // ends its session itself (the engine drops on it).
        if st.state.gamestates != gamestates {
            self.log.map(st.state.map_name());
        }
        if st.feed.is_some() {
            feed_echo(st, a.seq, keeps_usercmds(&self.opts));
        }
        let was_gone = st.client_gone;
        let told_to_go = parsed.ops.iter().any(|op| {
            matches!(op, svc::ServerOp::ServerCommand { new: true, text, .. } if is_disconnect(text))
        });
        st.client_gone |= told_to_go;
        if self.opts.samples {
            // The snapshot this message stored (an invalid one is not stored, as in the engine).
            let snapshot = st
                .state
                .slot(a.seq)
                .filter(|f| f.message_num == a.seq && f.valid)
                .map(|f| SnapStamp {
                    server_time: f.server_time,
                    rate_delayed: f.flags & SNAPFLAG_RATE_DELAYED != 0,
                    command_time: f.ps.fields[0],
                });
            self.stamp = Stamp {
                snapshot,
                ..Stamp::default()
            };
        }
        let error = match &parsed.error {
            Some(e) => self.decode_error(&a, Dir::S2c, Error::from(e)),
            None => None,
        };
        if self.quiet_for_events(parsed.ops.is_empty(), error.is_some()) {
            // Its snapshot (if any) is all the game events would read: its time.
            if let Some(h) = parsed.snapshot_head.filter(|h| h.valid) {
                self.quiet_snapshot = Some(h.server_time);
            }
            return Some(a.body);
        }
        if self.opts.emit || self.opts.keep_raw {
            let mut m = message(&a, Dir::S2c, "server", Body::Server(parsed));
            m.client_gone = was_gone || told_to_go;
            m.error = error;
            if self.opts.keep_raw {
                m.raw = Some(a.body);
                out.push(m);
                return None;
            }
            if self.opts.events_only {
                self.events_timed = events_timed_after(&m, self.events_timed);
            }
            self.hand_out(m, out);
        }
        Some(a.body)
    }

    /// Hand decoded message `m` out, with the time of the snapshots left out before it.
    #[inline]
    fn hand_out(&mut self, mut m: Message, out: &mut Vec<Message>) {
        m.quiet_snapshot = self.quiet_snapshot.take();
        out.push(m);
    }

    /// A message the game events read nothing from but a snapshot's time, once they know
    /// the game time: not built. Such a message (most client messages, a snapshot without
    /// obituary entities, an undecoded message) only times the events of earlier messages that
    /// waited for the first snapshot after a gamestate ([`crate::gameevent::q3::Extractor`]), and
    /// none wait once a snapshot has come; the next message handed out carries its
    /// snapshot's time. Building, queueing and handing out such messages was most of what
    /// the game events added to `events`' and `report`'s pass.
    #[inline]
    fn quiet_for_events(&self, no_ops: bool, error: bool) -> bool {
        self.opts.detail() == svc::Detail::Events && self.events_timed && no_ops && !error
    }

    fn client_message(&mut self, a: Accepted, out: &mut Vec<Message>) -> Option<Vec<u8>> {
        // A message decoded for the state after a client-message key search comes back
        // through `run` already descrambled (one inlined copy of the client path).
        let plain = std::mem::take(&mut self.plain_next);
        self.client_message_with(a, out, plain)
    }

    /// Mid-session protocol 68: client message `a` acknowledges server command `ack`, whose
    /// text is unknown; offer it to the client-message key search (the challenge byte is
    /// known by now). True when a key covers the message: its body is then descrambled.
    /// Earlier messages of its group that a key found now covers are decoded for the state
    /// (their client commands feed the server messages' keys). Out of line: it never runs
    /// with a handshake.
    #[cold]
    #[inline(never)]
    fn resume_client68(&mut self, a: &mut Accepted, hdr: (i32, i32, i32)) -> bool {
        let ack = hdr.2;
        let st = state(&mut self.st, a);
        let r = &mut st.client_relock;
        let before = (r.searches, r.decodes, r.found);
        let offer = r.offer(ack, a.seq, &a.body, a.challenge as u8);
        let log = &mut self.log.mid68;
        log.client_searches += r.searches - before.0;
        log.client_decodes += r.decodes - before.1;
        log.client_keys += r.found - before.2;
        if let Some(k) = st
            .client_relock
            .key_for(ack)
            .filter(|_| !offer.prior.is_empty())
        {
            for (seq, mut body) in offer.prior {
                let (sid, mack) = {
                    let mut r = BitReader::new(&body);
                    match clc::read_header(&mut r) {
                        // A header reaching the scrambled bytes would read otherwise once
                        // descrambled (never seen: it takes about 50 bits).
                        Ok(h) if r.bit_pos() <= 8 * scramble::C2S_START => (h.0, h.1),
                        _ => continue,
                    }
                };
                k.descramble(&mut body, a.challenge, sid, mack);
                let p = Accepted {
                    seq,
                    body,
                    fragmented: false,
                    mid_session: true,
                    ..*a
                };
                self.plain_next = true;
                self.for_state(Work::Client(p));
            }
        }
        match offer.key {
            Some(k) => {
                k.descramble(&mut a.body, a.challenge, hdr.0, hdr.1);
                true
            }
            None => {
                self.log.mid68.client_undecoded += 1;
                false
            }
        }
    }

    /// [`Self::client_message`]; `plain`: the body is already descrambled (by a key the
    /// client-message search found).
    #[inline(always)]
    fn client_message_with(
        &mut self,
        mut a: Accepted,
        out: &mut Vec<Message>,
        mut plain: bool,
    ) -> Option<Vec<u8>> {
        let hdr = {
            let mut r = BitReader::new(&a.body);
            clc::read_header(&mut r).ok().map(|h| (h, r.bit_pos()))
        };
        let Some((hdr, bit)) = hdr else {
            let text = format!("client message {}: shorter than its header", a.seq);
            let e = self.error(&a, Dir::C2s, Error::new(ErrorKind::Truncated, text));
            if self.opts.emit {
                let mut m = message(&a, Dir::C2s, "client", Body::None);
                m.fragmented = false;
                m.error = Some(e);
                self.hand_out(m, out);
            }
            return Some(a.body);
        };
        let mut st = state(&mut self.st, &a);
        if st.state.bases_unseen() && !st.cmd_seq_known {
            // Mid-session: the client's serverCommandSequence is what it acknowledges.
            st.state.server_command_seq = hdr.2;
            st.cmd_seq_known = true;
        }
        if a.proto == Protocol::V68
            && a.mid_session
            && !plain
            && a.body.len() > scramble::C2S_START
            && !st.state.server_command_known(hdr.2)
        {
            // Mid-session: the key string (the acknowledged server command) is unknown.
            if !self.resume_client68(&mut a, hdr) {
                return self.undecoded(a, Dir::C2s, out);
            }
            plain = true;
            st = state(&mut self.st, &a);
        }
        let (acked, version) = st.state.server_command_keyed(hdr.2);
        let acked = acked.as_bytes();
        if a.proto == Protocol::V68 && !plain {
            st.keys_c2s
                .c2s(&mut a.body, a.challenge, (hdr.0, hdr.1), (acked, version));
        }
        let mut r = BitReader::new(&a.body);
        r.set_bit_pos(bit);
        let keep_usercmds = keeps_usercmds(&self.opts);
        let acked_known = st.state.server_command_known(hdr.2);
        // The acknowledged server command unseen, but its whole text found by the
        // client-message search (the key string): the usercmd key's hash of it is known.
        let found_hash = match acked_known {
            true => None,
            false => st.client_relock.text_hash(hdr.2),
        };
        let hash_known = acked_known || found_hash.is_some();
        // Mid-session before a gamestate: the low 16 bits of the checksumFeed, all a
        // usercmd value depends on, once recovered from the snapshots (feedsearch.rs).
        let key_hash = found_hash.unwrap_or_else(|| st.key_hash.get(acked, version));
        // The acknowledged server command's hash unknown, the search is for the key's part
        // while the client acknowledges it.
        let epoch = (!hash_known).then_some((hdr.2, key_hash));
        let (feed_low, feed_byte) = match &st.feed {
            Some(f) if st.state.bases_unseen() => f.part(epoch),
            _ => (None, None),
        };
        // Only the low byte known: the 8-bit values are, the 16-bit ones not.
        let byte_only = feed_low.is_none() && feed_byte.is_some();
        let feed_used = feed_low.unwrap_or(feed_byte.map_or(0, u16::from));
        let learn = keep_usercmds
            && feed_low.is_none()
            && st.state.bases_unseen()
            && st.feed.as_ref().is_none_or(|f| f.active());
        let ctx = ClcContext {
            checksum_feed: if feed_low.is_some() || byte_only {
                i32::from(feed_used)
            } else {
                st.state.checksum_feed
            },
            acked_server_command: acked,
            last_client_command: match (st.last_client_cmd, st.client_cmds_all_acked) {
                (None, true) => Some(i32::MIN),
                (last, _) => last,
            },
            keep_usercmds,
            commands_only: self.opts.events_only && self.opts.emit && !self.opts.samples,
            // The key hashes the acknowledged server command: mid-session it may be one sent
            // before the capture, even after a gamestate gave the checksumFeed.
            key_unknown: feed_low.is_none() && (st.state.bases_unseen() || !hash_known),
        };
        // The ops are only collected for the caller; the state needs the new commands.
        let mut ops = Vec::new();
        // The game events read a client message's commands only: with samples (the report)
        // the moves are still decoded, for their timing, but not copied into the message.
        let emit_moves = self.opts.emit && !self.opts.events_only;
        let events_only = self.opts.events_only;
        let emit = self.opts.emit;
        let mut stamp = CmdStamp::default();
        let max_cmd_time = &mut self.max_cmd_time;
        let (cmds, last, gone, known) = (
            &mut st.client_cmds,
            &mut st.last_client_cmd,
            &mut st.client_gone,
            &mut st.client_cmd_nums,
        );
        let mut feed = if learn {
            Some(st.feed.get_or_insert_with(Box::default))
        } else {
            None
        };
        let mut commands = false;
        let error = clc::walk_client_ops(&mut r, hdr, &ctx, key_hash, &mut st.clc_scratch, |op| {
            // With the recovered feed part the values are known, the whole key (its high
            // bits) still not.
            let op = match op {
                clc::OpView::Move {
                    bit,
                    no_delta,
                    cmds,
                    ..
                } if feed_low.is_some() => clc::OpView::Move {
                    bit,
                    no_delta,
                    key: None,
                    cmds,
                },
                op => op,
            };
            // A command not known to be new is kept too: a retransmission has the same text.
            if let clc::OpView::ClientCommand {
                seq: cs, text, new, ..
            } = op
            {
                commands = true;
                if new != Some(false) {
                    *gone |= is_disconnect(cmds.set_lossy(cs, text));
                    known[(cs as usize) & (MAX_RELIABLE_COMMANDS - 1)] = cs;
                }
                if new == Some(true) {
                    *last = Some(cs);
                }
            }
            if let clc::OpView::Move { cmds, .. } = op {
                count_new_cmds(cmds, max_cmd_time, &mut stamp);
                if let Some(f) = feed.as_deref_mut() {
                    f.offer_cmds(epoch, cmds, feed_used);
                }
            }
            // The game events read a client message's commands alone: no other op is
            // copied for them (an end-of-message op alone would allocate for every message).
            let wanted = if events_only {
                matches!(op, clc::OpView::ClientCommand { .. })
            } else {
                emit_moves || !matches!(op, clc::OpView::Move { .. })
            };
            if emit && wanted {
                ops.push(op.owned());
                if byte_only {
                    known_low_byte(ops.last_mut());
                }
            }
        });
        if st.last_client_cmd.is_none() && !commands && error.is_none() {
            st.client_cmds_all_acked = true;
        }
        let gone = st.client_gone;
        if self.opts.samples {
            self.stamp = Stamp {
                snapshot: None,
                cmds: Some(stamp),
                ack: Some(i64::from(hdr.1)),
            };
        }
        let error_text = match &error {
            Some(e) => self.decode_error(&a, Dir::C2s, Error::from(e)),
            None => None,
        };
        if self.opts.emit && !self.quiet_for_events(ops.is_empty(), error_text.is_some()) {
            let parsed = clc::ClientMessage {
                server_id: hdr.0,
                message_ack: hdr.1,
                reliable_ack: hdr.2,
                ops,
                error,
            };
            let mut m = message(&a, Dir::C2s, "client", Body::Client(parsed));
            m.client_gone = gone;
            m.error = error_text;
            self.hand_out(m, out);
        }
        Some(a.body)
    }
}

/// A move read with the checksumFeed's low byte known and its high byte not: its 8-bit
/// values (moves, weapon) are known. Out of line: it never runs with a handshake.
#[cold]
#[inline(never)]
fn known_low_byte(op: Option<&mut clc::ClientOp>) {
    use super::usercmd::{UNKNOWN_FORWARD, UNKNOWN_RIGHT, UNKNOWN_UP, UNKNOWN_WEAPON};
    if let Some(clc::ClientOp::Move { cmds, .. }) = op {
        for c in cmds {
            c.unknown &= !(UNKNOWN_FORWARD | UNKNOWN_RIGHT | UNKNOWN_UP | UNKNOWN_WEAPON);
        }
    }
}

/// Client messages' usercmds are decoded and kept (not for the flow table, nor for the
/// game events alone).
#[inline]
fn keeps_usercmds(o: &Options) -> bool {
    (o.emit && !o.headers_only && !o.events_only) || o.samples
}

/// Mid-session before a gamestate: the snapshot server message `seq` stored echoes the
/// client's last command, for the usercmd key search ([`FeedSearch`]). Out of line: it
/// never runs with a handshake.
#[cold]
#[inline(never)]
fn feed_echo(st: &mut DecodeState, seq: i32, keeps_usercmds: bool) {
    if !keeps_usercmds || !st.state.bases_unseen() {
        return;
    }
    let Some(f) = st.feed.as_deref_mut().filter(|f| f.active()) else {
        return;
    };
    if let Some(frame) = st
        .state
        .slot(seq)
        .filter(|f| f.message_num == seq && f.valid)
    {
        f.offer_snapshot(&frame.ps, &frame.ps_known);
    }
}

/// The ring slot of the last client command the server received, which it acknowledges:
/// it keys the next server message (for [`Decoder::prefetch`]).
fn last_client_cmd_slot(st: &DecodeState) -> Option<*const u8> {
    Some(st.client_cmds.slot_ptr(st.last_client_cmd?))
}

/// Whether the game events know the game time after server message `m`
/// ([`crate::gameevent::q3::Extractor::message`]): a gamestate clears it, a valid snapshot sets it.
fn events_timed_after(m: &Message, before: bool) -> bool {
    let Some(s) = m.server() else {
        return before;
    };
    // Any valid snapshot of the message times it, wherever its gamestate is.
    let gamestate = s
        .ops
        .iter()
        .any(|op| matches!(op, svc::ServerOp::Gamestate(_)));
    let snapshot = s.snapshot_head.is_some_and(|h| h.valid)
        || s.ops
            .iter()
            .any(|op| matches!(op, svc::ServerOp::Snapshot(sn) if sn.valid));
    snapshot || (before && !gamestate)
}

/// Count the usercmds newer than any seen before (each packet repeats a few old ones so a
/// lost packet costs no command) and note the last one's serverTime.
fn count_new_cmds(cmds: &[super::usercmd::UserCmd], max: &mut Option<i32>, stamp: &mut CmdStamp) {
    for c in cmds {
        if max.is_none_or(|m| c.server_time > m) {
            stamp.new += 1;
            *max = Some(c.server_time);
        }
    }
    if let Some(c) = cmds.last() {
        stamp.last_time = Some(c.server_time);
    }
}

impl crate::parallel::Detached for Decoder {
    type Work = Work;
    type Spare = Vec<u8>;
    fn run(&mut self, work: Work) -> Option<Vec<u8>> {
        // Detached decoders serve the flow table: nothing is emitted.
        Decoder::run(self, work, &mut Vec::new())
    }
    fn prefetch(&self, work: &Work, level: u8) {
        match work {
            Work::Server(_) => Decoder::prefetch(self, level, Dir::S2c),
            Work::Client(_) => Decoder::prefetch(self, level, Dir::C2s),
            _ => {}
        }
    }
    /// `Decoder::prefetch`'s levels (the decoder itself is the worker's, in cache).
    const PREFETCH_LEVELS: usize = 4;
}

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

/// Searches per connection. A search tries 13 guesses of 256 challenge bytes, but each
/// message's last bytes rule out nearly all of them before any decode
/// ([`super::midsession::keysearch::may_end_after`]): a search costs a few hundred body decodes, about
/// 0.5 M instructions (callgrind, release, stored cuts), so 16 searches cost a connection
/// that never locks on half what 3 cost before that check (5.4 M each). A group no guess
/// decodes uses a search too: server messages acknowledging free text (`userinfo`,
/// `say …`) come first on some cuts (q3-basic cut at 10 %, q3-two-clients cut at 30 %:
/// locked on at the 4th search, before the client-side lock-on existed).
const LOCK_TRIES: u32 = 16;

/// Body decodes the lock-on searches of a connection may spend before another starts: a
/// message the last-bytes check cannot rule out (crafted, or a long one that ends alike
/// under many keys) costs decodes, and this keeps such input to what 3 searches could cost
/// before that check (at most 18 301 decodes on the stored cuts then; 2 050 now).
const LOCK_DECODES: usize = 20_000;

/// A mid-session protocol-68 connection before lock-on: the latest server messages of one
/// acknowledgement, and what the search has cost.
#[derive(Debug)]
struct Lock68 {
    group: super::midsession::keysearch::AckGroup,
    /// The latest client messages of one acknowledgement (of a server command), for the
    /// lock-on from the client's side ([`c2ssearch::lock_search`]), and its searches.
    client_group: super::midsession::keysearch::AckGroup,
    client_tries: u32,
    client_decodes: usize,
    /// The acknowledgement and the message lengths (`AckGroup::length_counts`) of the
    /// last client-group search whose answer more messages of those lengths cannot change
    /// ([`c2ssearch::LockOutcome`]): the group is not searched again until a message of
    /// another length (or a second one of a length) comes, and the tries are kept for
    /// the next acknowledgement.
    client_searched: Option<(i32, Vec<(usize, u8)>)>,
    /// The latest lead of a client group ([`c2ssearch::Lead`]) and its acknowledgement.
    client_lead: Option<(i32, c2ssearch::Lead)>,
    /// Accepted messages of both directions so far, and the first one's capture time.
    packets: u64,
    first_ns: Option<i64>,
    tries: u32,
    decodes: usize,
    /// No guess decodes the current acknowledgement's group: more of its messages cannot
    /// change that, so the tries are kept for the next acknowledgement.
    ruled_out: bool,
    /// The ends of the server messages acknowledging the current command, for reading its
    /// text with every challenge byte ([`Lock68::tail_lock`]), and the reads so far.
    tails: super::midsession::tailsearch::Tails,
    tail_reads: u32,
}

/// Reads of a command's text off the server messages' ends before the lock-on, the
/// challenge byte solved with the text (a group is read at every 8 ends kept from 16:
/// about 0.9 M instructions each).
const TAIL_LOCK_READS: u32 = 16;

impl Default for Lock68 {
    fn default() -> Self {
        Lock68 {
            group: Default::default(),
            client_group: super::midsession::keysearch::AckGroup::client_lock(),
            client_tries: 0,
            client_decodes: 0,
            client_searched: None,
            client_lead: None,
            packets: 0,
            first_ns: None,
            tries: 0,
            decodes: 0,
            ruled_out: false,
            tails: Default::default(),
            tail_reads: 0,
        }
    }
}

/// Longest client message held for the client-side lock-on: its group keeps 32, and a
/// client's messages are mostly moves of 15–60 bytes (one that carries a command is longer,
/// up to about 1 KB); held bodies stay small whatever a hostile capture sends.
const MAX_LOCK_CLIENT_BODY: usize = 1_100;

/// Client-message lock-on searches per connection: each costs at most
/// [`c2ssearch::LOCK_LIMITS`]`.decodes` body decodes (1.4–5.0 M instructions per stored
/// cut, about a millisecond). A group is searched at 8, 16 and 32 messages (and as it
/// slides at 32), again only when that can change the answer (`Lock68::client_searched`);
/// a group that ends with 4 to 7 messages as it ends, and the next one from 4 messages
/// when that left a lead (`c2ssearch::joint_answer`): four tries reach a second group
/// where a team game's server commands (`tinfo` every second) keep groups short.
const CLIENT_LOCK_TRIES: u32 = 4;

impl Lock68 {
    /// Take client message `seq` and search when its group is complete: the challenge
    /// byte, the server command the group acknowledges, and its key stream.
    fn offer_client(&mut self, seq: i32, body: &[u8]) -> Option<(u8, i32, c2ssearch::Found)> {
        if body.len() > MAX_LOCK_CLIENT_BODY {
            return None;
        }
        let (ack, _) = c2ssearch::ClientScrambled::new(body)?;
        // A group that ends short of 8 messages (a team game's server commands come every
        // second) is searched as it ends: its lead may answer with the next group's.
        if let Some(prev) = self.client_group.ack().filter(|&a| a != ack) {
            if (4..8).contains(&self.client_group.msgs.len()) {
                // Its own joint answer is not taken: the lock-on is on the current group.
                let _ = self.search_client(prev);
            }
        }
        if !self.client_group.push(ack, seq, body) {
            return None;
        }
        // From 4 messages only with another group's lead to answer with.
        let lead_elsewhere = self.client_lead.as_ref().is_some_and(|(a, _)| *a != ack);
        if self.client_group.msgs.len() < 8 && !lead_elsewhere {
            return None;
        }
        self.search_client(ack)
    }

    /// Search the client group (acknowledging server command `ack`): its answer, or the
    /// answer of its lead and another group's ([`c2ssearch::joint_answer`]).
    fn search_client(&mut self, ack: i32) -> Option<(u8, i32, c2ssearch::Found)> {
        if self.client_tries >= CLIENT_LOCK_TRIES {
            return None;
        }
        let lens = self.client_group.length_counts();
        if let Some((a, seen)) = &self.client_searched {
            if *a == ack && lens.iter().all(|l| seen.binary_search(l).is_ok()) {
                return None;
            }
        }
        self.client_tries += 1;
        let msgs: Vec<c2ssearch::ClientScrambled<'_>> = self
            .client_group
            .msgs
            .iter()
            .filter_map(|(_, b)| c2ssearch::ClientScrambled::new(b).map(|(_, m)| m))
            .filter(|m| m.body.len() > scramble::C2S_START)
            .collect();
        // A group of 8 gets a third of the budget: its messages end at few positions, so
        // a search that runs long there would rather wait for 16.
        let limits = match msgs.len() {
            n if n < 16 => c2ssearch::Limits {
                decodes: c2ssearch::LOCK_LIMITS.decodes / 3,
                ..c2ssearch::LOCK_LIMITS
            },
            _ => c2ssearch::LOCK_LIMITS,
        };
        let o = c2ssearch::lock_search(&msgs, limits);
        self.client_decodes += o.work.decodes;
        self.client_searched = o.settled.then_some((ack, lens));
        if let Some((ch, f)) = o.found {
            return Some((ch, ack, f));
        }
        let lead = o.lead?;
        let joint = match &self.client_lead {
            Some((a, earlier)) if *a != ack => c2ssearch::joint_answer(earlier, &lead),
            _ => None,
        };
        self.client_lead = Some((ack, lead));
        joint.map(|(ch, f)| (ch, ack, f))
    }

    /// Take server message `seq` and search when a group is complete: the guessed client
    /// command the group acknowledges, and the challenge byte.
    /// The searches are bounded by [`LOCK_TRIES`] and [`LOCK_DECODES`], not by time: a
    /// capture whose first guessable acknowledgement comes late still locks on then.
    // Out of line: only connections seen mid-session before their lock-on come here, and
    // inlined into the datagram path it made that path slower for every connection.
    #[inline(never)]
    fn offer(&mut self, seq: i32, body: &[u8]) -> Option<(i32, String, u8, bool)> {
        let (ack, _) = super::midsession::keysearch::reliable_ack(body)?;
        if self.group.start(ack) {
            self.ruled_out = false;
            self.tails.clear();
        }
        // Read every 8 ends kept from 16 on: before the lock-on nothing else decodes
        // these messages, and a read costs about 0.2 ms. No ends are kept once the reads
        // are spent.
        let read_due = self.tail_reads < TAIL_LOCK_READS && {
            let kept = self.tails.len();
            self.tails.push(seq, body);
            let n = self.tails.len();
            n > kept && n >= 16 && n % 8 == 0
        };
        // Search when a group is complete, then once more when it has doubled (if more
        // than one guess decoded it).
        let complete = self.group.push(ack, seq, body);
        if read_due {
            self.tail_reads += 1;
            if let Some((cmd, ch)) = self.tail_lock() {
                return Some((ack, cmd, ch, true));
            }
        }
        if self.ruled_out || !complete || self.tries >= LOCK_TRIES || self.decodes >= LOCK_DECODES {
            return None;
        }
        self.tries += 1;
        let (guess, work) = super::midsession::keysearch::guess_command(&self.group.scrambled());
        self.decodes += work.decodes;
        match guess {
            super::midsession::keysearch::Guess::Found(cmd, ch) => Some((ack, cmd, ch, false)),
            super::midsession::keysearch::Guess::Ambiguous => None,
            super::midsession::keysearch::Guess::None => {
                self.ruled_out = true;
                None
            }
        }
    }

    /// The command the server messages acknowledge, read off their ends
    /// ([`super::midsession::tailsearch`]) when no guess decodes them (free text sent before the
    /// capture, as a player's `tell` or `say_team`): the (challenge byte, text) pairs the
    /// kept ends allow, each then decoding the group's latest messages whole
    /// ([`super::midsession::keysearch::command_for`]). Taken only when one pair does.
    fn tail_lock(&mut self) -> Option<(String, u8)> {
        let group = self.group.scrambled();
        if group.len() < super::midsession::keysearch::AckGroup::MAX {
            return None;
        }
        let mut found: Option<(String, u8)> = None;
        for (ch, text) in self.tails.texts_any() {
            let (hit, work) =
                super::midsession::keysearch::command_for(&group, ch, [text.as_str()]);
            self.decodes += work.decodes;
            if hit.is_some() {
                if found.is_some() {
                    return None;
                }
                found = Some((text, ch));
            }
        }
        found
    }
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
            quiet_snapshot: None,
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
    /// later datagrams, deepest for the next one to be handled ([`crate::prefetch`]).
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
                if self.opts.emit {
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
        let mut prior = std::mem::take(&mut l.group.msgs);
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
        if self.opts.emit {
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
