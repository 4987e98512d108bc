//! Quake 3 messages reduced for comparison, and their comparison. Snapshots are compared
//! as the absolute state the client holds after them (so a delta and a full snapshot of the
//! same state are the same), gamestates as their tables.
use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};

use super::found::{float, Finds};
use crate::q3::clc::ClientOp;
use crate::q3::delta::{EntityState, PlayerState};
use crate::q3::fields::{ENTITY_FIELDS, PLAYER_FIELDS};
use crate::q3::message::Message;
use crate::q3::state::SnapFrame;
use crate::q3::svc::{Gamestate, ServerOp};
use crate::q3::usercmd::UserCmd;

/// A server message's meaning.
#[derive(Debug, Clone, Default)]
pub struct Server {
    /// Reliable server commands carried (sequence, text).
    pub commands: Vec<(i32, String)>,
    /// The gamestate, when the message carries one (compared as its tables and baselines).
    pub gamestate: Option<Box<Gamestate>>,
    /// The snapshot, when the message carries one.
    pub snapshot: Option<Snap>,
    /// (block, size, FNV hash of the data) per svc_download.
    pub downloads: Vec<(i32, i32, u64)>,
    /// The message's decode error as [`error_text`](super::error_text) renders it, if it failed.
    pub error: Option<String>,
    /// Strict only: reliableAcknowledge and the op names in order.
    pub ack: i32,
    /// svc op names in order (`svc_snapshot`, ...): compared when strict; a missing message's
    /// value in the difference.
    pub ops: Vec<&'static str>,
}

/// A snapshot as the client took it.
#[derive(Debug, Clone)]
pub struct Snap {
    /// The snapshot's serverTime (ms).
    pub server_time: i32,
    /// snapFlags (SNAPFLAG_RATE_DELAYED, SNAPFLAG_NOT_ACTIVE, SNAPFLAG_SERVERCOUNT).
    pub flags: u8,
    /// The area visibility mask as sent.
    pub areamask: Vec<u8>,
    /// The client accepted it (delta base held); states are compared only when both are.
    pub valid: bool,
    /// deltaNum: frames back to the delta base, 0 for a full snapshot (compared when strict).
    pub delta_num: u8,
    /// The absolute playerstate and entities the client holds after it.
    pub frame: Arc<SnapFrame>,
}

/// A client message's meaning.
#[derive(Debug, Clone, Default)]
pub struct Client {
    /// serverId: the gamestate the client acts on.
    pub server_id: i32,
    /// messageAcknowledge: the last server message sequence the client received.
    pub message_ack: i32,
    /// reliableAcknowledge: the last reliable server command the client received.
    pub reliable_ack: i32,
    /// Reliable client commands carried (sequence, text).
    pub commands: Vec<(i32, String)>,
    /// The usercmds of the message's move ops, in order.
    pub usercmds: Vec<UserCmd>,
    /// The message's decode error as [`error_text`](super::error_text) renders it, if it failed.
    pub error: Option<String>,
    /// clc op names in order (`clc_move`, ...): compared when strict; a missing message's
    /// value in the difference.
    pub ops: Vec<&'static str>,
}

/// The digest of a server message (None for other kinds).
pub fn server(m: &Message) -> Option<Server> {
    let sm = m.server()?;
    let mut s = Server {
        error: m.error.as_deref().map(super::error_text),
        ack: sm.ack,
        ..Default::default()
    };
    for op in &sm.ops {
        s.ops.push(op.svc_name());
        match op {
            ServerOp::ServerCommand { seq, text, .. } => s.commands.push((*seq, text.clone())),
            ServerOp::Gamestate(g) => s.gamestate = Some(g.clone()),
            ServerOp::Snapshot(n) => {
                s.snapshot = Some(Snap {
                    server_time: n.server_time,
                    flags: n.flags,
                    areamask: n.areamask.clone(),
                    valid: n.valid,
                    delta_num: n.delta_num,
                    frame: n.frame.clone(),
                })
            }
            ServerOp::Download(d) => s.downloads.push((d.block, d.size, fnv(&d.data))),
            _ => {}
        }
    }
    Some(s)
}

/// The digest of a client message (None for other kinds).
pub fn client(m: &Message) -> Option<Client> {
    let cm = m.client()?;
    let mut c = Client {
        server_id: cm.server_id,
        message_ack: cm.message_ack,
        reliable_ack: cm.reliable_ack,
        error: m.error.as_deref().map(super::error_text),
        ..Default::default()
    };
    for op in &cm.ops {
        match op {
            ClientOp::ClientCommand { seq, text, .. } => {
                c.ops.push("clc_clientCommand");
                c.commands.push((*seq, text.clone()))
            }
            ClientOp::Move { cmds, no_delta, .. } => {
                c.ops.push(if *no_delta {
                    "clc_moveNoDelta"
                } else {
                    "clc_move"
                });
                c.usercmds.extend_from_slice(cmds)
            }
            ClientOp::Voip { .. } => c.ops.push("clc_voip"),
            ClientOp::Nop { .. } => c.ops.push("clc_nop"),
            ClientOp::Eof { .. } => c.ops.push("clc_EOF"),
        }
    }
    Some(c)
}

fn fnv(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// Compare two server messages of the same sequence.
pub fn compare_server(a: &Server, b: &Server, strict: bool, f: &mut Finds) {
    commands("server command", &a.commands, &b.commands, f);
    match (&a.gamestate, &b.gamestate) {
        (Some(x), Some(y)) => gamestate(x, y, f),
        (Some(x), None) => f.one_sided("gamestate", Some(gs_value(x)), None),
        (None, Some(y)) => f.one_sided("gamestate", None, Some(gs_value(y))),
        (None, None) => {}
    }
    match (&a.snapshot, &b.snapshot) {
        (Some(x), Some(y)) => snapshot(x, y, strict, f),
        (Some(x), None) => f.one_sided("snapshot", Some(x.server_time.into()), None),
        (None, Some(y)) => f.one_sided("snapshot", None, Some(y.server_time.into())),
        (None, None) => {}
    }
    f.cmp(
        "error",
        &a.error.clone().map_or(Value::Null, Value::from),
        &b.error.clone().map_or(Value::Null, Value::from),
    );
    if strict {
        f.cmp("reliableAcknowledge", &a.ack, &b.ack);
        f.cmp("ops", &a.ops.join(" "), &b.ops.join(" "));
        downloads(&a.downloads, &b.downloads, f);
    }
}

fn gs_value(g: &Gamestate) -> Value {
    json!({"configstrings": g.configstrings.len(), "baselines": g.baselines.len()})
}

/// Reliable commands by sequence: one-sided ones are missing, same sequence other text changed.
fn commands(what: &str, a: &[(i32, String)], b: &[(i32, String)], f: &mut Finds) {
    if a == b {
        return;
    }
    let ma: BTreeMap<i32, &str> = a.iter().map(|(s, t)| (*s, t.as_str())).collect();
    let mb: BTreeMap<i32, &str> = b.iter().map(|(s, t)| (*s, t.as_str())).collect();
    for (s, ta) in &ma {
        match mb.get(s) {
            Some(tb) => f.cmp(&format!("{what} {s}"), &ta.to_string(), &tb.to_string()),
            None => f.one_sided(format!("{what} {s}"), Some((*ta).into()), None),
        }
    }
    for (s, tb) in mb.iter().filter(|(s, _)| !ma.contains_key(s)) {
        f.one_sided(format!("{what} {s}"), None, Some((*tb).into()));
    }
}

fn downloads(a: &[(i32, i32, u64)], b: &[(i32, i32, u64)], f: &mut Finds) {
    if a != b {
        let v = |d: &[(i32, i32, u64)]| {
            json!(d
                .iter()
                .map(|x| json!([x.0, x.1, format!("{:016x}", x.2)]))
                .collect::<Vec<_>>())
        };
        f.changed("downloads", v(a), v(b));
    }
}

fn gamestate(a: &Gamestate, b: &Gamestate, f: &mut Finds) {
    f.cmp("gamestate clientNum", &a.client_num, &b.client_num);
    f.cmp("gamestate checksumFeed", &a.checksum_feed, &b.checksum_feed);
    f.cmp(
        "gamestate serverCommandSequence",
        &a.server_command_seq,
        &b.server_command_seq,
    );
    let ca: BTreeMap<u16, &str> = a
        .configstrings
        .iter()
        .map(|c| (c.index, c.value.as_str()))
        .collect();
    let cb: BTreeMap<u16, &str> = b
        .configstrings
        .iter()
        .map(|c| (c.index, c.value.as_str()))
        .collect();
    for (i, va) in &ca {
        match cb.get(i) {
            Some(vb) => f.cmp(
                &format!("configstring {i}"),
                &va.to_string(),
                &vb.to_string(),
            ),
            None => f.one_sided(format!("configstring {i}"), Some((*va).into()), None),
        }
    }
    for (i, vb) in cb.iter().filter(|(i, _)| !ca.contains_key(i)) {
        f.one_sided(format!("configstring {i}"), None, Some((*vb).into()));
    }
    let ba: Vec<&EntityState> = a.baselines.iter().map(|d| &d.state).collect();
    let bb: Vec<&EntityState> = b.baselines.iter().map(|d| &d.state).collect();
    entities("baseline", &ba, &bb, f);
}

fn snapshot(a: &Snap, b: &Snap, strict: bool, f: &mut Finds) {
    f.cmp("snapshot serverTime", &a.server_time, &b.server_time);
    f.cmp("snapshot snapFlags", &a.flags, &b.flags);
    f.cmp("snapshot areamask", &a.areamask, &b.areamask);
    f.cmp("snapshot valid", &a.valid, &b.valid);
    if strict {
        f.cmp("snapshot deltaNum", &a.delta_num, &b.delta_num);
    }
    if !(a.valid && b.valid) {
        return;
    }
    playerstate(&a.frame.ps, &b.frame.ps, f);
    let ea: Vec<&EntityState> = a.frame.entities.iter().collect();
    let eb: Vec<&EntityState> = b.frame.entities.iter().collect();
    entities("entity", &ea, &eb, f);
}

fn field(is_float: bool, raw: i32) -> Value {
    if is_float {
        float(f32::from_bits(raw as u32))
    } else {
        raw.into()
    }
}

fn playerstate(a: &PlayerState, b: &PlayerState, f: &mut Finds) {
    if a == b {
        return;
    }
    for (i, nf) in PLAYER_FIELDS.iter().enumerate() {
        if a.fields[i] != b.fields[i] {
            f.changed(
                format!("ps {}", nf.name),
                field(nf.is_float(), a.fields[i]),
                field(nf.is_float(), b.fields[i]),
            );
        }
    }
    let names = ["stats", "persistant", "ammo", "powerups"];
    for ((name, xa), xb) in names.iter().zip(a.arrays()).zip(b.arrays()) {
        for (i, (va, vb)) in xa.iter().zip(xb.iter()).enumerate() {
            if va != vb {
                f.changed(format!("ps {name}[{i}]"), (*va).into(), (*vb).into());
            }
        }
    }
}

/// Two entity lists sorted by number: one-sided entities, then changed fields by name.
fn entities(what: &str, a: &[&EntityState], b: &[&EntityState], f: &mut Finds) {
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let na = a.get(i).map_or(i32::MAX, |e| e.number);
        let nb = b.get(j).map_or(i32::MAX, |e| e.number);
        if na < nb {
            f.one_sided(format!("{what} {na}"), Some(entity_value(a[i])), None);
            i += 1;
        } else if nb < na {
            f.one_sided(format!("{what} {nb}"), None, Some(entity_value(b[j])));
            j += 1;
        } else {
            entity_fields(what, a[i], b[j], f);
            i += 1;
            j += 1;
        }
    }
}

fn entity_fields(what: &str, a: &EntityState, b: &EntityState, f: &mut Finds) {
    if a.fields == b.fields {
        return;
    }
    for (k, nf) in ENTITY_FIELDS.iter().enumerate() {
        if a.fields[k] != b.fields[k] {
            f.changed(
                format!("{what} {} {}", a.number, nf.name),
                field(nf.is_float(), a.fields[k]),
                field(nf.is_float(), b.fields[k]),
            );
        }
    }
}

/// An entity's non-zero fields by name.
fn entity_value(e: &EntityState) -> Value {
    let mut m = serde_json::Map::new();
    for (k, nf) in ENTITY_FIELDS.iter().enumerate() {
        if e.fields[k] != 0 {
            m.insert(nf.name.to_string(), field(nf.is_float(), e.fields[k]));
        }
    }
    Value::Object(m)
}

/// Compare two client messages of the same sequence.
pub fn compare_client(a: &Client, b: &Client, strict: bool, f: &mut Finds) {
    f.cmp("serverId", &a.server_id, &b.server_id);
    f.cmp("messageAcknowledge", &a.message_ack, &b.message_ack);
    f.cmp("reliableAcknowledge", &a.reliable_ack, &b.reliable_ack);
    commands("client command", &a.commands, &b.commands, f);
    if a.usercmds != b.usercmds {
        f.cmp("usercmds", &a.usercmds.len(), &b.usercmds.len());
        for (i, (x, y)) in a.usercmds.iter().zip(&b.usercmds).enumerate() {
            let to = |c: &UserCmd| serde_json::to_value(c).unwrap_or(Value::Null);
            f.json(&format!("usercmd {i}"), &to(x), &to(y));
        }
    }
    f.cmp(
        "error",
        &a.error.clone().map_or(Value::Null, Value::from),
        &b.error.clone().map_or(Value::Null, Value::from),
    );
    if strict {
        f.cmp("ops", &a.ops.join(" "), &b.ops.join(" "));
    }
}
