//! The one event type every [`Sink`](crate::pipeline::Sink) receives, whichever game produced
//! it: a sink is written once and sees both games.
//!
//! Events borrow what the decoders produced: the pipeline hands each decoded message to the
//! sinks by reference and drops it afterwards, so wrapping it in an event costs neither an
//! allocation nor a copy (an `Event` is two words and `Copy`; a [`Tee`](crate::pipeline::Tee)
//! passes the same one to every sink).
//!
//! The enum is `#[non_exhaustive]`: game-neutral events derived by analysis (kills, chat,
//! players joining and leaving, network-quality samples) become new variants without any
//! change to the sink API, and sinks that do not know a variant ignore it with their `_`
//! arm.
use crate::analysis::net::Sample;
use crate::q3;
use crate::qw;

/// One thing that happened in a capture or demo file, as the decoders saw it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Event<'a> {
    /// One decoded Quake 3 message (a connectionless packet, a netchan message the receiver
    /// accepted, or a demo record). With `keep_raw` it carries the body the demo writer
    /// stores.
    Q3(&'a q3::message::Message),
    /// One decoded QuakeWorld datagram or demo block.
    Qw(&'a qw::Message),
    /// One QuakeWorld packet as the .qwd writer needs it (only with `keep_raw`).
    QwRaw(&'a qw::qwd::RawPacket),
    /// Game-neutral: one netchan datagram of a connection as the network analysis reads it
    /// (flow, direction, capture time, sequence, acknowledgement, sender stamps), filled by
    /// each game's thin extractor. Only with [`Options::samples`](crate::pipeline::Options).
    NetSample(&'a Sample),
    // Planned game-neutral variants (issue 11, analysis): `Kill`, `Chat`, `Join`, `Leave`,
    // each borrowing a small struct of its own, with its flow, frame and time.
}

impl Event<'_> {
    /// The flow the event belongs to (flow ids are shared by both games).
    pub fn flow(&self) -> u32 {
        match self {
            Event::Q3(m) => m.flow,
            Event::Qw(m) => m.flow,
            Event::QwRaw(p) => p.flow,
            Event::NetSample(s) => s.flow,
        }
    }
}
