//! The flow pass parses server messages with `Detail::StateOnly` (no op records). It must
//! leave the client in exactly the state the full parse does, with the same errors, or the
//! flow table would drift from `decode`. Checked on every stored demo (the repo's and, when
//! present, ../shared/demos/q3, which includes damaged ones).
use std::path::{Path, PathBuf};

use quakecap::q3::bits::BitReader;
use quakecap::q3::demo::Reader;
use quakecap::q3::state::ClientState;
use quakecap::q3::svc::{parse_server_message_with, Detail, ServerOp};

fn demos() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join("captures"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    dirs.push(root.join("../shared/demos/q3"));
    dirs.push(PathBuf::from("/work/shared/demos/q3"));
    let mut files: Vec<PathBuf> = dirs
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| e.starts_with("dm_"))
        })
        // The large ones add time, not cases (the test also runs unoptimized in CI).
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.len() < 1 << 20))
        .collect();
    let mut seen = std::collections::HashSet::new();
    files.retain(|p| seen.insert(p.file_name().map(|n| n.to_owned())));
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
    assert!(!files.is_empty(), "the repo's captures hold demos");
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
