//! JSON shape of the delta records (`decode --json`): field changes and states name their
//! fields from the tables, floats print as `f32`.

use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Serialize, Serializer};

use super::types::{
    EntityDelta, EntityState, FieldChange, Number, PlayerDelta, PlayerState, PsKnown,
};
use crate::q3::fields::{NetField, ENTITY_FIELDS, PLAYER_FIELDS};
use crate::q3::protocol::Protocol;

impl Serialize for Number {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            Number::I(v) => s.serialize_i32(v),
            Number::F(v) => s.serialize_f32(v),
        }
    }
}

impl Serialize for FieldChange {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("FieldChange", 3)?;
        st.serialize_field("index", &self.index)?;
        st.serialize_field("enc", &self.enc)?;
        st.serialize_field("value", &self.number())?;
        st.end()
    }
}

/// A [`FieldChange`] together with its table, serialized as `{name, enc, value}`.
struct NamedChange<'a>(&'a FieldChange, &'static [NetField]);

impl Serialize for NamedChange<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let name = self.1.get(self.0.index as usize).map_or("?", |f| f.name);
        let mut st = s.serialize_struct("FieldChange", 3)?;
        st.serialize_field("name", name)?;
        st.serialize_field("enc", &self.0.enc)?;
        st.serialize_field("value", &self.0.number())?;
        st.end()
    }
}

struct NamedChanges<'a>(&'a [FieldChange], &'static [NetField]);

impl Serialize for NamedChanges<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|c| NamedChange(c, self.1)))
    }
}

thread_local! {
    /// The protocol whose tables a state is written with: set by [`with_protocol`] around a
    /// message (a state does not carry its protocol), Quake 3's outside one.
    static PROTOCOL: std::cell::Cell<u32> = const { std::cell::Cell::new(68) };
}

/// Run `f` (a serialization) with the states written in protocol `n`'s fields: its own,
/// in its wire order (Quake Live's add fields Quake 3 does not have).
pub fn with_protocol<R>(n: u32, f: impl FnOnce() -> R) -> R {
    let before = PROTOCOL.with(|p| p.replace(n));
    let out = f();
    PROTOCOL.with(|p| p.set(before));
    out
}

/// The fields of the current protocol's entity table, by slot, in its wire order.
fn entity_table() -> (&'static [NetField], &'static [u8]) {
    let p = Protocol::of(PROTOCOL.with(std::cell::Cell::get));
    (&p.entity, &p.entity_slots)
}

/// The fields of the current protocol's playerstate table, by slot, in its wire order.
fn player_table() -> (&'static [NetField], &'static [u8]) {
    let p = Protocol::of(PROTOCOL.with(std::cell::Cell::get));
    (&p.player, &p.player_slots)
}

/// Serialize raw fields as a map `name -> value` (floats as f32); fields whose bit is
/// clear in the mask (unknown values) as `null`.
///
/// Field values (by slot) named by a protocol's table: (values, (fields, slots), known mask
/// by slot).
struct NamedFields<'a>(&'a [i32], (&'static [NetField], &'static [u8]), u64);

impl Serialize for NamedFields<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (fields, slots) = self.1;
        let mut m = s.serialize_map(Some(fields.len()))?;
        for (f, &slot) in fields.iter().zip(slots) {
            let i = usize::from(slot);
            let v = self.0.get(i).copied().unwrap_or(0);
            if self.2 & (1u64 << i) == 0 {
                m.serialize_entry(f.name, &())?;
            } else if f.is_float() {
                m.serialize_entry(f.name, &f32::from_bits(v as u32))?;
            } else {
                m.serialize_entry(f.name, &v)?;
            }
        }
        m.end()
    }
}

impl Serialize for EntityState {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("EntityState", 2)?;
        st.serialize_field("number", &self.number)?;
        st.serialize_field(
            "fields",
            &NamedFields(&self.fields, entity_table(), u64::MAX),
        )?;
        st.end()
    }
}

/// An entity state of which only the fields of the mask are known.
struct PartialEntity<'a>(&'a EntityState, u64);

impl Serialize for PartialEntity<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("EntityState", 2)?;
        st.serialize_field("number", &self.0.number)?;
        st.serialize_field(
            "fields",
            &NamedFields(&self.0.fields, entity_table(), self.1),
        )?;
        st.end()
    }
}

/// A playerstate array with unknown entries as `null`.
struct KnownArray<'a>(&'a [i32; 16], u16);

impl Serialize for KnownArray<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(
            self.0
                .iter()
                .enumerate()
                .map(|(i, &v)| (self.1 & (1 << i) != 0).then_some(v)),
        )
    }
}

/// A playerstate of which only the values `known` says are known.
struct PartialPlayer<'a>(&'a PlayerState, PsKnown);

impl Serialize for PartialPlayer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (ps, k) = (self.0, self.1);
        let mut st = s.serialize_struct("PlayerState", 5)?;
        st.serialize_field("fields", &NamedFields(&ps.fields, player_table(), k.fields))?;
        st.serialize_field("stats", &KnownArray(&ps.stats, k.arrays[0]))?;
        st.serialize_field("persistant", &KnownArray(&ps.persistant, k.arrays[1]))?;
        st.serialize_field("ammo", &KnownArray(&ps.ammo, k.arrays[2]))?;
        st.serialize_field("powerups", &KnownArray(&ps.powerups, k.arrays[3]))?;
        st.end()
    }
}

impl Serialize for PlayerState {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        PartialPlayer(self, PsKnown::ALL).serialize(s)
    }
}

impl Serialize for EntityDelta {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("EntityDelta", 7)?;
        st.serialize_field("number", &self.state.number)?;
        st.serialize_field("removed", &self.removed)?;
        st.serialize_field("has_delta", &self.has_delta)?;
        st.serialize_field("changes", &NamedChanges(&self.changes, &ENTITY_FIELDS))?;
        st.serialize_field("start_bit", &self.start_bit)?;
        st.serialize_field("end_bit", &self.end_bit)?;
        match self.known {
            Some(k) => st.serialize_field("state", &PartialEntity(&self.state, k))?,
            None => st.serialize_field("state", &self.state)?,
        }
        st.end()
    }
}

impl Serialize for PlayerDelta {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("PlayerDelta", 9)?;
        st.serialize_field("changes", &NamedChanges(&self.changes, &PLAYER_FIELDS))?;
        st.serialize_field("changed_stats", &self.changed_stats)?;
        st.serialize_field("changed_persistant", &self.changed_persistant)?;
        st.serialize_field("changed_ammo", &self.changed_ammo)?;
        st.serialize_field("changed_powerups", &self.changed_powerups)?;
        st.serialize_field("start_bit", &self.start_bit)?;
        st.serialize_field("end_bit", &self.end_bit)?;
        let known = self.known.unwrap_or(PsKnown::ALL);
        st.serialize_field("state", &PartialPlayer(&self.state, known))?;
        st.end()
    }
}
