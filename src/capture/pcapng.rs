//! pcapng blocks: Section Header (byte order, resets interfaces), Interface Description
//! (link type, snaplen, `if_tsresol`, `if_tsoffset`), Enhanced / Simple / obsolete Packet
//! blocks: the parsing of one block body (the bytes between the 8-byte type+length header
//! and the 4-byte trailing length), and the reader's walk over the blocks (its I/O through
//! the reader's source).

use super::bytes::{pad4, u16_at, u32_at, u64_at};
use super::{CaptureError, LinkType, MAX_CAPLEN};

pub(crate) const SHB: u32 = 0x0A0D_0D0A;
pub(crate) const IDB: u32 = 1;
pub(crate) const PB: u32 = 2;
pub(crate) const SPB: u32 = 3;
pub(crate) const EPB: u32 = 6;
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;

const OPT_END: u16 = 0;
const OPT_IF_TSRESOL: u16 = 9;
const OPT_IF_TSOFFSET: u16 = 14;

/// Units of an interface's timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TsUnit {
    /// 10^-n seconds (`if_tsresol` with the high bit clear; 6 = µs, the default).
    Pow10(u8),
    /// 2^-n seconds (`if_tsresol` with the high bit set).
    Pow2(u8),
}

impl TsUnit {
    pub(crate) fn from_tsresol(b: u8) -> TsUnit {
        if b & 0x80 == 0 {
            TsUnit::Pow10(b)
        } else {
            TsUnit::Pow2(b & 0x7f)
        }
    }

    /// Convert a count of these units to nanoseconds (i128: no intermediate overflow).
    fn to_ns(self, ts: u64) -> i128 {
        let ts = i128::from(ts);
        match self {
            TsUnit::Pow10(n) if n <= 9 => ts * 10i128.pow(u32::from(9 - n)),
            // 10^38 is the largest power of ten an i128 holds; finer units round to 0.
            TsUnit::Pow10(n) => 10i128.checked_pow(u32::from(n - 9)).map_or(0, |d| ts / d),
            TsUnit::Pow2(n) => (ts * 1_000_000_000) >> n,
        }
    }
}

/// One Interface Description Block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Interface {
    pub link: LinkType,
    pub snaplen: u32,
    pub unit: TsUnit,
    /// `if_tsoffset`: seconds added to every timestamp of the interface.
    pub offset_s: i64,
}

impl Interface {
    /// [`Interface::ts_ns`] for the usual units (10^-n s, n <= 9) in 64-bit arithmetic; None
    /// when a step would overflow (the i128 path then decides).
    #[inline(always)]
    fn ts_ns_i64(&self, units: u64) -> Option<i64> {
        const POW10: [u64; 10] = [
            1_000_000_000,
            100_000_000,
            10_000_000,
            1_000_000,
            100_000,
            10_000,
            1_000,
            100,
            10,
            1,
        ];
        let TsUnit::Pow10(n) = self.unit else {
            return None;
        };
        let ns = i64::try_from(units.checked_mul(*POW10.get(usize::from(n))?)?).ok()?;
        ns.checked_add(self.offset_s.checked_mul(1_000_000_000)?)
    }

    /// Timestamp (high and low 32-bit words) to ns since the epoch, saturating.
    #[inline(always)]
    pub(crate) fn ts_ns(&self, hi: u32, lo: u32) -> i64 {
        let units = (u64::from(hi) << 32) | u64::from(lo);
        match self.ts_ns_i64(units) {
            Some(ns) => ns,
            None => self.ts_ns_wide(units),
        }
    }

    /// [`Interface::ts_ns`] in i128, for units other than 10^-n s and for overflows.
    #[cold]
    #[inline(never)]
    fn ts_ns_wide(&self, units: u64) -> i64 {
        let ns = self.unit.to_ns(units) + i128::from(self.offset_s) * 1_000_000_000;
        i64::try_from(ns).unwrap_or(if ns < 0 { i64::MIN } else { i64::MAX })
    }
}

/// State of the current section.
#[derive(Debug, Default)]
pub(crate) struct Section {
    pub big_endian: bool,
    /// Interfaces by number; `None` for an IDB too broken to use.
    pub interfaces: Vec<Option<Interface>>,
}

/// Byte order of a section from its byte-order magic: `Some(big_endian)`.
pub(crate) fn byte_order(bom: [u8; 4]) -> Option<bool> {
    if u32::from_le_bytes(bom) == BYTE_ORDER_MAGIC {
        Some(false)
    } else if u32::from_be_bytes(bom) == BYTE_ORDER_MAGIC {
        Some(true)
    } else {
        None
    }
}

/// Check the SHB body (the bytes after the byte-order magic): only major version 1 exists.
pub(crate) fn check_shb(body: &[u8], big_endian: bool, offset: u64) -> Result<(), CaptureError> {
    let major = u16_at(body, 0, big_endian);
    if major != Some(1) {
        return Err(CaptureError::BadFraming {
            offset,
            message: format!("unsupported pcapng version {major:?} (only 1.x exists)"),
        });
    }
    Ok(())
}

/// Parse an Interface Description Block body. Malformed options are ignored (the
/// defaults stay): they cannot move packet data, only its interpretation.
pub(crate) fn parse_idb(
    body: &[u8],
    big_endian: bool,
    offset: u64,
) -> Result<Interface, CaptureError> {
    let (Some(link), Some(snaplen)) = (u16_at(body, 0, big_endian), u32_at(body, 4, big_endian))
    else {
        return Err(CaptureError::BadRecord {
            offset,
            message: format!(
                "interface description block body of {} bytes is too short",
                body.len()
            ),
        });
    };
    let mut iface = Interface {
        link: LinkType(u32::from(link)),
        snaplen,
        unit: TsUnit::Pow10(6),
        offset_s: 0,
    };
    let mut pos = 8;
    while let (Some(code), Some(len)) = (
        u16_at(body, pos, big_endian),
        u16_at(body, pos + 2, big_endian),
    ) {
        let start = pos + 4;
        let Some(value) = body.get(start..start + usize::from(len)) else {
            break;
        };
        match (code, value) {
            (OPT_END, _) => break,
            (OPT_IF_TSRESOL, [b, ..]) => iface.unit = TsUnit::from_tsresol(*b),
            (OPT_IF_TSOFFSET, v) if v.len() == 8 => {
                iface.offset_s = u64_at(v, 0, big_endian).map_or(0, |x| x as i64);
            }
            _ => {}
        }
        pos = start + pad4(usize::from(len));
    }
    Ok(iface)
}

/// A packet found in a packet block: where its bytes are in the block body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Packet {
    pub data_start: usize,
    pub caplen: usize,
    pub orig_len: u32,
    pub ts_ns: i64,
    pub link: LinkType,
}

fn bad(offset: u64, message: String) -> CaptureError {
    CaptureError::BadRecord { offset, message }
}

fn interface(section: &Section, id: u32, offset: u64) -> Result<&Interface, CaptureError> {
    usize::try_from(id)
        .ok()
        .and_then(|i| section.interfaces.get(i))
        .and_then(Option::as_ref)
        .ok_or_else(|| {
            bad(
                offset,
                format!("packet names interface {id}, which is not described"),
            )
        })
}

/// Check that `caplen` bytes starting at `start` fit in the body and in [`MAX_CAPLEN`].
fn check_data(body: &[u8], start: usize, caplen: u32, offset: u64) -> Result<usize, CaptureError> {
    if caplen > MAX_CAPLEN {
        return Err(CaptureError::TooLarge {
            offset,
            len: u64::from(caplen),
            limit: u64::from(MAX_CAPLEN),
        });
    }
    let n = caplen as usize;
    if start.saturating_add(n) > body.len() {
        return Err(bad(
            offset,
            format!("captured length {caplen} runs past the end of its block"),
        ));
    }
    Ok(n)
}

/// Parse an EPB (6), SPB (3) or obsolete PB (2) body. `last_ts_ns` stands in for the
/// timestamp an SPB does not have (keeps the stream's time monotonic for expiry logic).
pub(crate) fn parse_packet(
    btype: u32,
    body: &[u8],
    section: &Section,
    last_ts_ns: i64,
    offset: u64,
) -> Result<Packet, CaptureError> {
    let be = section.big_endian;
    let short = || {
        bad(
            offset,
            format!("packet block body of {} bytes is too short", body.len()),
        )
    };
    match btype {
        EPB | PB => {
            let (id, start) = if btype == EPB {
                (u32_at(body, 0, be).ok_or_else(short)?, 20)
            } else {
                (u32::from(u16_at(body, 0, be).ok_or_else(short)?), 20)
            };
            let hi = u32_at(body, 4, be).ok_or_else(short)?;
            let lo = u32_at(body, 8, be).ok_or_else(short)?;
            let caplen = u32_at(body, 12, be).ok_or_else(short)?;
            let orig_len = u32_at(body, 16, be).ok_or_else(short)?;
            let iface = interface(section, id, offset)?;
            let caplen = check_data(body, start, caplen, offset)?;
            Ok(Packet {
                data_start: start,
                caplen,
                orig_len,
                ts_ns: iface.ts_ns(hi, lo),
                link: iface.link,
            })
        }
        _ => {
            // SPB: interface 0, captured length = min(original, snaplen, what the block holds).
            let orig_len = u32_at(body, 0, be).ok_or_else(short)?;
            let iface = interface(section, 0, offset)?;
            let mut caplen =
                orig_len.min(u32::try_from(body.len().saturating_sub(4)).unwrap_or(u32::MAX));
            if iface.snaplen != 0 {
                caplen = caplen.min(iface.snaplen);
            }
            let caplen = check_data(body, 4, caplen, offset)?;
            Ok(Packet {
                data_start: 4,
                caplen,
                orig_len,
                ts_ns: last_ts_ns,
                link: iface.link,
            })
        }
    }
}

use super::reader::{hex, Record, State, MAX_PACKET_BODY, MIN_BLOCK_LEN, MIN_SHB_LEN};
use super::MAX_BLOCK_LEN;

/// The reader's walk over pcapng blocks (its pcap walk is in `reader`).
impl<R: std::io::Read> super::reader::CaptureReader<R> {
    pub(super) fn section(&self) -> Option<&Section> {
        match &self.state {
            State::PcapNg(s) => Some(s),
            State::Pcap(_) => None,
        }
    }

    /// Walk blocks until a packet: SHBs reset the section, IDBs add interfaces, anything
    /// else is skipped without being buffered.
    pub(super) fn next_pcapng(&mut self) -> Result<Option<Record>, CaptureError> {
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
            if btype == SHB {
                let len_bytes = [hdr[4], hdr[5], hdr[6], hdr[7]];
                self.read_shb(offset, len_bytes)?;
                continue;
            }
            let body_len = block_body_len(len, MIN_BLOCK_LEN, offset)?;
            match btype {
                IDB => {
                    let start = self.read_block_body(len, body_len, offset)?;
                    let iface = parse_idb(self.src.block(start, body_len), be, offset);
                    // A broken IDB still takes its interface number, so that later
                    // interfaces keep theirs; its packets are refused.
                    if let State::PcapNg(s) = &mut self.state {
                        s.interfaces.push(iface.as_ref().ok().copied());
                    }
                    iface?;
                }
                EPB | SPB | PB if body_len > MAX_PACKET_BODY => {
                    // Cannot hold an acceptable packet: skip it unbuffered, so the buffer
                    // stays bounded by MAX_PACKET_BODY whatever the file says.
                    self.frames += 1;
                    self.src.skip(body_len as u64, offset)?;
                    self.check_trailer(len, offset)?;
                    return Err(CaptureError::TooLarge {
                        offset,
                        len: u64::from(len),
                        limit: MAX_PACKET_BODY as u64,
                    });
                }
                EPB | SPB | PB => {
                    let start = self.read_block_body(len, body_len, offset)?;
                    self.frames += 1;
                    return self.packet(btype, start, body_len, offset).map(Some);
                }
                _ => {
                    self.src.skip(body_len as u64, offset)?;
                    self.check_trailer(len, offset)?;
                }
            }
        }
    }

    /// The common block, an Enhanced Packet Block already whole in the read-ahead and valid,
    /// read in place: the record [`Self::next_pcapng`] returns for it, or None, with nothing
    /// consumed, for anything else (other blocks, partial reads, every error). The checks
    /// are the general walk's: block length (a multiple of 4, room for the 20 fixed bytes,
    /// at most a packet body), trailer, described interface, captured length.
    pub(super) fn buffered_epb(&mut self) -> Option<Record> {
        const FIXED: usize = 28; // type, length, interface, time (2), captured, original
        let State::PcapNg(section) = &self.state else {
            return None;
        };
        let be = section.big_endian;
        // A byte swap chosen without a branch per field.
        let word = |b: [u8; 4]| {
            let w = u32::from_le_bytes(b);
            if be {
                w.swap_bytes()
            } else {
                w
            }
        };
        let avail = self.src.buf.get(self.src.pos..self.src.end)?;
        let head: &[u8; FIXED] = avail.get(..FIXED)?.try_into().ok()?;
        let field = |i: usize| {
            word([
                head[4 * i],
                head[4 * i + 1],
                head[4 * i + 2],
                head[4 * i + 3],
            ])
        };
        let len = field(1);
        if field(0) != EPB || len % 4 != 0 || len < 32 {
            return None;
        }
        let body_len = len as usize - 12;
        if body_len > MAX_PACKET_BODY {
            return None;
        }
        let trailer: [u8; 4] = avail.get(8 + body_len..12 + body_len)?.try_into().ok()?;
        let iface = section.interfaces.get(field(2) as usize)?.as_ref()?;
        let caplen = field(5);
        if word(trailer) != len || caplen > MAX_CAPLEN || 20 + caplen as usize > body_len {
            return None;
        }
        let offset = self.src.offset;
        let record = Record {
            start: self.src.pos + FIXED,
            len: caplen as usize,
            ts_ns: iface.ts_ns(field(3), field(4)),
            link: iface.link,
            orig_len: field(6),
            offset,
        };
        self.src.consume(body_len + 12);
        self.frames += 1;
        Some(record)
    }

    pub(super) fn packet(
        &self,
        btype: u32,
        start: usize,
        body_len: usize,
        offset: u64,
    ) -> Result<Record, CaptureError> {
        let body = self.src.block(start, body_len);
        let empty = Section::default();
        let section = self.section().unwrap_or(&empty);
        let p = parse_packet(btype, body, section, self.last_ts_ns, offset)?;
        Ok(Record {
            start: start + p.data_start,
            len: p.caplen,
            ts_ns: p.ts_ns,
            link: p.link,
            orig_len: p.orig_len,
            offset,
        })
    }

    /// The rest of a Section Header Block whose type (and raw length) were read at
    /// `offset`: byte order, version; forgets the previous section's interfaces.
    pub(super) fn read_shb(&mut self, offset: u64, len_bytes: [u8; 4]) -> Result<(), CaptureError> {
        let mut bom = [0u8; 4];
        self.src.read_exact(&mut bom, offset)?;
        let big_endian = byte_order(bom).ok_or_else(|| CaptureError::BadFraming {
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
        let start = self.src.read_block(rest, offset)?;
        check_shb(self.src.block(start, rest), big_endian, offset)?;
        self.state = State::PcapNg(Section {
            big_endian,
            interfaces: Vec::new(),
        });
        self.check_trailer(len, offset)
    }

    /// Read a block body and its trailer in one go, then check the trailer; returns where
    /// the body starts in the read-ahead.
    pub(super) fn read_block_body(
        &mut self,
        len: u32,
        body_len: usize,
        offset: u64,
    ) -> Result<usize, CaptureError> {
        let start = self.src.read_block(body_len + 4, offset)?;
        let be = self.section().is_some_and(|s| s.big_endian);
        let trailer = u32_at(self.src.block(start, body_len + 4), body_len, be).unwrap_or(0);
        trailer_matches(len, trailer, offset)?;
        Ok(start)
    }

    /// The trailing copy of the block length must match: otherwise the framing is lost.
    pub(super) fn check_trailer(&mut self, len: u32, offset: u64) -> Result<(), CaptureError> {
        let mut t = [0u8; 4];
        self.src.read_exact(&mut t, offset)?;
        let be = self.section().is_some_and(|s| s.big_endian);
        trailer_matches(len, u32_at(&t, 0, be).unwrap_or(0), offset)
    }
}

pub(super) fn trailer_matches(len: u32, trailer: u32, offset: u64) -> Result<(), CaptureError> {
    if trailer != len {
        return Err(CaptureError::BadFraming {
            offset,
            message: format!("block length {len} but trailing length {trailer}"),
        });
    }
    Ok(())
}

/// Validate a pcapng block total length; returns the body length (without the 8-byte
/// header and the 4-byte trailer). A bad length loses the framing: fatal.
pub(super) fn block_body_len(len: u32, min: u32, offset: u64) -> Result<usize, CaptureError> {
    if len < min || len % 4 != 0 || u64::from(len) > MAX_BLOCK_LEN {
        return Err(CaptureError::BadFraming {
            offset,
            message: format!("block length {len} (must be a multiple of 4, at least {min}, at most {MAX_BLOCK_LEN})"),
        });
    }
    Ok((len - 12) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iface(unit: TsUnit, offset_s: i64) -> Interface {
        Interface {
            link: LinkType::ETHERNET,
            snaplen: 0,
            unit,
            offset_s,
        }
    }

    #[test]
    fn tsresol_power_of_ten() {
        let t = 1_700_000_000_123_456u64; // µs
        let i = iface(TsUnit::from_tsresol(6), 0);
        assert_eq!(
            i.ts_ns((t >> 32) as u32, t as u32),
            1_700_000_000_123_456_000
        );
        let i = iface(TsUnit::from_tsresol(9), 0);
        assert_eq!(i.ts_ns(0, 5), 5);
        // 10^-12 s (ps) units: divided down
        let i = iface(TsUnit::from_tsresol(12), 0);
        assert_eq!(i.ts_ns(0, 5_000), 5);
        // absurd resolutions do not panic
        assert_eq!(
            iface(TsUnit::from_tsresol(127), 0).ts_ns(u32::MAX, u32::MAX),
            0
        );
    }

    #[test]
    fn tsresol_power_of_two() {
        // 2^-10 s units: 1024 units = 1 s; 512 = 0.5 s
        let i = iface(TsUnit::from_tsresol(0x80 | 10), 0);
        assert_eq!(i.ts_ns(0, 1024), 1_000_000_000);
        assert_eq!(i.ts_ns(0, 512), 500_000_000);
        // 2^-30 with the full 64-bit range and a big shift
        let i = iface(TsUnit::from_tsresol(0x80 | 127), 0);
        assert_eq!(i.ts_ns(u32::MAX, u32::MAX), 0);
    }

    #[test]
    fn tsoffset_is_added() {
        let i = iface(TsUnit::Pow10(6), 100);
        assert_eq!(i.ts_ns(0, 1), 100_000_001_000);
        let i = iface(TsUnit::Pow10(0), i64::MAX);
        assert_eq!(i.ts_ns(u32::MAX, u32::MAX), i64::MAX);
    }

    #[test]
    fn idb_options_parsed_and_malformed_ignored() {
        let mut b = Vec::new();
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(&65535u32.to_le_bytes());
        b.extend_from_slice(&9u16.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&[3, 0, 0, 0]);
        b.extend_from_slice(&14u16.to_le_bytes());
        b.extend_from_slice(&8u16.to_le_bytes());
        b.extend_from_slice(&7i64.to_le_bytes());
        let i = parse_idb(&b, false, 0).unwrap();
        assert_eq!(i.unit, TsUnit::Pow10(3));
        assert_eq!(i.offset_s, 7);
        assert_eq!(i.snaplen, 65535);
        // an option claiming more bytes than exist stops option parsing, keeps the IDB
        b.extend_from_slice(&9u16.to_le_bytes());
        b.extend_from_slice(&200u16.to_le_bytes());
        assert_eq!(parse_idb(&b, false, 0).unwrap().unit, TsUnit::Pow10(3));
        assert!(!parse_idb(&b[..6], false, 3).unwrap_err().is_fatal());
    }

    #[test]
    fn epb_bounds() {
        let section = Section {
            big_endian: false,
            interfaces: vec![Some(iface(TsUnit::Pow10(9), 0))],
        };
        let mut b = Vec::new();
        for v in [0u32, 0, 42, 4, 4] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&[1, 2, 3, 4]);
        let p = parse_packet(EPB, &b, &section, 0, 0).unwrap();
        assert_eq!((p.data_start, p.caplen, p.ts_ns), (20, 4, 42));
        assert!(parse_packet(EPB, &b[..22], &section, 0, 0).is_err());
        assert!(parse_packet(EPB, &b[..10], &section, 0, 0).is_err());
        b[0] = 1; // interface 1 does not exist
        assert!(!parse_packet(EPB, &b, &section, 0, 0)
            .unwrap_err()
            .is_fatal());
        let empty = Section::default();
        assert!(parse_packet(SPB, &[0, 0, 0, 0], &empty, 0, 0).is_err());
    }
    #[test]
    fn ts_ns_fast_path_matches_i128() {
        let units = [
            0u64,
            1,
            999,
            1_700_000_000_123_456,
            u64::MAX / 3,
            u64::MAX,
            1 << 63,
        ];
        for n in 0..=12u8 {
            for offset_s in [0i64, -5, 1_000_000, i64::MAX / 2, i64::MIN] {
                let i = iface(TsUnit::from_tsresol(n), offset_s);
                for &t in &units {
                    let ns = i.unit.to_ns(t) + i128::from(offset_s) * 1_000_000_000;
                    let want =
                        i64::try_from(ns).unwrap_or(if ns < 0 { i64::MIN } else { i64::MAX });
                    assert_eq!(
                        i.ts_ns((t >> 32) as u32, t as u32),
                        want,
                        "n {n} off {offset_s} t {t}"
                    );
                }
            }
        }
    }
}
