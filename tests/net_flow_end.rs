//! A connection's end (its decoder lets it go after 200 s of silence: `Event::FlowEnd`)
//! finishes it in every sink that keeps per-connection state, not the end of the input:
//! `net` and `report` (accumulations), `events` (extractors), `demo` (open Quake 3 files,
//! QuakeWorld .qwd in memory). Before, each stayed to the end: on a capture of 1,640
//! sessions one after another (the benchmark's) `net` took 75 MB and `report` 165 MB
//! against 14 MB for `flows`, ten times the file took ten times the memory, and `demo`
//! failed on the open-file limit. And a connection's time bins are bounded by its packets,
//! so hostile timestamps cannot make them follow the span.
//!
//! The truth here is a real session alone: replayed many times one after another, each
//! replay must be reported exactly as the session once, while what is held at any time
//! stays that of the sessions live at once.
use std::path::Path;

use quakecap::analysis::net::{NetQuality, NetSink};
use quakecap::flood::{repeat_session, repeat_session_same_client};
use quakecap::pipeline::{self, Event, Options, Report, Sink};
use quakecap::sink::demo::{DemoOptions, DemoSink, MemoryDemos};
use quakecap::sink::events::EventSink;
use serde_json::Value;

/// Replays start this far apart: the stored sessions last under a minute, so each is silent
/// for well over the 200 s idle release (and the 10 s between idle scans) before the next.
const SPACING_NS: i64 = 300_000_000_000;
const REPLAYS: usize = 8;

/// The report's two analyses, watched: what they are handed and what they hold.
struct Probe {
    net: NetSink,
    events: EventSink,
    /// The game events as before flow ends: never told one, every extractor finishes at
    /// the end of the input.
    events_at_end: EventSink,
    /// Most accumulations held at once.
    most_open: usize,
    /// Most game-event extractors held at once.
    most_extractors: usize,
    /// Flows told ended, in order.
    ended: Vec<u32>,
    /// Samples that came for a flow after its end (a broken promise of the event).
    late: Vec<u32>,
    /// Flows whose summary says they were decoded mid-session (a note of that kind).
    mid_session: Vec<u32>,
}

impl Sink for Probe {
    fn event(&mut self, e: Event<'_>) -> std::io::Result<()> {
        match e {
            Event::NetSample(s) if self.ended.contains(&s.flow) => self.late.push(s.flow),
            Event::FlowEnd(f) => self.ended.push(f.id),
            _ => {}
        }
        self.net.event(e)?;
        self.events.event(e)?;
        if !matches!(e, Event::FlowEnd(_)) {
            self.events_at_end.event(e)?;
        }
        self.most_open = self.most_open.max(self.net.open());
        self.most_extractors = self.most_extractors.max(self.events.open());
        Ok(())
    }
    fn finish(&mut self, r: &Report) -> std::io::Result<()> {
        use quakecap::error::ErrorKind;
        self.mid_session = r
            .flows
            .iter()
            .filter(|f| {
                f.error_details
                    .iter()
                    .any(|e| e.kind == ErrorKind::MidSession)
            })
            .map(|f| f.id)
            .collect();
        self.net.finish(r)?;
        self.events.finish(r)?;
        self.events_at_end.finish(r)
    }
}

/// What `quakecap report` asks of the pass (on one thread).
fn report_options() -> Options {
    Options {
        detail: quakecap::pipeline::Detail::Events,
        samples: true,
        threads: Some(1),
        ..Options::default()
    }
}

fn run(bytes: Vec<u8>, name: &str) -> Probe {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("net_flow_end");
    std::fs::create_dir_all(&dir).unwrap();
    // Tests run in parallel and some run the same session: a file of each call's own.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = dir.join(format!("{n}-{name}"));
    std::fs::write(&path, bytes).unwrap();
    let opts = report_options();
    let mut p = Probe {
        net: NetSink::new(1.0),
        events: EventSink::new(),
        events_at_end: EventSink::new(),
        most_open: 0,
        most_extractors: 0,
        ended: Vec::new(),
        late: Vec::new(),
        mid_session: Vec::new(),
    };
    pipeline::run_capture(&path, &opts, &mut p, &mut |_| {}).expect("capture reads");
    let _ = std::fs::remove_file(path);
    p
}

/// A report without what differs between replays: the flow id and the capture times.
fn timeless(q: &NetQuality) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                for k in ["flow", "first_time", "last_time", "start", "end"] {
                    m.remove(k);
                }
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v = serde_json::to_value(q).unwrap();
    strip(&mut v);
    v
}

/// The analyses of `base`'s session alone (as the replays start it: from its getchallenge).
fn alone(base: &str) -> Probe {
    let once = repeat_session(&capture(base), usize::MAX, 1, 0).unwrap();
    run(once, &format!("{base}-once.pcapng"))
}

fn capture(base: &str) -> Vec<u8> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::read(root.join(format!("captures/{base}/capture.pcapng"))).expect("stored capture")
}

/// The session of `base` replayed [`REPLAYS`] times from new addresses: each replay's report
/// is the session's own, each connection ends before the next starts, and no accumulation
/// outlives its connection's end.
fn check_sessions_one_after_another(base: &str) {
    let cap = capture(base);
    let once = alone(base);
    assert_eq!(once.net.reports.len(), 1, "{base}: one connection");
    let want = timeless(&once.net.reports[0]);
    assert!(
        once.net.reports[0].ping.median.is_some(),
        "{base}: the session measures a ping"
    );
    let many = run(
        repeat_session(&cap, usize::MAX, REPLAYS, SPACING_NS).unwrap(),
        &format!("{base}-many.pcapng"),
    );
    let r = &many.net.reports;
    assert_eq!(r.len(), REPLAYS, "{base}: one report per session");
    for (k, q) in r.iter().enumerate() {
        assert_eq!(timeless(q), want, "{base}: session {k}");
    }
    assert!(
        r.windows(2).all(|w| w[0].flow < w[1].flow),
        "{base}: reports in flow order"
    );
    // Every session but the last ends (is released) before the input does; so do the
    // queries and handshakes around them (their flows have no report).
    let flows: Vec<u32> = r.iter().map(|q| q.flow).collect();
    let ended: Vec<u32> = many
        .ended
        .iter()
        .copied()
        .filter(|f| flows.contains(f))
        .collect();
    assert_eq!(
        ended,
        flows[..REPLAYS - 1],
        "{base}: connections told ended"
    );
    assert!(many.late.is_empty(), "{base}: samples after the end");
    assert_eq!(many.most_open, 1, "{base}: accumulations held at once");
    // The game events: finishing each connection's extractor at its end gives exactly
    // what finishing them all at the end of the input gives, and the extractors went.
    let json = |e: &EventSink| serde_json::to_value(&e.events).unwrap();
    assert!(
        !many.events.events.is_empty(),
        "{base}: the sessions have game events"
    );
    assert_eq!(
        json(&many.events),
        json(&many.events_at_end),
        "{base}: game events"
    );
    // As many as the session alone holds (QuakeWorld: its query and handshake flows too).
    assert_eq!(
        many.most_extractors, once.most_extractors,
        "{base}: extractors held at once"
    );
}

#[test]
fn quake3_sessions_one_after_another_are_each_reported_and_freed_at_their_end() {
    check_sessions_one_after_another("q3-basic");
}

#[test]
fn quakeworld_sessions_one_after_another_are_each_reported_and_freed_at_their_end() {
    check_sessions_one_after_another("qw-basic");
}

/// The session twice from the same client address and port, 300 s apart: the client left
/// and came back with a new handshake, a new flow (as `flows` shows), reported as the
/// session alone.
fn check_client_back(base: &str) {
    let cap = capture(base);
    let want = timeless(&alone(base).net.reports[0]);
    let twice = run(
        repeat_session_same_client(&cap, usize::MAX, 2, SPACING_NS).unwrap(),
        &format!("{base}-back.pcapng"),
    );
    let r = &twice.net.reports;
    assert_eq!(r.len(), 2, "{base}: one report per session");
    assert_ne!(r[0].flow, r[1].flow, "{base}: a new flow");
    for q in r {
        assert_eq!(timeless(q), want, "{base}: flow {}", q.flow);
    }
    assert!(r[0].last_time + 200.0 < r[1].first_time, "{base}: in order");
    assert_eq!(twice.most_open, 1, "{base}: accumulations held at once");
}

#[test]
fn a_quake3_client_back_from_the_same_address_is_a_new_connection() {
    check_client_back("q3-basic");
}

#[test]
fn a_quakeworld_client_back_from_the_same_address_is_a_new_connection() {
    check_client_back("qw-basic");
}

/// `quakecap demo` on many sessions one after another, with fewer open files allowed than
/// there are sessions: each demo is closed at its connection's end, so all are written, each
/// byte for byte the session's own. Before, every Quake 3 demo stayed open to the end of the
/// input and the run failed on the open-file limit (`Too many open files`), writing none;
/// every QuakeWorld .qwd stayed in memory to the end (a day's capture: gigabytes).
fn check_demos_one_after_another(base: &str) {
    let cap = capture(base);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("net_flow_end_demos_{base}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let demos = |name: &str, bytes: Vec<u8>| {
        let input = dir.join(format!("{name}.pcapng"));
        std::fs::write(&input, bytes).unwrap();
        let out = dir.join(name);
        std::fs::create_dir_all(&out).unwrap();
        // Hard and soft limit: the process cannot raise it back.
        let run = std::process::Command::new("sh")
            .arg("-c")
            .arg(r#"ulimit -n 24 && exec "$0" demo --out-dir "$1" "$2""#)
            .arg(env!("CARGO_BIN_EXE_quakecap"))
            .arg(&out)
            .arg(&input)
            .output()
            .expect("run quakecap under sh");
        assert!(
            run.status.success(),
            "{base} {name}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let name = e.file_name().to_string_lossy().into_owned();
                (name, std::fs::read(e.path()).unwrap())
            })
            .collect();
        files.sort();
        files
    };
    let once = demos("once", repeat_session(&cap, usize::MAX, 1, 0).unwrap());
    assert_eq!(once.len(), 1, "{base}: the session's demo");
    let count = 40;
    let many = demos(
        "many",
        repeat_session(&cap, usize::MAX, count, SPACING_NS).unwrap(),
    );
    assert_eq!(many.len(), count, "{base}: one demo per session");
    assert!(
        many.iter().all(|d| d.1 == once[0].1),
        "{base}: each the session's demo"
    );
    // The client back from the same address: a new connection, a demo of its own.
    let back = demos(
        "back",
        repeat_session_same_client(&cap, usize::MAX, 2, SPACING_NS).unwrap(),
    );
    let names: Vec<&str> = back.iter().map(|d| d.0.as_str()).collect();
    assert_eq!(back.len(), 2, "{base}: one demo per session: {names:?}");
    assert!(back.iter().all(|d| d.1 == once[0].1), "{base}: {names:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The demo writer fed a capture, watched: the most demos it held at once.
struct DemoProbe {
    demos: DemoSink<MemoryDemos>,
    most_open: usize,
}

impl Sink for DemoProbe {
    fn event(&mut self, e: Event<'_>) -> std::io::Result<()> {
        self.demos.event(e)?;
        self.most_open = self.most_open.max(self.demos.open());
        Ok(())
    }
    fn finish(&mut self, r: &Report) -> std::io::Result<()> {
        self.demos.finish(r)
    }
}

/// Most demos held at once, and the demos written, for a capture's bytes.
fn demos_held(bytes: Vec<u8>, name: &str) -> (usize, usize) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("net_flow_end");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    // What `quakecap demo` asks for.
    let opts = Options {
        keep_raw: true,
        threads: Some(1),
        ..Options::default()
    };
    let mut p = DemoProbe {
        demos: DemoSink::new(MemoryDemos::default(), DemoOptions::default()),
        most_open: 0,
    };
    pipeline::run_capture(&path, &opts, &mut p, &mut |_| {}).expect("capture reads");
    let _ = std::fs::remove_file(path);
    (p.most_open, p.demos.into_output().files.len())
}

#[test]
fn demos_are_held_only_while_their_connection_lives() {
    for base in ["q3-basic", "qw-basic"] {
        let cap = capture(base);
        let many = repeat_session(&cap, usize::MAX, REPLAYS, SPACING_NS).unwrap();
        let (held, written) = demos_held(many, &format!("{base}-demos.pcapng"));
        assert_eq!(written, REPLAYS, "{base}: one demo per session");
        assert_eq!(held, 1, "{base}: demos held at once");
    }
}

#[test]
fn quake3_demos_of_sessions_one_after_another_close_at_each_connections_end() {
    check_demos_one_after_another("q3-basic");
}

#[test]
fn quakeworld_demos_of_sessions_one_after_another_are_written_at_each_connections_end() {
    check_demos_one_after_another("qw-basic");
}

/// A real session whose packets, from the 200th on, each come 150 s after the one before
/// (hostile or damaged timestamps; never the 200 s of silence that end a connection): its
/// span is three days, its packets a few thousand. The network analysis keeps at most one
/// time bin per packet past its first 68 minutes: the series stops there, said in
/// `binned_until`, while every packet is still counted. Before, the bins followed the span
/// (508,000 of them: `net` took 157 MB for this 200 KB capture, 8 MB now; a larger capture
/// reached gigabytes).
#[test]
fn a_few_packets_over_days_cannot_make_the_series_grow_with_the_span() {
    let mut k = 0u64;
    let mut netchan = 0u64;
    let bytes = rewrite("q3-basic", |i, payload| {
        k += 1;
        // The handshake's connectionless packets are no network samples.
        netchan += u64::from(payload.is_some_and(|p| !p.starts_with(&[0xff; 4])));
        Some(i.saturating_sub(199) as i64 * 150_000_000_000)
    });
    let p = run(bytes, "stretched.pcapng");
    let r = &p.net.reports;
    assert_eq!(r.len(), 1, "one connection, never silent 200 s");
    let q = &r[0];
    let span = q.last_time - q.first_time;
    assert!(span > 2.0 * 86_400.0, "days long: {span} s");
    let until = q.binned_until.expect("the series stops");
    let binned = until - q.first_time;
    // One bin (half a second) per packet past the free 8,192.
    assert!(
        binned < (8192.0 + k as f64) * 0.5 + 1.0,
        "binned for {binned} s"
    );
    assert!(
        q.series.len() as f64 <= binned + 2.0,
        "{} entries",
        q.series.len()
    );
    // Every packet still counted: rates over the whole span.
    let counted = (q.client_packet_rate + q.server_packet_rate) * span.max(1e-3);
    assert!(
        (counted - netchan as f64).abs() < 0.5,
        "{counted} of {netchan} netchan packets"
    );
}

/// A capture whose timestamps go back now and then (damaged, or merged from clocks that
/// disagree): q3-basic with every 97th frame from the 300th on stamped 10 s early. A round
/// trip ending at such a frame would end before it began: no sample is taken, so no
/// interval's ping is negative, and `report` draws every plot. Before, the series took the
/// negative round trips into their means (the histograms refused them), and a plot of such
/// a value overflowed plotters' pixel arithmetic: `report` panicked (found by the
/// `analyses` fuzz target: a mean ping of -15,856,423,635 ms).
#[test]
fn timestamps_that_go_back_give_no_negative_ping_and_the_report_draws() {
    let bytes = rewrite("q3-basic", |k, _| {
        Some(if k >= 300 && k % 97 == 0 {
            -10_000_000_000
        } else {
            0
        })
    });
    let p = run(bytes.clone(), "backwards.pcapng");
    let r = &p.net.reports;
    assert_eq!(r.len(), 1);
    let pings: Vec<f64> = r[0]
        .series
        .iter()
        .flat_map(|i| [i.ping, i.ping_max])
        .flatten()
        .collect();
    assert!(pings.len() > 20, "{} pings", pings.len());
    assert!(
        pings.iter().all(|&v| v >= 0.0),
        "negative pings: {:?}",
        pings.iter().filter(|&&v| v < 0.0).collect::<Vec<_>>()
    );
    let page = report_html(bytes, "backwards");
    assert_eq!(page.matches("<section class=\"player\"").count(), 1);
    assert_eq!(
        page.matches("<div class=\"plot\">").count(),
        6,
        "the player's plots"
    );
}

/// `quakecap report` of capture `bytes` (written as `<name>-report.pcapng`, removed after):
/// the HTML, after asserting the command succeeded (exit 0).
fn report_html(bytes: Vec<u8>, name: &str) -> String {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("net_flow_end");
    std::fs::create_dir_all(&dir).unwrap();
    let (input, html) = (
        dir.join(format!("{name}-report.pcapng")),
        dir.join(format!("{name}.html")),
    );
    std::fs::write(&input, bytes).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_quakecap"))
        .arg("report")
        .arg(&input)
        .arg("-o")
        .arg(&html)
        .output()
        .expect("run quakecap report");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    let _ = std::fs::remove_file(input);
    let _ = std::fs::remove_file(html);
    page
}

/// The stored session's frames `range`, those from frame `gap_at` on `gap_ns` later.
fn frames_of(base: &str, range: std::ops::Range<usize>, gap_at: usize, gap_ns: i64) -> Vec<u8> {
    rewrite(base, |k, _| {
        range
            .contains(&k)
            .then_some(if k >= gap_at { gap_ns } else { 0 })
    })
}

/// The stored session of `base` rewritten: `shift(frame number from 0, UDP payload)` gives
/// the nanoseconds to add to the frame's time, or None to leave it out.
fn rewrite(base: &str, mut shift: impl FnMut(usize, Option<&[u8]>) -> Option<i64>) -> Vec<u8> {
    use quakecap::capture::{CaptureReader, PcapNgWriter};
    let cap = capture(base);
    let mut reader = CaptureReader::new(std::io::Cursor::new(&cap[..])).unwrap();
    let mut w = PcapNgWriter::new(Vec::new()).unwrap();
    let mut net = quakecap::net::NetDecoder::new();
    let mut k = 0;
    while let Some(f) = reader.next_frame().unwrap() {
        let payload = net.decode(&f).ok().flatten().map(|d| d.payload.to_vec());
        if let Some(dt) = shift(k, payload.as_deref()) {
            w.write_packet(f.link, f.ts_ns + dt, f.data, f.orig_len)
                .unwrap();
        }
        k += 1;
    }
    w.finish().unwrap()
}

/// A Quake 3 connection silent for 300 s in the middle (past the 200 s after which both
/// engines drop the peer) that then resumes on the same flow, without a new handshake: one
/// report per stretch, the first exactly the session cut at the silence, the second with the
/// path figures of the frames after it alone (a capture starting there), and a report
/// section per stretch with an id of its own. Before, one report spanned both with the
/// silence inside.
#[test]
fn a_connection_that_resumes_after_its_end_is_reported_per_stretch() {
    let base = "q3-basic";
    let (cut, end) = (1000, usize::MAX);
    let gap = run(frames_of(base, 0..end, cut, SPACING_NS), "resumed.pcapng");
    let before = run(frames_of(base, 0..cut, cut, 0), "before.pcapng");
    let after = run(frames_of(base, cut..end, cut, 0), "after.pcapng");
    let r = &gap.net.reports;
    assert_eq!(r.len(), 2, "one report per stretch");
    assert_eq!(r[0].flow, r[1].flow, "one flow");
    assert_eq!(gap.ended, [r[0].flow], "the flow ended once");
    assert!(before.mid_session.is_empty());
    assert_eq!(
        gap.mid_session,
        [r[0].flow],
        "the flow's row notes the resumption"
    );
    assert!(r[0].last_time + 200.0 < r[1].first_time, "in order");
    assert_eq!(
        timeless(&r[0]),
        timeless(&before.net.reports[0]),
        "first stretch"
    );
    // The second stretch's path figures are those of the frames alone, and it is decoded
    // again as a capture starting there is (mid-session): the same usercmds, and at least
    // the snapshots that capture decodes (the flow still knows its challenge, so it locks
    // on sooner). Before, its decode state stayed released: nothing was decoded.
    let (a, b) = (timeless(&r[1]), timeless(&after.net.reports[0]));
    for k in [
        "bytes_per_second",
        "client_packet_rate",
        "server_packet_rate",
        "loss",
        "loss_method",
        "duplicates",
        "reordered",
        "vantage",
        "lag_events",
    ] {
        assert_eq!(a[k], b[k], "second stretch: {k}");
    }
    for k in ["median", "p95", "max"] {
        assert_eq!(a["ping"][k], b["ping"][k], "second stretch: ping {k}");
    }
    for k in ["fps", "usercmds_per_packet", "rate_delayed"] {
        assert!(b[k].is_number(), "the frames alone decode: {k}");
        assert_eq!(a[k], b[k], "second stretch: {k}");
    }
    let rate = |v: &Value| v["snapshot_rate"].as_f64().unwrap_or(0.0);
    assert!(
        rate(&a) >= rate(&b) && rate(&b) > 15.0,
        "second stretch: snapshots decoded, {} against {}",
        rate(&a),
        rate(&b)
    );
    // The HTML report: a section per stretch, each with an id of its own.
    let text = report_html(frames_of(base, 0..end, cut, SPACING_NS), "resumed");
    let ids: Vec<&str> = text
        .split("<section class=\"player\" id=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .collect();
    let flow = r[0].flow;
    assert_eq!(ids, [format!("flow-{flow}"), format!("flow-{flow}-2")]);
}

/// What `quakecap report` holds of an ended connection is its report's head: the series
/// and the lagometer strip go to a scratch file as the connection ends and come back when
/// its section is written. The report of sessions one after another (every one but the
/// last ended mid-input, so spooled) must be byte for byte the one rendered from memory,
/// and nothing of the scratch file may be left beside it.
fn check_report_from_the_spool(base: &str) {
    let bytes = repeat_session(&capture(base), usize::MAX, REPLAYS, SPACING_NS).unwrap();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("net_flow_end")
        .join(format!("spool-{base}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("many.pcapng");
    std::fs::write(&input, &bytes).unwrap();
    // From memory, with the report's own analyses and options.
    struct Both(NetSink, EventSink);
    impl Sink for Both {
        fn event(&mut self, e: Event<'_>) -> std::io::Result<()> {
            self.0.event(e)?;
            self.1.event(e)
        }
        fn finish(&mut self, r: &Report) -> std::io::Result<()> {
            self.0.finish(r)?;
            self.1.finish(r)
        }
    }
    let opts = report_options();
    let max = quakecap::sink::nethtml::MAX_POINTS;
    let mut both = Both(
        NetSink::new(1.0).with_strip().with_max_points(max),
        EventSink::new(),
    );
    let r = pipeline::run_capture(&input, &opts, &mut both, &mut |_| {}).expect("capture reads");
    let reports = &both.0.reports;
    assert_eq!(reports.len(), REPLAYS, "{base}: one report per session");
    assert!(
        reports
            .iter()
            .all(|q| !q.series.is_empty() && q.strip.as_ref().is_some_and(|s| !s.cols.is_empty())),
        "{base}: every report has a series and a strip to spool"
    );
    let mut want = Vec::new();
    let name = Path::new(&r.file).file_name().unwrap().to_string_lossy();
    let one = quakecap::sink::nethtml::Input {
        name: &name,
        flows: &r.flows,
        aggregates: &r.aggregates,
        rows: reports,
        events: &both.1.events,
        cheats: None,
    };
    quakecap::sink::nethtml::render_to(&mut want, &[one], &quakecap::sink::nethtml::Clock::utc())
        .unwrap();
    let html = dir.join("r.html");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_quakecap"))
        .arg("report")
        .args(["--time", "utc"])
        .arg(&input)
        .arg("-o")
        .arg(&html)
        .env("QUAKECAP_THREADS", "1")
        .output()
        .expect("run quakecap report");
    assert_eq!(out.status.code(), Some(0), "{base}: report exits 0");
    let got = std::fs::read(&html).unwrap();
    assert!(
        got == want,
        "{base}: the report from the spool differs from the one from memory"
    );
    let mut left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["many.pcapng", "r.html"], "{base}: files left");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn quake3_report_from_the_spool_is_the_report_from_memory() {
    check_report_from_the_spool("q3-basic");
}

#[test]
fn quakeworld_report_from_the_spool_is_the_report_from_memory() {
    check_report_from_the_spool("qw-basic");
}
