//! Named rules for what the decoders already found: message decode errors, netchan errors
//! recorded on flows, and the framing warnings of the input. The rule comes from the error's
//! kind (its text, until errors are typed); the position from the message or record.
use std::collections::HashSet;

use super::Finding;
use crate::flow::FlowSummary;
use crate::pipeline::Report;

/// (text the error contains, rule), first match wins.
const Q3_RULES: [(&str, &str); 17] = [
    ("unknown op", "q3.op-unknown"),
    ("bad client command byte", "q3.op-unknown"),
    ("configstring index", "q3.configstring-index"),
    ("gamestate configstrings exceed", "q3.gamestate-size"),
    ("area mask", "q3.areamask-length"),
    ("invalid field count", "q3.field-count"),
    ("usercmd count", "q3.usercmd-count"),
    ("download chunk", "q3.download-size"),
    ("voip packet", "q3.voip-size"),
    ("read past end", "q3.message-overrun"),
    ("bytes exceeds 16384", "netchan.packet-too-long"),
    ("exceeds 16384 bytes", "netchan.fragment-too-long"),
    ("jumps more than", "netchan.sequence-jump"),
    ("shorter than its", "netchan.header-truncated"),
    ("fragment claims", "netchan.fragment-bounds"),
    ("bad protocol 71 checksum", "netchan.checksum"),
    ("capture starts after", "capture.mid-session"),
];

const DEMO_RULES: [(&str, &str); 3] = [
    ("without the end-of-demo marker", "demo.end-marker"),
    ("demo truncated", "demo.truncated"),
    ("claims", "demo.record-length"),
];

fn classify(text: &str, table: &[(&str, &'static str)], default: &'static str) -> &'static str {
    table
        .iter()
        .find(|(k, _)| text.contains(k))
        .map_or(default, |(_, r)| r)
}

/// The number after `key` in `text` (e.g. "at bit 123").
fn number_after(text: &str, key: &str) -> Option<u64> {
    let rest = &text[text.find(key)? + key.len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

fn blank(rule: &'static str, message: String) -> Finding {
    Finding {
        file: String::new(),
        flow: None,
        frame: None,
        record: None,
        offset: None,
        bit: None,
        rule,
        message,
    }
}

/// A Quake 3 message that did not decode to its end.
pub fn q3_message(m: &crate::q3::message::Message, err: &str) -> Finding {
    let mut f = blank(classify(err, &Q3_RULES, "q3.decode"), err.to_string());
    f.flow = Some(m.flow);
    f.bit = number_after(err, "at bit ");
    match m.file_offset {
        Some(off) => {
            f.record = Some(m.frame);
            f.offset = Some(off);
        }
        None => f.frame = Some(m.frame),
    }
    f
}

/// A QuakeWorld message or block that did not decode to its end (positions are bytes).
pub fn qw_message(m: &crate::qw::Message, err: &str, demo: bool) -> Finding {
    let mut f = blank("qw.decode", err.to_string());
    f.flow = Some(m.flow);
    f.bit = number_after(err, "at byte ").map(|b| b * 8);
    if demo {
        f.record = Some(m.frame);
    } else {
        f.frame = Some(m.frame);
    }
    f
}

/// A flow's recorded errors that no message carried (netchan, handshake).
pub fn flow(
    file: &str,
    s: &FlowSummary,
    message_errors: Option<&HashSet<String>>,
    warnings: &[String],
) -> Vec<Finding> {
    let mut out = Vec::new();
    for e in &s.error_details {
        let known = message_errors.is_some_and(|m| m.contains(&e.message))
            || warnings.contains(&e.message)
            || e.message.starts_with("record ");
        if known {
            continue;
        }
        let default = if s.game == "qw" {
            "qw.decode"
        } else {
            "q3.decode"
        };
        let mut f = blank(classify(&e.message, &Q3_RULES, default), e.message.clone());
        f.file = file.to_string();
        f.flow = Some(s.id);
        f.frame = Some(e.frame);
        f.bit = number_after(&e.message, "at bit ");
        out.push(f);
    }
    // Only the first errors of a flow are kept: say how many more there were.
    let kept = s.error_details.len() as u64;
    if s.errors > kept && kept >= crate::flow::MAX_KEPT_ERRORS as u64 {
        let mut f = blank(
            "check.more",
            format!("{} more errors on this flow", s.errors - kept),
        );
        f.file = file.to_string();
        f.flow = Some(s.id);
        out.push(f);
    }
    out
}

/// The input's own framing problems (capture records, demo records).
pub fn report(file: &str, r: &Report, demo: bool) -> Vec<Finding> {
    let mut out = Vec::new();
    for w in &r.warnings {
        let rule = if demo {
            classify(w, &DEMO_RULES, "demo.framing")
        } else {
            "capture.framing"
        };
        let mut f = blank(rule, w.clone());
        f.file = file.to_string();
        if demo {
            f.flow = Some(1);
            f.record = number_after(w, "record ");
            f.offset = number_after(w, "at byte ").or_else(|| number_after(w, "ends at byte "));
        } else {
            f.frame = number_after(w, "frame ");
        }
        out.push(f);
    }
    if let Some(fatal) = r.fatal.as_ref().filter(|f| !r.warnings.contains(f)) {
        let mut f = blank("capture.fatal", fatal.clone());
        f.file = file.to_string();
        out.push(f);
    }
    out
}

/// A QuakeWorld clc_move whose checksum byte does not match its commands and sequence (the
/// server ignores such moves).
pub fn qw_move_checksum(m: &crate::qw::Message) -> Option<Finding> {
    use crate::qw::clc::ClientOp;
    let (at, checksum) = m.ops.iter().find_map(|o| match &o.kind {
        crate::qw::OpKind::Client(ClientOp::Move {
            checksum,
            checksum_ok: false,
            ..
        }) => Some((o.at, *checksum)),
        _ => None,
    })?;
    let mut f = blank(
        "qw.move-checksum",
        format!("clc_move checksum {checksum} does not match its commands and sequence"),
    );
    f.flow = Some(m.flow);
    f.frame = Some(m.frame);
    f.bit = Some(at as u64 * 8);
    Some(f)
}
