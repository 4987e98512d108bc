//! The flow pass parses server messages with `Detail::StateOnly` (no op records). It must
//! leave the client in exactly the state the full parse does, with the same errors, or the
//! flow table would drift from `decode`. Checked on every stored demo (the repo's and, when
//! present, ../shared/demos/q3, which includes damaged ones; a missing one is reported).
use std::path::{Path, PathBuf};

mod skip;

use quakecap::q3::bits::BitReader;
use quakecap::q3::demo::Reader;
use quakecap::q3::state::ClientState;
use quakecap::q3::svc::{parse_server_message_with, Detail, ServerOp};

/// The demo files of `dir` (below 1 MB: the large ones add time, not cases, and the test
/// also runs unoptimized).
fn demos_in(dir: &Path) -> Vec<PathBuf> {
    demos_in_below(dir, 1 << 20)
}

/// The demo files of `dir` smaller than `limit` bytes.
fn demos_in_below(dir: &Path, limit: u64) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| e.starts_with("dm_"))
        })
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.len() < limit))
        .collect();
    files.sort();
    files
}

/// The client demos of every capture folder of the repository, then those of
/// ../shared/demos/q3 below 1 MB (19 of its 24) when it is there.
fn demos() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut folders: Vec<PathBuf> = std::fs::read_dir(root.join("captures"))
        .expect("captures/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    // Each real client of a Quake 3 session left its console log and its demos (a folder may
    // hold neither: only what its tests read).
    let quake3 = |d: &&PathBuf| {
        std::fs::read_to_string(d.join("SETTINGS")).is_ok_and(|s| s.contains("PROTO="))
    };
    for d in folders.iter().filter(quake3) {
        let names: Vec<String> = std::fs::read_dir(d)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        let all = demos_in_below(d, u64::MAX);
        for log in names
            .iter()
            .filter(|n| n.starts_with("client") && n.ends_with(".log"))
        {
            let client = log.trim_end_matches(".log");
            let prefix = format!("{client}-demo");
            assert!(
                all.iter().any(|p| p
                    .file_name()
                    .is_some_and(|f| f.to_string_lossy().starts_with(&prefix))),
                "{}: {log} but no demo of {client}",
                d.display()
            );
        }
    }
    let mut files: Vec<PathBuf> = folders.iter().flat_map(|d| demos_in(d)).collect();
    assert!(!files.is_empty(), "client demos below 1 MB in captures/");
    let shared = root.join("../shared/demos/q3");
    if shared.is_dir() {
        let more = demos_in(&shared);
        assert_eq!(more.len(), 19, "demos below 1 MB in {}", shared.display());
        files.extend(more);
    } else {
        skip::data(&shared);
    }
    files
}

/// What the client keeps, in a comparable form.
fn kept(st: &ClientState) -> String {
    let slots: Vec<_> = st
        .history()
        .map(|s| (s.valid, s.message_num, s.ents.len()))
        .collect();
    let frames: Vec<_> = st.history().map(|s| st.snap_frame(s)).collect();
    format!(
        "{slots:?} {} {:?} {:?} {} {} {} {}",
        frames.len(),
        st.configstrings,
        st.baselines,
        st.parse_entities_num,
        st.last_snap_num,
        st.server_command_seq,
        st.download_block
    )
}

#[test]
fn state_only_parse_keeps_the_same_state_and_errors() {
    let files = demos();
    for path in files {
        let data = std::fs::read(&path).expect("readable demo");
        let (mut full, mut lean) = (ClientState::default(), ClientState::default());
        for rec in Reader::new(&data).flatten() {
            let mut r = BitReader::new(rec.body);
            let a = parse_server_message_with(&mut r, None, rec.seq, &mut full, Detail::Full);
            let mut r = BitReader::new(rec.body);
            let b = parse_server_message_with(&mut r, None, rec.seq, &mut lean, Detail::StateOnly);
            assert_eq!(a.error, b.error, "{} record {}", path.display(), rec.index);
            assert_eq!(a.ack, b.ack);
            assert!(b.ops.is_empty());
            // A valid snapshot's record is the frame the history now holds.
            for op in &a.ops {
                if let ServerOp::Snapshot(s) = op {
                    if s.valid {
                        let held = full.slot(s.frame.message_num).map(|h| full.snap_frame(h));
                        assert_eq!(held.as_ref(), Some(&*s.frame), "record {}", rec.index);
                    }
                }
            }
            // The newest frame on the way, the whole state at the end.
            let newest = |st: &ClientState| {
                format!(
                    "{:?}",
                    st.slot(st.last_snap_num)
                        .map(|s| (s.valid, st.snap_frame(s)))
                )
            };
            assert_eq!(
                newest(&full),
                newest(&lean),
                "{} record {}",
                path.display(),
                rec.index
            );
        }
        assert_eq!(kept(&full), kept(&lean), "{}", path.display());
        let frames = |st: &ClientState| -> Vec<_> {
            st.history().map(|s| (s.valid, st.snap_frame(s))).collect()
        };
        assert!(frames(&full) == frames(&lean), "{}", path.display());
        truncated_bodies_fail_alike(&data);
    }
}

/// Cut every record short at a few places: both parses must stop with the same error.
fn truncated_bodies_fail_alike(data: &[u8]) {
    let (mut full, mut lean) = (ClientState::default(), ClientState::default());
    for rec in Reader::new(data).flatten().take(400) {
        for cut in [
            rec.body.len() / 3,
            rec.body.len() / 2,
            rec.body.len() * 5 / 6,
        ] {
            let body = &rec.body[..cut];
            let (mut f, mut l) = (full.clone(), lean.clone());
            let a = parse_server_message_with(
                &mut BitReader::new(body),
                None,
                rec.seq,
                &mut f,
                Detail::Full,
            );
            let b = parse_server_message_with(
                &mut BitReader::new(body),
                None,
                rec.seq,
                &mut l,
                Detail::StateOnly,
            );
            assert_eq!(a.error, b.error, "record {} cut at {cut}", rec.index);
        }
        let mut r = BitReader::new(rec.body);
        parse_server_message_with(&mut r, None, rec.seq, &mut full, Detail::Full);
        let mut r = BitReader::new(rec.body);
        parse_server_message_with(&mut r, None, rec.seq, &mut lean, Detail::StateOnly);
    }
}
