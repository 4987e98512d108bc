//! Entity and playerstate delta compression (spec `q3-protocol.md` §6.6, §6.7):
//! `MSG_ReadDeltaEntity` / `MSG_WriteDeltaEntity`, `MSG_ReadDeltaPlayerstate` /
//! `MSG_WriteDeltaPlayerstate`.
//!
//! States hold raw 32-bit field values in table order ([`ENTITY_FIELDS`], [`PLAYER_FIELDS`]),
//! floats as their IEEE bits — the engine compares and copies fields through an `int *` view,
//! so this keeps every comparison bit-exact (e.g. `-0.0` differs from `0.0`, NaN payloads are
//! preserved). The readers also report what was on the wire ([`FieldChange`], bit positions) so
//! a printer can reproduce the engine's `cl_shownet 4` lines.

use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Serialize, Serializer};

use crate::q3::bits::{decode_window, BitError, BitReader, BitWriter};
use crate::q3::fields::{
    NetField, ENTITY_FIELDS, FLOAT_INT_BIAS, FLOAT_INT_BITS, GENTITYNUM_BITS, MAX_GENTITIES,
    NUM_ENTITY_FIELDS, NUM_PLAYER_FIELDS, PLAYER_FIELDS,
};

/// Delta decoding errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DeltaError {
    /// Bitstream error (past end, NYT).
    #[error(transparent)]
    Bits(#[from] BitError),
    /// The field count byte exceeds the table size (engine: "invalid entityState field count" /
    /// "invalid playerState field count"). `bit` is where the count byte started.
    #[error("invalid field count {lc} at bit {bit}")]
    FieldCount { lc: u8, bit: usize },
}

/// An `entityState_t` as the delta code sees it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct EntityState {
    /// Entity number (not a delta field).
    pub number: i32,
    /// Raw field values in [`ENTITY_FIELDS`] order; floats as IEEE bits.
    pub fields: [i32; NUM_ENTITY_FIELDS],
}

impl Default for EntityState {
    fn default() -> Self {
        EntityState {
            number: 0,
            fields: [0; NUM_ENTITY_FIELDS],
        }
    }
}

impl EntityState {
    /// All-zero state with the given number (the baseline "from" of `svc_baseline`).
    pub fn zeroed(number: i32) -> Self {
        EntityState {
            number,
            ..Default::default()
        }
    }

    /// Field `i` reinterpreted as a float (meaningful for float fields).
    pub fn float(&self, i: usize) -> f32 {
        f32::from_bits(self.fields.get(i).copied().unwrap_or(0) as u32)
    }

    /// Field by engine name (raw value).
    pub fn get(&self, name: &str) -> Option<i32> {
        let i = crate::q3::fields::entity_field_index(name)?;
        self.fields.get(i).copied()
    }
}

/// A `playerState_t` as the delta code sees it (non-transmitted members omitted).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct PlayerState {
    /// Raw field values in [`PLAYER_FIELDS`] order; floats as IEEE bits.
    pub fields: [i32; NUM_PLAYER_FIELDS],
    /// `stats[MAX_STATS]` (sent as shorts).
    pub stats: [i32; 16],
    /// `persistant[MAX_PERSISTANT]` (sent as shorts).
    pub persistant: [i32; 16],
    /// `ammo[MAX_WEAPONS]` (sent as shorts).
    pub ammo: [i32; 16],
    /// `powerups[MAX_POWERUPS]` (sent as longs).
    pub powerups: [i32; 16],
}

impl Default for PlayerState {
    fn default() -> Self {
        PlayerState {
            fields: [0; NUM_PLAYER_FIELDS],
            stats: [0; 16],
            persistant: [0; 16],
            ammo: [0; 16],
            powerups: [0; 16],
        }
    }
}

impl PlayerState {
    /// Field `i` reinterpreted as a float (meaningful for float fields).
    pub fn float(&self, i: usize) -> f32 {
        f32::from_bits(self.fields.get(i).copied().unwrap_or(0) as u32)
    }

    /// Field by engine name (raw value).
    pub fn get(&self, name: &str) -> Option<i32> {
        let i = crate::q3::fields::player_field_index(name)?;
        self.fields.get(i).copied()
    }

    /// The four arrays in wire order (stats, persistant, ammo, powerups).
    pub fn arrays(&self) -> [&[i32; 16]; 4] {
        [&self.stats, &self.persistant, &self.ammo, &self.powerups]
    }
}

/// How a changed field was encoded on the wire.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize)]
pub enum FieldEnc {
    /// Entity only: the "zero" bit path (value 0 / 0.0). The engine prints nothing for it.
    Zero,
    /// A plain integer, or a float sent as a 13-bit integer (printed `name:%i`).
    Int,
    /// A float sent as 32 raw bits (printed `name:%f`).
    Float,
}

/// One field whose changed bit was 1.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct FieldChange {
    /// Index into the field table.
    pub index: u8,
    /// Wire encoding.
    pub enc: FieldEnc,
    /// `Int`: the integer as read (for 13-bit floats the unbiased integer, e.g. -392);
    /// `Float`: the raw IEEE bits; `Zero`: 0.
    pub value: i32,
}

impl FieldChange {
    /// The value as JSON-friendly number: floats (raw encoding) as f32, everything else i32.
    pub fn number(&self) -> Number {
        match self.enc {
            FieldEnc::Float => Number::F(f32::from_bits(self.value as u32)),
            FieldEnc::Int | FieldEnc::Zero => Number::I(self.value),
        }
    }
}

/// A field value for serialization: integer or float.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Number {
    /// Integer field or integral value.
    I(i32),
    /// Float value.
    F(f32),
}

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

/// Serialize raw fields as a map `name -> value` (floats as f32).
struct NamedFields<'a>(&'a [i32], &'static [NetField]);

impl Serialize for NamedFields<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (f, &v) in self.1.iter().zip(self.0) {
            if f.is_float() {
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
        st.serialize_field("fields", &NamedFields(&self.fields, &ENTITY_FIELDS))?;
        st.end()
    }
}

impl Serialize for PlayerState {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("PlayerState", 5)?;
        st.serialize_field("fields", &NamedFields(&self.fields, &PLAYER_FIELDS))?;
        st.serialize_field("stats", &self.stats)?;
        st.serialize_field("persistant", &self.persistant)?;
        st.serialize_field("ammo", &self.ammo)?;
        st.serialize_field("powerups", &self.powerups)?;
        st.end()
    }
}

/// Result of [`read_delta_entity`].
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct EntityDelta {
    /// Absolute state after the delta. `number` is always the real entity number; for a
    /// removal the fields are all zero (the engine itself stores number `MAX_GENTITIES - 1`,
    /// see [`REMOVED_NUMBER`]).
    pub state: EntityState,
    /// The remove bit was 1.
    pub removed: bool,
    /// False when the "no delta" bit path was taken (state = from) or on removal.
    pub has_delta: bool,
    /// The field count byte (`lc`), 0 when there was none.
    pub lc: u8,
    /// Fields whose changed bit was 1, in table order.
    pub changes: Vec<FieldChange>,
    /// Bit position right after the remove bit (removal), after the no-delta bit (no delta),
    /// or after the `lc` byte (delta). The engine prints `(bit >> 3) + 1` of it.
    pub bit_after_flag: usize,
    /// Bit position at entry (after the caller read the entity number).
    pub start_bit: usize,
    /// Bit position at exit.
    pub end_bit: usize,
}

impl EntityDelta {
    /// The engine's `readcount` at `bit_after_flag` (the number printed before `#`).
    pub fn readcount_after_flag(&self) -> usize {
        (self.bit_after_flag >> 3) + 1
    }

    /// The engine's `(N bits)` figure for this delta, see [`shownet_bits`].
    pub fn shownet_bits(&self) -> usize {
        shownet_bits(self.start_bit, self.end_bit)
    }
}

/// The `(N bits)` number of the engine's `cl_shownet` delta lines: it computes
/// `(readcount - 1) * 8 + bit` at both ends with an absolute `bit`, i.e. `f(end) - f(start)`
/// with `f(b) = (b >> 3) * 8 + b` (for `b != 0`; the readers never start at bit 0).
pub fn shownet_bits(start_bit: usize, end_bit: usize) -> usize {
    let f = |b: usize| (b >> 3) * 8 + b;
    f(end_bit).saturating_sub(f(start_bit))
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
        st.serialize_field("state", &self.state)?;
        st.end()
    }
}

/// The number the engine's `MSG_ReadDeltaEntity` leaves in a removed entity.
pub const REMOVED_NUMBER: i32 = MAX_GENTITIES - 1;

/// Float field decode shared by both readers after the changed (and, for entities, non-zero)
/// bit: 0 -> 13-bit biased integer, 1 -> 32 raw bits.
#[inline]
fn read_float_body(r: &mut BitReader) -> Result<(i32, FieldEnc, i32), BitError> {
    if !r.read_bit()? {
        let trunc = r.read_bits(FLOAT_INT_BITS)? - FLOAT_INT_BIAS;
        Ok(((trunc as f32).to_bits() as i32, FieldEnc::Int, trunc))
    } else {
        let raw = r.read_bits(32)?;
        Ok((raw, FieldEnc::Float, raw))
    }
}

/// Where the delta readers report each changed field. Decoders that print or serialize the
/// wire record collect into a `Vec`; the flow pass, which needs only the resulting states,
/// passes `()` and the recording compiles away (no allocation per entity or playerstate).
pub trait ChangeSink {
    fn change(&mut self, c: FieldChange);
}

impl ChangeSink for Vec<FieldChange> {
    #[inline(always)]
    fn change(&mut self, c: FieldChange) {
        self.push(c);
    }
}

impl ChangeSink for () {
    #[inline(always)]
    fn change(&mut self, _c: FieldChange) {}
}

/// The two flag bits after an entity number.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum EntityFlags {
    /// The remove bit was 1.
    Removed,
    /// Not removed, no delta: the state is the base.
    Unchanged,
    /// A field count and fields follow.
    Delta,
}

/// The flag bits of `MSG_ReadDeltaEntity`.
#[inline]
pub fn read_entity_flags(r: &mut BitReader) -> Result<EntityFlags, BitError> {
    Ok(if r.read_bit()? {
        EntityFlags::Removed
    } else if !r.read_bit()? {
        EntityFlags::Unchanged
    } else {
        EntityFlags::Delta
    })
}

/// The field count byte and the changed fields of an entity delta ([`EntityFlags::Delta`]),
/// applied to `fields` (which holds the base on entry). Returns `lc` and the bit position
/// right after it.
#[inline]
pub fn read_entity_fields<C: ChangeSink>(
    r: &mut BitReader,
    fields: &mut [i32; NUM_ENTITY_FIELDS],
    changes: &mut C,
) -> Result<(u8, usize), DeltaError> {
    let lc_bit = r.bit_pos();
    let lc = r.read_byte()?;
    if lc as usize > NUM_ENTITY_FIELDS {
        return Err(DeltaError::FieldCount { lc, bit: lc_bit });
    }
    let after_lc = r.bit_pos();
    entity_fields(r, fields, lc as usize, changes)?;
    Ok((lc, after_lc))
}

/// The fast field loop of [`entity_fields`] and [`player_fields`], applying fields from 0
/// while each can be committed; evaluates to the index of the first one left (`n` when
/// done). A macro, not a generic function: the shared generic version measured 11 % more
/// instructions on the demo set (the field decoders were no longer inlined into it).
macro_rules! fields_fast {
    ($r:expr, $table:expr, $values:expr, $n:expr, $changes:expr, $change:expr) => {{
        let (r, n): (&mut BitReader, usize) = (&mut *$r, $n);
        let mut i = 0;
        while i < n {
            let w = r.peek64();
            // A run of unchanged fields in one step (57 bits of a window are valid).
            let run = (w.trailing_zeros() as usize).min(57).min(n - i);
            if run > 0 {
                if !r.advance(run) {
                    break;
                }
                i += run;
                continue;
            }
            let Some(c) = $change(w, &$table[i]).filter(|c| r.advance(c.bits)) else {
                break;
            };
            $values[i] = c.raw;
            $changes.change(FieldChange {
                index: i as u8,
                enc: c.enc,
                value: c.value,
            });
            i += 1;
        }
        i
    }};
}

/// Entity fields `0..n`. Fast path: runs of unchanged bits in one step, each changed field
/// decoded from one 64-bit window. Whatever it cannot commit (the message end, a NYT code)
/// the exact reader redoes from that field, so results and errors are the engine's.
fn entity_fields<C: ChangeSink>(
    r: &mut BitReader,
    fields: &mut [i32; NUM_ENTITY_FIELDS],
    n: usize,
    changes: &mut C,
) -> Result<(), DeltaError> {
    let i = fields_fast!(r, ENTITY_FIELDS, fields, n, changes, entity_change);
    if i < n {
        entity_fields_exact(r, fields, i, n, changes)?;
    }
    Ok(())
}

/// Entity fields `from..lc` read bit by bit as `MSG_ReadDeltaEntity` does.
fn entity_fields_exact<C: ChangeSink>(
    r: &mut BitReader,
    fields: &mut [i32; NUM_ENTITY_FIELDS],
    from: usize,
    lc: usize,
    changes: &mut C,
) -> Result<(), DeltaError> {
    for (i, (field, slot)) in ENTITY_FIELDS
        .iter()
        .zip(fields.iter_mut())
        .enumerate()
        .take(lc)
        .skip(from)
    {
        if !r.read_bit()? {
            continue;
        }
        let (raw, enc, value) = if !r.read_bit()? {
            (0, FieldEnc::Zero, 0)
        } else if field.is_float() {
            read_float_body(r)?
        } else {
            let v = r.read_bits(field.bits)?;
            (v, FieldEnc::Int, v)
        };
        *slot = raw;
        changes.change(FieldChange {
            index: i as u8,
            enc,
            value,
        });
    }
    Ok(())
}

/// A changed field decoded from a window by the fast path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Change {
    raw: i32,
    enc: FieldEnc,
    value: i32,
    /// Stream bits it took, from its changed bit on.
    bits: usize,
}

/// A float body (form bit, then 13 or 32 bits) at the start of `w`; `None` on a NYT code.
#[inline(always)]
fn float_in_window(w: u64, before: usize) -> Option<Change> {
    if w & 1 == 0 {
        let d = decode_window(w >> 1, FLOAT_INT_BITS);
        let trunc = d.value - FLOAT_INT_BIAS;
        (!d.nyt).then(|| Change {
            raw: (trunc as f32).to_bits() as i32,
            enc: FieldEnc::Int,
            value: trunc,
            bits: before + 1 + d.bits as usize,
        })
    } else {
        let d = decode_window(w >> 1, 32);
        (!d.nyt).then_some(Change {
            raw: d.value,
            enc: FieldEnc::Float,
            value: d.value,
            bits: before + 1 + d.bits as usize,
        })
    }
}

/// An entity field whose changed bit is bit 0 of `w` (and is 1): the zero bit, then the
/// value. At most 47 bits of the window.
#[inline(always)]
fn entity_change(w: u64, field: &NetField) -> Option<Change> {
    if w & 2 == 0 {
        return Some(Change {
            raw: 0,
            enc: FieldEnc::Zero,
            value: 0,
            bits: 2,
        });
    }
    if field.is_float() {
        return float_in_window(w >> 2, 2);
    }
    let d = decode_window(w >> 2, field.bits);
    (!d.nyt).then_some(Change {
        raw: d.value,
        enc: FieldEnc::Int,
        value: d.value,
        bits: 2 + d.bits as usize,
    })
}

/// A playerstate field whose changed bit is bit 0 of `w` (and is 1). At most 46 bits.
#[inline(always)]
fn player_change(w: u64, field: &NetField) -> Option<Change> {
    if field.is_float() {
        return float_in_window(w >> 1, 1);
    }
    let d = decode_window(w >> 1, field.bits);
    (!d.nyt).then_some(Change {
        raw: d.value,
        enc: FieldEnc::Int,
        value: d.value,
        bits: 1 + d.bits as usize,
    })
}

/// `MSG_ReadDeltaEntity`: the caller has already read the `GENTITYNUM_BITS` entity number.
pub fn read_delta_entity(
    r: &mut BitReader,
    from: &EntityState,
    number: i32,
) -> Result<EntityDelta, DeltaError> {
    let start_bit = r.bit_pos();
    let flags = read_entity_flags(r)?;
    let bit = r.bit_pos();
    let mut state = EntityState {
        number,
        fields: from.fields,
    };
    let (lc, changes, bit_after_flag) = match flags {
        EntityFlags::Removed => {
            state.fields = [0; NUM_ENTITY_FIELDS];
            (0, Vec::new(), bit)
        }
        EntityFlags::Unchanged => (0, Vec::new(), bit),
        EntityFlags::Delta => {
            let mut changes = Vec::new();
            let (lc, after_lc) = read_entity_fields(r, &mut state.fields, &mut changes)?;
            (lc, changes, after_lc)
        }
    };
    Ok(EntityDelta {
        state,
        removed: flags == EntityFlags::Removed,
        has_delta: flags == EntityFlags::Delta,
        lc,
        changes,
        bit_after_flag,
        start_bit,
        end_bit: r.bit_pos(),
    })
}

/// True when the engine would send this float in the 13-bit integer form:
/// `(int)f == f` and `-4096 <= (int)f < 4096`.
#[inline]
fn small_integral(f: f32) -> Option<i32> {
    // `as` saturates where C's conversion is undefined; every value that saturates fails the
    // range check either way, so the outcome matches the engine on x86.
    let t = f as i32;
    (t as f32 == f && (-FLOAT_INT_BIAS..FLOAT_INT_BIAS).contains(&t)).then_some(t)
}

/// `MSG_WriteDeltaEntity`, including the entity number. `to = None` writes a removal of
/// `from.number`; an unchanged entity writes nothing unless `force`.
pub fn write_delta_entity(
    w: &mut BitWriter,
    from: &EntityState,
    to: Option<&EntityState>,
    force: bool,
) {
    let Some(to) = to else {
        w.write_bits(from.number, GENTITYNUM_BITS);
        w.write_bit(true);
        return;
    };
    let lc = from
        .fields
        .iter()
        .zip(&to.fields)
        .rposition(|(a, b)| a != b)
        .map_or(0, |i| i + 1);
    if lc == 0 {
        if force {
            w.write_bits(to.number, GENTITYNUM_BITS);
            w.write_bit(false); // not removed
            w.write_bit(false); // no delta
        }
        return;
    }
    w.write_bits(to.number, GENTITYNUM_BITS);
    w.write_bit(false); // not removed
    w.write_bit(true); // delta follows
    w.write_byte(lc as u8);
    for ((field, &f), &t) in ENTITY_FIELDS
        .iter()
        .zip(&from.fields)
        .zip(&to.fields)
        .take(lc)
    {
        if f == t {
            w.write_bit(false);
            continue;
        }
        w.write_bit(true);
        if field.is_float() {
            let full = f32::from_bits(t as u32);
            if full == 0.0 {
                // Also taken by -0.0, which therefore arrives as +0.0.
                w.write_bit(false);
            } else {
                w.write_bit(true);
                write_float_body(w, full, t);
            }
        } else if t == 0 {
            w.write_bit(false);
        } else {
            w.write_bit(true);
            w.write_bits(t, field.bits);
        }
    }
}

#[inline]
fn write_float_body(w: &mut BitWriter, full: f32, raw: i32) {
    match small_integral(full) {
        Some(t) => {
            w.write_bit(false);
            w.write_bits(t + FLOAT_INT_BIAS, FLOAT_INT_BITS);
        }
        None => {
            w.write_bit(true);
            w.write_bits(raw, 32);
        }
    }
}

/// Result of [`read_delta_playerstate`].
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct PlayerDelta {
    /// Absolute state after the delta.
    pub state: PlayerState,
    /// The field count byte.
    pub lc: u8,
    /// Fields whose changed bit was 1, in table order (enc is `Int` or `Float`, never `Zero`).
    pub changes: Vec<FieldChange>,
    /// The "arrays changed" bit.
    pub arrays_changed: bool,
    /// Per array (stats, persistant, ammo, powerups): its presence bit was 1 (the engine prints
    /// `PS_STATS` / `PS_PERSISTANT` / `PS_AMMO` / `PS_POWERUPS` for these).
    pub arrays: [bool; 4],
    /// Mask of the stats entries sent (0 when absent).
    pub changed_stats: u16,
    /// Mask of the persistant entries sent.
    pub changed_persistant: u16,
    /// Mask of the ammo entries sent.
    pub changed_ammo: u16,
    /// Mask of the powerups entries sent.
    pub changed_powerups: u16,
    /// Bit position at entry (before the `lc` byte).
    pub start_bit: usize,
    /// Bit position at exit.
    pub end_bit: usize,
}

impl PlayerDelta {
    /// The record of a delta read into `state`, spanning bits `start..end`.
    pub fn new(
        state: PlayerState,
        wire: PlayerWire,
        changes: Vec<FieldChange>,
        (start_bit, end_bit): (usize, usize),
    ) -> Self {
        let [changed_stats, changed_persistant, changed_ammo, changed_powerups] = wire.masks;
        PlayerDelta {
            state,
            lc: wire.lc,
            changes,
            arrays_changed: wire.arrays_changed,
            arrays: wire.arrays,
            changed_stats,
            changed_persistant,
            changed_ammo,
            changed_powerups,
            start_bit,
            end_bit,
        }
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
        st.serialize_field("state", &self.state)?;
        st.end()
    }
}

/// What a playerstate delta carried besides the field values.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct PlayerWire {
    pub lc: u8,
    pub arrays_changed: bool,
    /// Presence bit per array (stats, persistant, ammo, powerups).
    pub arrays: [bool; 4],
    /// Mask of the entries sent per array.
    pub masks: [u16; 4],
}

/// `MSG_ReadDeltaPlayerstate` applied in place: `state` holds the base on entry and the new
/// state on success. Changed fields go to `changes`.
pub fn read_playerstate_into<C: ChangeSink>(
    r: &mut BitReader,
    state: &mut PlayerState,
    changes: &mut C,
) -> Result<PlayerWire, DeltaError> {
    let start_bit = r.bit_pos();
    let lc = r.read_byte()?;
    if lc as usize > NUM_PLAYER_FIELDS {
        return Err(DeltaError::FieldCount { lc, bit: start_bit });
    }
    player_fields(r, state, lc as usize, changes)?;
    let mut wire = PlayerWire {
        lc,
        arrays_changed: r.read_bit()?,
        ..Default::default()
    };
    if wire.arrays_changed {
        read_playerstate_arrays(r, state, &mut wire)?;
    }
    Ok(wire)
}

/// Playerstate fields `0..n`, with the fast path of [`entity_fields`].
fn player_fields<C: ChangeSink>(
    r: &mut BitReader,
    state: &mut PlayerState,
    n: usize,
    changes: &mut C,
) -> Result<(), DeltaError> {
    let i = fields_fast!(r, PLAYER_FIELDS, state.fields, n, changes, player_change);
    if i < n {
        player_fields_exact(r, state, i, n, changes)?;
    }
    Ok(())
}

/// Playerstate fields `from..lc` read bit by bit as `MSG_ReadDeltaPlayerstate` does.
fn player_fields_exact<C: ChangeSink>(
    r: &mut BitReader,
    state: &mut PlayerState,
    from: usize,
    lc: usize,
    changes: &mut C,
) -> Result<(), DeltaError> {
    for (i, (field, slot)) in PLAYER_FIELDS
        .iter()
        .zip(state.fields.iter_mut())
        .enumerate()
        .take(lc)
        .skip(from)
    {
        if !r.read_bit()? {
            continue;
        }
        let (raw, enc, value) = if field.is_float() {
            read_float_body(r)?
        } else {
            let v = r.read_bits(field.bits)?;
            (v, FieldEnc::Int, v)
        };
        *slot = raw;
        changes.change(FieldChange {
            index: i as u8,
            enc,
            value,
        });
    }
    Ok(())
}

/// The four arrays of a playerstate delta, each behind its presence bit and a 16-bit mask.
fn read_playerstate_arrays(
    r: &mut BitReader,
    state: &mut PlayerState,
    wire: &mut PlayerWire,
) -> Result<(), DeltaError> {
    let PlayerState {
        stats,
        persistant,
        ammo,
        powerups,
        ..
    } = state;
    let targets: [(&mut [i32; 16], bool); 4] = [
        (stats, false),
        (persistant, false),
        (ammo, false),
        (powerups, true),
    ];
    for (k, (arr, long)) in targets.into_iter().enumerate() {
        if !r.read_bit()? {
            continue;
        }
        wire.arrays[k] = true;
        let mask = r.read_bits(16)? as u16;
        wire.masks[k] = mask;
        for (i, v) in arr.iter_mut().enumerate() {
            if mask & (1 << i) != 0 {
                *v = if long {
                    r.read_long()?
                } else {
                    i32::from(r.read_short()?)
                };
            }
        }
    }
    Ok(())
}

/// `MSG_ReadDeltaPlayerstate`; `from = None` means an all-zero base (full snapshot).
pub fn read_delta_playerstate(
    r: &mut BitReader,
    from: Option<&PlayerState>,
) -> Result<PlayerDelta, DeltaError> {
    let start_bit = r.bit_pos();
    let mut state = from.cloned().unwrap_or_default();
    let mut changes = Vec::new();
    let wire = read_playerstate_into(r, &mut state, &mut changes)?;
    Ok(PlayerDelta::new(
        state,
        wire,
        changes,
        (start_bit, r.bit_pos()),
    ))
}

/// `MSG_WriteDeltaPlayerstate`; `from = None` deltas from an all-zero state.
pub fn write_delta_playerstate(w: &mut BitWriter, from: Option<&PlayerState>, to: &PlayerState) {
    let zero = PlayerState::default();
    let from = from.unwrap_or(&zero);
    let lc = from
        .fields
        .iter()
        .zip(&to.fields)
        .rposition(|(a, b)| a != b)
        .map_or(0, |i| i + 1);
    w.write_byte(lc as u8);
    for ((field, &f), &t) in PLAYER_FIELDS
        .iter()
        .zip(&from.fields)
        .zip(&to.fields)
        .take(lc)
    {
        if f == t {
            w.write_bit(false);
            continue;
        }
        w.write_bit(true);
        if field.is_float() {
            write_float_body(w, f32::from_bits(t as u32), t);
        } else {
            w.write_bits(t, field.bits);
        }
    }
    let mask = |a: &[i32; 16], b: &[i32; 16]| -> u16 {
        a.iter()
            .zip(b)
            .enumerate()
            .fold(0u16, |m, (i, (x, y))| if x != y { m | (1 << i) } else { m })
    };
    let fa = from.arrays();
    let ta = to.arrays();
    let masks: [u16; 4] = std::array::from_fn(|k| mask(fa[k], ta[k]));
    if masks == [0; 4] {
        w.write_bit(false);
        return;
    }
    w.write_bit(true);
    for (k, (&m, arr)) in masks.iter().zip(ta).enumerate() {
        if m == 0 {
            w.write_bit(false);
            continue;
        }
        w.write_bit(true);
        w.write_bits(i32::from(m), 16);
        for (i, &v) in arr.iter().enumerate() {
            if m & (1 << i) != 0 {
                if k == 3 {
                    w.write_long(v);
                } else {
                    w.write_short(v as i16);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Raw values for a field: integers within the field width (the engine never sends more),
    /// floats from a mix of integral in/out of the 13-bit range, -0.0, NaN payloads, any bits.
    fn field_value(field: &NetField) -> BoxedStrategy<i32> {
        if field.is_float() {
            prop_oneof![
                Just(0i32),
                Just((-0.0f32).to_bits() as i32),
                (-4096i32..4096).prop_map(|v| (v as f32).to_bits() as i32),
                prop_oneof![-100_000i32..-4096, 4096i32..100_000]
                    .prop_map(|v| (v as f32).to_bits() as i32),
                Just(0x7fc0_0001),
                Just(0xffc1_2345u32 as i32),
                Just(f32::INFINITY.to_bits() as i32),
                any::<i32>(),
            ]
            .boxed()
        } else {
            let bits = field.bits.unsigned_abs();
            let m = if bits == 32 {
                u32::MAX
            } else {
                (1u32 << bits) - 1
            };
            let signed = field.bits < 0;
            prop_oneof![Just(0u32), any::<u32>(), any::<u32>()]
                .prop_map(move |v| {
                    let v = v & m;
                    if signed && v & (1 << (bits - 1)) != 0 {
                        (v | !m) as i32
                    } else {
                        v as i32
                    }
                })
                .boxed()
        }
    }

    fn fields_strategy(table: &'static [NetField]) -> impl Strategy<Value = Vec<i32>> {
        table.iter().map(field_value).collect::<Vec<_>>()
    }

    /// A "to" that shares a random subset of fields with "from".
    fn from_to(table: &'static [NetField]) -> impl Strategy<Value = (Vec<i32>, Vec<i32>)> {
        (
            fields_strategy(table),
            fields_strategy(table),
            proptest::collection::vec(0u8..4, table.len()),
        )
            .prop_map(|(a, b, keep)| {
                let b = b
                    .iter()
                    .zip(&a)
                    .zip(&keep)
                    .map(|((&b, &a), &k)| if k != 0 { a } else { b })
                    .collect();
                (a, b)
            })
    }

    fn entity(number: i32, v: &[i32]) -> EntityState {
        let mut e = EntityState::zeroed(number);
        e.fields.copy_from_slice(v);
        e
    }

    /// What the engine's reader ends up with for a changed field: -0.0 travels as 0.0
    /// (the entity "zero" path; the playerstate 13-bit path), everything else exactly.
    fn expected_after(from: i32, to: i32, field: &NetField) -> i32 {
        if from != to && field.is_float() && to == (-0.0f32).to_bits() as i32 {
            0
        } else {
            to
        }
    }

    /// Message bytes for the fast-path tests: random, or mostly zero so that long runs of
    /// unchanged fields, message ends inside a field and NYT codes all occur.
    fn wire_bytes() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..40),
            proptest::collection::vec(prop_oneof![4 => Just(0u8), 1 => any::<u8>()], 0..40),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// The window fast path of the entity fields gives exactly the bit-by-bit reader's
        /// fields, changes, end position and errors.
        #[test]
        fn prop_entity_fields_fast_equals_exact(
            data in wire_bytes(),
            start in 0usize..320,
            n in 0usize..=NUM_ENTITY_FIELDS,
            base in any::<[i32; 8]>(),
        ) {
            let mut f1 = [0i32; NUM_ENTITY_FIELDS];
            for (k, v) in f1.iter_mut().enumerate() {
                *v = base[k % 8];
            }
            let mut f2 = f1;
            let (mut c1, mut c2) = (Vec::new(), Vec::new());
            let mut r1 = BitReader::new(&data);
            r1.set_bit_pos(start);
            let mut r2 = r1.clone();
            let a = entity_fields(&mut r1, &mut f1, n, &mut c1);
            let b = entity_fields_exact(&mut r2, &mut f2, 0, n, &mut c2);
            prop_assert_eq!(&a, &b);
            if a.is_ok() {
                prop_assert_eq!(f1, f2);
                prop_assert_eq!(c1, c2);
                prop_assert_eq!(r1.bit_pos(), r2.bit_pos());
            }
        }

        /// The same for the playerstate fields.
        #[test]
        fn prop_player_fields_fast_equals_exact(
            data in wire_bytes(),
            start in 0usize..320,
            n in 0usize..=NUM_PLAYER_FIELDS,
            base in any::<[i32; 8]>(),
        ) {
            let mut p1 = PlayerState::default();
            for (k, v) in p1.fields.iter_mut().enumerate() {
                *v = base[k % 8];
            }
            let mut p2 = p1.clone();
            let (mut c1, mut c2) = (Vec::new(), Vec::new());
            let mut r1 = BitReader::new(&data);
            r1.set_bit_pos(start);
            let mut r2 = r1.clone();
            let a = player_fields(&mut r1, &mut p1, n, &mut c1);
            let b = player_fields_exact(&mut r2, &mut p2, 0, n, &mut c2);
            prop_assert_eq!(&a, &b);
            if a.is_ok() {
                prop_assert_eq!(p1, p2);
                prop_assert_eq!(c1, c2);
                prop_assert_eq!(r1.bit_pos(), r2.bit_pos());
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn prop_entity_delta_roundtrip((a, b) in from_to(&ENTITY_FIELDS), number in 0i32..1023, force in any::<bool>()) {
            let from = entity(number, &a);
            let to = entity(number, &b);
            let mut w = BitWriter::new();
            w.write_long(77); // something before, so positions are not trivially 0
            let start = w.bit_pos();
            write_delta_entity(&mut w, &from, Some(&to), force);
            let end = w.bit_pos();
            let out = w.finish();
            let changed: Vec<usize> = (0..51).filter(|&i| a[i] != b[i]).collect();
            if changed.is_empty() && !force {
                prop_assert_eq!(end, start);
                return Ok(());
            }
            let mut r = BitReader::new(&out);
            prop_assert_eq!(r.read_long(), Ok(77));
            let n = r.read_bits(GENTITYNUM_BITS)?;
            prop_assert_eq!(n, number);
            let after_number = r.bit_pos();
            prop_assert!(after_number > start);
            let d = read_delta_entity(&mut r, &from, n)?;
            prop_assert_eq!(d.end_bit, end);
            prop_assert_eq!(d.start_bit, after_number);
            prop_assert!(!d.removed);
            prop_assert_eq!(d.has_delta, !changed.is_empty());
            let idx: Vec<usize> = d.changes.iter().map(|c| c.index as usize).collect();
            prop_assert_eq!(&idx, &changed);
            prop_assert_eq!(d.lc as usize, changed.last().map_or(0, |&i| i + 1));
            for (i, f) in ENTITY_FIELDS.iter().enumerate() {
                prop_assert_eq!(d.state.fields[i], expected_after(a[i], b[i], f), "field {}", f.name);
            }
            for c in &d.changes {
                let f = &ENTITY_FIELDS[c.index as usize];
                let v = d.state.fields[c.index as usize];
                match c.enc {
                    FieldEnc::Zero => prop_assert_eq!(v, 0),
                    FieldEnc::Int if f.is_float() => prop_assert_eq!(f32::from_bits(v as u32), c.value as f32),
                    FieldEnc::Int | FieldEnc::Float => prop_assert_eq!(v, c.value),
                }
            }
            if d.has_delta {
                prop_assert_eq!(d.bit_after_flag, after_number + 2 + BitWriter::byte_len_bits(d.lc));
            } else {
                prop_assert_eq!(d.bit_after_flag, after_number + 2);
            }
        }

        #[test]
        fn prop_entity_removal(a in fields_strategy(&ENTITY_FIELDS), number in 0i32..1023) {
            let from = entity(number, &a);
            let mut w = BitWriter::new();
            write_delta_entity(&mut w, &from, None, false);
            let end = w.bit_pos();
            let out = w.finish();
            let mut r = BitReader::new(&out);
            let n = r.read_bits(10)?;
            prop_assert_eq!(n, number);
            prop_assert_eq!(r.bit_pos() + 1, end);
            let d = read_delta_entity(&mut r, &from, n)?;
            prop_assert!(d.removed);
            prop_assert_eq!(d.state, EntityState::zeroed(number));
            prop_assert_eq!(d.bit_after_flag, end);
            prop_assert_eq!(d.end_bit, end);
        }

        #[test]
        fn prop_playerstate_roundtrip(
            (a, b) in from_to(&PLAYER_FIELDS),
            arrays in proptest::collection::vec((any::<i16>(), any::<i16>(), 0u8..3, any::<i32>(), any::<i32>()), 64),
            use_from in any::<bool>(),
        ) {
            let mut from = PlayerState::default();
            let mut to = PlayerState::default();
            if use_from { from.fields.copy_from_slice(&a); }
            to.fields.copy_from_slice(&b);
            for (k, (x, y, keep, lx, ly)) in arrays.into_iter().enumerate() {
                let (fa, ta, long) = match k / 16 {
                    0 => (&mut from.stats, &mut to.stats, false),
                    1 => (&mut from.persistant, &mut to.persistant, false),
                    2 => (&mut from.ammo, &mut to.ammo, false),
                    _ => (&mut from.powerups, &mut to.powerups, true),
                };
                let (x, y) = if long { (lx, ly) } else { (i32::from(x), i32::from(y)) };
                if use_from { fa[k % 16] = x; }
                ta[k % 16] = if keep == 0 { fa[k % 16] } else { y };
            }
            let base = use_from.then_some(&from);
            let zero = PlayerState::default();
            let eff_from = base.unwrap_or(&zero);
            let mut w = BitWriter::new();
            write_delta_playerstate(&mut w, base, &to);
            let end = w.bit_pos();
            let out = w.finish();
            let mut r = BitReader::new(&out);
            let d = read_delta_playerstate(&mut r, base)?;
            prop_assert_eq!(d.end_bit, end);
            prop_assert_eq!(d.start_bit, 0);
            let changed: Vec<usize> = (0..48).filter(|&i| eff_from.fields[i] != to.fields[i]).collect();
            let idx: Vec<usize> = d.changes.iter().map(|c| c.index as usize).collect();
            prop_assert_eq!(&idx, &changed);
            for (i, f) in PLAYER_FIELDS.iter().enumerate() {
                prop_assert_eq!(d.state.fields[i], expected_after(eff_from.fields[i], to.fields[i], f), "field {}", f.name);
            }
            prop_assert!(d.changes.iter().all(|c| c.enc != FieldEnc::Zero));
            prop_assert_eq!(d.state.stats, to.stats);
            prop_assert_eq!(d.state.persistant, to.persistant);
            prop_assert_eq!(d.state.ammo, to.ammo);
            prop_assert_eq!(d.state.powerups, to.powerups);
            let masks = [d.changed_stats, d.changed_persistant, d.changed_ammo, d.changed_powerups];
            for (k, (&mask, &present)) in masks.iter().zip(&d.arrays).enumerate() {
                let want = (0..16).filter(|&i| eff_from.arrays()[k][i] != to.arrays()[k][i]).fold(0u16, |m, i| m | 1 << i);
                prop_assert_eq!(mask, want);
                prop_assert_eq!(present, want != 0);
            }
            prop_assert_eq!(d.arrays_changed, masks != [0; 4]);
        }

        #[test]
        fn prop_random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..120), n in 0i32..1024) {
            let from = EntityState::zeroed(n);
            let mut r = BitReader::new(&data);
            let _ = read_delta_entity(&mut r, &from, n);
            let mut r = BitReader::new(&data);
            let _ = read_delta_playerstate(&mut r, None);
        }

        #[test]
        fn prop_truncated_gives_past_end((a, b) in from_to(&ENTITY_FIELDS), cut in any::<prop::sample::Index>()) {
            let from = entity(5, &a);
            let to = entity(5, &b);
            let mut w = BitWriter::new();
            write_delta_entity(&mut w, &from, Some(&to), true);
            write_delta_playerstate(&mut w, None, &PlayerState { fields: [0x4000_0000; 48], ..Default::default() });
            let out = w.finish();
            let cut = cut.index(out.len() - 1);
            let mut r = BitReader::new(&out[..cut]);
            let res = r.read_bits(10).map_err(DeltaError::from)
                .and_then(|n| read_delta_entity(&mut r, &from, n))
                .and_then(|_| read_delta_playerstate(&mut r, None));
            match res {
                Err(DeltaError::Bits(BitError::PastEnd { bit })) => prop_assert!(bit <= cut * 8),
                other => prop_assert!(false, "expected PastEnd, got {:?}", other),
            }
        }
    }

    #[test]
    fn field_count_errors() {
        let mut w = BitWriter::new();
        w.write_bit(false);
        w.write_bit(true);
        w.write_byte(52);
        let out = w.finish();
        let mut r = BitReader::new(&out);
        assert_eq!(
            read_delta_entity(&mut r, &EntityState::default(), 3),
            Err(DeltaError::FieldCount { lc: 52, bit: 2 })
        );
        let mut w = BitWriter::new();
        w.write_byte(49);
        let out = w.finish();
        let mut r = BitReader::new(&out);
        assert_eq!(
            read_delta_playerstate(&mut r, None),
            Err(DeltaError::FieldCount { lc: 49, bit: 0 })
        );
    }

    #[test]
    fn forced_no_change_and_float_forms() {
        let from = EntityState::zeroed(7);
        let mut w = BitWriter::new();
        write_delta_entity(&mut w, &from, Some(&from), false);
        assert_eq!(w.bit_pos(), 0);
        write_delta_entity(&mut w, &from, Some(&from), true);
        let end = w.bit_pos();
        let out = w.finish();
        let mut r = BitReader::new(&out);
        assert_eq!(r.read_bits(10), Ok(7));
        assert_eq!(r.bit_pos() + 2, end);
        let d = read_delta_entity(&mut r, &from, 7).map(|d| (d.has_delta, d.removed, d.end_bit));
        assert_eq!(d, Ok((false, false, end)));

        // pos.trBase[0] (index 1): -392.0 -> 13-bit Int -392; 0.5 -> raw Float; -0.0 -> Zero.
        for (v, enc, value) in [
            (-392.0f32, FieldEnc::Int, -392),
            (0.5, FieldEnc::Float, 0.5f32.to_bits() as i32),
            (-0.0, FieldEnc::Zero, 0),
            (4095.0, FieldEnc::Int, 4095),
            (4096.0, FieldEnc::Float, 4096.0f32.to_bits() as i32),
            (-4096.0, FieldEnc::Int, -4096),
            (-4097.0, FieldEnc::Float, (-4097.0f32).to_bits() as i32),
        ] {
            let mut to = from.clone();
            to.fields[1] = v.to_bits() as i32;
            let mut w = BitWriter::new();
            write_delta_entity(&mut w, &from, Some(&to), false);
            let out = w.finish();
            let mut r = BitReader::new(&out);
            let n = r.read_bits(10).unwrap_or(-1);
            let d = read_delta_entity(&mut r, &from, n).map(|d| d.changes);
            assert_eq!(
                d,
                Ok(vec![FieldChange {
                    index: 1,
                    enc,
                    value
                }]),
                "{v}"
            );
        }
    }

    #[test]
    fn serializes_names_and_values() {
        let mut to = EntityState::zeroed(3);
        to.fields[1] = 1.5f32.to_bits() as i32;
        to.fields[11] = 4;
        let mut w = BitWriter::new();
        write_delta_entity(&mut w, &EntityState::zeroed(3), Some(&to), false);
        let out = w.finish();
        let mut r = BitReader::new(&out);
        let n = r.read_bits(10).unwrap_or(-1);
        let d = read_delta_entity(&mut r, &EntityState::zeroed(3), n);
        let json = d.map(|d| serde_json::to_string(&d).unwrap_or_default());
        let json = json.unwrap_or_default();
        assert!(
            json.contains(r#"{"name":"pos.trBase[0]","enc":"Float","value":1.5}"#),
            "{json}"
        );
        assert!(
            json.contains(r#"{"name":"eType","enc":"Int","value":4}"#),
            "{json}"
        );
        assert!(json.contains(r#""pos.trBase[0]":1.5"#), "{json}");
    }
}

impl PlayerDelta {
    /// The engine's `readcount` when the reader started (printed before `playerstate`).
    pub fn readcount_at_start(&self) -> usize {
        (self.start_bit >> 3) + 1
    }

    /// The engine's `(N bits)` figure for this delta, see [`shownet_bits`].
    pub fn shownet_bits(&self) -> usize {
        shownet_bits(self.start_bit, self.end_bit)
    }
}

#[cfg(test)]
mod demo_trace;
