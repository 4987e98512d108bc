//! Client→server message bodies (q3-protocol.md §5): serverId, messageAcknowledge,
//! reliableAcknowledge, reliable client commands, usercmds, clc_EOF.
use serde::Serialize;

use super::bits::{BitError, BitReader};
use super::cmdring::NO_VERSION;
use super::usercmd::{hash_key, read_delta_usercmd, UserCmd};

/// `clc_bad`: never sent; a bad command byte.
pub const CLC_BAD: u8 = 0;
/// `clc_nop`: no content.
pub const CLC_NOP: u8 = 1;
/// `clc_move`: usercmds; the server may delta the next snapshot from `messageAcknowledge`.
pub const CLC_MOVE: u8 = 2;
/// `clc_moveNoDelta`: usercmds, laid out as `clc_move`; asks for a full snapshot.
pub const CLC_MOVE_NODELTA: u8 = 3;
/// `clc_clientCommand`: a reliable client command (long sequence, string).
pub const CLC_CLIENTCOMMAND: u8 = 4;
/// `clc_EOF`: the end of the message.
pub const CLC_EOF: u8 = 5;
/// `clc_voipSpeex` (ioquake3, protocol 71): legacy Speex voice, laid out as Opus, ignored.
pub const CLC_VOIP_SPEEX: u8 = 6;
/// `clc_voipOpus` (ioquake3, protocol 71): one Opus voice packet for the server to relay.
pub const CLC_VOIP_OPUS: u8 = 7;
/// `MAX_PACKET_USERCMDS`: the most usercmds one move op may carry (its count is 1..=32).
pub const MAX_PACKET_USERCMDS: u8 = 32;

/// Why a client message could not be decoded to its end.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClcError {
    /// A read ran past the end of the message, or met the Huffman NYT code.
    #[error("read past end of client message ({0})")]
    Bits(#[from] BitError),
    /// An op byte that is no `clc_*` op (the server's "bad command byte").
    #[error("bad client command byte {op} at bit {bit}")]
    BadOp {
        /// The op byte read.
        op: u8,
        /// Bit position right after the op byte.
        bit: usize,
    },
    /// A move op's usercmd count outside 1..=[`MAX_PACKET_USERCMDS`].
    #[error("usercmd count {count} (1..32) at bit {bit}")]
    CmdCount {
        /// The count byte read.
        count: u8,
        /// Bit position right after the move op byte (where the count starts).
        bit: usize,
    },
    /// A VoIP payload size outside 0..=4096 bytes.
    #[error("voip packet of {size} bytes at bit {bit}")]
    VoipSize {
        /// The payload size as read (a signed short).
        size: i32,
        /// Bit position right after the voip op byte.
        bit: usize,
    },
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
    /// `clc_clientCommand`: a reliable client command (`userinfo`, `say`, `cp`, ...).
    #[serde(
        rename = "clientCommand",
        serialize_with = "super::color::command_json"
    )]
    ClientCommand {
        /// Bit position right after the op byte.
        bit: usize,
        /// The command's reliable sequence number (the client's `reliableSequence`).
        seq: i32,
        /// The command text as `MSG_ReadString` gives it (at most 1023 chars, `%` and bytes
        /// above 127 read as `.`).
        text: String,
        /// False for a retransmission already seen; `None` when unknown (mid-session,
        /// before the server's count of received commands is known).
        new: Option<bool>,
    },
    /// `clc_move` or `clc_moveNoDelta`: the usercmds.
    #[serde(rename = "move")]
    Move {
        /// Bit position right after the op byte.
        bit: usize,
        /// `clc_moveNoDelta`: the client asks for a full snapshot.
        #[serde(rename = "noDelta")]
        no_delta: bool,
        /// `None` when unknown (mid-session before a gamestate: the checksumFeed is).
        key: Option<i32>,
        /// The usercmds, oldest first, each a delta from the one before (the first from
        /// zero); empty unless [`ClcContext::keep_usercmds`].
        cmds: Vec<UserCmd>,
    },
    /// `clc_voipSpeex` or `clc_voipOpus` (protocol 71); its content is skipped.
    #[serde(rename = "voip")]
    Voip {
        /// Bit position right after the op byte.
        bit: usize,
        /// True for `clc_voipOpus`.
        opus: bool,
        /// Payload bytes, 0..=4096.
        size: i16,
    },
    /// `clc_nop`.
    #[serde(rename = "nop")]
    Nop {
        /// Bit position right after the op byte.
        bit: usize,
    },
    /// `clc_EOF`: the end of the message.
    #[serde(rename = "EOF")]
    Eof {
        /// Bit position right after the op byte.
        bit: usize,
    },
}

/// A decoded client message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClientMessage {
    /// `serverId`: the client's `cl.serverId` (`sv_serverid` of the systeminfo it last got;
    /// 0 before its first gamestate). The server ignores a packet whose id is stale.
    #[serde(rename = "serverId")]
    pub server_id: i32,
    /// `messageAcknowledge`: netchan sequence of the last server message the client
    /// received (`clc.serverMessageSequence`): after `clc_move`, the server's delta base.
    #[serde(rename = "messageAcknowledge")]
    pub message_ack: i32,
    /// `reliableAcknowledge`: the highest server command sequence the client received
    /// (`clc.serverCommandSequence`).
    #[serde(rename = "reliableAcknowledge")]
    pub reliable_ack: i32,
    /// The ops in message order, up to `clc_EOF` or the error.
    pub ops: Vec<ClientOp>,
    /// Not in JSON: the message's own `error` (with its position) says it.
    #[serde(skip)]
    pub error: Option<ClcError>,
}

/// The three header longs, read from the still-scrambled body as the server does.
/// Inlined: it is part of every client message's decode, and the key searches call it too.
#[inline(always)]
pub fn read_header(r: &mut BitReader<'_>) -> Result<(i32, i32, i32), BitError> {
    Ok((r.read_long()?, r.read_long()?, r.read_long()?))
}

/// What the decoder needs from the connection to decode client ops.
pub struct ClcContext<'a> {
    /// The `checksumFeed` of the last gamestate (part of the usercmd key).
    pub checksum_feed: i32,
    /// The server command the packet acknowledges (the usercmd key hashes it).
    pub acked_server_command: &'a [u8],
    /// Highest client command sequence seen so far (to mark retransmissions); `None`
    /// when unknown (mid-session).
    pub last_client_command: Option<i32>,
    /// Keep the decoded usercmds of move ops (off for the flow table: they are still read,
    /// to stay in step and find errors, but a list per move is not built).
    pub keep_usercmds: bool,
    /// Stop at the first move op, as if the message ended there ([`walk_client_ops`] only):
    /// a client sends its reliable commands before its moves, so a reader that wants the
    /// commands alone (the game events) skips decoding the usercmds.
    pub commands_only: bool,
    /// The usercmd key is unknown (mid-session, no gamestate yet: checksumFeed): keyed
    /// values are marked unknown in the usercmds, unless the delta inherits them from a
    /// known value (a field absent from the first command of a move is zero).
    pub key_unknown: bool,
}

/// Decode the ops after the three header longs (already read into `hdr`).
pub fn parse_client_ops(
    r: &mut BitReader<'_>,
    hdr: (i32, i32, i32),
    ctx: &ClcContext<'_>,
) -> ClientMessage {
    let (server_id, message_ack, reliable_ack) = hdr;
    let mut ops = Vec::new();
    let key_hash = hash_key(ctx.acked_server_command, 32);
    let mut scratch = ClcScratch::default();
    let error = walk_client_ops(r, hdr, ctx, key_hash, &mut scratch, |op| {
        ops.push(op.owned())
    });
    ClientMessage {
        server_id,
        message_ack,
        reliable_ack,
        ops,
        error,
    }
}

/// A client op as [`walk_client_ops`] meets it, borrowing the walk's buffers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OpView<'a> {
    /// `clc_clientCommand` (see [`ClientOp::ClientCommand`]).
    ClientCommand {
        /// Bit position right after the op byte.
        bit: usize,
        /// The command's reliable sequence number.
        seq: i32,
        /// ASCII (the string reader maps every other byte to `.`).
        text: &'a [u8],
        /// False for a retransmission already seen; `None` when unknown (mid-session).
        new: Option<bool>,
    },
    /// `clc_move` or `clc_moveNoDelta` (see [`ClientOp::Move`]).
    Move {
        /// Bit position right after the op byte.
        bit: usize,
        /// `clc_moveNoDelta`: the client asks for a full snapshot.
        no_delta: bool,
        /// The usercmd base key, `checksumFeed ^ messageAcknowledge ^ HashKey(acknowledged
        /// server command, 32)` (each usercmd XORs its serverTime in); `None` when unknown.
        key: Option<i32>,
        /// Empty unless [`ClcContext::keep_usercmds`].
        cmds: &'a [UserCmd],
    },
    /// `clc_voipSpeex` or `clc_voipOpus` (protocol 71); its content is skipped.
    Voip {
        /// Bit position right after the op byte.
        bit: usize,
        /// True for `clc_voipOpus`.
        opus: bool,
        /// Payload bytes, 0..=4096.
        size: i16,
    },
    /// `clc_nop`.
    Nop {
        /// Bit position right after the op byte.
        bit: usize,
    },
    /// `clc_EOF`, or the first move op with [`ClcContext::commands_only`].
    Eof {
        /// Bit position right after the op byte.
        bit: usize,
    },
}

impl OpView<'_> {
    /// The op as [`parse_client_ops`] reports it.
    pub fn owned(&self) -> ClientOp {
        match *self {
            OpView::ClientCommand {
                bit,
                seq,
                text,
                new,
            } => ClientOp::ClientCommand {
                bit,
                seq,
                text: ascii_string(text),
                new,
            },
            OpView::Move {
                bit,
                no_delta,
                key,
                cmds,
            } => ClientOp::Move {
                bit,
                no_delta,
                key,
                cmds: cmds.to_vec(),
            },
            OpView::Voip { bit, opus, size } => ClientOp::Voip { bit, opus, size },
            OpView::Nop { bit } => ClientOp::Nop { bit },
            OpView::Eof { bit } => ClientOp::Eof { bit },
        }
    }
}

/// The text of a client command (ASCII by construction, so nothing is ever lost).
pub fn ascii_string(text: &[u8]) -> String {
    String::from_utf8_lossy(text).into_owned()
}

/// `hash_key(s, 32)` of the last string asked for: the acknowledged server command that
/// keys the usercmds changes rarely, and only its first 32 bytes count.
#[derive(Debug, Default, Clone)]
pub struct KeyHashCache {
    /// The (at most 32) bytes `hash` belongs to; empty hashes to 0, the default.
    s: Vec<u8>,
    hash: i32,
    /// The [`super::cmdring`] version of the text `s` was cut from ([`NO_VERSION`]: none).
    version: u64,
}

impl KeyHashCache {
    /// The hash of `s`, whose `cmdring` version is `version` (`NO_VERSION`:
    /// unknown): the same version as the last call's means the same text, not read again.
    pub fn get(&mut self, s: &[u8], version: u64) -> i32 {
        if version != NO_VERSION && version == self.version {
            return self.hash;
        }
        self.version = version;
        let s = s.get(..32).unwrap_or(s);
        if self.s != s {
            self.s.clear();
            self.s.extend_from_slice(s);
            self.hash = hash_key(s, 32);
        }
        self.hash
    }
}

/// Buffers a walk reuses: a caller that walks message after message (the flow table)
/// allocates nothing per message.
#[derive(Debug, Default, Clone)]
pub struct ClcScratch {
    text: Vec<u8>,
    cmds: Vec<UserCmd>,
}

/// Walk the ops after the header longs, handing each to `visit`; returns why the walk
/// stopped early, if it did. `key_hash` is `hash_key(ctx.acked_server_command, 32)`, which a
/// caller may keep between messages. Every bit is read and checked as for
/// [`parse_client_ops`], which is this walk collecting the ops.
pub fn walk_client_ops(
    r: &mut BitReader<'_>,
    hdr: (i32, i32, i32),
    ctx: &ClcContext<'_>,
    key_hash: i32,
    scratch: &mut ClcScratch,
    mut visit: impl FnMut(OpView<'_>),
) -> Option<ClcError> {
    let mut last_cmd = ctx.last_client_command;
    let base_key = ctx.checksum_feed ^ hdr.1 ^ key_hash;
    let mut moved = false;
    loop {
        if moved && ends_here(r) {
            return None;
        }
        match parse_op(r, ctx, base_key, &mut last_cmd, scratch) {
            Ok(op) => {
                let end = matches!(op, OpView::Eof { .. });
                moved = matches!(op, OpView::Move { .. });
                visit(op);
                if end {
                    return None;
                }
            }
            Err(e) => return Some(e),
        }
    }
}

/// The message ends right after the usercmds, without `clc_EOF` (an aimbot proxy writes
/// them so): the server reads nothing after the usercmds (`SV_ExecuteClientMessage` stops
/// at the move), so it takes such a message whole, and so does the decoder. Anything else
/// after the usercmds is read on as before.
fn ends_here(r: &mut BitReader<'_>) -> bool {
    let at = r.bit_pos();
    let end = r.read_byte().is_err();
    r.set_bit_pos(at);
    end
}

#[inline(always)]
fn parse_op<'s>(
    r: &mut BitReader<'_>,
    ctx: &ClcContext<'_>,
    key: i32,
    last: &mut Option<i32>,
    scratch: &'s mut ClcScratch,
) -> Result<OpView<'s>, ClcError> {
    let op = r.read_byte()?;
    let bit = r.bit_pos();
    Ok(match op {
        CLC_EOF => OpView::Eof { bit },
        CLC_NOP => OpView::Nop { bit },
        CLC_CLIENTCOMMAND => {
            let seq = r.read_long()?;
            r.read_string_into(&mut scratch.text)?;
            let new = last.map(|l| seq > l);
            if new == Some(true) {
                *last = Some(seq);
            }
            OpView::ClientCommand {
                bit,
                seq,
                text: &scratch.text,
                new,
            }
        }
        CLC_MOVE | CLC_MOVE_NODELTA if ctx.commands_only => OpView::Eof { bit },
        CLC_MOVE | CLC_MOVE_NODELTA => {
            let count = r.read_byte()?;
            if !(1..=MAX_PACKET_USERCMDS).contains(&count) {
                return Err(ClcError::CmdCount { count, bit });
            }
            scratch.cmds.clear();
            let mut from = UserCmd::default();
            if ctx.key_unknown {
                // Unknown key: each command is read with two complementary keys; a value
                // that comes out the same both ways does not depend on the key.
                let mut from_not = UserCmd::default();
                for _ in 0..count {
                    let at = r.bit_pos();
                    let not = read_delta_usercmd(r, !key, &from_not)?;
                    r.set_bit_pos(at);
                    let mut c = read_delta_usercmd(r, key, &from)?;
                    c.unknown = c.differing(&not);
                    from_not = not;
                    if ctx.keep_usercmds {
                        scratch.cmds.push(c);
                    }
                    c.unknown = 0;
                    from = c;
                }
            } else {
                for _ in 0..count {
                    let c = read_delta_usercmd(r, key, &from)?;
                    if ctx.keep_usercmds {
                        scratch.cmds.push(c);
                    }
                    from = c;
                }
            }
            OpView::Move {
                bit,
                no_delta: op == CLC_MOVE_NODELTA,
                key: (!ctx.key_unknown).then_some(key),
                cmds: &scratch.cmds,
            }
        }
        CLC_VOIP_SPEEX | CLC_VOIP_OPUS => {
            let size = read_voip(r, bit)?;
            OpView::Voip {
                bit,
                opus: op == CLC_VOIP_OPUS,
                size,
            }
        }
        _ => return Err(ClcError::BadOp { op, bit }),
    })
}

/// The rest of a voip op (protocol 71), skipped: generation, sequence, frames, recipients
/// (8 bytes), flags, then the payload size and payload. Returns the size.
fn read_voip(r: &mut BitReader<'_>, bit: usize) -> Result<i16, ClcError> {
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
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::q3::bits::BitWriter;
    use crate::q3::usercmd::write_delta_usercmd;
    use proptest::prelude::*;

    /// The op decoder as it was before the walk (collecting ops, a String per command): the
    /// reference the walk must match.
    fn reference_parse(
        r: &mut BitReader<'_>,
        hdr: (i32, i32, i32),
        ctx: &ClcContext<'_>,
    ) -> ClientMessage {
        let mut m = ClientMessage {
            server_id: hdr.0,
            message_ack: hdr.1,
            reliable_ack: hdr.2,
            ops: Vec::new(),
            error: None,
        };
        let mut last = ctx.last_client_command;
        loop {
            // The server's end: a message may stop right after its usercmds.
            if matches!(m.ops.last(), Some(ClientOp::Move { .. })) {
                let at = r.bit_pos();
                if r.read_byte().is_err() {
                    r.set_bit_pos(at);
                    break;
                }
                r.set_bit_pos(at);
            }
            match reference_op(r, &m, ctx, &mut last) {
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

    fn reference_op(
        r: &mut BitReader<'_>,
        m: &ClientMessage,
        ctx: &ClcContext<'_>,
        last: &mut Option<i32>,
    ) -> Result<ClientOp, ClcError> {
        let op = r.read_byte()?;
        let bit = r.bit_pos();
        Ok(match op {
            CLC_EOF => ClientOp::Eof { bit },
            CLC_NOP => ClientOp::Nop { bit },
            CLC_CLIENTCOMMAND => {
                let seq = r.read_long()?;
                let text = r.read_string()?;
                let new = last.map(|l| seq > l);
                if new == Some(true) {
                    *last = Some(seq);
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
                let key =
                    ctx.checksum_feed ^ m.message_ack ^ hash_key(ctx.acked_server_command, 32);
                let mut cmds = Vec::new();
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
                    key: Some(key),
                    cmds,
                }
            }
            CLC_VOIP_SPEEX | CLC_VOIP_OPUS => {
                let size = read_voip(r, bit)?;
                ClientOp::Voip {
                    bit,
                    opus: op == CLC_VOIP_OPUS,
                    size,
                }
            }
            _ => return Err(ClcError::BadOp { op, bit }),
        })
    }

    /// One op to write: (kind, sequence or count, text, usercmd seed).
    type OpSpec = (u8, i32, Vec<u8>, Vec<(i32, i32, u8)>);

    fn op_strategy() -> impl Strategy<Value = OpSpec> {
        (
            0u8..8,
            -3i32..40,
            proptest::collection::vec(any::<u8>(), 0..30),
            proptest::collection::vec((0i32..300, any::<i32>(), any::<u8>()), 1..5),
        )
    }

    /// A client message body from `ops`, then cut to `cut` bytes and with `flip` bits
    /// flipped, so walks end everywhere: at EOF, in every field, on bad ops and counts.
    fn message(hdr: (i32, i32, i32), ops: &[OpSpec], cut: usize, flips: &[usize]) -> Vec<u8> {
        let mut w = BitWriter::new();
        w.write_long(hdr.0);
        w.write_long(hdr.1);
        w.write_long(hdr.2);
        for (kind, n, text, cmds) in ops {
            match kind {
                0 | 1 => {
                    w.write_byte(CLC_CLIENTCOMMAND);
                    w.write_long(*n);
                    let t: Vec<u8> = text.iter().map(|&c| c.max(1)).collect();
                    w.write_raw_bytes_huffman(&t);
                    w.write_byte(0);
                }
                2 | 3 => {
                    w.write_byte(if *kind == 2 {
                        CLC_MOVE
                    } else {
                        CLC_MOVE_NODELTA
                    });
                    w.write_byte(cmds.len() as u8);
                    let mut from = UserCmd::default();
                    for &(dt, a, b) in cmds {
                        let to = UserCmd {
                            server_time: from.server_time.wrapping_add(dt),
                            angles: [a & 0xffff, (a >> 16) & 0xffff, i32::from(b)],
                            forwardmove: (b as i8).max(-127),
                            buttons: i32::from(b) * 3,
                            weapon: b / 2,
                            ..from
                        };
                        write_delta_usercmd(&mut w, hdr.1 ^ a, &from, &to);
                        from = to;
                    }
                }
                4 => w.write_byte(CLC_NOP),
                5 => {
                    w.write_byte(CLC_VOIP_OPUS);
                    for _ in 0..3 {
                        w.write_long(*n);
                    }
                    w.write_byte(0);
                    w.write_short((*n * 2) as i16);
                    for &c in text.iter().take((*n * 2).max(0) as usize) {
                        w.write_byte(c);
                    }
                }
                6 => w.write_byte(text.first().copied().unwrap_or(9)),
                _ => w.write_byte(CLC_EOF),
            }
        }
        w.write_byte(CLC_EOF);
        let mut b = w.finish();
        b.truncate(cut.max(12));
        let len = b.len().max(1);
        for &f in flips {
            if let Some(x) = b.get_mut((f / 8) % len) {
                *x ^= 1 << (f % 8);
            }
        }
        b
    }

    /// A client command as the walk saw it: sequence, text, new.
    type Seen = (i32, String, Option<bool>);

    /// The walk, as the flow table runs it (no usercmd list, commands seen as they come).
    fn lean_walk(
        body: &[u8],
        ctx: &ClcContext<'_>,
        scratch: &mut ClcScratch,
    ) -> (Option<ClcError>, Vec<Seen>, usize) {
        let mut r = BitReader::new(body);
        let Ok(hdr) = read_header(&mut r) else {
            return (None, Vec::new(), 0);
        };
        let mut cmds = Vec::new();
        let hash = KeyHashCache::default().get(ctx.acked_server_command, NO_VERSION);
        let error = walk_client_ops(&mut r, hdr, ctx, hash, scratch, |op| {
            if let OpView::ClientCommand { seq, text, new, .. } = op {
                cmds.push((seq, ascii_string(text), new));
            }
        });
        (error, cmds, r.bit_pos())
    }

    proptest! {
        #[test]
        fn walk_matches_the_reference_decoder(
            ops in proptest::collection::vec(op_strategy(), 0..6),
            cut in 0usize..400,
            flips in proptest::collection::vec(0usize..3200, 0..3),
            acked in proptest::collection::vec(any::<u8>(), 0..50),
            feed in any::<i32>(),
            last in -2i32..20,
        ) {
            let hdr = (7, 1234, 5);
            let body = message(hdr, &ops, cut, &flips);
            let mut scratch = ClcScratch::default();
            for keep in [true, false] {
                let ctx = ClcContext {
                    checksum_feed: feed,
                    acked_server_command: &acked,
                    last_client_command: Some(last),
                    keep_usercmds: keep,
                    commands_only: false,
                    key_unknown: false,
                };
                let mut r = BitReader::new(&body);
                let mut want = None;
                let mut want_end = 0;
                if let Ok(h) = read_header(&mut r) {
                    want = Some(reference_parse(&mut r, h, &ctx));
                    want_end = r.bit_pos();
                }
                let mut r = BitReader::new(&body);
                if let Ok(h) = read_header(&mut r) {
                    prop_assert_eq!(Some(parse_client_ops(&mut r, h, &ctx)), want.clone());
                    prop_assert_eq!(r.bit_pos(), want_end);
                }
                // The lean walk: same commands, error and end position.
                let (error, cmds, end) = lean_walk(&body, &ctx, &mut scratch);
                let want_cmds: Vec<_> = want.iter().flat_map(|m| &m.ops).filter_map(|op| match op {
                    ClientOp::ClientCommand { seq, text, new, .. } => Some((*seq, text.clone(), *new)),
                    _ => None,
                }).collect();
                prop_assert_eq!(cmds, want_cmds);
                prop_assert_eq!(error, want.and_then(|m| m.error));
                prop_assert_eq!(end, want_end);
            }
        }

        #[test]
        fn string_into_matches_read_string(
            data in proptest::collection::vec(any::<u8>(), 0..64),
            start in 0usize..100,
        ) {
            let mut a = BitReader::new(&data);
            a.set_bit_pos(start);
            let mut b = a.clone();
            let mut out = vec![b'x'; 3];
            let got = b.read_string_into(&mut out).map(|()| ascii_string(&out));
            prop_assert_eq!(got, a.read_string());
            prop_assert_eq!(a.bit_pos(), b.bit_pos());
        }
    }

    #[test]
    fn string_into_keeps_the_length_rule() {
        // 1100 'a's: 1023 kept, the 1024th read, the rest left unread, as read_string does.
        let mut w = BitWriter::new();
        w.write_raw_bytes_huffman(&[b'a'; 1100]);
        w.write_byte(0);
        let body = w.finish();
        let mut a = BitReader::new(&body);
        let mut b = a.clone();
        let mut out = Vec::new();
        b.read_string_into(&mut out).unwrap();
        assert_eq!(ascii_string(&out), a.read_string().unwrap());
        assert_eq!(out.len(), 1023);
        assert_eq!(a.bit_pos(), b.bit_pos());
    }

    #[test]
    fn key_hash_cache_follows_the_string() {
        let mut c = KeyHashCache::default();
        for s in [
            &b""[..],
            b"cs 1 x",
            b"cs 1 x",
            b"",
            b"a%\xff",
            &[b'q'; 40],
            &[b'q'; 33],
        ] {
            assert_eq!(c.get(s, NO_VERSION), hash_key(s, 32));
        }
    }

    #[test]
    fn key_hash_cache_follows_the_ring_versions() {
        use super::super::cmdring::CommandRing;
        let mut ring = CommandRing::default();
        let mut c = KeyHashCache::default();
        let check = |c: &mut KeyHashCache, ring: &CommandRing, seq: i32| {
            let (text, v) = ring.keyed(seq);
            assert_eq!(
                c.get(text.as_bytes(), v),
                hash_key(text.as_bytes(), 32),
                "{text:?}"
            );
        };
        check(&mut c, &ring, 3);
        for (seq, text) in [
            (3, "cs 1 x"),
            (4, "print hi"),
            (3, "cs 1 y"),
            (3 + 64, "cs 1 y"),
        ] {
            check(&mut c, &ring, seq);
            ring.set(seq, text.into());
            check(&mut c, &ring, seq);
            check(&mut c, &ring, seq);
            check(&mut c, &ring, seq - 1);
            check(&mut c, &ring, seq);
        }
        ring.set_lossy(3, b"a%\xff");
        check(&mut c, &ring, 3);
    }
}
