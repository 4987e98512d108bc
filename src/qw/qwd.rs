//! Writing .qwd demos (spec §8.1). Placeholder.
#[derive(Debug, Clone, PartialEq)]
pub struct RawPacket;
