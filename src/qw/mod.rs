//! QuakeWorld (protocol 28 with FTE/MVD extensions). Sans-IO: no files, no printing.
//! Reference: shared/specs/qw-protocol.md.
//!
//! * [`Tracker`] takes UDP datagrams, finds QuakeWorld flows by content (any port), runs the
//!   netchan of both directions as the receiving engines do and decodes every message.
//! * [`decode_demo_file`] reads .qwd and .mvd files with the same decoders.
//! * [`qwd::Writer`] turns one connection's server stream into a .qwd ezQuake plays.
//!
//! Layout, one concern per file: `cursor` (checked little-endian reads), [`ext`] (FTE/MVD
//! extension flags and the coord/angle encodings they select), `netchan` (header view and
//! the receiver's acceptance rule), [`oob`] (connectionless), [`svc`] + [`entity`] +
//! [`playerinfo`] (server messages and the state they need), [`clc`] + [`usercmd`] (client
//! messages, the move checksum), [`message`] (what is emitted), `tracker` (flows),
//! [`demo`] (.qwd/.mvd reading), [`qwd`] (.qwd writing), [`cut`] and [`cut_mvd`] (a window of a .qwd or .mvd),
//! [`charset`] (the character set as plain text).
//!
//! ```no_run
//! # fn datagrams() -> Vec<quakecap::net::Datagram<'static>> { Vec::new() }
//! use quakecap::qw::{self, Event};
//! let mut tracker = qw::Tracker::new(qw::Options { decode: true, keep_raw: true });
//! let (mut events, mut next_id) = (Vec::new(), quakecap::flow::FlowTable::default());
//! for d in datagrams() {
//!     if !tracker.offer(&d, &mut next_id, &mut events) {
//!         // not QuakeWorld: another game's tracker may take it
//!     }
//! }
//! let flows = tracker.finish(&mut events);
//! let mut demos = qw::qwd::Writers::new();
//! for e in &events {
//!     match e {
//!         Event::Message(m) => {
//!             let mut s = String::new();
//!             quakecap::sink::text::qw::write_message(m, &mut s).unwrap();
//!         }
//!         Event::Raw(_) => demos.push(e),
//!     }
//! }
//! for (flow, qwd_bytes) in demos.finish() { /* write `<capture>-flow<flow>.qwd` */ }
//! # let _ = flows;
//! ```
pub mod charset;
pub mod clc;
pub mod cut;
pub mod cut_mvd;
pub mod demo;
pub mod entity;
pub mod error;
pub mod ext;
pub mod message;
pub mod oob;
pub mod playerinfo;
pub mod qwd;
pub mod state;
pub mod svc;
mod tracker;
pub mod usercmd;
internal_mod!(cursor, netchan, netsample);

pub use cursor::{DecodeError, Reader};
pub use demo::{decode_demo_file, decode_demo_stream};
pub use message::{Message, NetchanStatus, Op, OpKind};
pub use tracker::Tracker;

/// What the tracker reports.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// One decoded datagram or demo block.
    Message(Message),
    /// (only with [`Options::keep_raw`]) One packet of a connection as the demo writer needs it.
    Raw(qwd::RawPacket),
}

/// Tracker options.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Decode messages (false: flows only, cheap).
    pub decode: bool,
    /// Keep accepted s2c packets and c2s moves for demo writing ([`Event::Raw`]).
    pub keep_raw: bool,
}
