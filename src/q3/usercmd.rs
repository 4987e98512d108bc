//! Keyed usercmd deltas (spec `q3-protocol.md` §5.2): `MSG_ReadDeltaUsercmdKey` /
//! `MSG_WriteDeltaUsercmdKey` with ioq3 semantics, and `MSG_HashKey`.
//!
//! The key only XORs values, never changes widths, so a wrong key corrupts values but not the
//! parse. ioq3's reader masks the key to the field width (1.32 used one bit too many, which
//! only ever differed in bit 16 of the 16-bit fields that the `int` angles then carried); we
//! mask like ioq3 and clamp a movement of -128 to -127 like ioq3's reader.

use serde::Serialize;

use crate::q3::bits::{decode_window, BitError, BitReader, BitWriter};

/// `usercmd_t` as transmitted.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct UserCmd {
    /// Server time the command applies to.
    pub server_time: i32,
    /// Short angles (`ANGLE2SHORT`), read back as 0..=65535.
    pub angles: [i32; 3],
    /// Forward/back movement, -127..=127.
    pub forwardmove: i8,
    /// Strafe movement.
    pub rightmove: i8,
    /// Jump/crouch movement.
    pub upmove: i8,
    /// Button bits (16 bits on the wire).
    pub buttons: i32,
    /// Selected weapon.
    pub weapon: u8,
    /// Values the decoder could not know (the usercmd key was unknown: mid-session before a
    /// gamestate): [`UNKNOWN_ANGLE`] bits and the others below; serialized as `null`.
    pub unknown: u8,
}

/// [`UserCmd::unknown`] bits: angle `i` is `UNKNOWN_ANGLE << i`.
pub const UNKNOWN_ANGLE: u8 = 1;
/// [`UserCmd::unknown`] bit: `forwardmove` is unknown.
pub const UNKNOWN_FORWARD: u8 = 1 << 3;
/// [`UserCmd::unknown`] bit: `rightmove` is unknown.
pub const UNKNOWN_RIGHT: u8 = 1 << 4;
/// [`UserCmd::unknown`] bit: `upmove` is unknown.
pub const UNKNOWN_UP: u8 = 1 << 5;
/// [`UserCmd::unknown`] bit: `buttons` is unknown.
pub const UNKNOWN_BUTTONS: u8 = 1 << 6;
/// [`UserCmd::unknown`] bit: `weapon` is unknown.
pub const UNKNOWN_WEAPON: u8 = 1 << 7;

impl UserCmd {
    /// Angle `i` (0..3), `None` when unknown.
    pub fn angle(&self, i: usize) -> Option<i32> {
        (self.unknown & (UNKNOWN_ANGLE << i) == 0).then(|| self.angles[i % 3])
    }
    /// `forwardmove` (-127..=127), `None` when unknown.
    pub fn forward(&self) -> Option<i8> {
        (self.unknown & UNKNOWN_FORWARD == 0).then_some(self.forwardmove)
    }
    /// `rightmove` (-127..=127), `None` when unknown.
    pub fn right(&self) -> Option<i8> {
        (self.unknown & UNKNOWN_RIGHT == 0).then_some(self.rightmove)
    }
    /// `upmove` (-127..=127), `None` when unknown.
    pub fn up(&self) -> Option<i8> {
        (self.unknown & UNKNOWN_UP == 0).then_some(self.upmove)
    }
    /// `buttons` (`BUTTON_*` bits), `None` when unknown.
    pub fn buttons_known(&self) -> Option<i32> {
        (self.unknown & UNKNOWN_BUTTONS == 0).then_some(self.buttons)
    }
    /// `weapon` (the selected `WP_*` number), `None` when unknown.
    pub fn weapon_known(&self) -> Option<u8> {
        (self.unknown & UNKNOWN_WEAPON == 0).then_some(self.weapon)
    }

    /// The keyed values that differ between `self` and `other` (the same command read
    /// with two keys), as [`UserCmd::unknown`] bits.
    pub fn differing(&self, other: &UserCmd) -> u8 {
        let mut m = 0;
        for i in 0..3 {
            if self.angles[i] != other.angles[i] {
                m |= UNKNOWN_ANGLE << i;
            }
        }
        let pairs = [
            (self.forwardmove != other.forwardmove, UNKNOWN_FORWARD),
            (self.rightmove != other.rightmove, UNKNOWN_RIGHT),
            (self.upmove != other.upmove, UNKNOWN_UP),
            (self.buttons != other.buttons, UNKNOWN_BUTTONS),
            (self.weapon != other.weapon, UNKNOWN_WEAPON),
        ];
        for (d, bit) in pairs {
            if d {
                m |= bit;
            }
        }
        m
    }
}

impl Serialize for UserCmd {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let k = |bit: u8| self.unknown & bit == 0;
        let angles: [Option<i32>; 3] =
            std::array::from_fn(|i| k(UNKNOWN_ANGLE << i).then_some(self.angles[i]));
        let mut st = s.serialize_struct("UserCmd", 8)?;
        st.serialize_field("server_time", &self.server_time)?;
        st.serialize_field("angles", &angles)?;
        st.serialize_field(
            "forwardmove",
            &k(UNKNOWN_FORWARD).then_some(self.forwardmove),
        )?;
        st.serialize_field("rightmove", &k(UNKNOWN_RIGHT).then_some(self.rightmove))?;
        st.serialize_field("upmove", &k(UNKNOWN_UP).then_some(self.upmove))?;
        st.serialize_field("buttons", &k(UNKNOWN_BUTTONS).then_some(self.buttons))?;
        st.serialize_field("weapon", &k(UNKNOWN_WEAPON).then_some(self.weapon))?;
        st.end()
    }
}

#[inline]
fn mask(bits: u32) -> i32 {
    ((1u64 << bits) - 1) as i32
}

/// `MSG_ReadDeltaKey`: changed bit, then `BITS` bits XOR the width-masked key. The width
/// is a constant so every field read is straight-line code (this runs per usercmd field).
#[inline(always)]
fn read_delta_key<const BITS: u32>(r: &mut BitReader, key: i32, old: i32) -> Result<i32, BitError> {
    if r.read_bit()? {
        Ok(r.read_bits_fixed::<BITS>()? ^ (key & mask(BITS)))
    } else {
        Ok(old)
    }
}

/// Movement bytes are `signed char` in the engine: wrap to i8, then ioq3 turns -128 into -127.
#[inline]
fn movement(v: i32) -> i8 {
    match v as u8 as i8 {
        -128 => -127,
        m => m,
    }
}

/// `MSG_ReadDeltaUsercmdKey` (ioq3): `key` is the packet's base key
/// (`checksumFeed ^ messageAcknowledge ^ HashKey(...)`); this function XORs in the command's
/// own serverTime like the engine.
pub fn read_delta_usercmd(
    r: &mut BitReader,
    key: i32,
    from: &UserCmd,
) -> Result<UserCmd, BitError> {
    let start = r.bit_pos();
    match read_delta_usercmd_windowed(r, key, from) {
        Some(c) => Ok(c),
        None => {
            // Near the end, or a NYT code: the field-by-field reader gives the exact error.
            r.set_bit_pos(start);
            read_delta_usercmd_exact(r, key, from)
        }
    }
}

/// Stream bits taken from 64-bit windows of a [`BitReader`], committed in bulk: a usercmd's
/// flags, raw bits and Huffman codes are decoded without a bounds check each.
struct Window<'r, 'a> {
    r: &'r mut BitReader<'a>,
    w: u64,
    /// Valid bits left in `w` (a peek guarantees 57).
    left: u32,
    /// Bits taken from `w` and not yet committed to `r`.
    taken: u32,
}

impl<'r, 'a> Window<'r, 'a> {
    fn new(r: &'r mut BitReader<'a>) -> Self {
        let w = r.peek64();
        Window {
            r,
            w,
            left: 57,
            taken: 0,
        }
    }

    /// Make sure `n` (<= 57) bits can be taken; None when committing runs past the end.
    #[inline(always)]
    fn need(&mut self, n: u32) -> Option<()> {
        if self.left < n {
            self.commit()?;
            self.w = self.r.peek64();
            self.left = 57;
        }
        Some(())
    }

    /// Move the reader past the bits taken: None if that is past the end (engine rule).
    #[inline(always)]
    fn commit(&mut self) -> Option<()> {
        let n = std::mem::take(&mut self.taken) as usize;
        self.r.advance(n).then_some(())
    }

    #[inline(always)]
    fn bit(&mut self) -> bool {
        let b = self.w & 1 != 0;
        self.w >>= 1;
        self.left -= 1;
        self.taken += 1;
        b
    }

    /// `BITS` (8, 16 or 32) bits as Huffman-coded bytes; None on a NYT code.
    #[inline(always)]
    fn bytes<const BITS: u32>(&mut self) -> Option<i32> {
        let d = decode_window(self.w, BITS as i32);
        if d.nyt {
            return None;
        }
        self.w >>= d.bits;
        self.left -= d.bits;
        self.taken += d.bits;
        Some(d.value)
    }

    /// `MSG_ReadDeltaKey` from the window.
    #[inline(always)]
    fn delta_key<const BITS: u32>(&mut self, key: i32, old: i32) -> Option<i32> {
        // The flag and at most BITS / 8 codes of 11 bits.
        self.need(1 + 11 * (BITS / 8))?;
        if self.bit() {
            Some(self.bytes::<BITS>()? ^ (key & mask(BITS)))
        } else {
            Some(old)
        }
    }
}

/// [`read_delta_usercmd_exact`] from whole windows: the same command and end position, or
/// None (the reader then moved by an unspecified amount) when a code is NYT or the
/// command runs to the end of the message, for the exact reader to report.
fn read_delta_usercmd_windowed(r: &mut BitReader, key: i32, from: &UserCmd) -> Option<UserCmd> {
    let mut w = Window::new(r);
    // 1 + 4 codes of at most 11 bits: fits a fresh window.
    let server_time = if w.bit() {
        from.server_time.wrapping_add(w.bytes::<8>()?)
    } else {
        w.bytes::<32>()?
    };
    w.need(1)?;
    if !w.bit() {
        w.commit()?;
        return Some(UserCmd {
            server_time,
            ..*from
        });
    }
    let key = key ^ server_time;
    let a0 = w.delta_key::<16>(key, from.angles[0])?;
    let a1 = w.delta_key::<16>(key, from.angles[1])?;
    let a2 = w.delta_key::<16>(key, from.angles[2])?;
    let forwardmove = movement(w.delta_key::<8>(key, i32::from(from.forwardmove))?);
    let rightmove = movement(w.delta_key::<8>(key, i32::from(from.rightmove))?);
    let upmove = movement(w.delta_key::<8>(key, i32::from(from.upmove))?);
    let buttons = w.delta_key::<16>(key, from.buttons)?;
    let weapon = w.delta_key::<8>(key, i32::from(from.weapon))? as u8;
    w.commit()?;
    Some(UserCmd {
        server_time,
        angles: [a0, a1, a2],
        forwardmove,
        rightmove,
        upmove,
        buttons,
        weapon,
        unknown: 0,
    })
}

/// `MSG_ReadDeltaUsercmdKey` field by field, with the exact error of a failing read.
fn read_delta_usercmd_exact(
    r: &mut BitReader,
    key: i32,
    from: &UserCmd,
) -> Result<UserCmd, BitError> {
    let server_time = if r.read_bit()? {
        from.server_time.wrapping_add(r.read_bits_fixed::<8>()?)
    } else {
        r.read_bits_fixed::<32>()?
    };
    if !r.read_bit()? {
        return Ok(UserCmd {
            server_time,
            ..*from
        });
    }
    let key = key ^ server_time;
    let a0 = read_delta_key::<16>(r, key, from.angles[0])?;
    let a1 = read_delta_key::<16>(r, key, from.angles[1])?;
    let a2 = read_delta_key::<16>(r, key, from.angles[2])?;
    let forwardmove = movement(read_delta_key::<8>(r, key, i32::from(from.forwardmove))?);
    let rightmove = movement(read_delta_key::<8>(r, key, i32::from(from.rightmove))?);
    let upmove = movement(read_delta_key::<8>(r, key, i32::from(from.upmove))?);
    let buttons = read_delta_key::<16>(r, key, from.buttons)?;
    let weapon = read_delta_key::<8>(r, key, i32::from(from.weapon))? as u8;
    Ok(UserCmd {
        server_time,
        angles: [a0, a1, a2],
        forwardmove,
        rightmove,
        upmove,
        buttons,
        weapon,
        unknown: 0,
    })
}

#[inline]
fn write_delta_key(w: &mut BitWriter, key: i32, old: i32, new: i32, bits: i32) {
    if old == new {
        w.write_bit(false);
    } else {
        w.write_bit(true);
        w.write_bits(new ^ key, bits);
    }
}

/// `MSG_WriteDeltaUsercmdKey`. Like the engine, a serverTime delta below 256 is sent in 8 bits
/// even when it is negative (the reader then adds the masked byte), so only non-decreasing
/// times round-trip through the short form.
pub fn write_delta_usercmd(w: &mut BitWriter, key: i32, from: &UserCmd, to: &UserCmd) {
    let dt = to.server_time.wrapping_sub(from.server_time);
    if dt < 256 {
        w.write_bit(true);
        w.write_bits(dt, 8);
    } else {
        w.write_bit(false);
        w.write_bits(to.server_time, 32);
    }
    let same = from.angles == to.angles
        && from.forwardmove == to.forwardmove
        && from.rightmove == to.rightmove
        && from.upmove == to.upmove
        && from.buttons == to.buttons
        && from.weapon == to.weapon;
    if same {
        w.write_bit(false);
        return;
    }
    let key = key ^ to.server_time;
    w.write_bit(true);
    for k in 0..3 {
        write_delta_key(w, key, from.angles[k], to.angles[k], 16);
    }
    write_delta_key(w, key, from.forwardmove.into(), to.forwardmove.into(), 8);
    write_delta_key(w, key, from.rightmove.into(), to.rightmove.into(), 8);
    write_delta_key(w, key, from.upmove.into(), to.upmove.into(), 8);
    write_delta_key(w, key, from.buttons, to.buttons, 16);
    write_delta_key(w, key, from.weapon.into(), to.weapon.into(), 8);
}

/// ioq3 `MSG_HashKey`: over at most `maxlen` bytes up to the first NUL,
/// `h += c * (119 + i)` with bytes >= 0x80 and `%` counted as `.`, then
/// `h ^ (h >> 10) ^ (h >> 20)` (arithmetic shifts, wrapping int arithmetic).
pub fn hash_key(s: &[u8], maxlen: usize) -> i32 {
    let mut h: i32 = 0;
    for (i, &c) in s.iter().take(maxlen).take_while(|&&c| c != 0).enumerate() {
        let c = if c & 0x80 != 0 || c == b'%' { b'.' } else { c };
        h = h.wrapping_add(i32::from(c).wrapping_mul(119 + i as i32));
    }
    h ^ (h >> 10) ^ (h >> 20)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    use crate::q3::huffman::{self, NYT};

    fn cmd_strategy() -> impl Strategy<Value = UserCmd> {
        (
            any::<i32>(),
            [0i32..65536, 0i32..65536, 0i32..65536],
            -127i8..=127,
            -127i8..=127,
            -127i8..=127,
            0i32..65536,
            any::<u8>(),
        )
            .prop_map(|(server_time, angles, f, r, u, buttons, weapon)| UserCmd {
                server_time,
                angles,
                forwardmove: f,
                rightmove: r,
                upmove: u,
                buttons,
                weapon,
                unknown: 0,
            })
    }

    /// A sequence of commands: each either a small forward step, a copy, or random.
    fn seq_strategy() -> impl Strategy<Value = Vec<UserCmd>> {
        proptest::collection::vec((cmd_strategy(), 0u8..4, 0i32..256), 1..12).prop_map(|v| {
            let mut prev = UserCmd::default();
            let mut out = Vec::new();
            for (c, mode, dt) in v {
                let next = match mode {
                    0 => UserCmd {
                        server_time: prev.server_time.wrapping_add(dt),
                        ..prev
                    },
                    1 => UserCmd {
                        server_time: prev.server_time.wrapping_add(dt),
                        ..c
                    },
                    _ => c,
                };
                out.push(next);
                prev = next;
            }
            out
        })
    }

    proptest! {
        #[test]
        fn prop_usercmd_roundtrip(cmds in seq_strategy(), key in any::<i32>()) {
            let mut w = BitWriter::new();
            let mut prev = UserCmd::default();
            for c in &cmds {
                write_delta_usercmd(&mut w, key, &prev, c);
                prev = *c;
            }
            let out = w.finish();
            let mut r = BitReader::new(&out);
            let mut prev = UserCmd::default();
            for c in &cmds {
                let dt = c.server_time.wrapping_sub(prev.server_time);
                let got = read_delta_usercmd(&mut r, key, &prev)?;
                if dt < 0 {
                    // Engine quirk: negative deltas go through the 8-bit form.
                    // The reader's time (and so its key) now differs from the writer's.
                    prop_assert_eq!(got.server_time, prev.server_time.wrapping_add(dt & 0xff));
                    break;
                }
                prop_assert_eq!(got, *c);
                prev = got;
            }
        }

        #[test]
        fn prop_wrong_key_keeps_parse(cmds in seq_strategy(), key in any::<i32>(), other in any::<i32>()) {
            let mut w = BitWriter::new();
            let mut prev = UserCmd::default();
            let mut ends = Vec::new();
            for c in &cmds {
                write_delta_usercmd(&mut w, key, &prev, c);
                ends.push(w.bit_pos());
                prev = *c;
            }
            let out = w.finish();
            let mut r = BitReader::new(&out);
            let mut prev = UserCmd::default();
            for &end in &ends {
                prev = read_delta_usercmd(&mut r, other, &prev)?;
                prop_assert_eq!(r.bit_pos(), end);
            }
        }

        #[test]
        fn prop_random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..40), key in any::<i32>()) {
            let mut r = BitReader::new(&data);
            let mut prev = UserCmd::default();
            while let Ok(c) = read_delta_usercmd(&mut r, key, &prev) { prev = c; }
        }
    }

    #[test]
    fn movement_minus_128_reads_as_minus_127() {
        let from = UserCmd::default();
        let to = UserCmd {
            server_time: 10,
            forwardmove: -128,
            rightmove: -128,
            upmove: 5,
            ..from
        };
        let mut w = BitWriter::new();
        write_delta_usercmd(&mut w, 0x1234_5678, &from, &to);
        let out = w.finish();
        let got = read_delta_usercmd(&mut BitReader::new(&out), 0x1234_5678, &from);
        assert_eq!(
            got,
            Ok(UserCmd {
                forwardmove: -127,
                rightmove: -127,
                ..to
            })
        );
    }

    #[test]
    fn key_is_masked_to_field_width() {
        // Angle 0 -> 1 with a key whose bit 16 is set: ioq3 masks it, 1.32 would give 0x10001.
        let from = UserCmd::default();
        let to = UserCmd {
            server_time: 0,
            angles: [1, 0, 0],
            ..from
        };
        let key = 0x0001_0000;
        let mut w = BitWriter::new();
        write_delta_usercmd(&mut w, key, &from, &to);
        let out = w.finish();
        assert_eq!(
            read_delta_usercmd(&mut BitReader::new(&out), key, &from),
            Ok(to)
        );
    }

    #[test]
    fn hash_key_values() {
        assert_eq!(hash_key(b"", 32), 0);
        // 'a' * 119 = 11543; 11543 ^ (11543 >> 10) ^ 0 = 11543 ^ 11
        assert_eq!(hash_key(b"a", 32), 11543 ^ 11);
        // Stops at NUL and at maxlen.
        assert_eq!(hash_key(b"a\0bc", 32), hash_key(b"a", 32));
        assert_eq!(hash_key(b"abcdef", 1), hash_key(b"a", 32));
        // >127 and '%' hash as '.'.
        assert_eq!(hash_key(b"x%\xe9y", 32), hash_key(b"x..y", 32));
        // Long strings: wrapping arithmetic, arithmetic shift of a negative hash is fine.
        let long = vec![b'~'; 5000];
        let _ = hash_key(&long, usize::MAX);
        let manual = {
            let s = b"cs 5 \"hello\"";
            let mut h: i32 = 0;
            for (i, &c) in s.iter().enumerate() {
                h += i32::from(c) * (119 + i as i32);
            }
            h ^ (h >> 10) ^ (h >> 20)
        };
        assert_eq!(hash_key(b"cs 5 \"hello\"", 32), manual);
    }
    /// Both readers over the same bits: same command or error, same end position.
    fn both(data: &[u8], start: usize, key: i32, from: &UserCmd) {
        let mut a = BitReader::new(data);
        a.set_bit_pos(start);
        let mut b = a.clone();
        let got = read_delta_usercmd(&mut a, key, from);
        let want = read_delta_usercmd_exact(&mut b, key, from);
        assert_eq!(got, want, "start {start} data {data:?}");
        if want.is_ok() {
            assert_eq!(a.bit_pos(), b.bit_pos());
        }
    }

    proptest! {
        #[test]
        fn prop_windowed_matches_exact_on_written_commands(
            cmds in seq_strategy(),
            key in any::<i32>(),
            cut in 0usize..200,
            flip in proptest::option::of(0usize..1600),
        ) {
            let mut w = BitWriter::new();
            let mut prev = UserCmd::default();
            let mut starts = Vec::new();
            for c in &cmds {
                starts.push(w.bit_pos());
                write_delta_usercmd(&mut w, key, &prev, c);
                prev = *c;
            }
            let mut out = w.finish();
            out.truncate(cut.max(1));
            if let Some(f) = flip {
                let n = out.len();
                out[(f / 8) % n] ^= 1 << (f % 8);
            }
            let mut prev = UserCmd::default();
            for (&s, c) in starts.iter().zip(&cmds) {
                both(&out, s, key, &prev);
                prev = *c;
            }
        }

        #[test]
        fn prop_windowed_matches_exact_on_random_bytes(
            data in proptest::collection::vec(any::<u8>(), 0..40),
            start in 0usize..64,
            key in any::<i32>(),
            from in cmd_strategy(),
        ) {
            both(&data, start, key, &from);
        }
    }
    #[test]
    fn windowed_reports_nyt_codes_like_exact() {
        let nyt = (0u32..2048)
            .find(|&w| huffman::lut_entry(w) & NYT != 0)
            .expect("the static tree has a NYT code");
        let nyt = u64::from(nyt);
        // NYT as the 8-bit time delta; as the first angle (delta time 0, changed, angle
        // changed); and after three unchanged angles, as forwardmove.
        let zero = u64::from(huffman::code_of(0).0);
        let zl = u32::from(huffman::code_of(0).1);
        let layouts = [
            1 | (nyt << 1),
            1 | (zero << 1) | (0b11 << (1 + zl)) | (nyt << (3 + zl)),
            1 | (zero << 1) | (0b1 << (1 + zl)) | (0b1000 << (2 + zl)) | (nyt << (6 + zl)),
        ];
        for bits in layouts {
            let mut data = bits.to_le_bytes().to_vec();
            data.extend_from_slice(&[0x55; 8]);
            let got = read_delta_usercmd(&mut BitReader::new(&data), 7, &UserCmd::default());
            assert!(matches!(got, Err(BitError::Nyt { .. })), "{got:?}");
            both(&data, 0, 7, &UserCmd::default());
        }
    }
}
