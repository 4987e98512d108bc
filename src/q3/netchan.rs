//! Netchan packets (q3-protocol.md §1): the header view and the receiver emulation.
//!
//! [`Header`] is a zero-copy view over one sequenced UDP payload. [`Receiver`] emulates the
//! receiving engine's `Netchan_Process` for one direction exactly (§1.4): stale and duplicate
//! sequences are dropped before fragment handling, fragments must arrive in order, a fragment
//! shorter than [`FRAGMENT_SIZE`] completes the message.
use std::borrow::Cow;

use crate::flow::Dir;

/// Set in the sequence word of every fragment.
pub const FRAGMENT_BIT: u32 = 1 << 31;
/// Payload bytes per full fragment; a shorter fragment is the last one.
pub const FRAGMENT_SIZE: usize = 1300;
/// Largest reassembled message body.
pub const MAX_MSGLEN: usize = 16384;
/// A sequence more than this far ahead of the last accepted one needs a following packet to
/// confirm it (see [`Receiver::process`]); below it the receiver behaves as the engine's.
pub const MAX_SEQ_JUMP: i32 = 200;

/// Which header layout a channel uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Protocol {
    /// Quake 3 1.32 and ioquake3 legacy channels: no checksum, XOR-scrambled bodies.
    V68,
    /// ioquake3 protocol 71: a checksum word after sequence/qport, no scrambling.
    V71,
}

impl Protocol {
    pub fn number(self) -> u32 {
        match self {
            Protocol::V68 => 68,
            Protocol::V71 => 71,
        }
    }
    pub fn from_number(n: i64) -> Option<Protocol> {
        match n {
            66..=68 => Some(Protocol::V68),
            71 => Some(Protocol::V71),
            _ => None,
        }
    }
}

/// Why a header could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// The datagram ends inside the netchan header.
    #[error("netchan packet of {len} bytes is shorter than its {need}-byte header")]
    Truncated {
        /// Bytes in the datagram.
        len: usize,
        /// Bytes the header needs (sequence, qport, fragment fields).
        need: usize,
    },
    /// A fragment's length runs past the end of the datagram.
    #[error("fragment claims {claimed} bytes at offset {start}, packet holds {have}")]
    BadFragment {
        /// The fragment's offset in the reassembled message.
        start: i32,
        /// The fragment's length as its header gives it.
        claimed: i32,
        /// Bytes the datagram holds after the header.
        have: usize,
    },
}

/// Zero-copy view of a sequenced packet's header. After [`Header::parse`] succeeded no
/// accessor can fail.
#[derive(Debug, Clone, Copy)]
pub struct Header<'a> {
    pub sequence: i32,
    pub fragmented: bool,
    pub qport: Option<u16>,
    pub checksum: Option<u32>,
    pub frag_start: u16,
    pub frag_len: u16,
    /// The body (unfragmented) or this fragment's bytes.
    pub payload: &'a [u8],
}

fn le16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

fn le32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at + 4)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

impl<'a> Header<'a> {
    /// Parse the header of a packet travelling in `dir` on a channel of `proto`.
    #[inline]
    pub fn parse(buf: &'a [u8], dir: Dir, proto: Protocol) -> Result<Self, HeaderError> {
        let trunc = |need| HeaderError::Truncated {
            len: buf.len(),
            need,
        };
        let raw = le32(buf, 0).ok_or(trunc(4))?;
        let fragmented = raw & FRAGMENT_BIT != 0;
        let sequence = (raw & !FRAGMENT_BIT) as i32;
        let mut at = 4;
        let qport = if dir == Dir::C2s {
            let q = le16(buf, at).ok_or(trunc(at + 2))?;
            at += 2;
            Some(q)
        } else {
            None
        };
        let checksum = if proto == Protocol::V71 {
            let c = le32(buf, at).ok_or(trunc(at + 4))?;
            at += 4;
            Some(c)
        } else {
            None
        };
        let (mut frag_start, mut frag_len) = (0, 0);
        if fragmented {
            frag_start = le16(buf, at).ok_or(trunc(at + 4))?;
            frag_len = le16(buf, at + 2).ok_or(trunc(at + 4))?;
            at += 4;
        }
        let rest = buf.get(at..).unwrap_or(&[]);
        let payload = if fragmented {
            // The engine reads the lengths as signed shorts and drops the fragment when the
            // length is negative or runs past the packet; extra bytes after it are ignored.
            let (s, l) = (frag_start as i16 as i32, frag_len as i16 as i32);
            if l < 0 || l as usize > rest.len() || s < 0 {
                return Err(HeaderError::BadFragment {
                    start: s,
                    claimed: l,
                    have: rest.len(),
                });
            }
            &rest[..l as usize]
        } else {
            rest
        };
        Ok(Header {
            sequence,
            fragmented,
            qport,
            checksum,
            frag_start,
            frag_len,
            payload,
        })
    }

    /// Header length in bytes as sent (what the engine's `readcount` is after the header).
    pub fn header_len(&self) -> usize {
        4 + self.qport.map_or(0, |_| 2)
            + self.checksum.map_or(0, |_| 4)
            + if self.fragmented { 4 } else { 0 }
    }
}

/// Protocol 71's per-packet checksum (§8.2).
pub fn checksum71(challenge: i32, sequence: i32) -> u32 {
    (challenge ^ sequence.wrapping_mul(challenge)) as u32
}

/// The challenge behind a protocol-71 checksum, from a packet with an even sequence (§8.2):
/// bit k of `sequence * challenge` then depends only on the challenge's bits below k, so the
/// challenge is solved bit by bit from the lowest. None for an odd sequence (the challenge's
/// own bit cancels there: such packets only verify).
pub fn solve_challenge71(sequence: i32, checksum: u32) -> Option<i32> {
    if sequence % 2 != 0 {
        return None;
    }
    let mut c: u32 = 0;
    for k in 0..32 {
        let p = (c as i32).wrapping_mul(sequence) as u32;
        c |= ((checksum ^ p) >> k & 1) << k;
    }
    let c = c as i32;
    (checksum71(c, sequence) == checksum).then_some(c)
}

/// What the receiver did with one packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rx<'a> {
    /// A whole message was accepted: its sequence and body (reassembled if it came in
    /// fragments; else the packet's own bytes, borrowed, so the caller decides whether and
    /// where to copy them).
    Accepted {
        seq: i32,
        body: Cow<'a, [u8]>,
        fragmented: bool,
    },
    /// A fragment was buffered; the message is not complete yet.
    Pending,
    /// Dropped, and why.
    Dropped(DropReason),
}

/// Why a packet was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// The same sequence was accepted before.
    Duplicate,
    /// An older sequence arrived after a newer one.
    OutOfOrder,
    /// A fragment did not continue the message being reassembled.
    FragmentGap,
    /// The reassembled message would exceed [`MAX_MSGLEN`].
    TooLong,
    /// The sequence jumped more than [`MAX_SEQ_JUMP`] ahead and no packet confirmed it yet.
    Implausible,
    /// The sequence went backwards (first packet of a run, counted as duplicate or out of
    /// order too): a sequence accepted before arrives again with other content, or one more
    /// than [`REORDER_WINDOW`] behind arrives. A network duplicates packets byte for byte and
    /// delivers late packets into gaps; only a sender that went back makes these.
    Backwards,
}

/// How far back a late packet may come and still be a reordering by the network (the
/// receiver's window of accepted sequences).
pub const REORDER_WINDOW: i32 = 64;

/// Per-direction receiver counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RxStats {
    pub accepted: u64,
    /// Distinct fragmented messages seen (whether or not they could be reassembled).
    pub fragmented: u64,
    /// Fragmented messages reassembled and accepted.
    pub reassembled: u64,
    pub dropped: u64,
    pub duplicates: u64,
    pub out_of_order: u64,
    /// Packets held back for an implausible sequence jump.
    pub implausible: u64,
}

/// One direction's `Netchan_Process` state.
#[derive(Debug, Clone)]
pub struct Receiver {
    incoming: i32,
    frag_seq: i32,
    frag_buf: Vec<u8>,
    /// Bit i set = sequence `incoming - i` was accepted; tells duplicates from late packets.
    seen: u64,
    /// A sequence that jumped too far ahead, waiting for a packet that follows it.
    jump_candidate: Option<i32>,
    /// Fingerprints of the last [`REORDER_WINDOW`] accepted sequences (slot `seq % 64`):
    /// the accepting packet's fragment offset in the top 16 bits (0xffff: unfragmented), its
    /// length and last four bytes below. Tells a network duplicate from a sequence used again.
    prints: [u64; REORDER_WINDOW as usize],
    /// Inside a run of backwards packets (only its first is [`DropReason::Backwards`]).
    backwards_run: bool,
    pub stats: RxStats,
}

/// A packet's fingerprint: fragment offset, length and the payload's last four bytes. A
/// network duplicate repeats every byte, so its print is equal; a sender that used the
/// sequence again for other content almost always changes the length or the tail (the last
/// ops and the end-of-message bits). It costs one load per accepted packet: this runs for
/// every datagram of every connection.
#[inline]
fn fingerprint(h: &Header<'_>) -> u64 {
    let p = h.payload;
    let tail = match p.len().checked_sub(4).and_then(|at| p.get(at..)) {
        Some(t) => u32::from_le_bytes([t[0], t[1], t[2], t[3]]),
        None => p.iter().fold(0, |w, &b| (w << 8) | u32::from(b)),
    };
    let marker = if h.fragmented { h.frag_start } else { 0xffff };
    (u64::from(marker) << 48) | ((p.len() as u64 & 0xffff) << 32) | u64::from(tail)
}

impl Default for Receiver {
    fn default() -> Self {
        Receiver {
            incoming: 0,
            frag_seq: 0,
            frag_buf: Vec::new(),
            seen: 1,
            jump_candidate: None,
            prints: [0; REORDER_WINDOW as usize],
            backwards_run: false,
            stats: RxStats::default(),
        }
    }
}

impl Receiver {
    pub fn new() -> Self {
        Self::default()
    }

    /// Prefetch what [`Self::process`] reads for a packet of sequence `seq` (the
    /// counters and the fingerprint slot it checks or writes): see `crate::prefetch`.
    #[inline]
    pub fn prefetch(&self, seq: i32) {
        crate::prefetch::read(&self.incoming);
        crate::prefetch::read(&self.stats);
        crate::prefetch::write(&self.prints[(seq & (REORDER_WINDOW - 1)) as usize]);
    }

    /// Highest accepted sequence (the engine's `incomingSequence`).
    pub fn incoming(&self) -> i32 {
        self.incoming
    }

    /// Reset as `Netchan_Setup` does on a new connection.
    pub fn reset(&mut self) {
        *self = Receiver::default();
    }

    /// Drop the reassembly buffer of an idle channel (a message pending in it is lost, as
    /// the timed-out engine would have lost it).
    pub fn release_buffer(&mut self) {
        self.frag_buf = Vec::new();
    }

    /// Process one packet as the receiving engine would.
    #[inline]
    pub fn process<'a>(&mut self, h: &Header<'a>) -> Rx<'a> {
        let seq = h.sequence;
        if seq <= self.incoming {
            let back = self.incoming.wrapping_sub(seq);
            let dup = (0..64).contains(&back) && self.seen & (1u64 << back) != 0;
            // A repeated fragment of the message just completed is a duplicate too.
            let reason = if dup {
                DropReason::Duplicate
            } else {
                DropReason::OutOfOrder
            };
            match reason {
                DropReason::Duplicate => self.stats.duplicates += 1,
                _ => self.stats.out_of_order += 1,
            }
            if self.went_back(h, back, dup) && !std::mem::replace(&mut self.backwards_run, true) {
                return Rx::Dropped(DropReason::Backwards);
            }
            return Rx::Dropped(reason);
        }
        if self.implausible_jump(seq) {
            self.stats.implausible += 1;
            return Rx::Dropped(DropReason::Implausible);
        }
        if h.fragmented {
            if seq != self.frag_seq {
                self.frag_seq = seq;
                self.frag_buf.clear();
                self.stats.fragmented += 1;
            }
            if h.frag_start as usize != self.frag_buf.len() {
                return Rx::Dropped(DropReason::FragmentGap);
            }
            if self.frag_buf.len() + h.payload.len() > MAX_MSGLEN {
                return Rx::Dropped(DropReason::TooLong);
            }
            self.frag_buf.extend_from_slice(h.payload);
            if h.payload.len() == FRAGMENT_SIZE {
                return Rx::Pending;
            }
            let body = std::mem::take(&mut self.frag_buf);
            self.accept(seq);
            self.prints[(seq & (REORDER_WINDOW - 1)) as usize] = fingerprint(h);
            self.stats.reassembled += 1;
            return Rx::Accepted {
                seq,
                body: Cow::Owned(body),
                fragmented: true,
            };
        }
        self.accept(seq);
        self.prints[(seq & (REORDER_WINDOW - 1)) as usize] = fingerprint(h);
        Rx::Accepted {
            seq,
            body: Cow::Borrowed(h.payload),
            fragmented: false,
        }
    }

    /// True for a sequence too far ahead to be believed at once: a corrupted sequence word
    /// would otherwise make every later packet look stale and lose the rest of the flow. Such
    /// a packet is held back as a candidate; the next packet that follows it closely confirms
    /// a real gap (a capture that lost many packets) and is accepted. The engine, which never
    /// sees corrupted sequences, has no such rule.
    fn implausible_jump(&mut self, seq: i32) -> bool {
        if self.stats.accepted == 0 || seq.wrapping_sub(self.incoming) <= MAX_SEQ_JUMP {
            self.jump_candidate = None;
            return false;
        }
        let confirmed = self
            .jump_candidate
            .is_some_and(|c| seq > c && seq.wrapping_sub(c) <= MAX_SEQ_JUMP);
        if confirmed {
            self.jump_candidate = None;
            return false;
        }
        self.jump_candidate = Some(seq);
        true
    }

    /// True when a stale packet (`back` behind the last accepted sequence) cannot be the
    /// network's doing: further back than [`REORDER_WINDOW`], or an accepted sequence again
    /// with another payload at the same fragment offset. A late packet into a gap, or a
    /// duplicate whose fragment offset differs from the accepting packet's, is not.
    fn went_back(&self, h: &Header<'_>, back: i32, dup: bool) -> bool {
        if self.stats.accepted == 0 {
            return false;
        }
        if !(0..REORDER_WINDOW).contains(&back) {
            return true;
        }
        if !dup {
            return false;
        }
        let kept = self.prints[(h.sequence & (REORDER_WINDOW - 1)) as usize];
        let now = fingerprint(h);
        kept >> 48 == now >> 48 && kept != now
    }

    #[inline]
    fn accept(&mut self, seq: i32) {
        self.backwards_run = false;
        let gap = seq.wrapping_sub(self.incoming).wrapping_sub(1);
        if gap > 0 && self.stats.accepted > 0 {
            self.stats.dropped += gap as u64;
        }
        let shift = seq.wrapping_sub(self.incoming);
        self.seen = if (1..64).contains(&shift) {
            (self.seen << shift) | 1
        } else {
            1
        };
        self.incoming = seq;
        self.stats.accepted += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // captures/q3-basic/capture.pcapng frame 5: the client's first netchan packet (c2s).
    const FIRST_C2S: [u8; 11] = [0x01, 0, 0, 0, 0x6d, 0x5c, 0xaa, 0xaa, 0xaa, 0x11, 0xfe];

    #[test]
    fn deconstruct_first_client_packet() {
        let h = Header::parse(&FIRST_C2S, Dir::C2s, Protocol::V68).unwrap();
        assert_eq!(h.sequence, 1);
        assert!(!h.fragmented);
        assert_eq!(h.qport, Some(0x5c6d));
        assert_eq!(h.payload, &[0xaa, 0xaa, 0xaa, 0x11, 0xfe]);
        assert_eq!(h.header_len(), 6);
    }

    fn frag(seq: i32, start: u16, len: usize) -> Vec<u8> {
        let mut v = ((seq as u32) | FRAGMENT_BIT).to_le_bytes().to_vec();
        v.extend_from_slice(&start.to_le_bytes());
        v.extend_from_slice(&(len as u16).to_le_bytes());
        v.extend(std::iter::repeat_n(7u8, len));
        v
    }

    #[test]
    fn fragments_reassemble_and_exact_multiple_needs_empty_tail() {
        let mut rx = Receiver::new();
        let a = frag(1, 0, 1300);
        let b = frag(1, 1300, 0);
        assert_eq!(
            rx.process(&Header::parse(&a, Dir::S2c, Protocol::V68).unwrap()),
            Rx::Pending
        );
        match rx.process(&Header::parse(&b, Dir::S2c, Protocol::V68).unwrap()) {
            Rx::Accepted {
                seq,
                body,
                fragmented,
            } => {
                assert_eq!((seq, body.len(), fragmented), (1, 1300, true))
            }
            other => panic!("{other:?}"),
        }
        // The same fragment again is a stale sequence now.
        assert_eq!(
            rx.process(&Header::parse(&b, Dir::S2c, Protocol::V68).unwrap()),
            Rx::Dropped(DropReason::Duplicate)
        );
    }

    #[test]
    fn missing_fragment_loses_message() {
        let mut rx = Receiver::new();
        let b = frag(3, 1300, 10);
        assert_eq!(
            rx.process(&Header::parse(&b, Dir::S2c, Protocol::V68).unwrap()),
            Rx::Dropped(DropReason::FragmentGap)
        );
        assert_eq!((rx.stats.fragmented, rx.stats.reassembled), (1, 0));
    }

    #[test]
    fn order_dup_and_gap_counts() {
        let mut rx = Receiver::new();
        let pkt = |s: i32| {
            let mut v = (s as u32).to_le_bytes().to_vec();
            v.push(0);
            v
        };
        for s in [1, 2, 5, 4, 5, 6] {
            let p = pkt(s);
            rx.process(&Header::parse(&p, Dir::S2c, Protocol::V68).unwrap());
        }
        assert_eq!(rx.stats.accepted, 4);
        assert_eq!(rx.stats.dropped, 2);
        assert_eq!(rx.stats.out_of_order, 1);
        assert_eq!(rx.stats.duplicates, 1);
    }

    #[test]
    fn a_sender_going_back_is_told_from_duplicates_and_late_packets() {
        let mut rx = Receiver::new();
        let mut feed = |s: i32, b: u8| {
            let mut p = (s as u32).to_le_bytes().to_vec();
            p.extend_from_slice(&[b; 9]);
            match rx.process(&Header::parse(&p, Dir::S2c, Protocol::V68).unwrap()) {
                Rx::Dropped(r) => Some(r),
                _ => None,
            }
        };
        for s in [1, 2, 3, 5, 6] {
            assert_eq!(feed(s, s as u8), None);
        }
        // A network duplicate (same bytes) and a late packet into the gap: not going back.
        assert_eq!(feed(3, 3), Some(DropReason::Duplicate));
        assert_eq!(feed(4, 4), Some(DropReason::OutOfOrder));
        // Sequence 3 again with other content: the sender went back; the run it starts is
        // reported once.
        assert_eq!(feed(3, 99), Some(DropReason::Backwards));
        assert_eq!(feed(4, 99), Some(DropReason::OutOfOrder));
        for s in 7..200 {
            assert_eq!(feed(s, s as u8), None);
        }
        // Further back than the reorder window, even with the old content.
        assert_eq!(feed(5, 5), Some(DropReason::Backwards));
        assert_eq!(feed(6, 6), Some(DropReason::OutOfOrder));
        assert_eq!(feed(200, 200), None);
        assert_eq!(feed(6, 6), Some(DropReason::Backwards));
    }

    #[test]
    fn a_corrupt_sequence_jump_does_not_stall_the_channel() {
        let mut rx = Receiver::new();
        let mut feed = |s: i32| {
            let mut p = (s as u32).to_le_bytes().to_vec();
            p.push(0);
            match rx.process(&Header::parse(&p, Dir::S2c, Protocol::V68).unwrap()) {
                Rx::Accepted {
                    seq,
                    body,
                    fragmented,
                } => Rx::Accepted {
                    seq,
                    body: Cow::Owned(body.into_owned()),
                    fragmented,
                },
                Rx::Pending => Rx::Pending,
                Rx::Dropped(r) => Rx::Dropped(r),
            }
        };
        assert!(matches!(feed(10), Rx::Accepted { seq: 10, .. }));
        // A damaged sequence word: held back, and the channel goes on from 11.
        assert_eq!(feed(0x0500_000b), Rx::Dropped(DropReason::Implausible));
        assert!(matches!(feed(11), Rx::Accepted { seq: 11, .. }));
        assert!(matches!(feed(12), Rx::Accepted { seq: 12, .. }));
        // A real gap (the capture lost 1000 packets): the next packet confirms it.
        assert_eq!(feed(1012), Rx::Dropped(DropReason::Implausible));
        assert!(matches!(feed(1013), Rx::Accepted { seq: 1013, .. }));
        assert!(matches!(feed(1014), Rx::Accepted { seq: 1014, .. }));
        assert_eq!(rx.stats.implausible, 2);
        assert_eq!(rx.stats.dropped, 1000);
    }

    #[test]
    fn truncated_and_bad_fragment_headers() {
        assert!(matches!(
            Header::parse(&[1, 0], Dir::S2c, Protocol::V68),
            Err(HeaderError::Truncated { .. })
        ));
        let mut f = frag(1, 0, 4);
        f.truncate(f.len() - 2);
        assert!(matches!(
            Header::parse(&f, Dir::S2c, Protocol::V68),
            Err(HeaderError::BadFragment { .. })
        ));
    }

    #[test]
    fn challenge_71_is_solved_from_even_sequences() {
        for (ch, seq) in [(5, 2), (-410_434_374, 1234), (0x7abc_def1, 4096), (1, 0)] {
            assert_eq!(
                solve_challenge71(seq, checksum71(ch, seq)),
                Some(ch),
                "{ch} {seq}"
            );
        }
        assert_eq!(solve_challenge71(3, checksum71(5, 3)), None);
    }

    #[test]
    fn checksum_71() {
        assert_eq!(checksum71(5, 3), (5 ^ 15) as u32);
    }
}
