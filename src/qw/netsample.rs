//! The QuakeWorld extractor of the network analysis: a netchan message's header fields and
//! its usercmds as a game-neutral [`Sample`].
use super::clc::ClientOp;
use super::message::{Message, NetchanStatus, OpKind};
use super::svc::ServerOp;
use crate::flow::Dir;
use crate::vocab::sample::{Arrival, CmdStamp, Sample};

/// The sample of one netchan datagram (None for connectionless packets and demo blocks).
pub fn sample(m: &Message) -> Option<Sample> {
    if m.connectionless || m.block.is_some() {
        return None;
    }
    let arrival = match m.netchan? {
        NetchanStatus::Accepted => Arrival::Accepted,
        NetchanStatus::Duplicate => Arrival::Duplicate,
        NetchanStatus::OutOfOrder => Arrival::OutOfOrder,
    };
    let mut s = Sample::new(m.flow, m.dir, m.time, m.size, m.seq?, arrival);
    s.gap = m.dropped.unwrap_or(0);
    s.frame = m.frame;
    s.ack = m.ack;
    s.reliable = m.reliable == Some(true);
    if m.dir == Dir::C2s && arrival == Arrival::Accepted {
        s.cmds = Some(cmds(m, s.gap));
    }
    if m.dir == Dir::S2c && arrival == Arrival::Accepted {
        s.chokes = chokes(m);
    }
    Some(s)
}

/// The answers the server skipped for the rate limit before this one (`svc_chokecount`).
fn chokes(m: &Message) -> u8 {
    m.ops.iter().fold(0u8, |n, op| match op.kind {
        OpKind::Server(ServerOp::Choke { count }) => n.saturating_add(count),
        _ => n,
    })
}

/// A clc_move holds the commands of this and the two previous sequences: the ones of
/// packets skipped just before (at most two) are new to the server too.
fn cmds(m: &Message, gap: u32) -> CmdStamp {
    let has_move = m
        .ops
        .iter()
        .any(|op| matches!(op.kind, OpKind::Client(ClientOp::Move { .. })));
    CmdStamp {
        new: if has_move { 1 + gap.min(2) } else { 0 },
        last_time: None,
    }
}
