//! Robustness: no input, random or a damaged real capture, makes the capture or network
//! layer panic or loop forever.

mod common;

use std::io::Cursor;

use proptest::prelude::*;
use quakecap::capture::{CaptureReader, Frame, LinkType};
use quakecap::net::NetDecoder;

const LINKS: [LinkType; 9] = [
    LinkType::NULL,
    LinkType::ETHERNET,
    LinkType::RAW,
    LinkType::LOOP,
    LinkType::LINUX_SLL,
    LinkType::IPV4,
    LinkType::IPV6,
    LinkType::LINUX_SLL2,
    LinkType(147),
];

/// Read everything, decoding every frame as its own link type and as every other one.
/// Returns the number of frames; bounded so a reader that stops making progress fails.
fn drain(bytes: &[u8]) -> usize {
    let Ok(mut r) = CaptureReader::new(Cursor::new(bytes)) else {
        return 0;
    };
    let mut net = NetDecoder::new();
    let mut frames = 0;
    for _ in 0..100_000 {
        match r.next_frame() {
            Ok(Some(f)) => {
                frames += 1;
                let _ = net.decode(&f);
                for link in LINKS {
                    let g = Frame { link, ..f };
                    let _ = net.decode(&g);
                }
            }
            Ok(None) => return frames,
            Err(_) => {}
        }
    }
    panic!("reader did not finish");
}

/// The first 150 records of q3-basic as a small pcapng, and as a classic pcap.
fn small_captures() -> Vec<Vec<u8>> {
    let recs = common::records(&common::original_bytes());
    let outs: Vec<common::Out> = recs
        .iter()
        .take(150)
        .map(|r| (r.link, r.ts_ns, r.data.clone()))
        .collect();
    vec![
        common::write_pcapng(&outs, quakecap::capture::ByteOrder::Little, 9),
        common::write_pcap(
            &outs,
            quakecap::capture::TsPrecision::Nano,
            quakecap::capture::ByteOrder::Big,
        ),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_after_a_magic(magic in 0usize..5, body in proptest::collection::vec(any::<u8>(), 0..3000)) {
        let prefixes: [&[u8]; 5] = [
            &[],
            &[0xd4, 0xc3, 0xb2, 0xa1],
            &[0xa1, 0xb2, 0x3c, 0x4d],
            &[0x0a, 0x0d, 0x0d, 0x0a, 0x1c, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0],
            &[0x0a, 0x0d, 0x0d, 0x0a, 0, 0, 0, 0x1c, 0x1a, 0x2b, 0x3c, 0x4d, 0, 1, 0, 0],
        ];
        let mut f = prefixes[magic].to_vec();
        f.extend_from_slice(&body);
        drain(&f);
    }

    #[test]
    fn damaged_real_capture(which in 0usize..2, edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..20), cut in any::<prop::sample::Index>()) {
        let caps = small_captures();
        let mut f = caps[which].clone();
        for (i, b) in edits {
            let n = f.len();
            f[i.index(n)] = b;
        }
        let n = f.len();
        f.truncate(cut.index(n + 1).max(n / 2));
        drain(&f);
    }

    #[test]
    fn random_frames_every_link(data in proptest::collection::vec(any::<u8>(), 0..200)) {
        let mut net = NetDecoder::new();
        for link in LINKS {
            let f = Frame { index: 1, ts_ns: 0, link, data: &data, orig_len: data.len() as u32, file_offset: 0 };
            let _ = net.decode(&f);
        }
    }
}

#[test]
fn every_prefix_of_a_small_capture() {
    for cap in small_captures() {
        let cap = &cap[..cap.len().min(4000)];
        for cut in 0..cap.len() {
            drain(&cap[..cut]);
        }
    }
}
