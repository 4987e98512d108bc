//! The reader's byte source: the underlying reader and its read-ahead, from which records
//! are handed out in place.
use std::io::{self, Read};

use super::reader::READ_AHEAD;
use super::CaptureError;

/// The underlying reader, its read-ahead, and how many bytes were consumed from it.
///
/// Records are handed out as slices of the read-ahead itself ([`Source::read_block`]): a
/// packet is never copied on its way to the decoders. The slice stays valid until the next
/// read, which may move the unread rest to the front to make room.
pub(super) struct Source<R> {
    pub(super) inner: R,
    /// Read-ahead: `buf[pos..end]` is read from `inner` but not consumed yet.
    pub(super) buf: Vec<u8>,
    pub(super) pos: usize,
    pub(super) end: usize,
    /// Bytes consumed so far (the file offset of `buf[pos]`).
    pub(super) offset: u64,
}

impl<R: Read> Source<R> {
    pub(super) fn new(inner: R) -> Self {
        Source {
            inner,
            buf: Vec::new(),
            pos: 0,
            end: 0,
            offset: 0,
        }
    }

    /// Make `n` bytes available at `buf[pos..]` as far as the file allows; returns how many
    /// are (fewer than `n` only at end of file).
    pub(super) fn fill(&mut self, n: usize) -> Result<usize, CaptureError> {
        if self.end - self.pos >= n {
            return Ok(n);
        }
        // Move the unread rest to the front, then read as much as fits.
        self.buf.copy_within(self.pos..self.end, 0);
        self.end -= self.pos;
        self.pos = 0;
        let want = n.max(READ_AHEAD);
        if self.buf.len() < want {
            self.buf.resize(want, 0);
        }
        while self.end < n {
            let Some(dst) = self.buf.get_mut(self.end..) else {
                break;
            };
            match self.inner.read(dst) {
                Ok(0) => break,
                Ok(k) => self.end += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(CaptureError::Io {
                        offset: self.offset + self.end as u64,
                        source,
                    });
                }
            }
        }
        Ok(self.end.min(n))
    }

    /// Consume `n` available bytes; returns where they start in `buf`.
    pub(super) fn consume(&mut self, n: usize) -> usize {
        let start = self.pos;
        self.pos += n;
        self.offset += n as u64;
        start
    }

    /// Fill `dst` as far as the file allows; fewer bytes only at end of file.
    pub(super) fn read_up_to(&mut self, dst: &mut [u8]) -> Result<usize, CaptureError> {
        let n = self.fill(dst.len())?;
        let start = self.consume(n);
        if let (Some(d), Some(s)) = (dst.get_mut(..n), self.buf.get(start..start + n)) {
            d.copy_from_slice(s);
        }
        Ok(n)
    }

    /// Fill `dst` completely, or report the record starting at `record` as truncated.
    pub(super) fn read_exact(&mut self, dst: &mut [u8], record: u64) -> Result<(), CaptureError> {
        if self.read_up_to(dst)? < dst.len() {
            return Err(CaptureError::Truncated { offset: record });
        }
        Ok(())
    }

    /// Read a fixed-size header: `Ok(false)` at a clean end of file (no byte at all).
    pub(super) fn read_header(&mut self, dst: &mut [u8]) -> Result<bool, CaptureError> {
        let record = self.offset;
        match self.read_up_to(dst)? {
            0 => Ok(false),
            n if n == dst.len() => Ok(true),
            _ => Err(CaptureError::Truncated { offset: record }),
        }
    }

    /// Discard `n` bytes without buffering them (skipped records can be large).
    pub(super) fn skip(&mut self, n: u64, record: u64) -> Result<(), CaptureError> {
        let buffered = (self.end - self.pos).min(usize::try_from(n).unwrap_or(usize::MAX));
        self.consume(buffered);
        let rest = n - buffered as u64;
        let copied =
            io::copy(&mut (&mut self.inner).take(rest), &mut io::sink()).map_err(|source| {
                CaptureError::Io {
                    offset: self.offset,
                    source,
                }
            })?;
        self.offset += copied;
        if copied < rest {
            return Err(CaptureError::Truncated { offset: record });
        }
        Ok(())
    }

    /// Consume the next `n` bytes, which stay readable at `buf[start..start + n]` (the
    /// returned `start`) until the next read.
    pub(super) fn read_block(&mut self, n: usize, record: u64) -> Result<usize, CaptureError> {
        let have = self.fill(n)?;
        let start = self.consume(have);
        if have < n {
            return Err(CaptureError::Truncated { offset: record });
        }
        Ok(start)
    }

    /// The `n` bytes at `start` of the last [`Source::read_block`].
    pub(super) fn block(&self, start: usize, n: usize) -> &[u8] {
        self.buf.get(start..start + n).unwrap_or(&[])
    }
}
