//! `svc_playerinfo` (spec §6.5): the netchan form (absolute, per frame) and the MVD `DF_` form
//! (delta against the previous state of that player).
use super::cursor::{Reader, Result};
use super::ext::{self, read_angle16, Ext};
use super::usercmd::Usercmd;
use serde::Serialize;

/// Netchan flags: the msec byte follows (age of the player's last command).
pub const PF_MSEC: u32 = 1;
/// Netchan flags: a usercmd delta from a zero command follows.
pub const PF_COMMAND: u32 = 2;
/// Netchan flags: `velocity[0]` short follows; `PF_VELOCITY1 << 1` and `<< 2` (`PF_VELOCITY2`/`3`)
/// announce y and z.
pub const PF_VELOCITY1: u32 = 4;
/// Netchan flags: the model index byte follows (absent: player.mdl).
pub const PF_MODEL: u32 = 32;
/// Netchan flags: the skin byte follows; its bit 7 with `PF_MODEL` adds 256 to the model.
pub const PF_SKINNUM: u32 = 64;
/// Netchan flags: the effects byte (`EF_*`) follows.
pub const PF_EFFECTS: u32 = 128;
/// Netchan flags: the weapon frame byte follows (own or tracked player).
pub const PF_WEAPONFRAME: u32 = 256;
/// Netchan flags, with FTE_PEXT_TRANS: a third flags byte (bits 16–23) follows; without TRANS this
/// bit is `PF_SOLID`.
pub const PF_EXTRA_PFS: u32 = 1 << 15;
/// Netchan flags (extra byte, FTE_PEXT_TRANS): the alpha byte follows.
pub const PF_TRANS_Z: u32 = 1 << 17;

/// MVD `DF_*` flags: `DF_ORIGIN << i` (1, 2, 4) = a coord for `origin[i]` follows.
pub const DF_ORIGIN: u32 = 1;
/// MVD flags: `DF_ANGLES << i` (8, 16, 32) = an angle16 for `angles[i]` follows.
pub const DF_ANGLES: u32 = 1 << 3;
/// MVD flags: the effects byte follows.
pub const DF_EFFECTS: u32 = 1 << 6;
/// MVD flags: the skin byte follows (bit 7 with `DF_MODEL` adds 256 to the model under
/// FTE_PEXT_MODELDBL).
pub const DF_SKINNUM: u32 = 1 << 7;
/// MVD flags: the weapon frame byte follows.
pub const DF_WEAPONFRAME: u32 = 1 << 10;
/// MVD flags: the model index byte follows.
pub const DF_MODEL: u32 = 1 << 11;

/// One player's state as the message leaves it (absolute values).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct PlayerInfo {
    /// Player slot, 0..=31. The player is entity `num + 1`.
    pub num: u8,
    /// Flag bits as on the wire (netchan form: with the TRANS extra byte in bits 16..23).
    pub flags: u32,
    /// Position in world units (netchan form: float32 under MVD_PEXT1_FLOATCOORDS).
    pub origin: [f32; 3],
    /// Animation frame of the player model.
    pub frame: u8,
    /// `PF_MSEC`: age of the player's last command in milliseconds (≤ 255).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub msec: Option<u8>,
    /// `PF_COMMAND`: the player's last command (buttons and impulse zeroed; with `Z_EXT_VWEP` the
    /// impulse is the weapon model index).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<Usercmd>,
    /// Velocity in units per second (integers); 0 where its `PF_VELOCITY*` bit is absent and in
    /// the MVD form.
    pub velocity: [i16; 3],
    /// Index into the model precache (netchan form: 0 when not sent, meaning player.mdl).
    pub model: u16,
    /// Skin number (bit 7 cleared when it extended the model).
    pub skin: u8,
    /// `EF_*` bits (quad, pentagram, flags, lights).
    pub effects: u8,
    /// Frame of the view weapon model.
    pub weaponframe: u8,
    /// `PF_TRANS_Z` alpha byte (FTE_PEXT_TRANS).
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
