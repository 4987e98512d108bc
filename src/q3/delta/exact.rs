//! The exact path of the delta field readers: fields read bit by bit with the engine's own
//! reads (`MSG_ReadDeltaEntity` / `MSG_ReadDeltaPlayerstate`), one reader for both tables.
//! The fast path (`fast.rs`) hands it whatever it cannot commit (a field crossing the
//! message end, a NYT code), so every error position comes from here.

use super::types::{ChangeSink, FieldChange, FieldEnc};
use crate::q3::bits::{BitError, BitReader};
use crate::q3::fields::{NetField, FLOAT_INT_BIAS, FLOAT_INT_BITS};

/// A protocol's fields in wire order, each with the slot its value has in the state.
pub(super) trait WireTable {
    /// Wire entry `i`: name and width.
    fn field(&self, i: usize) -> &NetField;
    /// Where wire entry `i`'s value lives in the state's fields.
    fn slot(&self, i: usize) -> usize;
}

/// A table whose wire index is the slot (Quake 3's: the union tables' prefix). Its length
/// is a constant, so that indexing below a count known to be at most that length needs no
/// bounds check.
pub(super) struct Direct<'a, const N: usize>(pub &'a [NetField; N]);

impl<const N: usize> WireTable for Direct<'_, N> {
    #[inline(always)]
    fn field(&self, i: usize) -> &NetField {
        &self.0[i]
    }
    #[inline(always)]
    fn slot(&self, i: usize) -> usize {
        i
    }
}

/// A table in another order than the slots (Quake Live's).
pub(super) struct Mapped<'a, const N: usize> {
    pub fields: &'a [NetField; N],
    pub slots: &'a [u8; N],
}

impl<const N: usize> WireTable for Mapped<'_, N> {
    #[inline(always)]
    fn field(&self, i: usize) -> &NetField {
        &self.fields[i]
    }
    #[inline(always)]
    fn slot(&self, i: usize) -> usize {
        usize::from(self.slots[i])
    }
}

/// Wire fields `from..lc` of `table` into their slots of `values`. With `ZERO_BIT`
/// (entities) each changed field has a "non-zero" bit, 0 meaning the value 0; playerstate
/// fields have none.
pub(super) fn fields_exact<const ZERO_BIT: bool, C: ChangeSink, T: WireTable>(
    r: &mut BitReader,
    table: &T,
    values: &mut [i32],
    (from, lc): (usize, usize),
    changes: &mut C,
) -> Result<(), BitError> {
    for i in from..lc {
        if !r.read_bit()? {
            continue;
        }
        let (raw, enc, value) = if ZERO_BIT && !r.read_bit()? {
            (0, FieldEnc::Zero, 0)
        } else {
            read_value(r, table.field(i))?
        };
        let slot = table.slot(i);
        values[slot] = raw;
        changes.change(FieldChange {
            index: slot as u8,
            enc,
            value,
        });
    }
    Ok(())
}

/// One field's value as (raw state value, encoding, value as sent).
#[inline]
fn read_value(r: &mut BitReader, field: &NetField) -> Result<(i32, FieldEnc, i32), BitError> {
    if !field.is_float() {
        let v = r.read_bits(field.bits)?;
        return Ok((v, FieldEnc::Int, v));
    }
    // The form bit: 0 -> 13-bit biased integer, 1 -> 32 raw bits.
    if !r.read_bit()? {
        let trunc = r.read_bits(FLOAT_INT_BITS)? - FLOAT_INT_BIAS;
        Ok(((trunc as f32).to_bits() as i32, FieldEnc::Int, trunc))
    } else {
        let raw = r.read_bits(32)?;
        Ok((raw, FieldEnc::Float, raw))
    }
}
