//! Issue 11: errors carry a kind and a position, are rendered once in text and are objects in
//! JSON (`decode --json`, `flows --json`). Inputs are built here, positions computed from them.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use quakecap::capture::{ByteOrder, LinkType, PcapWriter, TsPrecision};
use quakecap::q3::bits::BitWriter;
use quakecap::q3::svc::emit;
use serde_json::Value;

fn quakecap(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_quakecap"))
        .args(args)
        .output()
        .expect("run quakecap")
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("quakecap-errors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// An Ethernet frame carrying IPv4 whose header is cut after `ip_len` bytes.
fn short_ipv4_frame(ip_len: usize) -> Vec<u8> {
    let mut f = vec![0u8; 12];
    f.extend_from_slice(&[0x08, 0x00]);
    f.push(0x45);
    f.resize(14 + ip_len, 0);
    f
}

/// A whole Ethernet/IPv4/UDP frame.
fn udp_frame(payload: &[u8]) -> Vec<u8> {
    let b = etherparse::PacketBuilder::ethernet2([1; 6], [2; 6])
        .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .udp(40000, 5000);
    let mut v = Vec::new();
    b.write(&mut v, payload).unwrap();
    v
}

fn pcap(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut w = PcapWriter::with_byte_order(
        Vec::new(),
        LinkType::ETHERNET,
        TsPrecision::Micro,
        ByteOrder::Little,
    )
    .unwrap();
    for (i, f) in frames.iter().enumerate() {
        w.write_packet(1_000 * (i as i64 + 1), f, f.len() as u32)
            .unwrap();
    }
    w.finish().unwrap()
}

#[test]
fn a_malformed_frame_is_rendered_with_its_frame_once() {
    let ip_len = 6;
    let path = tmp("malformed.pcap");
    std::fs::write(
        &path,
        pcap(&[udp_frame(b"hello"), short_ipv4_frame(ip_len)]),
    )
    .unwrap();
    let out = quakecap(&["flows", s(&path)]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err
        .lines()
        .find(|l| l.contains("warning"))
        .unwrap_or_else(|| panic!("no warning: {err}"));
    assert!(
        line.starts_with(&format!("quakecap: {}: warning: frame 2: IPv4", s(&path))),
        "{line}"
    );
    assert_eq!(line.matches("frame 2").count(), 1, "{line}");
    assert!(line.contains(&format!("only {ip_len} present")), "{line}");
}

#[test]
fn an_unusable_capture_names_the_frame_once() {
    let path = tmp("unusable.pcap");
    std::fs::write(&path, pcap(&[short_ipv4_frame(6)])).unwrap();
    let out = quakecap(&["flows", s(&path)]);
    assert_eq!(out.status.code(), Some(2), "exit status unchanged");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(&format!("quakecap: {}: frame 1: IPv4", s(&path))),
        "{err}"
    );
    assert_eq!(err.matches("frame 1").count(), 1, "{err}");
}

/// A protocol-68 demo of one record whose message has an unknown op after the ack; returns
/// the file and the bit the error names: just after the op byte, where the engine's read
/// position stands when it finds the op illegible.
/// A one-record demo whose message has an unknown op; `name` is the caller's own file (tests
/// run in parallel: a shared one could be rewritten while another test reads it).
fn bad_op_demo(name: &str) -> (PathBuf, usize) {
    let mut w = BitWriter::new();
    emit::ack(&mut w, 0);
    w.write_byte(200); // no svc op has this number
    let bit = w.bit_pos();
    emit::eof(&mut w);
    let body = w.finish();
    let mut file = 5i32.to_le_bytes().to_vec();
    file.extend_from_slice(&(body.len() as i32).to_le_bytes());
    file.extend_from_slice(&body);
    file.extend_from_slice(&(-1i32).to_le_bytes());
    file.extend_from_slice(&(-1i32).to_le_bytes());
    let path = tmp(name);
    std::fs::write(&path, file).unwrap();
    (path, bit)
}

fn assert_bad_op_object(e: &Value, bit: usize) {
    assert_eq!(e["kind"], "bad_op", "{e}");
    assert_eq!(e["record"], 1, "{e}");
    assert_eq!(e["byte"], 0, "the first record starts the file: {e}");
    assert_eq!(e["bit"], bit, "{e}");
    assert!(
        e.get("frame").is_none(),
        "a demo has records, not frames: {e}"
    );
    assert!(
        e["message"].as_str().unwrap().contains("unknown op 200"),
        "{e}"
    );
}

#[test]
fn decode_json_errors_are_objects() {
    let (path, bit) = bad_op_demo("badop-decode.dm_68");
    let out = quakecap(&["decode", "--json", s(&path)]);
    assert_eq!(out.status.code(), Some(0));
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let failed: Vec<&Value> = lines.iter().filter(|m| m.get("error").is_some()).collect();
    assert_eq!(failed.len(), 1, "{lines:?}");
    assert_bad_op_object(&failed[0]["error"], bit);
    // Text rendering on stderr: record, byte and bit once, then the message.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "record 1, byte 0, bit {bit}: illegible server message: unknown op 200\n"
        )),
        "{err}"
    );
}

#[test]
fn flows_json_error_details_are_objects() {
    let (path, bit) = bad_op_demo("badop-flows.dm_68");
    let out = quakecap(&["flows", "--json", s(&path)]);
    assert_eq!(out.status.code(), Some(0));
    let flows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = &flows[0];
    assert_eq!(f["errors"], 1, "the count is kept: {f}");
    assert_bad_op_object(&f["error_details"][0], bit);
}
