//! QuakeWorld messages reduced for comparison. Entity updates become the absolute entity
//! frame they produce (rebuilt from the delta base), so a delta and a full update of the same
//! frame are the same; every other op is compared as its decoded JSON, op by op of the same
//! kind. Downloads are left out unless strict (ezQuake does not record them in its demos).
use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::found::Finds;
use crate::qw::entity::EntityState;
use crate::qw::svc::ServerOp;
use crate::qw::{Message, OpKind};

/// One message's ops, by name, in order.
#[derive(Debug, Clone, Default)]
pub struct Msg {
    /// Each op's name and decoded value, in order; entity updates are named `entities` and
    /// valued as the absolute frame they leave (when their delta base is known).
    pub ops: Vec<(&'static str, Value)>,
    /// The message's decode error as [`error_text`](super::error_text) renders it, if it failed.
    pub error: Option<String>,
}

/// Entity frames of one connection by s2c sequence (the delta bases).
#[derive(Debug, Default)]
pub struct Frames {
    frames: BTreeMap<u32, Arc<Vec<EntityState>>>,
}

/// Frames kept: QuakeWorld's UPDATE_BACKUP is 64; twice that covers late bases.
const KEEP_FRAMES: u32 = 128;

impl Frames {
    /// The frame a packetentities op leaves, or None when its base is unknown.
    fn apply(&mut self, seq: u32, pe: &crate::qw::entity::PacketEntities) -> Option<Value> {
        if pe.base_missing {
            return None;
        }
        let mut f: BTreeMap<u16, EntityState> = match pe.base_seq {
            Some(b) => self.frames.get(&b)?.iter().map(|e| (e.num, *e)).collect(),
            None => BTreeMap::new(),
        };
        for r in &pe.removed {
            f.remove(r);
        }
        for e in &pe.entities {
            f.insert(e.num, *e);
        }
        let frame: Vec<EntityState> = f.into_values().collect();
        let v = entity_map(&frame);
        self.frames.insert(seq, Arc::new(frame));
        let low = seq.saturating_sub(KEEP_FRAMES);
        self.frames = self.frames.split_off(&low);
        Some(v)
    }
}

fn entity_map(frame: &[EntityState]) -> Value {
    let mut m = serde_json::Map::new();
    for e in frame {
        m.insert(
            e.num.to_string(),
            serde_json::to_value(e).unwrap_or(Value::Null),
        );
    }
    Value::Object(m)
}

/// The digest of an s2c message; `frames` is its connection's entity history.
pub fn server(m: &Message, frames: &mut Frames, strict: bool) -> Msg {
    let mut out = Msg {
        error: m.error.as_deref().map(super::error_text),
        ..Default::default()
    };
    let seq = m.seq.unwrap_or(0) as u32;
    for op in &m.ops {
        let name = op.name();
        match &op.kind {
            OpKind::Server(ServerOp::Packetentities(pe) | ServerOp::Deltapacketentities(pe)) => {
                let v = frames
                    .apply(seq, pe)
                    .unwrap_or_else(|| serde_json::to_value(pe).unwrap_or(Value::Null));
                out.ops.push(("entities", v));
            }
            OpKind::Server(ServerOp::Download { .. } | ServerOp::Nop) if !strict => {}
            OpKind::Server(ServerOp::Playerinfo(p)) => out.ops.push((
                "svc_playerinfo",
                serde_json::to_value(p).unwrap_or(Value::Null),
            )),
            k => out.ops.push((name, op_value(k))),
        }
    }
    out
}

/// The digest of a c2s message.
pub fn client(m: &Message) -> Msg {
    Msg {
        ops: m
            .ops
            .iter()
            .map(|o| (o.name(), op_value(&o.kind)))
            .collect(),
        error: m.error.as_deref().map(super::error_text),
    }
}

fn op_value(k: &OpKind) -> Value {
    let mut v = serde_json::to_value(k).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut v {
        m.remove("op");
    }
    v
}

/// Compare two messages: ops of the same name pair up in order (`svc_print`, `svc_print#2`).
pub fn compare(a: &Msg, b: &Msg, strict: bool, f: &mut Finds) {
    let ka = keyed(&a.ops);
    let kb = keyed(&b.ops);
    for (k, va) in &ka {
        match kb.get(k) {
            Some(vb) if k.starts_with("entities") => entity_frames(k, va, vb, f),
            Some(vb) => f.json(k, va, vb),
            None => f.one_sided(k.clone(), Some((*va).clone()), None),
        }
    }
    for (k, vb) in kb.iter().filter(|(k, _)| !ka.contains_key(*k)) {
        f.one_sided(k.clone(), None, Some((*vb).clone()));
    }
    f.cmp(
        "error",
        &a.error.clone().map_or(Value::Null, Value::from),
        &b.error.clone().map_or(Value::Null, Value::from),
    );
    if strict {
        let names = |m: &Msg| m.ops.iter().map(|o| o.0).collect::<Vec<_>>().join(" ");
        f.cmp("ops", &names(a), &names(b));
    }
}

fn keyed<'a>(ops: &'a [(&'static str, Value)]) -> BTreeMap<String, &'a Value> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let mut out = BTreeMap::new();
    for (name, v) in ops {
        let n = seen.entry(name).or_default();
        *n += 1;
        let key = if *n == 1 {
            name.to_string()
        } else {
            format!("{name}#{n}")
        };
        out.insert(key, v);
    }
    out
}

/// Entity frames by number: `entity N field`.
fn entity_frames(k: &str, a: &Value, b: &Value, f: &mut Finds) {
    if a == b {
        return;
    }
    let (Value::Object(ma), Value::Object(mb)) = (a, b) else {
        f.changed(k, a.clone(), b.clone());
        return;
    };
    for (n, ea) in ma {
        match mb.get(n) {
            Some(eb) => f.json(&format!("entity {n}"), ea, eb),
            None => f.one_sided(format!("entity {n}"), Some(ea.clone()), None),
        }
    }
    for (n, eb) in mb.iter().filter(|(n, _)| !ma.contains_key(*n)) {
        f.one_sided(format!("entity {n}"), None, Some(eb.clone()));
    }
}
