//! The decoder of one connection: the client's parse state and the decode of each accepted
//! message (server and client), with its network sample.
use super::*;

/// The parse state of a connection: what its client knows.
#[derive(Debug)]
pub(super) struct DecodeState {
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
    pub(super) client_gone: bool,
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
pub(super) const UNKNOWN_CMD: i32 = i32::MIN;

/// The decode state, made on the first message (marked mid-session when the capture
/// missed the connection's start).
pub(super) fn state<'s>(st: &'s mut Option<Box<DecodeState>>, a: &Accepted) -> &'s mut DecodeState {
    state_of(st, a.mid_session)
}

/// [`state`] for a connection whose start the capture missed (`mid_session`) or not.
pub(super) fn state_of(st: &mut Option<Box<DecodeState>>, mid_session: bool) -> &mut DecodeState {
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
pub(super) fn resume_mid68(
    st: &mut DecodeState,
    log: &mut Mid68Log,
    a: &Accepted,
    ack: i32,
) -> Option<crate::q3::midsession::keysearch::Held> {
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
pub(super) fn is_disconnect(text: &str) -> bool {
    text.split_whitespace().next() == Some("disconnect")
}

impl DecodeState {
    /// A fresh state, boxed. Out of line: it is large and made once per connection, and
    /// keeping it apart keeps the per-message `get_or_insert_with` small enough to inline.
    #[inline(never)]
    pub(super) fn boxed() -> Box<DecodeState> {
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
    pub(super) st: Option<Box<DecodeState>>,
    pub log: DecodeLog,
    /// What the last message said about the senders' clocks (only with [`Options::samples`]).
    pub(super) stamp: Stamp,
    /// Highest usercmd serverTime seen: later commands are the client's new frames.
    max_cmd_time: Option<i32>,
    /// The next client message is already descrambled (see [`Self::resume_client68`]).
    plain_next: bool,
    /// With [`Options::events_only`]: the game events know the game time, a valid snapshot
    /// having been handed out since the last gamestate (see [`Self::quiet_for_events`]).
    events_timed: bool,
    /// The latest snapshot left out since the last message handed out, as its head alone
    /// (see [`Self::quiet_for_events`]): handed out just before the next message.
    quiet_snapshot: Option<Message>,
}

/// The timing fields of one decoded message, for its network sample.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Stamp {
    pub(super) snapshot: Option<SnapStamp>,
    pub(super) cmds: Option<CmdStamp>,
    pub(super) ack: Option<i64>,
}

/// SNAPFLAG_RATE_DELAYED (q_shared.h).
pub(super) const SNAPFLAG_RATE_DELAYED: u8 = 1;

pub(super) fn message(a: &Accepted, dir: Dir, kind: &'static str, body: Body) -> Message {
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
    pub(super) fn prefetch(&self, level: u8, dir: Dir) {
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
        self.opts.detail = Detail::None;
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
        if self.opts.emit() && !self.quiet_for_events(true, false) {
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
            // Its snapshot's head (if valid) is all the game events would read of it.
            if parsed.snapshot_head.is_some_and(|h| h.valid) {
                self.quiet_snapshot = Some(message(&a, Dir::S2c, "server", Body::Server(parsed)));
            }
            return Some(a.body);
        }
        if self.opts.emit() || self.opts.keep_raw {
            let mut m = message(&a, Dir::S2c, "server", Body::Server(parsed));
            m.client_gone = was_gone || told_to_go;
            m.error = error;
            if self.opts.keep_raw {
                m.raw = Some(a.body);
                out.push(m);
                return None;
            }
            if self.opts.events_only() {
                self.events_timed = events_timed_after(&m, self.events_timed);
            }
            self.hand_out(m, out);
        }
        Some(a.body)
    }

    /// Hand decoded message `m` out, after the latest snapshot left out before it.
    #[inline]
    fn hand_out(&mut self, m: Message, out: &mut Vec<Message>) {
        if let Some(q) = self.quiet_snapshot.take() {
            out.push(q);
        }
        out.push(m);
    }

    /// A message the game events read nothing from but a snapshot's time, once they know
    /// the game time: not built. Such a message (most client messages, a snapshot without
    /// obituary entities, an undecoded message) only times the events of earlier messages that
    /// waited for the first snapshot after a gamestate ([`crate::gameevent::q3::Extractor`]), and
    /// none wait once a snapshot has come; the latest such snapshot is handed out as its head
    /// alone just before the next message (its time, and what came between). Building, queueing and handing out such messages was most of what
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
            if self.opts.emit() {
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
            commands_only: self.opts.events_only() && self.opts.emit() && !self.opts.samples,
            // The key hashes the acknowledged server command: mid-session it may be one sent
            // before the capture, even after a gamestate gave the checksumFeed.
            key_unknown: feed_low.is_none() && (st.state.bases_unseen() || !hash_known),
        };
        // The ops are only collected for the caller; the state needs the new commands.
        let mut ops = Vec::new();
        // The game events read a client message's commands only: with samples (the report)
        // the moves are still decoded, for their timing, but not copied into the message.
        let emit_moves = self.opts.emit() && !self.opts.events_only();
        let events_only = self.opts.events_only();
        let emit = self.opts.emit();
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
        if self.opts.emit() && !self.quiet_for_events(ops.is_empty(), error_text.is_some()) {
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
pub(super) fn known_low_byte(op: Option<&mut clc::ClientOp>) {
    use crate::q3::usercmd::{UNKNOWN_FORWARD, UNKNOWN_RIGHT, UNKNOWN_UP, UNKNOWN_WEAPON};
    if let Some(clc::ClientOp::Move { cmds, .. }) = op {
        for c in cmds {
            c.unknown &= !(UNKNOWN_FORWARD | UNKNOWN_RIGHT | UNKNOWN_UP | UNKNOWN_WEAPON);
        }
    }
}

/// Client messages' usercmds are decoded and kept (not for the flow table, nor for the
/// game events alone).
#[inline]
pub(super) fn keeps_usercmds(o: &Options) -> bool {
    (o.emit() && !o.headers_only() && !o.events_only()) || o.samples
}

/// Mid-session before a gamestate: the snapshot server message `seq` stored echoes the
/// client's last command, for the usercmd key search ([`FeedSearch`]). Out of line: it
/// never runs with a handshake.
#[cold]
#[inline(never)]
pub(super) fn feed_echo(st: &mut DecodeState, seq: i32, keeps_usercmds: bool) {
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
pub(super) fn last_client_cmd_slot(st: &DecodeState) -> Option<*const u8> {
    Some(st.client_cmds.slot_ptr(st.last_client_cmd?))
}

/// Whether the game events know the game time after server message `m`
/// ([`crate::gameevent::q3::Extractor::message`]): a gamestate clears it, a valid snapshot sets it.
pub(super) fn events_timed_after(m: &Message, before: bool) -> bool {
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
pub(super) fn count_new_cmds(
    cmds: &[crate::q3::usercmd::UserCmd],
    max: &mut Option<i32>,
    stamp: &mut CmdStamp,
) {
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
