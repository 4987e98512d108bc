//! Entity and playerstate delta compression (spec `q3-protocol.md` §6.6, §6.7):
//! `MSG_ReadDeltaEntity` / `MSG_WriteDeltaEntity`, `MSG_ReadDeltaPlayerstate` /
//! `MSG_WriteDeltaPlayerstate`.
//!
//! States hold raw 32-bit field values in table order ([`ENTITY_FIELDS`], [`PLAYER_FIELDS`]),
//! floats as their IEEE bits — the engine compares and copies fields through an `int *` view,
//! so this keeps every comparison bit-exact (e.g. `-0.0` differs from `0.0`, NaN payloads are
//! preserved). The readers also report what was on the wire ([`FieldChange`], bit positions) so
//! a printer can reproduce the engine's `cl_shownet 4` lines.
//!
//! Layout, lower layers first:
//! * [`types`]: the states, the delta records and the one `(N bits)` formula;
//! * `json`: their `decode --json` shape;
//! * `fast`: the window decoder of a changed field and the fast field loop;
//! * `exact`: the bit-by-bit field reader the fast path falls back to;
//! * [`read`]: the readers (flags, field count, arrays, records);
//! * [`write`](mod@write): the writers.
//!
//! [`ENTITY_FIELDS`]: crate::q3::fields::ENTITY_FIELDS
//! [`PLAYER_FIELDS`]: crate::q3::fields::PLAYER_FIELDS

mod exact;
mod fast;
mod json;
pub mod read;
pub mod types;
pub mod write;

pub use read::{
    read_command_time, read_delta_entity, read_delta_entity_state, read_delta_playerstate,
    read_entity_fields, read_entity_flags, read_playerstate_into, EntityFlags,
};
pub use types::{
    shownet_bits, ChangeSink, EntityDelta, EntityState, FieldChange, FieldEnc, Number, PlayerDelta,
    PlayerState, PlayerWire, PsKnown, REMOVED_NUMBER,
};
pub use json::with_protocol;
pub use write::{write_delta_entity, write_delta_playerstate};

use crate::q3::bits::BitError;

/// Delta decoding errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DeltaError {
    /// Bitstream error (past end, NYT).
    #[error(transparent)]
    Bits(#[from] BitError),
    /// The field count byte exceeds the table size (engine: "invalid entityState field count" /
    /// "invalid playerState field count"). `bit` is where the count byte started.
    #[error("invalid field count {lc} at bit {bit}")]
    FieldCount {
        /// The field count read.
        lc: u8,
        /// Bit position of the count byte in the message.
        bit: usize,
    },
}

#[cfg(test)]
mod tests;
