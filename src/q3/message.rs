//! What the Quake 3 layer hands to sinks: one decoded message (or packet problem) per event.
use serde::Serialize;

use super::clc::ClientMessage;
use super::oob::Oob;
use super::svc::ServerMessage;
use crate::flow::Dir;

/// The decoded content of one message. In JSON every body has `ops`: a connectionless packet
/// is one op `connectionless` with its command, arguments, text and userinfo.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    Oob(Oob),
    Server(ServerMessage),
    Client(ClientMessage),
    /// Nothing could be decoded (the error says why).
    None,
}

impl Serialize for Body {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct OobOp<'a> {
            op: &'static str,
            #[serde(flatten)]
            oob: &'a Oob,
        }
        #[derive(Serialize)]
        struct Ops<T: Serialize> {
            ops: T,
        }
        match self {
            Body::Oob(oob) => Ops {
                ops: [OobOp {
                    op: "connectionless",
                    oob,
                }],
            }
            .serialize(s),
            Body::Server(m) => m.serialize(s),
            Body::Client(m) => m.serialize(s),
            Body::None => Ops { ops: [(); 0] }.serialize(s),
        }
    }
}

/// One message of a flow: a connectionless packet, or a netchan message the receiving
/// engine accepted (reassembled, descrambled, decoded).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Message {
    pub flow: u32,
    pub game: &'static str,
    pub dir: Dir,
    pub frame: u64,
    /// Seconds since the Unix epoch (captures) or since the start (demo files: 0).
    pub time: f64,
    /// Netchan sequence (None for connectionless packets).
    pub seq: Option<i32>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub fragmented: bool,
    /// "oob", "server" or "client".
    pub kind: &'static str,
    #[serde(flatten)]
    pub body: Body,
    /// Set when the message (or part of it) could not be decoded: what and where.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Box<crate::error::Error>>,
    /// The descrambled body as the client's demo would store it (kept only when asked).
    #[serde(skip)]
    pub raw: Option<Vec<u8>>,
    /// The client had already left (it sent `disconnect`, or this message tells it to): the
    /// real client never processed this message, so a demo stops before it.
    #[serde(skip)]
    pub client_gone: bool,
    /// The connection's protocol (68 or 71; demo files: from the extension).
    #[serde(skip)]
    pub protocol: u32,
    /// Bytes of the message: the netchan message after its header, reassembled when
    /// fragmented (a connectionless packet: the whole payload; a demo record: its length).
    #[serde(skip)]
    pub size: usize,
    /// Byte offset of the record in a demo file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_offset: Option<u64>,
    /// Decoding for the game events only: server messages that carried nothing but a
    /// snapshot without obituary entities are left out, and the next message handed out gives
    /// the serverTime of the latest of them (the game clock of the events that follow).
    #[serde(skip)]
    pub quiet_snapshot: Option<i32>,
}

impl Message {
    /// The decoded server message, if this is one.
    pub fn server(&self) -> Option<&ServerMessage> {
        match &self.body {
            Body::Server(s) => Some(s),
            _ => None,
        }
    }
    /// The decoded client message, if this is one.
    pub fn client(&self) -> Option<&ClientMessage> {
        match &self.body {
            Body::Client(c) => Some(c),
            _ => None,
        }
    }
}
