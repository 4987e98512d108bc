//! Entity states and the entity delta (spec §6.4): `svc_packetentities`,
//! `svc_deltapacketentities`, and the SPAWNSTATIC2 baselines/statics that use the same fields.
use super::cursor::{Reader, Result};
use super::ext::{self, Ext};
use serde::Serialize;

/// Update word (bits 0–8: entity number): `origin[0]` follows (a coord, or float32 under
/// MVD_PEXT1_FLOATCOORDS).
pub const U_ORIGIN1: u16 = 1 << 9;
/// Update word: `origin[1]` follows.
pub const U_ORIGIN2: u16 = 1 << 10;
/// Update word: `origin[2]` follows.
pub const U_ORIGIN3: u16 = 1 << 11;
/// Update word: `angles[1]` (yaw) follows.
pub const U_ANGLE2: u16 = 1 << 12;
/// Update word: the frame byte follows.
pub const U_FRAME: u16 = 1 << 13;
/// Update word: the entity leaves the frame; no fields follow (delta updates only).
pub const U_REMOVE: u16 = 1 << 14;
/// Update word: a more-bits byte (`U_ANGLE1` … `U_FTE_EVENMORE`) follows the word.
pub const U_MOREBITS: u16 = 1 << 15;
// more-bits byte
/// More-bits byte: `angles[0]` (pitch) follows.
pub const U_ANGLE1: u8 = 1;
/// More-bits byte: `angles[2]` (roll) follows.
pub const U_ANGLE3: u8 = 2;
/// More-bits byte: the model index byte follows.
pub const U_MODEL: u8 = 4;
/// More-bits byte: the colormap byte follows.
pub const U_COLORMAP: u8 = 8;
/// More-bits byte: the skin byte follows.
pub const U_SKIN: u8 = 16;
/// More-bits byte: the effects byte (`EF_*`) follows.
pub const U_EFFECTS: u8 = 32;
/// More-bits byte: an FTE evenmore byte follows (read only when some FTE extension is on).
pub const U_FTE_EVENMORE: u8 = 128;
// evenmore bits (FTE)
/// Evenmore bits: an alpha byte follows (FTE_PEXT_TRANS).
pub const U_FTE_TRANS: u16 = 2;
/// Evenmore bits (FTE_PEXT_MODELDBL): with `U_MODEL` the model byte is +256, without it a 16-bit
/// model index follows.
pub const U_FTE_MODELDBL: u16 = 8;
/// Evenmore bits: add 512 to the entity number (FTE_PEXT_ENTITYDBL).
pub const U_FTE_ENTITYDBL: u16 = 32;
/// Evenmore bits: add 1024 to the entity number (FTE_PEXT_ENTITYDBL2).
pub const U_FTE_ENTITYDBL2: u16 = 64;
/// Evenmore bits: a second evenmore byte follows (bits 8–15 of these flags).
pub const U_FTE_YETMORE: u16 = 128;
/// Evenmore bits (second byte): colour modulation bytes r, g, b follow (FTE_PEXT_COLOURMOD).
pub const U_FTE_COLOURMOD: u16 = 1 << 10;

/// Most entities in one frame we accept (MAX_MVD_PACKET_ENTITIES in ezQuake is 300).
pub const MAX_PACKET_ENTITIES: usize = 300;
/// Entity numbers are below 2048 (ENTITYDBL2).
pub const MAX_EDICTS: usize = 2048;

/// One entity, absolute.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct EntityState {
    /// Entity number below 2048 (0 is the world; player slot `i` is entity `i + 1`).
    pub num: u16,
    /// Index into the model precache (`svc_modellist`; 1 is the map), 0 for none.
    pub model: u16,
    /// Animation frame of the model.
    pub frame: u8,
    /// 0 for the model's own colours, else 1 + the player slot whose colours it wears.
    pub colormap: u8,
    /// Skin number of the model.
    pub skin: u8,
    /// `EF_*` bits: 1 brightfield, 2 muzzleflash, 4 brightlight, 8 dimlight, 16/32 flags, 64 blue,
    /// 128 red.
    pub effects: u8,
    /// Position in world units (x, y, z).
    pub origin: [f32; 3],
    /// Orientation in degrees (pitch, yaw, roll).
    pub angles: [f32; 3],
    /// Opacity × 255 from `U_FTE_TRANS` (FTE_PEXT_TRANS); `None` while never sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alpha: Option<u8>,
    /// Colour modulation bytes r, g, b from `U_FTE_COLOURMOD` (FTE_PEXT_COLOURMOD); `None` while
    /// never sent.
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
        if more & U_FTE_EVENMORE != 0 && ext.any_fte_asked(r) {
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
    if word & U_MOREBITS != 0 && ext.fte_asked(r, ext::FTE_ENTITYDBL) {
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
    if word & U_MOREBITS != 0
        && ext.fte_asked(r, ext::FTE_ENTITYDBL)
        && r.u8()? & U_FTE_EVENMORE != 0
    {
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
    if even & U_FTE_TRANS != 0 && ext.fte_asked(r, ext::FTE_TRANS) {
        to.alpha = Some(r.u8()?);
    }
    if even & U_FTE_COLOURMOD != 0 && ext.fte_asked(r, ext::FTE_COLOURMOD) {
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

/// Write the delta from `from` to `to`, the inverse of [`read_delta`] (mvdsv
/// `SV_WriteDelta`'s layout): the word, the more-bits byte, the FTE evenmore byte(s), then the
/// changed fields in the order the client reads them. The entity's number is always written
/// (a full update lists every entity, changed or not).
pub fn write_delta(out: &mut Vec<u8>, from: &EntityState, to: &EntityState, ext: &Ext) {
    let mut word: u16 = to.num & 511;
    let mut more: u8 = 0;
    let mut even: u16 = 0;
    if to.model != from.model {
        more |= U_MODEL;
        if to.model >= 256 {
            even |= U_FTE_MODELDBL;
        }
    }
    let set = |cond: bool, bits: &mut u16, bit: u16| {
        if cond {
            *bits |= bit;
        }
    };
    set(to.frame != from.frame, &mut word, U_FRAME);
    set(to.origin[0] != from.origin[0], &mut word, U_ORIGIN1);
    set(to.origin[1] != from.origin[1], &mut word, U_ORIGIN2);
    set(to.origin[2] != from.origin[2], &mut word, U_ORIGIN3);
    set(to.angles[1] != from.angles[1], &mut word, U_ANGLE2);
    for (cond, bit) in [
        (to.colormap != from.colormap, U_COLORMAP),
        (to.skin != from.skin, U_SKIN),
        (to.effects != from.effects, U_EFFECTS),
        (to.angles[0] != from.angles[0], U_ANGLE1),
        (to.angles[2] != from.angles[2], U_ANGLE3),
    ] {
        if cond {
            more |= bit;
        }
    }
    let alpha = to.alpha.filter(|_| to.alpha != from.alpha);
    let colourmod = to.colourmod.filter(|_| to.colourmod != from.colourmod);
    set(alpha.is_some(), &mut even, U_FTE_TRANS);
    set(colourmod.is_some(), &mut even, U_FTE_COLOURMOD);
    set(to.num & 512 != 0, &mut even, U_FTE_ENTITYDBL);
    set(to.num & 1024 != 0, &mut even, U_FTE_ENTITYDBL2);
    if even > 0xff {
        even |= U_FTE_YETMORE;
    }
    if even != 0 {
        more |= U_FTE_EVENMORE;
    }
    // Word 0 ends the list: entity 0 unchanged still needs a (empty) more-bits byte.
    if more != 0 || word == 0 {
        word |= U_MOREBITS;
    }
    out.extend_from_slice(&word.to_le_bytes());
    if word & U_MOREBITS != 0 {
        out.push(more);
    }
    if more & U_FTE_EVENMORE != 0 {
        out.push(even as u8);
        if even & U_FTE_YETMORE != 0 {
            out.push((even >> 8) as u8);
        }
    }
    if more & U_MODEL != 0 {
        out.push((to.model & 255) as u8);
    }
    if word & U_FRAME != 0 {
        out.push(to.frame);
    }
    for (bit, v) in [
        (U_COLORMAP, to.colormap),
        (U_SKIN, to.skin),
        (U_EFFECTS, to.effects),
    ] {
        if more & bit != 0 {
            out.push(v);
        }
    }
    if word & U_ORIGIN1 != 0 {
        ext.write_origin(out, to.origin[0]);
    }
    if more & U_ANGLE1 != 0 {
        ext.write_angle(out, to.angles[0]);
    }
    if word & U_ORIGIN2 != 0 {
        ext.write_origin(out, to.origin[1]);
    }
    if word & U_ANGLE2 != 0 {
        ext.write_angle(out, to.angles[1]);
    }
    if word & U_ORIGIN3 != 0 {
        ext.write_origin(out, to.origin[2]);
    }
    if more & U_ANGLE3 != 0 {
        ext.write_angle(out, to.angles[2]);
    }
    if let Some(a) = alpha {
        out.push(a);
    }
    if let Some(c) = colourmod {
        out.extend_from_slice(&c);
    }
}

/// An `svc_packetentities` (full update, no delta base) holding `ents` (sorted by number),
/// each delta-coded against its baseline as the server does for a client without a base
/// frame (mvdsv `SV_EmitPacketEntities` with no `from`).
pub fn write_full_packet_entities(
    out: &mut Vec<u8>,
    ents: &[EntityState],
    baselines: &[EntityState],
    ext: &Ext,
) {
    out.push(47);
    for e in ents {
        let base = baselines
            .get(usize::from(e.num))
            .copied()
            .unwrap_or_default();
        write_delta(out, &base, e, ext);
    }
    out.extend_from_slice(&[0, 0]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(ents: &[EntityState], baselines: &[EntityState], ext: &Ext) {
        let mut out = Vec::new();
        write_full_packet_entities(&mut out, ents, baselines, ext);
        assert_eq!(out.first(), Some(&47));
        let mut r = Reader::new(out.get(1..).unwrap_or(&[]));
        let (pe, frame) = read_packet_entities(&mut r, &[], baselines, true, ext).unwrap();
        assert!(r.is_empty(), "bytes left after the entity list");
        assert_eq!(frame, ents, "{ext:?}");
        assert_eq!(pe.count, ents.len());
    }

    /// Values the readers can produce for each encoding (1/8 coords, byte or short angles).
    fn entity(num: u16, k: f32) -> EntityState {
        EntityState {
            num,
            model: 3,
            frame: 2,
            colormap: 1,
            skin: 4,
            effects: 8,
            origin: [k * 8.125, -k * 16.5, 24.0],
            angles: [0.0, 90.0, -45.0],
            alpha: None,
            colourmod: None,
        }
    }

    #[test]
    fn full_update_round_trips_through_the_reader() {
        let mut baselines = vec![EntityState::default(); MAX_EDICTS];
        for (i, b) in baselines.iter_mut().enumerate() {
            b.num = i as u16;
        }
        baselines[7] = entity(7, 1.0); // unchanged from its baseline: number only
        let plain = Ext::default();
        let ents = vec![entity(7, 1.0), entity(8, 2.0), entity(300, -3.0)];
        round_trip(&ents, &baselines, &plain);
        // FTE: models past 255, entities past 511 and 1023, alpha and colour.
        let fte = Ext {
            fte: ext::FTE_TRANS
                | ext::FTE_MODELDBL
                | ext::FTE_ENTITYDBL
                | ext::FTE_ENTITYDBL2
                | ext::FTE_COLOURMOD,
            ..Default::default()
        };
        let mut big = entity(1500, 4.0);
        big.model = 300;
        big.alpha = Some(128);
        big.colourmod = Some([1, 2, 3]);
        let mut e600 = entity(600, 5.0);
        e600.alpha = Some(7);
        round_trip(&[entity(8, 2.0), e600, big], &baselines, &fte);
        // Float coords and 16-bit angles; float origins (MVD1).
        let float = Ext {
            fte: ext::FTE_FLOATCOORDS,
            mvd1: ext::MVD1_FLOATCOORDS,
            ..Default::default()
        };
        let mut f = entity(9, 1.0);
        f.origin = [1234.567, -0.001, 99999.5];
        f.angles = [
            45.0 * 360.0 / 65536.0 * 100.0,
            1.0 * 360.0 / 65536.0,
            -180.0,
        ];
        round_trip(&[f], &baselines, &float);
    }
}
