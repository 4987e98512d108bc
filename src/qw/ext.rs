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
        if self.fte_asked(r, FTE_FLOATCOORDS) {
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
        if self.mvd1_asked(r, MVD1_FLOATCOORDS) {
            r.f32()
        } else {
            self.read_coord(r)
        }
    }
    pub fn read_angle(&self, r: &mut Reader<'_>) -> Result<f32> {
        if self.fte_asked(r, FTE_FLOATCOORDS) {
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

/// The questions a decode asks about the extensions, as the bits [`Reader::ask`] records:
/// an FTE bit asks that bit, an MVD1 bit that bit shifted up 32, and [`Asked::ANY_FTE`]
/// whether any FTE bit is on. The coordinate readers ask the coordinate formats.
pub struct Asked;

impl Asked {
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
