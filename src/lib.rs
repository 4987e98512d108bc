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
//! [`event::Event`]; [`error`] and [`vocab`] are the types those share. The decoded
//! messages and the game state are in [`q3`] and [`qw`] ([`q3::message::Message`],
//! [`qw::Message`]); the flow table, the sinks and the analyses the command-line tool uses
//! are public too. Every public item is documented (`missing_docs` is on for the crate).
//!
//! The decoders' internals (netchan, Huffman coding, descrambling, the mid-session key
//! searches, the per-connection decode state) are `pub(crate)`. The `testkit` feature makes
//! them public, hidden from these docs, together with the test kits (`flood`, `fuzzing`):
//! for the crate's own tests, benchmarks and tool examples; it is not a stable interface.
// Unsafe code is refused everywhere but in `prefetch` (one function: cache hints).
#![deny(unsafe_code)]
#![warn(missing_docs)]
#![warn(unnameable_types)]

/// Declares internal modules: `pub(crate)` for a library user, public (hidden from the docs)
/// with the `testkit` feature, which the crate's own tests, benchmarks and tool examples turn
/// on. Not a stable interface.
macro_rules! internal_mod {
    ($($(#[$attr:meta])* $name:ident),* $(,)?) => {$(
        $(#[$attr])*
        #[cfg(feature = "testkit")]
        #[doc(hidden)]
        pub mod $name;
        $(#[$attr])*
        #[cfg(not(feature = "testkit"))]
        #[allow(dead_code, unused_imports)]
        pub(crate) mod $name;
    )*};
}

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
