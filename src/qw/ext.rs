//! Protocol extensions (spec §5): the FTEX / FTE2 / MVD1 flag sets announced in the challenge,
//! claimed in `connect` and decided by `svc_serverdata`, and the encodings they change.
use super::cursor::{Reader, Result};
use serde::Serialize;

/// `PROTOCOL_VERSION_FTE` ("FTEX"): its flags are the `FTE_PEXT_*` set.
pub const MAGIC_FTE: u32 = 0x5845_5446; // "FTEX"
/// `PROTOCOL_VERSION_FTE2` ("FTE2"): its flags are the `FTE_PEXT2_*` set.
pub const MAGIC_FTE2: u32 = 0x3245_5446; // "FTE2"
/// `PROTOCOL_VERSION_MVD1` ("MVD1"): its flags are the `MVD_PEXT1_*` set.
pub const MAGIC_MVD1: u32 = 0x3144_564D; // "MVD1"

/// `FTE_PEXT_TRANS`: entity alpha (`U_FTE_TRANS`), a third playerinfo flags byte (`PF_EXTRA_PFS`)
/// and `PF_TRANS_Z`.
pub const FTE_TRANS: u32 = 0x8;
/// `FTE_PEXT_MODELDBL`: model indexes past 255 (`U_FTE_MODELDBL`, `svc_fte_modellistshort`).
pub const FTE_MODELDBL: u32 = 0x1000;
/// `FTE_PEXT_ENTITYDBL`: entity numbers 512 and up (`U_FTE_ENTITYDBL`).
pub const FTE_ENTITYDBL: u32 = 0x2000;
/// `FTE_PEXT_ENTITYDBL2`: entity numbers 1024 and up, below 2048 (`U_FTE_ENTITYDBL2`).
pub const FTE_ENTITYDBL2: u32 = 0x4000;
/// `FTE_PEXT_FLOATCOORDS` (server `sv_bigcoords`): every coord float32, every angle 16-bit.
pub const FTE_FLOATCOORDS: u32 = 0x8000;
/// `FTE_PEXT_COLOURMOD`: entity colour modulation (`U_FTE_COLOURMOD`).
pub const FTE_COLOURMOD: u32 = 0x80000;
/// `FTE_PEXT_SPAWNSTATIC2`: statics and baselines as entity deltas (`svc_fte_spawnstatic2` 21,
/// `svc_fte_spawnbaseline2` 66).
pub const FTE_SPAWNSTATIC2: u32 = 0x40_0000;
/// `FTE_PEXT_CHUNKEDDOWNLOADS`: `svc_download` in 1024-byte chunks, further chunks out of band.
pub const FTE_CHUNKEDDOWNLOADS: u32 = 0x2000_0000;
/// `MVD_PEXT1_FLOATCOORDS`: entity and player origins as float32.
pub const MVD1_FLOATCOORDS: u32 = 0x1;
/// `MVD_PEXT1_HIGHLAGTELEPORT`: `svc_setangle` starts with a reason byte.
pub const MVD1_HIGHLAGTELEPORT: u32 = 0x2;

/// The negotiated extension sets of one connection (all zero = plain protocol 28).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Ext {
    /// Flags of the FTEX set (`FTE_PEXT_*`, the `FTE_*` constants here).
    pub fte: u32,
    /// Flags of the FTE2 set (`FTE_PEXT2_*`; 0x2 is VOICECHAT).
    pub fte2: u32,
    /// Flags of the MVD1 set (`MVD_PEXT1_*`, the `MVD1_*` constants here).
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
    /// Whether the FTEX bit `bit` (an `FTE_*` constant) is on.
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

    /// Read a coord: int16 in 1/8 units, or float32 under FTE_PEXT_FLOATCOORDS (`MSG_ReadCoord`).
    pub fn read_coord(&self, r: &mut Reader<'_>) -> Result<f32> {
        if self.fte_asked(r, FTE_FLOATCOORDS) {
            r.f32()
        } else {
            Ok(f32::from(r.i16()?) / 8.0)
        }
    }
    /// Read three coords (x, y, z).
    pub fn read_coords(&self, r: &mut Reader<'_>) -> Result<[f32; 3]> {
        Ok([
            self.read_coord(r)?,
            self.read_coord(r)?,
            self.read_coord(r)?,
        ])
    }
    /// Entity / player origin component: float32 under MVD1 FLOATCOORDS, else a coord.
    pub fn read_origin(&self, r: &mut Reader<'_>) -> Result<f32> {
        if self.mvd1_asked(r, MVD1_FLOATCOORDS) {
            r.f32()
        } else {
            self.read_coord(r)
        }
    }
    /// Read an angle in degrees: a signed byte × 360/256, or an angle16 under FTE_PEXT_FLOATCOORDS
    /// (`MSG_ReadAngle`).
    pub fn read_angle(&self, r: &mut Reader<'_>) -> Result<f32> {
        if self.fte_asked(r, FTE_FLOATCOORDS) {
            read_angle16(r)
        } else {
            Ok(f32::from(r.i8()?) * (360.0 / 256.0))
        }
    }
    /// Read three angles (pitch, yaw, roll) in degrees.
    pub fn read_angles(&self, r: &mut Reader<'_>) -> Result<[f32; 3]> {
        Ok([
            self.read_angle(r)?,
            self.read_angle(r)?,
            self.read_angle(r)?,
        ])
    }
}

/// The questions a decode asks about the extensions, as the bits `Reader::ask` records:
/// an FTE bit asks that bit, an MVD1 bit that bit shifted up 32, and [`Asked::ANY_FTE`]
/// whether any FTE bit is on. The coordinate readers ask the coordinate formats.
pub struct Asked;

impl Asked {
    /// The question "is any FTE extension on" (ezQuake reads the evenmore byte only then).
    pub const ANY_FTE: u64 = 1 << 63;

    fn mvd1(bit: u32) -> u64 {
        u64::from(bit) << 32
    }

    /// Whether `a` and `b` answer every question in `asked` alike: a decode under `a` that
    /// asked only those reads the message as one under `b` would, op for op and error for
    /// error.
    pub fn same_answers(asked: u64, a: &Ext, b: &Ext) -> bool {
        let fte = asked as u32;
        let mvd1 = (asked >> 32) as u32 & 0x7fff_ffff;
        (a.fte ^ b.fte) & fte == 0
            && (a.mvd1 ^ b.mvd1) & mvd1 == 0
            && a.fte2 == b.fte2
            && (asked & Self::ANY_FTE == 0 || (a.fte != 0) == (b.fte != 0))
    }
}

/// The decoders' questions, recorded in the message's reader (see [`Asked`]).
impl Ext {
    /// [`Ext::fte`], asked by a decode.
    #[inline]
    pub fn fte_asked(&self, r: &Reader<'_>, bit: u32) -> bool {
        r.ask(u64::from(bit));
        self.fte(bit)
    }
    /// Whether any FTE extension is on, asked by a decode.
    #[inline]
    pub fn any_fte_asked(&self, r: &Reader<'_>) -> bool {
        r.ask(Asked::ANY_FTE);
        self.fte != 0
    }
    /// An MVD1 bit, asked by a decode.
    #[inline]
    pub fn mvd1_asked(&self, r: &Reader<'_>, bit: u32) -> bool {
        r.ask(Asked::mvd1(bit));
        self.mvd1 & bit != 0
    }
}

/// Writers: the inverse of the readers above, for values those readers produced (a value read
/// from a 1/8 coord or a byte angle is written back to the same bits).
impl Ext {
    /// Write a coord as [`Ext::read_coord`] reads it (1/8-unit int16, rounded, or float32).
    pub fn write_coord(&self, out: &mut Vec<u8>, v: f32) {
        if self.big_coords() {
            out.extend_from_slice(&v.to_le_bytes());
        } else {
            out.extend_from_slice(&((v * 8.0).round() as i16).to_le_bytes());
        }
    }
    /// Write an origin component as [`Ext::read_origin`] reads it (float32 under
    /// MVD_PEXT1_FLOATCOORDS).
    pub fn write_origin(&self, out: &mut Vec<u8>, v: f32) {
        if self.float_origins() {
            out.extend_from_slice(&v.to_le_bytes());
        } else {
            self.write_coord(out, v);
        }
    }
    /// Write an angle in degrees as [`Ext::read_angle`] reads it (byte or angle16, rounded).
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

/// Read an angle16: int16 × 360/65536 degrees (usercmds, MVD playerinfo).
pub fn read_angle16(r: &mut Reader<'_>) -> Result<f32> {
    Ok(f32::from(r.i16()?) * (360.0 / 65536.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fte(fte: u32) -> Ext {
        Ext {
            fte,
            ..Ext::default()
        }
    }

    /// Sets that differ only in bits nobody asked read alike; a bit asked, the "any FTE"
    /// question, and the coordinate formats (always counted) tell them apart.
    #[test]
    fn same_answers_counts_only_the_questions_asked() {
        let trans = fte(FTE_CHUNKEDDOWNLOADS | FTE_TRANS);
        let plain = fte(FTE_CHUNKEDDOWNLOADS);
        assert!(Asked::same_answers(0, &trans, &plain));
        assert!(Asked::same_answers(u64::from(FTE_MODELDBL), &trans, &plain));
        assert!(!Asked::same_answers(u64::from(FTE_TRANS), &trans, &plain));
        assert!(Asked::same_answers(Asked::ANY_FTE, &trans, &plain));
        assert!(!Asked::same_answers(Asked::ANY_FTE, &trans, &fte(0)));
        let big = fte(FTE_CHUNKEDDOWNLOADS | FTE_FLOATCOORDS);
        assert!(Asked::same_answers(0, &plain, &big));
        assert!(!Asked::same_answers(
            u64::from(FTE_FLOATCOORDS),
            &plain,
            &big
        ));
        let mvd = |mvd1| Ext { mvd1, ..plain };
        let origins = Asked::mvd1(MVD1_FLOATCOORDS);
        assert!(Asked::same_answers(0, &mvd(MVD1_FLOATCOORDS), &plain));
        assert!(!Asked::same_answers(
            origins,
            &mvd(MVD1_FLOATCOORDS),
            &plain
        ));
        assert!(Asked::same_answers(0, &mvd(MVD1_HIGHLAGTELEPORT), &plain));
        let teleport = Asked::mvd1(MVD1_HIGHLAGTELEPORT);
        assert!(!Asked::same_answers(
            teleport,
            &mvd(MVD1_HIGHLAGTELEPORT),
            &plain
        ));
    }

    /// A decoder's question is recorded in the reader, also through a shared reference.
    #[test]
    fn questions_are_recorded_in_the_reader() {
        let r = Reader::new(&[]);
        assert!(fte(FTE_TRANS).fte_asked(&r, FTE_TRANS));
        assert!(!fte(0).any_fte_asked(&r));
        assert_eq!(r.asked(), u64::from(FTE_TRANS) | Asked::ANY_FTE);
        // The coordinate readers ask the formats they read by.
        let mut r = Reader::new(&[0; 8]);
        fte(0).read_coord(&mut r).unwrap();
        Ext::default().read_origin(&mut r).unwrap();
        let floats = Asked::mvd1(MVD1_FLOATCOORDS) | u64::from(FTE_FLOATCOORDS);
        assert_eq!(r.asked(), floats);
    }
}
