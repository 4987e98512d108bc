//! Issue 7: every .qwd and .mvd of the qw-* captures decodes without errors, in step with
//! ezQuake's own `cl_shownet 2` trace (`DEMO.shownet.txt`, made by shared/lab/qw/playback.sh):
//! the same svc ops at the same offsets in the same order, message by message.
use quakecap::qw::{self, Event, Message};

/// One traced message: (offset, svc name) per op, and the message size (absent for a last
/// message cut short by the end of the demo, e.g. the .mvd's final svc_disconnect).
type Traced = (Vec<(usize, String)>, Option<usize>);

fn read_trace(path: &str) -> Vec<Traced> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out: Vec<Traced> = Vec::new();
    let mut cur: Option<Vec<(usize, String)>> = None;
    for line in text.lines() {
        if line.starts_with("------------------") {
            cur = Some(Vec::new());
            continue;
        }
        let Some((off, name)) = line.trim().split_once(':') else {
            continue;
        };
        let off: usize = off.trim().parse().unwrap();
        if name == "END OF MESSAGE" {
            out.push((cur.take().unwrap_or_default(), Some(off)));
        } else if let Some(c) = cur.as_mut() {
            c.push((off, name.to_string()));
        }
    }
    if let Some(c) = cur.filter(|c| !c.is_empty()) {
        out.push((c, None));
    }
    out
}

/// playback.sh keeps only trace lines matching `^ *[0-9]+:(svc_|nq_svc_|END OF MESSAGE|BAD)`
/// or `^ *[0-9]+:[a-z_]+$`; ezQuake names ids past its table "NEW PROTOCOL" (e.g.
/// svc_fte_spawnbaseline2), which that filter drops.
fn kept_by_trace_filter(name: &str) -> bool {
    name.starts_with("svc_")
        || name.starts_with("nq_svc_")
        || name.starts_with("BAD")
        || name.chars().all(|c| c.is_ascii_lowercase() || c == '_')
}

/// The messages ezQuake traces: .qwd accepted netchan dem_reads; .mvd every block but
/// dem_multiple and dem_set.
fn traced_messages(name: &str, events: &[Event]) -> Vec<Message> {
    let mvd = name.ends_with(".mvd");
    events
        .iter()
        .filter_map(|e| match e {
            Event::Message(m) => Some(m),
            _ => None,
        })
        .filter(|m| {
            if mvd {
                matches!(m.block, Some("read" | "single" | "stats" | "all"))
            } else {
                m.block == Some("read")
                    && !m.connectionless
                    && m.netchan == Some(qw::NetchanStatus::Accepted)
            }
        })
        .cloned()
        .collect()
}

fn check(dir: &str, demo: &str) {
    let path = format!("{}/captures/{dir}/{demo}", env!("CARGO_MANIFEST_DIR"));
    let data = std::fs::read(&path).unwrap();
    let mut ev = Vec::new();
    let sums = qw::decode_demo_file(demo, &data, &mut ev);
    assert_eq!(sums.len(), 1);
    assert_eq!(sums[0].errors, 0, "{demo}: {:?}", sums[0].error_details);
    let trace = read_trace(&format!("{path}.shownet.txt"));
    let msgs = traced_messages(demo, &ev);
    assert_eq!(msgs.len(), trace.len(), "{demo}: number of traced messages");
    for (i, (m, (ops, size))) in msgs.iter().zip(&trace).enumerate() {
        let got: Vec<(usize, String)> = m
            .ops
            .iter()
            .filter(|o| kept_by_trace_filter(o.name()))
            .map(|o| (o.at, o.name().to_string()))
            .collect();
        assert_eq!(&got, ops, "{demo}: message {i} (block {})", m.frame);
        if let Some(size) = size {
            assert_eq!(
                m.size, *size,
                "{demo}: size of message {i} (block {})",
                m.frame
            );
        }
    }
}

#[test]
fn qw_basic_client_qwd_matches_shownet() {
    check("qw-basic", "client1-demo0.qwd");
}
#[test]
fn qw_basic_server_mvd_matches_shownet() {
    check("qw-basic", "server-demo0.mvd");
}
#[test]
fn qw_noext_client_qwd_matches_shownet() {
    check("qw-noext", "client1-demo0.qwd");
}
#[test]
fn qw_noext_server_mvd_matches_shownet() {
    check("qw-noext", "server-demo0.mvd");
}
#[test]
fn qw_mapchange_client1_qwd_matches_shownet() {
    check("qw-mapchange-reconnect", "client1-demo0.qwd");
}
#[test]
fn qw_mapchange_client2_qwd_matches_shownet() {
    check("qw-mapchange-reconnect", "client2-demo0.qwd");
}
#[test]
fn qw_mapchange_server_mvds_match_shownet() {
    check("qw-mapchange-reconnect", "server-demo0.mvd");
    check("qw-mapchange-reconnect", "server-demo1.mvd");
}
