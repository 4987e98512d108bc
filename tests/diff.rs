//! Issue 15: `diff` — semantic comparison of captures and demos.
mod q3common;
mod skip;
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};

use q3common::{cap, shared, Q3_CAPTURES};
use quakecap::diff::{self, Difference, Kind, Side};
use quakecap::pipeline::{self, Event, Options, Report, Sink};
use quakecap::q3::bits::{BitReader, BitWriter};
use quakecap::q3::delta::{write_delta_entity, EntityState};
use quakecap::q3::state::ClientState;
use quakecap::q3::svc::{emit, parse_server_message, Gamestate, ServerOp};
use quakecap::sink::demo::{DemoOptions, DemoSink, MemoryDemos};

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("quakecap-diff-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// Write the demos of a capture as `quakecap demo` does (both games).
fn written_demos(capture: &Path) -> BTreeMap<u32, Vec<u8>> {
    let mut sink = DemoSink::new(MemoryDemos::default(), DemoOptions::default());
    let o = Options {
        keep_raw: true,
        ..Default::default()
    };
    pipeline::run_capture(capture, &o, &mut sink, &mut |_| {}).unwrap();
    // A flow's last map (its parts in order, each replacing the one before).
    let files = sink.into_output().files;
    files
        .into_iter()
        .map(|((flow, _), (b, _))| (flow, b))
        .collect()
}

fn run(a: &Path, b: &Path) -> diff::Outcome {
    diff::diff_files(a, b, &diff::Options::default())
        .unwrap_or_else(|e| panic!("{} vs {}: {e}", a.display(), b.display()))
}

fn show(o: &diff::Outcome) -> Vec<&Difference> {
    o.differences.iter().take(5).collect()
}

/// Each client's own demo against the demo quakecap writes from the capture for the same
/// connection: the same over the span both cover, for every stored capture of both games.
#[test]
fn client_demo_equals_written_demo_for_every_capture() {
    // (folder, client demo, flow of that client's connection)
    let mut cases: Vec<(String, String, u32)> = Vec::new();
    for f in Q3_CAPTURES {
        for d in q3common::client_demos(f) {
            let name = d.file_name().unwrap().to_string_lossy().to_string();
            cases.push((
                f.to_string(),
                name.clone(),
                q3common::client_number(&d) as u32,
            ));
        }
    }
    for (f, d, flow) in [
        ("qw-basic", "client1-demo0.qwd", 2),
        ("qw-noext", "client1-demo0.qwd", 2),
        ("qw-impaired", "client1-demo0.qwd", 2),
        ("qw-impaired", "client2-demo0.qwd", 3),
        ("qw-mapchange-reconnect", "client1-demo0.qwd", 2),
        ("qw-mapchange-reconnect", "client2-demo0.qwd", 3),
    ] {
        cases.push((f.into(), d.into(), flow));
    }
    let mut compared = 0;
    for (folder, demo, flow) in &cases {
        let written = written_demos(&cap(&format!("{folder}/capture.pcapng")));
        let ext = demo.rsplit_once('.').unwrap().1;
        // Quake 3 flow ids of clients are 1 and 2 in these captures.
        let bytes = &written[flow];
        let out = tmp(&format!("{folder}-{flow}.{ext}"));
        std::fs::write(&out, bytes).unwrap();
        let o = run(&cap(&format!("{folder}/{demo}")), &out);
        assert!(o.same, "{folder}/{demo}: {:?}", show(&o));
        assert!(
            o.compared > 200,
            "{folder}/{demo}: only {} compared",
            o.compared
        );
        compared += o.compared;
    }
    assert_eq!(cases.len(), 14);
    assert!(compared > 10_000, "{compared}");
}

/// Accepted messages' sequences per (player, direction), as the decoders give them.
#[derive(Default)]
struct Seqs {
    seqs: BTreeMap<(u32, &'static str), BTreeSet<i64>>,
}
impl Sink for Seqs {
    fn event(&mut self, e: Event<'_>) -> io::Result<()> {
        match e {
            Event::Q3(m) if m.kind != "oob" => {
                self.seqs
                    .entry((m.flow, m.dir.as_str()))
                    .or_default()
                    .insert(i64::from(m.seq.unwrap()));
            }
            Event::Qw(m)
                if !m.connectionless
                    && m.netchan == Some(quakecap::qw::NetchanStatus::Accepted)
                    && m.ops
                        .iter()
                        .any(|o| !matches!(o.name(), "svc_nop" | "svc_download")) =>
            {
                self.seqs
                    .entry((m.flow, m.dir.as_str()))
                    .or_default()
                    .insert(m.seq.unwrap());
            }
            _ => {}
        }
        Ok(())
    }
}

fn seqs_by_player(path: &Path) -> BTreeMap<(String, &'static str), BTreeSet<i64>> {
    let mut s = Seqs::default();
    let o = Options {
        detail: quakecap::pipeline::Detail::Full,
        ..Default::default()
    };
    let report: Report = pipeline::run_capture(path, &o, &mut s, &mut |_| {}).unwrap();
    let name = |flow: u32| {
        let f = report.flows.iter().find(|f| f.id == flow).unwrap();
        f.name.clone().unwrap_or_default().to_lowercase()
    };
    s.seqs
        .into_iter()
        .map(|((flow, dir), v)| ((name(flow), dir), v))
        .collect()
}

/// The client-side capture against the server side: exactly the messages the path lost
/// (sequences accepted on one side only, inside the span the other covers), nothing else.
fn lost_only(dir: &Path) {
    let a = dir.join("capture.pcapng");
    let b = dir.join("server-side.pcapng");
    let (sa, sb) = (seqs_by_player(&a), seqs_by_player(&b));
    let mut want = BTreeSet::new();
    for (key, va) in &sa {
        let Some(vb) = sb.get(key) else { continue };
        let inside = |v: &BTreeSet<i64>, s: i64| *v.first().unwrap() < s && s < *v.last().unwrap();
        for s in va.difference(vb).filter(|s| inside(vb, **s)) {
            want.insert((key.0.clone(), key.1, *s, "b"));
        }
        for s in vb.difference(va).filter(|s| inside(va, **s)) {
            want.insert((key.0.clone(), key.1, *s, "a"));
        }
    }
    let o = diff::diff_files(
        &a,
        &b,
        &diff::Options {
            keep: usize::MAX,
            ..Default::default()
        },
    )
    .unwrap();
    let mut got = BTreeSet::new();
    for d in &o.differences {
        assert_eq!(
            (d.kind, d.what.as_str()),
            (Kind::Missing, "message"),
            "{d:?}"
        );
        let player = d.conn.rsplit_once('#').unwrap().0.to_lowercase();
        let side = if d.side == Some(Side::A) { "a" } else { "b" };
        got.insert((player, d.dir.as_str(), d.seq, side));
    }
    assert_eq!(o.total as usize, got.len());
    assert_eq!(got, want, "{}", dir.display());
    let lost_s2c = want.iter().filter(|w| w.1 == "s2c" && w.3 == "a").count();
    assert!(lost_s2c > 10, "{lost_s2c}");
    assert!(!o.same);
}

#[test]
fn q3_impaired_client_side_lacks_exactly_what_the_path_lost() {
    lost_only(&cap("q3-impaired"));
}

#[test]
fn qw_netquality_client_side_lacks_exactly_what_the_path_lost() {
    let dir = shared("captures/qw-netquality");
    if !dir.exists() {
        panic!("missing {}", dir.display());
    }
    lost_only(&dir);
}

/// Write a gamestate op (the test's own encoder, through quakecap's bit and delta writers).
fn write_gamestate(w: &mut BitWriter, g: &Gamestate, cs_edit: Option<(u16, &str)>) {
    w.write_byte(2);
    w.write_long(g.server_command_seq);
    for c in &g.configstrings {
        w.write_byte(3);
        w.write_short(c.index as i16);
        match cs_edit {
            Some((i, v)) if i == c.index => w.write_big_string(v),
            _ => w.write_big_string(&c.value),
        }
    }
    let zero = EntityState::default();
    for b in &g.baselines {
        w.write_byte(4);
        write_delta_entity(
            w,
            quakecap::q3::protocol::Protocol::q3(),
            &zero,
            Some(&b.state),
            true,
        );
    }
    w.write_byte(8);
    w.write_long(g.client_num);
    w.write_long(g.checksum_feed);
}

/// A client demo re-written through `q3::demo::Writer` with every snapshot full, and four
/// edits: one configstring, one entity field of one snapshot, one server command removed,
/// one snapshot dropped. `diff` finds exactly those, at their sequence and serverTime.
#[test]
fn edited_demo_shows_exactly_the_edits() {
    let src = cap("q3-basic/client1-demo0.dm_68");
    let data = std::fs::read(&src).unwrap();
    let mut st = ClientState::default();
    let mut out = quakecap::q3::demo::Writer::new(Vec::new());
    let mut baselines = quakecap::q3::baselines::Baselines::default();
    let mut expect = Vec::new();
    let mut cmd_removed = false;
    for (i, rec) in quakecap::q3::demo::Reader::new(&data).enumerate() {
        let rec = rec.unwrap();
        let m = parse_server_message(&mut BitReader::new(rec.body), None, rec.seq, &mut st);
        assert!(m.error.is_none());
        let time = m.ops.iter().find_map(|o| match o {
            ServerOp::Snapshot(s) => Some(s.server_time as i64),
            _ => None,
        });
        let mut w = BitWriter::new();
        emit::ack(&mut w, m.ack);
        for op in &m.ops {
            match op {
                ServerOp::Gamestate(g) => {
                    for b in &g.baselines {
                        baselines.set(b.state.number as usize, &b.state);
                    }
                    let edit = (i == 0).then_some((0u16, "\\edited\\1"));
                    if edit.is_some() {
                        let old = &g.configstrings.iter().find(|c| c.index == 0).unwrap().value;
                        expect.push((
                            Kind::Changed,
                            None,
                            rec.seq,
                            "configstring 0".to_string(),
                            Some(old.clone()),
                        ));
                    }
                    write_gamestate(&mut w, g, edit);
                }
                ServerOp::ServerCommand { seq, text, .. } => {
                    if i >= 50 && !cmd_removed {
                        cmd_removed = true;
                        expect.push((
                            Kind::Missing,
                            Some(Side::B),
                            rec.seq,
                            format!("server command {seq}"),
                            Some(text.clone()),
                        ));
                        continue;
                    }
                    emit::server_command(
                        &mut w,
                        quakecap::q3::protocol::Protocol::q3(),
                        *seq,
                        text,
                    );
                }
                ServerOp::Snapshot(s) => {
                    if i == 200 {
                        expect.push((
                            Kind::Missing,
                            Some(Side::B),
                            rec.seq,
                            "snapshot".into(),
                            None,
                        ));
                        continue;
                    }
                    let mut frame = (*s.frame).clone();
                    if i == 100 {
                        let e = &mut frame.entities[0];
                        let v = f32::from_bits(e.fields[1] as u32) + 8.5;
                        e.fields[1] = v.to_bits() as i32;
                        expect.push((
                            Kind::Changed,
                            None,
                            rec.seq,
                            format!("entity {} pos.trBase[0]", e.number),
                            None,
                        ));
                    }
                    emit::full_snapshot(
                        &mut w,
                        quakecap::q3::protocol::Protocol::q3(),
                        &frame,
                        &baselines,
                    );
                }
                ServerOp::Eof { .. } => emit::eof(&mut w),
                other => panic!("op {other:?} in this demo"),
            }
        }
        // The expected game time: the record's own snapshot (record 0 has none).
        for e in expect.iter_mut().filter(|e| e.2 == rec.seq) {
            if e.4.is_none() {
                e.4 = time.map(|t| t.to_string());
            }
        }
        out.record(rec.seq, &w.finish()).unwrap();
    }
    assert!(cmd_removed);
    let edited = tmp("edited.dm_68");
    std::fs::write(&edited, out.finish().unwrap()).unwrap();
    let o = run(&src, &edited);
    assert!(!o.same);
    let got: Vec<(Kind, Option<Side>, i64, String)> = o
        .differences
        .iter()
        .map(|d| (d.kind, d.side, d.seq, d.what.clone()))
        .collect();
    let mut want: Vec<(Kind, Option<Side>, i64, String)> = expect
        .iter()
        .map(|e| (e.0, e.1, i64::from(e.2), e.3.clone()))
        .collect();
    let mut got_sorted = got.clone();
    got_sorted.sort_by_key(|g| (g.2, g.3.clone()));
    want.sort_by_key(|g| (g.2, g.3.clone()));
    assert_eq!(got_sorted, want, "{:?}", o.differences);
    // Game times: snapshot edits carry their snapshot's serverTime.
    for d in &o.differences {
        if d.what == "snapshot" || d.what.starts_with("entity") {
            let e = expect
                .iter()
                .find(|e| i64::from(e.2) == d.seq && e.3 == d.what)
                .unwrap();
            assert_eq!(d.game_time.map(|t| t.to_string()), e.4, "{d:?}");
        }
    }
    // The same demo against itself re-encoded without edits would be "same": the original
    // against the original is.
    assert!(run(&src, &src).same);
}

/// One UDP datagram of a capture: (source, destination, payload), in capture order.
type Udp = (std::net::SocketAddr, std::net::SocketAddr, Vec<u8>);

fn udp_of(path: &Path) -> Vec<Udp> {
    use quakecap::capture::CaptureReader;
    use quakecap::net::NetDecoder;
    let mut r = CaptureReader::open(path).unwrap();
    let mut net = NetDecoder::new();
    let mut out = Vec::new();
    while let Some(f) = r.next_frame().unwrap() {
        if let Some(d) = net.decode(&f).unwrap() {
            out.push((d.src, d.dst, d.payload.to_vec()));
        }
    }
    out
}

/// One line of the relay's log (udp-impair.py `--log`): what the path did to a datagram.
struct Relayed {
    t: f64,
    up: bool,
    client: String,
    len: usize,
    /// Milliseconds of each copy sent (none when dropped, two when duplicated).
    delays: Vec<f64>,
}

fn relay_log(path: &Path) -> Vec<Relayed> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            Relayed {
                t: v["t"].as_f64().unwrap(),
                up: v["dir"] == "up",
                client: v["client"].as_str().unwrap().to_string(),
                len: v["len"].as_u64().unwrap() as usize,
                delays: v["delays"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| d.as_f64().unwrap())
                    .collect(),
            }
        })
        .collect()
}

/// Netchan sequence of a datagram (None for connectionless ones), and whether it is a Quake 3
/// fragment.
fn netchan_seq(p: &[u8], qw: bool) -> Option<(i64, bool)> {
    if p.len() < 4 || p.starts_with(&[0xff; 4]) {
        return None;
    }
    let w = u32::from_le_bytes(p[..4].try_into().unwrap());
    Some((i64::from(w & 0x7fff_ffff), !qw && w >> 31 != 0))
}

/// The netchan messages the path lost, per the relay's own log and the two captures: each
/// datagram the relay logs is the next one of that client and direction on the sending
/// side's capture (lengths checked). The sequences the log says were dropped (no copy sent)
/// must be exactly those sent and never seen on the receiving side's capture; the receiver
/// takes a sequence when it arrives above every one before it (`Netchan_Process` drops stale
/// and duplicated sequences), so a message is lost when dropped or overtaken. Returns
/// (dir, seq, side lacking it) with a count each, and the Quake 3 fragmented sequences, left
/// out (a message of several datagrams).
#[allow(clippy::type_complexity)]
fn relay_losses(
    dir: &Path,
    qw: bool,
) -> (
    BTreeMap<(&'static str, i64, &'static str), usize>,
    BTreeSet<i64>,
) {
    use std::net::SocketAddr;
    let client_side = udp_of(&dir.join("capture.pcapng"));
    let server_side = udp_of(&dir.join("server-side.pcapng"));
    let log = relay_log(&dir.join("impair.jsonl"));
    let qport_at = if qw { 8 } else { 4 };
    // The server: where the relay's upstream sockets send (the most frequent destination).
    let mut dsts: BTreeMap<SocketAddr, usize> = BTreeMap::new();
    for (_, d, _) in &server_side {
        *dsts.entry(*d).or_default() += 1;
    }
    let server = *dsts.iter().max_by_key(|(_, n)| **n).unwrap().0;
    let relay_clients: BTreeSet<SocketAddr> =
        log.iter().filter_map(|l| l.client.parse().ok()).collect();
    // Client → qport (client side) and upstream socket → qport (server side).
    let qports = |udp: &[Udp], from: &dyn Fn(&SocketAddr, &SocketAddr) -> bool| {
        let mut m: BTreeMap<SocketAddr, u16> = BTreeMap::new();
        for (s, d, p) in udp {
            if from(s, d) && netchan_seq(p, qw).is_some() && p.len() >= qport_at + 2 {
                m.entry(*s)
                    .or_insert(u16::from_le_bytes([p[qport_at], p[qport_at + 1]]));
            }
        }
        m
    };
    let client_qport = qports(&client_side, &|s, _| relay_clients.contains(s));
    let upstream_qport = qports(&server_side, &|_, d| *d == server);
    let mut lost = BTreeMap::new();
    let mut fragmented = BTreeSet::new();
    for (client, qport) in &client_qport {
        let key = client.to_string();
        let upstream = |a: &SocketAddr| upstream_qport.get(a) == Some(qport);
        for up in [true, false] {
            // What the relay received (sending side) and what the receiver saw, in order.
            let (sent, seen): (Vec<&Vec<u8>>, Vec<&Vec<u8>>) = if up {
                (
                    client_side
                        .iter()
                        .filter(|u| u.0 == *client)
                        .map(|u| &u.2)
                        .collect(),
                    server_side
                        .iter()
                        .filter(|u| u.1 == server && upstream(&u.0))
                        .map(|u| &u.2)
                        .collect(),
                )
            } else {
                (
                    server_side
                        .iter()
                        .filter(|u| u.0 == server && upstream(&u.1))
                        .map(|u| &u.2)
                        .collect(),
                    client_side
                        .iter()
                        .filter(|u| u.1 == *client)
                        .map(|u| &u.2)
                        .collect(),
                )
            };
            let lines: Vec<&Relayed> = log
                .iter()
                .filter(|l| l.client == key && l.up == up)
                .collect();
            // Down: replies to an upstream socket that never carried this client's netchan
            // (the handshake before a rebind) are not in `sent`; they come first.
            let lines = &lines[lines.len().saturating_sub(sent.len())..];
            assert_eq!(lines.len(), sent.len(), "{key} up={up}");
            let mut all = BTreeSet::new();
            let mut dropped = BTreeSet::new();
            for (l, p) in lines.iter().zip(&sent) {
                assert_eq!(l.len, p.len(), "{key} up={up} at t={}", l.t);
                match netchan_seq(p, qw) {
                    Some((seq, true)) => {
                        fragmented.insert(seq);
                    }
                    // A QuakeWorld message of its header alone carries nothing to lack.
                    Some((_, false)) if qw && p.len() <= if up { 10 } else { 8 } => {}
                    Some((seq, false)) => {
                        all.insert(seq);
                        if l.delays.is_empty() {
                            dropped.insert(seq);
                        }
                    }
                    None => {}
                }
            }
            let mut arrived = BTreeSet::new();
            let mut taken = BTreeSet::new();
            let mut last = i64::MIN;
            for p in &seen {
                let Some((seq, false)) = netchan_seq(p, qw) else {
                    continue;
                };
                arrived.insert(seq);
                if seq > last {
                    last = seq;
                    taken.insert(seq);
                }
            }
            // Sent sequences that never arrived: dropped, and only those (a sequence sent
            // twice by its sender is lost only if every copy was).
            let never: BTreeSet<i64> = all.difference(&arrived).copied().collect();
            let dropped_all: BTreeSet<i64> = dropped
                .iter()
                .filter(|s| {
                    lines
                        .iter()
                        .zip(&sent)
                        .filter(|(_, p)| netchan_seq(p, qw) == Some((**s, false)))
                        .all(|(l, _)| l.delays.is_empty())
                })
                .copied()
                .collect();
            assert_eq!(
                never, dropped_all,
                "{key} up={up}: never arrived vs dropped"
            );
            let (dir, side) = if up { ("c2s", "b") } else { ("s2c", "a") };
            let (Some(&first), Some(&end)) = (taken.first(), taken.last()) else {
                continue;
            };
            for s in all.difference(&taken).filter(|&&s| first < s && s < end) {
                *lost.entry((dir, *s, side)).or_default() += 1;
            }
        }
    }
    (lost, fragmented)
}

/// `diff` of the client-side capture against the server side reports as missing exactly the
/// messages the relay's own log says the path lost (dropped, or overtaken by a later one).
fn relay_truth(dir: &Path, qw: bool) {
    let (want, fragmented) = relay_losses(dir, qw);
    let o = diff::diff_files(
        &dir.join("capture.pcapng"),
        &dir.join("server-side.pcapng"),
        &diff::Options {
            keep: usize::MAX,
            ..Default::default()
        },
    )
    .unwrap();
    let mut got: BTreeMap<(&'static str, i64, &'static str), usize> = BTreeMap::new();
    for d in &o.differences {
        assert_eq!(
            (d.kind, d.what.as_str()),
            (Kind::Missing, "message"),
            "{d:?}"
        );
        if !qw && d.dir == quakecap::flow::Dir::S2c && fragmented.contains(&d.seq) {
            continue;
        }
        let side = if d.side == Some(Side::A) { "a" } else { "b" };
        *got.entry((d.dir.as_str(), d.seq, side)).or_default() += 1;
    }
    let only_got: Vec<_> = got
        .iter()
        .filter(|(k, v)| want.get(*k) != Some(v))
        .collect();
    let only_want: Vec<_> = want
        .iter()
        .filter(|(k, v)| got.get(*k) != Some(v))
        .collect();
    assert!(
        only_got.is_empty() && only_want.is_empty(),
        "{}: diff only {only_got:?}; relay only {only_want:?}",
        dir.display()
    );
    let lost_s2c: usize = want.iter().filter(|w| w.0 .0 == "s2c").map(|w| w.1).sum();
    println!(
        "{}: {} messages lost on the path ({lost_s2c} server messages), as diff reports",
        dir.display(),
        want.values().sum::<usize>()
    );
    assert!(lost_s2c > 10, "{lost_s2c}");
}

#[test]
fn qw_netquality_diff_matches_the_relay_log() {
    let dir = shared("captures/qw-netquality");
    if !dir.join("impair.jsonl").exists() {
        return skip::data(&dir.join("impair.jsonl"));
    }
    relay_truth(&dir, true);
}

/// A recorded session too big to store (e.g. the one-hour Quake 3 session of README's
/// performance section), when `QUAKECAP_LONG_SESSION` names its folder.
#[test]
fn long_session_diff_matches_the_relay_log() {
    let Some(dir) = std::env::var_os("QUAKECAP_LONG_SESSION").map(PathBuf::from) else {
        return skip::unavailable("QUAKECAP_LONG_SESSION, a recorded session too big to store");
    };
    relay_truth(&dir, false);
}

/// A client demo has no client direction: against its capture, the capture's client messages
/// wait for nothing. With a window far smaller than the session (as an hour-long capture is
/// to the default window), they must neither starve the capture's reading nor push the demo's
/// messages out as missing: still "same", every demo message compared.
#[test]
fn small_window_demo_against_capture_stays_same() {
    let dir = cap("q3-basic");
    let demo = dir.join("client1-demo0.dm_68");
    let capture = dir.join("capture.pcapng");
    let full = run(&demo, &capture);
    assert!(full.same, "{:?}", show(&full));
    let small = diff::diff_files(
        &demo,
        &capture,
        &diff::Options {
            window: 32,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(full.compared > 200, "{}", full.compared);
    assert!(small.same, "{:?}", show(&small));
    assert_eq!(small.compared, full.compared);
}
