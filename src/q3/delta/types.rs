//! The delta code's data: the states it applies to ([`EntityState`], [`PlayerState`], raw
//! 32-bit field values in table order, floats as IEEE bits), what one delta carried on the
//! wire ([`FieldChange`], [`EntityDelta`], [`PlayerDelta`], [`PlayerWire`]) and the engine's
//! `cl_shownet` bit count of a delta ([`shownet_bits`], the one copy of that formula).

use serde::Serialize;

use crate::q3::fields::{MAX_GENTITIES, NUM_ENTITY_FIELDS, NUM_PLAYER_FIELDS};

/// An `entityState_t` as the delta code sees it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct EntityState {
    /// Entity number (not a delta field).
    pub number: i32,
    /// Raw field values in `ENTITY_FIELDS` order; floats as IEEE bits.
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
    /// Raw field values in `PLAYER_FIELDS` order; floats as IEEE bits.
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

/// Which values of a playerstate are known: bit `i` of `fields` for field `i` of the
/// table, one bit per entry of each array (stats, persistant, ammo, powerups). A capture
/// that starts mid-session misses the delta bases: only what the deltas send is known
/// until a full snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PsKnown {
    /// Bit `i`: field `i` of `playerStateFields` (table order) is known.
    pub fields: u64,
    /// Per array (stats, persistant, ammo, powerups), bit `j`: entry `j` is known.
    pub arrays: [u16; 4],
}

impl PsKnown {
    /// Field `i` of `ps`, where this says it is known.
    pub fn value(&self, ps: &PlayerState, i: usize) -> Option<i32> {
        (self.fields & (1u64 << i) != 0).then(|| ps.fields[i])
    }

    /// Every value known (a full session).
    pub const ALL: PsKnown = PsKnown {
        fields: (1u64 << NUM_PLAYER_FIELDS) - 1,
        arrays: [u16::MAX; 4],
    };
    /// No value known.
    pub const NONE: PsKnown = PsKnown {
        fields: 0,
        arrays: [0; 4],
    };

    /// True when every value is known.
    pub fn is_all(&self) -> bool {
        *self == PsKnown::ALL
    }
}

impl Default for PsKnown {
    fn default() -> Self {
        PsKnown::ALL
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

/// Result of `read_delta_entity`.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct EntityDelta {
    /// Absolute state after the delta. `number` is always the real entity number; for a
    /// removal the fields are all zero (the engine itself stores number `MAX_GENTITIES - 1`,
    /// see `REMOVED_NUMBER`).
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
    /// The fields of `state` whose values are known; `None`: all of them. (Mid-session the
    /// base may be missing from the capture: only what the deltas sent is known.)
    pub known: Option<u64>,
}

impl EntityDelta {
    /// The engine's `readcount` at `bit_after_flag` (the number printed before `#`).
    pub fn readcount_after_flag(&self) -> usize {
        (self.bit_after_flag >> 3) + 1
    }

    /// The engine's `(N bits)` figure for this delta, see `shownet_bits`.
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

/// The number the engine's `MSG_ReadDeltaEntity` leaves in a removed entity.
pub const REMOVED_NUMBER: i32 = MAX_GENTITIES - 1;

/// Result of `read_delta_playerstate`.
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
    /// Which values of `state` are known; `None`: all of them.
    pub known: Option<PsKnown>,
}

impl PlayerDelta {
    /// The record of a delta read into `state`, spanning bits `start..end`.
    pub fn new(
        state: PlayerState,
        known: PsKnown,
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
            known: (!known.is_all()).then_some(known),
        }
    }

    /// The engine's `readcount` when the reader started (printed before `playerstate`).
    pub fn readcount_at_start(&self) -> usize {
        (self.start_bit >> 3) + 1
    }

    /// The engine's `(N bits)` figure for this delta, see `shownet_bits`.
    pub fn shownet_bits(&self) -> usize {
        shownet_bits(self.start_bit, self.end_bit)
    }
}

/// What a playerstate delta carried besides the field values.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct PlayerWire {
    /// The field count byte: fields up to this index may have been sent.
    pub lc: u8,
    /// The bit saying any of the arrays (stats, persistant, ammo, powerups) changed.
    pub arrays_changed: bool,
    /// Presence bit per array (stats, persistant, ammo, powerups).
    pub arrays: [bool; 4],
    /// Mask of the entries sent per array.
    pub masks: [u16; 4],
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
