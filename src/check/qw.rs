//! QuakeWorld netchan rules no decoder applies, from the netchan fields of each datagram
//! (`Netchan_Process` / `Netchan_Transmit` of mvdsv and ezQuake): a sender going back in its
//! sequences, acknowledging a sequence the peer never sent, and a reliable parity bit that
//! flips although no reliable message reached the receiver.
use super::Finding;
use crate::flow::Dir;
use crate::qw::message::NetchanStatus;
use crate::qw::Message;

/// Sequences a packet may arrive late by on a real path and still be network reordering,
/// as the Quake 3 netchan's rule counts them (and the sequence-ring below).
const WINDOW: u32 = 64;
/// A packet behind fewer than this many accepted ones (of the last [`WINDOW`]) was reordered
/// on the path, however far its sequence is behind: mvdsv numbers each answer like the
/// client packet it answers, so its answers to a burst of held client packets (a lag
/// switch's release) leave together numbered far apart (`captures/qw-lagswitch`: 617
/// arriving just after 685, with a few accepted packets between them).
const REORDER_PACKETS: usize = 8;

/// What one direction's sender did, as the capture shows it.
#[derive(Default)]
struct Side {
    /// Highest sequence sent (any packet of this direction).
    sent: Option<u32>,
    /// Last sequence the receiver accepted (the tracker's verdict).
    accepted: Option<u32>,
    /// The last [`WINDOW`] accepted sequences, oldest first.
    recent: std::collections::VecDeque<u32>,
    /// Size of the accepted packet of each of the last [`WINDOW`] sequences (slot seq % 64).
    sizes: Vec<(u32, usize)>,
    /// Sequences of the last [`WINDOW`] reliable-flagged packets, oldest first.
    reliable: std::collections::VecDeque<u32>,
    /// This sender's last accepted acknowledgement: (ack, reliable parity bit).
    acked: Option<(u32, bool)>,
}

#[derive(Default)]
struct Flow {
    /// Indexed by direction: c2s, s2c.
    sides: [Side; 2],
}

/// Per-flow state of the QuakeWorld checks.
#[derive(Default)]
pub struct Watch {
    /// Indexed by flow id (dense from 1).
    flows: Vec<Flow>,
}

fn at(m: &Message, rule: &'static str, bit: u64, message: String) -> Finding {
    Finding {
        file: String::new(),
        flow: Some(m.flow),
        frame: Some(m.frame),
        bit: Some(bit),
        dir: Some(m.dir),
        rule,
        message,
        ..Finding::default()
    }
}

fn index(d: Dir) -> usize {
    match d {
        Dir::C2s => 0,
        Dir::S2c => 1,
    }
}

impl Watch {
    /// Look at one datagram of a capture (demo blocks carry no netchan header).
    pub fn qw(&mut self, m: &Message, out: &mut Vec<Finding>) {
        let (Some(seq), Some(ack), Some(rel), Some(ack_rel), Some(status)) =
            (m.seq, m.ack, m.reliable, m.ack_reliable, m.netchan)
        else {
            return;
        };
        let (seq, ack) = (seq as u32, ack as u32);
        let i = m.flow as usize;
        if i >= self.flows.len() {
            self.flows.resize_with(i + 1, Flow::default);
        }
        let fl = &mut self.flows[i];
        let me = index(m.dir);
        if status == NetchanStatus::Accepted
            && fl.sides[me].accepted.is_some_and(|last| seq <= last)
        {
            // The receiver took a lower sequence: a new connection on this flow (reconnect).
            *fl = Flow::default();
        }
        going_back(&mut fl.sides[me], m, seq, status, out);
        let s = &mut fl.sides[me];
        s.sent = Some(s.sent.map_or(seq, |x| x.max(seq)));
        if rel {
            if s.reliable.len() == WINDOW as usize {
                s.reliable.pop_front();
            }
            s.reliable.push_back(seq);
        }
        if status != NetchanStatus::Accepted {
            return;
        }
        let (mine, peer) = if me == 0 {
            let (a, b) = fl.sides.split_at_mut(1);
            (&mut a[0], &b[0])
        } else {
            let (a, b) = fl.sides.split_at_mut(1);
            (&mut b[0], &a[0])
        };
        acknowledges(mine, peer, m, ack, ack_rel, out);
        mine.acked = Some((ack, ack_rel));
    }
}

/// The sender went back: a sequence the receiver accepted arrives again with another size,
/// or a sequence far behind the last accepted one (a network duplicates byte for byte and
/// reorders by a few packets, never by [`WINDOW`]).
fn going_back(s: &mut Side, m: &Message, seq: u32, status: NetchanStatus, out: &mut Vec<Finding>) {
    if s.sizes.is_empty() {
        s.sizes = vec![(u32::MAX, 0); WINDOW as usize];
    }
    let slot = (seq % WINDOW) as usize;
    match (status, s.accepted) {
        (NetchanStatus::Accepted, _) => {
            s.accepted = Some(seq);
            s.sizes[slot] = (seq, m.size);
            if s.recent.len() == WINDOW as usize {
                s.recent.pop_front();
            }
            s.recent.push_back(seq);
        }
        (_, Some(last))
            if last.saturating_sub(seq) >= WINDOW
                && s.recent.iter().filter(|&&r| r > seq).count() >= REORDER_PACKETS =>
        {
            out.push(at(
                m,
                "qw.sequence-backwards",
                0,
                format!(
                    "sequence {seq} arrives {} behind the last accepted ({last})",
                    last - seq
                ),
            ))
        }
        _ => {
            let (was, size) = s.sizes[slot];
            if was == seq && size != m.size {
                out.push(at(
                    m,
                    "qw.sequence-backwards",
                    0,
                    format!(
                        "sequence {seq} sent again with other content ({} bytes, accepted with {size})",
                        m.size
                    ),
                ));
            }
        }
    }
}

/// The acknowledge word of an accepted packet: its sequence must have been sent by the peer,
/// and its reliable parity bit may only flip when the peer sent a reliable message in the
/// span it newly acknowledges (the receiver flips it for each reliable message it accepts).
fn acknowledges(
    mine: &Side,
    peer: &Side,
    m: &Message,
    ack: u32,
    bit: bool,
    out: &mut Vec<Finding>,
) {
    // The acknowledge word is the netchan header's second long.
    const ACK_BIT: u64 = 32;
    let Some(sent) = peer.sent else {
        return;
    };
    if ack > sent {
        out.push(at(
            m,
            "qw.ack-ahead",
            ACK_BIT,
            format!("acknowledges sequence {ack} but the peer sent only up to {sent}"),
        ));
        return;
    }
    let Some((prev, prev_bit)) = mine.acked else {
        return;
    };
    if bit != prev_bit && !peer.reliable.iter().any(|&s| s > prev && s <= ack) {
        out.push(at(
            m,
            "qw.reliable-ack-flip",
            ACK_BIT,
            format!(
                "reliable acknowledge bit flips with sequences {}..={ack} acknowledged, none of them reliable",
                prev + 1
            ),
        ));
    }
}
