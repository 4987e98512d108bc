//! Client→server message bodies (q3-protocol.md §5): serverId, messageAcknowledge,
//! reliableAcknowledge, reliable client commands, usercmds, clc_EOF.
use serde::Serialize;

use super::bits::{BitError, BitReader};
use super::usercmd::{hash_key, read_delta_usercmd, UserCmd};

pub const CLC_BAD: u8 = 0;
pub const CLC_NOP: u8 = 1;
pub const CLC_MOVE: u8 = 2;
pub const CLC_MOVE_NODELTA: u8 = 3;
pub const CLC_CLIENTCOMMAND: u8 = 4;
pub const CLC_EOF: u8 = 5;
pub const CLC_VOIP_SPEEX: u8 = 6;
pub const CLC_VOIP_OPUS: u8 = 7;
pub const MAX_PACKET_USERCMDS: u8 = 32;

/// Why a client message could not be decoded to its end.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClcError {
    #[error("read past end of client message ({0})")]
    Bits(#[from] BitError),
    #[error("bad client command byte {op} at bit {bit}")]
    BadOp { op: u8, bit: usize },
    #[error("usercmd count {count} (1..32) at bit {bit}")]
    CmdCount { count: u8, bit: usize },
    #[error("voip packet of {size} bytes at bit {bit}")]
    VoipSize { size: i32, bit: usize },
}

impl Serialize for ClcError {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

/// One client op.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "op")]
pub enum ClientOp {
    #[serde(rename = "clientCommand")]
    ClientCommand {
        bit: usize,
        seq: i32,
        text: String,
        /// False for a retransmission already seen.
        new: bool,
    },
    #[serde(rename = "move")]
    Move {
        bit: usize,
        /// `clc_moveNoDelta`: the client asks for a full snapshot.
        #[serde(rename = "noDelta")]
        no_delta: bool,
        key: i32,
        cmds: Vec<UserCmd>,
    },
    #[serde(rename = "voip")]
    Voip { bit: usize, opus: bool, size: i16 },
    #[serde(rename = "nop")]
    Nop { bit: usize },
    #[serde(rename = "EOF")]
    Eof { bit: usize },
}

/// A decoded client message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClientMessage {
    #[serde(rename = "serverId")]
    pub server_id: i32,
    #[serde(rename = "messageAcknowledge")]
    pub message_ack: i32,
    #[serde(rename = "reliableAcknowledge")]
    pub reliable_ack: i32,
    pub ops: Vec<ClientOp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ClcError>,
}

/// The three header longs, read from the still-scrambled body as the server does.
pub fn read_header(r: &mut BitReader<'_>) -> Result<(i32, i32, i32), BitError> {
    Ok((r.read_long()?, r.read_long()?, r.read_long()?))
}

/// What the decoder needs from the connection to decode client ops.
pub struct ClcContext<'a> {
    pub checksum_feed: i32,
    /// The server command the packet acknowledges (the usercmd key hashes it).
    pub acked_server_command: &'a [u8],
    /// Highest client command sequence seen so far (to mark retransmissions).
    pub last_client_command: i32,
    /// Keep the decoded usercmds of move ops (off for the flow table: they are still read,
    /// to stay in step and find errors, but a list per move is not built).
    pub keep_usercmds: bool,
}

/// Decode the ops after the three header longs (already read into `hdr`).
pub fn parse_client_ops(
    r: &mut BitReader<'_>,
    hdr: (i32, i32, i32),
    ctx: &ClcContext<'_>,
) -> ClientMessage {
    let (server_id, message_ack, reliable_ack) = hdr;
    let mut m = ClientMessage {
        server_id,
        message_ack,
        reliable_ack,
        ops: Vec::new(),
        error: None,
    };
    let mut last_cmd = ctx.last_client_command;
    loop {
        match parse_op(r, &m, ctx, &mut last_cmd) {
            Ok(op) => {
                let end = matches!(op, ClientOp::Eof { .. });
                m.ops.push(op);
                if end {
                    break;
                }
            }
            Err(e) => {
                m.error = Some(e);
                break;
            }
        }
    }
    m
}

fn parse_op(
    r: &mut BitReader<'_>,
    m: &ClientMessage,
    ctx: &ClcContext<'_>,
    last: &mut i32,
) -> Result<ClientOp, ClcError> {
    let op = r.read_byte()?;
    let bit = r.bit_pos();
    Ok(match op {
        CLC_EOF => ClientOp::Eof { bit },
        CLC_NOP => ClientOp::Nop { bit },
        CLC_CLIENTCOMMAND => {
            let seq = r.read_long()?;
            let text = r.read_string()?;
            let new = seq > *last;
            if new {
                *last = seq;
            }
            ClientOp::ClientCommand {
                bit,
                seq,
                text,
                new,
            }
        }
        CLC_MOVE | CLC_MOVE_NODELTA => {
            let count = r.read_byte()?;
            if !(1..=MAX_PACKET_USERCMDS).contains(&count) {
                return Err(ClcError::CmdCount { count, bit });
            }
            let key = ctx.checksum_feed ^ m.message_ack ^ hash_key(ctx.acked_server_command, 32);
            let mut cmds = Vec::with_capacity(if ctx.keep_usercmds { count as usize } else { 0 });
            let mut from = UserCmd::default();
            for _ in 0..count {
                let c = read_delta_usercmd(r, key, &from)?;
                if ctx.keep_usercmds {
                    cmds.push(c);
                }
                from = c;
            }
            ClientOp::Move {
                bit,
                no_delta: op == CLC_MOVE_NODELTA,
                key,
                cmds,
            }
        }
        CLC_VOIP_SPEEX | CLC_VOIP_OPUS => {
            // generation, sequence, frames, recipients (8 bytes), flags, size, payload
            r.read_byte()?;
            r.read_long()?;
            r.read_byte()?;
            r.read_long()?;
            r.read_long()?;
            r.read_byte()?;
            let size = r.read_short()?;
            if !(0..=4096).contains(&(size as i32)) {
                return Err(ClcError::VoipSize {
                    size: size as i32,
                    bit,
                });
            }
            for _ in 0..size {
                r.read_byte()?;
            }
            ClientOp::Voip {
                bit,
                opus: op == CLC_VOIP_OPUS,
                size,
            }
        }
        _ => return Err(ClcError::BadOp { op, bit }),
    })
}
