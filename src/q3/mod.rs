//! Quake 3 (protocol 68, ioquake3 protocol 71). Sans-IO: no files, no printing.
//! Reference: shared/specs/q3-protocol.md.
//!
//! Entry points, the same as QuakeWorld's: [`tracker::Tracker`] takes UDP datagrams, finds
//! Quake 3 flows and decodes every message; [`decode_demo_file`] (streaming:
//! [`demo_file::Decoder`]) reads .dm_66/67/68/71 files with the same decoders; [`demo::Writer`]
//! writes demos. What is emitted is a [`message::Message`].

pub mod bits;
pub mod cfloat;
pub mod clc;
pub mod conn;
pub mod delta;
pub mod demo;
pub mod demo_file;
pub mod fields;
pub mod huffman;
pub mod message;
pub mod netchan;
pub mod oob;
pub mod scramble;
pub mod state;
pub mod svc;
pub mod tracker;
pub mod usercmd;

pub use demo_file::decode_demo_file;
