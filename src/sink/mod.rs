//! Implementations of [`pipeline::Sink`](crate::pipeline::Sink): the flow table, JSON Lines,
//! readable text, the engines' own `cl_shownet` traces (Quake 3 `cl_shownet 4`, QuakeWorld
//! ezQuake's `cl_shownet 2`), and demo writers. Every sink takes the one
//! [`Event`](crate::event::Event) type, so it is written once for both games; sinks see
//! decoded events only.
pub mod annotate;
pub mod demo;
pub mod events;
#[cfg(feature = "export")]
pub mod export;
pub mod json;
pub mod markup;
#[cfg(feature = "report")]
pub mod nethtml;
#[cfg(feature = "tables")]
pub mod nettable;
pub mod shownet;
pub mod shownet_qw;
pub mod spool;
#[cfg(feature = "tables")]
pub mod table;
pub mod text;

use crate::q3::delta::{FieldChange, FieldEnc};
use crate::q3::fields::{ENTITY_FIELDS, PLAYER_FIELDS};

/// Format one changed field as the engine prints it (`name:value `): integers with `%i`,
/// full floats with `%f`; entity fields that went to zero are not printed.
pub(crate) fn push_change(out: &mut String, c: &FieldChange, entity: bool) {
    let table = if entity {
        &ENTITY_FIELDS[..]
    } else {
        &PLAYER_FIELDS[..]
    };
    let Some(f) = table.get(c.index as usize) else {
        return;
    };
    match c.enc {
        FieldEnc::Zero => {}
        FieldEnc::Int => {
            out.push_str(f.name);
            out.push(':');
            out.push_str(&c.value.to_string());
            out.push(' ');
        }
        FieldEnc::Float => {
            out.push_str(f.name);
            out.push(':');
            out.push_str(&crate::q3::cfloat::c_printf_f(f32::from_bits(
                c.value as u32,
            )));
            out.push(' ');
        }
    }
}
