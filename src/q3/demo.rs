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
    /// The record's sequence: the netchan sequence of the message (the snapshot's
    /// messageNum, from which its delta byte counts back).
    pub seq: i32,
    /// The message body as the client kept it: descrambled, still Huffman-coded, starting
    /// with reliableAcknowledge.
    pub body: &'a [u8],
}

/// Why the record stream stopped early.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DemoError {
    /// The file ends inside a record (its header or its body).
    #[error("demo truncated in record {index} at byte {offset} (needs {need} bytes, {have} left)")]
    Truncated {
        /// 1-based number of the cut record.
        index: u64,
        /// Byte offset of the record header in the file.
        offset: u64,
        /// Bytes the record needs from `offset`: 8 for the header, or 8 + its length.
        need: u64,
        /// Bytes left in the file from `offset`.
        have: u64,
    },
    /// A record length outside 0..=`MAX_MSGLEN` (16384) that is not the `-1` end marker.
    #[error("record {index} at byte {offset} claims {len} bytes (max {MAX_MSGLEN}); {}", resync_text(*.resync_at, *.offset))]
    BadLength {
        /// 1-based record number.
        index: u64,
        /// Byte offset of the record header in the file.
        offset: u64,
        /// The length as read.
        len: i32,
        /// Byte offset of the next record found by scanning on (it is read next); `None`:
        /// none found, reading stops.
        resync_at: Option<u64>,
    },
    /// The file ends at a record boundary without the `-1, -1` end marker (the engine
    /// tolerates it; the recording was cut).
    #[error(
        "demo truncated: ends at byte {offset} after record {index} without the end-of-demo marker"
    )]
    NoEndMarker {
        /// Number of the last record read.
        index: u64,
        /// The file's length in bytes (where the marker should be).
        offset: u64,
    },
}

pub(crate) fn resync_text(at: Option<u64>, from: u64) -> String {
    match at {
        Some(a) if a >= from => {
            format!("skipped {} bytes to the next record at byte {a}", a - from)
        }
        Some(a) => format!(
            "the previous record was {} bytes too long; resumed at byte {a}",
            from - a
        ),
        None => "no further record found".into(),
    }
}

/// Records that must chain after a candidate header before the reader trusts it.
const RESYNC_CHAIN: usize = 4;
/// Largest sequence step a resync accepts between records (a synthetic gamestate may sit a
/// few thousand sequences before the first real message).
const MAX_SEQ_JUMP: i32 = 5000;

/// Iterates the records of a demo held in memory.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    index: u64,
    done: bool,
    last_seq: Option<i32>,
    /// Start of the last good record's body (a resync may find the next record inside it).
    last_body: usize,
    /// True when the file ended with the `-1` end marker.
    pub saw_end_marker: bool,
    /// Resyncs never search before this offset again: without it a file of many broken
    /// headers would rescan the same bytes (up to a record length) for each one.
    resync_floor: usize,
}

impl<'a> Reader<'a> {
    /// A reader over a whole demo file held in memory, at its first record.
    pub fn new(data: &'a [u8]) -> Self {
        Reader {
            data,
            pos: 0,
            index: 0,
            done: false,
            last_seq: None,
            last_body: 0,
            saw_end_marker: false,
            resync_floor: 0,
        }
    }
}

fn le_i32(b: &[u8]) -> i32 {
    i32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

impl Reader<'_> {
    /// The end of a plausible record starting at `at` (sequence after `after`, length in
    /// range, body inside the file), or None.
    fn plausible(&self, at: usize, after: Option<i32>) -> Option<(usize, i32)> {
        let h = self.data.get(at..at + 8)?;
        let (seq, len) = (le_i32(h), le_i32(&h[4..]));
        if !(0..=MAX_MSGLEN as i32).contains(&len) {
            return None;
        }
        if let Some(a) = after {
            if seq <= a || seq.wrapping_sub(a) > MAX_SEQ_JUMP {
                return None;
            }
        }
        let end = at + 8 + len as usize;
        (end <= self.data.len()).then_some((end, seq))
    }

    /// True when `n` records chain from `at`, or the chain reaches the end of the file or
    /// the end marker first.
    fn chains(&self, mut at: usize, mut after: Option<i32>, n: usize) -> bool {
        for _ in 0..n {
            if at == self.data.len() || self.data.get(at + 4..at + 8) == Some(&[0xff; 4][..]) {
                return true;
            }
            match self.plausible(at, after) {
                Some((end, seq)) => {
                    at = end;
                    after = Some(seq);
                }
                None => return false,
            }
        }
        true
    }

    /// After a broken header, find the next trustworthy record, searching from inside the
    /// previous record's body (its length may have been the broken part).
    fn resync(&self, from: usize) -> Option<usize> {
        (from..self.data.len().saturating_sub(8))
            .find(|&y| self.chains(y, self.last_seq, RESYNC_CHAIN))
    }
}

impl<'a> Iterator for Reader<'a> {
    type Item = Result<Record<'a>, DemoError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let rest = &self.data[self.pos..];
        if rest.is_empty() {
            // The engine tolerates a missing end marker, but a file cut at a record boundary
            // is still a truncated recording: say so.
            self.done = true;
            if self.index == 0 {
                return None;
            }
            return Some(Err(DemoError::NoEndMarker {
                index: self.index,
                offset: self.pos as u64,
            }));
        }
        self.index += 1;
        let offset = self.pos as u64;
        let trunc = |need: u64, have: usize| {
            Some(Err(DemoError::Truncated {
                index: self.index,
                offset,
                need,
                have: have as u64,
            }))
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
            let from = if self.index > 1 {
                self.last_body + 1
            } else {
                self.pos + 1
            };
            let from = from.min(self.pos + 1).max(self.resync_floor);
            let resync_at = self.resync(from);
            match resync_at {
                Some(y) => {
                    self.pos = y;
                    self.resync_floor = y + 1;
                }
                None => self.done = true,
            }
            return Some(Err(DemoError::BadLength {
                index: self.index,
                offset,
                len,
                resync_at: resync_at.map(|y| y as u64),
            }));
        }
        let len = len as usize;
        if rest.len() - 8 < len {
            self.done = true;
            return trunc(8 + len as u64, rest.len());
        }
        self.pos += 8 + len;
        self.last_seq = Some(seq);
        self.last_body = offset as usize + 8;
        Some(Ok(Record {
            index: self.index,
            offset,
            seq,
            body: &rest[8..8 + len],
        }))
    }
}

/// Writes demo records to any `Write`.
#[derive(Debug)]
pub struct Writer<W: Write> {
    out: W,
    /// Records written so far (the end marker not counted).
    pub records: u64,
    last_seq: Option<i32>,
}

impl<W: Write> Writer<W> {
    /// A writer with nothing written yet (a demo has no file header).
    pub fn new(out: W) -> Self {
        Writer {
            out,
            records: 0,
            last_seq: None,
        }
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
        // Without the marker the reader reports the truncation after the last record.
        let cut = &bytes[..bytes.len() - 8];
        let errs: Vec<_> = Reader::new(cut).filter_map(Result::err).collect();
        assert_eq!(
            errs,
            vec![DemoError::NoEndMarker {
                index: 2,
                offset: cut.len() as u64
            }]
        );
    }

    #[test]
    fn truncated_and_bad_length() {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&5i32.to_le_bytes());
        bytes.extend_from_slice(&10i32.to_le_bytes());
        bytes.extend_from_slice(&[0; 4]);
        assert!(matches!(
            Reader::new(&bytes).next(),
            Some(Err(DemoError::Truncated { .. }))
        ));
        let mut bad = 5i32.to_le_bytes().to_vec();
        bad.extend_from_slice(&20000i32.to_le_bytes());
        assert!(matches!(
            Reader::new(&bad).next(),
            Some(Err(DemoError::BadLength { .. }))
        ));
    }
}
