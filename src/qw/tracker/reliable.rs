//! Reliable-delivery bookkeeping of one netchan direction (spec §2.4.3).

/// Reliable-delivery bookkeeping of one direction (spec §2.4.3): a reliable packet is proven
/// lost when the peer acknowledges its sequence without flipping its reliable parity bit; the
/// next reliable packet of that direction then carries the block again (a retransmission).
#[derive(Debug, Default)]
pub(super) struct RelTrack {
    /// Receiver's reliable parity as inferred from the peer's ack bits.
    pub(super) parity: bool,
    /// Last reliable-flagged packet whose fate is not known yet.
    pub(super) pending: Option<u32>,
    /// The last reliable block was lost: the next reliable packet repeats it.
    lost: bool,
    /// Highest sequence seen from the sender (pcap duplicates are not new sends).
    last_sent: Option<u32>,
}

impl RelTrack {
    /// A packet of this direction with the reliable flag: is it a retransmission?
    pub(super) fn sent_reliable(&mut self, seq: u32) -> bool {
        if self.last_sent.is_some_and(|l| seq <= l) {
            return false;
        }
        self.last_sent = Some(seq);
        let retransmit = self.lost;
        self.lost = false;
        self.pending = Some(seq);
        retransmit
    }
    /// A packet of the other direction acknowledged `ack` with parity bit `bit`.
    /// Returns the sequence of the reliable packet this ack proves lost, if any.
    pub(super) fn peer_ack(&mut self, ack: u32, bit: bool) -> Option<u32> {
        let p = self.pending?;
        if ack < p {
            return None;
        }
        self.pending = None;
        if bit != self.parity {
            self.parity = bit;
            None
        } else {
            self.lost = true;
            Some(p)
        }
    }
}
