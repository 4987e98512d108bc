//! The work protocol: accepted netchan messages queued for a decoder, inline or on a worker
//! thread, and the buffers that go back and forth.
use super::*;

/// A message buffer larger than this (one reassembled from fragments: a gamestate, a
/// download block) is not kept for the next message, which is almost always one packet.
pub(super) const SPARE_MAX: usize = 2048;
/// Message buffers an inline decoder gives back that the queue keeps (one is in use at a
/// time; demo writing keeps bodies, so the queue may run dry).
pub(super) const SPARE_BODIES: usize = 4;

/// A netchan message the receiving engine accepted, ready to decode.
#[derive(Debug)]
pub struct Accepted {
    pub flow: u32,
    pub frame: u64,
    pub ts_ns: i64,
    pub seq: i32,
    pub body: Vec<u8>,
    pub fragmented: bool,
    pub challenge: i32,
    pub proto: Protocol,
    /// The capture missed the connection's start (see [`ClientState::mid_session`]).
    pub mid_session: bool,
}

/// What a connection asks of its decoder, in capture order.
#[derive(Debug)]
pub enum Work {
    Server(Accepted),
    Client(Accepted),
    /// A new netchan started (connectResponse): forget everything.
    Reset,
    /// Mid-session protocol 68: the key search found the text of client command `seq` (the
    /// one the server messages acknowledge).
    ClientCommand {
        seq: i32,
        text: String,
    },
    /// Mid-session protocol 68: a message of direction `Dir` received before the lock-on,
    /// decodable now; decoded for the client's state only (it was reported undecoded): a
    /// server message's commands and snapshots are the client's state, a client message's
    /// commands feed the server messages' keys.
    Prior(Dir, Accepted),
    /// Mid-session protocol 68: the lock-on came from client messages acknowledging server
    /// command `ack`: their key stream (or the command's whole text) was found.
    ClientKey {
        ack: i32,
        stream: Vec<u8>,
        text: Option<Vec<u8>>,
    },
    /// The connection went idle ([`IDLE_RELEASE_NS`]): free the decode state.
    Release,
    /// The connection has been silent for [`GONE_RELEASE_NS`]: free the decode state if the
    /// client left (only the decoder knows).
    ReleaseIfGone,
}

/// Decoding work handed out by detached connections (tagged with the flow id), and message
/// buffers the workers gave back, which the next messages are copied into.
#[derive(Debug, Default)]
pub struct WorkQueue {
    pub items: Vec<(u32, Work)>,
    pub bodies: Vec<Vec<u8>>,
    /// Network samples of the datagrams just handled (only with [`Options::samples`]).
    pub samples: Vec<Sample>,
}
