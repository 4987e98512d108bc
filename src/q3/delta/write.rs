//! The delta writers, `MSG_WriteDeltaEntity` and `MSG_WriteDeltaPlayerstate`: exact inverses
//! of the readers, used where a demo writer re-encodes a snapshot.

use super::types::{EntityState, PlayerState};
use crate::q3::bits::BitWriter;
use crate::q3::fields::{NetField, FLOAT_INT_BIAS, FLOAT_INT_BITS, GENTITYNUM_BITS};
use crate::q3::protocol::Protocol;

/// The wire fields of a table with the `from` and `to` values of each, in wire order, up to
/// the last that differs (the field count `lc` is their number).
fn changed<'a>(
    fields: &'a [NetField],
    slots: &'a [u8],
    from: &'a [i32],
    to: &'a [i32],
) -> impl Iterator<Item = (&'a NetField, i32, i32)> + Clone + 'a {
    let pair = move |i: usize| {
        let s = usize::from(slots[i]);
        (&fields[i], from[s], to[s])
    };
    let lc = (0..fields.len())
        .rposition(|i| {
            let (_, f, t) = pair(i);
            f != t
        })
        .map_or(0, |i| i + 1);
    (0..lc).map(pair)
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
    proto: &Protocol,
    from: &EntityState,
    to: Option<&EntityState>,
    force: bool,
) {
    let Some(to) = to else {
        w.write_bits(from.number, GENTITYNUM_BITS);
        w.write_bit(true);
        return;
    };
    let fields = changed(&proto.entity, &proto.entity_slots, &from.fields, &to.fields);
    let lc = fields.clone().count();
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
    for (field, f, t) in fields {
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

/// `MSG_WriteDeltaPlayerstate`; `from = None` deltas from an all-zero state.
pub fn write_delta_playerstate(
    w: &mut BitWriter,
    proto: &Protocol,
    from: Option<&PlayerState>,
    to: &PlayerState,
) {
    let zero = PlayerState::default();
    let from = from.unwrap_or(&zero);
    let fields = changed(&proto.player, &proto.player_slots, &from.fields, &to.fields);
    w.write_byte(fields.clone().count() as u8);
    for (field, f, t) in fields {
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
