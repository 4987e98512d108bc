//! Both games through the one pipeline: every capture's flows go to the right game, each
//! datagram is counted once, and nothing fails to decode.
mod q3common;
use q3common::cap;
use quakecap::pipeline::{self, Options, Sink};

struct Nothing;
impl Sink for Nothing {}

#[test]
fn each_capture_goes_to_its_own_game_only() {
    let cases: [(&str, &str, u64); 10] = [
        ("q3-basic/capture.pcapng", "q3", 1893),
        ("q3-two-clients/capture.pcapng", "q3", 4410),
        ("q3-mapchange/capture.pcapng", "q3", 4131),
        ("q3-impaired/capture.pcapng", "q3", 2837),
        ("q3-impaired/server-side.pcapng", "q3", 2793),
        ("q3-proto71/capture.pcapng", "q3", 2005),
        ("q3-download/capture.pcapng", "q3", 2332),
        ("qw-basic/capture.pcapng", "qw", 3855),
        ("qw-noext/capture.pcapng", "qw", 4588),
        ("qw-mapchange-reconnect/capture.pcapng", "qw", 8352),
    ];
    for (rel, game, udp) in cases {
        let r = pipeline::run_capture(&cap(rel), &Options::default(), &mut Nothing, &mut |_| {})
            .unwrap();
        assert!(
            r.flows.iter().all(|f| f.game == game),
            "{rel}: {:?}",
            r.flows.iter().map(|f| (f.id, f.game)).collect::<Vec<_>>()
        );
        assert_eq!(
            r.flows.iter().map(|f| f.packets.total()).sum::<u64>(),
            udp,
            "{rel}"
        );
        assert!(r.flows.iter().all(|f| f.errors == 0), "{rel}");
        let ids: Vec<u32> = r.flows.iter().map(|f| f.id).collect();
        assert_eq!(
            ids,
            (1..=ids.len() as u32).collect::<Vec<_>>(),
            "{rel}: ids 1.. without gaps"
        );
    }
}
