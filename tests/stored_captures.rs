//! Every stored real capture (the repository's `captures/`, the same files as
//! shared/captures): frame and UDP datagram counts as tshark gives them.

use std::path::PathBuf;

use quakecap::capture::CaptureReader;
use quakecap::net::NetDecoder;

/// (file, frames, UDP datagrams): `tshark -r FILE | wc -l` and `tshark -r FILE -Y udp | wc -l`
/// (tshark 4.0.17), run once by hand. No file has IP fragments
/// (`-Y 'ip.flags.mf==1 || ip.frag_offset>0'` lists none).
const COUNTS: [(&str, u64, u64); 10] = [
    ("q3-basic/capture.pcapng", 1893, 1893),
    ("q3-download/capture.pcapng", 2332, 2332),
    ("q3-impaired/capture.pcapng", 2837, 2837),
    ("q3-impaired/server-side.pcapng", 2793, 2793),
    ("q3-mapchange/capture.pcapng", 4131, 4131),
    ("q3-proto71/capture.pcapng", 2005, 2005),
    ("q3-two-clients/capture.pcapng", 4410, 4410),
    ("qw-basic/capture.pcapng", 3855, 3855),
    ("qw-mapchange-reconnect/capture.pcapng", 8352, 8352),
    ("qw-noext/capture.pcapng", 4588, 4588),
];

#[test]
fn stored_captures_match_tshark() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("captures");
    for (file, frames, udp) in COUNTS {
        let path = dir.join(file);
        let mut r = CaptureReader::open(&path).unwrap();
        let mut net = NetDecoder::new();
        let mut n = 0;
        while let Some(f) = r.next_frame().unwrap() {
            n += 1;
            assert_eq!(f.index, n);
            net.decode(&f).unwrap();
        }
        let s = net.stats();
        assert_eq!((n, s.udp, s.errors), (frames, udp, 0), "{file}");
    }
}
