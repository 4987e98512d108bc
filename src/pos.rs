//! Where something happened: file frame number, byte offset, bit offset.
use std::fmt;

/// A position in the input. `frame` is the 1-based capture frame number (as Wireshark shows
/// it), or the 1-based record number in a demo file; `byte` is a byte offset in the file or in
/// the message, depending on context; `bit` a bit offset inside the decoded message body.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Pos {
    pub frame: u64,
    pub byte: Option<u64>,
    pub bit: Option<u64>,
}

impl Pos {
    pub fn frame(frame: u64) -> Self {
        Pos {
            frame,
            byte: None,
            bit: None,
        }
    }
    pub fn with_bit(mut self, bit: u64) -> Self {
        self.bit = Some(bit);
        self
    }
    pub fn with_byte(mut self, byte: u64) -> Self {
        self.byte = Some(byte);
        self
    }
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "frame {}", self.frame)?;
        if let Some(b) = self.byte {
            write!(f, " byte {b}")?;
        }
        if let Some(b) = self.bit {
            write!(f, " bit {b}")?;
        }
        Ok(())
    }
}
