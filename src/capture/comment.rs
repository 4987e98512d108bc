//! A capture copied to pcapng with comments added to chosen packets (`quakecap annotate`).
//!
//! The copy keeps every block of a pcapng input as it is (sections, interfaces and their
//! options, name resolution, statistics, custom blocks, the packets' bytes, timestamps and
//! options, their own comments included); a packet given a comment gets it as one more
//! `opt_comment` option (code 1) before its end of options. A classic pcap input becomes one
//! pcapng section with one interface of the file's link type, snap length and resolution
//! (`if_tsresol` 6 or 9), each record an Enhanced Packet Block with the record's timestamp to
//! the unit. Packets are numbered as [`super::CaptureReader`] numbers them (every packet
//! block, or pcap record, from 1 across sections), so a frame index from the decoders names
//! the packet here. A Simple Packet Block has no options: it is copied unchanged, without its
//! comment (counted in [`CopyStats::uncommented`]).
//!
//! The input is read as a stream, one block in memory at a time; where its framing breaks
//! (a bad block length, a truncated block) the copy stops after the last whole block, as the
//! reader stops.

use std::io::{self, Read, Write};

use super::MAX_BLOCK_LEN;

const SHB: u32 = 0x0A0D_0D0A;
const PB: u32 = 2;
const SPB: u32 = 3;
const EPB: u32 = 6;
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;
const OPT_ENDOFOPT: u16 = 0;
const OPT_COMMENT: u16 = 1;
/// Longest comment written (an option's length is 16 bits).
const MAX_COMMENT: usize = 65_000;

/// What the copy did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopyStats {
    /// Packets written.
    pub packets: u64,
    /// Packets given a comment.
    pub commented: u64,
    /// Packets that were to get a comment but could not hold one (Simple Packet Blocks, or
    /// a packet block whose options could not be read); written unchanged.
    pub uncommented: u64,
    /// Where the input's framing broke and the copy stopped (byte offset and why).
    pub stopped: Option<(u64, String)>,
}

enum Format {
    /// Classic pcap: byte order, ns resolution.
    Pcap { be: bool, nanos: bool },
    /// pcapng: the current section's byte order.
    PcapNg { be: bool },
}

/// Copies a capture to pcapng, adding comments to packets by frame number.
pub struct CommentCopier<R: Read, W: Write> {
    input: R,
    out: W,
    format: Format,
    /// Input bytes consumed.
    offset: u64,
    /// Packets met so far (the number of the last one).
    frames: u64,
    /// The copy stopped (end of input or broken framing).
    done: bool,
    block: Vec<u8>,
    stats: CopyStats,
}

fn u16_at(b: &[u8], at: usize, be: bool) -> Option<u16> {
    let x: [u8; 2] = b.get(at..at + 2)?.try_into().ok()?;
    Some(if be {
        u16::from_be_bytes(x)
    } else {
        u16::from_le_bytes(x)
    })
}

fn u32_at(b: &[u8], at: usize, be: bool) -> Option<u32> {
    let x: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
    Some(if be {
        u32::from_be_bytes(x)
    } else {
        u32::from_le_bytes(x)
    })
}

fn put16(v: &mut Vec<u8>, x: u16, be: bool) {
    v.extend_from_slice(&if be { x.to_be_bytes() } else { x.to_le_bytes() });
}

fn put32(v: &mut Vec<u8>, x: u32, be: bool) {
    v.extend_from_slice(&if be { x.to_be_bytes() } else { x.to_le_bytes() });
}

/// Read as much of `buf` as the input holds: the bytes read.
fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// One comment option (padded) appended to `v`, in byte order `be`; the text cut to
/// [`MAX_COMMENT`] bytes at a character boundary.
fn push_comment(v: &mut Vec<u8>, text: &str, be: bool) {
    let mut end = text.len().min(MAX_COMMENT);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let text = &text.as_bytes()[..end];
    put16(v, OPT_COMMENT, be);
    put16(v, text.len() as u16, be);
    v.extend_from_slice(text);
    v.resize(v.len().div_ceil(4) * 4, 0);
}

/// The options of a packet block (from `start` of `body`) with `extra` options added before
/// the end of options; None when they cannot be walked.
fn with_options(body: &[u8], start: usize, extra: &[u8], be: bool) -> Option<Vec<u8>> {
    let mut at = start;
    let mut kept = Vec::with_capacity(body.len().saturating_sub(start) + extra.len() + 4);
    while at + 4 <= body.len() {
        let code = u16_at(body, at, be)?;
        let len = usize::from(u16_at(body, at + 2, be)?);
        if code == OPT_ENDOFOPT {
            break;
        }
        let next = at + 4 + len.div_ceil(4) * 4;
        kept.extend_from_slice(body.get(at..next)?);
        at = next;
    }
    if at < body.len() && at + 4 > body.len() {
        return None;
    }
    kept.extend_from_slice(extra);
    put16(&mut kept, OPT_ENDOFOPT, be);
    put16(&mut kept, 0, be);
    Some(kept)
}

impl<R: Read, W: Write> CommentCopier<R, W> {
    /// Read the input's header and write the output's start. An input that is neither pcap
    /// nor pcapng is an `InvalidData` error.
    pub fn new(mut input: R, out: W) -> io::Result<Self> {
        let mut magic = [0u8; 4];
        let n = read_up_to(&mut input, &mut magic)?;
        let bad = || io::Error::new(io::ErrorKind::InvalidData, "not a pcap or pcapng file");
        if n < 4 {
            return Err(bad());
        }
        let le = u32::from_le_bytes(magic);
        let be_magic = u32::from_be_bytes(magic);
        let pcap = match (le, be_magic) {
            (0xa1b2_c3d4, _) => Some((false, false)),
            (0xa1b2_3c4d, _) => Some((false, true)),
            (_, 0xa1b2_c3d4) => Some((true, false)),
            (_, 0xa1b2_3c4d) => Some((true, true)),
            _ => None,
        };
        let mut me = CommentCopier {
            input,
            out,
            format: Format::PcapNg { be: false },
            offset: 4,
            frames: 0,
            done: false,
            block: Vec::new(),
            stats: CopyStats::default(),
        };
        if let Some((be, nanos)) = pcap {
            let mut h = [0u8; 20];
            if read_up_to(&mut me.input, &mut h)? < h.len() {
                return Err(bad());
            }
            me.offset += 20;
            let snaplen = u32_at(&h, 12, be).unwrap_or(0);
            let link = u32_at(&h, 16, be).unwrap_or(0) & 0xffff;
            me.format = Format::Pcap { be, nanos };
            let out = &mut me.out;
            let mut shb = Vec::new();
            put32(&mut shb, BYTE_ORDER_MAGIC, false);
            put16(&mut shb, 1, false);
            put16(&mut shb, 0, false);
            shb.extend_from_slice(&[0xff; 8]);
            write_block(out, SHB, &shb, false)?;
            let mut idb = Vec::new();
            put16(&mut idb, link as u16, false);
            put16(&mut idb, 0, false);
            put32(&mut idb, snaplen, false);
            put16(&mut idb, 9, false); // if_tsresol
            put16(&mut idb, 1, false);
            idb.extend_from_slice(&[if nanos { 9 } else { 6 }, 0, 0, 0]);
            put16(&mut idb, OPT_ENDOFOPT, false);
            put16(&mut idb, 0, false);
            write_block(out, 1, &idb, false)?;
        } else if le != SHB {
            return Err(bad());
        } else {
            // The first block is the SHB: copied by the walk (the magic is given back).
            me.offset = 0;
            me.block = magic.to_vec();
        }
        Ok(me)
    }

    /// What the copy did so far.
    pub fn stats(&self) -> &CopyStats {
        &self.stats
    }

    /// Copy every block up to and including packet `last` (1-based), and the blocks before
    /// the next packet; `comment(n)` gives packet `n`'s comments (none: the packet is copied
    /// as it is), each written as one `opt_comment`.
    pub fn copy_through(
        &mut self,
        last: u64,
        comment: &mut dyn FnMut(u64) -> Vec<String>,
    ) -> io::Result<()> {
        while !self.done && self.frames < last {
            self.step(comment)?;
        }
        Ok(())
    }

    /// Copy the rest of the input; give back the output, flushed, and what the copy did.
    pub fn finish(
        mut self,
        comment: &mut dyn FnMut(u64) -> Vec<String>,
    ) -> io::Result<(W, CopyStats)> {
        self.copy_through(u64::MAX, comment)?;
        self.out.flush()?;
        Ok((self.out, self.stats))
    }

    fn stop(&mut self, why: &str) {
        self.done = true;
        if self.stats.stopped.is_none() {
            self.stats.stopped = Some((self.offset, why.to_string()));
        }
    }

    /// Read `n` more bytes into `self.block`; false (and stopped) at a short read.
    fn fill(&mut self, n: usize) -> io::Result<bool> {
        let have = self.block.len();
        self.block.resize(have + n, 0);
        let got = read_up_to(&mut self.input, &mut self.block[have..])?;
        if got < n {
            self.block.truncate(have + got);
            if !self.block.is_empty() {
                self.stop("the file ends inside a block");
            }
            self.done = true;
            return Ok(false);
        }
        Ok(true)
    }

    /// One block (pcapng) or record (pcap).
    fn step(&mut self, comment: &mut dyn FnMut(u64) -> Vec<String>) -> io::Result<()> {
        match self.format {
            Format::Pcap { be, nanos } => self.pcap_record(be, nanos, comment),
            Format::PcapNg { be } => self.pcapng_block(be, comment),
        }
    }

    fn pcap_record(
        &mut self,
        be: bool,
        nanos: bool,
        comment: &mut dyn FnMut(u64) -> Vec<String>,
    ) -> io::Result<()> {
        self.block.clear();
        if !self.fill(16)? {
            return Ok(());
        }
        let h = &self.block;
        let (sec, frac, caplen, orig) = (
            u32_at(h, 0, be).unwrap_or(0),
            u32_at(h, 4, be).unwrap_or(0),
            u32_at(h, 8, be).unwrap_or(0),
            u32_at(h, 12, be).unwrap_or(0),
        );
        if u64::from(caplen) > MAX_BLOCK_LEN {
            self.stop("a record's captured length is beyond any sane size");
            return Ok(());
        }
        if !self.fill(caplen as usize)? {
            return Ok(());
        }
        self.offset += 16 + u64::from(caplen);
        self.frames += 1;
        // Units of the interface's if_tsresol (6 or 9): seconds times 10^n plus the fraction.
        let scale: u64 = if nanos { 1_000_000_000 } else { 1_000_000 };
        let ts = u64::from(sec) * scale + u64::from(frac);
        let mut body = Vec::with_capacity(20 + caplen as usize + 64);
        put32(&mut body, 0, false);
        put32(&mut body, (ts >> 32) as u32, false);
        put32(&mut body, ts as u32, false);
        put32(&mut body, caplen, false);
        put32(&mut body, orig, false);
        body.extend_from_slice(&self.block[16..]);
        body.resize(body.len().div_ceil(4) * 4, 0);
        let texts = comment(self.frames);
        if !texts.is_empty() {
            for c in &texts {
                push_comment(&mut body, c, false);
            }
            put16(&mut body, OPT_ENDOFOPT, false);
            put16(&mut body, 0, false);
            self.stats.commented += 1;
        }
        self.stats.packets += 1;
        write_block(&mut self.out, EPB, &body, false)
    }

    fn pcapng_block(
        &mut self,
        mut be: bool,
        comment: &mut dyn FnMut(u64) -> Vec<String>,
    ) -> io::Result<()> {
        // The SHB's magic may already be in the buffer (the file's first bytes).
        let have = if self.offset == 0 {
            self.block.len()
        } else {
            self.block.clear();
            0
        };
        if !self.fill(8 - have)? {
            return Ok(());
        }
        let btype = u32_at(&self.block, 0, be).unwrap_or(0);
        if btype == SHB {
            if !self.fill(4)? {
                return Ok(());
            }
            match u32_at(&self.block, 8, false) {
                Some(BYTE_ORDER_MAGIC) => be = false,
                Some(x) if x.swap_bytes() == BYTE_ORDER_MAGIC => be = true,
                _ => {
                    self.stop("a section header's byte-order magic is wrong");
                    return Ok(());
                }
            }
            self.format = Format::PcapNg { be };
        }
        let len = u32_at(&self.block, 4, be).unwrap_or(0);
        let min = if btype == SHB { 28 } else { 12 };
        if len < min || len % 4 != 0 || u64::from(len) > MAX_BLOCK_LEN {
            self.stop("a block length is impossible");
            return Ok(());
        }
        let rest = len as usize - self.block.len();
        if !self.fill(rest)? {
            return Ok(());
        }
        let n = self.block.len();
        if u32_at(&self.block, n - 4, be) != Some(len) {
            self.stop("a block's trailing length differs from its length");
            return Ok(());
        }
        self.offset += u64::from(len);
        let packet = matches!(btype, EPB | SPB | PB);
        if !packet {
            return self.out.write_all(&self.block);
        }
        self.frames += 1;
        self.stats.packets += 1;
        let texts = comment(self.frames);
        if texts.is_empty() {
            return self.out.write_all(&self.block);
        }
        let mut extra = Vec::with_capacity(texts.iter().map(|t| t.len() + 8).sum());
        for t in &texts {
            push_comment(&mut extra, t, be);
        }
        // EPB: interface, time (2), captured, original; PB: interface and drops (16 bits
        // each), then the same. The data, padded, then the options.
        let body = &self.block[8..n - 4];
        let caplen = u32_at(body, 12, be).unwrap_or(u32::MAX) as usize;
        let data_end = 20usize.saturating_add(caplen.div_ceil(4) * 4);
        let options = (btype != SPB && data_end <= body.len())
            .then(|| with_options(body, data_end, &extra, be))
            .flatten();
        match options {
            Some(options) => {
                let mut new = body[..data_end].to_vec();
                new.extend_from_slice(&options);
                self.stats.commented += 1;
                write_block(&mut self.out, btype, &new, be)
            }
            None => {
                self.stats.uncommented += 1;
                self.out.write_all(&self.block)
            }
        }
    }
}

/// One pcapng block: type, total length, body (padded), total length.
fn write_block(out: &mut impl Write, btype: u32, body: &[u8], be: bool) -> io::Result<()> {
    let padded = body.len().div_ceil(4) * 4;
    let total = u32::try_from(padded + 12)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "block too large"))?;
    let mut head = Vec::with_capacity(8);
    put32(&mut head, btype, be);
    put32(&mut head, total, be);
    out.write_all(&head)?;
    out.write_all(body)?;
    out.write_all(&[0u8; 3][..padded - body.len()])?;
    let mut tail = Vec::with_capacity(4);
    put32(&mut tail, total, be);
    out.write_all(&tail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::TsPrecision;
    use crate::capture::{ByteOrder, CaptureReader, LinkType, PcapNgWriter, PcapWriter};

    /// Every frame as (index, ts, link, bytes).
    fn frames(file: &[u8]) -> Vec<(u64, i64, LinkType, Vec<u8>)> {
        let mut r = CaptureReader::new(file).expect("a capture");
        let mut out = Vec::new();
        while let Ok(Some(f)) = r.next_frame() {
            out.push((f.index, f.ts_ns, f.link, f.data.to_vec()));
        }
        out
    }

    fn copy(input: &[u8], comment: &mut dyn FnMut(u64) -> Vec<String>) -> (Vec<u8>, CopyStats) {
        let c = CommentCopier::new(input, Vec::new()).expect("a capture");
        c.finish(comment).expect("copied")
    }

    fn every_other(n: u64) -> Vec<String> {
        if n % 2 == 0 {
            vec![format!("packet {n}"), "second, ünïcode".into()]
        } else {
            Vec::new()
        }
    }

    #[test]
    fn big_endian_sections_and_link_types_are_copied_with_comments() {
        let mut w = PcapNgWriter::with_options(Vec::new(), ByteOrder::Big, 6).unwrap();
        w.write_packet(LinkType::ETHERNET, 1_000_000_000, &[1; 60], 60)
            .unwrap();
        w.write_packet(LinkType::RAW, 2_000_000_000, &[0x45; 21], 21)
            .unwrap();
        w.new_section().unwrap();
        w.write_packet(LinkType::ETHERNET, 3_000_000_000, &[3; 61], 61)
            .unwrap();
        w.write_packet(LinkType::ETHERNET, 4_000_000_000, &[4; 62], 62)
            .unwrap();
        let input = w.finish().unwrap();
        let (out, stats) = copy(&input, &mut every_other);
        assert_eq!(frames(&out), frames(&input));
        assert_eq!(
            (stats.packets, stats.commented, stats.uncommented),
            (4, 2, 0)
        );
        assert!(stats.stopped.is_none());
        for needle in ["packet 2", "packet 4", "second, ünïcode"] {
            assert!(out.windows(needle.len()).any(|w| w == needle.as_bytes()));
        }
        // Nothing to say: the copy is the input, byte for byte.
        assert_eq!(copy(&input, &mut |_| Vec::new()).0, input);
    }

    #[test]
    fn a_pcap_becomes_pcapng_with_its_times_to_the_unit() {
        for precision in [TsPrecision::Micro, TsPrecision::Nano] {
            let mut w = PcapWriter::new(Vec::new(), LinkType::LINUX_SLL, precision).unwrap();
            w.write_packet(1_795_361_221_860_853_123, &[7; 40], 40)
                .unwrap();
            w.write_packet(1_795_361_222_000_000_001, &[8; 41], 41)
                .unwrap();
            let input = w.finish().unwrap();
            let (out, stats) = copy(&input, &mut every_other);
            assert_eq!(&out[..4], &SHB.to_le_bytes());
            assert_eq!(frames(&out), frames(&input));
            assert_eq!(stats.commented, 1);
        }
    }

    #[test]
    fn a_cut_file_is_copied_to_its_last_whole_block() {
        let mut w = PcapNgWriter::new(Vec::new()).unwrap();
        for i in 0..5u8 {
            w.write_packet(LinkType::ETHERNET, i64::from(i) * 1000, &[i; 50], 50)
                .unwrap();
        }
        let input = w.finish().unwrap();
        let cut = &input[..input.len() - 20];
        let (out, stats) = copy(cut, &mut every_other);
        assert_eq!(frames(&out), frames(&input)[..4]);
        assert!(stats.stopped.is_some());
        // Not a capture at all.
        assert!(CommentCopier::new(&b"GIF89a......"[..], Vec::new()).is_err());
        assert!(CommentCopier::new(&b""[..], Vec::new()).is_err());
    }
}
