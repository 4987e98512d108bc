//! Little-endian byte reader over one message, with the byte position kept for errors.
//! Every read is checked: running off the end is a [`DecodeError`], never a panic.

/// What went wrong while decoding and at which byte of the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} at byte {at}")]
pub struct DecodeError {
    /// What could not be read.
    pub what: String,
    /// Byte position in the enclosing packet.
    pub at: usize,
}

/// A read's result.
pub type Result<T> = std::result::Result<T, DecodeError>;

use std::cell::Cell;

/// A reader over `buf`; `base` is added to positions so errors and traces can name offsets
/// in the enclosing packet (e.g. after the 8-byte netchan header).
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
    /// The questions about the negotiated extensions the decode of this message asked (the
    /// bits of [`super::ext::Asked`]): a decode under other extensions that answer them
    /// alike reads the message the same way. A cell: some readers peek through `&self`.
    asked: Cell<u64>,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader::with_base(buf, 0)
    }
    /// A reader at the start of `buf`, which begins at byte `base` of its packet.
    pub fn with_base(buf: &'a [u8], base: usize) -> Self {
        Reader {
            buf,
            pos: 0,
            base,
            asked: Cell::new(0),
        }
    }
    /// Record that the decode asked the extension questions `bits`.
    pub fn ask(&self, bits: u64) {
        self.asked.set(self.asked.get() | bits);
    }
    /// The extension questions asked so far.
    pub fn asked(&self) -> u64 {
        self.asked.get()
    }
    /// Position in the enclosing packet.
    pub fn pos(&self) -> usize {
        self.base + self.pos
    }
    /// Bytes left to read.
    pub fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }
    /// Nothing left to read.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }
    /// The bytes not read yet (nothing is consumed).
    pub fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or(&[])
    }
    /// An error saying `what`, at the current position.
    pub fn err(&self, what: impl Into<String>) -> DecodeError {
        DecodeError {
            what: what.into(),
            at: self.pos(),
        }
    }
    /// The next `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .ok_or_else(|| self.err("length overflow"))?;
        match self.buf.get(self.pos..end) {
            Some(s) => {
                self.pos = end;
                Ok(s)
            }
            None => Err(self.err(format!(
                "truncated: need {n} bytes, {} left",
                self.remaining()
            ))),
        }
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let s = self.bytes(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }
    /// One unsigned byte (`MSG_ReadByte`).
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.array::<1>()?[0])
    }
    /// One signed byte (`MSG_ReadChar`).
    pub fn i8(&mut self) -> Result<i8> {
        Ok(self.u8()? as i8)
    }
    /// A little-endian unsigned 16-bit value.
    pub fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array()?))
    }
    /// A little-endian signed 16-bit value (`MSG_ReadShort`).
    pub fn i16(&mut self) -> Result<i16> {
        Ok(i16::from_le_bytes(self.array()?))
    }
    /// A little-endian unsigned 32-bit value.
    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    /// A little-endian signed 32-bit value (`MSG_ReadLong`).
    pub fn i32(&mut self) -> Result<i32> {
        Ok(i32::from_le_bytes(self.array()?))
    }
    /// A little-endian 32-bit float (`MSG_ReadFloat`).
    pub fn f32(&mut self) -> Result<f32> {
        Ok(f32::from_le_bytes(self.array()?))
    }
    /// A NUL-terminated string. Like the modern engines (mvdsv, ezQuake `MSG_ReadString`),
    /// 0xFF bytes are skipped; a missing NUL at the end of the message ends the string too
    /// (the engines do the same: a bad read returns what was read). High-bit Quake characters
    /// are kept as Latin-1 so nothing is lost.
    pub fn string(&mut self) -> Result<String> {
        let mut s = String::new();
        loop {
            if self.is_empty() {
                return Ok(s);
            }
            let c = self.u8()?;
            match c {
                0 => return Ok(s),
                0xFF => continue,
                c => s.push(c as char),
            }
        }
    }
    /// A string that also stops at `\n` (connectionless text lines).
    pub fn string_line(&mut self) -> Result<String> {
        let mut s = String::new();
        while !self.is_empty() {
            let c = self.u8()?;
            match c {
                0 | b'\n' => break,
                0xFF => continue,
                c => s.push(c as char),
            }
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_fails_without_panic() {
        let mut r = Reader::with_base(&[1, 2, 3, b'a', 0xFF, b'b', 0], 8);
        assert_eq!(r.u16().unwrap(), 0x0201);
        assert_eq!(r.pos(), 10);
        assert_eq!(r.u8().unwrap(), 3);
        assert_eq!(r.string().unwrap(), "ab");
        let e = r.u32().unwrap_err();
        assert_eq!(e.at, 15);
    }
}
