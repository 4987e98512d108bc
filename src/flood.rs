//! Synthetic traffic for tests and benchmarks: a flood of spoofed-source datagrams merged,
//! in time order, into a real capture, and a real session repeated by many clients one after
//! another ([`repeat_session`]). Nothing here is sent anywhere; it only builds capture bytes,
//! so that the flow table's bounds can be checked against every kind of state an
//! unauthenticated sender can make quakecap create, and against long captures.
use std::io::{self, Cursor};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use crate::capture::{CaptureReader, LinkType, PcapNgWriter};
use crate::net::NetDecoder;

/// What the spoofed senders send to the capture's game server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloodKind {
    /// Quake 3 `getinfo` queries.
    Q3Getinfo,
    /// QuakeWorld `status` queries.
    QwStatus,
    /// Copies of the capture's own client netchan packets (Quake 3 or QuakeWorld, whichever
    /// the capture holds): they pass every shape test a tracker can apply to one packet.
    ClientNetchan,
    /// Random payloads of 8..=200 bytes to random ports of the server's host.
    RandomUdp,
    /// Copies of the capture's own Quake 3 `connect` request (its userinfo compressed with
    /// the adaptive Huffman code): a connect flood replayed from spoofed sources.
    Q3Connect,
    /// Copies of the capture's own server netchan packets, sent from the server to spoofed
    /// clients: each looks like a connection the capture joined mid-session.
    ServerNetchan,
    /// First IPv4 fragments (more-fragments set, 1,000 bytes) of UDP datagrams to the server
    /// whose other fragments never come: the reassembly holds each until it gives up.
    IpFragments,
    /// QuakeWorld `connect` requests, each from its own spoofed source with its own name.
    QwConnect,
}

impl FloodKind {
    pub const ALL: [FloodKind; 8] = [
        FloodKind::Q3Getinfo,
        FloodKind::QwStatus,
        FloodKind::ClientNetchan,
        FloodKind::RandomUdp,
        FloodKind::Q3Connect,
        FloodKind::ServerNetchan,
        FloodKind::IpFragments,
        FloodKind::QwConnect,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FloodKind::Q3Getinfo => "q3-getinfo",
            FloodKind::QwStatus => "qw-status",
            FloodKind::ClientNetchan => "client-netchan",
            FloodKind::RandomUdp => "random-udp",
            FloodKind::Q3Connect => "q3-connect",
            FloodKind::ServerNetchan => "server-netchan",
            FloodKind::IpFragments => "ip-fragments",
            FloodKind::QwConnect => "qw-connect",
        }
    }

    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// A small deterministic generator (xorshift64*): the same seed gives the same flood.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// One record of the base capture, as the merge needs it.
struct Record {
    ts_ns: i64,
    link: LinkType,
    data: Vec<u8>,
}

/// What the base capture tells the flood: its records, its server and its client packets.
struct Base {
    records: Vec<Record>,
    server: SocketAddrV4,
    client_packets: Vec<Vec<u8>>,
    /// The non-connectionless datagrams the server sent.
    server_packets: Vec<Vec<u8>>,
    /// The first connectionless `connect` sent to the server (Quake 3 captures).
    connect: Option<Vec<u8>>,
}

/// The server is the destination of the first connectionless `getchallenge` (both games send
/// one before connecting); client packets are the non-connectionless datagrams sent to it.
fn read_base(capture: &[u8]) -> io::Result<Base> {
    let bad = |m: &str| io::Error::new(io::ErrorKind::InvalidData, m.to_string());
    let mut reader = CaptureReader::new(Cursor::new(capture)).map_err(|e| bad(&e.to_string()))?;
    let mut net = NetDecoder::new();
    let (mut records, mut server, mut client_packets) = (Vec::new(), None, Vec::new());
    let mut connect = None;
    let mut server_packets = Vec::new();
    while let Some(f) = reader.next_frame().map_err(|e| bad(&e.to_string()))? {
        if let Ok(Some(d)) = net.decode(&f) {
            let oob = d.payload.starts_with(&[0xff; 4]);
            if server.is_none() && oob && d.payload[4..].starts_with(b"getchallenge") {
                if let SocketAddr::V4(s) = d.dst {
                    server = Some(s);
                }
            }
            let to_server = server.is_some_and(|s| SocketAddr::V4(s) == d.dst);
            if !oob && to_server {
                client_packets.push(d.payload.to_vec());
            }
            if !oob && server.is_some_and(|s| SocketAddr::V4(s) == d.src) {
                server_packets.push(d.payload.to_vec());
            }
            if oob && to_server && connect.is_none() && d.payload[4..].starts_with(b"connect ") {
                connect = Some(d.payload.to_vec());
            }
        }
        records.push(Record {
            ts_ns: f.ts_ns,
            link: f.link,
            data: f.data.to_vec(),
        });
    }
    let server = server.ok_or_else(|| bad("no getchallenge to an IPv4 server in the capture"))?;
    if client_packets.is_empty() {
        return Err(bad("no client netchan packet in the capture"));
    }
    Ok(Base {
        records,
        server,
        client_packets,
        server_packets,
        connect,
    })
}

/// An Ethernet + IPv4 + UDP frame (checksums zero: nothing checks them).
pub fn udp_frame(src: SocketAddrV4, dst: SocketAddrV4, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![0u8; 12];
    v.extend_from_slice(&0x0800u16.to_be_bytes());
    let total = (20 + 8 + payload.len()) as u16;
    v.extend_from_slice(&[0x45, 0]);
    v.extend_from_slice(&total.to_be_bytes());
    v.extend_from_slice(&[0, 0, 0, 0, 64, 17, 0, 0]);
    v.extend_from_slice(&src.ip().octets());
    v.extend_from_slice(&dst.ip().octets());
    v.extend_from_slice(&src.port().to_be_bytes());
    v.extend_from_slice(&dst.port().to_be_bytes());
    v.extend_from_slice(&(8 + payload.len() as u16).to_be_bytes());
    v.extend_from_slice(&[0, 0]);
    v.extend_from_slice(payload);
    v
}

/// A UDP datagram's first IPv4 fragment (more fragments set, IP id `id`): its UDP header
/// claims 8 bytes more than `payload` so that a second fragment would be due.
fn first_fragment(src: SocketAddrV4, dst: SocketAddrV4, payload: &[u8], id: u16) -> Vec<u8> {
    let mut v = udp_frame(src, dst, payload);
    // IPv4 header at 14: identification at +4, flags and offset at +6 (MF = 0x2000).
    v[18..20].copy_from_slice(&id.to_be_bytes());
    v[20..22].copy_from_slice(&0x2000u16.to_be_bytes());
    let udp_len = 8 + payload.len() as u16 + 8;
    v[38..40].copy_from_slice(&udp_len.to_be_bytes());
    v
}

/// The i-th spoofed source: distinct for every i below 2^24 (10.x.y.z, a port from the seed).
fn spoofed_source(i: usize, rng: &mut Rng) -> SocketAddrV4 {
    let [_, a, b, c] = (i as u32).to_be_bytes();
    let port = 1024 + rng.below(64_000) as u16;
    SocketAddrV4::new(Ipv4Addr::new(10, a, b, c), port)
}

/// One flood datagram: (source, destination, payload).
fn flood_datagram(
    kind: FloodKind,
    i: usize,
    base: &Base,
    rng: &mut Rng,
) -> (SocketAddrV4, SocketAddrV4, Vec<u8>) {
    let src = spoofed_source(i, rng);
    let mut dst = base.server;
    let command = match kind {
        FloodKind::Q3Getinfo => format!("getinfo xxx{i}").into_bytes(),
        FloodKind::QwStatus => b"status 23\n".to_vec(),
        FloodKind::QwConnect => {
            let qport = rng.below(65_536);
            format!("connect 28 {qport} {i} \"\\name\\spoof{i}\"\n").into_bytes()
        }
        FloodKind::ClientNetchan => {
            let n = rng.below(base.client_packets.len() as u64) as usize;
            return (src, dst, base.client_packets[n].clone());
        }
        FloodKind::RandomUdp => {
            dst.set_port(1024 + rng.below(64_000) as u16);
            let len = 8 + rng.below(193) as usize;
            return (src, dst, (0..len).map(|_| rng.next() as u8).collect());
        }
        FloodKind::IpFragments => {
            // The UDP header and 992 bytes of its payload: the first 1,000 bytes of a datagram.
            return (src, dst, (0..992).map(|_| rng.next() as u8).collect());
        }
        FloodKind::ServerNetchan => {
            let n = rng.below(base.server_packets.len() as u64) as usize;
            return (
                dst,
                src,
                base.server_packets.get(n).cloned().unwrap_or_default(),
            );
        }
        FloodKind::Q3Connect => {
            // `merge_flood` refuses a base without one.
            return (src, dst, base.connect.clone().unwrap_or_default());
        }
    };
    // Connectionless: four 0xff bytes, then the command.
    let mut p = vec![0xff; 4];
    p.extend_from_slice(&command);
    (src, dst, p)
}

/// The base capture with `count` flood datagrams of `kind` spread evenly over its time span
/// and merged in time order, as pcapng bytes.
pub fn merge_flood(
    capture: &[u8],
    kind: FloodKind,
    count: usize,
    seed: u64,
) -> io::Result<Vec<u8>> {
    let base = read_base(capture)?;
    if kind == FloodKind::Q3Connect && base.connect.is_none() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "no Quake 3 connect request in the capture",
        ));
    }
    let first = base.records.first().map_or(0, |r| r.ts_ns);
    let last = base.records.last().map_or(0, |r| r.ts_ns);
    let span = (last - first).max(1);
    let mut rng = Rng(seed | 1);
    let mut w = PcapNgWriter::new(Vec::with_capacity(capture.len() + count * 100))?;
    let mut records = base.records.iter().peekable();
    for i in 0..count {
        let ts = first + (span as i128 * i as i128 / count.max(1) as i128) as i64;
        while let Some(r) = records.next_if(|r| r.ts_ns <= ts) {
            w.write_packet(r.link, r.ts_ns, &r.data, r.data.len() as u32)?;
        }
        let (src, dst, payload) = flood_datagram(kind, i, &base, &mut rng);
        let frame = match kind {
            FloodKind::IpFragments => first_fragment(src, dst, &payload, i as u16),
            _ => udp_frame(src, dst, &payload),
        };
        w.write_packet(LinkType::ETHERNET, ts, &frame, frame.len() as u32)?;
    }
    for r in records {
        w.write_packet(r.link, r.ts_ns, &r.data, r.data.len() as u32)?;
    }
    w.finish()
}

/// The first `packets` UDP datagrams of a capture's session (from its first `getchallenge`
/// on), replayed `count` times, each replay `spacing_ns` after the one before and from a
/// client address of its own (10.x.y.z, the client port kept; the server as captured): a
/// long capture of many short connections following each other, as pcapng bytes. The
/// spacing must exceed the replayed packets' span.
pub fn repeat_session(
    capture: &[u8],
    packets: usize,
    count: usize,
    spacing_ns: i64,
) -> io::Result<Vec<u8>> {
    replay_session(capture, packets, count, spacing_ns, |k| {
        let [_, a, b, c] = (k as u32).to_be_bytes();
        Ipv4Addr::new(10, a, b, c)
    })
}

/// [`repeat_session`] with every replay from the same client address and port (10.0.0.1):
/// a client that left and came back, the flow table's one row for both.
pub fn repeat_session_same_client(
    capture: &[u8],
    packets: usize,
    count: usize,
    spacing_ns: i64,
) -> io::Result<Vec<u8>> {
    replay_session(capture, packets, count, spacing_ns, |_| {
        Ipv4Addr::new(10, 0, 0, 1)
    })
}

/// The replays of [`repeat_session`], replay `k` from client address `client(k)`.
fn replay_session(
    capture: &[u8],
    packets: usize,
    count: usize,
    spacing_ns: i64,
    client: impl Fn(usize) -> Ipv4Addr,
) -> io::Result<Vec<u8>> {
    let bad = |m: &str| io::Error::new(io::ErrorKind::InvalidData, m.to_string());
    let mut reader = CaptureReader::new(Cursor::new(capture)).map_err(|e| bad(&e.to_string()))?;
    let mut net = NetDecoder::new();
    // (time since the getchallenge, from the client, client port, payload)
    let mut session: Vec<(i64, bool, u16, Vec<u8>)> = Vec::new();
    let mut start: Option<(i64, SocketAddrV4)> = None;
    while let Some(f) = reader.next_frame().map_err(|e| bad(&e.to_string()))? {
        if session.len() >= packets {
            break;
        }
        let Ok(Some(d)) = net.decode(&f) else {
            continue;
        };
        let (SocketAddr::V4(src), SocketAddr::V4(dst)) = (d.src, d.dst) else {
            continue;
        };
        if start.is_none() && d.payload.starts_with(b"\xff\xff\xff\xffgetchallenge") {
            start = Some((f.ts_ns, dst));
        }
        let Some((t0, server)) = start else {
            continue;
        };
        let from_client = dst == server;
        if !from_client && src != server {
            continue;
        }
        let port = if from_client { src.port() } else { dst.port() };
        session.push((f.ts_ns - t0, from_client, port, d.payload.to_vec()));
    }
    let (t0, server) = start.ok_or_else(|| bad("no getchallenge to an IPv4 server"))?;
    // Replays written one after the other must not overlap (the file stays in time order).
    let span = session.last().map_or(0, |p| p.0);
    if count > 1 && spacing_ns <= span {
        return Err(bad(
            "replays would overlap: spacing shorter than the session",
        ));
    }
    let mut w = PcapNgWriter::new(Vec::new())?;
    for k in 0..count {
        let ip = client(k);
        let at = t0 + k as i64 * spacing_ns;
        for (dt, from_client, port, payload) in &session {
            let client = SocketAddrV4::new(ip, *port);
            let frame = if *from_client {
                udp_frame(client, server, payload)
            } else {
                udp_frame(server, client, payload)
            };
            w.write_packet(LinkType::ETHERNET, at + dt, &frame, frame.len() as u32)?;
        }
    }
    w.finish()
}
