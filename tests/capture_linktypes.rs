//! End to end: the stored q3-basic capture, rewritten into every supported encoding and link
//! type, must give exactly the original UDP datagram stream.

mod common;

use std::io::Cursor;

use common::*;
use quakecap::capture::{
    ByteOrder, CaptureError, CaptureFormat, CaptureReader, LinkType, TsPrecision,
};

/// `tshark -r captures/q3-basic/capture.pcapng -Y udp | wc -l` (tshark 4.0.17) printed 1893;
/// the file has 1893 frames in all (`capinfos`), none fragmented.
const Q3_BASIC_UDP_DATAGRAMS: usize = 1893;

fn original() -> (Vec<Rec>, Vec<Dg>) {
    let bytes = original_bytes();
    (records(&bytes), datagrams(&bytes))
}

/// Times truncated to µs, for files written with µs resolution.
fn to_us(dgs: &[Dg]) -> Vec<Dg> {
    dgs.iter()
        .map(|d| Dg {
            ts_ns: d.ts_ns / 1000 * 1000,
            ..d.clone()
        })
        .collect()
}

fn assert_same(name: &str, got: &[Dg], want: &[Dg]) {
    assert_eq!(got.len(), want.len(), "{name}: datagram count");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g, w, "{name}: datagram {i} differs");
    }
}

#[test]
fn original_matches_tshark_count() {
    let (recs, dgs) = original();
    assert_eq!(recs.len(), 1893);
    assert_eq!(dgs.len(), Q3_BASIC_UDP_DATAGRAMS);
    let mut r = CaptureReader::open(&original_path()).unwrap();
    assert_eq!(r.format(), CaptureFormat::PcapNg);
    let first = r.next_frame().unwrap().unwrap();
    // capinfos: first packet time 2026-11-22 15:27:01.860853548 UTC
    assert_eq!(first.ts_ns, 1_795_361_221_860_853_548);
    assert_eq!(
        (first.index, first.link, first.data.len()),
        (1, LinkType::ETHERNET, 81)
    );
    while r.next_frame().unwrap().is_some() {}
    assert_eq!(r.bytes_read(), original_bytes().len() as u64);
}

#[test]
fn classic_pcap_us_ns_both_byte_orders() {
    let (recs, want) = original();
    let outs: Vec<Out> = recs
        .iter()
        .map(|r| (r.link, r.ts_ns, r.data.clone()))
        .collect();
    for order in [ByteOrder::Little, ByteOrder::Big] {
        let ns = write_pcap(&outs, TsPrecision::Nano, order);
        let r = CaptureReader::new(Cursor::new(&ns)).unwrap();
        let big_endian = order == ByteOrder::Big;
        assert_eq!(
            r.format(),
            CaptureFormat::Pcap {
                nanos: true,
                big_endian
            }
        );
        assert_same("pcap ns", &datagrams(&ns), &want);
        let us = write_pcap(&outs, TsPrecision::Micro, order);
        assert_same("pcap us", &datagrams(&us), &to_us(&want));
    }
}

#[test]
fn pcapng_us_tsresol_and_big_endian() {
    let (recs, want) = original();
    let outs: Vec<Out> = recs
        .iter()
        .map(|r| (r.link, r.ts_ns, r.data.clone()))
        .collect();
    assert_same(
        "pcapng us",
        &datagrams(&write_pcapng(&outs, ByteOrder::Little, 6)),
        &to_us(&want),
    );
    assert_same(
        "pcapng BE ns",
        &datagrams(&write_pcapng(&outs, ByteOrder::Big, 9)),
        &want,
    );
    // 2^-30 s units: times within 1 ns of the original
    let p2 = datagrams(&write_pcapng(&outs, ByteOrder::Little, 0x80 | 30));
    assert_eq!(p2.len(), want.len());
    for (g, w) in p2.iter().zip(&want) {
        assert!((g.ts_ns - w.ts_ns).abs() <= 1, "{} vs {}", g.ts_ns, w.ts_ns);
        assert_eq!(g.payload, w.payload);
    }
}

#[test]
fn two_sections_of_different_byte_orders() {
    let (recs, want) = original();
    let outs: Vec<Out> = recs
        .iter()
        .map(|r| (r.link, r.ts_ns, r.data.clone()))
        .collect();
    let (a, b) = outs.split_at(700);
    let mut file = write_pcapng(a, ByteOrder::Little, 9);
    // second section: big-endian, µs, SLL: every interface of the first section forgotten
    let b_sll: Vec<Out> = b
        .iter()
        .map(|(_, t, d)| (LinkType::LINUX_SLL, *t, sll(&d[14..])))
        .collect();
    file.extend_from_slice(&write_pcapng(&b_sll, ByteOrder::Big, 6));
    let mut expect = want[..700].to_vec();
    expect.extend(to_us(&want[700..]));
    assert_same("two sections", &datagrams(&file), &expect);
    // frame numbers run on across sections
    let mut r = CaptureReader::new(Cursor::new(&file)).unwrap();
    let mut last = 0;
    while let Some(f) = r.next_frame().unwrap() {
        last = f.index;
    }
    assert_eq!(last, 1893);
}

#[test]
fn every_link_type() {
    let (recs, want) = original();
    let cases: Vec<(&str, Vec<Out>)> = vec![
        (
            "802.1Q",
            relink(&recs, LinkType::ETHERNET, |ip| eth(0x0800, &[0x8100], ip)),
        ),
        (
            "QinQ",
            relink(&recs, LinkType::ETHERNET, |ip| {
                eth(0x0800, &[0x88a8, 0x8100], ip)
            }),
        ),
        ("SLL", relink(&recs, LinkType::LINUX_SLL, sll)),
        ("SLL2", relink(&recs, LinkType::LINUX_SLL2, sll2)),
        (
            "NULL LE",
            relink(&recs, LinkType::NULL, |ip| null(2u32.to_le_bytes(), ip)),
        ),
        (
            "NULL BE",
            relink(&recs, LinkType::NULL, |ip| null(2u32.to_be_bytes(), ip)),
        ),
        (
            "LOOP",
            relink(&recs, LinkType::LOOP, |ip| null(2u32.to_be_bytes(), ip)),
        ),
        ("RAW", relink(&recs, LinkType::RAW, |ip| ip.to_vec())),
        ("IPV4", relink(&recs, LinkType::IPV4, |ip| ip.to_vec())),
        ("IPV6", relink(&recs, LinkType::IPV6, to_ipv6)),
        ("RAW IPv6", relink(&recs, LinkType::RAW, to_ipv6)),
        (
            "Ethernet IPv6",
            relink(&recs, LinkType::ETHERNET, |ip| {
                eth(0x86dd, &[], &to_ipv6(ip))
            }),
        ),
        (
            "NULL IPv6",
            relink(&recs, LinkType::NULL, |ip| {
                null(30u32.to_le_bytes(), &to_ipv6(ip))
            }),
        ),
    ];
    for (name, outs) in cases {
        assert_same(
            name,
            &datagrams(&write_pcapng(&outs, ByteOrder::Little, 9)),
            &want,
        );
        let pcap = write_pcap(&outs, TsPrecision::Nano, ByteOrder::Little);
        assert_same(name, &datagrams(&pcap), &want);
    }
}

/// Every record split for a 576-byte MTU (same time for all fragments of a datagram).
fn fragmented(recs: &[Rec], reorder: bool) -> (Vec<Out>, usize) {
    let mut outs = Vec::new();
    let mut split = 0;
    for r in recs {
        let mut frags = fragment_ipv4(ipv4_of(r), 576);
        if frags.len() > 1 {
            split += 1;
            if reorder {
                frags.reverse();
                frags.swap(0, 1);
            }
        }
        outs.extend(
            frags
                .into_iter()
                .map(|f| (LinkType::ETHERNET, r.ts_ns, eth(0x0800, &[], &f))),
        );
    }
    (outs, split)
}

#[test]
fn ipv4_fragments_in_order_and_reordered() {
    let (recs, want) = original();
    for reorder in [false, true] {
        let (outs, split) = fragmented(&recs, reorder);
        // q3-basic has 2 datagrams over 576 bytes (`tshark -Y 'frame.len > 590'`), 3
        // fragments each
        assert_eq!(split, 2);
        assert_eq!(outs.len(), recs.len() + 4);
        assert_same(
            "fragmented",
            &datagrams(&write_pcapng(&outs, ByteOrder::Little, 9)),
            &want,
        );
    }
}

/// Read a capture cut short: the frames before the cut, then one `Truncated` error at the
/// record that was cut, then nothing.
fn read_cut(bytes: &[u8]) -> (usize, Option<CaptureError>) {
    let mut r = match CaptureReader::new(Cursor::new(bytes)) {
        Ok(r) => r,
        Err(e) => return (0, Some(e)),
    };
    let mut n = 0;
    loop {
        match r.next_frame() {
            Ok(Some(_)) => n += 1,
            Ok(None) => return (n, None),
            Err(e) => {
                assert!(e.is_fatal());
                assert!(
                    r.next_frame().unwrap().is_none(),
                    "a fatal error ends the stream"
                );
                return (n, Some(e));
            }
        }
    }
}

#[test]
fn truncated_files() {
    let bytes = original_bytes();
    let recs = records(&bytes);
    let outs: Vec<Out> = recs
        .iter()
        .map(|r| (r.link, r.ts_ns, r.data.clone()))
        .collect();
    let pcap = write_pcap(&outs, TsPrecision::Nano, ByteOrder::Little);
    let pcap_recs = records(&pcap);
    for (file, recs) in [(&bytes, &recs), (&pcap, &pcap_recs)] {
        for k in [1usize, 2, 100, 1000, 1891] {
            let start = recs[k].file_offset as usize;
            // inside the record header, inside its data, at its last byte
            for cut in [
                start + 3,
                start + 30,
                recs.get(k + 1)
                    .map_or(file.len(), |r| r.file_offset as usize)
                    - 1,
            ] {
                let (n, err) = read_cut(&file[..cut]);
                assert_eq!(n, k, "cut at {cut}");
                match err {
                    Some(CaptureError::Truncated { offset }) => assert_eq!(offset, start as u64),
                    other => panic!("cut at {cut}: {other:?}"),
                }
            }
            // a cut exactly between records is a clean end
            let (n, err) = read_cut(&file[..start]);
            assert_eq!(n, k);
            assert!(err.is_none(), "{err:?}");
        }
        // the file header itself cut
        for cut in [5usize, 10, 23] {
            let (n, err) = read_cut(&file[..cut]);
            assert_eq!(n, 0);
            assert!(
                matches!(err, Some(CaptureError::Truncated { offset: 0 })),
                "cut {cut}: {err:?}"
            );
        }
    }
}

#[test]
fn not_a_capture() {
    for junk in [
        &b""[..],
        b"ab",
        b"<!DOCTYPE html><html>",
        b"GIF89a\x01\x00\x01\x00",
    ] {
        match CaptureReader::new(Cursor::new(junk)) {
            Err(e @ CaptureError::NotACapture { .. }) => {
                assert!(e.is_fatal());
                assert_eq!(e.offset(), 0);
                if junk.len() > 4 {
                    let hex = format!("{:02x} {:02x}", junk[0], junk[1]);
                    assert!(e.to_string().contains(&hex), "{e}");
                }
            }
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("accepted junk"),
        }
    }
}
