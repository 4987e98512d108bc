//! Software pipelining across datagrams (issue 16): with a thousand connections interleaved,
//! each datagram's connection state has left the caches since that connection's previous
//! datagram, and decoding waits on memory for it, pointer after pointer. The records after
//! the current one are already in the reader's buffer, so before each record is read the
//! games that want it ([`Offered::looks_ahead`](super::tracker::Offered)) are given
//! the datagram [`DISTANCE`] records ahead: a game looks up its flow and prefetches its
//! state's first level, and gives each nearer record the next level, so that the loads of
//! every level overlap the decoding of the records in between. Hints only: nothing read here
//! changes what is decoded.
//!
//! With few connections their state stays in cache and the prefetching (a few hundred
//! instructions per datagram) is pure cost: a game asks for it only while at least
//! [`PREFETCH_MIN_ACTIVE`] of its connections were active in its last idle scan.
use super::frames::Frames;
use super::tracker::Trackers;

/// Records between the one about to be read and the one looked up ahead: one level of
/// pointers is prefetched per record. Timed on the 840-lane capture (one thread) against 2
/// and 3 levels, and against 5 levels spaced 2 and 3 records apart: none was better, though
/// the differences were within the machine's noise.
pub(crate) const DISTANCE: usize = 5;

/// Active connections from which a game prefetches: at 19 live connections (the 16-lane
/// benchmark) it cost about a fifth more CPU time (17 % more instructions) and hid nothing; at
/// 980 it saves about a tenth. In between (one thread, prefetching always on against never,
/// median CPU time of 8 paired runs on 1.4 M-frame captures): 70 live 1.09×, 140 live 0.99×,
/// 280 live 0.99×, 560 live 0.93×. It starts to pay at about this many (~14 MB of decode
/// state, several times the L2 caches).
pub const PREFETCH_MIN_ACTIVE: usize = 128;

/// Where the next peek starts.
#[derive(Default)]
pub(super) struct Lookahead {
    /// File offset of the block after the last one peeked (None: find it again).
    cursor: Option<u64>,
}

impl Lookahead {
    /// Before the next record is read: give the games that want it the datagram
    /// [`DISTANCE`] records after it.
    #[inline]
    pub(super) fn step<F: Frames>(&mut self, frames: &F, trackers: &mut Trackers) {
        if !trackers.looks_ahead() {
            self.cursor = None;
            return;
        }
        let peeked = frames.peek(DISTANCE, self.cursor);
        self.cursor = peeked.as_ref().map(|p| p.2);
        let later = peeked.and_then(|(link, data, _)| crate::net::peek_udp4(link, data));
        trackers.look_ahead(later.as_ref());
    }
}
