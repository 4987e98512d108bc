//! Issue 7: every .qwd the writer makes plays to its end in the real ezQuake.
//! Needs the lab (shared/lab/qw/playback.sh, Debian packages ezquake xvfb libgl1-mesa-dri), so
//! it is ignored by default: `cargo test --test qw_playback -- --ignored --nocapture`.
//! Results on 2026-11-22 (ezQuake 3.6.1), next to the client's own demo of the connection:
//!   qw-basic flow 2                 frames 1901   (client1-demo0.qwd, recorded from later on: 1718)
//!   qw-noext flow 2                 frames 2229   (client1-demo0.qwd: 1987)
//!   qw-mapchange-reconnect flow 2   frames 1487   (client1-demo0.qwd: 808)
//!   qw-mapchange-reconnect flow 3   frames 1436   (client2-demo0.qwd: 1329)
//!   qw-mapchange-reconnect flow 6   frames 748    (no client demo: after the reconnect)
//!   qw-mapchange-reconnect flow 7   frames 314    (no client demo: after the new connect)
//!   qw-impaired flow 2              frames 3619   (client1-demo0.qwd, recorded from later on: 1971)
//!   qw-impaired flow 3              frames 2281   (client2-demo0.qwd: 2131)
//!   qw-impaired server-side flow 2  frames 3059   (from the server's tap; lost reliables left out)
//!   qw-impaired server-side flow 3  frames 1954
mod qw_common;
use quakecap::qw::{self, qwd};
use std::path::Path;
use std::process::Command;

const PLAYBACK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/lab/qw/playback.sh");

#[test]
#[ignore]
fn written_demos_play_in_ezquake() {
    let script = std::env::var("QW_PLAYBACK").unwrap_or_else(|_| PLAYBACK.to_string());
    assert!(Path::new(&script).exists(), "no {script}");
    let odir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("qwd-play");
    std::fs::create_dir_all(&odir).unwrap();
    for (dir, cap) in [
        ("qw-basic", "capture.pcapng"),
        ("qw-noext", "capture.pcapng"),
        ("qw-mapchange-reconnect", "capture.pcapng"),
        ("qw-impaired", "capture.pcapng"),
        ("qw-impaired", "server-side.pcapng"),
    ] {
        let opts = qw::Options {
            decode: false,
            keep_raw: true,
        };
        let run = qw_common::run_capture_file(dir, cap, opts);
        let mut w = qwd::Writers::new();
        for e in &run.events {
            w.push(e);
        }
        for (flow, data) in w.finish() {
            let f = odir.join(format!("{dir}-{cap}-flow{flow}.qwd"));
            std::fs::write(&f, data).unwrap();
            let out = Command::new(&script).arg(&f).output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            println!("{dir} {cap} flow {flow}: {}", text.trim());
            assert!(
                out.status.success() && text.starts_with("frames "),
                "{dir} {cap} flow {flow}: {text}"
            );
        }
    }
}
