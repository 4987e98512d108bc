//! Writing .qwd demos (spec §8.1). Placeholder for the writer.
use super::usercmd::Usercmd;
use crate::flow::Dir;

/// One packet of a connection as the .qwd writer needs it ([`super::Event::Raw`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RawPacket {
    pub flow: u32,
    pub dir: Dir,
    pub frame: u64,
    pub ts_ns: i64,
    pub seq: u32,
    pub ack: u32,
    /// The receiving engine accepted it (sequence above the last accepted one).
    pub accepted: bool,
    /// s2c: the whole UDP payload, netchan header included. Empty for c2s.
    pub payload: Vec<u8>,
    /// s2c: (start, end, svc id) of every decoded message in `payload`.
    pub spans: Vec<(usize, usize, u8)>,
    /// c2s: the newest usercmd of the packet's clc_move.
    pub cmd: Option<Usercmd>,
}
