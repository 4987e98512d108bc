//! Issue 7: the server messages in each client's own .qwd equal, byte for byte, the ones
//! reassembled from the capture for that connection, over the span both cover; and decoding
//! both gives the same entity and player states.
mod qw_common;
use quakecap::qw::{self, Event};
use qw_common::{path, run_capture};
use std::collections::BTreeMap;

/// s2c packets by sequence: (header+payload bytes, (start, end, svc id) spans).
type Packets = BTreeMap<u32, (Vec<u8>, Vec<(usize, usize, u8)>)>;

fn capture_packets(dir: &str, flow: u32) -> Packets {
    let run = run_capture(
        dir,
        qw::Options {
            decode: false,
            keep_raw: true,
        },
    );
    let mut out = Packets::new();
    for e in &run.events {
        if let Event::Raw(r) = e {
            if r.flow == flow && r.dir == quakecap::flow::Dir::S2c && r.accepted {
                out.insert(r.seq, (r.payload.clone(), r.spans.clone()));
            }
        }
    }
    out
}

/// The live part of a .qwd (after its dem_set): accepted dem_read blocks by sequence.
fn qwd_packets(dir: &str, demo: &str) -> Packets {
    let data = std::fs::read(path(dir, demo)).unwrap();
    let mut ev = Vec::new();
    qw::decode_demo_file(demo, &data, &mut ev);
    let mut out = Packets::new();
    let mut live = false;
    let mut off = 0usize;
    // Walk the file again for the raw bytes of each dem_read (the decoder gives sizes and order).
    let mut blocks = Vec::new();
    while off + 5 <= data.len() {
        let kind = data[off + 4];
        let mut j = off + 5;
        match kind {
            0 => j += 36,
            1 => {
                let len = i32::from_le_bytes(data[j..j + 4].try_into().unwrap()) as usize;
                blocks.push(data[j + 4..j + 4 + len].to_vec());
                j += 4 + len;
            }
            2 => j += 8,
            _ => panic!("bad block"),
        }
        off = j;
    }
    let mut bi = 0;
    for e in &ev {
        let Event::Message(m) = e else { continue };
        match m.block {
            Some("set") => live = true,
            Some("read") => {
                let raw = blocks[bi].clone();
                bi += 1;
                if live && !m.connectionless && m.netchan == Some(qw::NetchanStatus::Accepted) {
                    let mut spans = Vec::new();
                    let ats: Vec<usize> = m
                        .ops
                        .iter()
                        .map(|o| o.at)
                        .chain(std::iter::once(raw.len()))
                        .collect();
                    for (i, o) in m.ops.iter().enumerate() {
                        let id = raw[o.at];
                        spans.push((o.at, ats[i + 1], id));
                    }
                    out.insert(m.seq.unwrap() as u32, (raw, spans));
                }
            }
            _ => {}
        }
    }
    out
}

use quakecap::qw::entity::EntityState;
use quakecap::qw::playerinfo::PlayerInfo;
use quakecap::qw::svc::ServerOp;
use quakecap::qw::OpKind;

/// Per s2c sequence: the full entity frame (rebuilt from each packetentities op: its base
/// frame, minus removals, plus the absolute states it carries) and the playerinfos.
type States = BTreeMap<u32, (Option<Vec<EntityState>>, Vec<PlayerInfo>)>;

fn states(msgs: &[&qw::Message]) -> States {
    let mut out = States::new();
    for m in msgs {
        if m.connectionless
            || m.netchan != Some(qw::NetchanStatus::Accepted)
            || m.dir != quakecap::flow::Dir::S2c
        {
            continue;
        }
        let seq = m.seq.unwrap() as u32;
        let mut frame = None;
        let mut players = Vec::new();
        for o in &m.ops {
            match &o.kind {
                OpKind::Server(
                    ServerOp::Packetentities(pe) | ServerOp::Deltapacketentities(pe),
                ) => {
                    let base: Vec<EntityState> = match pe.base_seq {
                        Some(b) => out
                            .get(&b)
                            .and_then(|s| s.0.clone())
                            .expect("base frame rebuilt"),
                        None => Vec::new(),
                    };
                    let mut f: BTreeMap<u16, EntityState> =
                        base.into_iter().map(|e| (e.num, e)).collect();
                    for r in &pe.removed {
                        f.remove(r);
                    }
                    for e in &pe.entities {
                        f.insert(e.num, *e);
                    }
                    assert_eq!(f.len(), pe.count);
                    frame = Some(f.into_values().collect());
                }
                OpKind::Server(ServerOp::Playerinfo(p)) => players.push(*p),
                _ => {}
            }
        }
        out.insert(seq, (frame, players));
    }
    out
}

/// What each comparison covers: (messages, entity frames, commands) of a client demo.
fn expected(dir: &str, demo: &str) -> (usize, usize, usize) {
    match (dir, demo) {
        ("qw-basic", _) => (3456, 1688, 1719),
        ("qw-noext", _) => (4053, 1986, 1988),
        ("qw-impaired", "client1-demo0.qwd") => (4176, 1396, 1972),
        ("qw-impaired", _) => (4571, 1511, 2132),
        ("qw-mapchange-reconnect", "client1-demo0.qwd") => (2663, 740, 809),
        ("qw-mapchange-reconnect", _) => (3898, 1266, 1330),
        _ => panic!("no counts for {dir}/{demo}"),
    }
}

fn check(dir: &str, demo: &str, flow: u32) {
    // 1. bytes
    let cap = capture_packets(dir, flow);
    let q = qwd_packets(dir, demo);
    let (first, last) = (*q.keys().next().unwrap(), *q.keys().last().unwrap());
    let mut same_msgs = 0;
    for (seq, (bytes, spans)) in cap.range(first..=last) {
        let Some((qb, qs)) = q.get(seq) else {
            // ezQuake writes a packet only when it had a message to parse.
            assert!(
                spans.is_empty(),
                "{demo}: capture packet {seq} with messages is not in the .qwd"
            );
            continue;
        };
        if *seq == last && qs.iter().map(|s| s.2).collect::<Vec<_>>() == [8] {
            // ezQuake's `stop` writes its own svc_print block with a header of its own.
            continue;
        }
        assert_eq!(
            bytes.get(..8),
            qb.get(..8),
            "{demo}: netchan header of {seq}"
        );
        // ezQuake drops svc_download and re-encodes a delta whose base is not in the demo as a
        // full svc_packetentities; every other message is copied.
        let cm: Vec<&[u8]> = spans
            .iter()
            .filter(|s| s.2 != 41 && s.2 != 48)
            .map(|s| &bytes[s.0..s.1])
            .collect();
        let had_delta = spans.iter().any(|s| s.2 == 48);
        let qm: Vec<&[u8]> = qs
            .iter()
            .filter(|s| !(had_delta && s.2 == 47) && s.2 != 48)
            .map(|s| &qb[s.0..s.1])
            .collect();
        assert_eq!(cm, qm, "{demo}: messages of packet {seq}");
        let cd: Vec<&[u8]> = spans
            .iter()
            .filter(|s| s.2 == 48)
            .map(|s| &bytes[s.0..s.1])
            .collect();
        let qd: Vec<&[u8]> = qs
            .iter()
            .filter(|s| s.2 == 48)
            .map(|s| &qb[s.0..s.1])
            .collect();
        if !qd.is_empty() {
            assert_eq!(cd, qd, "{demo}: delta packetentities of {seq}");
        }
        same_msgs += cm.len() + qd.len();
    }
    assert_eq!(
        same_msgs,
        expected(dir, demo).0,
        "{dir}/{demo}: messages compared"
    );

    // 2. states
    let run = run_capture(
        dir,
        qw::Options {
            decode: true,
            keep_raw: false,
        },
    );
    let cmsgs: Vec<&qw::Message> = qw_common::messages(&run.events)
        .filter(|m| m.flow == flow)
        .collect();
    let data = std::fs::read(path(dir, demo)).unwrap();
    let mut ev = Vec::new();
    qw::decode_demo_file(demo, &data, &mut ev);
    let qmsgs: Vec<&qw::Message> = qw_common::messages(&ev)
        .filter(|m| m.block == Some("read"))
        .collect();
    let cs = states(&cmsgs);
    // The .qwd's startup blocks (sequence 1, 2, …) come before its dem_set: take the live part.
    let qs = states(
        &qmsgs
            .iter()
            .filter(|m| m.seq.is_some_and(|s| s as u32 >= first))
            .copied()
            .collect::<Vec<_>>(),
    );
    let mut frames = 0;
    for (seq, (qf, qp)) in qs.range(first..last) {
        let Some((cf, cp)) = cs.get(seq) else {
            panic!("{demo}: {seq} not in capture")
        };
        assert_eq!(qf, cf, "{demo}: entity frame {seq}");
        assert_eq!(qp, cp, "{demo}: players of {seq}");
        frames += usize::from(qf.is_some());
    }
    assert_eq!(
        frames,
        expected(dir, demo).1,
        "{dir}/{demo}: entity frames compared"
    );
}

#[test]
fn qw_basic_qwd_equals_capture() {
    check("qw-basic", "client1-demo0.qwd", 2);
}
#[test]
fn qw_noext_qwd_equals_capture() {
    check("qw-noext", "client1-demo0.qwd", 2);
}
#[test]
fn qw_mapchange_client1_qwd_equals_capture() {
    check("qw-mapchange-reconnect", "client1-demo0.qwd", 2);
}
#[test]
fn qw_mapchange_client2_qwd_equals_capture() {
    check("qw-mapchange-reconnect", "client2-demo0.qwd", 3);
}

/// The commands the client recorded (dem_cmd, one per outgoing sequence from its dem_set on)
/// are the newest usercmds of its clc_moves in the capture: same msec, moves, buttons and
/// impulse; angles equal up to the wire's 16-bit angle precision.
fn check_cmds(dir: &str, demo: &str, flow: u32) {
    use quakecap::qw::clc::ClientOp;
    let run = run_capture(
        dir,
        qw::Options {
            decode: true,
            keep_raw: false,
        },
    );
    let mut sent = BTreeMap::new();
    for m in qw_common::messages(&run.events)
        .filter(|m| m.flow == flow && m.dir == quakecap::flow::Dir::C2s)
    {
        for o in &m.ops {
            if let OpKind::Client(ClientOp::Move { cmds, .. }) = &o.kind {
                sent.insert(m.seq.unwrap() as u32, cmds[2]);
            }
        }
    }
    let data = std::fs::read(path(dir, demo)).unwrap();
    let mut ev = Vec::new();
    qw::decode_demo_file(demo, &data, &mut ev);
    let mut out_seq: Option<u32> = None;
    let mut checked = 0;
    for m in qw_common::messages(&ev) {
        match m.block {
            Some("set") => out_seq = m.ack.map(|a| a as u32),
            Some("cmd") => {
                let Some(seq) = out_seq else { continue };
                out_seq = Some(seq + 1);
                let OpKind::Client(ClientOp::Democmd { cmd, .. }) = &m.ops[0].kind else {
                    panic!()
                };
                let Some(c) = sent.get(&seq) else { continue };
                assert_eq!(
                    (c.msec, c.forward, c.side, c.up, c.buttons, c.impulse),
                    (
                        cmd.msec,
                        cmd.forward,
                        cmd.side,
                        cmd.up,
                        cmd.buttons,
                        cmd.impulse
                    ),
                    "{demo}: cmd of sequence {seq}"
                );
                for i in 0..3 {
                    let d = (c.angles[i] - cmd.angles[i]).rem_euclid(360.0);
                    assert!(
                        d.min(360.0 - d) <= 360.0 / 65536.0 + 1e-3,
                        "{demo}: angle {i} of {seq}: {} vs {}",
                        c.angles[i],
                        cmd.angles[i]
                    );
                }
                checked += 1;
            }
            _ => {}
        }
    }
    assert_eq!(
        checked,
        expected(dir, demo).2,
        "{dir}/{demo}: commands compared"
    );
}

#[test]
fn qw_basic_qwd_commands_equal_capture_moves() {
    check_cmds("qw-basic", "client1-demo0.qwd", 2);
}
#[test]
fn qw_noext_qwd_commands_equal_capture_moves() {
    check_cmds("qw-noext", "client1-demo0.qwd", 2);
}
#[test]
fn qw_mapchange_qwd_commands_equal_capture_moves() {
    check_cmds("qw-mapchange-reconnect", "client1-demo0.qwd", 2);
    check_cmds("qw-mapchange-reconnect", "client2-demo0.qwd", 3);
}

/// The impaired session (loss, jitter, duplicates, NAT rebinding at the relay), from the
/// clients' side of the relay: what each client recorded is what the capture holds.
#[test]
fn qw_impaired_qwd_equals_capture() {
    check("qw-impaired", "client1-demo0.qwd", 2);
    check("qw-impaired", "client2-demo0.qwd", 3);
    check_cmds("qw-impaired", "client1-demo0.qwd", 2);
    check_cmds("qw-impaired", "client2-demo0.qwd", 3);
}

/// `decode --shownet --flow N` of the capture: the shownet sink's output through the pipeline.
fn capture_shownet(dir: &str, flow: u32) -> String {
    let mut out = Vec::new();
    let opts = quakecap::pipeline::Options {
        detail: quakecap::pipeline::Detail::Full,
        flows: Some(vec![flow]),
        ..Default::default()
    };
    let mut sink = quakecap::sink::shownet::Shownet::new(&mut out);
    quakecap::pipeline::run_capture(&path(dir, "capture.pcapng"), &opts, &mut sink, &mut |_| {})
        .unwrap();
    drop(sink);
    String::from_utf8(out).unwrap()
}

/// A trace as messages of (offset, name) lines.
fn trace_messages(text: &str) -> Vec<Vec<(usize, String)>> {
    let mut out: Vec<Vec<(usize, String)>> = Vec::new();
    for line in text.lines() {
        if line.starts_with("------------------") {
            out.push(Vec::new());
        } else if let (Some(m), Some((off, name))) = (out.last_mut(), line.split_once(':')) {
            m.push((off.trim().parse().unwrap(), name.to_string()));
        }
    }
    out
}

/// What the .qwd writer changes in the live client's trace: it writes only packets that
/// carry a message and drops svc_download (later ops move back by its length).
fn as_written(live: Vec<Vec<(usize, String)>>) -> Vec<Vec<(usize, String)>> {
    live.into_iter()
        .filter(|m| m.len() > 1)
        .map(|m| {
            let mut shift = 0;
            let mut kept = Vec::new();
            for (i, (at, name)) in m.iter().enumerate() {
                if name == "svc_download" {
                    shift += m[i + 1].0 - at;
                } else {
                    kept.push((at - shift, name.clone()));
                }
            }
            kept
        })
        .collect()
}

/// The shownet sink on a capture gives the live client's trace: it equals ezQuake's trace of
/// the demo written from that connection, message for message, once the writer's own changes
/// are applied to it, up to the demo's end.
#[test]
fn capture_shownet_equals_ezquakes_trace_of_the_written_demo() {
    let conns = [
        ("qw-basic", 2),
        ("qw-noext", 2),
        ("qw-mapchange-reconnect", 2),
        ("qw-mapchange-reconnect", 3),
        ("qw-mapchange-reconnect", 6),
        ("qw-mapchange-reconnect", 7),
        ("qw-impaired", 2),
        ("qw-impaired", 3),
    ];
    for (dir, flow) in conns {
        let live = qw_common::playback_filter(&capture_shownet(dir, flow));
        let trace = path(dir, &format!("written-flow{flow}.qwd.shownet.txt"));
        let theirs = trace_messages(&std::fs::read_to_string(&trace).unwrap());
        let ours = as_written(trace_messages(&live));
        // The demo ends at the client's `drop` or the server's svc_disconnect; the capture
        // still holds the last packets the server sent (the messages carry no sign of the
        // client's drop, so the sink traces them).
        assert!(
            (theirs.len()..=theirs.len() + 3).contains(&ours.len()),
            "{dir} flow {flow}: {} messages, the demo's trace {}",
            ours.len(),
            theirs.len()
        );
        for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
            assert_eq!(a, b, "{dir} flow {flow}: message {i}");
        }
    }
}
