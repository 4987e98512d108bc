//! Whole-demo check against the engine's own `cl_shownet 4` trace: a minimal message parser
//! (gamestate, server commands, snapshots with packet entities) drives the delta readers over
//! every record of the q3-basic demo and prints each line the way `CL_ParseServerMessage`,
//! `MSG_ReadDeltaEntity` and `MSG_ReadDeltaPlayerstate` do. Every line must match, except the
//! `#N` of non-removal entity lines, which the engine takes from a stale parse-ring slot.

use std::collections::HashMap;

use crate::q3::bits::demo_tests::{demo, records};
use crate::q3::bits::BitReader;
use crate::q3::cfloat::c_printf_f;
use crate::q3::delta::*;
use crate::q3::fields::{NetField, ENTITY_FIELDS, PLAYER_FIELDS};

/// The engine's `(N bits)`: f(end) - f(start) with f(b) = (b >> 3) * 8 + b (msg->bit is
/// absolute, readcount = (b >> 3) + 1).
fn engine_bits(start: usize, end: usize) -> usize {
    let f = |b: usize| (b >> 3) * 8 + b;
    f(end) - f(start)
}

fn fmt_changes(out: &mut String, changes: &[FieldChange], table: &[NetField]) {
    for c in changes {
        let name = table[c.index as usize].name;
        match c.enc {
            FieldEnc::Zero => {}
            FieldEnc::Int => out.push_str(&format!("{name}:{} ", c.value)),
            FieldEnc::Float => out.push_str(&format!(
                "{name}:{} ",
                c_printf_f(f32::from_bits(c.value as u32))
            )),
        }
    }
}

/// The engine prints nothing for the "no delta" path.
fn entity_line(d: &EntityDelta, number: i32) -> Option<String> {
    if d.removed {
        return Some(format!(
            "{:3}: #{:<3} remove",
            d.readcount_after_flag(),
            number
        ));
    }
    if !d.has_delta {
        return None;
    }
    let mut s = format!("{:3}: #?   ", d.readcount_after_flag());
    fmt_changes(&mut s, &d.changes, &ENTITY_FIELDS);
    s.push_str(&format!(" ({} bits)", engine_bits(d.start_bit, d.end_bit)));
    assert_eq!(d.shownet_bits(), engine_bits(d.start_bit, d.end_bit));
    Some(s)
}

fn shownet(r: &BitReader, what: &str) -> String {
    format!("{:3}:{what}", r.readcount() - 1)
}

#[derive(Clone)]
struct Snap {
    ps: PlayerState,
    ents: Vec<EntityState>,
}

fn normalize(line: &str) -> String {
    // "1776: #0   pos..." -> "1776: #?   pos..."; removal lines keep their (real) number.
    if line.ends_with(" remove") {
        return line.to_string();
    }
    match line.find(": #") {
        Some(i) => {
            // "%-3i ": the number padded to at least 3 columns, then one space.
            let rest = &line[i + 3..];
            let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            let skip = (digits.max(3) + 1).min(rest.len());
            format!("{}: #?   {}", &line[..i], &rest[skip..])
        }
        None => line.to_string(),
    }
}

fn parse_demo(demo: &[u8]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut baselines: HashMap<i32, EntityState> = HashMap::new();
    let mut snaps: HashMap<i32, Snap> = HashMap::new();
    for (seq, body) in records(demo) {
        let mut r = BitReader::new(body);
        r.read_long().expect("ack");
        loop {
            let op = r.read_byte().expect("op");
            match op {
                8 => {
                    lines.push(shownet(&r, "END OF MESSAGE"));
                    break;
                }
                2 => {
                    lines.push(shownet(&r, "svc_gamestate"));
                    baselines.clear();
                    snaps.clear();
                    r.read_long().expect("cmd seq");
                    loop {
                        match r.read_byte().expect("gs op") {
                            3 => {
                                r.read_short().expect("index");
                                r.read_big_string().expect("cs");
                            }
                            4 => {
                                let n = r.read_bits(10).expect("number");
                                let d = read_delta_entity(&mut r, &EntityState::zeroed(n), n)
                                    .expect("baseline");
                                lines.extend(entity_line(&d, n));
                                baselines.insert(n, d.state);
                            }
                            8 => break,
                            x => panic!("bad gamestate op {x}"),
                        }
                    }
                    r.read_long().expect("clientNum");
                    r.read_long().expect("checksumFeed");
                }
                5 => {
                    lines.push(shownet(&r, "svc_serverCommand"));
                    r.read_long().expect("seq");
                    r.read_string().expect("cmd");
                }
                7 => {
                    lines.push(shownet(&r, "svc_snapshot"));
                    r.read_long().expect("serverTime");
                    let delta_num = r.read_byte().expect("deltaNum");
                    r.read_byte().expect("flags");
                    let n = r.read_byte().expect("areamask len");
                    for _ in 0..n {
                        r.read_byte().expect("areamask");
                    }
                    let old = if delta_num == 0 {
                        None
                    } else {
                        snaps.get(&(seq - i32::from(delta_num))).cloned()
                    };
                    lines.push(shownet(&r, "playerstate"));
                    let pd = read_delta_playerstate(&mut r, old.as_ref().map(|o| &o.ps))
                        .expect("playerstate");
                    let mut s = format!("{:3}: playerstate ", pd.readcount_at_start());
                    fmt_changes(&mut s, &pd.changes, &PLAYER_FIELDS);
                    for (k, name) in ["PS_STATS", "PS_PERSISTANT", "PS_AMMO", "PS_POWERUPS"]
                        .iter()
                        .enumerate()
                    {
                        if pd.arrays[k] {
                            s.push_str(name);
                            s.push(' ');
                        }
                    }
                    s.push_str(&format!(
                        " ({} bits)",
                        engine_bits(pd.start_bit, pd.end_bit)
                    ));
                    lines.push(s);
                    lines.push(shownet(&r, "packet entities"));
                    let old_ents = old.map(|o| o.ents).unwrap_or_default();
                    let mut ents = Vec::new();
                    let mut oi = old_ents.iter().peekable();
                    loop {
                        let newnum = r.read_bits(10).expect("newnum");
                        if newnum == 1023 {
                            break;
                        }
                        while let Some(o) = oi.next_if(|o| o.number < newnum) {
                            ents.push(o.clone());
                        }
                        let from = match oi.next_if(|o| o.number == newnum) {
                            Some(o) => o.clone(),
                            None => baselines
                                .get(&newnum)
                                .cloned()
                                .unwrap_or_else(|| EntityState::zeroed(newnum)),
                        };
                        let d = read_delta_entity(&mut r, &from, newnum).expect("entity");
                        lines.extend(entity_line(&d, newnum));
                        if !d.removed {
                            ents.push(d.state);
                        }
                    }
                    ents.extend(oi.cloned());
                    snaps.insert(seq, Snap { ps: pd.state, ents });
                }
                x => panic!("unexpected op {x} in record {seq}"),
            }
        }
    }
    lines
}

#[test]
fn whole_demo_matches_engine_shownet_trace() {
    let Some(demo) = demo() else { return };
    let trace_path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/captures/q3-basic/client1-demo0.dm_68.shownet.txt");
    let Ok(trace) = std::fs::read_to_string(&trace_path) else {
        eprintln!("skipping: no trace at {}", trace_path.display());
        return;
    };
    let want: Vec<String> = trace.lines().map(normalize).collect();
    let got = parse_demo(&demo);
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "trace line {}", i + 1);
    }
    assert_eq!(got.len(), want.len());
    // The brief's anchor: the first baseline.
    assert_eq!(
        got[1],
        "1776: #?   pos.trDelta[2]:-240 eType:4 pos.trDuration:150 solid:16777215 modelindex:1  (219 bits)"
    );
}

/// Re-encode every record of the demo with the writers (as the server would have produced it
/// from the decoded states) and require byte-identical bodies.
#[test]
fn whole_demo_reencodes_byte_identical() {
    let Some(demo) = demo() else { return };
    let (checked, patches) = match reencode_check(&demo, "client1-demo0") {
        Ok(x) => x,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(checked, 454);
    // No message was lost before this demo's client, so only the sign of zero can differ.
    assert_eq!(patches.stale_base, 0);
    eprintln!("{patches:?}");
}

/// Every demo of the shared corpus (1.32, ioq3, CPMA, OSP servers): every record decodes and
/// re-encodes to the same bytes. Skipped without the corpus.
#[test]
fn demo_corpus_reencodes_byte_identical() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/demos/q3");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!("skipping: no demo corpus at {}", dir.display());
        return;
    };
    let mut paths: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "dm_68"))
        .collect();
    paths.sort();
    let mut total = 0;
    for p in &paths {
        let Ok(data) = std::fs::read(p) else { continue };
        let name = p.display().to_string();
        // The corpus also holds deliberately broken demos: those must fail cleanly (an error,
        // never a panic); every other demo must decode and re-encode completely.
        let broken = name.contains("invalid_") || name.contains("truncated");
        match reencode_check(&data[..], &name) {
            Ok((checked, patches)) => {
                eprintln!("{name}: {checked} records, {patches:?}");
                total += checked;
            }
            Err(e) if broken => eprintln!("{name}: rejected as expected: {e}"),
            Err(e) => panic!("{e}"),
        }
    }
    assert!(paths.is_empty() || total > 0);
}

/// Decode all records of a demo and re-encode them with the writers; returns the records
/// checked and the patches needed. Stops after `QUAKECAP_CORPUS_BYTES` of records.
fn reencode_check(demo: &[u8], name: &str) -> Result<(usize, Patches), String> {
    use crate::q3::bits::BitWriter;
    let limit = std::env::var("QUAKECAP_CORPUS_BYTES")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        // Debug builds are ~10x slower: by default check the first 300 kB of each demo there
        // (set QUAKECAP_CORPUS_BYTES to change it; release builds check everything).
        .unwrap_or(if cfg!(debug_assertions) {
            300_000
        } else {
            usize::MAX
        });
    let mut seen_bytes = 0;
    let mut baselines: HashMap<i32, EntityState> = HashMap::new();
    // The client's snapshot ring: a delta reads `snapshots[deltaNum & 31]` whether or not that
    // slot still holds the base the server used (CL_ParseSnapshot only marks the result
    // invalid), so a stale slot is what the engine decodes against too.
    let mut snaps: HashMap<i32, Snap> = HashMap::new();
    let mut checked = 0;
    let mut patches = Patches::default();
    for (seq, body) in records(demo) {
        seen_bytes += body.len();
        if seen_bytes > limit {
            break;
        }
        let mut r = BitReader::new(body);
        let mut w = BitWriter::new();
        w.write_long(
            r.read_long()
                .map_err(|e| format!("{name} seq {seq}: ack: {e}"))?,
        );
        loop {
            let op = r
                .read_byte()
                .map_err(|e| format!("{name} seq {seq}: op: {e}"))?;
            w.write_byte(op);
            match op {
                8 => break,
                2 => {
                    baselines.clear();
                    snaps.clear();
                    w.write_long(
                        r.read_long()
                            .map_err(|e| format!("{name} seq {seq}: cmd seq: {e}"))?,
                    );
                    loop {
                        let gop = r
                            .read_byte()
                            .map_err(|e| format!("{name} seq {seq}: gs op: {e}"))?;
                        w.write_byte(gop);
                        match gop {
                            3 => {
                                w.write_short(
                                    r.read_short()
                                        .map_err(|e| format!("{name} seq {seq}: index: {e}"))?,
                                );
                                w.write_big_string(
                                    &r.read_big_string()
                                        .map_err(|e| format!("{name} seq {seq}: cs: {e}"))?,
                                );
                            }
                            4 => {
                                let n = r
                                    .read_bits(10)
                                    .map_err(|e| format!("{name} seq {seq}: number: {e}"))?;
                                let zero = EntityState::zeroed(n);
                                let d = read_delta_entity(&mut r, &zero, n)
                                    .map_err(|e| format!("{name} seq {seq}: baseline: {e}"))?;
                                // write_delta_entity writes the number itself.
                                write_delta_entity(&mut w, &zero, Some(&d.state), true);
                                baselines.insert(n, d.state);
                            }
                            8 => break,
                            x => return Err(format!("{name} seq {seq}: bad gamestate op {x}")),
                        }
                    }
                    w.write_long(
                        r.read_long()
                            .map_err(|e| format!("{name} seq {seq}: clientNum: {e}"))?,
                    );
                    w.write_long(
                        r.read_long()
                            .map_err(|e| format!("{name} seq {seq}: checksumFeed: {e}"))?,
                    );
                }
                5 => {
                    w.write_long(
                        r.read_long()
                            .map_err(|e| format!("{name} seq {seq}: seq: {e}"))?,
                    );
                    let cmd = r
                        .read_string()
                        .map_err(|e| format!("{name} seq {seq}: cmd: {e}"))?;
                    w.write_string(&cmd);
                }
                7 => {
                    w.write_long(
                        r.read_long()
                            .map_err(|e| format!("{name} seq {seq}: serverTime: {e}"))?,
                    );
                    let delta_num = r
                        .read_byte()
                        .map_err(|e| format!("{name} seq {seq}: deltaNum: {e}"))?;
                    w.write_byte(delta_num);
                    w.write_byte(
                        r.read_byte()
                            .map_err(|e| format!("{name} seq {seq}: flags: {e}"))?,
                    );
                    let n = r
                        .read_byte()
                        .map_err(|e| format!("{name} seq {seq}: areamask len: {e}"))?;
                    w.write_byte(n);
                    for _ in 0..n {
                        w.write_byte(
                            r.read_byte()
                                .map_err(|e| format!("{name} seq {seq}: areamask: {e}"))?,
                        );
                    }
                    let old = if delta_num == 0 {
                        None
                    } else {
                        snaps.get(&((seq - i32::from(delta_num)) & 31)).cloned()
                    };
                    let old_ps = old.as_ref().map(|o| &o.ps);
                    let pd = read_delta_playerstate(&mut r, old_ps)
                        .map_err(|e| format!("{name} seq {seq}: playerstate: {e}"))?;
                    let mut server_old = old_ps.cloned().unwrap_or_default();
                    server_from(
                        &mut server_old.fields,
                        &pd.state.fields,
                        &pd.changes,
                        &mut patches,
                    );
                    write_delta_playerstate(&mut w, Some(&server_old), &pd.state);
                    let old_ents = old.map(|o| o.ents).unwrap_or_default();
                    let mut ents = Vec::new();
                    let mut oi = old_ents.iter().peekable();
                    loop {
                        let newnum = r
                            .read_bits(10)
                            .map_err(|e| format!("{name} seq {seq}: newnum: {e}"))?;
                        if newnum == 1023 {
                            break;
                        }
                        while let Some(o) = oi.next_if(|o| o.number < newnum) {
                            ents.push(o.clone());
                        }
                        let (from, force) = match oi.next_if(|o| o.number == newnum) {
                            Some(o) => (o.clone(), false),
                            None => (
                                baselines
                                    .get(&newnum)
                                    .cloned()
                                    .unwrap_or_else(|| EntityState::zeroed(newnum)),
                                true,
                            ),
                        };
                        let d = read_delta_entity(&mut r, &from, newnum)
                            .map_err(|e| format!("{name} seq {seq}: entity: {e}"))?;
                        if d.removed {
                            write_delta_entity(&mut w, &from, None, false);
                        } else {
                            let mut server_from_state = from.clone();
                            server_from(
                                &mut server_from_state.fields,
                                &d.state.fields,
                                &d.changes,
                                &mut patches,
                            );
                            write_delta_entity(&mut w, &server_from_state, Some(&d.state), force);
                            ents.push(d.state);
                        }
                    }
                    w.write_bits(1023, 10);
                    ents.extend(oi.cloned());
                    snaps.insert(seq & 31, Snap { ps: pd.state, ents });
                }
                x => return Err(format!("{name} seq {seq}: unexpected op {x}")),
            }
        }
        let end = w.bit_pos();
        let out = w.finish();
        assert_eq!(out.len(), body.len(), "{name} record seq {seq}: length");
        let first_diff = out.iter().zip(body).position(|(a, b)| a != b);
        // When the message ends on a byte boundary, cursize includes one byte the engine's
        // writer never touched: it holds whatever was left in the server's buffer.
        let stale_tail = (end % 8 == 0).then(|| body.len() - 1);
        assert!(
            first_diff.is_none() || first_diff == stale_tail,
            "{name} record seq {seq}: first difference at byte {first_diff:?} of {}",
            body.len()
        );
        checked += 1;
    }
    Ok((checked, patches))
}

/// Fields the writer had to be told were changed, see [`server_from`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Patches {
    /// The client's old and new value are both (+)0: the server had -0.0 on one side.
    sign_of_zero: usize,
    /// Non-zero: the client decoded against a different base than the server used (a stale
    /// ring slot after lost messages, which the engine also marks invalid).
    stale_base: usize,
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
