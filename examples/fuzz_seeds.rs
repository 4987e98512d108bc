//! Write seed corpora for the fuzz targets from the project's own captures and demos:
//! `cargo run --example fuzz_seeds -- OUT_DIR` makes `OUT_DIR/<target>/<name>` files in the
//! input framing each `quakecap::fuzzing` harness expects.
use std::io::Cursor;
use std::path::{Path, PathBuf};

use quakecap::capture::{ByteOrder, CaptureReader, PcapNgWriter, PcapWriter, TsPrecision};
use quakecap::fuzzing::{frame_chunks, LINKS};
use quakecap::net::NetDecoder;

const CAPTURES: [&str; 7] = [
    "q3-basic",
    "q3-ctf",
    "q3-download",
    "q3-impaired",
    "q3-mapchange",
    "q3-proto71",
    "q3-two-clients",
];

struct Rec {
    link: quakecap::capture::LinkType,
    ts_ns: i64,
    data: Vec<u8>,
}

fn records(bytes: &[u8]) -> Vec<Rec> {
    let mut out = Vec::new();
    let Ok(mut r) = CaptureReader::new(Cursor::new(bytes)) else {
        return out;
    };
    while let Ok(Some(f)) = r.next_frame() {
        out.push(Rec {
            link: f.link,
            ts_ns: f.ts_ns,
            data: f.data.to_vec(),
        });
    }
    out
}

/// UDP payloads with their direction (true: from the server, port 27960..27969).
fn payloads(bytes: &[u8]) -> Vec<(bool, Vec<u8>)> {
    let mut out = Vec::new();
    let Ok(mut r) = CaptureReader::new(Cursor::new(bytes)) else {
        return out;
    };
    let mut net = NetDecoder::new();
    while let Ok(Some(f)) = r.next_frame() {
        if let Ok(Some(d)) = net.decode(&f) {
            let from_server = (27960..27970).contains(&d.src.port());
            out.push((from_server, d.payload.to_vec()));
        }
    }
    out
}

fn put(dir: &Path, target: &str, name: &str, data: &[u8]) {
    let d = dir.join(target);
    std::fs::create_dir_all(&d).expect("create corpus dir");
    std::fs::write(d.join(name), data).expect("write seed");
    // `export` reads its inputs as the analyses do (a capture, else a demo).
    if target == "analyses" {
        put(dir, "export", name, data);
    }
}

/// Where the mid-session seeds start (per cent of a capture's records) and how many records
/// they hold: past the handshake, long enough for a protocol-68 lock-on (tens of packets)
/// and some decoding after it, so the fuzzer reaches the key searches and the relock.
const MID_AT: [usize; 2] = [30, 60];
const MID_LEN: usize = 150;

/// `len` items of `v` from `pct` per cent of it on.
fn window<T>(v: &[T], pct: usize, len: usize) -> &[T] {
    let start = v.len() * pct / 100;
    &v[start..(start + len).min(v.len())]
}

fn capture_seeds(out: &Path, name: &str, recs: &[Rec]) {
    for (i, part) in recs.chunks(40).take(6).enumerate() {
        let mut ng = PcapNgWriter::new(Vec::new()).expect("writer");
        let mut pc = PcapWriter::with_byte_order(
            Vec::new(),
            part[0].link,
            TsPrecision::Micro,
            ByteOrder::Big,
        )
        .expect("writer");
        for r in part {
            ng.write_packet(r.link, r.ts_ns, &r.data, r.data.len() as u32)
                .expect("write");
            pc.write_packet(r.ts_ns, &r.data, r.data.len() as u32)
                .expect("write");
        }
        let ng = ng.finish().expect("finish");
        let pc = pc.finish().expect("finish");
        for t in ["capture", "pipeline"] {
            put(out, t, &format!("{name}-{i}.pcapng"), &ng);
            put(out, t, &format!("{name}-{i}.pcap"), &pc);
        }
    }
    // Captures that start mid-session (issue 17): the whole pass from a cut.
    for pct in MID_AT {
        let ng = window_pcapng(recs, pct, MID_LEN);
        put(out, "pipeline", &format!("{name}-mid{pct}.pcapng"), &ng);
        put(out, "analyses", &format!("{name}-mid{pct}.pcapng"), &ng);
    }
    analyses_seeds(out, name, recs);
}

/// Where the analyses' seeds start (per cent of a capture's records) and how many records
/// each holds: the first holds the handshake and gamestate, the others the server commands,
/// events and flow ends of a session under way.
const ANALYSES_AT: [usize; 4] = [0, 25, 50, 85];
const ANALYSES_LEN: usize = 300;

/// Windows of a capture for the `analyses` target (check, events, report).
fn analyses_seeds(out: &Path, name: &str, recs: &[Rec]) {
    for pct in ANALYSES_AT {
        let ng = window_pcapng(recs, pct, ANALYSES_LEN);
        put(out, "analyses", &format!("{name}-at{pct}.pcapng"), &ng);
    }
}

/// The `len` records of `recs` from `pct` per cent on, as a pcapng file.
fn window_pcapng(recs: &[Rec], pct: usize, len: usize) -> Vec<u8> {
    let mut ng = PcapNgWriter::new(Vec::new()).expect("writer");
    for r in window(recs, pct, len) {
        ng.write_packet(r.link, r.ts_ns, &r.data, r.data.len() as u32)
            .expect("write");
    }
    ng.finish().expect("finish")
}

fn net_seeds(out: &Path, name: &str, recs: &[Rec]) {
    for (i, part) in recs.chunks(8).take(8).enumerate() {
        let frames: Vec<Vec<u8>> = part
            .iter()
            .map(|r| {
                let sel = LINKS.iter().position(|&l| l == r.link).unwrap_or(0) as u8;
                let mut v = vec![sel];
                v.extend_from_slice(&r.data);
                v
            })
            .collect();
        let seed = frame_chunks(frames.iter().map(Vec::as_slice));
        put(out, "net", &format!("{name}-{i}"), &seed);
    }
}

fn q3_seeds(out: &Path, name: &str, p: &[(bool, Vec<u8>)], proto71: bool) {
    let oob: Vec<&Vec<u8>> = p
        .iter()
        .map(|(_, b)| b)
        .filter(|b| b.starts_with(&[0xff; 4]))
        .collect();
    for (i, b) in oob.iter().take(12).enumerate() {
        put(out, "oob", &format!("{name}-{i}"), &b[4..]);
    }
    for server in [false, true] {
        let seq: Vec<&[u8]> = p
            .iter()
            .filter(|(s, b)| *s == server && !b.starts_with(&[0xff; 4]))
            .map(|(_, b)| b.as_slice())
            .collect();
        let sel = u8::from(!server) | if proto71 { 2 } else { 0 };
        for (i, part) in seq.chunks(24).take(6).enumerate() {
            let mut seed = vec![sel];
            seed.extend(frame_chunks(part.iter().copied()));
            put(out, "netchan", &format!("{name}-{server}-{i}"), &seed);
        }
        if !server {
            // Client bodies after the netchan header (plain in protocol 71).
            let skip = if proto71 { 10 } else { 6 };
            for (i, b) in seq.iter().take(10).enumerate() {
                put(
                    out,
                    "client_message",
                    &format!("{name}-{i}"),
                    b.get(skip..).unwrap_or(&[]),
                );
            }
        }
    }
    for (i, part) in p.chunks(30).take(6).enumerate() {
        put(
            out,
            "q3_datagrams",
            &format!("{name}-{i}"),
            &q3_datagrams(part),
        );
    }
    for pct in MID_AT {
        let part = window(p, pct, MID_LEN);
        put(
            out,
            "q3_datagrams",
            &format!("{name}-mid{pct}"),
            &q3_datagrams(part),
        );
    }
}

/// Payloads with their direction in the `q3_datagrams` framing: the server is endpoint 1,
/// the client endpoint 2 (see `fuzzing::q3_datagrams`).
fn q3_datagrams(part: &[(bool, Vec<u8>)]) -> Vec<u8> {
    let frames: Vec<Vec<u8>> = part
        .iter()
        .map(|(s, b)| {
            let sel = if *s { 1 | 2 << 3 } else { 2 | 1 << 3 };
            let mut v = vec![sel];
            v.extend_from_slice(b);
            v
        })
        .collect();
    frame_chunks(frames.iter().map(Vec::as_slice))
}

fn demo_seeds(out: &Path, name: &str, demo: &[u8]) {
    for t in ["demo", "analyses"] {
        put(
            out,
            t,
            &format!("{name}-head"),
            &demo[..demo.len().min(12_000)],
        );
    }
    put(
        out,
        "demo",
        &format!("{name}-tail"),
        &demo[demo.len().saturating_sub(6_000)..],
    );
    let bodies: Vec<&[u8]> = quakecap::q3::demo::Reader::new(demo)
        .filter_map(Result::ok)
        .map(|r| r.body)
        .collect();
    for (i, part) in bodies.chunks(12).take(4).enumerate() {
        put(
            out,
            "server_messages",
            &format!("{name}-{i}"),
            &frame_chunks(part.iter().copied()),
        );
    }
    for (i, b) in bodies.iter().take(8).enumerate() {
        let mut seed = vec![24u8];
        seed.extend((0..24u8).map(|k| k.wrapping_mul(37)));
        seed.extend_from_slice(&b[..b.len().min(400)]);
        put(out, "bits", &format!("{name}-{i}"), &seed);
    }
}

/// QuakeWorld: datagram streams (server = endpoint 1, port 27500..27510) and demo pieces.
fn qw_seeds(out: &Path, name: &str, dir: &Path) {
    let Ok(bytes) = std::fs::read(dir.join("capture.pcapng")) else {
        return;
    };
    let recs = records(&bytes);
    capture_seeds(out, name, &recs);
    let mut net = NetDecoder::new();
    let mut frames = Vec::new();
    for r in &recs {
        let f = quakecap::capture::Frame {
            index: 1,
            ts_ns: r.ts_ns,
            link: r.link,
            data: &r.data,
            orig_len: r.data.len() as u32,
            file_offset: 0,
        };
        if let Ok(Some(d)) = net.decode(&f) {
            let sel = if (27500..27510).contains(&d.src.port()) {
                1 | 2 << 3
            } else {
                2 | 1 << 3
            };
            let mut v = vec![sel];
            v.extend_from_slice(d.payload);
            frames.push(v);
        }
    }
    for (i, part) in frames.chunks(40).take(6).enumerate() {
        put(
            out,
            "qw_datagrams",
            &format!("{name}-{i}"),
            &frame_chunks(part.iter().map(Vec::as_slice)),
        );
    }
    for pct in MID_AT {
        put(
            out,
            "qw_datagrams",
            &format!("{name}-mid{pct}"),
            &frame_chunks(window(&frames, pct, MID_LEN).iter().map(Vec::as_slice)),
        );
    }
    for demo in ["client1-demo0.qwd", "server-demo0.mvd"] {
        if let Ok(d) = std::fs::read(dir.join(demo)) {
            for t in ["qw_demo", "analyses"] {
                put(
                    out,
                    t,
                    &format!("{name}-{demo}-head"),
                    &d[..d.len().min(12_000)],
                );
            }
            put(
                out,
                "qw_demo",
                &format!("{name}-{demo}-tail"),
                &d[d.len().saturating_sub(6_000)..],
            );
        }
    }
}

/// Inputs that crashed the decoders before their fixes (kept in the committed corpus):
/// a gamestate naming clientNum -1 (player name lookup overflowed) and a demo whose snapshot
/// sits at message number i32::MIN (the snapshot history's window overflowed).
fn regressions(out: &Path) {
    use quakecap::q3::bits::BitWriter;
    use quakecap::q3::state::SnapFrame;
    use quakecap::q3::svc::{emit, SVC_EOF, SVC_GAMESTATE};
    let mut w = BitWriter::new();
    emit::ack(&mut w, 0);
    w.write_byte(SVC_GAMESTATE);
    w.write_long(0);
    w.write_byte(SVC_EOF);
    w.write_long(-1); // clientNum
    w.write_long(0); // checksumFeed
    emit::eof(&mut w);
    let gamestate = w.finish();
    put(
        out,
        "server_messages",
        "regress-negative-client-num",
        &frame_chunks([&gamestate[..]]),
    );
    let mut w = BitWriter::new();
    emit::ack(&mut w, 0);
    let frame = SnapFrame {
        message_num: i32::MIN,
        server_time: 1,
        delta_num: -1,
        flags: 0,
        areamask: vec![0],
        ps: Default::default(),
        entities: Vec::new(),
        parse_entities_num: 0,
        ..Default::default()
    };
    emit::full_snapshot(
        &mut w,
        quakecap::q3::protocol::Protocol::q3(),
        &frame,
        &quakecap::q3::baselines::Baselines::default(),
    );
    emit::eof(&mut w);
    let snap = w.finish();
    let mut demo = quakecap::q3::demo::Writer::new(Vec::new());
    demo.record(5, &gamestate).expect("write");
    demo.record(i32::MIN, &snap).expect("write");
    put(
        out,
        "demo",
        "regress-min-message-number",
        &demo.finish().expect("finish"),
    );
}

fn main() {
    let out = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "fuzz/seeds".into()),
    );
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("captures");
    regressions(&out);
    for c in CAPTURES {
        let dir = root.join(c);
        let Ok(bytes) = std::fs::read(dir.join("capture.pcapng")) else {
            continue;
        };
        let recs = records(&bytes);
        capture_seeds(&out, c, &recs);
        net_seeds(&out, c, &recs);
        q3_seeds(&out, c, &payloads(&bytes), c == "q3-proto71");
        for ext in ["client1-demo0.dm_68", "client1-demo0.dm_71"] {
            if let Ok(d) = std::fs::read(dir.join(ext)) {
                demo_seeds(&out, c, &d);
            }
        }
    }
    for c in [
        "qw-basic",
        "qw-impaired",
        "qw-mapchange-reconnect",
        "qw-noext",
    ] {
        qw_seeds(&out, c, &root.join(c));
    }
    // The sessions recorded for the analyses (kills, chat, scores; impaired paths), from
    // ../shared when it is beside the repository.
    let shared = root.join("../../shared/captures");
    for c in ["q3-events", "q3-netquality", "qw-netquality"] {
        if let Ok(b) = std::fs::read(shared.join(c).join("capture.pcapng")) {
            analyses_seeds(&out, c, &records(&b));
        }
    }
    for f in ["dumpcap-any.pcapng", "tcpdump-any.pcap"] {
        if let Ok(b) = std::fs::read(root.join("loopback-any").join(f)) {
            put(&out, "capture", f, &b);
            put(&out, "pipeline", f, &b);
            net_seeds(&out, f, &records(&b));
        }
    }
}
