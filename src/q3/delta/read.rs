//! The delta readers, `MSG_ReadDeltaEntity` and `MSG_ReadDeltaPlayerstate`: flag bits, the
//! field count, the playerstate arrays and the records ([`EntityDelta`], [`PlayerDelta`]).
//! Fields go through the fast path (`fast.rs`) with the exact reader
//! (`exact.rs`) as its fallback from the first field it cannot commit.

use super::exact::{fields_exact, Direct, Mapped, WireTable};
use super::fast::{change_in_window, fields_fast};
use super::types::{
    ChangeSink, EntityDelta, EntityState, FieldChange, PlayerDelta, PlayerState, PlayerWire,
    PsKnown,
};
use super::DeltaError;
use crate::q3::bits::{BitError, BitReader};
use crate::q3::fields::{ENTITY_FIELDS, NUM_ENTITY_FIELDS, NUM_PLAYER_FIELDS, PLAYER_FIELDS};
use crate::q3::protocol::Protocol;

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
    proto: &Protocol,
    fields: &mut [i32; NUM_ENTITY_FIELDS],
    changes: &mut C,
) -> Result<(u8, usize), DeltaError> {
    let lc_bit = r.bit_pos();
    let lc = r.read_byte()?;
    if lc as usize > proto.entity.len() {
        return Err(DeltaError::FieldCount { lc, bit: lc_bit });
    }
    let after_lc = r.bit_pos();
    entity_fields(r, proto, fields, lc as usize, changes)?;
    Ok((lc, after_lc))
}

/// Entity fields `0..n` of `proto`'s table (wire order).
#[inline(always)]
pub(super) fn entity_fields<C: ChangeSink>(
    r: &mut BitReader,
    proto: &Protocol,
    fields: &mut [i32; NUM_ENTITY_FIELDS],
    n: usize,
    changes: &mut C,
) -> Result<(), DeltaError> {
    if proto.identity {
        // The union table, whose first fields are this protocol's.
        let n = n.min(NUM_ENTITY_FIELDS);
        entity_fields_of(r, &Direct(&ENTITY_FIELDS), fields, n, changes)
    } else {
        let table = Mapped {
            fields: &proto.wire.entity,
            slots: &proto.wire.entity_slots,
        };
        entity_fields_of(r, &table, fields, n.min(NUM_ENTITY_FIELDS), changes)
    }
}

/// Entity fields `0..n` of `table` (wire order): the fast path, then the exact reader from
/// the first field it could not commit.
#[inline(always)]
fn entity_fields_of<C: ChangeSink, T: WireTable>(
    r: &mut BitReader,
    table: &T,
    fields: &mut [i32; NUM_ENTITY_FIELDS],
    n: usize,
    changes: &mut C,
) -> Result<(), DeltaError> {
    let i = fields_fast!(r, table, fields, n, changes, change_in_window::<true>);
    if i < n {
        fields_exact::<true, C, T>(r, table, fields, (i, n), changes)?;
    }
    Ok(())
}

/// Playerstate fields `0..n` of `proto`'s table, as [`entity_fields`].
#[inline(always)]
pub(super) fn player_fields<C: ChangeSink>(
    r: &mut BitReader,
    proto: &Protocol,
    state: &mut PlayerState,
    n: usize,
    changes: &mut C,
) -> Result<(), DeltaError> {
    if proto.identity {
        let n = n.min(NUM_PLAYER_FIELDS);
        player_fields_of(r, &Direct(&PLAYER_FIELDS), state, n, changes)
    } else {
        let table = Mapped {
            fields: &proto.wire.player,
            slots: &proto.wire.player_slots,
        };
        player_fields_of(r, &table, state, n.min(NUM_PLAYER_FIELDS), changes)
    }
}

#[inline(always)]
fn player_fields_of<C: ChangeSink, T: WireTable>(
    r: &mut BitReader,
    table: &T,
    state: &mut PlayerState,
    n: usize,
    changes: &mut C,
) -> Result<(), DeltaError> {
    let i = fields_fast!(r, table, state.fields, n, changes, change_in_window::<false>);
    if i < n {
        fields_exact::<false, C, T>(r, table, &mut state.fields, (i, n), changes)?;
    }
    Ok(())
}

/// `MSG_ReadDeltaEntity`: the caller has already read the `GENTITYNUM_BITS` entity number.
pub fn read_delta_entity(
    r: &mut BitReader,
    proto: &Protocol,
    from: &EntityState,
    number: i32,
) -> Result<EntityDelta, DeltaError> {
    let start_bit = r.bit_pos();
    let mut changes = Vec::new();
    let (state, flags, lc, bit_after_flag) =
        read_entity_delta(r, proto, from, number, &mut changes)?;
    Ok(EntityDelta {
        state,
        removed: flags == EntityFlags::Removed,
        has_delta: flags == EntityFlags::Delta,
        lc,
        changes,
        bit_after_flag,
        start_bit,
        end_bit: r.bit_pos(),
        known: None,
    })
}

/// [`read_delta_entity`]'s new state alone, with no record of the changes: a baseline
/// read only for the client state.
pub fn read_delta_entity_state(
    r: &mut BitReader,
    proto: &Protocol,
    from: &EntityState,
    number: i32,
) -> Result<EntityState, DeltaError> {
    read_entity_delta(r, proto, from, number, &mut ()).map(|(state, ..)| state)
}

/// The entity's flags and new state, changed fields to `changes`: (state, flags, last
/// changed field, bit after the field-count byte, or after the flags).
fn read_entity_delta<C: ChangeSink>(
    r: &mut BitReader,
    proto: &Protocol,
    from: &EntityState,
    number: i32,
    changes: &mut C,
) -> Result<(EntityState, EntityFlags, u8, usize), DeltaError> {
    let flags = read_entity_flags(r)?;
    let bit = r.bit_pos();
    let mut state = EntityState {
        number,
        fields: from.fields,
    };
    let (lc, bit_after_flag) = match flags {
        EntityFlags::Removed => {
            state.fields = [0; NUM_ENTITY_FIELDS];
            (0, bit)
        }
        EntityFlags::Unchanged => (0, bit),
        EntityFlags::Delta => read_entity_fields(r, proto, &mut state.fields, changes)?,
    };
    Ok((state, flags, lc, bit_after_flag))
}

/// `MSG_ReadDeltaPlayerstate` applied in place: `state` holds the base on entry and the new
/// state on success. Changed fields go to `changes`.
pub fn read_playerstate_into<C: ChangeSink>(
    r: &mut BitReader,
    proto: &Protocol,
    state: &mut PlayerState,
    changes: &mut C,
) -> Result<PlayerWire, DeltaError> {
    let start_bit = r.bit_pos();
    let lc = r.read_byte()?;
    if lc as usize > proto.player.len() {
        return Err(DeltaError::FieldCount { lc, bit: start_bit });
    }
    player_fields(r, proto, state, lc as usize, changes)?;
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

/// The first field of a playerstate delta, commandTime, applied to `state` (which holds the
/// base's); the rest of the delta is left unread. True when the delta sent it.
pub fn read_command_time(
    r: &mut BitReader,
    proto: &Protocol,
    state: &mut PlayerState,
) -> Result<bool, DeltaError> {
    let start_bit = r.bit_pos();
    let lc = r.read_byte()?;
    if lc as usize > proto.player.len() {
        return Err(DeltaError::FieldCount { lc, bit: start_bit });
    }
    let mut sent = Sent(false);
    player_fields(r, proto, state, usize::from(lc.min(1)), &mut sent)?;
    Ok(sent.0)
}

/// Whether a delta sent any field.
struct Sent(bool);

impl ChangeSink for Sent {
    #[inline(always)]
    fn change(&mut self, _c: FieldChange) {
        self.0 = true;
    }
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
    proto: &Protocol,
    from: Option<&PlayerState>,
) -> Result<PlayerDelta, DeltaError> {
    let start_bit = r.bit_pos();
    let mut state = from.cloned().unwrap_or_default();
    let mut changes = Vec::new();
    let wire = read_playerstate_into(r, proto, &mut state, &mut changes)?;
    Ok(PlayerDelta::new(
        state,
        PsKnown::ALL,
        wire,
        changes,
        (start_bit, r.bit_pos()),
    ))
}
