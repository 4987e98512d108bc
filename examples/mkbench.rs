//! Builds a large benchmark capture from the stored real ones (`scripts/bench.sh` runs it).
//!
//! `cargo run --release --example mkbench -- OUT.pcapng TARGET_MB [LANES]`
//!
//! Every stored Quake 3 session is replayed many times. Each replay gets its own client IPv4
//! address (10.x.y.z; the server endpoint is kept), which is all the tracker needs to see a
//! distinct flow: flows are keyed by (server, client address) and the qport by
//! (server, client IP, qport), so qports can stay as captured (rewriting them would mean
//! re-encoding the Huffman-compressed connect userinfo). Replays run in `LANES` parallel
//! lanes, back to back in each lane with a short pause, so the file grows in time rather than
//! in the number of simultaneous connections: that is what real long captures look like, and
//! it lets the benchmark show that memory does not grow with file size.
//!
//! `MKBENCH_PACKETS=N` replays only each session's first N packets (its handshake, gamestate
//! and first snapshots): many short connections, for a capture of more connections than the
//! flow table's limits.
//!
//! The file is written with the project's own [`PcapNgWriter`].
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::BufWriter;
use std::net::Ipv4Addr;
use std::path::Path;

use anyhow::{bail, Context, Result};
use quakecap::capture::{CaptureReader, LinkType, PcapNgWriter};

/// The stored sessions replayed (one client each, except two-clients).
const SOURCES: &[&str] = &[
    "captures/q3-basic/capture.pcapng",
    "captures/q3-download/capture.pcapng",
    "captures/q3-impaired/capture.pcapng",
    "captures/q3-mapchange/capture.pcapng",
    "captures/q3-proto71/capture.pcapng",
    "captures/q3-two-clients/capture.pcapng",
];

/// Pause between two replays in one lane.
const GAP_NS: i64 = 2_000_000_000;
/// Offset between lanes, so that lanes do not send in lock step.
const LANE_STAGGER_NS: i64 = 370_000_000;
/// All lanes start within this span: with many lanes (the scale benchmark's 1,000) every
/// lane is live at once, which is what a capture of many servers' uplink looks like.
const LANES_START_WITHIN_NS: i64 = 6_000_000_000;
/// Start of the synthetic capture (2026-01-01T00:00:00Z).
const T0_NS: i64 = 1_767_225_600_000_000_000;

/// One stored packet, times relative to the session's first packet.
struct Packet {
    t_ns: i64,
    data: Vec<u8>,
    orig_len: u32,
}

/// One stored session: its Ethernet/IPv4/UDP packets and which endpoint is the server.
struct Source {
    packets: Vec<Packet>,
    server: Endpoint,
    duration_ns: i64,
    bytes: u64,
    /// Client endpoints (connections) of the session.
    clients: usize,
}

/// An IPv4 address and UDP port.
type Endpoint = ([u8; 4], u16);

/// Byte offsets inside an untagged Ethernet + IPv4 frame.
const ETH: usize = 14;

fn ipv4_header_len(frame: &[u8]) -> Option<usize> {
    if frame.len() < ETH + 20 || frame[12..14] != [0x08, 0x00] {
        return None;
    }
    let ihl = usize::from(frame[ETH] & 0x0f) * 4;
    (frame.len() >= ETH + ihl).then_some(ihl)
}

/// Source and destination (ip, port) of a first IPv4 fragment carrying UDP.
fn endpoints(frame: &[u8]) -> Option<(Endpoint, Endpoint)> {
    let ihl = ipv4_header_len(frame)?;
    let u = frame.get(ETH + ihl..ETH + ihl + 8)?;
    let ip = |at: usize| -> [u8; 4] { [frame[at], frame[at + 1], frame[at + 2], frame[at + 3]] };
    Some((
        (ip(ETH + 12), u16::from_be_bytes([u[0], u[1]])),
        (ip(ETH + 16), u16::from_be_bytes([u[2], u[3]])),
    ))
}

fn load(path: &Path) -> Result<Source> {
    let mut r = CaptureReader::open(path).with_context(|| path.display().to_string())?;
    let mut packets = Vec::new();
    let mut server = None;
    let mut t0 = None;
    let mut bytes = 0u64;
    while let Some(f) = r.next_frame()? {
        if f.link != LinkType(1) || ipv4_header_len(f.data).is_none() {
            bail!("{}: expected Ethernet + IPv4 frames", path.display());
        }
        // The first packet of every stored session is the client's getchallenge.
        if server.is_none() {
            server = endpoints(f.data).map(|(_, dst)| dst);
        }
        let t0 = *t0.get_or_insert(f.ts_ns);
        bytes += f.data.len() as u64;
        packets.push(Packet {
            t_ns: f.ts_ns - t0,
            data: f.data.to_vec(),
            orig_len: f.orig_len,
        });
    }
    let Some(server) = server else {
        bail!("{}: no UDP packet", path.display())
    };
    let duration_ns = packets.last().map_or(0, |p| p.t_ns);
    let mut clients: Vec<Endpoint> = packets
        .iter()
        .filter_map(|p| endpoints(&p.data))
        .map(|(src, dst)| if src == server { dst } else { src })
        .collect();
    clients.sort_unstable();
    clients.dedup();
    let clients = clients.len();
    Ok(Source {
        packets,
        server,
        duration_ns,
        bytes,
        clients,
    })
}

/// RFC 1071 checksum of an IPv4 header whose checksum field is zero.
fn ip_checksum(h: &[u8]) -> [u8; 2] {
    let mut sum: u32 = h
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    (!(sum as u16)).to_be_bytes()
}

/// Give the client endpoint(s) of one replay their own addresses: every endpoint that is
/// not the server gets `client_ip(index of that endpoint)`.
fn rewrite(frame: &mut [u8], server: Endpoint, clients: &mut Vec<Endpoint>, ip_base: u32) {
    let Some(ihl) = ipv4_header_len(frame) else {
        return;
    };
    let first_fragment = u16::from_be_bytes([frame[ETH + 6], frame[ETH + 7]]) & 0x1fff == 0;
    let Some((src, dst)) = endpoints(frame).filter(|_| first_fragment) else {
        return;
    };
    let (client, ip_at) = if src == server {
        (dst, ETH + 16)
    } else {
        (src, ETH + 12)
    };
    let k = match clients.iter().position(|c| *c == client) {
        Some(k) => k,
        None => {
            clients.push(client);
            clients.len() - 1
        }
    };
    let ip = Ipv4Addr::from(ip_base + k as u32).octets();
    frame[ip_at..ip_at + 4].copy_from_slice(&ip);
    frame[ETH + 10..ETH + 12].copy_from_slice(&[0, 0]);
    let sum = ip_checksum(&frame[ETH..ETH + ihl]);
    frame[ETH + 10..ETH + 12].copy_from_slice(&sum);
    // IPv4 allows "no UDP checksum"; recomputing it over the new pseudo-header buys nothing.
    frame[ETH + ihl + 6..ETH + ihl + 8].copy_from_slice(&[0, 0]);
}

/// One replay: which source, when it starts, and its client address block.
struct Replay {
    source: usize,
    start_ns: i64,
    ip_base: u32,
    next: usize,
    clients: Vec<Endpoint>,
}

fn plan(sources: &[Source], target_bytes: u64, lanes: usize) -> Vec<Replay> {
    let mut lane_end = vec![0i64; lanes];
    let stagger = LANE_STAGGER_NS.min(LANES_START_WITHIN_NS / lanes as i64);
    let mut replays = Vec::new();
    let mut total = 0u64;
    // 10.0.0.0/8, four addresses per replay (two-clients uses two).
    let mut ip_base = u32::from(Ipv4Addr::new(10, 0, 0, 4));
    while total < target_bytes {
        let source = replays.len() % sources.len();
        let lane = replays.len() % lanes;
        let start_ns = T0_NS + lane as i64 * stagger + lane_end[lane];
        lane_end[lane] += sources[source].duration_ns + GAP_NS;
        total += sources[source].bytes;
        replays.push(Replay {
            source,
            start_ns,
            ip_base,
            next: 0,
            clients: Vec::new(),
        });
        ip_base += 4;
    }
    replays
}

/// The most connections live at one time: every replay holds its session's clients from its
/// first packet to its last.
fn peak_connections(sources: &[Source], replays: &[Replay]) -> usize {
    let mut edges: Vec<(i64, i64)> = Vec::with_capacity(2 * replays.len());
    for r in replays {
        let s = &sources[r.source];
        let n = s.clients as i64;
        edges.push((r.start_ns, n));
        edges.push((r.start_ns + s.duration_ns, -n));
    }
    // Ends before starts at the same instant.
    edges.sort_unstable();
    let mut live = 0i64;
    let mut peak = 0i64;
    for (_, d) in edges {
        live += d;
        peak = peak.max(live);
    }
    peak as usize
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        bail!("usage: mkbench OUT.pcapng TARGET_MB [LANES]");
    }
    let target_mb: u64 = args[2].parse().context("TARGET_MB")?;
    let lanes: usize = args.get(3).map_or(Ok(16), |s| s.parse()).context("LANES")?;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut sources = SOURCES
        .iter()
        .map(|p| load(&root.join(p)))
        .collect::<Result<Vec<_>>>()?;
    if let Some(n) = std::env::var("MKBENCH_PACKETS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        for s in &mut sources {
            s.packets.truncate(n.max(1));
            s.duration_ns = s.packets.last().map_or(0, |p| p.t_ns);
            s.bytes = s.packets.iter().map(|p| p.data.len() as u64).sum();
        }
    }
    let mut replays = plan(&sources, target_mb << 20, lanes.max(1));
    let out = File::create(&args[1]).with_context(|| args[1].clone())?;
    let mut w = PcapNgWriter::new(BufWriter::with_capacity(1 << 20, out))?;
    // Merge all replays in time order: (next packet time, replay) in a min-heap.
    let mut heap: BinaryHeap<Reverse<(i64, usize)>> = replays
        .iter()
        .enumerate()
        .map(|(i, r)| Reverse((r.start_ns, i)))
        .collect();
    let mut frames = 0u64;
    let mut buf = Vec::new();
    while let Some(Reverse((ts, i))) = heap.pop() {
        let r = &mut replays[i];
        let src = &sources[r.source];
        let p = &src.packets[r.next];
        buf.clear();
        buf.extend_from_slice(&p.data);
        rewrite(&mut buf, src.server, &mut r.clients, r.ip_base);
        w.write_packet(LinkType(1), ts, &buf, p.orig_len)?;
        frames += 1;
        r.next += 1;
        if let Some(n) = src.packets.get(r.next) {
            heap.push(Reverse((r.start_ns + n.t_ns, i)));
        }
    }
    w.finish()?;
    eprintln!(
        "mkbench: {} replays in {lanes} lanes, {frames} frames, at most {} connections at once -> {}",
        replays.len(),
        peak_connections(&sources, &replays),
        args[1]
    );
    Ok(())
}
