//! Issue 3: every Quake 3 message decoded, in agreement with the engine.
mod q3common;
use std::collections::HashMap;

use q3common::*;
use quakecap::flow::Dir;
use quakecap::q3::clc::ClientOp;
use quakecap::q3::message::Message;
use quakecap::q3::svc::ServerOp;
use quakecap::sink::shownet;

/// Mask the one engine quirk: on entity *delta* lines the engine prints a stale number left
/// in its parse buffer; `remove` lines carry the real number and stay as they are.
fn mask(line: &str) -> String {
    if line.ends_with("remove") {
        return line.to_string();
    }
    match line.find(": #") {
        Some(i) => {
            let rest = &line[i + 3..];
            let digits = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            let after = rest[digits..].trim_start_matches(' ');
            format!("{}: #N {}", &line[..i], after)
        }
        None => line.to_string(),
    }
}

#[test]
fn shownet_equals_the_engines_trace_for_every_client_demo() {
    let mut checked = 0;
    for folder in Q3_CAPTURES {
        for demo in client_demos(folder) {
            let trace = std::fs::read_to_string(format!("{}.shownet.txt", demo.display())).unwrap();
            let (_, msgs) = decode(&demo, false);
            let mut ours = Vec::new();
            for m in &msgs {
                shownet::message_lines(m, &mut ours);
            }
            let theirs: Vec<&str> = trace.lines().collect();
            assert_eq!(ours.len(), theirs.len(), "{}", demo.display());
            for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
                assert_eq!(mask(a), mask(b), "{} line {}", demo.display(), i + 1);
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 8);
}

#[test]
fn zero_failed_messages_in_every_capture() {
    for folder in Q3_CAPTURES {
        let mut files = vec![format!("{folder}/capture.pcapng")];
        if folder == "q3-impaired" {
            files.push(format!("{folder}/server-side.pcapng"));
        }
        for rel in files {
            let (report, msgs) = decode(&cap(&rel), false);
            assert!(msgs.iter().all(|m| m.error.is_none()), "{rel}");
            assert!(report.flows.iter().all(|f| f.errors == 0), "{rel}");
            let server = msgs.iter().filter(|m| m.kind == "server").count();
            let client = msgs.iter().filter(|m| m.kind == "client").count();
            let want = match rel.as_str() {
                "q3-basic/capture.pcapng" => (505, 1382),
                "q3-two-clients/capture.pcapng" => (1559, 2839),
                "q3-mapchange/capture.pcapng" => (1135, 2986),
                "q3-impaired/capture.pcapng" => (709, 2115),
                "q3-impaired/server-side.pcapng" => (750, 1799),
                "q3-proto71/capture.pcapng" => (616, 1383),
                "q3-download/capture.pcapng" => (1054, 1270),
                other => panic!("no message counts for {other}"),
            };
            assert_eq!((server, client), want, "{rel}: server, client messages");
        }
    }
}

/// A snapshot's absolute state: serverTime, playerstate fields and the entity list.
type SnapState = (i32, Vec<i32>, Vec<(i32, Vec<i32>)>);

fn snapshots(msgs: &[Message], flow: u32) -> HashMap<i32, SnapState> {
    let mut out = HashMap::new();
    for m in msgs.iter().filter(|m| m.flow == flow && m.dir == Dir::S2c) {
        let Some(sm) = m.server() else { continue };
        for op in &sm.ops {
            if let ServerOp::Snapshot(s) = op {
                if s.valid {
                    let f = &s.frame;
                    let mut ps = f.ps.fields.to_vec();
                    ps.extend(
                        f.ps.stats
                            .iter()
                            .chain(&f.ps.persistant)
                            .chain(&f.ps.ammo)
                            .chain(&f.ps.powerups),
                    );
                    let ents = f
                        .entities
                        .iter()
                        .map(|e| (e.number, e.fields.to_vec()))
                        .collect();
                    out.insert(m.seq.unwrap(), (s.server_time, ps, ents));
                }
            }
        }
    }
    out
}

#[test]
fn capture_and_client_demo_give_the_same_snapshots() {
    let mut checked = 0;
    for folder in Q3_CAPTURES {
        let (report, msgs) = decode(&cap(&format!("{folder}/capture.pcapng")), false);
        let conns = connection_ids(&report);
        for demo in client_demos(folder) {
            let name = demo.file_name().unwrap().to_string_lossy().to_string();
            let client = client_number(&demo);
            let from_capture = snapshots(&msgs, conns[client - 1]);
            let (_, dmsgs) = decode(&demo, false);
            let from_demo = snapshots(&dmsgs, 1);
            // Every snapshot the engine parsed (one `svc_snapshot` line each) was valid.
            assert_eq!(
                from_demo.len(),
                trace_count(&demo, ":svc_snapshot"),
                "{name}"
            );
            for (seq, snap) in &from_demo {
                assert_eq!(
                    from_capture.get(seq),
                    Some(snap),
                    "{folder}/{name} message {seq}"
                );
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 8, "client demos in the Quake 3 capture folders");
}

fn client_commands(msgs: &[Message], flow: u32) -> Vec<String> {
    msgs.iter()
        .filter(|m| m.flow == flow)
        .filter_map(|m| m.client())
        .flat_map(|c| &c.ops)
        .filter_map(|op| match op {
            ClientOp::ClientCommand {
                text,
                new: Some(true),
                ..
            } => Some(text.trim().to_string()),
            _ => None,
        })
        .collect()
}

fn server_commands(msgs: &[Message], flow: u32) -> Vec<String> {
    msgs.iter()
        .filter(|m| m.flow == flow)
        .filter_map(|m| m.server())
        .flat_map(|s| &s.ops)
        .filter_map(|op| match op {
            ServerOp::ServerCommand {
                text, new: true, ..
            } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn lab_chat_is_decoded_both_ways() {
    for folder in Q3_CAPTURES {
        let (report, msgs) = decode(&cap(&format!("{folder}/capture.pcapng")), false);
        let conns = connection_ids(&report);
        for (i, flow) in conns.iter().enumerate() {
            let n = i + 1;
            let cmds = client_commands(&msgs, *flow);
            let srv = server_commands(&msgs, *flow);
            for said in [
                format!("say hello from client {n}"),
                format!("say_team team chat {n}"),
                "tell 0 private hello".to_string(),
            ] {
                assert!(
                    cmds.contains(&said),
                    "{folder} client {n}: {said:?} not in {cmds:?}"
                );
            }
            let echoed = |text: &str| {
                srv.iter().any(|s| {
                    (s.starts_with("chat ") || s.starts_with("tchat ") || s.starts_with("tell "))
                        && s.contains(text)
                })
            };
            assert!(
                echoed(&format!("hello from client {n}")),
                "{folder} client {n}"
            );
            assert!(echoed(&format!("team chat {n}")), "{folder} client {n}");
            assert!(echoed("private hello"), "{folder} client {n}");
        }
    }
}

#[test]
fn usercmd_times_never_go_back_and_follow_snapshot_times() {
    for folder in Q3_CAPTURES {
        let (report, msgs) = decode(&cap(&format!("{folder}/capture.pcapng")), false);
        let conns = report.flows.iter().filter(|f| f.kind == "connection");
        for (client, f) in conns.enumerate() {
            let mine: Vec<&Message> = msgs.iter().filter(|m| m.flow == f.id).collect();
            let mut snap_times: Vec<i32> = mine
                .iter()
                .filter_map(|m| m.server())
                .flat_map(|s| &s.ops)
                .filter_map(|op| match op {
                    ServerOp::Snapshot(s) => Some(s.server_time),
                    _ => None,
                })
                .collect();
            snap_times.sort();
            let mut last_cmd = i32::MIN;
            let mut cmds = 0;
            for m in &mine {
                if m.server()
                    .is_some_and(|s| s.ops.iter().any(|op| matches!(op, ServerOp::Gamestate(_))))
                {
                    // ioquake3 restarts sv.time on a new map.
                    last_cmd = i32::MIN;
                }
                let Some(c) = m.client() else { continue };
                for op in &c.ops {
                    let ClientOp::Move { cmds: uc, .. } = op else {
                        continue;
                    };
                    // Before its first snapshot the client sends commands with time 0.
                    for u in uc.iter().filter(|u| u.server_time != 0) {
                        // Repeated commands (cl_packetdup) may equal the last one.
                        assert!(
                            u.server_time >= last_cmd,
                            "{folder}: {} after {last_cmd}",
                            u.server_time
                        );
                        last_cmd = u.server_time;
                        // Keyed fields decode to sane values only with the right key.
                        assert!(u.weapon <= 15 && u.buttons < 1 << 12, "{folder}: {u:?}");
                        let i = snap_times.partition_point(|&t| t < u.server_time);
                        let near = [i.checked_sub(1), Some(i)]
                            .into_iter()
                            .flatten()
                            .filter_map(|j| snap_times.get(j))
                            .map(|t| (t - u.server_time).abs())
                            .min()
                            .unwrap_or(i32::MAX);
                        assert!(
                            near < 200,
                            "{folder}: usercmd time {} is {near} ms from any snapshot",
                            u.server_time
                        );
                        cmds += 1;
                    }
                }
            }
            let want = match (folder, client) {
                ("q3-basic", _) => 2746,
                ("q3-two-clients", 0) => 2740,
                ("q3-two-clients", _) => 2890,
                ("q3-mapchange", _) => 5932,
                ("q3-impaired", _) => 4204,
                ("q3-proto71", _) => 2744,
                ("q3-download", _) => 2464,
                _ => panic!("no usercmd count for {folder}"),
            };
            assert_eq!(cmds, want, "{folder} client {client}: usercmds checked");
        }
    }
}

#[test]
fn connectionless_messages_decode_to_known_commands() {
    use quakecap::q3::message::Body;
    let known = [
        "getchallenge",
        "challengeResponse",
        "connect",
        "connectResponse",
        "getstatus",
        "statusResponse",
        "getinfo",
        "infoResponse",
        "disconnect",
        "print",
    ];
    for folder in Q3_CAPTURES {
        let (_, msgs) = decode(&cap(&format!("{folder}/capture.pcapng")), false);
        let mut connects = 0;
        for m in msgs.iter().filter(|m| m.kind == "oob") {
            let Body::Oob(o) = &m.body else {
                panic!("{folder}: undecoded connectionless packet")
            };
            assert!(
                known.contains(&o.command.as_str()),
                "{folder}: {:?}",
                o.text
            );
            assert!(
                o.text.chars().all(|c| !c.is_control() || c == '\n'),
                "{folder}: {:?}",
                o.text
            );
            if o.command == "connect" {
                connects += 1;
                assert!(
                    o.info("name").is_some_and(|n| n.starts_with("LabPlayer")),
                    "{folder}"
                );
            }
        }
        // One connect per lab client (q3-two-clients has two).
        let clients = if folder == "q3-two-clients" { 2 } else { 1 };
        assert_eq!(connects, clients, "{folder}");
    }
}
