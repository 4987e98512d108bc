//! The server message's records: op numbers, the decoded ops (gamestate, snapshot,
//! download, VoIP, commands), errors and the detail levels a decode can stop at.
use super::*;

pub const SVC_BAD: u8 = 0;
pub const SVC_NOP: u8 = 1;
pub const SVC_GAMESTATE: u8 = 2;
pub const SVC_CONFIGSTRING: u8 = 3;
pub const SVC_BASELINE: u8 = 4;
pub const SVC_SERVERCOMMAND: u8 = 5;
pub const SVC_DOWNLOAD: u8 = 6;
pub const SVC_SNAPSHOT: u8 = 7;
pub const SVC_EOF: u8 = 8;
pub const SVC_VOIP_SPEEX: u8 = 9;
pub const SVC_VOIP_OPUS: u8 = 10;

/// Largest download chunk the client accepts.
pub const MAX_DOWNLOAD_CHUNK: i32 = 16384;

/// Why a server message could not be decoded to its end.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SvcError {
    #[error("read past end of server message ({0})")]
    Bits(#[from] BitError),
    #[error("{0}")]
    Delta(#[from] DeltaError),
    #[error("illegible server message: unknown op {op} at bit {bit}")]
    BadOp { op: u8, bit: usize },
    #[error("gamestate: unknown op {op} (bad command byte) at bit {bit}")]
    BadGamestateOp { op: u8, bit: usize },
    #[error("configstring index {index} out of range at bit {bit}")]
    ConfigstringIndex { index: i32, bit: usize },
    #[error("gamestate configstrings exceed {MAX_GAMESTATE_CHARS} characters at bit {bit}")]
    GamestateTooBig { bit: usize },
    #[error("snapshot area mask of {len} bytes (max {MAX_AREAMASK}) at bit {bit}")]
    AreaMask { len: u8, bit: usize },
    #[error("download chunk of {size} bytes at bit {bit}")]
    DownloadSize { size: i32, bit: usize },
    #[error("voip packet of {size} bytes at bit {bit}")]
    VoipSize { size: i32, bit: usize },
}

impl SvcError {
    /// The bit position the error refers to, when it names one.
    pub fn bit(&self) -> Option<usize> {
        match self {
            SvcError::Bits(BitError::PastEnd { bit }) | SvcError::Bits(BitError::Nyt { bit }) => {
                Some(*bit)
            }
            SvcError::BadOp { bit, .. }
            | SvcError::BadGamestateOp { bit, .. }
            | SvcError::ConfigstringIndex { bit, .. }
            | SvcError::GamestateTooBig { bit }
            | SvcError::AreaMask { bit, .. }
            | SvcError::DownloadSize { bit, .. }
            | SvcError::VoipSize { bit, .. } => Some(*bit),
            SvcError::Delta(_) => None,
        }
    }
}

/// A configstring carried in a gamestate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConfigString {
    pub index: u16,
    pub value: String,
}

/// svc_gamestate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gamestate {
    pub bit: usize,
    #[serde(rename = "serverCommandSequence")]
    pub server_command_seq: i32,
    pub configstrings: Vec<ConfigString>,
    pub baselines: Vec<EntityDelta>,
    #[serde(rename = "clientNum")]
    pub client_num: i32,
    #[serde(rename = "checksumFeed")]
    pub checksum_feed: i32,
}

/// svc_snapshot, with the absolute state it produced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Snapshot {
    pub bit: usize,
    #[serde(rename = "serverTime")]
    pub server_time: i32,
    /// The delta byte as sent (0 = full snapshot).
    #[serde(rename = "deltaNum")]
    pub delta_num: u8,
    /// The base message number (-1 for a full snapshot).
    #[serde(rename = "deltaBase")]
    pub delta_base: i32,
    pub flags: u8,
    pub areamask: Vec<u8>,
    /// Whether the client accepted it (a delta needs a valid base it still holds).
    pub valid: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalid_reason: Option<&'static str>,
    /// Bit position where the playerstate starts (the engine's "playerstate" line).
    pub ps_bit: usize,
    pub playerstate: PlayerDelta,
    /// Bit position where the entity list starts ("packet entities").
    pub entities_bit: usize,
    /// The transmitted entity deltas, in order.
    pub entities: Vec<EntityDelta>,
    /// Number of entities in the resulting frame; `None` when unknown (mid-session, the
    /// frame descends from a delta base the capture missed).
    pub entity_count: Option<usize>,
    /// Mid-session: the delta base precedes the capture. The client held it; what it
    /// gave (unsent values, entities not mentioned) is unknown, and `valid` is assumed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub base_unknown: bool,
    /// The whole frame after the delta (shared with the history, not serialized).
    #[serde(skip)]
    pub frame: Arc<SnapFrame>,
}

/// svc_download.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Download {
    pub bit: usize,
    pub block: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_size: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    pub size: i32,
    /// True when this block is the one the client expected (it keeps only those); `None`
    /// mid-session until a download's first block shows which one the client expects.
    pub expected: Option<bool>,
    #[serde(skip)]
    pub data: Vec<u8>,
}

/// svc_voipSpeex / svc_voipOpus (protocol 71).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Voip {
    pub bit: usize,
    pub opus: bool,
    pub sender: i16,
    pub generation: u8,
    pub sequence: i32,
    pub frames: u8,
    pub flags: i32,
    pub size: i16,
}

/// One server op.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "op")]
pub enum ServerOp {
    #[serde(rename = "nop")]
    Nop { bit: usize },
    #[serde(
        rename = "serverCommand",
        serialize_with = "crate::q3::color::command_json"
    )]
    ServerCommand {
        bit: usize,
        seq: i32,
        text: String,
        /// False for a retransmission the client already had.
        new: bool,
    },
    #[serde(rename = "gamestate")]
    Gamestate(Box<Gamestate>),
    #[serde(rename = "snapshot")]
    Snapshot(Box<Snapshot>),
    #[serde(rename = "download")]
    Download(Box<Download>),
    #[serde(rename = "voip")]
    Voip(Box<Voip>),
    #[serde(rename = "EOF")]
    Eof { bit: usize },
}

impl ServerOp {
    /// The engine's `svc_strings` name for the op.
    pub fn svc_name(&self) -> &'static str {
        match self {
            ServerOp::Nop { .. } => "svc_nop",
            ServerOp::ServerCommand { .. } => "svc_serverCommand",
            ServerOp::Gamestate(_) => "svc_gamestate",
            ServerOp::Snapshot(_) => "svc_snapshot",
            ServerOp::Download(_) => "svc_download",
            ServerOp::Voip(v) if v.opus => "svc_voipOpus",
            ServerOp::Voip(_) => "svc_voipSpeex",
            ServerOp::Eof { .. } => "svc_EOF",
        }
    }

    /// Bit position right after the op byte.
    pub fn bit(&self) -> usize {
        match self {
            ServerOp::Nop { bit } | ServerOp::ServerCommand { bit, .. } | ServerOp::Eof { bit } => {
                *bit
            }
            ServerOp::Gamestate(g) => g.bit,
            ServerOp::Snapshot(s) => s.bit,
            ServerOp::Download(d) => d.bit,
            ServerOp::Voip(v) => v.bit,
        }
    }
}

/// A decoded server message. `error` is set when decoding stopped early; `ops` holds what
/// was decoded before it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerMessage {
    pub ack: i32,
    pub ops: Vec<ServerOp>,
    /// Not in JSON: the message's own `error` (with its position) says it.
    #[serde(skip)]
    pub error: Option<SvcError>,
    /// With [`Detail::Headers`]: the message's snapshot as its head (`ops` then holds no
    /// snapshot and no EOF). With [`Detail::Events`]: a snapshot whose frame holds no event
    /// entity, as its head.
    #[serde(skip)]
    pub snapshot_head: Option<SnapshotHead>,
}

/// What a snapshot says before its playerstate: enough to check times and delta windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotHead {
    /// Bit of the svc_snapshot op.
    pub bit: usize,
    pub server_time: i32,
    pub delta_num: u8,
    /// The base message number (-1 for a full snapshot).
    pub delta_base: i32,
    pub flags: u8,
    pub valid: bool,
    pub invalid_reason: Option<&'static str>,
}

impl Snapshot {
    /// The snapshot's head.
    pub fn head(&self) -> SnapshotHead {
        SnapshotHead {
            bit: self.bit,
            server_time: self.server_time,
            delta_num: self.delta_num,
            delta_base: self.delta_base,
            flags: self.flags,
            valid: self.valid,
            invalid_reason: self.invalid_reason,
        }
    }
}

impl Serialize for SvcError {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

/// How much of a server message the parser records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Every op with its deltas (decode output, demo writing).
    Full,
    /// Only the client state and the error: `ops` stays empty. The flow table needs nothing
    /// more, and skipping the per-entity records is most of the cost of a snapshot.
    StateOnly,
    /// Every op but EOF; a snapshot as [`ServerMessage::snapshot_head`] only (time, delta
    /// base, flags, validity): no playerstate or entity records, no frame (`quakecap check`).
    Headers,
    /// Every op but EOF; a snapshot with its head and, as its frame, only its obituary
    /// entities ([`crate::q3::state::is_obituary`], the one entity event the game events read):
    /// no delta records (`quakecap events`). A snapshot without such entities is its head
    /// only ([`ServerMessage::snapshot_head`]); a gamestate without its baselines.
    Events,
    /// What the network samples read (`quakecap net`), and nothing more: no op is recorded,
    /// and a snapshot is read only up to its playerstate's commandTime, its first field
    /// (the frame stored keeps its head and that time; its entities and the playerstate's
    /// other fields are unknown, as mid-session). The rest of the message is not read: the
    /// engines write the snapshot after the server commands, followed only by voice data
    /// (ioquake3) or download blocks and padding (1.32 servers; the download's progress is
    /// then not followed, and `net` reads nothing of it). The entities are most of a
    /// snapshot's bits; nothing `net` reports depends on them.
    /// Unlike the other details, the client state differs (no entities, so no entity-buffer
    /// check of a delta base) and so may the error: one in what was left unread is not seen.
    Samples,
}
