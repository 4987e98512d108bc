//! A QuakeWorld datagram in one line: `seq 812 ack 530 reliable: packetentities 9 entities
//! delta from 3; playerinfo ×2; print "..."`, a client's `seq 530 ack 811: move [msec 13
//! angles 10.5 -92.3 0.0 buttons 1 move 400/0/0]; delta from 3`.
use std::fmt::Write as _;

use super::{info_value, quoted, FlowInfo};
use crate::qw::clc::ClientOp;
use crate::qw::message::{Message, NetchanStatus, OpKind};
use crate::qw::oob::Oob;
use crate::qw::svc::ServerOp;

/// The player's name, from the connect's userinfo.
pub(super) fn learn(m: &Message, info: &mut FlowInfo) {
    for op in &m.ops {
        if let OpKind::Oob(Oob::Connect { userinfo, .. }) = &op.kind {
            if let Some(n) = info_value(userinfo, "name") {
                info.player = Some(n.to_string());
            }
        }
    }
}

/// An op's name without its `svc_` / `clc_` prefix.
fn short(name: &str) -> &str {
    name.strip_prefix("svc_")
        .or_else(|| name.strip_prefix("clc_"))
        .unwrap_or(name)
}

/// The datagram after the header: netchan fields, ops, error.
pub(super) fn describe(m: &Message, t: &mut String) {
    if let Some(seq) = m.seq {
        let _ = write!(t, " seq {seq}");
    }
    if let Some(ack) = m.ack {
        let _ = write!(t, " ack {ack}");
    }
    if m.reliable == Some(true) {
        t.push_str(" reliable");
    }
    if m.retransmit == Some(true) {
        t.push_str(" (retransmission)");
    }
    match m.netchan {
        Some(NetchanStatus::Duplicate) => {
            t.push_str(" duplicate: a sequence already received, dropped")
        }
        Some(NetchanStatus::OutOfOrder) => t.push_str(" out of order: dropped"),
        _ => {}
    }
    if let Some(d) = m.dropped.filter(|d| *d > 0) {
        let _ = write!(t, " · {d} lost before");
    }
    if m.connectionless {
        t.push_str(" connectionless");
    }
    let _ = write!(t, " {} bytes", m.size);
    // Ops in order; runs of the same plain op counted (`playerinfo ×4`).
    let mut ops: Vec<(String, u32)> = Vec::new();
    for op in &m.ops {
        let text = match &op.kind {
            OpKind::Server(s) => match s {
                ServerOp::Print { text, .. } => {
                    let mut o = String::from("print ");
                    quoted(&mut o, text);
                    o
                }
                ServerOp::Stufftext { text } => {
                    let mut o = String::from("stufftext ");
                    quoted(&mut o, text);
                    o
                }
                ServerOp::Centerprint { text } => {
                    let mut o = String::from("centerprint ");
                    quoted(&mut o, text);
                    o
                }
                ServerOp::Packetentities(pe) | ServerOp::Deltapacketentities(pe) => {
                    let mut o = format!("packetentities {} entities", pe.count);
                    match (pe.from, pe.base_seq) {
                        (Some(f), Some(b)) => {
                            let _ = write!(o, " delta from {f} (sequence {b})");
                        }
                        (Some(f), None) => {
                            let _ = write!(o, " delta from {f}");
                        }
                        _ => o.push_str(" full"),
                    }
                    if !pe.removed.is_empty() {
                        let _ = write!(o, ", {} removed", pe.removed.len());
                    }
                    o
                }
                ServerOp::Nop => continue,
                other => short(other.shownet_name()).to_string(),
            },
            OpKind::Client(c) => match c {
                ClientOp::Move {
                    cmds, checksum_ok, ..
                } => {
                    let c = &cmds[2];
                    let mut o = format!(
                        "move [msec {} angles {:.1} {:.1} {:.1} buttons {} move {}/{}/{}",
                        c.msec,
                        c.angles[0],
                        c.angles[1],
                        c.angles[2],
                        c.buttons,
                        c.forward,
                        c.side,
                        c.up
                    );
                    if c.impulse != 0 {
                        let _ = write!(o, " impulse {}", c.impulse);
                    }
                    o.push(']');
                    if !checksum_ok {
                        o.push_str(" (checksum wrong)");
                    }
                    o
                }
                ClientOp::Stringcmd { text } => {
                    let mut o = String::from("stringcmd ");
                    quoted(&mut o, text);
                    o
                }
                ClientOp::Delta { from } => format!("delta from {from}"),
                ClientOp::Nop => continue,
                other => short(other.name()).to_string(),
            },
            OpKind::Oob(o) => {
                let mut s = o.name().to_string();
                match o {
                    Oob::Connect { userinfo, .. } => {
                        if let Some(n) = info_value(userinfo, "name") {
                            s.push_str(" name ");
                            quoted(&mut s, n);
                        }
                    }
                    Oob::Print { text } => {
                        s.push(' ');
                        quoted(&mut s, text);
                    }
                    _ => {}
                }
                s
            }
        };
        match ops.last_mut() {
            Some((last, n)) if *last == text && !text.contains(' ') => *n += 1,
            _ => ops.push((text, 1)),
        }
    }
    if !ops.is_empty() {
        t.push_str(": ");
        let parts: Vec<String> = ops
            .into_iter()
            .map(|(o, n)| if n > 1 { format!("{o} ×{n}") } else { o })
            .collect();
        t.push_str(&parts.join("; "));
    }
    if let Some(e) = &m.error {
        let _ = write!(t, " · ERROR {e}");
    }
}
