//! Named rules for what the decoders already found: message decode errors, netchan errors
//! recorded on flows, and the framing warnings of the input. The rule comes from the typed
//! error's [`ErrorKind`] and where it was found (a message, a flow's netchan, the input's
//! framing); the position from the error's [`Position`](crate::error::Position), completed
//! from the message it came with.
use std::collections::HashSet;

use super::Finding;
use crate::error::{Error, ErrorKind};
use crate::flow::FlowSummary;
use crate::pipeline::Report;

/// Where an error was found: which layer's rules it breaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    /// A Quake 3 message (netchan message, connectionless packet or demo record).
    Q3,
    /// A QuakeWorld datagram or demo block.
    Qw,
    /// A Quake 3 flow's netchan: packets dropped before any message was decoded.
    Netchan,
    /// A demo file's record framing.
    Demo,
    /// A capture file's framing and the link, IP and UDP headers.
    Capture,
}

/// The rule an error of `kind` breaks at `layer`.
pub fn rule(layer: Layer, kind: ErrorKind) -> &'static str {
    use ErrorKind as K;
    match (layer, kind) {
        (Layer::Netchan, K::Bounds) => "netchan.max-msglen",
        (Layer::Netchan, K::Sequence) => "netchan.sequence-backwards",
        (Layer::Netchan, K::Netchan) => "netchan.header",
        (Layer::Netchan, K::Truncated) => "netchan.header",
        (Layer::Netchan | Layer::Q3 | Layer::Qw | Layer::Capture, K::MidSession) => {
            "capture.mid-session"
        }
        (Layer::Netchan, K::Oob) | (Layer::Q3, K::Oob) => "q3.oob",
        (Layer::Netchan, _) => "netchan.other",
        (Layer::Q3, K::BadOp) => "q3.op-unknown",
        (Layer::Q3, K::FieldCount) => "q3.field-count",
        (Layer::Q3, K::Bounds) => "q3.bounds",
        (Layer::Q3, K::Truncated) => "q3.message-overrun",
        (Layer::Q3, K::Huffman) => "q3.huffman",
        (Layer::Q3, K::MissingDelta) => "q3.delta-missing",
        (Layer::Q3, _) => "q3.decode",
        (Layer::Qw, K::BadOp) => "qw.op-unknown",
        (Layer::Qw, K::Bounds) => "qw.bounds",
        (Layer::Qw, K::Truncated) => "qw.message-overrun",
        (Layer::Qw, K::MissingDelta) => "qw.delta-missing",
        (Layer::Qw, K::Checksum) => "qw.move-checksum",
        (Layer::Qw, K::DemoRecord) => "demo.record-length",
        (Layer::Qw, _) => "qw.decode",
        (Layer::Demo, K::Truncated) => "demo.truncated",
        (Layer::Demo, K::DemoRecord) => "demo.record-length",
        (Layer::Demo, _) => "demo.framing",
        (Layer::Capture, K::CaptureFormat) => "capture.format",
        (Layer::Capture, K::BadRecord) => "capture.bad-record",
        (Layer::Capture, K::Truncated) => "capture.truncated",
        (Layer::Capture, K::Io) => "capture.io",
        (Layer::Capture, K::UnsupportedLink) => "net.unsupported-link",
        (Layer::Capture, K::MalformedLink) => "net.link",
        (Layer::Capture, K::Ip) => "net.ip",
        (Layer::Capture, K::Fragment) => "net.ip-fragment",
        (Layer::Capture, K::FlowTableFull) => "capture.flow-table-full",
        (Layer::Capture, _) => "capture.other",
    }
}

/// A finding for `e`: its rule, kind, message and position. A demo file's byte is where the
/// record starts (`offset`); a QuakeWorld message's byte is inside the message (`bit` = 8 ×
/// byte when no bit is known).
pub fn finding(file: &str, layer: Layer, e: &Error) -> Finding {
    let p = &e.pos;
    let in_message = matches!(layer, Layer::Qw) && p.record.is_none();
    let (offset, bit) = if in_message {
        (None, p.bit.or(p.byte.map(|b| b * 8)))
    } else {
        (p.byte, p.bit)
    };
    Finding {
        file: p.file.clone().unwrap_or_else(|| file.to_string()),
        flow: p.flow,
        frame: p.frame,
        record: p.record,
        offset,
        bit,
        dir: p.dir,
        rule: rule(layer, e.kind),
        kind: Some(e.kind),
        message: e.message.clone(),
    }
}

/// What identifies an error seen on a message, to leave out its copy on the flow.
pub type ErrorKey = (ErrorKind, u64, Option<u64>, String);

pub fn key(e: &Error) -> ErrorKey {
    (e.kind, e.frame_or_record(), e.pos.bit, e.message.clone())
}

/// A Quake 3 message that did not decode to its end (position completed from the message:
/// capture frame, or demo record and its offset in the file).
pub fn q3_message(m: &crate::q3::message::Message, e: &Error) -> Finding {
    let mut f = finding("", Layer::Q3, e);
    f.flow = f.flow.or(Some(m.flow));
    f.dir = f.dir.or(Some(m.dir));
    match m.file_offset {
        Some(off) => {
            f.record = f.record.or(Some(m.frame));
            f.offset = f.offset.or(Some(off));
            f.frame = None;
        }
        None => f.frame = f.frame.or(Some(m.frame)),
    }
    f
}

/// A QuakeWorld message or block that did not decode to its end (positions are bytes). A
/// move whose checksum does not match gets the bit of its `clc_move`.
pub fn qw_message(m: &crate::qw::Message, e: &Error, demo: bool) -> Finding {
    let mut f = finding("", Layer::Qw, e);
    f.flow = f.flow.or(Some(m.flow));
    f.dir = f.dir.or(Some(m.dir));
    if demo {
        f.record = f.record.or(f.frame).or(Some(m.frame));
        f.frame = None;
    } else {
        f.frame = f.frame.or(Some(m.frame));
    }
    if e.kind == ErrorKind::Checksum && f.bit.is_none() {
        use crate::qw::clc::ClientOp;
        f.bit = m.ops.iter().find_map(|o| match &o.kind {
            crate::qw::OpKind::Client(ClientOp::Move {
                checksum_ok: false, ..
            }) => Some(o.at as u64 * 8),
            _ => None,
        });
    }
    f
}

/// A flow's recorded errors that no message carried (netchan, handshake, demo blocks).
pub fn flow(
    file: &str,
    s: &FlowSummary,
    message_errors: Option<&HashSet<ErrorKey>>,
    warnings: &[Error],
    demo: bool,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for e in &s.error_details {
        let known = message_errors.is_some_and(|m| m.contains(&key(e)))
            || warnings
                .iter()
                .any(|w| w.kind == e.kind && w.message == e.message && w.pos.byte == e.pos.byte);
        if known {
            continue;
        }
        let layer = match (s.game, demo) {
            ("qw", true) if e.kind == ErrorKind::DemoRecord || e.pos.record.is_some() => {
                Layer::Demo
            }
            ("qw", _) => Layer::Qw,
            (_, true) => Layer::Demo,
            _ => Layer::Netchan,
        };
        let mut f = finding(file, layer, e);
        f.flow = f.flow.or(Some(s.id));
        out.push(f);
    }
    // Only the first errors of a flow are kept: say how many more there were.
    let kept = s.error_details.len() as u64;
    if s.errors > kept && kept >= crate::flow::MAX_KEPT_ERRORS as u64 {
        out.push(Finding {
            file: file.to_string(),
            flow: Some(s.id),
            rule: "check.more",
            message: format!("{} more errors on this flow", s.errors - kept),
            ..Finding::default()
        });
    }
    out
}

/// The input's own framing problems (capture records, demo records).
pub fn report(file: &str, r: &Report, demo: bool) -> Vec<Finding> {
    let layer = if demo { Layer::Demo } else { Layer::Capture };
    let mut out: Vec<Finding> = r
        .warnings
        .iter()
        .map(|w| {
            let mut f = finding(file, layer, w);
            if demo {
                f.flow = f.flow.or(Some(1));
            }
            f
        })
        .collect();
    let total = r.warnings_total.max(r.warnings.len() as u64);
    if total > r.warnings.len() as u64 {
        out.push(Finding {
            file: file.to_string(),
            rule: "check.more",
            message: format!("{} more warnings", total - r.warnings.len() as u64),
            ..Finding::default()
        });
    }
    // A fatal capture error is always a warning; it is named again when it was not kept.
    if let Some(fatal) = r.fatal.as_ref().filter(|_| total > r.warnings.len() as u64) {
        out.push(Finding {
            file: file.to_string(),
            rule: "capture.fatal",
            message: fatal.clone(),
            ..Finding::default()
        });
    }
    out
}
