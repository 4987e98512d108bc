//! A Quake 3 message in one line: `seq 812 relack 40: snapshot 812 delta 809 time 123450 19
//! entities (4 changed); cmd 41 "print \"...\""`, a client's `seq 530 ack 811 relack 41
//! serverid 3: move 2 cmds [t 123440 angles 10.5 -92.3 0.0 buttons 1 move 127/0/0 weapon 7]`.
use std::fmt::Write as _;

use super::{info_value, quoted, FlowInfo};
use crate::q3::clc::ClientOp;
use crate::q3::color::plain;
use crate::q3::message::{Body, Message};
use crate::q3::svc::ServerOp;

/// The first player configstring.
const CS_PLAYERS: u16 = 544;
/// usercmds shown per message (a client sends one to a few).
const MAX_CMDS: usize = 4;
/// SNAPFLAG_RATE_DELAYED, SNAPFLAG_NOT_ACTIVE.
const SNAPFLAG_RATE_DELAYED: u8 = 1;
const SNAPFLAG_NOT_ACTIVE: u8 = 2;

/// The player's name, from the connect's userinfo or the gamestate's own slot.
pub(super) fn learn(m: &Message, info: &mut FlowInfo) {
    match &m.body {
        Body::Oob(o) if o.command.eq_ignore_ascii_case("connect") => {
            if let Some((_, v)) = o
                .userinfo
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("name"))
            {
                info.player = Some(plain(v));
            }
        }
        Body::Server(s) => {
            for op in &s.ops {
                if let ServerOp::Gamestate(g) = op {
                    let own = u16::try_from(g.client_num)
                        .ok()
                        .and_then(|n| n.checked_add(CS_PLAYERS));
                    let name = g
                        .configstrings
                        .iter()
                        .find(|c| Some(c.index) == own)
                        .and_then(|c| info_value(&c.value, "n"));
                    if let Some(n) = name {
                        info.player = Some(plain(n));
                    }
                }
            }
        }
        _ => {}
    }
}

/// A usercmd angle (16 bits of a turn) in degrees, −180..180, to a tenth: ` -92.3`.
fn push_degrees(o: &mut String, a: i32) {
    let tenths = (i64::from(a & 0xffff) * 3600 + 32768) / 65536;
    let tenths = if tenths > 1800 { tenths - 3600 } else { tenths };
    let sign = if tenths < 0 { "-" } else { "" };
    let t = tenths.abs();
    let _ = write!(o, " {sign}{}.{}", t / 10, t % 10);
}

/// The message after the header: sequence, acknowledgements, ops, error.
pub(super) fn describe(m: &Message, t: &mut String) {
    if let Some(seq) = m.seq {
        let _ = write!(t, " seq {seq}");
    }
    let mut ops: Vec<String> = Vec::new();
    match &m.body {
        Body::Oob(o) => {
            t.push_str(" connectionless");
            let mut s = String::from(o.command.as_str());
            if o.command.eq_ignore_ascii_case("connect") {
                if let Some((_, v)) = o.userinfo.iter().find(|(k, _)| k == "name") {
                    s.push_str(" name ");
                    quoted(&mut s, v);
                }
            } else {
                // The text after the command word (the arguments, a status or info reply).
                let rest = o.text.strip_prefix(o.command.as_str()).unwrap_or(&o.text);
                let rest = rest.trim_start_matches([' ', '\n']);
                if !rest.is_empty() {
                    s.push(' ');
                    quoted(&mut s, rest);
                }
            }
            ops.push(s);
        }
        Body::Server(s) => {
            let _ = write!(t, " relack {}", s.ack);
            for op in &s.ops {
                match op {
                    ServerOp::Snapshot(sn) => {
                        let mut o = format!("snapshot {}", m.seq.unwrap_or_default());
                        if sn.delta_num == 0 {
                            o.push_str(" full");
                        } else {
                            let _ = write!(o, " delta {}", sn.delta_base);
                        }
                        let _ = write!(o, " time {}", sn.server_time);
                        match sn.entity_count {
                            Some(n) => {
                                let _ = write!(o, " {n} entities ({} changed)", sn.entities.len());
                            }
                            None => {
                                let _ = write!(o, " {} entities changed", sn.entities.len());
                            }
                        }
                        if sn.flags & SNAPFLAG_RATE_DELAYED != 0 {
                            o.push_str(" rate-delayed");
                        }
                        if sn.flags & SNAPFLAG_NOT_ACTIVE != 0 {
                            o.push_str(" not-active");
                        }
                        if !sn.valid {
                            let _ = write!(
                                o,
                                " invalid ({})",
                                sn.invalid_reason.unwrap_or("delta base unknown")
                            );
                        }
                        ops.push(o);
                    }
                    ServerOp::ServerCommand { seq, text, new, .. } => {
                        let mut o = format!("cmd {seq} ");
                        quoted(&mut o, text);
                        if !new {
                            o.push_str(" (again)");
                        }
                        ops.push(o);
                    }
                    ServerOp::Gamestate(g) => ops.push(format!(
                        "gamestate: {} configstrings, {} baselines, client {}",
                        g.configstrings.len(),
                        g.baselines.len(),
                        g.client_num
                    )),
                    ServerOp::Download(d) => {
                        ops.push(format!("download block {} ({} bytes)", d.block, d.size))
                    }
                    ServerOp::Voip(v) => ops.push(format!("voip ({} bytes)", v.size)),
                    ServerOp::Nop { .. } => ops.push("nop".into()),
                    ServerOp::Eof { .. } => {}
                }
            }
            if let (Some(h), false) = (
                s.snapshot_head,
                s.ops.iter().any(|o| matches!(o, ServerOp::Snapshot(_))),
            ) {
                ops.push(format!(
                    "snapshot {} time {}",
                    m.seq.unwrap_or_default(),
                    h.server_time
                ));
            }
        }
        Body::Client(c) => {
            let _ = write!(
                t,
                " ack {} relack {} serverid {}",
                c.message_ack, c.reliable_ack, c.server_id
            );
            for op in &c.ops {
                match op {
                    ClientOp::ClientCommand { seq, text, new, .. } => {
                        let mut o = format!("cmd {seq} ");
                        quoted(&mut o, text);
                        if *new == Some(false) {
                            o.push_str(" (again)");
                        }
                        ops.push(o);
                    }
                    ClientOp::Move { no_delta, cmds, .. } => {
                        let mut o = format!(
                            "move {} cmd{}",
                            cmds.len(),
                            if cmds.len() == 1 { "" } else { "s" }
                        );
                        if *no_delta {
                            o.push_str(" nodelta");
                        }
                        for c in cmds.iter().take(MAX_CMDS) {
                            let _ = write!(o, " [t {} angles", c.server_time);
                            for a in c.angles {
                                push_degrees(&mut o, a);
                            }
                            let _ = write!(
                                o,
                                " buttons {} move {}/{}/{} weapon {}]",
                                c.buttons, c.forwardmove, c.rightmove, c.upmove, c.weapon
                            );
                        }
                        if cmds.len() > MAX_CMDS {
                            o.push_str(" …");
                        }
                        ops.push(o);
                    }
                    ClientOp::Voip { size, .. } => ops.push(format!("voip ({size} bytes)")),
                    ClientOp::Nop { .. } => ops.push("nop".into()),
                    ClientOp::Eof { .. } => {}
                }
            }
        }
        Body::None => ops.push("not decoded".into()),
    }
    if m.fragmented {
        t.push_str(" (reassembled from fragments)");
    }
    let _ = write!(t, " {} bytes", m.size);
    if !ops.is_empty() {
        t.push_str(": ");
        t.push_str(&ops.join("; "));
    }
    if let Some(e) = &m.error {
        let _ = write!(t, " · ERROR {e}");
    }
}
