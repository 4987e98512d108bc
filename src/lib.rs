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
//!
//! Where to start: [`read`] answers one question about one file in one call (its game
//! events, its players' network quality, its connections); [`pipeline`] runs the pass
//! over captures and demos into a [`pipeline::Sink`] of your own, which receives each
//! [`event::Event`]; [`error`] and [`vocab`] are the types those share. These modules
//! document every public item (`missing_docs` is on for them). The decoders (`q3`, `qw`),
//! the flow table, the sinks and the analyses are public for the command-line tool, the
//! tests and authors who need the decoded messages themselves; their internals are not a
//! stable interface. The test kits (`flood`, `fuzzing`) need the `testkit` feature.
// Unsafe code is refused everywhere but in `prefetch` (one function: cache hints).
#![deny(unsafe_code)]

pub mod analysis;
pub mod capture;
pub mod check;
pub mod diff;
pub mod error;
pub mod event;
#[cfg(feature = "testkit")]
#[doc(hidden)]
pub mod flood;
pub mod flow;
#[cfg(feature = "testkit")]
#[doc(hidden)]
pub mod fuzzing;
pub mod gameevent;
pub mod net;
pub mod parallel;
pub mod pipeline;
pub(crate) mod prefetch;
pub mod q3;
pub mod qw;
pub mod read;
pub mod sink;
pub mod vocab;
