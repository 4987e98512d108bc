//! Quake 3 in the text layout: a header line (`frame N TIME` or `record N @OFFSET` for demo
//! files, then flow, direction, sequence), then one indented line per op with its fields.
use crate::q3::clc::ClientOp;
use crate::q3::message::{Body, Message};
use crate::q3::svc::ServerOp;
use crate::sink::push_change;

fn header(m: &Message) -> String {
    let seq = m
        .seq
        .map_or_else(|| "oob".to_string(), |s| format!("seq {s}"));
    let frag = if m.fragmented { " fragmented" } else { "" };
    let loc = match m.file_offset {
        Some(o) => format!("record {} @{o}", m.frame),
        None => format!("frame {} {:.6}", m.frame, m.time),
    };
    format!("{loc} flow {} {} {seq}{frag}", m.flow, m.dir.as_str())
}

/// A game string as text shows it: colour codes and control characters removed, quoted.
fn shown(s: &str) -> String {
    super::readable::quote(&super::readable::q3_plain(s))
}

fn server_ops(ops: &[ServerOp], out: &mut Vec<String>) {
    for op in ops {
        match op {
            ServerOp::ServerCommand { seq, text, new, .. } => {
                let re = if *new { "" } else { " (again)" };
                out.push(format!("  serverCommand {seq}{re}: {}", shown(text)))
            }
            ServerOp::Gamestate(g) => {
                out.push(format!(
                    "  gamestate serverCommandSequence {} clientNum {} checksumFeed {} ({} configstrings, {} baselines)",
                    g.server_command_seq,
                    g.client_num,
                    g.checksum_feed,
                    g.configstrings.len(),
                    g.baselines.len()
                ));
                for cs in &g.configstrings {
                    out.push(format!("    cs {} {}", cs.index, shown(&cs.value)));
                }
                for b in &g.baselines {
                    let mut s = format!("    baseline #{} ", b.state.number);
                    b.changes.iter().for_each(|c| push_change(&mut s, c, true));
                    out.push(s.trim_end().to_string());
                }
            }
            ServerOp::Snapshot(s) => {
                let base = if s.delta_num == 0 {
                    "full".to_string()
                } else {
                    format!("delta from {}", s.delta_base)
                };
                let valid = match s.invalid_reason {
                    Some(r) => format!(" INVALID ({r})"),
                    None => String::new(),
                };
                out.push(format!(
                    "  snapshot serverTime {} {base} flags {} areamask {} entities {} ({} sent){valid}",
                    s.server_time,
                    s.flags,
                    s.areamask.len(),
                    s.entity_count.map_or("unknown".to_string(), |n| n.to_string()),
                    s.entities.len()
                ));
                let mut p = "    playerstate ".to_string();
                s.playerstate
                    .changes
                    .iter()
                    .for_each(|c| push_change(&mut p, c, false));
                out.push(p.trim_end().to_string());
                for e in &s.entities {
                    if e.removed {
                        out.push(format!("    #{} remove", e.state.number));
                    } else {
                        let mut l = format!("    #{} ", e.state.number);
                        e.changes.iter().for_each(|c| push_change(&mut l, c, true));
                        out.push(l.trim_end().to_string());
                    }
                }
            }
            ServerOp::Download(d) => out.push(format!(
                "  download block {} size {}{}{}",
                d.block,
                d.size,
                d.file_size
                    .map(|s| format!(" fileSize {s}"))
                    .unwrap_or_default(),
                d.error_message
                    .as_ref()
                    .map(|e| format!(" error {e:?}"))
                    .unwrap_or_default()
            )),
            ServerOp::Voip(v) => out.push(format!("  voip sender {} size {}", v.sender, v.size)),
            ServerOp::Nop { .. } => out.push("  nop".into()),
            ServerOp::Eof { .. } => out.push("  EOF".into()),
        }
    }
}

fn client_ops(ops: &[ClientOp], out: &mut Vec<String>) {
    for op in ops {
        match op {
            ClientOp::ClientCommand { seq, text, new, .. } => {
                let re = match new {
                    Some(true) => "",
                    Some(false) => " (again)",
                    None => " (new or again: unknown)",
                };
                out.push(format!("  clientCommand {seq}{re}: {}", shown(text)))
            }
            ClientOp::Move { no_delta, cmds, .. } => {
                let kind = if *no_delta { "moveNoDelta" } else { "move" };
                out.push(format!("  {kind} {} cmds", cmds.len()));
                // Values the decoder could not know (mid-session: the key) print as `?`.
                fn v<T: std::fmt::Display>(x: Option<T>) -> String {
                    x.map_or("?".to_string(), |x| x.to_string())
                }
                for c in cmds {
                    out.push(format!(
                        "    serverTime {} angles {} {} {} move {} {} {} buttons {} weapon {}",
                        c.server_time,
                        v(c.angle(0)),
                        v(c.angle(1)),
                        v(c.angle(2)),
                        v(c.forward()),
                        v(c.right()),
                        v(c.up()),
                        v(c.buttons_known()),
                        v(c.weapon_known())
                    ));
                }
            }
            ClientOp::Voip { size, .. } => out.push(format!("  voip size {size}")),
            ClientOp::Nop { .. } => out.push("  nop".into()),
            ClientOp::Eof { .. } => out.push("  EOF".into()),
        }
    }
}

/// The text lines of one message.
pub fn message_lines(m: &Message) -> Vec<String> {
    let mut out = vec![header(m)];
    match &m.body {
        Body::Oob(o) => out.push(format!("  connectionless {}", shown(&o.text))),
        Body::Server(s) => {
            out.push(format!("  ack {}", s.ack));
            server_ops(&s.ops, &mut out);
        }
        Body::Client(c) => {
            out.push(format!(
                "  serverId {} messageAcknowledge {} reliableAcknowledge {}",
                c.server_id, c.message_ack, c.reliable_ack
            ));
            client_ops(&c.ops, &mut out);
        }
        Body::None => {}
    }
    if let Some(e) = &m.error {
        out.push(format!("  ERROR: {e}"));
    }
    out
}
