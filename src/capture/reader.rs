//! The streaming reader: sniffs the format, then walks records one at a time, keeping one
//! record in memory (its buffer grows to the largest record seen, never to the file).

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;

use super::bytes::u32_at;
use super::pcap::{self, PcapHeader};
use super::pcapng::{self, Section};
use super::{CaptureError, CaptureFormat, Frame, LinkType, MAX_BLOCK_LEN};

/// Read-ahead of the underlying reader: large enough that small records cost no syscall.
const READ_AHEAD: usize = 256 * 1024;
/// Smallest legal pcapng block: type, length, trailing length.
const MIN_BLOCK_LEN: u32 = 12;
/// Smallest legal Section Header Block (with the 64-bit section length).
const MIN_SHB_LEN: u32 = 28;

/// The underlying reader and how many bytes were consumed from it.
struct Source<R> {
    inner: BufReader<R>,
    offset: u64,
}

impl<R: Read> Source<R> {
    /// Fill `dst` as far as the file allows; fewer bytes only at end of file.
    fn read_up_to(&mut self, dst: &mut [u8]) -> Result<usize, CaptureError> {
        let mut n = 0;
        while let Some(rest) = dst.get_mut(n..).filter(|r| !r.is_empty()) {
            match self.inner.read(rest) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(CaptureError::Io {
                        offset: self.offset + n as u64,
                        source,
                    });
                }
            }
        }
        self.offset += n as u64;
        Ok(n)
    }

    /// Fill `dst` completely, or report the record starting at `record` as truncated.
    fn read_exact(&mut self, dst: &mut [u8], record: u64) -> Result<(), CaptureError> {
        if self.read_up_to(dst)? < dst.len() {
            return Err(CaptureError::Truncated { offset: record });
        }
        Ok(())
    }

    /// Read a fixed-size header: `Ok(false)` at a clean end of file (no byte at all).
    fn read_header(&mut self, dst: &mut [u8]) -> Result<bool, CaptureError> {
        let record = self.offset;
        match self.read_up_to(dst)? {
            0 => Ok(false),
            n if n == dst.len() => Ok(true),
            _ => Err(CaptureError::Truncated { offset: record }),
        }
    }

    /// Discard `n` bytes without buffering them (skipped records can be large).
    fn skip(&mut self, n: u64, record: u64) -> Result<(), CaptureError> {
        let copied =
            io::copy(&mut (&mut self.inner).take(n), &mut io::sink()).map_err(|source| {
                CaptureError::Io {
                    offset: self.offset,
                    source,
                }
            })?;
        self.offset += copied;
        if copied < n {
            return Err(CaptureError::Truncated { offset: record });
        }
        Ok(())
    }

    /// Read `n` bytes into the front of `buf` (grown as needed, never shrunk).
    fn read_into(&mut self, buf: &mut Vec<u8>, n: usize, record: u64) -> Result<(), CaptureError> {
        if buf.len() < n {
            buf.resize(n, 0);
        }
        match buf.get_mut(..n) {
            Some(dst) => self.read_exact(dst, record),
            None => Err(CaptureError::Truncated { offset: record }),
        }
    }
}

/// Per-format state.
enum State {
    Pcap(PcapHeader),
    PcapNg(Section),
}

/// Where the current record's packet bytes are in the buffer, and its metadata.
struct Record {
    start: usize,
    len: usize,
    ts_ns: i64,
    link: LinkType,
    orig_len: u32,
    offset: u64,
}

/// Streaming reader of pcap and pcapng files.
///
/// ```no_run
/// # use quakecap::capture::CaptureReader;
/// let mut r = CaptureReader::open(std::path::Path::new("capture.pcapng"))?;
/// loop {
///     match r.next_frame() {
///         Ok(Some(frame)) => println!("{} {} bytes", frame.index, frame.data.len()),
///         Ok(None) => break,
///         Err(e) => eprintln!("{e}"), // fatal errors end the stream: next call is Ok(None)
///     }
/// }
/// # Ok::<(), quakecap::capture::CaptureError>(())
/// ```
pub struct CaptureReader<R: Read> {
    src: Source<R>,
    buf: Vec<u8>,
    format: CaptureFormat,
    state: State,
    /// Packet records met so far (including skipped ones, so numbering matches the file).
    frames: u64,
    /// Last packet timestamp, lent to Simple Packet Blocks which have none.
    last_ts_ns: i64,
    done: bool,
}

impl CaptureReader<File> {
    /// Open a capture file.
    pub fn open(path: &Path) -> Result<CaptureReader<File>, CaptureError> {
        let f = File::open(path).map_err(|source| CaptureError::Io { offset: 0, source })?;
        CaptureReader::new(f)
    }
}

impl<R: Read> CaptureReader<R> {
    /// Sniff the magic number and read the file header. Fails with
    /// [`CaptureError::NotACapture`] (naming the first bytes) for anything that is neither
    /// pcap (µs or ns, either byte order) nor pcapng.
    pub fn new(r: R) -> Result<Self, CaptureError> {
        let mut src = Source {
            inner: BufReader::with_capacity(READ_AHEAD, r),
            offset: 0,
        };
        let mut magic = [0u8; 4];
        let n = src.read_up_to(&mut magic)?;
        let mut reader = CaptureReader {
            src,
            buf: Vec::new(),
            format: CaptureFormat::PcapNg,
            state: State::PcapNg(Section::default()),
            frames: 0,
            last_ts_ns: 0,
            done: false,
        };
        if n < magic.len() {
            return Err(CaptureError::NotACapture {
                offset: 0,
                message: format!(
                    "the file is only {n} bytes long: {}",
                    hex(magic.get(..n).unwrap_or(&[]))
                ),
            });
        }
        if let Some((big_endian, nanos)) = pcap::sniff(magic) {
            let mut h = [0u8; pcap::GLOBAL_HEADER_LEN];
            h[..4].copy_from_slice(&magic);
            reader.src.read_exact(&mut h[4..], 0)?;
            let header = pcap::parse_global_header(&h, big_endian, nanos)
                .ok_or(CaptureError::Truncated { offset: 0 })?;
            reader.format = CaptureFormat::Pcap { nanos, big_endian };
            reader.state = State::Pcap(header);
        } else if u32::from_le_bytes(magic) == pcapng::SHB {
            let mut len = [0u8; 4];
            reader.src.read_exact(&mut len, 0)?;
            reader.read_shb(0, len)?;
        } else {
            let mut more = [0u8; 12];
            let k = reader.src.read_up_to(&mut more)?;
            let mut first = magic.to_vec();
            first.extend_from_slice(more.get(..k).unwrap_or(&[]));
            return Err(CaptureError::NotACapture {
                offset: 0,
                message: format!(
                    "first bytes are {}, neither a pcap nor a pcapng magic number",
                    hex(&first)
                ),
            });
        }
        Ok(reader)
    }

    /// The format found by [`CaptureReader::new`].
    pub fn format(&self) -> CaptureFormat {
        self.format
    }

    /// Bytes consumed from the input so far (for progress bars).
    pub fn bytes_read(&self) -> u64 {
        self.src.offset
    }

    /// The next packet, borrowing the reader's buffer. `Ok(None)` at the end of the file
    /// and after a fatal error; a non-fatal error means one record was skipped.
    pub fn next_frame(&mut self) -> Result<Option<Frame<'_>>, CaptureError> {
        if self.done {
            return Ok(None);
        }
        let next = match self.state {
            State::Pcap(h) => self.next_pcap(h),
            State::PcapNg(_) => self.next_pcapng(),
        };
        match next {
            Ok(Some(rec)) => {
                self.last_ts_ns = rec.ts_ns;
                let data = self.buf.get(rec.start..rec.start + rec.len).unwrap_or(&[]);
                Ok(Some(Frame {
                    index: self.frames,
                    ts_ns: rec.ts_ns,
                    link: rec.link,
                    data,
                    orig_len: rec.orig_len,
                    file_offset: rec.offset,
                }))
            }
            Ok(None) => {
                self.done = true;
                Ok(None)
            }
            Err(e) => {
                self.done = e.is_fatal();
                Err(e)
            }
        }
    }

    fn next_pcap(&mut self, h: PcapHeader) -> Result<Option<Record>, CaptureError> {
        let offset = self.src.offset;
        let mut rh = [0u8; pcap::RECORD_HEADER_LEN];
        if !self.src.read_header(&mut rh)? {
            return Ok(None);
        }
        let r = pcap::parse_record_header(&rh, &h).ok_or(CaptureError::Truncated { offset })?;
        if let Err(e) = pcap::check_caplen(r.caplen, offset) {
            if !e.is_fatal() {
                self.frames += 1;
                self.src.skip(u64::from(r.caplen), offset)?;
            }
            return Err(e);
        }
        let len = r.caplen as usize;
        self.src.read_into(&mut self.buf, len, offset)?;
        self.frames += 1;
        Ok(Some(Record {
            start: 0,
            len,
            ts_ns: r.ts_ns,
            link: h.link,
            orig_len: r.orig_len,
            offset,
        }))
    }

    fn section(&self) -> Option<&Section> {
        match &self.state {
            State::PcapNg(s) => Some(s),
            State::Pcap(_) => None,
        }
    }

    /// Walk blocks until a packet: SHBs reset the section, IDBs add interfaces, anything
    /// else is skipped without being buffered.
    fn next_pcapng(&mut self) -> Result<Option<Record>, CaptureError> {
        loop {
            let offset = self.src.offset;
            let mut hdr = [0u8; 8];
            if !self.src.read_header(&mut hdr)? {
                return Ok(None);
            }
            let be = self.section().is_some_and(|s| s.big_endian);
            let (Some(btype), Some(len)) = (u32_at(&hdr, 0, be), u32_at(&hdr, 4, be)) else {
                return Err(CaptureError::Truncated { offset });
            };
            if btype == pcapng::SHB {
                let len_bytes = [hdr[4], hdr[5], hdr[6], hdr[7]];
                self.read_shb(offset, len_bytes)?;
                continue;
            }
            let body_len = block_body_len(len, MIN_BLOCK_LEN, offset)?;
            match btype {
                pcapng::IDB => {
                    self.src.read_into(&mut self.buf, body_len, offset)?;
                    self.check_trailer(len, offset)?;
                    let iface =
                        pcapng::parse_idb(self.buf.get(..body_len).unwrap_or(&[]), be, offset)?;
                    if let State::PcapNg(s) = &mut self.state {
                        s.interfaces.push(iface);
                    }
                }
                pcapng::EPB | pcapng::SPB | pcapng::PB => {
                    self.src.read_into(&mut self.buf, body_len, offset)?;
                    self.check_trailer(len, offset)?;
                    self.frames += 1;
                    return self.packet(btype, body_len, offset).map(Some);
                }
                _ => {
                    self.src.skip(body_len as u64, offset)?;
                    self.check_trailer(len, offset)?;
                }
            }
        }
    }

    fn packet(&self, btype: u32, body_len: usize, offset: u64) -> Result<Record, CaptureError> {
        let body = self.buf.get(..body_len).unwrap_or(&[]);
        let empty = Section::default();
        let section = self.section().unwrap_or(&empty);
        let p = pcapng::parse_packet(btype, body, section, self.last_ts_ns, offset)?;
        Ok(Record {
            start: p.data_start,
            len: p.caplen,
            ts_ns: p.ts_ns,
            link: p.link,
            orig_len: p.orig_len,
            offset,
        })
    }

    /// The rest of a Section Header Block whose type (and raw length) were read at
    /// `offset`: byte order, version; forgets the previous section's interfaces.
    fn read_shb(&mut self, offset: u64, len_bytes: [u8; 4]) -> Result<(), CaptureError> {
        let mut bom = [0u8; 4];
        self.src.read_exact(&mut bom, offset)?;
        let big_endian = pcapng::byte_order(bom).ok_or_else(|| CaptureError::BadFraming {
            offset,
            message: format!("section header byte-order magic is {}", hex(&bom)),
        })?;
        let len = if big_endian {
            u32::from_be_bytes(len_bytes)
        } else {
            u32::from_le_bytes(len_bytes)
        };
        // The body after the byte-order magic, without the trailer.
        let rest = block_body_len(len, MIN_SHB_LEN, offset)?.saturating_sub(4);
        self.src.read_into(&mut self.buf, rest, offset)?;
        pcapng::check_shb(self.buf.get(..rest).unwrap_or(&[]), big_endian, offset)?;
        self.state = State::PcapNg(Section {
            big_endian,
            interfaces: Vec::new(),
        });
        self.check_trailer(len, offset)
    }

    /// The trailing copy of the block length must match: otherwise the framing is lost.
    fn check_trailer(&mut self, len: u32, offset: u64) -> Result<(), CaptureError> {
        let mut t = [0u8; 4];
        self.src.read_exact(&mut t, offset)?;
        let be = self.section().is_some_and(|s| s.big_endian);
        let trailer = if be {
            u32::from_be_bytes(t)
        } else {
            u32::from_le_bytes(t)
        };
        if trailer != len {
            return Err(CaptureError::BadFraming {
                offset,
                message: format!("block length {len} but trailing length {trailer}"),
            });
        }
        Ok(())
    }
}

/// Validate a pcapng block total length; returns the body length (without the 8-byte
/// header and the 4-byte trailer). A bad length loses the framing: fatal.
fn block_body_len(len: u32, min: u32, offset: u64) -> Result<usize, CaptureError> {
    if len < min || len % 4 != 0 || u64::from(len) > MAX_BLOCK_LEN {
        return Err(CaptureError::BadFraming {
            offset,
            message: format!("block length {len} (must be a multiple of 4, at least {min}, at most {MAX_BLOCK_LEN})"),
        });
    }
    Ok((len - 12) as usize)
}

/// Hex dump of a few bytes plus their printable form, for error messages.
fn hex(b: &[u8]) -> String {
    let hex: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
    let text: String = b
        .iter()
        .map(|&c| {
            if c.is_ascii_graphic() || c == b' ' {
                c as char
            } else {
                '.'
            }
        })
        .collect();
    format!("{} (\"{}\")", hex.join(" "), text)
}
