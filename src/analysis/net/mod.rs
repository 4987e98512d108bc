//! Network quality per connection (issue 13), written once for both games over a
//! game-neutral [`sample::Sample`] per netchan datagram.
//!
//! - vantage: the direction whose packets crossed the path before the capture shows
//!   sequence gaps; with none, ack timing tells the near side;
//! - ping: Quake 3 server side and QuakeWorld: a packet seen leaving to the far side's first
//!   acknowledgement of it (ioq3 SV_CalcPings); Quake 3 client side: a client packet to the
//!   first snapshot whose playerstate commandTime reaches its last usercmd (cl.snap.ping);
//! - loss: exact from sequence gaps in the direction that crossed the path before the capture,
//!   inferred from acknowledgements the other way, `None` where neither exists;
//! - jitter: RFC 3550 over the senders' stamps (snapshot and usercmd serverTime), else the
//!   ping variation.
pub mod events;
pub mod live;
pub mod report;
/// The sample lives in the crate's vocabulary ([`crate::vocab::sample`]): the decoders fill it.
pub use crate::vocab::sample;
pub mod sink;
internal_mod!(acc, stats, strip);

pub use acc::RttMethod;
pub use live::LiveNet;
pub use report::NetQuality;
pub use sample::Sample;
pub use sink::NetSink;
pub use strip::{Col as StripColumn, Strip};
