//! Entity states and the entity delta (spec §6.4): `svc_packetentities`,
//! `svc_deltapacketentities`, and the SPAWNSTATIC2 baselines/statics that use the same fields.
use super::cursor::{Reader, Result};
use super::ext::{self, Ext};
use serde::Serialize;

pub const U_ORIGIN1: u16 = 1 << 9;
pub const U_ORIGIN2: u16 = 1 << 10;
pub const U_ORIGIN3: u16 = 1 << 11;
pub const U_ANGLE2: u16 = 1 << 12;
pub const U_FRAME: u16 = 1 << 13;
pub const U_REMOVE: u16 = 1 << 14;
pub const U_MOREBITS: u16 = 1 << 15;
// more-bits byte
pub const U_ANGLE1: u8 = 1;
pub const U_ANGLE3: u8 = 2;
pub const U_MODEL: u8 = 4;
pub const U_COLORMAP: u8 = 8;
pub const U_SKIN: u8 = 16;
pub const U_EFFECTS: u8 = 32;
pub const U_FTE_EVENMORE: u8 = 128;
// evenmore bits (FTE)
pub const U_FTE_TRANS: u16 = 2;
pub const U_FTE_MODELDBL: u16 = 8;
pub const U_FTE_ENTITYDBL: u16 = 32;
pub const U_FTE_ENTITYDBL2: u16 = 64;
pub const U_FTE_YETMORE: u16 = 128;
pub const U_FTE_COLOURMOD: u16 = 1 << 10;

/// Most entities in one frame we accept (MAX_MVD_PACKET_ENTITIES in ezQuake is 300).
pub const MAX_PACKET_ENTITIES: usize = 300;
/// Entity numbers are below 2048 (ENTITYDBL2).
pub const MAX_EDICTS: usize = 2048;

/// One entity, absolute.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct EntityState {
    pub num: u16,
    pub model: u16,
    pub frame: u8,
    pub colormap: u8,
    pub skin: u8,
    pub effects: u8,
    pub origin: [f32; 3],
    pub angles: [f32; 3],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alpha: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub colourmod: Option<[u8; 3]>,
}

/// Read the flag bytes after the word: (more-bits byte, evenmore bits).
/// ezQuake reads the evenmore byte whenever any FTE extension is on (`CL_ParseDelta`).
fn read_flags(r: &mut Reader<'_>, word: u16, ext: &Ext) -> Result<(u8, u16)> {
    let mut more = 0u8;
    let mut even = 0u16;
    if word & U_MOREBITS != 0 {
        more = r.u8()?;
        if more & U_FTE_EVENMORE != 0 && ext.fte != 0 {
            even = u16::from(r.u8()?);
            if even & U_FTE_YETMORE != 0 {
                even |= u16::from(r.u8()?) << 8;
            }
        }
    }
    Ok((more, even))
}

/// Entity number encoded by `word` and, with ENTITYDBL, the flag bytes (peeked, not consumed).
pub fn peek_number(r: &Reader<'_>, word: u16, ext: &Ext) -> u16 {
    let mut num = word & 511;
    if word & U_MOREBITS != 0 && ext.fte(ext::FTE_ENTITYDBL) {
        let mut p = r.clone();
        if let Ok(m) = p.u8() {
            if m & U_FTE_EVENMORE != 0 {
                if let Ok(e) = p.u8() {
                    if u16::from(e) & U_FTE_ENTITYDBL != 0 {
                        num += 512;
                    }
                    if u16::from(e) & U_FTE_ENTITYDBL2 != 0 {
                        num += 1024;
                    }
                }
            }
        }
    }
    num
}

/// Skip the flag bytes of a removal word (ezQuake: with ENTITYDBL, a more-bits byte and, if it
/// has EVENMORE, one more byte).
pub fn skip_remove_flags(r: &mut Reader<'_>, word: u16, ext: &Ext) -> Result<()> {
    if word & U_MOREBITS != 0 && ext.fte(ext::FTE_ENTITYDBL) && r.u8()? & U_FTE_EVENMORE != 0 {
        r.u8()?;
    }
    Ok(())
}

/// Apply the fields announced by `word` to `from` (ezQuake `CL_ParseDelta`).
pub fn read_delta(
    r: &mut Reader<'_>,
    from: &EntityState,
    word: u16,
    ext: &Ext,
) -> Result<EntityState> {
    let mut to = *from;
    let (more, even) = read_flags(r, word, ext)?;
    let mut num = word & 511;
    if more & U_MODEL != 0 {
        to.model = u16::from(r.u8()?);
        if even & U_FTE_MODELDBL != 0 {
            to.model += 256;
        }
    } else if even & U_FTE_MODELDBL != 0 {
        to.model = r.u16()?;
    }
    if word & U_FRAME != 0 {
        to.frame = r.u8()?;
    }
    if more & U_COLORMAP != 0 {
        to.colormap = r.u8()?;
    }
    if more & U_SKIN != 0 {
        to.skin = r.u8()?;
    }
    if more & U_EFFECTS != 0 {
        to.effects = r.u8()?;
    }
    if word & U_ORIGIN1 != 0 {
        to.origin[0] = ext.read_origin(r)?;
    }
    if more & U_ANGLE1 != 0 {
        to.angles[0] = ext.read_angle(r)?;
    }
    if word & U_ORIGIN2 != 0 {
        to.origin[1] = ext.read_origin(r)?;
    }
    if word & U_ANGLE2 != 0 {
        to.angles[1] = ext.read_angle(r)?;
    }
    if word & U_ORIGIN3 != 0 {
        to.origin[2] = ext.read_origin(r)?;
    }
    if more & U_ANGLE3 != 0 {
        to.angles[2] = ext.read_angle(r)?;
    }
    if even & U_FTE_TRANS != 0 && ext.fte(ext::FTE_TRANS) {
        to.alpha = Some(r.u8()?);
    }
    if even & U_FTE_COLOURMOD != 0 && ext.fte(ext::FTE_COLOURMOD) {
        to.colourmod = Some([r.u8()?, r.u8()?, r.u8()?]);
    }
    if even & U_FTE_ENTITYDBL != 0 {
        num += 512;
    }
    if even & U_FTE_ENTITYDBL2 != 0 {
        num += 1024;
    }
    to.num = num;
    Ok(to)
}

/// The result of one packet-entities message.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PacketEntities {
    /// The `from` byte of a delta update.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<u8>,
    /// Full s2c sequence of the frame used as delta base, when it was found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_seq: Option<u32>,
    /// Entities that this message changed or added, absolute after the delta.
    pub entities: Vec<EntityState>,
    /// Entity numbers this message removed.
    pub removed: Vec<u16>,
    /// Number of entities in the resulting frame.
    pub count: usize,
    /// Decoded against a stand-in base (the real one is missing from the capture), or against
    /// a frame that was: values may be off until the entities are updated again.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub approximate: bool,
    /// A delta whose base frame is not held: read and dropped (no entity values).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub base_missing: bool,
}

/// Merge `old` (sorted, the base frame; empty for a full update) with the update words
/// (ezQuake `CL_ParsePacketEntities`). Returns the message summary and the new frame.
pub fn read_packet_entities(
    r: &mut Reader<'_>,
    old: &[EntityState],
    baselines: &[EntityState],
    full: bool,
    ext: &Ext,
) -> Result<(PacketEntities, Vec<EntityState>)> {
    let mut pe = PacketEntities::default();
    let mut new: Vec<EntityState> = Vec::with_capacity(old.len() + 8);
    let mut oi = 0usize;
    loop {
        let at = r.pos();
        let word = r.u16()?;
        if word == 0 {
            new.extend_from_slice(old.get(oi..).unwrap_or(&[]));
            break;
        }
        let newnum = peek_number(r, word, ext);
        loop {
            match old.get(oi) {
                Some(o) if o.num < newnum => {
                    if full {
                        return Err(r.err("old entity copied on a full update"));
                    }
                    new.push(*o);
                    oi += 1;
                }
                _ => break,
            }
        }
        let same = old.get(oi).filter(|o| o.num == newnum).copied();
        if word & U_REMOVE != 0 {
            skip_remove_flags(r, word, ext)?;
            if full {
                return Err(super::cursor::DecodeError {
                    what: "U_REMOVE on a full update".into(),
                    at,
                });
            }
            if same.is_some() {
                oi += 1;
            }
            pe.removed.push(newnum);
            continue;
        }
        if new.len() >= MAX_PACKET_ENTITIES {
            return Err(r.err("more than 300 entities in a frame"));
        }
        let base = match same {
            Some(o) => {
                oi += 1;
                o
            }
            None => baselines
                .get(usize::from(newnum))
                .copied()
                .unwrap_or_default(),
        };
        let e = read_delta(r, &base, word, ext)?;
        pe.entities.push(e);
        new.push(e);
    }
    pe.count = new.len();
    Ok((pe, new))
}
