//! One error type for everything a run counts and goes on from: a typed [`ErrorKind`], the
//! [`Position`] where it was found and the per-layer message. Built only when something
//! fails, so the success path pays nothing; rendered once (`file: flow 3, frame 120, bit 344:
//! message`) and serialized as one flat JSON object (absent position fields omitted).
use std::fmt;

use serde::Serialize;

use crate::flow::Dir;

/// What kind of problem. The serde names are the `kind` strings of the JSON error object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// Not a pcap/pcapng file, or its framing is broken ([`crate::capture::CaptureError`]).
    CaptureFormat,
    /// A capture record skipped: too large or inconsistent.
    BadRecord,
    /// Reading the input failed.
    Io,
    /// Something is cut short: a capture record, a header, a message, a demo.
    Truncated,
    /// No decoder for the frame's link type.
    UnsupportedLink,
    /// A link-layer header with impossible content.
    MalformedLink,
    /// An IP or UDP header with impossible content.
    Ip,
    /// Inconsistent IP fragments (the datagram was dropped), or fragmented datagrams that
    /// never completed (counted once per input).
    Fragment,
    /// A netchan header or fragment that cannot be read.
    Netchan,
    /// A netchan sequence that goes backwards: the sender used a sequence number again for
    /// other content, or went back further than any reordering path would (not a duplicate
    /// or a late packet of the network's making).
    Sequence,
    /// A Huffman code no engine writes (NYT), or a bad adaptive Huffman block.
    Huffman,
    /// An unknown command byte (svc / clc / temp entity / demo block type).
    BadOp,
    /// A delta field count beyond the field table.
    FieldCount,
    /// A count, index or length outside its engine limit.
    Bounds,
    /// A demo record whose framing is broken.
    DemoRecord,
    /// A connectionless packet that cannot be decoded.
    Oob,
    /// A delta from a frame the receiver does not hold (lost, or before the capture).
    MissingDelta,
    /// A QuakeWorld move command whose checksum does not match.
    Checksum,
    /// The capture starts after the connection's handshake: messages cannot be decoded.
    MidSession,
    /// The flow tables were full: datagrams counted but not tracked.
    FlowTableFull,
    /// Content that is well framed but makes no sense to the decoder.
    Malformed,
}

/// Where a problem was found; every field is optional, absent ones are not rendered.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Position {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// Capture frame (1-based).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frame: Option<u64>,
    /// Demo record or block index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<u64>,
    /// Byte offset: in the file for capture and demo framing, in the message otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub byte: Option<u64>,
    /// Bit offset in the (Huffman-coded) message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bit: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flow: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dir: Option<Dir>,
}

/// A counted problem: kind, position, and the layer's message (without the position).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Error {
    pub kind: ErrorKind,
    #[serde(flatten)]
    pub pos: Position,
    pub message: String,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            pos: Position::default(),
            message: message.into(),
        }
    }
    pub fn file(mut self, file: &str) -> Self {
        self.pos.file = Some(file.to_string());
        self
    }
    pub fn flow(mut self, flow: u32) -> Self {
        self.pos.flow = Some(flow);
        self
    }
    pub fn dir(mut self, dir: Dir) -> Self {
        self.pos.dir = Some(dir);
        self
    }
    pub fn frame(mut self, frame: u64) -> Self {
        self.pos.frame = Some(frame);
        self
    }
    pub fn record(mut self, record: u64) -> Self {
        self.pos.record = Some(record);
        self
    }
    pub fn byte(mut self, byte: u64) -> Self {
        self.pos.byte = Some(byte);
        self
    }
    /// Sets the bit and drops a trailing " at bit N" the layer's message already carries, so
    /// the position is rendered once.
    pub fn bit(mut self, bit: u64) -> Self {
        self.pos.bit = Some(bit);
        let suffix = format!(" at bit {bit}");
        if self.message.ends_with(&suffix) {
            self.message.truncate(self.message.len() - suffix.len());
        }
        self
    }
    /// Same as [`Error::bit`] when the bit is known.
    pub fn maybe_bit(self, bit: Option<usize>) -> Self {
        match bit {
            Some(b) => self.bit(b as u64),
            None => self,
        }
    }
    /// Sets the byte and drops a trailing " at byte N" (see [`Error::bit`]).
    pub fn at_byte(mut self, byte: u64) -> Self {
        let suffix = format!(" at byte {byte}");
        if self.message.ends_with(&suffix) {
            self.message.truncate(self.message.len() - suffix.len());
        }
        self.byte(byte)
    }
    /// The frame, or for demo files the record: what `sort` orders a flow's errors by.
    pub fn frame_or_record(&self) -> u64 {
        self.pos.frame.or(self.pos.record).unwrap_or(0)
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{file}: ")?;
        }
        let parts = [
            ("flow", self.flow.map(u64::from)),
            ("frame", self.frame),
            ("record", self.record),
            ("byte", self.byte),
            ("bit", self.bit),
        ];
        let mut first = true;
        for (name, v) in parts {
            if let Some(v) = v {
                write!(f, "{}{name} {v}", if first { "" } else { ", " })?;
                first = false;
            }
        }
        if !first {
            write!(f, ": ")?;
        }
        Ok(())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.pos, self.message)
    }
}

impl std::error::Error for Error {}

// Conversions from the per-layer error enums: each layer keeps its own precise error, and
// maps it to a kind and the position it knows here, at the one place it becomes counted.

impl From<&crate::capture::CaptureError> for Error {
    fn from(e: &crate::capture::CaptureError) -> Self {
        use crate::capture::CaptureError as C;
        // The offset goes into the position; the text says the rest once.
        let (kind, offset, message) = match e {
            C::NotACapture { offset, message } => (
                ErrorKind::CaptureFormat,
                offset,
                format!("not a capture file: {message}"),
            ),
            C::Truncated { offset } => (
                ErrorKind::Truncated,
                offset,
                "truncated capture: the record is cut short by the end of the file".into(),
            ),
            C::Io { offset, source } => (ErrorKind::Io, offset, format!("I/O error: {source}")),
            C::BadFraming { offset, message } => (
                ErrorKind::CaptureFormat,
                offset,
                format!("corrupt capture framing: {message}"),
            ),
            C::TooLarge { offset, len, limit } => (
                ErrorKind::BadRecord,
                offset,
                format!("record too large ({len} bytes, limit {limit}); skipped"),
            ),
            C::BadRecord { offset, message } => (
                ErrorKind::BadRecord,
                offset,
                format!("bad record: {message}; skipped"),
            ),
        };
        Error::new(kind, message).byte(*offset)
    }
}

impl From<&crate::net::NetError> for Error {
    fn from(e: &crate::net::NetError) -> Self {
        use crate::net::NetError as N;
        let kind = match e {
            N::UnsupportedLink(_) => ErrorKind::UnsupportedLink,
            N::Truncated { .. } => ErrorKind::Truncated,
            N::Malformed { message, .. } if is_ip_layer(message) => ErrorKind::Ip,
            N::Malformed { .. } => ErrorKind::MalformedLink,
            N::Fragment { .. } => ErrorKind::Fragment,
        };
        let err = Error::new(kind, e.to_string());
        match e.frame() {
            Some(f) => err.frame(f),
            None => err,
        }
    }
}

/// The IP layer's messages name their header first (see `net/ip.rs`).
fn is_ip_layer(message: &str) -> bool {
    ["IPv4", "IPv6", "UDP", "IP "]
        .iter()
        .any(|p| message.starts_with(p))
}

impl From<&crate::q3::demo::DemoError> for Error {
    fn from(e: &crate::q3::demo::DemoError) -> Self {
        use crate::q3::demo::{resync_text, DemoError as D};
        use crate::q3::netchan::MAX_MSGLEN;
        // Record and byte go into the position; the text says the rest once.
        let (kind, index, offset, message) = match e {
            D::Truncated {
                index,
                offset,
                need,
                have,
            } => (
                ErrorKind::Truncated,
                index,
                offset,
                format!("demo truncated in this record (needs {need} bytes, {have} left)"),
            ),
            D::NoEndMarker { index, offset } => (
                ErrorKind::Truncated,
                index,
                offset,
                "demo truncated: the file ends after this record without the end-of-demo marker"
                    .to_string(),
            ),
            D::BadLength {
                index,
                offset,
                len,
                resync_at,
            } => (
                ErrorKind::DemoRecord,
                index,
                offset,
                format!(
                    "record claims {len} bytes (max {MAX_MSGLEN}); {}",
                    resync_text(*resync_at, *offset)
                ),
            ),
        };
        Error::new(kind, message).record(*index).byte(*offset)
    }
}

fn bit_kind(e: &crate::q3::bits::BitError) -> ErrorKind {
    match e {
        crate::q3::bits::BitError::PastEnd { .. } => ErrorKind::Truncated,
        crate::q3::bits::BitError::Nyt { .. } => ErrorKind::Huffman,
    }
}

fn delta_kind(e: &crate::q3::delta::DeltaError) -> ErrorKind {
    match e {
        crate::q3::delta::DeltaError::Bits(b) => bit_kind(b),
        crate::q3::delta::DeltaError::FieldCount { .. } => ErrorKind::FieldCount,
    }
}

impl From<&crate::q3::svc::SvcError> for Error {
    fn from(e: &crate::q3::svc::SvcError) -> Self {
        use crate::q3::svc::SvcError as S;
        let kind = match e {
            S::Bits(b) => bit_kind(b),
            S::Delta(d) => delta_kind(d),
            S::BadOp { .. } | S::BadGamestateOp { .. } => ErrorKind::BadOp,
            S::ConfigstringIndex { .. }
            | S::GamestateTooBig { .. }
            | S::AreaMask { .. }
            | S::DownloadSize { .. }
            | S::VoipSize { .. } => ErrorKind::Bounds,
        };
        let bit = e.bit().or(match e {
            S::Delta(crate::q3::delta::DeltaError::FieldCount { bit, .. }) => Some(*bit),
            S::Delta(crate::q3::delta::DeltaError::Bits(b)) => Some(b.bit()),
            _ => None,
        });
        Error::new(kind, e.to_string()).maybe_bit(bit)
    }
}

impl From<&crate::q3::clc::ClcError> for Error {
    fn from(e: &crate::q3::clc::ClcError) -> Self {
        use crate::q3::clc::ClcError as C;
        let (kind, bit) = match e {
            C::Bits(b) => (bit_kind(b), b.bit()),
            C::BadOp { bit, .. } => (ErrorKind::BadOp, *bit),
            C::CmdCount { bit, .. } | C::VoipSize { bit, .. } => (ErrorKind::Bounds, *bit),
        };
        Error::new(kind, e.to_string()).bit(bit as u64)
    }
}

impl From<&crate::q3::netchan::HeaderError> for Error {
    fn from(e: &crate::q3::netchan::HeaderError) -> Self {
        Error::new(ErrorKind::Netchan, e.to_string())
    }
}

impl From<&crate::q3::oob::OobError> for Error {
    fn from(e: &crate::q3::oob::OobError) -> Self {
        let kind = match e {
            crate::q3::oob::OobError::Short(_) => ErrorKind::Truncated,
            crate::q3::oob::OobError::Connect(_) => ErrorKind::Oob,
        };
        Error::new(kind, e.to_string())
    }
}

impl From<&crate::qw::cursor::DecodeError> for Error {
    fn from(e: &crate::qw::cursor::DecodeError) -> Self {
        let w = e.what.as_str();
        // The QuakeWorld decoder names its faults in words; these prefixes are all it uses.
        let kind = if w.starts_with("delta packetentities from") {
            ErrorKind::MissingDelta
        } else if w.starts_with("unknown") || w.starts_with("bad .") {
            ErrorKind::BadOp
        } else if w.contains("past end") || w.contains("truncated") || w.contains("short") {
            ErrorKind::Truncated
        } else if w.contains(">=") || w.contains("more than") || w.contains("longer than") {
            ErrorKind::Bounds
        } else if w.starts_with("bad dem_read") || w.starts_with("bad .mvd block length") {
            ErrorKind::DemoRecord
        } else {
            ErrorKind::Malformed
        };
        Error::new(kind, e.what.clone()).byte(e.at as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_position_once() {
        let e = Error::new(
            ErrorKind::Truncated,
            "IPv4 header needs 20 bytes, only 14 present",
        )
        .file("a.pcapng")
        .frame(1);
        assert_eq!(
            e.to_string(),
            "a.pcapng: frame 1: IPv4 header needs 20 bytes, only 14 present"
        );
        let e = Error::new(ErrorKind::BadOp, "unknown op 9 at bit 344")
            .flow(3)
            .frame(120)
            .bit(344);
        assert_eq!(e.to_string(), "flow 3, frame 120, bit 344: unknown op 9");
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"kind": "bad_op", "frame": 120, "bit": 344, "flow": 3, "message": "unknown op 9"})
        );
    }
}
