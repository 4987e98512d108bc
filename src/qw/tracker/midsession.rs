//! Connections whose handshake the capture missed: recognised by their netchan shape, their
//! first packets held and replayed, their protocol extensions found by decoding.
use super::*;

/// Client packets in a row (one qport, rising sequences) before a connection without
/// handshake is claimed; a server packet acknowledging one of them is needed too.
pub const MID_SESSION_CONFIRM: u8 = 3;
/// Packets one candidate holds for replay once confirmed. The server acknowledges a client
/// sequence one round trip after it (a quarter second of both directions at 77 packets/s),
/// but mvdsv answers only what it hears: a capture that starts while the client's upstream
/// is held (a lag switch) sees no answer until the release (`captures/qw-lagswitch` cut at
/// 30 %: 183 packets, 4 s, before it). The bytes of all candidates together are bounded
/// by the hold budget ([`crate::flow::held::HELD_BYTES_MAX`]).
pub(super) const CANDIDATE_HELD: usize = 1024;
/// Largest step between two client sequences of one candidate (losses in between).
pub(super) const CANDIDATE_MAX_STEP: u32 = 64;

/// A (server, client) pair that may be a connection seen mid-session, not yet confirmed.
#[derive(Debug)]
pub(super) struct Candidate {
    pub(super) qport: u16,
    pub(super) first_seq: u32,
    pub(super) seq: u32,
    pub(super) hits: u8,
    /// A server packet to the client acknowledged one of the sequences seen.
    pub(super) answered: bool,
    /// Client packets with a checksummed move that holds, since the last reset.
    pub(super) moves: u8,
    pub(super) held: HeldPackets,
}

impl Candidate {
    /// A candidate starting at client packet `seq` with qport `qport`, nothing counted yet.
    pub(super) fn new(qport: u16, seq: u32) -> Self {
        Candidate {
            qport,
            first_seq: seq,
            seq,
            hits: 0,
            answered: false,
            moves: 0,
            held: HeldPackets::default(),
        }
    }
}

/// A client packet's netchan shape: a non-zero sequence, the qport, then client ops that read
/// to the end. The flag: a `clc_move` whose checksum (over the moves and the sequence) holds,
/// which a server packet or other UDP passes about once in 256 tries at best.
pub(super) fn c2s_shape(p: &[u8]) -> Option<(Header<'_>, bool)> {
    let h = Header::new_checked(p, Dir::C2s)?;
    let op = *h.payload().first()?;
    if h.sequence() == 0 || !matches!(op, 1 | 3..=7 | 83) {
        return None;
    }
    let mut r = Reader::with_base(h.payload(), h.header_len());
    let (ops, err) = clc::parse_message(&mut r, h.sequence(), &Ext::default());
    if err.is_some() {
        return None;
    }
    let checked = ops.iter().any(|(_, op)| {
        matches!(
            op,
            clc::ClientOp::Move {
                checksum_ok: true,
                ..
            }
        )
    });
    Some((h, checked))
}

/// The extension bits that change how a message is framed or read (everything the decoders
/// consult): each candidate set is one combination of them.
pub(super) fn ext_candidates() -> Vec<Ext> {
    const FTE_BITS: [u32; 5] = [
        ext::FTE_TRANS,
        ext::FTE_MODELDBL,
        ext::FTE_ENTITYDBL,
        ext::FTE_FLOATCOORDS,
        ext::FTE_COLOURMOD,
    ];
    let mut ftes = vec![0u32];
    for m in 0u32..32 {
        let bits = FTE_BITS
            .iter()
            .enumerate()
            .filter(|(i, _)| m & (1 << i) != 0)
            .fold(0, |a, (_, b)| a | b);
        // Any FTE bit at all changes entity flags (the evenmore byte).
        ftes.push(bits | ext::FTE_CHUNKEDDOWNLOADS);
    }
    let mut v = Vec::with_capacity(ftes.len() * 4);
    for mvd1 in 0..4 {
        for &fte in &ftes {
            v.push(Ext { fte, fte2: 0, mvd1 });
        }
    }
    v
}

/// What a connection seen mid-session recovered.
#[derive(Debug)]
pub(super) struct MidSession {
    pub(super) first_frame: u64,
    /// Extension sets every server message so far decoded with, to its end; one left (or a
    /// serverdata seen) settles them.
    pub(super) survivors: Vec<(Ext, u8)>,
    pub(super) settled: bool,
    /// Netchan state taken from the first packet of each direction.
    pub(super) started: [bool; 2],
    /// Packets of the flow up to and with the first decoded server message.
    pub(super) packets: u64,
    pub(super) lock: Option<(u64, u64)>,
    /// Server messages left undecoded while the extension sets disagreed.
    pub(super) undecoded: u64,
    pub(super) serverdata_frame: Option<u64>,
    /// Packets of the flow seen when it was recognised (all of them decoded by replay).
    pub(super) recognised_after: usize,
    /// Frame where one extension set was left (or a serverdata named it).
    pub(super) settled_frame: Option<u64>,
}

impl MidSession {
    pub(super) fn new(frame: u64) -> Self {
        MidSession {
            first_frame: frame,
            survivors: ext_candidates().into_iter().map(|e| (e, 0)).collect(),
            settled: false,
            started: [false; 2],
            packets: 0,
            lock: None,
            undecoded: 0,
            serverdata_frame: None,
            settled_frame: None,
            recognised_after: 0,
        }
    }

    pub(super) fn report(&self) -> String {
        let mut s = format!(
            "capture starts after the connection's handshake (first packet frame {}, recognised at packet {}): netchan followed from its first packet, client messages decoded from it; ",
            self.first_frame, self.recognised_after
        );
        match self.lock {
            Some((frame, n)) => s.push_str(&format!(
                "server messages decoded from frame {frame} (packet {n} of the flow)"
            )),
            None => s.push_str("no server message could be decoded"),
        }
        match self.settled_frame {
            Some(f) => s.push_str(&format!(", protocol extensions determined at frame {f}")),
            None => s.push_str(&format!(
                ", protocol extensions narrowed to {} candidate sets that read every message alike",
                self.survivors.len()
            )),
        }
        if self.undecoded > 0 {
            s.push_str(&format!(
                ", {} left undecoded while the protocol extensions were undetermined",
                self.undecoded
            ));
        }
        match self.serverdata_frame {
            Some(f) => s.push_str(&format!(
                "; entity values unknown until the serverdata at frame {f}"
            )),
            None => s.push_str("; entity values unknown (no serverdata in the capture)"),
        }
        s
    }
}

/// A decoded server message: its ops, and the error that stopped it.
pub(super) type Decoded = (
    Vec<(usize, ServerOp)>,
    Option<crate::qw::cursor::DecodeError>,
);

/// Extension sets that fail this many messages other sets read are dropped (one damaged
/// packet does not drop the right set).
pub(super) const EXT_STRIKES: u8 = 2;

/// Decode a server message of a connection whose extensions are not settled: with every
/// surviving set; a set that fails a message another set reads gets a strike, and is dropped
/// at [`EXT_STRIKES`]. The message is decoded (for real, once) only when every remaining set
/// reads it to its end and gives the same ops; else None and the state is as before.
///
/// A set that answers the questions a decode under another set asked (see [`Asked`]) alike
/// reads the message the same way, so it is not decoded again: most sets differ only in bits
/// no message asks about, and a message costs one decode, not one per set.
pub(super) fn decode_unsettled(
    st: &mut ServerState,
    mid: &mut MidSession,
    payload: &[u8],
    base: usize,
) -> Option<Decoded> {
    let saved = (
        st.players,
        st.baselines_known,
        st.serverdata.clone(),
        st.ext,
    );
    let mut first: Option<Vec<(usize, ServerOp)>> = None;
    let mut agree = true;
    let mut failed = vec![false; mid.survivors.len()];
    // The sets decoded: (set, the questions its decode asked, whether it failed). Backwards,
    // so that the decode left last in the state is the first set's, or one that reads the
    // message as it does, when its result is taken.
    let mut decoded: Vec<(Ext, u64, bool)> = Vec::new();
    for (&(e, _), fail) in mid.survivors.iter().zip(failed.iter_mut()).rev() {
        if let Some(&(_, _, f)) = decoded
            .iter()
            .find(|(d, asked, _)| Asked::same_answers(*asked, d, &e))
        {
            *fail = f;
            continue;
        }
        st.players = saved.0;
        st.baselines_known = saved.1;
        st.serverdata.clone_from(&saved.2);
        st.ext = e;
        let mut r = Reader::with_base(payload, base);
        let (ops, err) = svc::parse_message(st, &mut r);
        decoded.push((e, r.asked(), err.is_some()));
        *fail = err.is_some();
        if err.is_none() {
            match &first {
                None => first = Some(ops),
                Some(f) => agree &= *f == ops,
            }
        }
    }
    let mut all_read = first.is_some();
    for ((_, strikes), fail) in mid.survivors.iter_mut().zip(&failed) {
        // No set reads this message (a damaged packet): no strikes.
        if *fail && first.is_some() {
            *strikes += 1;
            all_read &= *strikes >= EXT_STRIKES;
        }
    }
    mid.survivors.retain(|(_, s)| *s < EXT_STRIKES);
    let taken = match (agree && all_read, mid.survivors.first()) {
        (true, Some(&(e, _))) => Some(e),
        _ => None,
    };
    if mid.survivors.len() == 1 && taken.is_some() {
        mid.settled = true;
    }
    // The last decode read the message to its end as the set taken would: its ops and what
    // it left in the state are that decode's.
    let last = decoded.last().copied();
    if let (Some(e), Some((d, asked, false))) = (taken, last) {
        if Asked::same_answers(asked, &d, &e) {
            let ops = first?;
            // Unless the message's serverdata named the extensions.
            if !ops
                .iter()
                .any(|(_, op)| matches!(op, ServerOp::Serverdata(_)))
            {
                st.ext = e;
            }
            return Some((ops, None));
        }
    }
    st.players = saved.0;
    st.baselines_known = saved.1;
    st.serverdata = saved.2;
    st.ext = saved.3;
    let e = taken?;
    st.ext = e;
    let mut r = Reader::with_base(payload, base);
    Some(svc::parse_message(st, &mut r))
}

impl Tracker {
    /// A netchan packet of no known connection: a candidate connection seen mid-session
    /// (see the module docs). Unconfirmed packets are left to the table (false) and held for
    /// replay; at confirmation the flow adopts the table's counts and replays what it held.
    pub(super) fn mid_session(
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
            let c = self
                .candidates
                .entry(key)
                .or_insert_with(|| Candidate::new(qport, seq));
            if c.hits > 0 && (c.qport != qport || seq <= c.seq || seq - c.seq > CANDIDATE_MAX_STEP)
            {
                self.held.release(&c.held);
                *c = Candidate::new(qport, seq);
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
                self.candidates.insert(key, Candidate::new(0, 0));
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
}
