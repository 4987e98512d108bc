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
    /// A connectionless packet (`FF FF FF FF` + text), either direction.
    Oob(Oob),
    /// A server→client netchan message, or a demo record.
    Server(ServerMessage),
    /// A client→server netchan message.
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
            Body::Server(m) => crate::q3::delta::with_protocol(m.protocol, || m.serialize(s)),
            Body::Client(m) => m.serialize(s),
            Body::None => Ops { ops: [(); 0] }.serialize(s),
        }
    }
}

/// One message of a flow: a connectionless packet, or a netchan message the receiving
/// engine accepted (reassembled, descrambled, decoded).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Message {
    /// The flow's id: 1.. in order of the flow's first packet (a demo file's one flow: 1).
    pub flow: u32,
    /// Always `"q3"` (QuakeWorld messages say `"qw"`).
    pub game: &'static str,
    /// The direction the message travelled (demo records: server to client).
    pub dir: Dir,
    /// 1-based capture frame of the packet that completed the message (a demo file: the
    /// record number).
    pub frame: u64,
    /// Seconds since the Unix epoch (captures) or since the start (demo files: 0).
    pub time: f64,
    /// Netchan sequence (None for connectionless packets).
    pub seq: Option<i32>,
    /// The message was reassembled from netchan fragments (`FRAGMENT_BIT` set).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub fragmented: bool,
    /// "oob", "server" or "client".
    pub kind: &'static str,
    /// The decoded content (flattened into the message's JSON).
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
