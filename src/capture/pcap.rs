//! Classic libpcap format: a 24-byte global header, then 16-byte record headers each
//! followed by the captured bytes. One link type and one timestamp resolution per file.

use super::bytes::u32_at;
use super::{CaptureError, LinkType, MAX_BLOCK_LEN, MAX_CAPLEN};

pub(crate) const GLOBAL_HEADER_LEN: usize = 24;
pub(crate) const RECORD_HEADER_LEN: usize = 16;

/// Magic numbers as read little-endian from the first four bytes of the file.
const MAGIC_US: u32 = 0xa1b2_c3d4;
const MAGIC_NS: u32 = 0xa1b2_3c4d;

/// What the global header says about every record of the file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PcapHeader {
    pub big_endian: bool,
    pub nanos: bool,
    pub link: LinkType,
}

/// Recognise the pcap magic in the first four bytes: `Some((big_endian, nanos))`.
pub(crate) fn sniff(magic: [u8; 4]) -> Option<(bool, bool)> {
    let le = u32::from_le_bytes(magic);
    let be = u32::from_be_bytes(magic);
    match (le, be) {
        (MAGIC_US, _) => Some((false, false)),
        (MAGIC_NS, _) => Some((false, true)),
        (_, MAGIC_US) => Some((true, false)),
        (_, MAGIC_NS) => Some((true, true)),
        _ => None,
    }
}

/// Parse the 24-byte global header (magic already recognised by [`sniff`]).
pub(crate) fn parse_global_header(h: &[u8], big_endian: bool, nanos: bool) -> Option<PcapHeader> {
    // The link-layer field keeps the LINKTYPE in its low 16 bits; the high bits carry FCS
    // length flags that do not change the link type.
    let network = u32_at(h, 20, big_endian)?;
    Some(PcapHeader {
        big_endian,
        nanos,
        link: LinkType(network & 0xffff),
    })
}

/// A record header, decoded.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecordHeader {
    pub ts_ns: i64,
    pub caplen: u32,
    pub orig_len: u32,
}

/// Decode a 16-byte record header.
pub(crate) fn parse_record_header(h: &[u8], hdr: &PcapHeader) -> Option<RecordHeader> {
    let be = hdr.big_endian;
    let sec = i64::from(u32_at(h, 0, be)?);
    let frac = i64::from(u32_at(h, 4, be)?);
    let frac_ns = if hdr.nanos {
        frac
    } else {
        frac.saturating_mul(1000)
    };
    Some(RecordHeader {
        ts_ns: sec.saturating_mul(1_000_000_000).saturating_add(frac_ns),
        caplen: u32_at(h, 8, be)?,
        orig_len: u32_at(h, 12, be)?,
    })
}

/// How to treat a record's captured length: `Ok(())` to read it, `Err` with whether the
/// record can still be skipped (non-fatal [`CaptureError::TooLarge`]) or the framing is lost.
pub(crate) fn check_caplen(caplen: u32, offset: u64) -> Result<(), CaptureError> {
    if u64::from(caplen) > MAX_BLOCK_LEN {
        // No sane writer makes such a record: the header is garbage, so the position of
        // the next record is unknown.
        return Err(CaptureError::BadFraming {
            offset,
            message: format!("record captured length {caplen} is beyond any sane size"),
        });
    }
    if caplen > MAX_CAPLEN {
        return Err(CaptureError::TooLarge {
            offset,
            len: u64::from(caplen),
            limit: u64::from(MAX_CAPLEN),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniff_all_four_magics() {
        assert_eq!(sniff([0xd4, 0xc3, 0xb2, 0xa1]), Some((false, false)));
        assert_eq!(sniff([0x4d, 0x3c, 0xb2, 0xa1]), Some((false, true)));
        assert_eq!(sniff([0xa1, 0xb2, 0xc3, 0xd4]), Some((true, false)));
        assert_eq!(sniff([0xa1, 0xb2, 0x3c, 0x4d]), Some((true, true)));
        assert_eq!(sniff([0x0a, 0x0d, 0x0d, 0x0a]), None);
    }

    #[test]
    fn record_header_us_and_ns() {
        let us = PcapHeader {
            big_endian: false,
            nanos: false,
            link: LinkType::ETHERNET,
        };
        let mut h = Vec::new();
        for v in [1_700_000_000u32, 123_456, 60, 60] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        let r = parse_record_header(&h, &us).unwrap();
        assert_eq!(r.ts_ns, 1_700_000_000_123_456_000);
        let ns = PcapHeader { nanos: true, ..us };
        assert_eq!(
            parse_record_header(&h, &ns).unwrap().ts_ns,
            1_700_000_000_000_123_456
        );
        assert!(parse_record_header(&h[..15], &us).is_none());
    }

    #[test]
    fn caplen_limits() {
        assert!(check_caplen(0, 0).is_ok());
        assert!(check_caplen(MAX_CAPLEN, 0).is_ok());
        assert!(!check_caplen(MAX_CAPLEN + 1, 7).unwrap_err().is_fatal());
        let e = check_caplen(u32::MAX, 7).unwrap_err();
        assert!(e.is_fatal());
        assert_eq!(e.offset(), 7);
    }
}
