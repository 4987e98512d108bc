//! Protocol extensions (spec §5): the FTEX / FTE2 / MVD1 flag sets announced in the challenge,
//! claimed in `connect` and decided by `svc_serverdata`, and the encodings they change.
use super::cursor::{Reader, Result};
use serde::Serialize;

pub const MAGIC_FTE: u32 = 0x5845_5446; // "FTEX"
pub const MAGIC_FTE2: u32 = 0x3245_5446; // "FTE2"
pub const MAGIC_MVD1: u32 = 0x3144_564D; // "MVD1"

pub const FTE_TRANS: u32 = 0x8;
pub const FTE_MODELDBL: u32 = 0x1000;
pub const FTE_ENTITYDBL: u32 = 0x2000;
pub const FTE_ENTITYDBL2: u32 = 0x4000;
pub const FTE_FLOATCOORDS: u32 = 0x8000;
pub const FTE_COLOURMOD: u32 = 0x80000;
pub const FTE_SPAWNSTATIC2: u32 = 0x40_0000;
pub const FTE_CHUNKEDDOWNLOADS: u32 = 0x2000_0000;
pub const MVD1_FLOATCOORDS: u32 = 0x1;
pub const MVD1_HIGHLAGTELEPORT: u32 = 0x2;

/// The negotiated extension sets of one connection (all zero = plain protocol 28).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Ext {
    pub fte: u32,
    pub fte2: u32,
    pub mvd1: u32,
}

impl Ext {
    /// Record one `<magic> <flags>` pair; false if the magic is not one we know.
    pub fn set(&mut self, magic: u32, flags: u32) -> bool {
        match magic {
            MAGIC_FTE => self.fte = flags,
            MAGIC_FTE2 => self.fte2 = flags,
            MAGIC_MVD1 => self.mvd1 = flags,
            _ => return false,
        }
        true
    }
    pub fn fte(&self, bit: u32) -> bool {
        self.fte & bit != 0
    }
    /// Entity and player origins as float32 (MVD_PEXT1_FLOATCOORDS).
    pub fn float_origins(&self) -> bool {
        self.mvd1 & MVD1_FLOATCOORDS != 0
    }
    /// All coords float32 and angles 16-bit (FTE_PEXT_FLOATCOORDS, `sv_bigcoords`).
    pub fn big_coords(&self) -> bool {
        self.fte(FTE_FLOATCOORDS)
    }

    pub fn read_coord(&self, r: &mut Reader<'_>) -> Result<f32> {
        if self.big_coords() {
            r.f32()
        } else {
            Ok(f32::from(r.i16()?) / 8.0)
        }
    }
    pub fn read_coords(&self, r: &mut Reader<'_>) -> Result<[f32; 3]> {
        Ok([
            self.read_coord(r)?,
            self.read_coord(r)?,
            self.read_coord(r)?,
        ])
    }
    /// Entity / player origin component: float32 under MVD1 FLOATCOORDS, else a coord.
    pub fn read_origin(&self, r: &mut Reader<'_>) -> Result<f32> {
        if self.float_origins() {
            r.f32()
        } else {
            self.read_coord(r)
        }
    }
    pub fn read_angle(&self, r: &mut Reader<'_>) -> Result<f32> {
        if self.big_coords() {
            read_angle16(r)
        } else {
            Ok(f32::from(r.i8()?) * (360.0 / 256.0))
        }
    }
    pub fn read_angles(&self, r: &mut Reader<'_>) -> Result<[f32; 3]> {
        Ok([
            self.read_angle(r)?,
            self.read_angle(r)?,
            self.read_angle(r)?,
        ])
    }
}

/// Writers: the inverse of the readers above, for values those readers produced (a value read
/// from a 1/8 coord or a byte angle is written back to the same bits).
impl Ext {
    pub fn write_coord(&self, out: &mut Vec<u8>, v: f32) {
        if self.big_coords() {
            out.extend_from_slice(&v.to_le_bytes());
        } else {
            out.extend_from_slice(&((v * 8.0).round() as i16).to_le_bytes());
        }
    }
    pub fn write_origin(&self, out: &mut Vec<u8>, v: f32) {
        if self.float_origins() {
            out.extend_from_slice(&v.to_le_bytes());
        } else {
            self.write_coord(out, v);
        }
    }
    pub fn write_angle(&self, out: &mut Vec<u8>, v: f32) {
        if self.big_coords() {
            let a = (v * 65536.0 / 360.0).round() as i32;
            out.extend_from_slice(&(a as i16).to_le_bytes());
        } else {
            // The server sends (int)(angle * 256 / 360) & 255; read back as a signed byte.
            out.push(((v * 256.0 / 360.0).round() as i32 & 255) as u8);
        }
    }
}

pub fn read_angle16(r: &mut Reader<'_>) -> Result<f32> {
    Ok(f32::from(r.i16()?) * (360.0 / 65536.0))
}
