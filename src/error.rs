//! One error type for everything a run counts and goes on from: a typed [`ErrorKind`], the
//! [`Position`] where it was found and the per-layer message. Built only when something
//! fails, so the success path pays nothing; rendered once (`file: flow 3, frame 120, bit 344:
//! message`) and serialized as one flat JSON object (absent position fields omitted).
#![warn(missing_docs)]
use std::fmt;

use serde::Serialize;

use crate::vocab::Dir;

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
    /// The input file, when several are read.
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
    /// The flow (`flows` id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flow: Option<u32>,
    /// The direction of the packet within its flow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dir: Option<Dir>,
}

/// A counted problem: kind, position, and the layer's message (without the position).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Error {
    /// What kind of problem.
    pub kind: ErrorKind,
    /// Where it was found.
    #[serde(flatten)]
    pub pos: Position,
    /// The layer's own words, without the position.
    pub message: String,
}

impl Error {
    /// A problem of `kind` with no position yet (the builders below add it).
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            pos: Position::default(),
            message: message.into(),
        }
    }
    /// Found in input `file`.
    pub fn file(mut self, file: &str) -> Self {
        self.pos.file = Some(file.to_string());
        self
    }
    /// Found in flow `flow`.
    pub fn flow(mut self, flow: u32) -> Self {
        self.pos.flow = Some(flow);
        self
    }
    /// Found in a packet of direction `dir`.
    pub fn dir(mut self, dir: Dir) -> Self {
        self.pos.dir = Some(dir);
        self
    }
    /// Found in capture frame `frame` (1-based).
    pub fn frame(mut self, frame: u64) -> Self {
        self.pos.frame = Some(frame);
        self
    }
    /// Found in demo record or block `record`.
    pub fn record(mut self, record: u64) -> Self {
        self.pos.record = Some(record);
        self
    }
    /// Found at byte `byte` (of the file, or of the message).
    pub fn byte(mut self, byte: u64) -> Self {
        self.pos.byte = Some(byte);
        self
    }
    /// Sets the bit and drops a trailing " at bit N" the layer's message already carries, so
    /// the position is rendered once.
    /// Found at bit `bit` of the (Huffman-coded) message; a message ending " at bit N" for
    /// the same bit loses that ending (the position says it).
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

/// Warnings and errors kept per run (the rest are counted): a damaged or hostile input can
/// hold one in every message.
pub const MAX_WARNINGS: usize = 100;

/// An extractor's warnings (malformed events, configstrings, unknown mods): the first
/// [`MAX_WARNINGS`] kept, all counted. A damaged or hostile input can hold a
/// bad event in every message (2 MB of QuakeWorld `setinfo`s for slot 200 gave 180,000
/// warnings, 110 MB and as many lines on stderr), and memory must follow what is kept.
#[derive(Debug, Clone, Default)]
pub struct Warnings {
    kept: Vec<Error>,
    total: u64,
}

impl Warnings {
    /// Count `e`, and keep it while fewer than [`MAX_WARNINGS`] are kept.
    pub fn push(&mut self, e: Error) {
        self.total += 1;
        if self.kept.len() < MAX_WARNINGS {
            self.kept.push(e);
        }
    }

    /// Every warning, kept or not.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The kept warnings, for another list.
    pub fn into_kept(self) -> Vec<Error> {
        self.kept
    }
}

impl std::ops::Deref for Warnings {
    type Target = [Error];
    fn deref(&self) -> &[Error] {
        &self.kept
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
