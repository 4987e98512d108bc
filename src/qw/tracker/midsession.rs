//! Connections whose handshake the capture missed: recognised by their netchan shape, their
//! first packets held and replayed, their protocol extensions found by decoding.
use super::*;

/// Client packets in a row (one qport, rising sequences) before a connection without
/// handshake is claimed; a server packet acknowledging one of them is needed too.
pub const MID_SESSION_CONFIRM: u8 = 3;
/// Packets one candidate holds for replay once confirmed (the server acknowledges a client
/// sequence one round trip after it: a quarter second of both directions at 77 packets/s).
pub(super) const CANDIDATE_HELD: usize = 64;
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
