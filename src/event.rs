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
#![warn(missing_docs)]
use crate::flow::FlowSummary;
use crate::q3;
use crate::qw;
use crate::vocab::sample::Sample;

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
    /// Game-neutral: a connection's decoder let its state go (the flow was silent for
    /// [`IDLE_RELEASE_NS`](crate::flow::table::IDLE_RELEASE_NS): both engines had dropped the
    /// peer). Every event of the flow so far came before it; the summary is its row as of now.
    /// A sink that keeps per-connection state can finish that connection here instead of at
    /// the end of the input, so its memory follows the connections live at once, not all of
    /// a long capture's. The flow may resume later (netchan traffic again without a new
    /// handshake): its events then follow, and a later `FlowEnd` or the input's end closes
    /// them.
    /// Only in passes that decode in capture order (anything but the flow table alone).
    FlowEnd(&'a FlowSummary),
    /// Game-neutral, only when following a live input
    /// ([`Options::follow`](crate::pipeline::Options)): a flow got its id (its server and
    /// client), before anything it decoded reaches the sink.
    FlowStart(&'a FlowStart),
    /// Only when following a live input: capture time (seconds since the Unix epoch) has
    /// reached at least this, by the last datagram read or, while the input is silent, by the
    /// wall clock since. Everything the datagrams before it decoded came before it; a sink
    /// hands out what became final by then (a follow's watermark).
    Clock(f64),
}

/// A new flow's endpoints ([`Event::FlowStart`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlowStart {
    /// The flow's id.
    pub id: u32,
    /// Its game (`"q3"`, `"qw"`).
    pub game: &'static str,
    /// The server's address.
    pub server: std::net::SocketAddr,
    /// The client's address.
    pub client: std::net::SocketAddr,
    /// Capture time of the datagram that started it (seconds since the Unix epoch).
    pub time: f64,
}

impl Event<'_> {
    /// The flow the event belongs to (flow ids are shared by both games).
    pub fn flow(&self) -> u32 {
        match self {
            Event::Q3(m) => m.flow,
            Event::Qw(m) => m.flow,
            Event::QwRaw(p) => p.flow,
            Event::NetSample(s) => s.flow,
            Event::FlowEnd(f) => f.id,
            Event::FlowStart(f) => f.id,
            Event::Clock(_) => 0,
        }
    }
}
