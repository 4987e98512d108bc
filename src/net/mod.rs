//! Link, IP and UDP: turns a [`Frame`] into a UDP [`Datagram`].
//! Ethernet (802.1Q / QinQ), Linux SLL and SLL2, BSD NULL and LOOP, raw IPv4/IPv6;
//! IPv4 fragments are reassembled; IPv6 (extension headers, Fragment header too).
//!
//! Header parsing uses `etherparse`'s zero-copy slices (Ethernet, VLAN, IPv4, IPv6 and its
//! extension headers, UDP); the Linux cooked and BSD loopback headers are stripped here.
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use etherparse::UdpSlice;

use crate::capture::{Frame, LinkType};

mod defrag;
mod ip;
mod link;

use defrag::{Defragmenter, FragKey, Fragment, Outcome};
pub use defrag::{EXPIRE_NS as FRAGMENT_EXPIRE_NS, MAX_PENDING as MAX_FRAGMENTED_PENDING};
use ip::IpPacket;
use link::L3;

/// One UDP datagram, whole (reassembled when it came in IPv4 fragments).
#[derive(Debug, Clone, Copy)]
pub struct Datagram<'a> {
    /// Frame number of the packet that completed the datagram.
    pub frame: u64,
    /// Capture time of that frame, in ns since the Unix epoch.
    pub ts_ns: i64,
    /// Source IP address and UDP port.
    pub src: SocketAddr,
    /// Destination IP address and UDP port.
    pub dst: SocketAddr,
    /// The UDP payload (bounded by the UDP length field; the 8-byte UDP header excluded).
    pub payload: &'a [u8],
}

/// Why a frame could not be turned into a datagram. The caller counts it and goes on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NetError {
    /// No decoder for this link type.
    #[error("unsupported link type {0}")]
    UnsupportedLink(LinkType),
    /// A header or payload is cut short (snaplen, or a length field larger than the packet).
    #[error("{layer} needs {needed} bytes, only {have} present")]
    Truncated {
        /// Frame number (1-based, as [`Frame::index`]).
        frame: u64,
        /// The header or payload cut short: `"IPv4"`, `"UDP"`, `"Linux SLL header"`, ...
        layer: &'static str,
        /// Bytes that layer needs.
        needed: usize,
        /// Bytes present.
        have: usize,
    },
    /// A header with impossible content.
    #[error("{message}")]
    Malformed {
        /// Frame number (1-based, as [`Frame::index`]).
        frame: u64,
        /// What is wrong; an IP header's message starts with its name (`IPv4 header: ...`).
        message: String,
    },
    /// Inconsistent fragments (overlap, two ends, over 64 KiB): the datagram was dropped.
    #[error("bad IP fragment: {message}")]
    Fragment {
        /// Frame number of the fragment that showed the inconsistency.
        frame: u64,
        /// What is inconsistent.
        message: String,
    },
}

impl NetError {
    /// The frame the error is about (the text leaves it to the position, said once).
    pub fn frame(&self) -> Option<u64> {
        match self {
            NetError::UnsupportedLink(_) => None,
            NetError::Truncated { frame, .. }
            | NetError::Malformed { frame, .. }
            | NetError::Fragment { frame, .. } => Some(*frame),
        }
    }
}

/// Counters kept by [`NetDecoder`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct NetStats {
    /// Frames given to [`NetDecoder::decode`].
    pub frames: u64,
    /// Whole UDP datagrams returned (reassembled ones included).
    pub udp: u64,
    /// Frames that were not UDP (ARP, TCP, ICMP, non-IP...).
    pub non_udp: u64,
    /// IP fragments of UDP datagrams seen.
    pub fragments: u64,
    /// Datagrams rebuilt from fragments.
    pub reassembled: u64,
    /// Datagrams given up unfinished (expired after 30 s or evicted by the 1024 limit).
    pub fragments_dropped: u64,
    /// Datagrams still waiting for fragments (at the end of the input: never completed).
    pub fragments_pending: u64,
    /// Frames that returned an error.
    pub errors: u64,
}

/// Turns frames into UDP datagrams, reassembling IP fragments across calls.
#[derive(Debug, Default)]
pub struct NetDecoder {
    defrag: Defragmenter,
    stats: NetStats,
}

impl NetDecoder {
    /// A decoder with no fragment held and every counter at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decode one frame. `Ok(Some)`: a whole UDP datagram (payload borrowed from the frame,
    /// or from this decoder when reassembled); `Ok(None)`: not UDP, or a fragment held for
    /// reassembly; `Err`: malformed or unsupported (counted in [`NetStats::errors`]).
    #[inline]
    pub fn decode<'a>(&'a mut self, frame: &Frame<'a>) -> Result<Option<Datagram<'a>>, NetError> {
        self.stats.frames += 1;
        if let Some(d) = ethernet_udp4(frame) {
            self.stats.udp += 1;
            return Ok(Some(d));
        }
        let r = decode_frame(&mut self.stats, &mut self.defrag, frame);
        if r.is_err() {
            self.stats.errors += 1;
        }
        r
    }

    /// The counters so far, with the fragment reassembly's dropped and pending datagrams.
    pub fn stats(&self) -> NetStats {
        NetStats {
            fragments_dropped: self.defrag.dropped,
            fragments_pending: self.defrag.pending() as u64,
            ..self.stats
        }
    }
}

/// The common frame, Ethernet II + IPv4 + UDP, not fragmented, read directly: the datagram
/// [`decode_frame`] gives for it, or None for anything else (VLAN tags, fragments, other
/// protocols, every error), which then takes the general path. Same checks as `etherparse`:
/// IPv4 version and header length, total length within the frame (padding cut), the UDP
/// length field bounding the payload (0: the rest of the IP payload).
#[inline]
fn ethernet_udp4<'a>(frame: &Frame<'a>) -> Option<Datagram<'a>> {
    const UDP_HEADER: usize = 8;
    if frame.link != LinkType::ETHERNET || frame.data.get(12..14)? != [0x08, 0x00] {
        return None;
    }
    let ip = frame.data.get(14..)?;
    let (&vihl, &[_, _, t0, t1, _, _, f0, f1, _, proto]) = (ip.first()?, ip.get(..10)?) else {
        return None;
    };
    let header = usize::from(vihl & 0xf) * 4;
    let total = usize::from(u16::from_be_bytes([t0, t1]));
    // Version 4 with a header of 20 bytes or more.
    if vihl >> 4 != 4 || header < 20 {
        return None;
    }
    // The MF flag or an offset: a fragment, for the reassembly.
    if u16::from_be_bytes([f0, f1]) & 0x3fff != 0 || proto != ip::UDP {
        return None;
    }
    // Total length: at least the header (else an error), at most the frame (padding cut).
    let l4 = ip.get(header..total)?;
    let udp_len = usize::from(u16::from_be_bytes([*l4.get(4)?, *l4.get(5)?]));
    let udp = match udp_len {
        0 => l4,
        n if n >= UDP_HEADER => l4.get(..n)?,
        _ => return None,
    };
    let addr = |at: usize| -> Option<IpAddr> {
        let b: [u8; 4] = ip.get(at..at + 4)?.try_into().ok()?;
        Some(IpAddr::V4(Ipv4Addr::from(b)))
    };
    let port = |at: usize| Some(u16::from_be_bytes([*udp.get(at)?, *udp.get(at + 1)?]));
    Some(Datagram {
        frame: frame.index,
        ts_ns: frame.ts_ns,
        src: SocketAddr::new(addr(12)?, port(0)?),
        dst: SocketAddr::new(addr(16)?, port(2)?),
        payload: udp.get(UDP_HEADER..)?,
    })
}

/// The datagram of a frame's bytes when they are a whole Ethernet/IPv4/UDP packet (the
/// common case `ethernet_udp4` takes), else None; without a decoder, so nothing is
/// counted or held: for hints about frames not read yet (the pipeline's prefetch).
pub fn peek_udp4(link: LinkType, data: &[u8]) -> Option<Datagram<'_>> {
    ethernet_udp4(&Frame {
        index: 0,
        ts_ns: 0,
        link,
        data,
        orig_len: 0,
        file_offset: 0,
    })
}

fn decode_frame<'a>(
    stats: &mut NetStats,
    defrag: &'a mut Defragmenter,
    frame: &Frame<'a>,
) -> Result<Option<Datagram<'a>>, NetError> {
    let n = frame.index;
    let packet = match link::network_layer(frame.link, frame.data, n)? {
        L3::Ipv4(b) => ip::ipv4(b, n)?,
        L3::Ipv6(b) => ip::ipv6(b, n)?,
        L3::Other => {
            stats.non_udp += 1;
            return Ok(None);
        }
    };
    if packet.proto != ip::UDP {
        stats.non_udp += 1;
        return Ok(None);
    }
    let Some(info) = packet.frag else {
        return udp(stats, &packet, packet.payload, frame).map(Some);
    };
    stats.fragments += 1;
    let key = FragKey {
        src: packet.src,
        dst: packet.dst,
        proto: packet.proto,
        id: info.id,
    };
    let fragment = Fragment {
        offset: info.offset,
        more: info.more,
        data: packet.payload,
    };
    match defrag.push(key, frame.ts_ns, fragment) {
        Ok(Outcome::Complete) => {
            stats.reassembled += 1;
            udp(stats, &packet, defrag.completed(), frame).map(Some)
        }
        Ok(Outcome::Held | Outcome::Duplicate) => Ok(None),
        Err(message) => Err(NetError::Fragment { frame: n, message }),
    }
}

/// The UDP datagram in `l4` (an IP payload, possibly reassembled). The UDP length field
/// bounds the payload; a datagram longer than what was captured is an error.
fn udp<'a>(
    stats: &mut NetStats,
    packet: &IpPacket<'_>,
    l4: &'a [u8],
    frame: &Frame<'_>,
) -> Result<Datagram<'a>, NetError> {
    let u = UdpSlice::from_slice(l4).map_err(|e| NetError::Truncated {
        frame: frame.index,
        layer: "UDP",
        needed: e.required_len,
        have: e.len,
    })?;
    stats.udp += 1;
    Ok(Datagram {
        frame: frame.index,
        ts_ns: frame.ts_ns,
        src: SocketAddr::new(packet.src, u.source_port()),
        dst: SocketAddr::new(packet.dst, u.destination_port()),
        payload: u.payload(),
    })
}

// As the crate's counted [`Error`](crate::error::Error): a kind and the position this layer knows.
impl From<&crate::net::NetError> for crate::error::Error {
    fn from(e: &crate::net::NetError) -> Self {
        use crate::error::{Error, ErrorKind};
        use crate::net::NetError as N;
        let kind = match e {
            N::UnsupportedLink(_) => ErrorKind::UnsupportedLink,
            N::Truncated { .. } => ErrorKind::Truncated,
            N::Malformed { message, .. } if is_ip_layer(message) => ErrorKind::Ip,
            N::Malformed { .. } => ErrorKind::MalformedLink,
            N::Fragment { .. } => ErrorKind::Fragment,
        };
        let err = Error::new(kind, e.to_string());
        match e.frame() {
            Some(f) => err.frame(f),
            None => err,
        }
    }
}

/// The IP layer's messages name their header first (see `net/ip.rs`).
fn is_ip_layer(message: &str) -> bool {
    ["IPv4", "IPv6", "UDP", "IP "]
        .iter()
        .any(|p| message.starts_with(p))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    // captures/q3-basic/capture.pcapng frame 1: Ethernet (zero MACs), IPv4
    // 127.0.0.1:27961 -> 127.0.0.1:27960, Q3 "getchallenge" (81 bytes).
    pub(crate) const FRAME1: &[u8] = &[
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x08, 0x00, 0x45,
        0x00, 0x00, 0x43, 0x1b, 0xc6, 0x40, 0x00, 0x40, 0x11, 0x20, 0xe2, 0x7f, 0x00, 0x00, 0x01,
        0x7f, 0x00, 0x00, 0x01, 0x6d, 0x39, 0x6d, 0x38, 0x00, 0x2f, 0xfe, 0x42, 0xff, 0xff, 0xff,
        0xff, 0x67, 0x65, 0x74, 0x63, 0x68, 0x61, 0x6c, 0x6c, 0x65, 0x6e, 0x67, 0x65, 0x20, 0x2d,
        0x32, 0x33, 0x31, 0x35, 0x38, 0x36, 0x35, 0x39, 0x32, 0x20, 0x51, 0x75, 0x61, 0x6b, 0x65,
        0x33, 0x41, 0x72, 0x65, 0x6e, 0x61,
    ];

    fn frame(data: &[u8], link: LinkType) -> Frame<'_> {
        Frame {
            index: 1,
            ts_ns: 5,
            link,
            data,
            orig_len: data.len() as u32,
            file_offset: 0,
        }
    }

    #[test]
    fn frame1_is_the_getchallenge() {
        let mut d = NetDecoder::new();
        let f = frame(FRAME1, LinkType::ETHERNET);
        let dg = d.decode(&f).unwrap().unwrap();
        assert_eq!(dg.src, "127.0.0.1:27961".parse().unwrap());
        assert_eq!(dg.dst, "127.0.0.1:27960".parse().unwrap());
        assert_eq!(dg.payload, &FRAME1[42..]);
        assert!(dg.payload.starts_with(b"\xff\xff\xff\xffgetchallenge"));
        assert_eq!((dg.frame, dg.ts_ns), (1, 5));
        assert_eq!(d.stats().udp, 1);
    }

    #[test]
    fn padding_cut_and_snaplen_error() {
        let mut d = NetDecoder::new();
        let mut padded = FRAME1.to_vec();
        padded.extend_from_slice(&[0xee; 10]);
        let f = frame(&padded, LinkType::ETHERNET);
        assert_eq!(d.decode(&f).unwrap().unwrap().payload, &FRAME1[42..]);
        let cut = frame(&FRAME1[..60], LinkType::ETHERNET);
        assert!(matches!(d.decode(&cut), Err(NetError::Truncated { .. })));
        // UDP length field larger than the IP payload
        let mut bad = FRAME1.to_vec();
        bad[39] = 0x40;
        assert!(d.decode(&frame(&bad, LinkType::ETHERNET)).is_err());
        assert_eq!(d.stats().errors, 2);
        assert_eq!(d.stats().frames, 3);
    }

    #[test]
    fn non_udp_and_unsupported() {
        let mut d = NetDecoder::new();
        let mut tcp = FRAME1.to_vec();
        tcp[23] = 6;
        assert!(d
            .decode(&frame(&tcp, LinkType::ETHERNET))
            .unwrap()
            .is_none());
        assert_eq!(d.stats().non_udp, 1);
        assert_eq!(
            d.decode(&frame(FRAME1, LinkType(147))).unwrap_err(),
            NetError::UnsupportedLink(LinkType(147))
        );
    }

    /// Split frame 1's IP packet into fragments of `chunk` payload bytes.
    fn fragments(chunk: usize) -> Vec<Vec<u8>> {
        let ip = &FRAME1[14..];
        let payload = &ip[20..];
        payload
            .chunks(chunk)
            .enumerate()
            .map(|(i, c)| {
                let mut h = ip[..20].to_vec();
                let off = (i * chunk / 8) as u16;
                let more = (i + 1) * chunk < payload.len();
                let fl = off | if more { 0x2000 } else { 0 };
                h[2..4].copy_from_slice(&((20 + c.len()) as u16).to_be_bytes());
                h[6..8].copy_from_slice(&fl.to_be_bytes());
                h.extend_from_slice(c);
                h
            })
            .collect()
    }

    #[test]
    fn reassembles_reordered_ipv4_fragments() {
        let mut d = NetDecoder::new();
        let mut frags = fragments(16);
        assert_eq!(frags.len(), 3);
        frags.swap(0, 2);
        let mut got = None;
        for (i, f) in frags.iter().enumerate() {
            let mut fr = frame(f, LinkType::IPV4);
            fr.index = i as u64 + 1;
            if let Some(dg) = d.decode(&fr).unwrap() {
                got = Some((dg.frame, dg.payload.to_vec()));
            }
        }
        assert_eq!(got, Some((3, FRAME1[42..].to_vec())));
        let s = d.stats();
        assert_eq!((s.fragments, s.reassembled, s.udp), (3, 1, 1));
    }
    /// IPv6 packet ::1 -> ::1 whose payload after the fixed header is `rest`.
    fn ipv6(next: u8, rest: &[u8]) -> Vec<u8> {
        let mut v = vec![0x60, 0, 0, 0];
        v.extend_from_slice(&(rest.len() as u16).to_be_bytes());
        v.extend_from_slice(&[next, 64]);
        for _ in 0..2 {
            v.extend_from_slice(&[0; 15]);
            v.push(1);
        }
        v.extend_from_slice(rest);
        v
    }

    #[test]
    fn ipv6_extension_headers_then_udp() {
        // frame 1's UDP header + payload behind hop-by-hop (0) and destination options (60)
        let udp = &FRAME1[34..];
        let mut rest = vec![60, 0, 1, 4, 0, 0, 0, 0]; // hop-by-hop: PadN
        rest.extend_from_slice(&[17, 0, 1, 4, 0, 0, 0, 0]); // destination options: PadN
        rest.extend_from_slice(udp);
        let p = ipv6(0, &rest);
        let mut d = NetDecoder::new();
        let dg = d.decode(&frame(&p, LinkType::IPV6)).unwrap().unwrap();
        assert_eq!(dg.src, "[::1]:27961".parse().unwrap());
        assert_eq!(dg.payload, &FRAME1[42..]);
    }

    #[test]
    fn ipv6_fragments_reordered() {
        let udp = &FRAME1[34..]; // 47 bytes: fragments of 24 and 23
        let frag = |off: usize, more: bool, data: &[u8]| {
            let mut rest = vec![17, 0];
            rest.extend_from_slice(&((off as u16) | u16::from(more)).to_be_bytes());
            rest.extend_from_slice(&0xdead_beefu32.to_be_bytes());
            rest.extend_from_slice(data);
            ipv6(44, &rest)
        };
        let second = frag(24, false, &udp[24..]);
        let first = frag(0, true, &udp[..24]);
        let mut d = NetDecoder::new();
        assert!(d.decode(&frame(&second, LinkType::IPV6)).unwrap().is_none());
        let dg = d.decode(&frame(&first, LinkType::IPV6)).unwrap().unwrap();
        assert_eq!(dg.payload, &FRAME1[42..]);
        assert_eq!(dg.dst, "[::1]:27960".parse().unwrap());
        assert_eq!(d.stats().reassembled, 1);
    }
    /// Frame 1 with some header bytes replaced: the fast path must agree with the general
    /// one wherever it answers, and answer for plain Ethernet/IPv4/UDP frames.
    fn mutate(edits: &[(usize, u8)], cut: usize) -> Vec<u8> {
        let mut f = FRAME1.to_vec();
        f.extend_from_slice(&[0xee; 6]);
        for &(at, v) in edits {
            if let Some(b) = f.get_mut(at % 48) {
                *b = v;
            }
        }
        f.truncate(cut);
        f
    }

    /// A header field value: frame 1's own (None) or one near the checks' boundaries.
    fn field(boundaries: Vec<u16>) -> impl proptest::strategy::Strategy<Value = Option<u16>> {
        proptest::option::of(proptest::prop_oneof![
            proptest::sample::select(boundaries),
            proptest::num::u16::ANY,
        ])
    }

    /// Edits setting the big-endian 16-bit fields at these frame offsets.
    fn field_edits(fields: &[(usize, Option<u16>)]) -> Vec<(usize, u8)> {
        let mut e = Vec::new();
        for &(at, v) in fields {
            if let Some(v) = v {
                e.push((at, (v >> 8) as u8));
                e.push((at + 1, v as u8));
            }
        }
        e
    }

    proptest::proptest! {
        #[test]
        fn fast_path_matches_the_general_path(
            // Ethernet type; IPv4 version/length + TOS; total length; flags/offset;
            // TTL + protocol; UDP length: each frame 1's own or a value near a boundary.
            eth in field(vec![0x0800, 0x8100, 0x86dd]),
            vihl in field(vec![0x4500, 0x4400, 0x4100, 0x4600, 0x4f00, 0x5500, 0x0500]),
            total in field(vec![0, 19, 20, 27, 28, 35, 36, 72, 73, 74]),
            frag in field(vec![0, 0x4000, 0x2000, 0x0001, 0x8000, 0x1fff, 0xe000]),
            proto in field(vec![0x4011, 0x4006, 0x4033, 0x4000]),
            udp_len in field(vec![0, 1, 7, 8, 9, 52, 53, 54]),
            cut in proptest::prop_oneof![proptest::strategy::Just(100usize), 0usize..100],
        ) {
            let edits = field_edits(&[(12, eth), (14, vihl), (16, total), (20, frag), (22, proto), (38, udp_len)]);
            let data = mutate(&edits, cut);
            let f = frame(&data, LinkType::ETHERNET);
            let mut stats = NetStats::default();
            let mut defrag = Defragmenter::default();
            let general = decode_frame(&mut stats, &mut defrag, &f);
            if let Some(fast) = ethernet_udp4(&f) {
                let g = general.expect("fast path answered for an erroneous frame");
                let g = g.expect("fast path answered for a non-datagram");
                proptest::prop_assert_eq!((g.frame, g.ts_ns, g.src, g.dst, g.payload), (fast.frame, fast.ts_ns, fast.src, fast.dst, fast.payload));
            } else if edits.is_empty() && cut >= FRAME1.len() + 6 {
                proptest::prop_assert!(false, "plain frame 1 must take the fast path");
            }
        }
    }

    #[test]
    fn fast_path_cases() {
        let fast = |edits: &[(usize, u8)]| {
            ethernet_udp4(&frame(&mutate(edits, 100), LinkType::ETHERNET)).map(|d| d.payload.len())
        };
        assert_eq!(fast(&[]), Some(FRAME1.len() - 42));
        assert_eq!(fast(&[(38, 0), (39, 0)]), Some(FRAME1.len() - 42)); // UDP length 0
        assert_eq!(fast(&[(39, 10)]), Some(2)); // UDP length 10 cuts the payload
                                                // A 16-byte header is an error even where the rest would parse (UDP length 0).
        assert_eq!(fast(&[(34, 0), (35, 0)]), Some(FRAME1.len() - 42));
        assert_eq!(fast(&[(14, 0x44), (34, 0), (35, 0)]), None);
        assert_eq!(fast(&[(14, 0x55)]), None); // version 5
        assert_eq!(fast(&[(20, 0x20)]), None); // more fragments
        assert_eq!(fast(&[(21, 1)]), None); // fragment offset
        assert_eq!(fast(&[(20, 0x40)]), Some(FRAME1.len() - 42)); // don't fragment: fine
        assert_eq!(fast(&[(12, 0x81)]), None); // VLAN tag
        assert_eq!(fast(&[(14, 0x46)]), None); // options: the UDP header moves, its length no longer fits
        assert!(ethernet_udp4(&frame(FRAME1, LinkType::RAW)).is_none());
    }
}
