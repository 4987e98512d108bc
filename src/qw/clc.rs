//! Client → server messages (spec §7): clc_move with its checksum checked, stringcmd, delta, …
use super::cursor::{DecodeError, Reader, Result};
use super::ext::Ext;
use super::usercmd::{move_checksum, Usercmd};
use serde::Serialize;

/// One client message. The JSON `op` is the clc name without `clc_`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum ClientOp {
    /// `clc_nop` (1): no payload.
    Nop,
    /// `clc_move` (3): the move checksum, the loss byte and three delta-coded usercmds.
    Move {
        /// Checksum byte as sent: `COM_BlockSequenceCRCByte` of the bytes from `loss` to the end of
        /// the third usercmd (at most 60) and the packet's sequence.
        checksum: u8,
        /// The checksum recomputed over the three usercmds and the packet sequence matched.
        checksum_ok: bool,
        /// Packet loss in percent as the client measured it (the scoreboard's PL).
        loss: u8,
        /// Oldest first: the commands of sequences seq−2, seq−1, seq.
        cmds: [Usercmd; 3],
    },
    /// `clc_stringcmd` (4): a console command for the server (`new`, `spawn`, `say`, `drop`, …).
    Stringcmd {
        /// The command line; Quake-charset bytes as chars U+0000–U+00FF (see `qw::charset`).
        text: String,
    },
    /// `clc_delta` (5): asks for the next entity update as a delta from an earlier frame.
    Delta {
        /// Low 8 bits of the s2c sequence whose entities the client last parsed (ezQuake
        /// `cl.validsequence`); the server echoes it as the `from` of `svc_deltapacketentities`.
        from: u8,
    },
    /// `clc_tmove` (6): a spectator's teleport request, sent reliably.
    Tmove {
        /// Destination in world units (1/8-unit int16 coords, float32 under FTE_PEXT_FLOATCOORDS).
        origin: [f32; 3],
    },
    /// `clc_upload` (7): one block of a client → server file upload (the data is skipped).
    Upload {
        /// Bytes of file data in this block.
        size: i16,
        /// Upload progress in percent.
        percent: u8,
    },
    /// `clc_voicechat` (83, FTE_PEXT2_VOICECHAT): one voice frame (the codec data is skipped).
    Voicechat {
        /// Codec in the high nibble, the decoder generation in the low nibble (FTE `S_Voip_Parse`).
        gen: u8,
        /// Sequence number of the voice frame (wraps at 256).
        seq: u8,
        /// Bytes of codec data that followed.
        len: u16,
    },
    /// .qwd dem_cmd block: the command the client sent and its view angles.
    Democmd {
        /// The block's 24-byte `usercmd_t`: the newest command the client sent.
        cmd: Usercmd,
        /// The client's view angles in degrees (pitch, yaw, roll), float32 in the block.
        viewangles: [f32; 3],
    },
}

impl ClientOp {
    /// The engine's name for the message: `clc_*`, or `dem_cmd` for a .qwd command block.
    pub fn name(&self) -> &'static str {
        match self {
            ClientOp::Nop => "clc_nop",
            ClientOp::Move { .. } => "clc_move",
            ClientOp::Stringcmd { .. } => "clc_stringcmd",
            ClientOp::Delta { .. } => "clc_delta",
            ClientOp::Tmove { .. } => "clc_tmove",
            ClientOp::Upload { .. } => "clc_upload",
            ClientOp::Voicechat { .. } => "clc_voicechat",
            ClientOp::Democmd { .. } => "dem_cmd",
        }
    }
}

/// Decode every clc in `r`; `seq` is the packet's outgoing sequence (for the move checksum).
pub fn parse_message(
    r: &mut Reader<'_>,
    seq: u32,
    ext: &Ext,
) -> (Vec<(usize, ClientOp)>, Option<DecodeError>) {
    let mut ops = Vec::new();
    while !r.is_empty() {
        let at = r.pos();
        match parse_op(r, seq, ext) {
            Ok(op) => ops.push((at, op)),
            Err(e) => return (ops, Some(e)),
        }
    }
    (ops, None)
}

fn parse_op(r: &mut Reader<'_>, seq: u32, ext: &Ext) -> Result<ClientOp> {
    let at = r.pos();
    let id = r.u8()?;
    Ok(match id {
        1 => ClientOp::Nop,
        3 => {
            let checksum = r.u8()?;
            let block_start = r.clone();
            let loss = r.u8()?;
            let a = Usercmd::read_delta(r, &Usercmd::default())?;
            let b = Usercmd::read_delta(r, &a)?;
            let c = Usercmd::read_delta(r, &b)?;
            let len = block_start.remaining() - r.remaining();
            let block = block_start.rest().get(..len).unwrap_or(&[]);
            let checksum_ok = move_checksum(block, seq) == checksum;
            ClientOp::Move {
                checksum,
                checksum_ok,
                loss,
                cmds: [a, b, c],
            }
        }
        4 => ClientOp::Stringcmd { text: r.string()? },
        5 => ClientOp::Delta { from: r.u8()? },
        6 => ClientOp::Tmove {
            origin: ext.read_coords(r)?,
        },
        7 => {
            let size = r.i16()?;
            let percent = r.u8()?;
            r.bytes(usize::try_from(size).unwrap_or(0))?;
            ClientOp::Upload { size, percent }
        }
        83 => {
            let gen = r.u8()?;
            let seq = r.u8()?;
            let len = r.u16()?;
            r.bytes(usize::from(len))?;
            ClientOp::Voicechat { gen, seq, len }
        }
        other => {
            return Err(DecodeError {
                what: format!("unknown clc {other}"),
                at,
            })
        }
    })
}
