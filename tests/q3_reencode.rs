//! The delta writers against real servers: every server message of a demo, as the pipeline
//! decoded it, is written again with `write_delta_entity` / `write_delta_playerstate` (from
//! the states the client held) and must give the recorded bytes back. The client demos of
//! `captures/` always run; the real player demos of `../shared/demos/q3` when present.
mod q3common;
mod skip;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use q3common::{cap, client_demos, decode, demo_records, shared, Q3_CAPTURES};
use quakecap::q3::bits::BitWriter;
use quakecap::q3::delta::{write_delta_entity, write_delta_playerstate, EntityState, FieldChange};
use quakecap::q3::protocol::Protocol;
use quakecap::q3::state::SnapFrame;
use quakecap::q3::svc::{emit, Gamestate, ServerMessage, ServerOp, Snapshot};

/// Fields the writer had to be told were changed, see [`server_from`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Patches {
    /// The client's old and new value are both (+)0: the server had -0.0 on one side.
    sign_of_zero: usize,
    /// Non-zero: the client decoded against a different base than the server used (a stale
    /// ring slot after lost messages, which the engine also marks invalid).
    stale_base: usize,
}

/// What re-encoding one demo gave.
#[derive(Debug, Default, PartialEq, Eq)]
struct Outcome {
    /// Messages written again byte for byte.
    identical: usize,
    /// Messages the pipeline reported an error for (not re-encoded).
    failed: usize,
    patches: Patches,
}

/// The server compares its own states bit-wise, and it can hold `-0.0` where the client only
/// ever sees `+0.0` (both travel as "zero" / the 13-bit 0); and after lost messages the client
/// may decode against a stale base. A field the server sent although the client's old and new
/// values are identical must have differed on the server: flip a bit of the client's old value
/// so the writer makes the same decision.
fn server_from(from: &mut [i32], to: &[i32], changes: &[FieldChange], p: &mut Patches) {
    for c in changes {
        let i = c.index as usize;
        if from[i] == to[i] {
            if to[i] == 0 {
                p.sign_of_zero += 1;
            } else {
                p.stale_base += 1;
            }
            from[i] ^= i32::MIN;
        }
    }
}

/// The client state the writer needs: baselines and the snapshot ring. A delta reads
/// `snapshots[deltaNum & 31]` whether or not that slot still holds the base the server used
/// (`CL_ParseSnapshot` only marks the result invalid), so the ring slot is the base here too.
struct Client {
    proto: &'static Protocol,
    baselines: HashMap<i32, EntityState>,
    ring: HashMap<i32, Arc<SnapFrame>>,
    patches: Patches,
}

impl Client {
    fn gamestate(&mut self, w: &mut BitWriter, g: &Gamestate) {
        self.baselines.clear();
        self.ring.clear();
        w.write_byte(2);
        w.write_long(g.server_command_seq);
        for cs in &g.configstrings {
            w.write_byte(3);
            w.write_short(cs.index as i16);
            if self.proto.utf8 {
                w.write_big_string_utf8(&cs.value);
            } else {
                w.write_big_string(&cs.value);
            }
        }
        for b in &g.baselines {
            w.write_byte(4);
            let zero = EntityState::zeroed(b.state.number);
            write_delta_entity(w, self.proto, &zero, Some(&b.state), true);
            self.baselines.insert(b.state.number, b.state.clone());
        }
        w.write_byte(8);
        w.write_long(g.client_num);
        w.write_long(g.checksum_feed);
    }

    fn baseline(&self, number: i32) -> EntityState {
        self.baselines
            .get(&number)
            .cloned()
            .unwrap_or_else(|| EntityState::zeroed(number))
    }

    fn snapshot(&mut self, w: &mut BitWriter, seq: i32, s: &Snapshot) {
        w.write_byte(7);
        w.write_long(s.server_time);
        w.write_byte(s.delta_num);
        w.write_byte(s.flags);
        w.write_byte(s.areamask.len() as u8);
        s.areamask.iter().for_each(|&b| w.write_byte(b));
        let old = (s.delta_num != 0)
            .then(|| {
                self.ring
                    .get(&((seq - i32::from(s.delta_num)) & 31))
                    .cloned()
            })
            .flatten();
        let mut server_old = old.as_ref().map(|o| o.ps.clone()).unwrap_or_default();
        let ps = &s.playerstate;
        server_from(
            &mut server_old.fields,
            &ps.state.fields,
            &ps.changes,
            &mut self.patches,
        );
        write_delta_playerstate(w, self.proto, Some(&server_old), &ps.state);
        let old_ents = old.as_ref().map_or(&[][..], |o| &o.entities[..]);
        for d in &s.entities {
            let number = d.state.number;
            let (from, force) = match old_ents.iter().find(|e| e.number == number) {
                Some(o) => (o.clone(), false),
                None => (self.baseline(number), true),
            };
            if d.removed {
                write_delta_entity(w, self.proto, &from, None, false);
                continue;
            }
            let mut server_from_state = from;
            server_from(
                &mut server_from_state.fields,
                &d.state.fields,
                &d.changes,
                &mut self.patches,
            );
            write_delta_entity(w, self.proto, &server_from_state, Some(&d.state), force);
        }
        w.write_bits(1023, 10);
        self.ring.insert(seq & 31, s.frame.clone());
    }

    /// The message written again from its decoded ops; `None` when it holds an op this test
    /// does not write (downloads, VoIP).
    fn message(&mut self, seq: i32, m: &ServerMessage) -> Option<(Vec<u8>, usize)> {
        let mut w = BitWriter::new();
        emit::ack(&mut w, m.ack);
        for op in &m.ops {
            match op {
                ServerOp::ServerCommand { seq, text, .. } => {
                    emit::server_command(&mut w, self.proto, *seq, text)
                }
                ServerOp::Gamestate(g) => self.gamestate(&mut w, g),
                ServerOp::Snapshot(s) => self.snapshot(&mut w, seq, s),
                ServerOp::Eof { .. } => emit::eof(&mut w),
                ServerOp::Nop { .. } => w.write_byte(1),
                ServerOp::Download(_) | ServerOp::Voip(_) => return None,
            }
        }
        let end = w.bit_pos();
        Some((w.finish(), end))
    }
}

/// The deliberately damaged demos of the shared corpus.
fn is_broken(p: &Path) -> bool {
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    name.starts_with("invalid_") || name == "truncated.dm_68"
}

/// Records in a demo file, counted by the demo reader alone (not the pipeline).
fn records(p: &Path) -> usize {
    let data = std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    demo_records(&data).len()
}

/// Decode `path` through the pipeline and write every server message again.
fn reencode(path: &Path) -> Outcome {
    let (_, msgs) = decode(path, true);
    let mut client = Client {
        proto: Protocol::of(msgs.first().map_or(68, |m| m.protocol)),
        baselines: HashMap::new(),
        ring: HashMap::new(),
        patches: Patches::default(),
    };
    let mut out = Outcome::default();
    for m in &msgs {
        let (Some(sm), Some(body), Some(seq)) = (m.server(), m.raw.as_deref(), m.seq) else {
            continue;
        };
        if m.error.is_some() || sm.error.is_some() {
            out.failed += 1;
            continue;
        }
        let Some((bytes, end)) = client.message(seq, sm) else {
            panic!(
                "{}: record {seq} holds an op not written here",
                path.display()
            );
        };
        assert_eq!(
            bytes.len(),
            body.len(),
            "{} record {seq}: length",
            path.display()
        );
        let first_diff = bytes.iter().zip(body).position(|(a, b)| a != b);
        // When the message ends on a byte boundary, cursize includes one byte the engine's
        // writer never touched: it holds whatever was left in the server's buffer.
        let stale_tail = (end % 8 == 0).then(|| body.len() - 1);
        assert!(
            first_diff.is_none() || first_diff == stale_tail,
            "{} record {seq}: first difference at byte {first_diff:?} of {}",
            path.display(),
            body.len()
        );
        out.identical += 1;
    }
    out.patches = client.patches;
    out
}

/// Every client demo of the stored captures, with the number of its records (as the demo
/// file holds them) and the sign-of-zero patches its server needed. No message was lost
/// before a demo's client, so no base is ever stale.
#[test]
fn client_demos_of_the_captures_reencode_byte_identical() {
    let want: [(&str, usize, usize); 8] = [
        ("q3-basic/client1-demo0.dm_68", 454, 2),
        ("q3-two-clients/client1-demo0.dm_68", 671, 0),
        ("q3-two-clients/client2-demo0.dm_68", 669, 0),
        ("q3-mapchange/client1-demo0.dm_68", 742, 0),
        ("q3-mapchange/client1-demo1.dm_68", 297, 0),
        ("q3-impaired/client1-demo0.dm_68", 648, 0),
        ("q3-proto71/client1-demo0.dm_71", 532, 0),
        ("q3-download/client1-demo0.dm_68", 645, 2),
    ];
    let demos: Vec<_> = Q3_CAPTURES.iter().flat_map(|f| client_demos(f)).collect();
    assert_eq!(demos.len(), want.len());
    for (rel, identical, sign_of_zero) in want {
        let got = reencode(&cap(rel));
        let patches = Patches {
            sign_of_zero,
            stale_base: 0,
        };
        let want = Outcome {
            identical,
            failed: 0,
            patches,
        };
        assert_eq!(got, want, "{rel}");
        assert_eq!(
            identical,
            records(&cap(rel)),
            "{rel}: one message per record"
        );
    }
}

/// The real player demos (1.32, ioq3, CPMA, OSP servers): every record the pipeline decodes
/// writes back identically. The four broken files are left to `shared_demos.rs`, which
/// checks the errors `../shared/demos/README.md` describes: after a lost gamestate the
/// client's bases are not the server's, so there is nothing exact to compare.
#[test]
fn shared_demos_reencode_byte_identical() {
    let dir = shared("demos/q3");
    let Ok(rd) = std::fs::read_dir(&dir) else {
        skip::data(&dir);
        return;
    };
    let mut paths: Vec<_> = rd
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "dm_68"))
        .collect();
    paths.sort();
    let mut checked = 0;
    for p in paths.iter().filter(|p| !is_broken(p)) {
        let got = reencode(p);
        eprintln!("{}: {got:?}", p.display());
        assert_eq!(got.failed, 0, "{}", p.display());
        assert_eq!(got.identical, records(p), "{}", p.display());
        checked += 1;
    }
    // 24 .dm_68 files in the corpus, four of them broken.
    assert_eq!(checked, 20);
}

/// Quake Live's demos (protocols 73, 90, 91) written again with their own field tables and
/// UTF-8 strings give every record back byte for byte: the tables and the string rule are
/// the ones its servers used. The truncated demo's last record is cut, the rest identical.
#[test]
fn quake_live_demos_reencode_byte_identical() {
    let dir = shared("demos/ql");
    let Ok(rd) = std::fs::read_dir(&dir) else {
        skip::data(&dir);
        return;
    };
    let mut paths: Vec<_> = rd
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x != "md"))
        .collect();
    paths.sort();
    let mut protocols = std::collections::BTreeSet::new();
    for p in &paths {
        let got = reencode(p);
        eprintln!("{}: {got:?}", p.display());
        assert_eq!(got.failed, 0, "{}", p.display());
        assert_eq!(got.identical, records(p), "{}", p.display());
        protocols.insert(p.extension().unwrap().to_string_lossy().to_string());
    }
    assert_eq!(paths.len(), 14);
    assert_eq!(protocols.len(), 3, "{protocols:?}");
}
