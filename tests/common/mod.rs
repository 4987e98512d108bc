//! Test helpers: read the stored q3-basic capture and rewrite it faithfully into other
//! link types, encodings and fragmentations (payload and times kept).
#![allow(dead_code)]

use std::io::Cursor;
use std::path::PathBuf;

use quakecap::capture::{
    ByteOrder, CaptureReader, LinkType, PcapNgWriter, PcapWriter, TsPrecision,
};
use quakecap::net::NetDecoder;

/// One record of the original capture.
#[derive(Debug, Clone)]
pub struct Rec {
    pub ts_ns: i64,
    pub link: LinkType,
    pub data: Vec<u8>,
    pub file_offset: u64,
}

/// What a test compares of a datagram: ports, payload, time (addresses change with IPv6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dg {
    pub src_port: u16,
    pub dst_port: u16,
    pub ts_ns: i64,
    pub payload: Vec<u8>,
}

pub fn original_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("captures/q3-basic/capture.pcapng")
}

pub fn original_bytes() -> Vec<u8> {
    std::fs::read(original_path()).expect("captures/q3-basic/capture.pcapng is in the repo")
}

/// Every record of a capture held in memory; panics on any capture error.
pub fn records(bytes: &[u8]) -> Vec<Rec> {
    let mut r = CaptureReader::new(Cursor::new(bytes)).expect("a capture");
    let mut out = Vec::new();
    while let Some(f) = r.next_frame().expect("no capture error") {
        out.push(Rec {
            ts_ns: f.ts_ns,
            link: f.link,
            data: f.data.to_vec(),
            file_offset: f.file_offset,
        });
    }
    out
}

/// The UDP datagram stream of a capture; panics on any capture or network error.
pub fn datagrams(bytes: &[u8]) -> Vec<Dg> {
    let mut r = CaptureReader::new(Cursor::new(bytes)).expect("a capture");
    let mut net = NetDecoder::new();
    let mut out = Vec::new();
    while let Some(f) = r.next_frame().expect("no capture error") {
        if let Some(d) = net.decode(&f).expect("no network error") {
            out.push(Dg {
                src_port: d.src.port(),
                dst_port: d.dst.port(),
                ts_ns: d.ts_ns,
                payload: d.payload.to_vec(),
            });
        }
    }
    out
}

/// The IPv4 packet of an original (Ethernet) record.
pub fn ipv4_of(rec: &Rec) -> &[u8] {
    assert_eq!(rec.link, LinkType::ETHERNET);
    assert_eq!(&rec.data[12..14], &[0x08, 0x00]);
    &rec.data[14..]
}

/// A converted record: new link type and bytes, same time.
pub type Out = (LinkType, i64, Vec<u8>);

pub fn eth(ether_type: u16, tags: &[u16], l3: &[u8]) -> Vec<u8> {
    let mut v = vec![0u8; 12];
    for t in tags {
        v.extend_from_slice(&t.to_be_bytes());
        v.extend_from_slice(&[0x00, 0x07]); // PCP 0, VID 7
    }
    v.extend_from_slice(&ether_type.to_be_bytes());
    v.extend_from_slice(l3);
    v
}

pub fn sll(l3: &[u8]) -> Vec<u8> {
    let mut v = vec![0, 0]; // packet to us
    v.extend_from_slice(&772u16.to_be_bytes()); // ARPHRD_LOOPBACK
    v.extend_from_slice(&6u16.to_be_bytes());
    v.extend_from_slice(&[0u8; 8]);
    v.extend_from_slice(&0x0800u16.to_be_bytes());
    v.extend_from_slice(l3);
    v
}

pub fn sll2(l3: &[u8]) -> Vec<u8> {
    let mut v = 0x0800u16.to_be_bytes().to_vec();
    v.extend_from_slice(&[0, 0]);
    v.extend_from_slice(&1u32.to_be_bytes()); // ifindex
    v.extend_from_slice(&772u16.to_be_bytes());
    v.extend_from_slice(&[0, 6]); // packet type, address length
    v.extend_from_slice(&[0u8; 8]);
    v.extend_from_slice(l3);
    v
}

pub fn null(family: [u8; 4], l3: &[u8]) -> Vec<u8> {
    let mut v = family.to_vec();
    v.extend_from_slice(l3);
    v
}

/// IPv4 -> IPv6: a.b.c.d becomes fd00::a.b.c.d; UDP header and payload kept as they are
/// (the UDP checksum is not recomputed: nothing checks it).
pub fn to_ipv6(ip4: &[u8]) -> Vec<u8> {
    let ihl = usize::from(ip4[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([ip4[2], ip4[3]]));
    let l4 = &ip4[ihl..total];
    let mut v = vec![0x60, 0, 0, 0];
    v.extend_from_slice(&(l4.len() as u16).to_be_bytes());
    v.extend_from_slice(&[17, 64]);
    for addr in [&ip4[12..16], &ip4[16..20]] {
        v.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        v.extend_from_slice(addr);
    }
    v.extend_from_slice(l4);
    v
}

/// Split an IPv4 packet into fragments for an MTU (payload chunks a multiple of 8).
pub fn fragment_ipv4(ip4: &[u8], mtu: usize) -> Vec<Vec<u8>> {
    let ihl = usize::from(ip4[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([ip4[2], ip4[3]]));
    if total <= mtu {
        return vec![ip4[..total].to_vec()];
    }
    let chunk = (mtu - ihl) / 8 * 8;
    let payload = &ip4[ihl..total];
    let n = payload.len().div_ceil(chunk);
    (0..n)
        .map(|i| {
            let part = &payload[i * chunk..((i + 1) * chunk).min(payload.len())];
            let mut h = ip4[..ihl].to_vec();
            h[2..4].copy_from_slice(&((ihl + part.len()) as u16).to_be_bytes());
            let more = if i + 1 < n { 0x2000 } else { 0 };
            h[6..8].copy_from_slice(&((i * chunk / 8) as u16 | more).to_be_bytes());
            h.extend_from_slice(part);
            h
        })
        .collect()
}

pub fn write_pcap(recs: &[Out], precision: TsPrecision, order: ByteOrder) -> Vec<u8> {
    let link = recs.first().map_or(LinkType::ETHERNET, |r| r.0);
    let mut w = PcapWriter::with_byte_order(Vec::new(), link, precision, order).unwrap();
    for (l, ts, data) in recs {
        assert_eq!(*l, link);
        w.write_packet(*ts, data, data.len() as u32).unwrap();
    }
    w.finish().unwrap()
}

pub fn write_pcapng(recs: &[Out], order: ByteOrder, tsresol: u8) -> Vec<u8> {
    let mut w = PcapNgWriter::with_options(Vec::new(), order, tsresol).unwrap();
    for (l, ts, data) in recs {
        w.write_packet(*l, *ts, data, data.len() as u32).unwrap();
    }
    w.finish().unwrap()
}

/// Rewrite every record's link header with `f` (given the IPv4 packet).
pub fn relink(recs: &[Rec], link: LinkType, f: impl Fn(&[u8]) -> Vec<u8>) -> Vec<Out> {
    recs.iter()
        .map(|r| (link, r.ts_ns, f(ipv4_of(r))))
        .collect()
}
