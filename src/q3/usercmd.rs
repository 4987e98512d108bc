//! Keyed usercmd deltas (spec `q3-protocol.md` §5.2): `MSG_ReadDeltaUsercmdKey` /
//! `MSG_WriteDeltaUsercmdKey` with ioq3 semantics, and `MSG_HashKey`.
//!
//! The key only XORs values, never changes widths, so a wrong key corrupts values but not the
//! parse. ioq3's reader masks the key to the field width (1.32 used one bit too many, which
//! only ever differed in bit 16 of the 16-bit fields that the `int` angles then carried); we
//! mask like ioq3 and clamp a movement of -128 to -127 like ioq3's reader.

use serde::Serialize;

use crate::q3::bits::{BitError, BitReader, BitWriter};

/// `usercmd_t` as transmitted.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug, Serialize)]
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
}
