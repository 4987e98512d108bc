//! Issue 5: every length, index and count an attacker controls is bounded, and breaking a
//! bound is a reported error naming where (bit / frame / flow), never a panic or unbounded
//! memory. One test per bound; the capture-layer bounds (huge pcapng blocks, oversized caplen)
//! also have unit tests beside the reader.
use std::io::Cursor;
use std::net::{Ipv4Addr, SocketAddr};

use quakecap::capture::{
    ByteOrder, CaptureReader, LinkType, PcapNgWriter, PcapWriter, TsPrecision, MAX_CAPLEN,
};
use quakecap::error::{Error, ErrorKind};
use quakecap::flow::{Dir, FlowSummary};
use quakecap::net::Datagram;
use quakecap::pipeline::{self, Options, Report, Sink, Trackers};
use quakecap::q3::bits::{BitReader, BitWriter};
use quakecap::q3::state::ClientState;
use quakecap::q3::svc::{self, emit, SvcError};

struct Nothing;
impl Sink for Nothing {}

/// Decode one server message built by `build` (after the ack long) with a fresh state.
fn server_error(build: impl FnOnce(&mut BitWriter)) -> Option<SvcError> {
    let mut w = BitWriter::new();
    emit::ack(&mut w, 0);
    build(&mut w);
    let body = w.finish();
    let mut st = ClientState::default();
    svc::parse_server_message(&mut BitReader::new(&body), None, 1, &mut st).error
}

fn gamestate_start(w: &mut BitWriter) {
    w.write_byte(svc::SVC_GAMESTATE);
    w.write_long(0);
}

#[test]
fn configstring_index_beyond_the_table() {
    for index in [1024i16, -1, i16::MAX] {
        let e = server_error(|w| {
            gamestate_start(w);
            w.write_byte(svc::SVC_CONFIGSTRING);
            w.write_short(index);
            w.write_big_string("x");
        });
        assert!(
            matches!(e, Some(SvcError::ConfigstringIndex { index: i, bit }) if i == i32::from(index) && bit > 0),
            "{e:?}"
        );
    }
}

#[test]
fn configstrings_beyond_max_gamestate_chars() {
    let e = server_error(|w| {
        gamestate_start(w);
        for i in 0..20 {
            w.write_byte(svc::SVC_CONFIGSTRING);
            w.write_short(i);
            w.write_big_string(&"y".repeat(1000));
        }
    });
    assert!(matches!(e, Some(SvcError::GamestateTooBig { .. })), "{e:?}");
}

#[test]
fn area_mask_longer_than_max_map_area_bytes() {
    let e = server_error(|w| {
        w.write_byte(svc::SVC_SNAPSHOT);
        w.write_long(1000);
        w.write_byte(0);
        w.write_byte(0);
        w.write_byte(131);
    });
    assert!(
        matches!(e, Some(SvcError::AreaMask { len: 131, .. })),
        "{e:?}"
    );
    let e = Error::from(&e.unwrap());
    assert_eq!(e.kind, ErrorKind::Bounds, "{e}");
    assert!(e.pos.bit.is_some(), "{e}");
}

#[test]
fn download_block_sizes_beyond_the_chunk_limit() {
    for size in [-1i16, 16385, i16::MAX] {
        let e = server_error(|w| {
            w.write_byte(svc::SVC_DOWNLOAD);
            w.write_short(3); // a later block: no file size
            w.write_short(size);
        });
        assert!(
            matches!(e, Some(SvcError::DownloadSize { size: s, .. }) if s == i32::from(size)),
            "{e:?}"
        );
    }
}

#[test]
fn entity_field_count_beyond_the_table() {
    let e = server_error(|w| {
        gamestate_start(w);
        w.write_byte(svc::SVC_BASELINE);
        w.write_bits(5, 10);
        w.write_bit(false); // not removed
        w.write_bit(true); // has changes
        w.write_byte(52); // > 51 fields
    });
    let e = Error::from(&e.expect("an error"));
    assert_eq!(e.kind, ErrorKind::FieldCount, "{e}");
    assert!(e.pos.bit.is_some(), "{e}");
}

#[test]
fn entity_numbers_are_ten_bits_and_1023_ends_the_list() {
    // A number >= 1024 cannot be written in GENTITYNUM_BITS; the largest, 1023, ends the
    // packet entities, so every decoded entity number indexes the 1024 baselines.
    let mut w = BitWriter::new();
    emit::ack(&mut w, 0);
    w.write_byte(svc::SVC_SNAPSHOT);
    w.write_long(1000);
    w.write_byte(0);
    w.write_byte(0);
    w.write_byte(0);
    w.write_byte(0); // playerstate: no fields
    w.write_bit(false); // no stats arrays
    w.write_bits(1022, 10);
    w.write_bit(false);
    w.write_bit(false); // no change
    w.write_bits(1023, 10);
    emit::eof(&mut w);
    let body = w.finish();
    let mut st = ClientState::default();
    let m = svc::parse_server_message(&mut BitReader::new(&body), None, 1, &mut st);
    assert_eq!(m.error, None);
}

// --- netchan and flows -------------------------------------------------------------------

fn addr(host: u8, port: u16) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::new(10, 0, 0, host), port))
}

/// Feed datagrams (frame number = position + 1) and return the report.
fn run_datagrams(dgs: &[(SocketAddr, SocketAddr, Vec<u8>)]) -> Report {
    let mut t = Trackers::new(&Options::default());
    for (i, (src, dst, payload)) in dgs.iter().enumerate() {
        let d = Datagram {
            frame: i as u64 + 1,
            ts_ns: i as i64,
            src: *src,
            dst: *dst,
            payload,
        };
        t.datagram(&d, &mut Nothing).unwrap();
    }
    let mut r = Report::default();
    t.fill_report(&mut r, &mut Nothing).unwrap();
    r
}

fn oob(text: &str) -> Vec<u8> {
    let mut v = vec![0xff; 4];
    v.extend_from_slice(text.as_bytes());
    v
}

fn q3_flow(r: &Report) -> &FlowSummary {
    r.flows.iter().find(|f| f.game == "q3").expect("a q3 flow")
}

#[test]
fn fragments_beyond_max_msglen_are_a_flow_error_with_its_frame() {
    let (server, client) = (addr(1, 27960), addr(2, 40000));
    let mut dgs = vec![(client, server, oob("getchallenge"))];
    for k in 0..13u16 {
        let mut p = (5u32 | 1 << 31).to_le_bytes().to_vec();
        p.extend_from_slice(&(k * 1300).to_le_bytes());
        p.extend_from_slice(&1300u16.to_le_bytes());
        p.extend(std::iter::repeat_n(0u8, 1300));
        dgs.push((server, client, p));
    }
    let r = run_datagrams(&dgs);
    let f = q3_flow(&r);
    assert_eq!(f.errors, 1, "{:?}", f.error_details);
    let e = &f.error_details[0];
    // 13 fragments of 1300 bytes: the last one (the last datagram) passes 16384 bytes.
    assert_eq!(e.pos.frame, Some(dgs.len() as u64), "{e}");
    assert_eq!(e.kind, ErrorKind::Bounds, "{e}");
    assert_eq!(e.pos.flow, Some(f.id));
    assert_eq!(e.pos.dir, Some(Dir::S2c));
}

#[test]
fn fragment_offsets_and_lengths_are_checked() {
    let (server, client) = (addr(1, 27960), addr(2, 40000));
    let mut bad = (5u32 | 1 << 31).to_le_bytes().to_vec();
    bad.extend_from_slice(&0u16.to_le_bytes());
    bad.extend_from_slice(&2000u16.to_le_bytes()); // longer than the packet
    bad.extend_from_slice(&[0; 10]);
    let r = run_datagrams(&[(client, server, oob("getchallenge")), (server, client, bad)]);
    let f = q3_flow(&r);
    assert_eq!(f.errors, 1);
    let e = &f.error_details[0];
    assert_eq!((e.kind, e.pos.frame), (ErrorKind::Netchan, Some(2)), "{e}");
}

#[test]
fn packets_beyond_max_msglen_are_dropped_with_an_error() {
    let (server, client) = (addr(1, 27960), addr(2, 40000));
    let mut big = 7u32.to_le_bytes().to_vec();
    big.resize(20_000, 0);
    let r = run_datagrams(&[(client, server, oob("getchallenge")), (server, client, big)]);
    let f = q3_flow(&r);
    assert_eq!(f.errors, 1);
    let e = &f.error_details[0];
    assert_eq!((e.kind, e.pos.frame), (ErrorKind::Bounds, Some(2)), "{e}");
}

#[test]
fn spoofed_query_endpoints_are_capped_and_reported() {
    use quakecap::q3::tracker::MAX_QUERY_FLOWS;
    let server = addr(1, 27960);
    let n = MAX_QUERY_FLOWS + 500;
    let dgs: Vec<_> = (0..n)
        .map(|i| {
            let src = SocketAddr::from((Ipv4Addr::from(0x0b00_0000 + i as u32), 1024));
            (src, server, oob("getinfo xxx"))
        })
        .collect();
    let r = run_datagrams(&dgs);
    let q3 = r.flows.iter().filter(|f| f.game == "q3").count();
    assert_eq!(q3, MAX_QUERY_FLOWS);
    // Past the q3 limit the queries are summed per server and command, not dropped.
    assert_eq!(r.flows.len(), MAX_QUERY_FLOWS);
    assert_eq!(r.aggregates.len(), 1);
    let a = r.aggregates[0].aggregate.as_ref().unwrap();
    assert_eq!(
        (a.command.as_str(), a.requests, a.answered),
        ("getinfo", 500, 0)
    );
    // Distinct sources: a HyperLogLog estimate past 256 (standard error ~3.3%).
    assert!(a.sources.abs_diff(500) <= 50, "{}", a.sources);
    assert_eq!(r.untracked_datagrams, 0);
}

#[test]
fn spoofed_other_endpoints_are_capped_and_reported() {
    use quakecap::pipeline::MAX_OTHER_FLOWS;
    let dst = addr(1, 53);
    let n = MAX_OTHER_FLOWS + 1000;
    let dgs: Vec<_> = (0..n)
        .map(|i| {
            let src = SocketAddr::from((Ipv4Addr::from(0x0c00_0000 + i as u32), 5000));
            (src, dst, vec![1, 2, 3])
        })
        .collect();
    let r = run_datagrams(&dgs);
    assert_eq!(r.flows.len(), MAX_OTHER_FLOWS);
    assert_eq!(r.untracked_datagrams, 1000);
    let a = r.aggregates[0].aggregate.as_ref().unwrap();
    assert_eq!(
        (r.aggregates[0].kind, a.requests),
        ("other_aggregate", 1000)
    );
    let w = &r.warnings[0];
    assert_eq!(w.kind, ErrorKind::FlowTableFull, "{w}");
    assert_eq!(w.pos.frame, Some(MAX_OTHER_FLOWS as u64 + 1), "{w}");
}

// --- capture records ----------------------------------------------------------------------

fn read_all(bytes: &[u8]) -> (Vec<(u64, usize)>, Vec<Error>) {
    let mut r = CaptureReader::new(Cursor::new(bytes)).unwrap();
    let (mut frames, mut errors) = (Vec::new(), Vec::new());
    for _ in 0..1000 {
        match r.next_frame() {
            Ok(Some(f)) => frames.push((f.index, f.data.len())),
            Ok(None) => break,
            Err(e) => errors.push(Error::from(&e)),
        }
    }
    (frames, errors)
}

#[test]
fn zero_length_records_and_absurd_snaplen() {
    // A pcap header claiming a 4 GiB snaplen, a zero-length record, then a normal one.
    let mut w = PcapWriter::with_byte_order(
        Vec::new(),
        LinkType::ETHERNET,
        TsPrecision::Micro,
        ByteOrder::Little,
    )
    .unwrap();
    w.write_packet(1_000, &[], 0).unwrap();
    w.write_packet(2_000, &[0xaa; 60], 60).unwrap();
    let mut bytes = w.finish().unwrap();
    bytes[16..20].copy_from_slice(&u32::MAX.to_le_bytes());
    let (frames, errors) = read_all(&bytes);
    assert_eq!(frames, vec![(1, 0), (2, 60)]);
    assert!(errors.is_empty(), "{errors:?}");
    // The whole pipeline: the empty frame is a counted network error, nothing else breaks.
    let reader = CaptureReader::new(Cursor::new(&bytes[..])).unwrap();
    let r = pipeline::run_reader(
        reader,
        "t".into(),
        &Options::default(),
        &mut Nothing,
        &mut |_| {},
    );
    let r = r.unwrap();
    assert_eq!(r.frames, 2);
    assert_eq!(r.net_errors, 1);
}

#[test]
fn captured_length_beyond_the_limit_is_skipped_with_its_offset() {
    let mut w = PcapNgWriter::with_options(Vec::new(), ByteOrder::Little, 6).unwrap();
    let big = vec![0u8; MAX_CAPLEN as usize + 4];
    w.write_packet(LinkType::ETHERNET, 1_000, &big, big.len() as u32)
        .unwrap();
    w.write_packet(LinkType::ETHERNET, 2_000, &[0xbb; 60], 60)
        .unwrap();
    let bytes = w.finish().unwrap();
    let (frames, errors) = read_all(&bytes);
    assert_eq!(
        frames,
        vec![(2, 60)],
        "numbering still counts the skipped record"
    );
    assert_eq!(errors.len(), 1);
    // The skipped record is the block after the section header and interface blocks.
    let len_at = |at: usize| u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap());
    let shb = len_at(0) as usize;
    let first_packet = shb + len_at(shb) as usize;
    assert_eq!(errors[0].kind, ErrorKind::BadRecord, "{}", errors[0]);
    assert_eq!(
        errors[0].pos.byte,
        Some(first_packet as u64),
        "{}",
        errors[0]
    );
}
