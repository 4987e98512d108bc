//! JSON shape of the delta records (`decode --json`): field changes and states name their
//! fields from the tables, floats print as `f32`.

use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Serialize, Serializer};

use super::types::{
    EntityDelta, EntityState, FieldChange, Number, PlayerDelta, PlayerState, PsKnown,
};
use crate::q3::fields::{NetField, ENTITY_FIELDS, PLAYER_FIELDS};

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

/// Serialize raw fields as a map `name -> value` (floats as f32); fields whose bit is
/// clear in the mask (unknown values) as `null`.
struct NamedFields<'a>(&'a [i32], &'static [NetField], u64);

impl Serialize for NamedFields<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (i, (f, &v)) in self.1.iter().zip(self.0).enumerate() {
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
            &NamedFields(&self.fields, &ENTITY_FIELDS, u64::MAX),
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
            &NamedFields(&self.0.fields, &ENTITY_FIELDS, self.1),
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
        st.serialize_field("fields", &NamedFields(&ps.fields, &PLAYER_FIELDS, k.fields))?;
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
