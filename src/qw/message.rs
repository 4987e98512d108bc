//! What the QuakeWorld decoder emits: one [`Message`] per datagram or demo block, with its ops.
use super::clc::ClientOp;
use super::oob::Oob;
use super::svc::ServerOp;
use crate::flow::Dir;
use serde::Serialize;

/// One decoded op and the byte offset where it starts in the packet / block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Op {
    /// Byte offset where the op starts: in a datagram or .qwd dem_read counted from the netchan
    /// header's first byte, in an .mvd block from its data.
    pub at: usize,
    /// The op; its fields are flattened into the JSON object.
    #[serde(flatten)]
    pub kind: OpKind,
}

/// An op of either direction, or a connectionless packet (untagged in JSON: `op` names it).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum OpKind {
    /// A server → client message (`svc_*`).
    Server(ServerOp),
    /// A client → server message (`clc_*`), or a .qwd dem_cmd.
    Client(ClientOp),
    /// A connectionless packet.
    Oob(Oob),
}

impl Op {
    /// The ops of a server message as the parser returns them (offset, op).
    pub fn servers(ops: Vec<(usize, ServerOp)>) -> Vec<Op> {
        ops.into_iter()
            .map(|(at, op)| Op {
                at,
                kind: OpKind::Server(op),
            })
            .collect()
    }

    /// The engine's name for the op (ezQuake's `svc_strings` for server ops).
    pub fn name(&self) -> &'static str {
        match &self.kind {
            OpKind::Server(s) => s.shownet_name(),
            OpKind::Client(c) => c.name(),
            OpKind::Oob(o) => o.name(),
        }
    }
}

/// How the receiving engine's netchan treated the packet (spec §2.3–2.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NetchanStatus {
    /// Sequence above the last accepted one: processed.
    Accepted,
    /// Same sequence as an accepted packet: dropped by the receiver.
    Duplicate,
    /// Lower sequence than the last accepted one: dropped as stale.
    OutOfOrder,
}

/// One QuakeWorld message (a datagram, or one block of a demo file).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Message {
    /// Flow id of the connection (1 for a demo file).
    pub flow: u32,
    /// Always `"qw"`.
    pub game: &'static str,
    /// Direction of the datagram (a demo's dem_cmd is c2s, every other block s2c).
    pub dir: Dir,
    /// Capture frame number, or 1-based block number in a demo file.
    pub frame: u64,
    /// Seconds since the Unix epoch (capture), or demo time in seconds (demo file).
    pub time: f64,
    /// Netchan sequence, reliable bit stripped; on a .qwd dem_set: the incoming sequence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<i64>,
    /// Sequence of the other direction acknowledged, bit 31 stripped; on a dem_set: the outgoing
    /// sequence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ack: Option<i64>,
    /// The packet carries the sender's reliable block.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reliable: Option<bool>,
    /// The sender's reliable parity bit in the ack word.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ack_reliable: Option<bool>,
    /// A reliable-flagged packet whose block is a retransmission of a lost one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmit: Option<bool>,
    /// The client's qport (c2s netchan packets only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qport: Option<u16>,
    /// How the receiver's netchan treated the packet (netchan packets only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub netchan: Option<NetchanStatus>,
    /// Sequence numbers skipped just before this packet (as the receiver counts them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dropped: Option<u32>,
    /// A connectionless (`FF FF FF FF`) packet.
    pub connectionless: bool,
    /// "oob" (connectionless), "server" or "client" — as the Quake 3 messages say it.
    pub kind: &'static str,
    /// Demo files: the block kind ("read", "cmd", "set"; .mvd "all", "single", "stats", "multiple").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<&'static str>,
    /// Bytes in the datagram / block payload (with the netchan header).
    pub size: usize,
    /// The decoded ops, in packet order.
    pub ops: Vec<Op>,
    /// What failed and at which byte; decoding went on with the next message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Box<crate::error::Error>>,
}

impl Message {
    /// An empty message: no netchan fields, no ops; `kind` follows `dir` ("client" / "server").
    pub fn new(flow: u32, dir: Dir, frame: u64, time: f64, size: usize) -> Self {
        Message {
            flow,
            game: "qw",
            dir,
            frame,
            time,
            seq: None,
            ack: None,
            reliable: None,
            ack_reliable: None,
            retransmit: None,
            qport: None,
            netchan: None,
            dropped: None,
            connectionless: false,
            kind: match dir {
                Dir::C2s => "client",
                Dir::S2c => "server",
            },
            block: None,
            size,
            ops: Vec::new(),
            error: None,
        }
    }
}
