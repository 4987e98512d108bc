//! Engine-exact Quake 3 bitstream (spec `q3-protocol.md` §4.1): `MSG_ReadBits` /
//! `MSG_WriteBits` in bitstream mode, plus the byte/short/long/string helpers built on them.
//!
//! Packing: bit `p` of the stream is bit `p & 7` (LSB first) of byte `p >> 3`. An `n`-bit value
//! is sent as its low `n & 7` bits raw (LSB first), then `n >> 3` bytes, low byte first, each as
//! its static-tree Huffman code (`crate::q3::huffman`).
//!
//! Bookkeeping mirrors `msg_t`: `bit` is absolute, `readcount`/`cursize` = `(bit >> 3) + 1`.
//! A read is past the end exactly when the engine would find `readcount > cursize` after it,
//! i.e. when it ends at or beyond bit `8 * len` (the engine's writer always leaves a partly used
//! or extra zero byte, so a valid message never touches its final bit).

use crate::q3::huffman::{self, NYT};

/// Bitstream read errors. The position is the bit at which the failing read started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BitError {
    /// The read needed bits at or beyond the end of the message (engine: `readcount > cursize`).
    #[error("read past end of message at bit {bit}")]
    PastEnd {
        /// Bit position at which the failing read started.
        bit: usize,
    },
    /// A Huffman code decoded to the NYT leaf, which the engine's writer never emits.
    #[error("Huffman NYT code (not a valid netchan symbol) at bit {bit}")]
    Nyt {
        /// Bit position at which the failing read started.
        bit: usize,
    },
}

impl BitError {
    /// Bit position at which the failing read started.
    pub fn bit(&self) -> usize {
        match *self {
            BitError::PastEnd { bit } | BitError::Nyt { bit } => bit,
        }
    }
}

/// `MAX_STRING_CHARS - 1`: characters kept by [`BitReader::read_string`].
pub const MAX_STRING_CHARS: usize = 1024;
/// `BIG_INFO_STRING - 1`: characters kept by [`BitReader::read_big_string`].
pub const BIG_INFO_STRING: usize = 8192;

/// Reader over one message body (engine `msg_t` in bitstream mode).
#[derive(Clone, Debug)]
pub struct BitReader<'a> {
    data: &'a [u8],
    /// The last (up to) 8 bytes of `data` followed by zeros, so a 64-bit window near the end
    /// is one load instead of a byte loop (messages are short, the tail is hit often).
    tail: [u8; 16],
    /// Byte index in `data` of `tail[0]`.
    tail_start: usize,
    bit: usize,
    /// `8 * data.len()`: a read must end strictly before this bit (engine `readcount <= cursize`).
    limit: usize,
}

impl<'a> BitReader<'a> {
    /// Start reading `data` at bit 0 (`MSG_BeginReading`); `cursize` = `data.len()`.
    pub fn new(data: &'a [u8]) -> Self {
        let tail_start = data.len().saturating_sub(8);
        let mut tail = [0u8; 16];
        match data
            .get(tail_start..)
            .and_then(|t| <[u8; 8]>::try_from(t).ok())
        {
            // The usual case: one 8-byte move, not a memcpy call (two readers per message).
            Some(last8) => tail[..8].copy_from_slice(&last8),
            None => {
                for (t, &b) in tail.iter_mut().zip(data) {
                    *t = b;
                }
            }
        }
        BitReader {
            data,
            tail,
            tail_start,
            bit: 0,
            limit: data.len() * 8,
        }
    }

    /// Absolute bit position (engine `msg->bit`).
    #[inline]
    pub fn bit_pos(&self) -> usize {
        self.bit
    }

    /// Move to an absolute bit position, e.g. to re-read (0 = `MSG_BeginReading`). Positions
    /// past the end are clamped to the end (every further read is then `PastEnd`).
    pub fn set_bit_pos(&mut self, bit: usize) {
        self.bit = bit.min(self.limit);
    }

    /// Message length in bytes (engine `cursize`).
    #[inline]
    pub fn len_bytes(&self) -> usize {
        self.data.len()
    }

    /// The underlying message bytes.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// Engine `msg->readcount`: `(bit >> 3) + 1` after any read, 0 before the first.
    /// (Every read advances at least one bit, so "before the first read" is `bit == 0`.)
    #[inline]
    pub fn readcount(&self) -> usize {
        if self.bit == 0 {
            0
        } else {
            (self.bit >> 3) + 1
        }
    }

    /// True when a further read would be past the end in the engine's sense
    /// (`readcount > cursize`).
    pub fn is_past_end(&self) -> bool {
        self.readcount() > self.data.len()
    }

    /// At least 25 valid stream bits starting at `pos`, LSB first; bytes past the end read as 0.
    #[inline(always)]
    fn window(&self, pos: usize) -> u32 {
        let i = pos >> 3;
        let w = match self.data.get(i..i + 4) {
            Some(&[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]),
            _ => {
                let g = |k: usize| u32::from(self.data.get(i + k).copied().unwrap_or(0));
                g(0) | (g(1) << 8) | (g(2) << 16) | (g(3) << 24)
            }
        };
        w >> (pos & 7)
    }

    /// One raw bit (`MSG_ReadBits(msg, 1)`), the hot path of the delta decoders.
    #[inline(always)]
    pub fn read_bit(&mut self) -> Result<bool, BitError> {
        let pos = self.bit;
        // Same end rule as read_bits: the bit after this one must still be inside.
        if pos + 1 < self.limit {
            if let Some(&b) = self.data.get(pos >> 3) {
                self.bit = pos + 1;
                return Ok((b >> (pos & 7)) & 1 != 0);
            }
        }
        Err(BitError::PastEnd { bit: pos })
    }

    /// The next stream bits at the cursor, LSB first, without consuming them. At least 57 bits
    /// are valid; bits past the end of the message read as 0. For table-driven callers that
    /// then commit with [`advance`](Self::advance).
    #[inline(always)]
    pub fn peek64(&self) -> u64 {
        self.window64(self.bit)
    }

    /// Consume `n` bits already inspected with [`peek64`](Self::peek64). Returns false (and
    /// consumes nothing) if that would be past the end in the engine's sense.
    #[inline(always)]
    pub fn advance(&mut self, n: usize) -> bool {
        let end = self.bit + n;
        if end < self.limit {
            self.bit = end;
            true
        } else {
            false
        }
    }

    /// Consume consecutive 0 bits, at most `max`, stopping before the first 1 bit; returns how
    /// many were consumed. Equivalent to calling [`read_bit`](Self::read_bit) while it returns
    /// `false` (same end rule, same error position), but a whole run per window: the delta
    /// decoders use it to skip the "unchanged" bits of long field lists.
    #[inline]
    pub fn skip_zero_bits(&mut self, max: usize) -> Result<usize, BitError> {
        let mut done = 0;
        while done < max {
            let w = self.window64(self.bit);
            // Only 57 bits of the window are guaranteed; bytes past the end read as zero.
            let z = (w.trailing_zeros() as usize).min(57).min(max - done);
            if self.bit + z >= self.limit {
                let bit = self.bit.max(self.limit.saturating_sub(1));
                return Err(BitError::PastEnd { bit });
            }
            self.bit += z;
            done += z;
            if z < 57 {
                break;
            }
        }
        Ok(done)
    }

    /// Raw read of `n` (1..=32) bits at the cursor, no Huffman (for callers that need the
    /// engine's `Huff_getBit` directly). Same end rule as [`read_bits`](Self::read_bits).
    pub fn read_raw_bits(&mut self, n: u32) -> Result<u32, BitError> {
        let n = n.min(32);
        let start = self.bit;
        let end = start + n as usize;
        if end >= self.data.len() * 8 {
            return Err(BitError::PastEnd { bit: start });
        }
        let v = if n <= 25 {
            self.window(start) & mask(n)
        } else {
            let lo = self.window(start) & mask(16);
            let hi = self.window(start + 16) & mask(n - 16);
            lo | (hi << 16)
        };
        self.bit = end;
        Ok(v)
    }

    /// At least 57 valid stream bits starting at `pos`, LSB first; bytes past the end read as 0.
    /// One load covers any `read_bits`: 7 raw bits + 4 codes of at most 11 bits = 51 bits.
    #[inline(always)]
    fn window64(&self, pos: usize) -> u64 {
        let i = pos >> 3;
        let bytes = match self.data.get(i..i + 8) {
            Some(&[a, b, c, d, e, f, g, h]) => [a, b, c, d, e, f, g, h],
            _ => {
                // Within the last 8 bytes (or past the end: the caller rejects that read).
                let k = i.wrapping_sub(self.tail_start);
                match self.tail.get(k..k + 8) {
                    Some(&[a, b, c, d, e, f, g, h]) => [a, b, c, d, e, f, g, h],
                    _ => [0; 8],
                }
            }
        };
        u64::from_le_bytes(bytes) >> (pos & 7)
    }

    /// `MSG_ReadBits` in bitstream mode: `n` in 1..=32 reads unsigned, -1..=-32 reads signed
    /// (sign-extended from bit `|n|-1`). The low `|n| & 7` bits come raw, then `|n| >> 3`
    /// Huffman-coded bytes. `n = 0` reads nothing and returns 0; widths beyond 32 are clamped.
    ///
    /// On error the cursor is left where the read started.
    #[inline]
    pub fn read_bits(&mut self, n: i32) -> Result<i32, BitError> {
        // The widths used by the protocol get straight-line code.
        match n {
            1 => self.read_bit().map(i32::from),
            4 => self.read_const::<4>(false),
            5 => self.read_const::<5>(false),
            8 => self.read_const::<8>(false),
            -8 => self.read_const::<8>(true),
            12 => self.read_const::<12>(false),
            -16 => self.read_const::<16>(true),
            10 => self.read_const::<10>(false),
            13 => self.read_const::<13>(false),
            16 => self.read_const::<16>(false),
            32 => self.read_const::<32>(false),
            _ => self.read_var(n),
        }
    }

    /// `read_bits` for a width known at compile time (1..=32): the decode loop unrolls.
    #[inline(always)]
    fn read_const<const BITS: u32>(&mut self, signed: bool) -> Result<i32, BitError> {
        self.read_window(if signed { -(BITS as i32) } else { BITS as i32 })
    }

    /// `read_bits` for any width.
    #[inline]
    fn read_var(&mut self, n: i32) -> Result<i32, BitError> {
        self.read_window(n)
    }

    /// One 64-bit window through [`decode_window`], a single end/NYT check at the end; a read
    /// that fails it is redone by the exact reader ([`read_bits_checked`](Self::read_bits_checked)).
    #[inline(always)]
    fn read_window(&mut self, n: i32) -> Result<i32, BitError> {
        let start = self.bit;
        let d = decode_window(self.window64(start), n);
        let end = start + d.bits as usize;
        if end >= self.limit || d.nyt {
            // Rare: let the step-by-step reader classify the error precisely.
            return self.read_bits_checked(n);
        }
        self.bit = end;
        Ok(d.value)
    }

    /// Step-by-step `read_bits` with the exact error rules: a code crossing the end is
    /// `PastEnd` (the engine stops walking the tree there), a complete NYT code is `Nyt`.
    #[cold]
    pub(crate) fn read_bits_checked(&mut self, n: i32) -> Result<i32, BitError> {
        let bits = n.unsigned_abs().min(32);
        let start = self.bit;
        let limit = self.data.len() * 8;
        let nraw = bits & 7;
        let mut pos = start;
        let mut value: u32 = 0;
        if nraw != 0 {
            value = self.window(pos) & mask(nraw);
            pos += nraw as usize;
        }
        let mut shift = nraw;
        while shift < bits {
            if pos >= limit {
                return Err(BitError::PastEnd { bit: start });
            }
            let (sym, len) = huffman::decode_window(self.window(pos));
            if pos + len as usize > limit {
                return Err(BitError::PastEnd { bit: start });
            }
            if sym == NYT {
                return Err(BitError::Nyt { bit: pos });
            }
            value |= u32::from(sym) << shift;
            pos += len as usize;
            shift += 8;
        }
        if pos >= limit {
            return Err(BitError::PastEnd { bit: start });
        }
        self.bit = pos;
        if n < 0 && bits > 0 && bits < 32 && value & (1 << (bits - 1)) != 0 {
            value |= !mask(bits);
        }
        Ok(value as i32)
    }

    /// `MSG_ReadByte` (8 bits unsigned).
    #[inline(always)]
    pub fn read_byte(&mut self) -> Result<u8, BitError> {
        Ok(self.read_const::<8>(false)? as u8)
    }

    /// `MSG_ReadShort` (16 bits, as a signed short).
    #[inline]
    pub fn read_short(&mut self) -> Result<i16, BitError> {
        Ok(self.read_const::<16>(false)? as i16)
    }

    /// The 13-bit (`FLOAT_INT_BITS`) integral-float body, unsigned and still biased.
    #[inline(always)]
    pub fn read_float_int(&mut self) -> Result<i32, BitError> {
        self.read_const::<13>(false)
    }

    /// `MSG_ReadLong` (32 bits).
    #[inline]
    pub fn read_long(&mut self) -> Result<i32, BitError> {
        self.read_const::<32>(false)
    }

    /// `MSG_ReadString`: bytes up to NUL, `%` and bytes > 127 become `.`.
    ///
    /// Length rule exactly as ioq3: once 1023 characters are stored, the next non-NUL byte is
    /// read and the loop stops *without* consuming the rest of the string (so the next read
    /// starts inside it). id 1.32 stops one byte earlier (it does not read the 1024th byte).
    pub fn read_string(&mut self) -> Result<String, BitError> {
        self.read_string_max(MAX_STRING_CHARS - 1)
    }

    /// `MSG_ReadBigString`: as [`read_string`](Self::read_string) with 8191 characters (ioq3
    /// mapping of bytes > 127; id 1.32 maps only `%` here).
    pub fn read_big_string(&mut self) -> Result<String, BitError> {
        self.read_string_max(BIG_INFO_STRING - 1)
    }

    /// `MSG_ReadData`: fill `out` with consecutive 8-bit reads.
    pub fn read_data(&mut self, out: &mut [u8]) -> Result<(), BitError> {
        for b in out.iter_mut() {
            *b = self.read_byte()?;
        }
        Ok(())
    }

    /// Raw bytes of a NUL-terminated string (no mapping, no length limit, NUL consumed).
    pub fn read_string_bytes(&mut self) -> Result<Vec<u8>, BitError> {
        let mut out = Vec::new();
        loop {
            match self.read_byte()? {
                0 => return Ok(out),
                c => out.push(c),
            }
        }
    }

    /// Quake Live's `MSG_ReadString`: bytes above 127 are kept (its text is UTF-8; a byte
    /// sequence that is not valid UTF-8 reads as U+FFFD), `%` still becomes `.`.
    pub fn read_string_utf8(&mut self) -> Result<String, BitError> {
        self.read_string_utf8_max(MAX_STRING_CHARS - 1)
    }

    /// Quake Live's `MSG_ReadBigString`, as [`read_string_utf8`](Self::read_string_utf8).
    pub fn read_big_string_utf8(&mut self) -> Result<String, BitError> {
        self.read_string_utf8_max(BIG_INFO_STRING - 1)
    }

    fn read_string_utf8_max(&mut self, max: usize) -> Result<String, BitError> {
        let mut out: Vec<u8> = Vec::with_capacity(128);
        self.read_string_chars_as::<true>(max, &mut out)?;
        Ok(match String::from_utf8(out) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
    }

    fn read_string_max(&mut self, max: usize) -> Result<String, BitError> {
        // One allocation for most strings instead of growing from empty.
        let mut out: Vec<u8> = Vec::with_capacity(128);
        self.read_string_chars(max, &mut out)?;
        Ok(String::from_utf8(out).unwrap_or_default()) // all bytes are ASCII by construction
    }

    /// The characters of a string appended to `out` (at most `max` kept).
    fn read_string_chars(&mut self, max: usize, out: &mut Vec<u8>) -> Result<(), BitError> {
        self.read_string_chars_as::<false>(max, out)
    }

    /// [`read_string_chars`](Self::read_string_chars); with `UTF8` bytes above 127 kept.
    #[inline(always)]
    fn read_string_chars_as<const UTF8: bool>(
        &mut self,
        max: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), BitError> {
        'window: loop {
            // Up to 5 codes per 64-bit window (5 * 11 = 55 <= 57 valid bits).
            let mut w = self.window64(self.bit);
            let mut pos = self.bit;
            for _ in 0..5 {
                let e = huffman::lut_entry(w as u32);
                let len = usize::from(e >> 9);
                if pos + len >= self.limit || e & NYT != 0 {
                    // End of buffer or NYT: the exact reader produces the error.
                    self.bit = pos;
                    self.read_bits_checked(8)?;
                    // Unreachable in practice (the checked read fails); resume generically.
                    continue 'window;
                }
                pos += len;
                w >>= len;
                let c = e as u8;
                // ioq3: a character that no longer fits is consumed, the rest is not.
                if c == 0 || out.len() >= max {
                    self.bit = pos;
                    return Ok(());
                }
                out.push(if c == b'%' || (c > 127 && !UTF8) {
                    b'.'
                } else {
                    c
                });
            }
            self.bit = pos;
        }
    }

    /// `read_bits` for an unsigned width fixed at compile time (1..=32): straight-line code
    /// at the call site, whatever the inliner decides for the general `read_bits`.
    #[inline(always)]
    pub fn read_bits_fixed<const BITS: u32>(&mut self) -> Result<i32, BitError> {
        if BITS == 1 {
            return self.read_bit().map(i32::from);
        }
        self.read_const::<BITS>(false)
    }

    /// [`read_string`](Self::read_string) into a reused buffer (cleared first), so a caller
    /// that keeps few of the strings it reads allocates nothing. Same bytes, same end
    /// position, same errors (the loop is `read_string_max`'s).
    pub fn read_string_into(&mut self, out: &mut Vec<u8>) -> Result<(), BitError> {
        out.clear();
        self.read_string_chars(MAX_STRING_CHARS - 1, out)
    }
}

#[inline(always)]
fn mask(bits: u32) -> u32 {
    if bits >= 32 {
        u32::MAX
    } else {
        (1u32 << bits) - 1
    }
}

/// `n` times `MSG_ReadByte`, appended to `out`: five byte codes per 64-bit window (a
/// download block is up to 16 KB). From the first window that cannot be committed (the
/// message end, a NYT code) the bytes are read one at a time, so the error is the engine's.
pub fn read_bytes_into(r: &mut BitReader<'_>, n: usize, out: &mut Vec<u8>) -> Result<(), BitError> {
    let start = out.len();
    out.resize(start + n, 0);
    let mut done = 0;
    for chunk in out[start..].chunks_exact_mut(5) {
        let mut w = r.peek64();
        let mut used = 0usize;
        let mut flags = 0u16;
        for b in chunk.iter_mut() {
            let e = huffman::lut_entry(w as u32);
            let len = e >> 9;
            flags |= e;
            *b = e as u8;
            w >>= len;
            used += usize::from(len);
        }
        if flags & NYT != 0 || !r.advance(used) {
            break;
        }
        done += 5;
    }
    out.truncate(start + done);
    for _ in done..n {
        out.push(r.read_byte()?);
    }
    Ok(())
}

/// What [`decode_window`] read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// The value read: masked to `n` bits, sign-extended for a negative (signed) `n`.
    pub value: i32,
    /// Stream bits the value took.
    pub bits: u32,
    /// A Huffman code was the NYT leaf (the read is invalid).
    pub nyt: bool,
}

/// `MSG_ReadBits(n)` decoded from the stream bits in `w` (LSB first, as
/// [`BitReader::peek64`] gives them), with no end check: `n` in 1..=32 unsigned, -32..=-1
/// signed. Needs at most 51 bits of `w` (7 raw bits and four 11-bit codes). The delta
/// readers decode a whole field from one window with it, then commit with
/// [`BitReader::advance`], whose end rule is the engine's; a read that fails either check is
/// re-done by the exact step-by-step reader for its error.
#[inline(always)]
pub fn decode_window(mut w: u64, n: i32) -> Decoded {
    let bits = n.unsigned_abs().min(32);
    let nraw = bits & 7;
    let mut value = (w as u32) & mask(nraw);
    w >>= nraw;
    let mut consumed = nraw;
    let mut flags = 0u16;
    let mut shift = nraw;
    while shift < bits {
        let e = huffman::lut_entry(w as u32);
        let len = u32::from(e >> 9);
        flags |= e;
        value |= u32::from(e & 0xff) << shift;
        w >>= len;
        consumed += len;
        shift += 8;
    }
    if n < 0 && bits < 32 && value & (1 << (bits - 1)) != 0 {
        value |= !mask(bits);
    }
    Decoded {
        value: value as i32,
        bits: consumed,
        nyt: flags & NYT != 0,
    }
}

/// Writer producing a message body exactly like `MSG_WriteBits` in bitstream mode.
#[derive(Clone, Debug, Default)]
pub struct BitWriter {
    buf: Vec<u8>,
    bit: usize,
}

impl BitWriter {
    /// Empty message (`MSG_Init` + `MSG_Bitstream`).
    pub fn new() -> Self {
        BitWriter {
            buf: Vec::with_capacity(64),
            bit: 0,
        }
    }

    /// Absolute bit position (engine `msg->bit`).
    #[inline]
    pub fn bit_pos(&self) -> usize {
        self.bit
    }

    /// Engine `cursize` if the message ended now: `(bit >> 3) + 1`.
    pub fn cursize(&self) -> usize {
        (self.bit >> 3) + 1
    }

    /// Append `n` (0..=32) raw bits of `value`, LSB first (the engine's `Huff_putBit` loop).
    #[inline]
    pub fn put_raw(&mut self, value: u32, n: u32) {
        let n = n.min(32);
        let v = (u64::from(value) & u64::from(mask(n))) << (self.bit & 7);
        let i = self.bit >> 3;
        // Keep 8 zero bytes of slack past the cursor so the OR below is one 64-bit store;
        // `finish` trims to the engine's cursize. Bytes past the cursor are always zero.
        if self.buf.len() < i + 8 {
            self.buf.resize(i + 64, 0);
        }
        if let Some(chunk) = self.buf.get_mut(i..i + 8) {
            let mut b = [0u8; 8];
            b.copy_from_slice(chunk);
            chunk.copy_from_slice(&(u64::from_le_bytes(b) | v).to_le_bytes());
        }
        self.bit += n as usize;
    }

    /// `MSG_WriteBits` in bitstream mode: `n` in 1..=32 or -1..=-31 (sign only matters to the
    /// reader); the value is masked to `|n|` bits. `n = 0` writes nothing (the engine errors).
    #[inline]
    pub fn write_bits(&mut self, value: i32, n: i32) {
        let bits = n.unsigned_abs().min(32);
        let mut v = value as u32 & mask(bits);
        let nraw = bits & 7;
        if nraw != 0 {
            self.put_raw(v, nraw);
            v >>= nraw;
        }
        for _ in 0..(bits >> 3) {
            self.put_symbol(v as u8);
            v >>= 8;
        }
    }

    /// The static-tree code of `sym` (engine `Huff_offsetTransmit` on the netchan tree).
    #[inline]
    fn put_symbol(&mut self, sym: u8) {
        let (code, len) = huffman::code_of(sym);
        self.put_raw(u32::from(code), u32::from(len));
    }

    /// One raw bit (`MSG_WriteBits(msg, b, 1)`).
    #[inline]
    pub fn write_bit(&mut self, b: bool) {
        self.put_raw(u32::from(b), 1);
    }

    /// Bits the static code of `byte` occupies (handy for computing positions).
    pub fn byte_len_bits(byte: u8) -> usize {
        usize::from(huffman::code_of(byte).1)
    }

    /// `MSG_WriteByte`.
    pub fn write_byte(&mut self, v: u8) {
        self.write_bits(i32::from(v), 8);
    }

    /// `MSG_WriteShort`.
    pub fn write_short(&mut self, v: i16) {
        self.write_bits(i32::from(v), 16);
    }

    /// `MSG_WriteLong`.
    pub fn write_long(&mut self, v: i32) {
        self.write_bits(v, 32);
    }

    /// `MSG_WriteString`: the string up to its first NUL, bytes > 127 and `%` written as `.`,
    /// then a NUL. Strings of 1024 or more bytes are replaced by the empty string.
    pub fn write_string(&mut self, s: &str) {
        self.write_string_max(s.as_bytes(), MAX_STRING_CHARS);
    }

    /// `MSG_WriteBigString`: as [`write_string`](Self::write_string) with the 8192 limit.
    pub fn write_big_string(&mut self, s: &str) {
        self.write_string_max(s.as_bytes(), BIG_INFO_STRING);
    }

    /// Quake Live's `MSG_WriteString`: as [`write_string`](Self::write_string) but bytes
    /// above 127 (UTF-8) are written as they are.
    pub fn write_string_utf8(&mut self, s: &str) {
        self.write_string_bytes(s.as_bytes(), MAX_STRING_CHARS, true);
    }

    /// Quake Live's `MSG_WriteBigString`, as [`write_string_utf8`](Self::write_string_utf8).
    pub fn write_big_string_utf8(&mut self, s: &str) {
        self.write_string_bytes(s.as_bytes(), BIG_INFO_STRING, true);
    }

    fn write_string_max(&mut self, s: &[u8], limit: usize) {
        self.write_string_bytes(s, limit, false);
    }

    fn write_string_bytes(&mut self, s: &[u8], limit: usize, utf8: bool) {
        let l = s.iter().position(|&c| c == 0).unwrap_or(s.len());
        if l < limit {
            for &c in s.iter().take(l) {
                let keep = c != b'%' && (c <= 127 || utf8);
                self.write_byte(if keep { c } else { b'.' });
            }
        }
        self.write_byte(0);
    }

    /// `MSG_WriteData`: each byte as an 8-bit (Huffman-coded) write.
    pub fn write_raw_bytes_huffman(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_byte(b);
        }
    }

    /// The finished message: `cursize` = `(bit >> 3) + 1` bytes, so a bit count that is a
    /// multiple of 8 gets one extra zero byte, as in the engine.
    pub fn finish(mut self) -> Vec<u8> {
        self.buf.resize((self.bit >> 3) + 1, 0);
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hex(b: &[u8]) -> String {
        b.iter()
            .map(|x| format!("{x:02x}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// §4.4: longs 0x12345, 100, 3 and byte 5 -> 61 bits, cursize 8.
    #[test]
    fn spec_4_4_vector_longs_and_eof() {
        let mut w = BitWriter::new();
        w.write_long(0x12345);
        w.write_long(100);
        w.write_long(3);
        w.write_byte(5);
        assert_eq!(w.bit_pos(), 61);
        let out = w.finish();
        assert_eq!(hex(&out), "51 cd 6e 2f a9 6c 35 02");

        let mut r = BitReader::new(&out);
        assert_eq!(r.readcount(), 0);
        assert_eq!(r.read_long(), Ok(0x12345));
        assert_eq!(r.read_long(), Ok(100));
        assert_eq!(r.read_long(), Ok(3));
        assert_eq!(r.read_byte(), Ok(5));
        assert_eq!(r.bit_pos(), 61);
        assert_eq!(r.readcount(), 8);
        assert!(!r.is_past_end());
        // Only 3 bits left: any Huffman byte runs past the end.
        assert_eq!(r.read_byte(), Err(BitError::PastEnd { bit: 61 }));
    }

    /// §4.4: three zero longs + byte 5 -> 32 bits, cursize 5 (extra zero byte).
    #[test]
    fn spec_4_4_vector_zero_longs() {
        let mut w = BitWriter::new();
        for _ in 0..3 {
            w.write_long(0);
        }
        w.write_byte(5);
        assert_eq!(w.bit_pos(), 32);
        let out = w.finish();
        assert_eq!(hex(&out), "aa aa aa 11 00");
        let mut r = BitReader::new(&out);
        for _ in 0..3 {
            assert_eq!(r.read_long(), Ok(0));
        }
        assert_eq!(r.read_byte(), Ok(5));
        assert_eq!(r.readcount(), 5);
    }

    /// §4.4: 10-bit 1023, 1-bit 1, 13-bit 4091 -> 21 bits.
    #[test]
    fn spec_4_4_vector_odd_widths() {
        let mut w = BitWriter::new();
        w.write_bits(1023, 10);
        w.write_bits(1, 1);
        w.write_bits(4091, 13);
        assert_eq!(w.bit_pos(), 21);
        let out = w.finish();
        assert_eq!(hex(&out), "93 77 19");
        let mut r = BitReader::new(&out);
        assert_eq!(r.read_bits(10), Ok(1023));
        assert_eq!(r.read_bits(1), Ok(1));
        assert_eq!(r.read_bits(13), Ok(4091));
        // Signed re-read of the same bits.
        r.set_bit_pos(0);
        assert_eq!(r.read_bits(-10), Ok(-1));
        assert_eq!(r.read_bits(-1), Ok(-1));
        assert_eq!(r.read_bits(-13), Ok(4091)); // bit 12 clear: stays positive
    }

    #[test]
    fn exact_end_is_past_end_like_the_engine() {
        // One raw byte worth of bits in a 1-byte buffer: reading all 8 leaves readcount 2 > 1.
        let data = [0xffu8];
        let mut r = BitReader::new(&data);
        assert_eq!(r.read_bits(7), Ok(0x7f));
        assert_eq!(r.readcount(), 1);
        assert_eq!(r.read_bits(1), Err(BitError::PastEnd { bit: 7 }));
        assert_eq!(r.bit_pos(), 7);
        let e = crate::error::Error::from(&crate::q3::svc::SvcError::Bits(BitError::PastEnd {
            bit: 7,
        }));
        assert_eq!(
            (e.kind, e.pos.bit),
            (crate::error::ErrorKind::Truncated, Some(7))
        );
    }

    #[test]
    fn nyt_is_an_error() {
        // NYT = 00000000100 in transmission order -> bit 8 set.
        let data = [0x00u8, 0x01, 0x00, 0x00];
        let mut r = BitReader::new(&data);
        assert_eq!(r.read_byte(), Err(BitError::Nyt { bit: 0 }));
    }

    #[test]
    fn strings_map_and_limits() {
        let mut w = BitWriter::new();
        w.write_string("a%b\u{e9}c");
        w.write_string(&"x".repeat(1024)); // too long -> empty
        w.write_big_string(&"y".repeat(1500));
        w.write_string("tail\0ignored");
        let out = w.finish();
        let mut r = BitReader::new(&out);
        assert_eq!(r.read_string().as_deref(), Ok("a.b..c"));
        assert_eq!(r.read_string().as_deref(), Ok(""));
        assert_eq!(r.read_big_string(), Ok("y".repeat(1500)));
        assert_eq!(r.read_string().as_deref(), Ok("tail"));
    }

    #[test]
    fn read_string_overlong_stops_like_ioq3() {
        // A 1100-char string written raw: ReadString keeps 1023, consumes the 1024th, stops.
        let mut w = BitWriter::new();
        let mut bytes = vec![b'a'; 1023];
        bytes.extend_from_slice(b"BCD");
        bytes.push(0);
        w.write_raw_bytes_huffman(&bytes);
        w.write_byte(7);
        let out = w.finish();
        let mut r = BitReader::new(&out);
        assert_eq!(r.read_string(), Ok("a".repeat(1023)));
        assert_eq!(r.read_byte(), Ok(b'C'));
        let mut r = BitReader::new(&out);
        assert_eq!(r.read_string_bytes().map(|v| v.len()), Ok(1026));
        assert_eq!(r.read_byte(), Ok(7));
    }

    #[test]
    fn writer_cursize_and_raw() {
        let mut w = BitWriter::new();
        assert_eq!(w.cursize(), 1);
        w.put_raw(0x1ff, 9);
        assert_eq!(w.cursize(), 2);
        assert_eq!(w.finish(), vec![0xff, 0x01]);
        let mut r = BitReader::new(&[0xff, 0x01, 0]);
        assert_eq!(r.read_raw_bits(9), Ok(0x1ff));
    }

    fn width() -> impl Strategy<Value = i32> {
        prop_oneof![1i32..=32, -31i32..=-1]
    }

    proptest! {
        /// The windowed byte reader is `n` times `read_byte`: same bytes, same end position,
        /// same error (random data holds NYT codes and ends inside codes).
        #[test]
        fn prop_read_bytes_into_equals_read_byte(
            data in proptest::collection::vec(any::<u8>(), 0..64),
            start in 0usize..64,
            n in 0usize..80,
        ) {
            let mut r1 = BitReader::new(&data);
            r1.set_bit_pos(start);
            let mut r2 = r1.clone();
            let mut fast = Vec::new();
            let a = read_bytes_into(&mut r1, n, &mut fast);
            let mut slow = Vec::new();
            let b = (0..n).try_for_each(|_| r2.read_byte().map(|v| slow.push(v)));
            prop_assert_eq!(a, b);
            prop_assert_eq!(fast, slow);
            if a.is_ok() {
                prop_assert_eq!(r1.bit_pos(), r2.bit_pos());
            }
        }
    }

    proptest! {
        #[test]
        fn prop_bits_roundtrip(items in proptest::collection::vec((width(), any::<i32>()), 0..64)) {
            let mut w = BitWriter::new();
            let mut positions = Vec::new();
            for &(n, v) in &items {
                w.write_bits(v, n);
                positions.push(w.bit_pos());
            }
            let end = w.bit_pos();
            let out = w.finish();
            prop_assert_eq!(out.len(), (end >> 3) + 1);
            let mut r = BitReader::new(&out);
            for (&(n, v), &pos) in items.iter().zip(&positions) {
                let bits = n.unsigned_abs();
                let m = if bits == 32 { u32::MAX } else { (1u32 << bits) - 1 };
                let masked = v as u32 & m;
                let expect = if n < 0 && bits < 32 && masked & (1 << (bits - 1)) != 0 {
                    (masked | !m) as i32
                } else {
                    masked as i32
                };
                prop_assert_eq!(r.read_bits(n), Ok(expect));
                prop_assert_eq!(r.bit_pos(), pos);
                prop_assert_eq!(r.readcount(), (pos >> 3) + 1);
            }
        }

        #[test]
        fn prop_strings_roundtrip(s in "[ -~]{0,1100}", big in "[ -~\u{80}-\u{3ff}]{0,200}") {
            let mut w = BitWriter::new();
            w.write_string(&s);
            w.write_big_string(&big);
            let out = w.finish();
            let mut r = BitReader::new(&out);
            let expect: String = if s.len() >= 1024 { String::new() } else { s.replace('%', ".") };
            prop_assert_eq!(r.read_string(), Ok(expect));
            let expect_big: String = big
                .bytes()
                .map(|c| if c > 127 || c == b'%' { '.' } else { char::from(c) })
                .collect();
            prop_assert_eq!(r.read_big_string(), Ok(expect_big));
        }

        #[test]
        fn prop_random_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..64),
                                         widths in proptest::collection::vec(width(), 1..40)) {
            let mut r = BitReader::new(&data);
            for n in widths {
                let before = r.bit_pos();
                match r.read_bits(n) {
                    Ok(_) => prop_assert!(r.bit_pos() < data.len() * 8),
                    Err(e) => {
                        prop_assert_eq!(r.bit_pos(), before);
                        if let BitError::PastEnd { bit } = e { prop_assert_eq!(bit, before); }
                        break;
                    }
                }
            }
            let mut r = BitReader::new(&data);
            let _ = r.read_string();
            let _ = r.read_big_string();
        }

        #[test]
        fn prop_truncation_gives_past_end(vals in proptest::collection::vec(any::<i32>(), 1..20), cut in 0usize..100) {
            let mut w = BitWriter::new();
            for &v in &vals { w.write_long(v); }
            let out = w.finish();
            let cut = cut % out.len();
            let data = &out[..cut];
            let mut r = BitReader::new(data);
            let mut failed = None;
            for &v in &vals {
                match r.read_long() {
                    Ok(x) => prop_assert_eq!(x, v),
                    Err(e) => { failed = Some(e); break; }
                }
            }
            match failed {
                Some(BitError::PastEnd { bit }) => prop_assert!(bit <= cut * 8),
                other => prop_assert!(false, "expected PastEnd, got {:?}", other),
            }
        }
    }
}

/// Real data: the first record of a demo recorded by ioq3 (the repository's `q3-basic`
/// capture).
#[cfg(test)]
mod demo_tests {
    use super::*;
    use crate::q3::demo::Reader;

    /// Bodies of the records of `captures/q3-basic/client1-demo0.dm_68`.
    fn records() -> Vec<Vec<u8>> {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("captures/q3-basic/client1-demo0.dm_68");
        let data = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        Reader::new(&data)
            .map(|r| r.map(|r| r.body.to_vec()))
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    #[test]
    fn demo_first_record_gamestate_prefix() {
        let recs = records();
        assert_eq!(recs.len(), 454);
        let mut r = BitReader::new(&recs[0]);
        let _ack = r.read_long().expect("ack");
        assert_eq!(r.read_byte(), Ok(2), "svc_gamestate");
        let _cmd_seq = r.read_long().expect("serverCommandSequence");
        assert_eq!(r.read_byte(), Ok(3), "svc_configstring");
        assert_eq!(r.read_short(), Ok(0), "CS_SERVERINFO comes first");
        let info = r.read_big_string().expect("serverinfo");
        assert!(info.starts_with('\\'), "{info}");
        assert!(info.contains("\\mapname\\oa_dm1"), "{info}");
        // Keep going through every configstring to the first baseline op.
        loop {
            match r.read_byte() {
                Ok(3) => {
                    let idx = r.read_short().expect("index");
                    assert!((0..1024).contains(&idx));
                    r.read_big_string().expect("value");
                }
                Ok(op) => {
                    assert_eq!(op, 4, "svc_baseline follows the configstrings");
                    break;
                }
                Err(e) => panic!("{e}"),
            }
        }
        // The engine's trace prints readcount 1776 after the first baseline's lc byte; the
        // entity number (10 bits) + remove bit + delta bit + lc byte come first.
        let number = r.read_bits(10).expect("number");
        assert_eq!(number, 79);
        assert_eq!(r.read_bits(1), Ok(0));
        assert_eq!(r.read_bits(1), Ok(1));
        let lc = r.read_byte().expect("lc");
        // modelindex (field 29) is the last one this baseline changes.
        assert_eq!(lc, 30);
        assert_eq!(r.readcount(), 1776);
    }
}

#[cfg(test)]
mod more_tests {
    use super::*;

    #[test]
    fn static_symbols_roundtrip_through_bitstream() {
        let mut w = BitWriter::new();
        for s in 0..=255u8 {
            w.write_byte(s);
        }
        let out = w.finish();
        let mut r = BitReader::new(&out);
        for s in 0..=255u8 {
            assert_eq!(r.read_byte(), Ok(s));
        }
    }

    #[test]
    fn set_bit_pos_clamps_and_read_data() {
        let mut w = BitWriter::new();
        w.write_raw_bytes_huffman(&[1, 2, 3, 250]);
        let out = w.finish();
        let mut r = BitReader::new(&out);
        let mut buf = [0u8; 4];
        assert_eq!(r.read_data(&mut buf), Ok(()));
        assert_eq!(buf, [1, 2, 3, 250]);
        r.set_bit_pos(usize::MAX);
        assert_eq!(r.bit_pos(), out.len() * 8);
        assert!(matches!(r.read_bit(), Err(BitError::PastEnd { .. })));
        assert!(matches!(r.read_long(), Err(BitError::PastEnd { .. })));
        assert!(matches!(r.skip_zero_bits(5), Err(BitError::PastEnd { .. })));
        assert!(!r.advance(1));
        assert_eq!(r.readcount(), out.len() + 1);
        assert!(r.is_past_end());
    }
}
