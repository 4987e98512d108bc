//! # quakecap
//!
//! Offline analyzer of Quake 3 (protocol 68 and ioquake3's 71) and QuakeWorld (protocol 28)
//! network captures.
//!
//! The pipeline, one pass, one direction of flow:
//!
//! ```text
//! capture (pcap / pcapng records)
//!   -> net (link, IPv4 defragmentation, IPv6, UDP)          Datagram
//!   -> pipeline router (per game: q3 / qw, connection by qport)
//!   -> game netchan (sequencing, fragments, descrambling)
//!   -> game decoders (connectionless, server ops, client ops, deltas)
//!   -> sinks (flow table, JSON, text, shownet, demo writers)
//! ```
//!
//! `q3` and `qw` never import each other; each offers the same entry points (a tracker for
//! capture datagrams, `decode_demo_file` for demo files). Sinks see decoded events only, one
//! type for both games ([`event::Event`]).
// Unsafe code is refused everywhere but in `prefetch` (one function: cache hints).
#![deny(unsafe_code)]

pub mod analysis;
pub mod capture;
pub mod check;
pub mod diff;
pub mod error;
pub mod event;
#[cfg(feature = "testkit")]
pub mod flood;
pub mod flow;
#[cfg(feature = "testkit")]
pub mod fuzzing;
pub mod gameevent;
pub mod net;
pub mod parallel;
pub mod pipeline;
pub mod prefetch;
pub mod q3;
pub mod qw;
pub mod read;
pub mod sink;
pub mod vocab;
