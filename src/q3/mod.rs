//! Quake 3 (protocol 68, ioquake3 protocol 71). Sans-IO: no files, no printing.
//! Reference: shared/specs/q3-protocol.md.

pub mod bits;
pub mod cfloat;
pub mod clc;
pub mod conn;
pub mod delta;
pub mod demo;
pub mod events;
pub mod fields;
pub mod gamemod;
pub mod huffman;
pub mod message;
pub mod netchan;
pub mod oob;
pub mod scramble;
pub mod state;
pub mod svc;
pub mod tracker;
pub mod usercmd;
