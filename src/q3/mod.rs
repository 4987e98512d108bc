//! Quake 3 (protocol 68, ioquake3 protocol 71). Sans-IO: no files, no printing.
//! Reference: shared/specs/q3-protocol.md.

pub mod bits;
pub mod cfloat;
pub mod delta;
pub mod fields;
pub mod huffman;
pub mod usercmd;
