//! QuakeWorld in the text layout: a header line (frame, time, flow, direction, then the
//! netchan fields the packet has), then one indented line per op: its byte offset, the
//! engine's name for it and its fields as `key=value`.
//!
//! Op fields come from the ops' serde form, so every field the JSON output has is shown here
//! too without a second hand-kept list per op; only the rendering is text: strings quoted
//! with escapes, lists as `[a b c]`, nested records as `{key=value ...}`, absent as `none`.
use std::fmt::{self, Write};

use crate::qw::{Message, NetchanStatus, Op};

/// Header flags after the sequence numbers, as the receiving netchan saw the packet.
fn netchan_flags(m: &Message, w: &mut dyn Write) -> fmt::Result {
    if m.retransmit == Some(true) {
        w.write_str(" retransmit")?;
    }
    if let Some(q) = m.qport {
        write!(w, " qport {q}")?;
    }
    match m.netchan {
        Some(NetchanStatus::Duplicate) => w.write_str(" duplicate")?,
        Some(NetchanStatus::OutOfOrder) => w.write_str(" out-of-order")?,
        _ => {}
    }
    if let Some(d) = m.dropped.filter(|d| *d > 0) {
        write!(w, " dropped {d}")?;
    }
    Ok(())
}

fn header(m: &Message, w: &mut dyn Write) -> fmt::Result {
    write!(
        w,
        "frame {} time {:.6} flow {} qw {}",
        m.frame,
        m.time,
        m.flow,
        m.dir.as_str()
    )?;
    if m.connectionless {
        w.write_str(" connectionless")?;
    }
    if let Some(b) = m.block {
        write!(w, " block {b}")?;
    }
    if let Some(s) = m.seq {
        let rel = if m.reliable == Some(true) { " rel" } else { "" };
        write!(w, " seq {s}{rel}")?;
    }
    if let Some(a) = m.ack {
        let bit = if m.ack_reliable == Some(true) {
            " relbit"
        } else {
            ""
        };
        write!(w, " ack {a}{bit}")?;
    }
    netchan_flags(m, w)?;
    writeln!(w, " size {}", m.size)
}

/// One field value as text (see the module notes).
fn value(v: &serde_json::Value, w: &mut dyn Write) -> fmt::Result {
    use serde_json::Value;
    match v {
        Value::Null => w.write_str("none"),
        Value::Bool(b) => write!(w, "{b}"),
        Value::Number(n) => write!(w, "{n}"),
        Value::String(s) => w.write_str(&super::readable::quote(&super::readable::qw_plain(s))),
        Value::Array(items) => {
            w.write_char('[')?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    w.write_char(' ')?;
                }
                value(item, w)?;
            }
            w.write_char(']')
        }
        Value::Object(fields) => {
            w.write_char('{')?;
            for (i, (k, item)) in fields.iter().enumerate() {
                if i > 0 {
                    w.write_char(' ')?;
                }
                write!(w, "{k}=")?;
                value(item, w)?;
            }
            w.write_char('}')
        }
    }
}

fn op_line(op: &Op, w: &mut dyn Write) -> fmt::Result {
    write!(w, "  {:4} {}", op.at, op.name())?;
    if let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(op) {
        // `op` repeats the name, `at` the offset already shown.
        for (k, v) in fields.iter().filter(|(k, _)| *k != "op" && *k != "at") {
            write!(w, " {k}=")?;
            value(v, w)?;
        }
    }
    writeln!(w)
}

/// The text of one message: the header line, then one line per op, then the error if any;
/// every line ends with a newline.
pub fn write_message(m: &Message, w: &mut dyn Write) -> fmt::Result {
    header(m, w)?;
    for op in &m.ops {
        op_line(op, w)?;
    }
    if let Some(e) = &m.error {
        writeln!(w, "  ERROR {e}")?;
    }
    Ok(())
}
