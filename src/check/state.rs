//! Checks no decoder makes, from the decoded messages of each Quake 3 connection or demo:
//! serverTime going back within a gamestate, snapshots delta'd from a frame the client no
//! longer holds (older than PACKET_BACKUP, or invalid), reliable acknowledgements that
//! name a command never sent or one outside the window of MAX_RELIABLE_COMMANDS, and a
//! handshake whose challenge is not the one the server gave.
use super::Finding;
use crate::flow::Dir;
use crate::q3::bits::BitWriter;
use crate::q3::clc::ClientOp;
use crate::q3::message::Message;
use crate::q3::state::MAX_RELIABLE_COMMANDS;
use crate::q3::svc::{ServerOp, SnapshotHead};

/// SNAPFLAG_NOT_ACTIVE: the engine takes no time from such snapshots.
const SNAPFLAG_NOT_ACTIVE: u8 = 2;

#[derive(Default)]
struct Flow {
    gamestate: bool,
    last_time: Option<i32>,
    /// Highest reliable server command sequence sent (gamestate's base or a command).
    server_cmd: Option<i32>,
    /// Highest reliable client command sequence sent.
    client_cmd: Option<i32>,
    /// Inside a run of invalid snapshots (only its first is reported: the rest follow).
    invalid_run: bool,
    /// Challenges the server gave this address (`challengeResponse`), the latest last.
    challenges: Vec<i64>,
    /// The challenge of the client's last `connect`.
    connect_challenge: Option<i64>,
    /// Sequence of the demo file's last record.
    record_seq: Option<i32>,
}

/// Challenges remembered per flow (a client asks again only when its connect goes
/// unanswered; the server's own table holds MAX_CHALLENGES addresses).
const CHALLENGES_KEPT: usize = 16;

/// Per-flow state of the checks.
#[derive(Default)]
pub struct Watch {
    /// Indexed by flow id (ids are dense from 1): no hashing per message.
    flows: Vec<Flow>,
}

fn at(m: &Message, rule: &'static str, bit: usize, message: String) -> Finding {
    let (frame, record) = match m.file_offset {
        Some(_) => (None, Some(m.frame)),
        None => (Some(m.frame), None),
    };
    Finding {
        file: String::new(),
        flow: Some(m.flow),
        frame,
        record,
        offset: m.file_offset,
        bit: Some(bit as u64),
        dir: Some(m.dir),
        rule,
        kind: None,
        message,
    }
}

impl Watch {
    /// Look at one Quake 3 message.
    pub fn q3(&mut self, m: &Message, out: &mut Vec<Finding>) {
        if m.client_gone {
            return;
        }
        let i = m.flow as usize;
        if i >= self.flows.len() {
            self.flows.resize_with(i + 1, Flow::default);
        }
        let fl = &mut self.flows[i];
        if m.file_offset.is_some() {
            record_order(fl, m, out);
        }
        if let Some(s) = m.server() {
            server(fl, m, s, out);
        } else if let Some(c) = m.client() {
            client(fl, m, c, out);
        } else if let crate::q3::message::Body::Oob(o) = &m.body {
            handshake(fl, m, o, out);
        }
    }
}

fn server(fl: &mut Flow, m: &Message, s: &crate::q3::svc::ServerMessage, out: &mut Vec<Finding>) {
    if let Some(sent) = fl.client_cmd.filter(|&c| s.ack > c) {
        out.push(at(
            m,
            "q3.reliable-ack-ahead",
            0,
            format!(
                "server acknowledges client command {} but the client sent only up to {sent}",
                s.ack
            ),
        ));
    }
    for op in &s.ops {
        match op {
            ServerOp::Gamestate(g) => {
                fl.gamestate = true;
                fl.last_time = None;
                fl.server_cmd = Some(fl.server_cmd.unwrap_or(i32::MIN).max(g.server_command_seq));
            }
            ServerOp::ServerCommand { seq: c, .. } => {
                fl.server_cmd = Some(fl.server_cmd.unwrap_or(i32::MIN).max(*c));
            }
            ServerOp::Snapshot(n) => snapshot(fl, m, &n.head(), out),
            _ => {}
        }
    }
    // Decoded with `Detail::Headers`, the snapshot (after the message's other ops) is here.
    if let Some(h) = &s.snapshot_head {
        snapshot(fl, m, h, out);
    }
}

fn snapshot(fl: &mut Flow, m: &Message, n: &SnapshotHead, out: &mut Vec<Finding>) {
    let seq = m.seq.unwrap_or(0);
    if n.valid {
        fl.invalid_run = false;
    } else if !std::mem::replace(&mut fl.invalid_run, true) {
        let reason = n.invalid_reason.unwrap_or("delta from invalid frame");
        let rule = if reason.contains("too old") {
            "q3.delta-too-old"
        } else {
            "q3.delta-invalid-base"
        };
        out.push(at(
            m,
            rule,
            n.bit,
            format!(
                "snapshot of message {seq} deltas from message {}: {reason}",
                n.delta_base
            ),
        ));
    }
    if n.flags & SNAPFLAG_NOT_ACTIVE == 0 && n.valid {
        if let Some(last) = fl.last_time.filter(|&t| n.server_time < t) {
            out.push(at(
                m,
                "q3.servertime-backwards",
                n.bit,
                format!(
                    "serverTime {} after {last} within the same gamestate",
                    n.server_time
                ),
            ));
        }
        fl.last_time = Some(n.server_time);
    }
}

fn client(fl: &mut Flow, m: &Message, c: &crate::q3::clc::ClientMessage, out: &mut Vec<Finding>) {
    for op in &c.ops {
        if let ClientOp::ClientCommand { seq, .. } = op {
            fl.client_cmd = Some(fl.client_cmd.unwrap_or(i32::MIN).max(*seq));
        }
    }
    let Some(sent) = fl.server_cmd.filter(|_| fl.gamestate) else {
        return;
    };
    let ack = c.reliable_ack;
    // The acknowledge is the third Huffman-coded long: after serverId and messageAcknowledge.
    let bit = || {
        [c.server_id, c.message_ack]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .map(BitWriter::byte_len_bits)
            .sum()
    };
    if ack > sent {
        out.push(at(
            m,
            "q3.reliable-ack-ahead",
            bit(),
            format!(
                "client acknowledges server command {ack} but the server sent only up to {sent}"
            ),
        ));
    } else if ack < sent - MAX_RELIABLE_COMMANDS as i32 {
        out.push(at(
            m,
            "q3.reliable-ack-window",
            bit(),
            format!(
                "client acknowledges server command {ack}, more than {MAX_RELIABLE_COMMANDS} behind the last sent ({sent})"
            ),
        ));
    }
}

/// `SV_DirectConnect` refuses a `connect` whose userinfo challenge is not one it gave that
/// address ("No or bad challenge for your address"), and the client ignores a
/// `connectResponse` naming another challenge than its own (`CL_ConnectionlessPacket`).
fn handshake(fl: &mut Flow, m: &Message, o: &crate::q3::oob::Oob, out: &mut Vec<Finding>) {
    let mut found = |message: String| {
        let mut f = at(m, "q3.challenge-mismatch", 0, message);
        f.bit = None;
        out.push(f);
    };
    match (m.dir, o.command.as_str()) {
        (Dir::S2c, "challengeResponse") => {
            if let Some(c) = o.arg_int(0) {
                if fl.challenges.len() == CHALLENGES_KEPT {
                    fl.challenges.remove(0);
                }
                fl.challenges.push(c);
            }
        }
        (Dir::C2s, "connect") => {
            let c = o
                .info("challenge")
                .and_then(|c| c.trim().parse::<i64>().ok());
            fl.connect_challenge = c;
            if let Some(c) = c.filter(|c| !fl.challenges.is_empty() && !fl.challenges.contains(c)) {
                found(format!(
                    "connect with challenge {c}, but the server gave {}",
                    fl.challenges.last().copied().unwrap_or_default()
                ));
            }
        }
        (Dir::S2c, "connectResponse") => {
            if let (Some(got), Some(sent)) = (o.arg_int(0), fl.connect_challenge) {
                if got != sent {
                    found(format!(
                        "connectResponse names challenge {got}, the client connected with {sent}"
                    ));
                }
            }
        }
        _ => {}
    }
}

/// A demo file holds the messages the client accepted, in order: `Netchan_Process` takes only
/// sequences above the last, so no record's sequence is below the one before it (the
/// synthetic gamestate record that opens a demo sits below the first real one; a record may
/// repeat the last sequence, as real demos do where a new gamestate starts:
/// ../shared/demos/q3/dm_68_cpma_3_matches_2_gamestates.dm_68).
fn record_order(fl: &mut Flow, m: &Message, out: &mut Vec<Finding>) {
    let Some(seq) = m.seq else {
        return;
    };
    if let Some(last) = fl.record_seq.filter(|&l| seq < l) {
        let mut f = at(
            m,
            "demo.sequence-order",
            0,
            format!("record of sequence {seq} after sequence {last}"),
        );
        f.bit = None;
        out.push(f);
    }
    fl.record_seq = Some(seq);
}
