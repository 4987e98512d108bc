//! Issue 7: every .qwd and .mvd of the qw-* captures decodes without errors, in step with
//! ezQuake's own `cl_shownet 2` trace (`DEMO.shownet.txt`, made by shared/lab/qw/playback.sh):
//! the same svc ops at the same offsets in the same order, message by message.
mod qw_common;
use qw_common::check_against_trace;

fn check(dir: &str, demo: &str) {
    let path = qw_common::path(dir, demo);
    let data = std::fs::read(&path).unwrap();
    check_against_trace(
        demo,
        &data,
        &qw_common::path(dir, &format!("{demo}.shownet.txt")),
    );
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

#[test]
fn qw_impaired_demos_match_shownet() {
    check("qw-impaired", "client1-demo0.qwd");
    check("qw-impaired", "client2-demo0.qwd");
    check("qw-impaired", "server-demo0.mvd");
}

/// A demo is decoded block by block and each message handed on at once (the pass over a
/// long .mvd holds none of them): a taker that stops after `n` messages has seen exactly `n`,
/// and the summary counts only the blocks read, where the whole file has many more.
#[test]
fn demos_stream_their_messages_and_stop_when_asked() {
    for demo in ["server-demo0.mvd", "client1-demo0.qwd"] {
        let data = std::fs::read(qw_common::path("qw-basic", demo)).unwrap();
        let mut all = Vec::new();
        let whole = quakecap::qw::decode_demo_file(demo, &data, &mut all);
        let blocks = whole[0].packets.c2s + whole[0].packets.s2c;
        assert!(blocks > 100, "{demo}: {blocks} blocks");
        let (mut seen, stop_at) = (0u64, 40);
        let part = quakecap::qw::decode_demo_stream(demo, &data, &mut |m| {
            seen += 1;
            assert_eq!(m.frame, seen, "{demo}: blocks in order");
            seen < stop_at
        });
        assert_eq!(seen, stop_at, "{demo}");
        assert_eq!(part[0].packets.c2s + part[0].packets.s2c, stop_at, "{demo}");
        assert_eq!(all.len() as u64, blocks, "{demo}");
    }
}
