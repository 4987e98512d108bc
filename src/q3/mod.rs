//! Quake 3 (protocol 68, ioquake3 protocol 71). Sans-IO: no files, no printing.
//! Reference: shared/specs/q3-protocol.md.
//!
//! Entry points: captures go through [`crate::pipeline`] (its internal tracker finds the
//! Quake 3 flows and decodes every message); [`decode_demo_file`], the same shape as
//! QuakeWorld's (streaming and at another detail: [`demo_file::Decoder::open`]), reads
//! .dm_66/67/68/71 files with the same decoders; [`demo::Writer`] writes demos. What is
//! emitted is a [`message::Message`].
//!
//! Layers, each using only those above it:
//! * `huffman`: the static netchan code tables; its child `huffman::adaptive` is the
//!   unrelated adaptive coder of the `connect` packet;
//! * [`bits`]: the engine-exact bitstream over the static tables, with the one window decoder
//!   ([`bits::decode_window`]) and the one exact step-by-step reader behind `read_bits`;
//! * `fields` (field tables), [`cfloat`] (C `printf` of floats);
//! * `delta`: entity/playerstate states and records (`delta::types`), the field fast path
//!   and its exact fallback, the readers (`delta::read`) and writers (`delta::write`);
//!   `delta::shownet_bits` is the one `cl_shownet` `(N bits)` formula;
//! * [`usercmd`], [`svc`], [`clc`], [`oob`], [`demo`]: messages and demo records;
//! * `netchan`, `scramble`, `cmdring`, [`state`], `conn`, `tracker`, [`message`]:
//!   connections.

pub mod baselines;
pub mod bits;
pub mod cfloat;
pub mod clc;
pub mod color;
pub mod command;
pub mod configstrings;
pub mod demo;
pub mod demo_file;
pub mod error;
pub mod gamemod;
pub mod message;
pub mod oob;
pub mod protocol;
pub mod state;
pub mod svc;
pub mod usercmd;
internal_mod!(cmdring, conn, delta, fields, huffman, midsession, netchan, scramble, tracker);

pub use delta::types::{
    EntityDelta, EntityState, FieldChange, FieldEnc, Number, PlayerDelta, PlayerState, PlayerWire,
};
pub use delta::DeltaError;
pub use demo_file::decode_demo_file;
pub use fields::NetField;
pub use netchan::HeaderError;
