//! `svc_playerinfo` (spec §6.5): the netchan form (absolute, per frame) and the MVD `DF_` form
//! (delta against the previous state of that player).
use super::cursor::{Reader, Result};
use super::ext::{self, read_angle16, Ext};
use super::usercmd::Usercmd;
use serde::Serialize;

pub const PF_MSEC: u32 = 1;
pub const PF_COMMAND: u32 = 2;
pub const PF_VELOCITY1: u32 = 4;
pub const PF_MODEL: u32 = 32;
pub const PF_SKINNUM: u32 = 64;
pub const PF_EFFECTS: u32 = 128;
pub const PF_WEAPONFRAME: u32 = 256;
pub const PF_EXTRA_PFS: u32 = 1 << 15;
pub const PF_TRANS_Z: u32 = 1 << 17;

pub const DF_ORIGIN: u32 = 1;
pub const DF_ANGLES: u32 = 1 << 3;
pub const DF_EFFECTS: u32 = 1 << 6;
pub const DF_SKINNUM: u32 = 1 << 7;
pub const DF_WEAPONFRAME: u32 = 1 << 10;
pub const DF_MODEL: u32 = 1 << 11;

/// One player's state as the message leaves it (absolute values).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct PlayerInfo {
    pub num: u8,
    /// Flag bits as on the wire (netchan form: with the TRANS extra byte in bits 16..23).
    pub flags: u32,
    pub origin: [f32; 3],
    pub frame: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub msec: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<Usercmd>,
    pub velocity: [i16; 3],
    pub model: u16,
    pub skin: u8,
    pub effects: u8,
    pub weaponframe: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alpha: Option<u8>,
    /// MVD form only: view angles.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub angles: Option<[f32; 3]>,
}

/// Netchan form (ezQuake `CL_ParsePlayerinfo`, non-MVD branch). `model` 0 means "absent"
/// (the client uses player.mdl then).
pub fn read_netchan(r: &mut Reader<'_>, ext: &Ext) -> Result<PlayerInfo> {
    let num = r.u8()?;
    if num >= 32 {
        return Err(r.err(format!("playerinfo for player {num} >= 32")));
    }
    let mut flags = u32::from(r.u16()?);
    if flags & PF_EXTRA_PFS != 0 && ext.fte_asked(r, ext::FTE_TRANS) {
        flags |= u32::from(r.u8()?) << 16;
    }
    let mut p = PlayerInfo {
        num,
        flags,
        ..Default::default()
    };
    for o in &mut p.origin {
        *o = ext.read_origin(r)?;
    }
    p.frame = r.u8()?;
    if flags & PF_MSEC != 0 {
        p.msec = Some(r.u8()?);
    }
    if flags & PF_COMMAND != 0 {
        p.command = Some(Usercmd::read_delta(r, &Usercmd::default())?);
    }
    for (i, v) in p.velocity.iter_mut().enumerate() {
        if flags & (PF_VELOCITY1 << i) != 0 {
            *v = r.i16()?;
        }
    }
    if flags & PF_MODEL != 0 {
        p.model = u16::from(r.u8()?);
    }
    if flags & PF_SKINNUM != 0 {
        p.skin = r.u8()?;
        if p.skin & 0x80 != 0 && flags & PF_MODEL != 0 {
            p.model += 256;
            p.skin &= 0x7f;
        }
    }
    if flags & PF_EFFECTS != 0 {
        p.effects = r.u8()?;
    }
    if flags & PF_WEAPONFRAME != 0 {
        p.weaponframe = r.u8()?;
    }
    if flags & PF_TRANS_Z != 0 && ext.fte_asked(r, ext::FTE_TRANS) {
        p.alpha = Some(r.u8()?);
    }
    Ok(p)
}

/// MVD form: fields are deltas against `prev` (the player's last state in the demo).
pub fn read_mvd(r: &mut Reader<'_>, ext: &Ext, prev: &[PlayerInfo; 32]) -> Result<PlayerInfo> {
    let num = r.u8()?;
    let Some(old) = prev.get(usize::from(num)) else {
        return Err(r.err(format!("playerinfo for player {num} >= 32")));
    };
    let mut p = *old;
    p.num = num;
    let flags = u32::from(r.u16()?);
    p.flags = flags;
    p.frame = r.u8()?;
    p.msec = None;
    p.command = None;
    for i in 0..3 {
        if flags & (DF_ORIGIN << i) != 0 {
            p.origin[i] = ext.read_coord(r)?;
        }
    }
    let mut angles = p.angles.unwrap_or_default();
    for (i, a) in angles.iter_mut().enumerate() {
        if flags & (DF_ANGLES << i) != 0 {
            *a = read_angle16(r)?;
        }
    }
    p.angles = Some(angles);
    if flags & DF_MODEL != 0 {
        p.model = u16::from(r.u8()?);
    }
    if flags & DF_SKINNUM != 0 {
        p.skin = r.u8()?;
        if p.skin & 0x80 != 0 && flags & DF_MODEL != 0 && ext.fte_asked(r, ext::FTE_MODELDBL) {
            p.skin &= 0x7f;
            p.model += 256;
        }
    }
    if flags & DF_EFFECTS != 0 {
        p.effects = r.u8()?;
    }
    if flags & DF_WEAPONFRAME != 0 {
        p.weaponframe = r.u8()?;
    }
    Ok(p)
}
