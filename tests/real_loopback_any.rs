//! Real `-i any` captures (tcpdump: pcap + SLL2, dumpcap: pcapng + SLL) of UDP traffic on a
//! loopback with MTU 1280, IPv4 and IPv6 fragments included: see
//! captures/loopback-any/README.md.

use std::net::SocketAddr;
use std::path::PathBuf;

use quakecap::capture::{CaptureFormat, CaptureReader, LinkType};
use quakecap::net::NetDecoder;

/// (frame that completes it, destination, payload length, payload tag) for each datagram;
/// frame numbers and the count (11) as `tshark -r FILE -Y udp` lists them.
const EXPECTED: [(u64, &str, usize, usize); 11] = [
    (1, "127.0.0.1:27960", 0, 0),
    (2, "127.0.0.1:27960", 1, 1),
    (3, "127.0.0.1:27960", 100, 2),
    (4, "127.0.0.1:27960", 1252, 3),
    (6, "127.0.0.1:27960", 1253, 4),
    (8, "127.0.0.1:27960", 2000, 5),
    (11, "127.0.0.1:27960", 3500, 6),
    (12, "[::1]:27960", 10, 100),
    (13, "[::1]:27960", 1232, 101),
    (15, "[::1]:27960", 1233, 102),
    (18, "[::1]:27960", 3000, 103),
];

fn check(file: &str, link: LinkType, format: CaptureFormat) -> Vec<i64> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("captures/loopback-any")
        .join(file);
    let mut r = CaptureReader::open(&path).unwrap();
    assert_eq!(r.format(), format);
    let mut net = NetDecoder::new();
    let mut got = Vec::new();
    let mut times = Vec::new();
    while let Some(f) = r.next_frame().unwrap() {
        assert_eq!(f.link, link);
        if let Some(d) = net.decode(&f).unwrap() {
            let dst: SocketAddr = d.dst;
            assert_eq!(d.src.port(), 27961);
            got.push((d.frame, dst, d.payload.to_vec()));
            times.push(d.ts_ns);
        }
    }
    assert_eq!(got.len(), EXPECTED.len());
    for ((frame, dst, payload), (ef, edst, len, tag)) in got.iter().zip(EXPECTED) {
        assert_eq!(*frame, ef);
        assert_eq!(*dst, edst.parse::<SocketAddr>().unwrap());
        let want: Vec<u8> = (0..len).map(|i| ((tag + i) % 251) as u8).collect();
        assert_eq!(payload, &want, "frame {frame}");
    }
    // fragments: IPv4 2 + 2 + 3, IPv6 2 + 3 (frames in tshark marked "Fragmented" + the
    // frames completing them)
    let s = net.stats();
    assert_eq!(
        (s.frames, s.udp, s.fragments, s.reassembled, s.errors),
        (18, 11, 7 + 5, 3 + 2, 0)
    );
    times
}

#[test]
fn tcpdump_any_sll2_pcap_and_dumpcap_any_sll_pcapng() {
    let a = check(
        "tcpdump-any.pcap",
        LinkType::LINUX_SLL2,
        CaptureFormat::Pcap {
            nanos: false,
            big_endian: false,
        },
    );
    let b = check(
        "dumpcap-any.pcapng",
        LinkType::LINUX_SLL,
        CaptureFormat::PcapNg,
    );
    // two captures of the same packets: same times to within a millisecond
    for (x, y) in a.iter().zip(&b) {
        assert!((x - y).abs() < 1_000_000, "{x} vs {y}");
    }
}
