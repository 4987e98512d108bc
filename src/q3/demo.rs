//! .dm_66/67/68/71 demo files (q3-protocol.md §7): records `[i32 seq][i32 len][len bytes]`,
//! ended by `-1, -1`. [`Reader`] frames records from a byte slice; [`Writer`] writes them.
use std::io::{self, Write};

use super::netchan::MAX_MSGLEN;

/// One demo record, borrowed from the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// 1-based record number.
    pub index: u64,
    /// Byte offset of the record header in the file.
    pub offset: u64,
    pub seq: i32,
    pub body: &'a [u8],
}

/// Why the record stream stopped early.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DemoError {
    #[error("demo truncated in record {index} at byte {offset} (needs {need} bytes, {have} left)")]
    Truncated { index: u64, offset: u64, need: u64, have: u64 },
    #[error("record {index} at byte {offset} claims {len} bytes (max {MAX_MSGLEN})")]
    BadLength { index: u64, offset: u64, len: i32 },
}

/// Iterates the records of a demo held in memory.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    index: u64,
    done: bool,
    /// True when the file ended with the `-1` end marker.
    pub saw_end_marker: bool,
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Reader { data, pos: 0, index: 0, done: false, saw_end_marker: false }
    }
}

fn le_i32(b: &[u8]) -> i32 {
    i32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

impl<'a> Iterator for Reader<'a> {
    type Item = Result<Record<'a>, DemoError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let rest = &self.data[self.pos..];
        if rest.is_empty() {
            // A missing end marker is tolerated, as the engine does on a short read.
            self.done = true;
            return None;
        }
        self.index += 1;
        let offset = self.pos as u64;
        let trunc = |need: u64, have: usize| {
            Some(Err(DemoError::Truncated { index: self.index, offset, need, have: have as u64 }))
        };
        if rest.len() < 8 {
            // The engine reads the sequence first: 4 bytes of -1 followed by EOF still ends it.
            if rest.len() >= 4 && le_i32(rest) == -1 {
                self.done = true;
                self.saw_end_marker = true;
                return None;
            }
            self.done = true;
            return trunc(8, rest.len());
        }
        let seq = le_i32(rest);
        let len = le_i32(&rest[4..]);
        if len == -1 {
            self.done = true;
            self.saw_end_marker = true;
            return None;
        }
        if !(0..=MAX_MSGLEN as i32).contains(&len) {
            self.done = true;
            return Some(Err(DemoError::BadLength { index: self.index, offset, len }));
        }
        let len = len as usize;
        if rest.len() - 8 < len {
            self.done = true;
            return trunc(8 + len as u64, rest.len());
        }
        self.pos += 8 + len;
        Some(Ok(Record { index: self.index, offset, seq, body: &rest[8..8 + len] }))
    }
}

/// Writes demo records to any `Write`.
#[derive(Debug)]
pub struct Writer<W: Write> {
    out: W,
    pub records: u64,
    last_seq: Option<i32>,
}

impl<W: Write> Writer<W> {
    pub fn new(out: W) -> Self {
        Writer { out, records: 0, last_seq: None }
    }

    /// Write one record.
    pub fn record(&mut self, seq: i32, body: &[u8]) -> io::Result<()> {
        self.out.write_all(&seq.to_le_bytes())?;
        self.out.write_all(&(body.len() as i32).to_le_bytes())?;
        self.out.write_all(body)?;
        self.records += 1;
        self.last_seq = Some(seq);
        Ok(())
    }

    /// Write the `-1, -1` end marker and return the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.write_all(&(-1i32).to_le_bytes())?;
        self.out.write_all(&(-1i32).to_le_bytes())?;
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_then_read() {
        let mut w = Writer::new(Vec::new());
        w.record(7, &[1, 2, 3]).unwrap();
        w.record(9, &[]).unwrap();
        let bytes = w.finish().unwrap();
        let mut r = Reader::new(&bytes);
        let a = r.next().unwrap().unwrap();
        assert_eq!((a.seq, a.body, a.offset), (7, &[1u8, 2, 3][..], 0));
        let b = r.next().unwrap().unwrap();
        assert_eq!((b.seq, b.body.len(), b.index), (9, 0, 2));
        assert!(r.next().is_none());
        assert!(r.saw_end_marker);
    }

    #[test]
    fn truncated_and_bad_length() {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&5i32.to_le_bytes());
        bytes.extend_from_slice(&10i32.to_le_bytes());
        bytes.extend_from_slice(&[0; 4]);
        assert!(matches!(Reader::new(&bytes).next(), Some(Err(DemoError::Truncated { .. }))));
        let mut bad = 5i32.to_le_bytes().to_vec();
        bad.extend_from_slice(&20000i32.to_le_bytes());
        assert!(matches!(Reader::new(&bad).next(), Some(Err(DemoError::BadLength { .. }))));
    }
}
