//! IPv4 and IPv6 (with extension headers): addresses, upper protocol, fragment fields and
//! the payload cut to the length the IP header gives (Ethernet padding dropped).

use std::net::IpAddr;

use etherparse::{err, IpNumber, Ipv4Slice, Ipv6ExtensionSlice, Ipv6Slice};

use super::NetError;

/// Fragment fields of an IP packet that is part of a fragmented datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FragInfo {
    pub id: u32,
    /// Offset of this fragment's payload in the datagram, in bytes.
    pub offset: usize,
    pub more: bool,
}

/// One IP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IpPacket<'a> {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub proto: u8,
    pub frag: Option<FragInfo>,
    pub payload: &'a [u8],
}

fn len_error(frame: u64, layer: &'static str, e: &err::LenError) -> NetError {
    NetError::Truncated {
        frame,
        layer,
        needed: e.required_len,
        have: e.len,
    }
}

fn malformed(frame: u64, what: &str, e: impl std::fmt::Display) -> NetError {
    NetError::Malformed {
        frame,
        message: format!("{what}: {e}"),
    }
}

pub(crate) fn ipv4(data: &[u8], frame: u64) -> Result<IpPacket<'_>, NetError> {
    use err::ipv4::SliceError;
    let ip = Ipv4Slice::from_slice(data).map_err(|e| match e {
        SliceError::Len(l) => len_error(frame, "IPv4", &l),
        SliceError::Header(h) => malformed(frame, "IPv4 header", h),
        SliceError::Exts(x) => malformed(frame, "IPv4 authentication header", x),
    })?;
    let h = ip.header();
    let frag = ip.is_payload_fragmented().then(|| FragInfo {
        id: u32::from(h.identification()),
        offset: usize::from(h.fragments_offset().byte_offset()),
        more: h.more_fragments(),
    });
    Ok(IpPacket {
        src: IpAddr::V4(h.source_addr()),
        dst: IpAddr::V4(h.destination_addr()),
        proto: ip.payload_ip_number().0,
        frag,
        payload: ip.payload().payload,
    })
}

pub(crate) fn ipv6(data: &[u8], frame: u64) -> Result<IpPacket<'_>, NetError> {
    use err::ipv6::SliceError;
    let ip = Ipv6Slice::from_slice(data).map_err(|e| match e {
        SliceError::Len(l) => len_error(frame, "IPv6", &l),
        SliceError::Header(h) => malformed(frame, "IPv6 header", h),
        SliceError::Exts(x) => malformed(frame, "IPv6 extension header", x),
    })?;
    let h = ip.header();
    let payload = ip.payload();
    // The Fragment extension header carries what IPv4 keeps in its fixed header.
    let frag = if payload.fragmented {
        ip.extensions().clone().into_iter().find_map(|x| match x {
            Ipv6ExtensionSlice::Fragment(f) => Some(FragInfo {
                id: f.identification(),
                offset: usize::from(f.fragment_offset().byte_offset()),
                more: f.more_fragments(),
            }),
            _ => None,
        })
    } else {
        None
    };
    Ok(IpPacket {
        src: IpAddr::V6(h.source_addr()),
        dst: IpAddr::V6(h.destination_addr()),
        proto: payload.ip_number.0,
        frag,
        payload: payload.payload,
    })
}

/// The UDP protocol number.
pub(crate) const UDP: u8 = IpNumber::UDP.0;

#[cfg(test)]
mod tests {
    use super::*;

    use crate::net::tests::FRAME1;

    /// The IPv4 packet of frame 1 (after the 14-byte Ethernet header).
    fn frame1_ip() -> Vec<u8> {
        FRAME1[14..].to_vec()
    }

    #[test]
    fn ipv4_header_fields_and_truncation() {
        let mut p = frame1_ip();
        p.extend_from_slice(&[0xaa; 6]); // link padding beyond total length
        let ip = ipv4(&p, 1).unwrap();
        assert_eq!(ip.proto, UDP);
        assert_eq!(ip.src, IpAddr::from([127, 0, 0, 1]));
        assert_eq!(ip.payload.len(), 0x43 - 20);
        assert_eq!(ip.frag, None);
        // cut by the snaplen: an error, not a short payload
        assert!(matches!(ipv4(&p[..40], 1), Err(NetError::Truncated { .. })));
        assert!(ipv4(&p[..3], 1).is_err());
    }

    #[test]
    fn ipv4_fragment_fields() {
        let mut p = frame1_ip();
        p[6] = 0x20; // MF, offset 0x0003 (24 bytes); the checksum is not verified
        p[7] = 0x03;
        let ip = ipv4(&p, 1).unwrap();
        assert_eq!(
            ip.frag,
            Some(FragInfo {
                id: 0x1bc6,
                offset: 24,
                more: true
            })
        );
    }
}
