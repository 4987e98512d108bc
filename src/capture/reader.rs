//! The streaming reader: sniffs the format, then walks records one at a time, reading them
//! in place from its read-ahead (which grows to the largest record seen, never to the file).

use std::fs::File;
use std::io::Read;
use std::path::Path;

use super::bytes::u32_at;
use super::pcap::{self, PcapHeader};
use super::pcapng::{self, Section};
use super::source::Source;
use super::{CaptureError, CaptureFormat, Frame, LinkType, MAX_CAPLEN};

/// Read-ahead of the underlying reader: large enough that small records cost no syscall.
/// It grows to hold the largest record read.
pub(super) const READ_AHEAD: usize = 256 * 1024;
/// Largest packet block body read into memory: the largest accepted packet plus room for
/// the block's fixed fields and options.
pub(super) const MAX_PACKET_BODY: usize = MAX_CAPLEN as usize + 64 * 1024;
/// Smallest legal pcapng block: type, length, trailing length.
pub(super) const MIN_BLOCK_LEN: u32 = 12;
/// Smallest legal Section Header Block (with the 64-bit section length).
pub(super) const MIN_SHB_LEN: u32 = 28;

/// Per-format state.
pub(super) enum State {
    Pcap(PcapHeader),
    PcapNg(Section),
}

/// Where the current record's packet bytes are in the buffer, and its metadata.
pub(super) struct Record {
    pub(super) start: usize,
    pub(super) len: usize,
    pub(super) ts_ns: i64,
    pub(super) link: LinkType,
    pub(super) orig_len: u32,
    pub(super) offset: u64,
}

/// Streaming reader of pcap and pcapng files.
///
/// * [`Frame::index`] counts every packet record of the file (EPB, SPB, obsolete PB, pcap
///   record) from 1 across all sections, including records skipped with a non-fatal
///   error, so the numbers stay those Wireshark shows for the frames that are returned.
/// * [`Frame::ts_ns`] applies the interface's `if_tsresol` and `if_tsoffset`. A Simple
///   Packet Block has no timestamp: it gets the previous packet's (0 before any), which
///   keeps capture time monotonic for time-based expiry downstream.
/// * Memory: one read-ahead buffer (256 KiB) that records are read from in place; it grows
///   to hold the largest record read (packet blocks: at most 320 KiB; larger ones are
///   skipped without buffering; other blocks are bounded by [`super::MAX_BLOCK_LEN`]).
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
    pub(super) src: Source<R>,
    pub(super) format: CaptureFormat,
    pub(super) state: State,
    /// Packet records met so far (including skipped ones, so numbering matches the file).
    pub(super) frames: u64,
    /// Last packet timestamp, lent to Simple Packet Blocks which have none.
    pub(super) last_ts_ns: i64,
    pub(super) done: bool,
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
        let mut src = Source::new(r);
        let mut magic = [0u8; 4];
        let n = src.read_up_to(&mut magic)?;
        let mut reader = CaptureReader {
            src,
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
            State::PcapNg(_) => match self.buffered_epb() {
                Some(rec) => Ok(Some(rec)),
                None => self.next_pcapng(),
            },
        };
        match next {
            Ok(Some(rec)) => {
                self.last_ts_ns = rec.ts_ns;
                let data = self.src.block(rec.start, rec.len);
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
        let start = self.src.read_block(len, offset)?;
        self.frames += 1;
        Ok(Some(Record {
            start,
            len,
            ts_ns: r.ts_ns,
            link: h.link,
            orig_len: r.orig_len,
            offset,
        }))
    }

    /// The link type and packet bytes of a record not read yet, without consuming
    /// anything, and the file offset of the block after it: the block at file offset
    /// `at` when given (one a previous peek returned), else the `k`-th after the record
    /// [`Self::next_frame`] returns next (`k = 0`: that one). None unless that block is an
    /// Enhanced Packet Block already whole in the read-ahead (and, without `at`, every
    /// block before it is there too). For hints only (the pipeline's prefetch,
    /// `crate::prefetch`): it checks just enough to stay inside the buffer; the real
    /// read does every check.
    pub fn peek(&self, k: usize, at: Option<u64>) -> Option<(LinkType, &[u8], u64)> {
        const FIXED: usize = 28; // as in buffered_epb
        let State::PcapNg(section) = &self.state else {
            return None;
        };
        let be = section.big_endian;
        let avail = self.src.buf.get(self.src.pos..self.src.end)?;
        let mut skip = match at {
            Some(at) => usize::try_from(at.checked_sub(self.src.offset)?).ok()?,
            None => 0,
        };
        if at.is_none() {
            for _ in 0..k {
                if u32_at(avail, skip, be)? != pcapng::EPB {
                    return None;
                }
                let len = u32_at(avail, skip + 4, be)? as usize;
                skip += len.max(FIXED);
            }
        }
        let block = avail.get(skip..)?;
        let head = block.get(..FIXED)?;
        let (btype, len, iface, caplen) = (
            u32_at(head, 0, be)?,
            u32_at(head, 4, be)? as usize,
            u32_at(head, 8, be)? as usize,
            u32_at(head, 20, be)? as usize,
        );
        if btype != pcapng::EPB || FIXED + caplen > len {
            return None;
        }
        let link = section.interfaces.get(iface)?.as_ref()?.link;
        let next = self.src.offset + (skip + len) as u64;
        Some((link, block.get(FIXED..FIXED + caplen)?, next))
    }
}

/// Hex dump of a few bytes plus their printable form, for error messages.
pub(super) fn hex(b: &[u8]) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::{ByteOrder, PcapNgWriter, PcapWriter, TsPrecision};
    use std::io::Cursor;

    // captures/q3-basic/capture.pcapng frame 1 (81 bytes: Ethernet, IPv4, UDP
    // "getchallenge"), only its length and first bytes matter here.
    const FRAME1_HEAD: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x08, 0x00, 0x45, 0x00];

    fn frame1() -> Vec<u8> {
        let mut f = FRAME1_HEAD.to_vec();
        f.resize(81, 0x61);
        f
    }

    /// A pcapng block by hand, little- or big-endian.
    fn block(btype: u32, body: &[u8], be: bool) -> Vec<u8> {
        let o = if be {
            ByteOrder::Big
        } else {
            ByteOrder::Little
        };
        let u32b = |v: u32| {
            if o == ByteOrder::Big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let padded = body.len().div_ceil(4) * 4;
        let total = (padded + 12) as u32;
        let mut v = u32b(btype).to_vec();
        v.extend_from_slice(&u32b(total));
        v.extend_from_slice(body);
        v.resize(8 + padded, 0);
        v.extend_from_slice(&u32b(total));
        v
    }

    fn shb(be: bool) -> Vec<u8> {
        let mut b = if be {
            0x1A2B_3C4Du32.to_be_bytes()
        } else {
            0x1A2B_3C4Du32.to_le_bytes()
        }
        .to_vec();
        b.extend_from_slice(&if be { [0, 1, 0, 0] } else { [1, 0, 0, 0] });
        b.extend_from_slice(&[0xff; 8]);
        block(pcapng::SHB, &b, be)
    }

    /// IDB, Ethernet, with an optional if_tsresol and if_tsoffset (little-endian only).
    fn idb(link: u16, tsresol: Option<u8>, tsoffset: Option<i64>) -> Vec<u8> {
        let mut b = link.to_le_bytes().to_vec();
        b.extend_from_slice(&[0, 0]);
        b.extend_from_slice(&0u32.to_le_bytes());
        if let Some(r) = tsresol {
            b.extend_from_slice(&[9, 0, 1, 0, r, 0, 0, 0]);
        }
        if let Some(o) = tsoffset {
            b.extend_from_slice(&[14, 0, 8, 0]);
            b.extend_from_slice(&o.to_le_bytes());
        }
        b.extend_from_slice(&[0, 0, 0, 0]);
        block(pcapng::IDB, &b, false)
    }

    fn epb(iface: u32, ts: u64, data: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        for v in [
            iface,
            (ts >> 32) as u32,
            ts as u32,
            data.len() as u32,
            data.len() as u32,
        ] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(data);
        block(pcapng::EPB, &b, false)
    }

    /// All frames and errors of a file: (index, ts, len) or the error.
    fn read_all(bytes: &[u8]) -> Vec<Result<(u64, i64, usize, LinkType), CaptureError>> {
        let mut r = CaptureReader::new(Cursor::new(bytes)).unwrap();
        let mut out = Vec::new();
        loop {
            match r.next_frame() {
                Ok(Some(f)) => out.push(Ok((f.index, f.ts_ns, f.data.len(), f.link))),
                Ok(None) => return out,
                Err(e) => out.push(Err(e)),
            }
        }
    }

    #[test]
    fn us_tsresol_and_offset_give_ns() {
        let mut f = shb(false);
        f.extend(idb(1, Some(6), None));
        f.extend(idb(101, Some(0x80 | 10), Some(1_000)));
        f.extend(epb(0, 1_795_361_221_860_853, &frame1()));
        f.extend(epb(1, 512, &frame1()[14..]));
        let got = read_all(&f);
        assert_eq!(
            got[0].as_ref().unwrap(),
            &(1, 1_795_361_221_860_853_000, 81, LinkType::ETHERNET)
        );
        assert_eq!(
            got[1].as_ref().unwrap(),
            &(2, 1_000_500_000_000, 67, LinkType::RAW)
        );
        // no if_tsresol: µs by default
        let mut g = shb(false);
        g.extend(idb(1, None, None));
        g.extend(epb(0, 7, &[]));
        assert_eq!(
            read_all(&g)[0].as_ref().unwrap(),
            &(1, 7_000, 0, LinkType::ETHERNET)
        );
    }

    #[test]
    fn spb_obsolete_pb_and_unknown_blocks() {
        let mut f = shb(false);
        f.extend(idb(1, Some(9), None));
        f.extend(block(0xBAD0_0001, &[1, 2, 3, 4, 5], false)); // unknown: skipped
        f.extend(epb(0, 42, &frame1()));
        let mut spb = 81u32.to_le_bytes().to_vec();
        spb.extend_from_slice(&frame1());
        f.extend(block(pcapng::SPB, &spb, false));
        let mut pb = vec![0u8, 0, 0, 0];
        for v in [0u32, 43, 81, 81] {
            pb.extend_from_slice(&v.to_le_bytes());
        }
        pb.extend_from_slice(&frame1());
        f.extend(block(pcapng::PB, &pb, false));
        f.extend(epb(0, 44, &[])); // zero-length record
        let got: Vec<_> = read_all(&f).into_iter().map(|r| r.unwrap()).collect();
        let ts: Vec<(u64, i64, usize)> = got.iter().map(|g| (g.0, g.1, g.2)).collect();
        // the SPB has no timestamp: it gets the previous frame's
        assert_eq!(ts, vec![(1, 42, 81), (2, 42, 81), (3, 43, 81), (4, 44, 0)]);
    }

    #[test]
    fn sections_reset_interfaces_and_byte_order() {
        let mut f = shb(false);
        f.extend(idb(1, Some(9), None));
        f.extend(epb(0, 1, &frame1()));
        // a big-endian section with no IDB: its EPB names an unknown interface
        f.extend(shb(true));
        let mut b = Vec::new();
        for v in [0u32, 0, 2, 4, 4] {
            b.extend_from_slice(&v.to_be_bytes());
        }
        b.extend_from_slice(&[1, 2, 3, 4]);
        f.extend(block(pcapng::EPB, &b, true));
        // a big-endian IDB, then the same EPB works (default µs units)
        let mut i = 113u16.to_be_bytes().to_vec();
        i.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
        f.extend(block(pcapng::IDB, &i, true));
        f.extend(block(pcapng::EPB, &b, true));
        let got = read_all(&f);
        assert_eq!(got.len(), 3);
        assert!(matches!(&got[1], Err(CaptureError::BadRecord { .. })));
        assert_eq!(
            got[2].as_ref().unwrap(),
            &(3, 2_000, 4, LinkType::LINUX_SLL)
        );
    }

    #[test]
    fn broken_idb_keeps_interface_numbering() {
        let mut f = shb(false);
        f.extend(block(pcapng::IDB, &[1, 0, 0, 0], false)); // too short: interface 0 unusable
        f.extend(idb(101, Some(9), None)); // interface 1
        f.extend(epb(1, 9, &frame1()[14..]));
        f.extend(epb(0, 9, &frame1()));
        let got = read_all(&f);
        assert!(matches!(
            &got[0],
            Err(CaptureError::BadRecord { offset: 28, .. })
        ));
        assert_eq!(got[1].as_ref().unwrap(), &(1, 9, 67, LinkType::RAW));
        assert!(matches!(&got[2], Err(CaptureError::BadRecord { .. })));
        assert_eq!(got.len(), 3);
    }

    #[test]
    fn bad_block_lengths_are_fatal() {
        for len in [8u32, 13, 0x7fff_fff0] {
            let mut f = shb(false);
            f.extend(idb(1, None, None));
            let at = f.len() as u64;
            f.extend_from_slice(&6u32.to_le_bytes());
            f.extend_from_slice(&len.to_le_bytes());
            f.extend_from_slice(&[0; 64]);
            let got = read_all(&f);
            assert_eq!(got.len(), 1, "len {len}");
            match &got[0] {
                Err(e @ CaptureError::BadFraming { offset, .. }) => {
                    assert!(e.is_fatal());
                    assert_eq!(*offset, at);
                }
                other => panic!("{other:?}"),
            }
        }
        // trailer mismatch
        let mut f = shb(false);
        f.extend(idb(1, None, None));
        let mut e = epb(0, 1, &[1, 2, 3, 4]);
        let n = e.len();
        e[n - 4] ^= 0x10;
        f.extend(e);
        f.extend(epb(0, 1, &[1, 2, 3, 4]));
        let got = read_all(&f);
        assert_eq!(got.len(), 1);
        assert!(got[0].as_ref().unwrap_err().is_fatal());
    }

    #[test]
    fn oversized_caplen_is_skipped_and_reading_goes_on() {
        let big = vec![0u8; MAX_CAPLEN as usize + 4];
        // pcapng: the block framing is fine, the record is refused
        let mut f = shb(false);
        f.extend(idb(1, Some(9), None));
        f.extend(epb(0, 1, &big));
        f.extend(epb(0, 2, &frame1()));
        let got = read_all(&f);
        assert!(matches!(&got[0], Err(CaptureError::TooLarge { offset, .. }) if *offset > 0));
        assert_eq!(got[1].as_ref().unwrap(), &(2, 2, 81, LinkType::ETHERNET));
        // a block too big to hold any acceptable packet: skipped unbuffered
        let huge = vec![0u8; MAX_PACKET_BODY + 8];
        let mut g = shb(false);
        g.extend(idb(1, Some(9), None));
        g.extend(epb(0, 1, &huge));
        g.extend(epb(0, 2, &frame1()));
        let mut r = CaptureReader::new(Cursor::new(&g)).unwrap();
        assert!(matches!(r.next_frame(), Err(CaptureError::TooLarge { .. })));
        assert_eq!(r.next_frame().unwrap().unwrap().index, 2);
        // The read-ahead never held it (a packet block body and its trailer at most).
        assert!(r.src.buf.len() <= MAX_PACKET_BODY + 4);
        // pcap: same, by skipping the announced length
        let mut w = PcapWriter::new(Vec::new(), LinkType::ETHERNET, TsPrecision::Nano).unwrap();
        w.write_packet(1, &big, big.len() as u32).unwrap();
        w.write_packet(2, &frame1(), 81).unwrap();
        let p = w.finish().unwrap();
        let got = read_all(&p);
        assert!(matches!(
            &got[0],
            Err(CaptureError::TooLarge { offset: 24, .. })
        ));
        assert_eq!(got[1].as_ref().unwrap(), &(2, 2, 81, LinkType::ETHERNET));
        // pcap: an absurd length cannot be skipped
        let mut p = p[..24].to_vec();
        p.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);
        let got = read_all(&p);
        assert_eq!(got.len(), 1);
        assert!(got[0].as_ref().unwrap_err().is_fatal());
    }

    #[test]
    fn truncated_header_and_record() {
        let mut w = PcapNgWriter::new(Vec::new()).unwrap();
        w.write_packet(LinkType::ETHERNET, 5, &frame1(), 81)
            .unwrap();
        let f = w.finish().unwrap();
        // SHB 28 bytes, IDB 32 bytes, then the EPB at 60
        for cut in [61usize, 70, f.len() - 1] {
            let got = read_all(&f[..cut]);
            assert!(
                matches!(
                    got.as_slice(),
                    [Err(CaptureError::Truncated { offset: 60 })]
                ),
                "{cut}: {got:?}"
            );
        }
        assert!(read_all(&f[..60]).is_empty());
        assert!(matches!(
            CaptureReader::new(Cursor::new(&f[..3])),
            Err(CaptureError::NotACapture { .. })
        ));
        assert!(matches!(
            CaptureReader::new(Cursor::new(&f[..20])),
            Err(CaptureError::Truncated { offset: 0 })
        ));
    }

    #[test]
    fn bad_magic_names_the_first_bytes() {
        let e = CaptureReader::new(Cursor::new(b"GIF89a\x01\x00"))
            .err()
            .unwrap();
        assert!(matches!(e, CaptureError::NotACapture { offset: 0, .. }));
        let msg = e.to_string();
        assert!(
            msg.contains("47 49 46 38 39 61 01 00") && msg.contains("GIF89a"),
            "{msg}"
        );
        let e = CaptureReader::new(Cursor::new(b"")).err().unwrap();
        assert!(e.to_string().contains("0 bytes"), "{e}");
        let e = crate::error::Error::from(&e);
        assert_eq!(
            (e.kind, e.pos.byte),
            (crate::error::ErrorKind::CaptureFormat, Some(0))
        );
    }

    #[test]
    fn bad_byte_order_magic_and_version() {
        let mut f = shb(false);
        f[8] = 0; // byte-order magic broken
        assert!(matches!(
            CaptureReader::new(Cursor::new(&f)),
            Err(CaptureError::BadFraming { .. })
        ));
        let mut f = shb(false);
        f[12] = 2; // version 2.0
        assert!(matches!(
            CaptureReader::new(Cursor::new(&f)),
            Err(CaptureError::BadFraming { .. })
        ));
    }

    #[test]
    fn bytes_read_counts_progress() {
        let mut w = PcapWriter::new(Vec::new(), LinkType::RAW, TsPrecision::Micro).unwrap();
        w.write_packet(1_000, &[0x45; 20], 20).unwrap();
        let p = w.finish().unwrap();
        let mut r = CaptureReader::new(Cursor::new(&p)).unwrap();
        assert_eq!(r.bytes_read(), 24);
        assert_eq!(
            r.format(),
            CaptureFormat::Pcap {
                nanos: false,
                big_endian: false
            }
        );
        assert_eq!(r.next_frame().unwrap().unwrap().ts_ns, 1_000);
        assert_eq!(r.bytes_read(), 60);
        assert!(r.next_frame().unwrap().is_none());
    }
    /// A reader that returns one byte per call: the read-ahead then never holds more than
    /// the reader asked for, so every block takes the general path.
    struct OneByte<'a>(&'a [u8]);

    impl Read for OneByte<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            match (self.0.split_first(), buf.first_mut()) {
                (Some((&b, rest)), Some(d)) => {
                    *d = b;
                    self.0 = rest;
                    Ok(1)
                }
                _ => Ok(0),
            }
        }
    }

    /// A frame as a walk returns it: index, time, bytes, original length, offset, link.
    type Walked = (u64, i64, Vec<u8>, u32, u64, LinkType);

    /// Everything a walk returns, errors as text.
    fn walk<R: Read>(r: R) -> Vec<Result<Walked, String>> {
        let Ok(mut r) = CaptureReader::new(r) else {
            return vec![Err("open".into())];
        };
        let mut out = Vec::new();
        loop {
            match r.next_frame() {
                Ok(Some(f)) => out.push(Ok((
                    f.index,
                    f.ts_ns,
                    f.data.to_vec(),
                    f.orig_len,
                    f.file_offset,
                    f.link,
                ))),
                Ok(None) => break,
                Err(e) => out.push(Err(format!("{e} fatal={}", e.is_fatal()))),
            }
        }
        out.push(Err(format!("read {}", r.bytes_read())));
        out
    }

    /// One block of a generated file: (kind, interface, timestamp, data).
    type BlockSpec = (u8, u32, u64, Vec<u8>);

    fn spec_block(&(kind, iface, ts, ref data): &BlockSpec) -> Vec<u8> {
        match kind {
            0..=2 => epb(iface, ts, data),
            3 => {
                // original length beyond the captured one
                let mut b = epb(iface, ts, data);
                b[24..28].copy_from_slice(&(data.len() as u32 + 1000).to_le_bytes());
                b
            }
            4 => {
                // caplen beyond the block
                let mut b = epb(iface, ts, data);
                b[20] = 0xff;
                b
            }
            5 => {
                // bad trailer
                let mut b = epb(iface, ts, data);
                let n = b.len();
                b[n - 1] ^= 1;
                b
            }
            6 => block(
                pcapng::SPB,
                &[&(data.len() as u32).to_le_bytes()[..], data].concat(),
                false,
            ),
            7 => block(0x0bad, data, false),
            8 => idb(1, Some((ts % 12) as u8), None),
            _ => shb(false),
        }
    }

    proptest::proptest! {
        #[test]
        fn in_place_epbs_match_the_general_walk(
            blocks in proptest::collection::vec(
                (
                    0u8..10,
                    0u32..3,
                    proptest::num::u64::ANY,
                    proptest::collection::vec(proptest::num::u8::ANY, 0..90),
                ),
                0..12,
            ),
            cut in proptest::option::of(0usize..2000),
            flip in proptest::option::of((0usize..2000, 0u8..8)),
        ) {
            let mut f = shb(false);
            f.extend(idb(1, Some(6), None));
            for b in &blocks {
                f.extend(spec_block(b));
            }
            if let Some((at, bit)) = flip {
                let n = f.len();
                f[at % n] ^= 1 << bit;
            }
            if let Some(c) = cut {
                f.truncate(c.max(12));
            }
            proptest::prop_assert_eq!(walk(Cursor::new(&f)), walk(OneByte(&f)));
        }
    }
    /// A peek gives the bytes and link of the record it names, ahead by count or by the
    /// offset an earlier peek returned, and None where it cannot tell (another block in
    /// between, or not whole in the read-ahead yet): checked against the records as read.
    #[test]
    fn peek_names_the_records_read_next() {
        let mut w = PcapNgWriter::new(Vec::new()).expect("writer");
        let mut sent = Vec::new();
        for i in 0..3000usize {
            // Lengths up to 1,400 bytes cross the 256 KiB read-ahead's refills; the second
            // link type adds an interface block mid-file.
            let link = if i % 500 == 499 {
                LinkType::RAW
            } else {
                LinkType::ETHERNET
            };
            let data: Vec<u8> = (0..(i * 37) % 1400).map(|k| (k ^ i) as u8).collect();
            w.write_packet(link, i as i64 * 1000, &data, data.len() as u32)
                .expect("write");
            sent.push((link, data));
        }
        let bytes = w.finish().expect("flush");
        let mut r = CaptureReader::new(Cursor::new(bytes)).expect("pcapng");
        let (mut seen, mut by_count, mut by_cursor) = (0, 0, 0);
        let mut cursor: Option<(usize, u64)> = None;
        loop {
            for k in 0..6 {
                if let Some((link, data, _)) = r.peek(k, None) {
                    assert_eq!((link, data), (sent[seen + k].0, &sent[seen + k].1[..]));
                    by_count += 1;
                }
            }
            // The cursor names the record after the one peeked before it.
            if let Some((index, at)) = cursor.filter(|c| c.0 >= seen) {
                if let Some((link, data, _)) = r.peek(0, Some(at)) {
                    assert_eq!((link, data), (sent[index].0, &sent[index].1[..]));
                    by_cursor += 1;
                }
            }
            cursor = r.peek(3, None).map(|(_, _, next)| (seen + 4, next));
            let Some(f) = r.next_frame().expect("readable") else {
                break;
            };
            assert_eq!(f.data, &sent[seen].1[..]);
            seen += 1;
        }
        assert_eq!(seen, sent.len());
        assert!(by_count > 5 * sent.len() * 9 / 10, "{by_count}");
        assert!(by_cursor > sent.len() * 9 / 10, "{by_cursor}");
    }

    #[test]
    fn in_place_epbs_big_endian() {
        let mut f = shb(true);
        let mut idb_body = 1u16.to_be_bytes().to_vec();
        idb_body.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
        f.extend(block(pcapng::IDB, &idb_body, true));
        for (i, data) in [&frame1()[..], &[1, 2, 3], &[]].iter().enumerate() {
            let mut b = Vec::new();
            for v in [0, 0, i as u32 + 7, data.len() as u32, data.len() as u32 + 3] {
                b.extend_from_slice(&v.to_be_bytes());
            }
            b.extend_from_slice(data);
            f.extend(block(pcapng::EPB, &b, true));
        }
        let fast = walk(Cursor::new(&f));
        assert_eq!(fast.len(), 4);
        assert_eq!(fast, walk(OneByte(&f)));
        assert_eq!(fast[0].as_ref().map(|w| (w.1, w.3)), Ok((7_000, 84)));
    }
}
