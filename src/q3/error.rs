//! Quake 3's decoding errors as the crate's counted [`Error`]: each decoder keeps its own
//! precise error, mapped here to a kind and the position it knows, at the one place it
//! becomes counted.
use crate::error::{Error, ErrorKind};

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
