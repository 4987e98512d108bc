//! QuakeWorld's decoding errors as the crate's counted [`Error`].
use crate::error::{Error, ErrorKind};

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
