//! The server message's records: op numbers, the decoded ops (gamestate, snapshot,
//! download, VoIP, commands), errors and the detail levels a decode can stop at.
use super::*;

/// `svc_bad`: never sent; the client rejects it as illegible.
pub const SVC_BAD: u8 = 0;
/// `svc_nop`: no content (1.32's `sv_padPackets` padding).
pub const SVC_NOP: u8 = 1;
/// `svc_gamestate`: command sequence, configstrings, baselines, clientNum, checksumFeed.
pub const SVC_GAMESTATE: u8 = 2;
/// `svc_configstring`: only inside a gamestate; short index, big string.
pub const SVC_CONFIGSTRING: u8 = 3;
/// `svc_baseline`: only inside a gamestate; entity number, delta from an all-zero state.
pub const SVC_BASELINE: u8 = 4;
/// `svc_serverCommand`: a reliable server command (long sequence, string).
pub const SVC_SERVERCOMMAND: u8 = 5;
/// `svc_download`: one block of a file download.
pub const SVC_DOWNLOAD: u8 = 6;
/// `svc_snapshot`: serverTime, delta byte, flags, area mask, playerstate and entity deltas.
pub const SVC_SNAPSHOT: u8 = 7;
/// `svc_EOF`: end of the message (and of a gamestate's configstring/baseline list).
pub const SVC_EOF: u8 = 8;
/// `svc_voipSpeex` (ioquake3, protocol 71): legacy Speex voice, laid out as Opus, ignored.
pub const SVC_VOIP_SPEEX: u8 = 9;
/// `svc_voipOpus` (ioquake3, protocol 71): one Opus voice packet relayed from a client.
pub const SVC_VOIP_OPUS: u8 = 10;

/// Largest download chunk the client accepts.
pub const MAX_DOWNLOAD_CHUNK: i32 = 16384;

/// Why a server message could not be decoded to its end.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SvcError {
    /// A read ran past the end of the message, or met the Huffman NYT code.
    #[error("read past end of server message ({0})")]
    Bits(#[from] BitError),
    /// A playerstate or entity delta could not be read.
    #[error("{0}")]
    Delta(#[from] DeltaError),
    /// An op byte that is no `svc_*` op (the engine's "Illegible server message").
    #[error("illegible server message: unknown op {op} at bit {bit}")]
    BadOp {
        /// The op byte read.
        op: u8,
        /// Bit position right after the op byte.
        bit: usize,
    },
    /// Inside a gamestate, an op other than `svc_configstring`, `svc_baseline` or `svc_EOF`.
    #[error("gamestate: unknown op {op} (bad command byte) at bit {bit}")]
    BadGamestateOp {
        /// The op byte read.
        op: u8,
        /// Bit position right after the op byte.
        bit: usize,
    },
    /// A gamestate configstring index outside 0..`MAX_CONFIGSTRINGS` (1024).
    #[error("configstring index {index} out of range at bit {bit}")]
    ConfigstringIndex {
        /// The index as read (a signed short).
        index: i32,
        /// Bit position where the index starts (right after `svc_configstring`).
        bit: usize,
    },
    /// The gamestate's configstring text passed `MAX_GAMESTATE_CHARS` (16000, terminators
    /// included).
    #[error("gamestate configstrings exceed {MAX_GAMESTATE_CHARS} characters at bit {bit}")]
    GamestateTooBig {
        /// Bit position right after the `svc_configstring` op of the string that overflowed.
        bit: usize,
    },
    /// A snapshot area mask longer than [`MAX_AREAMASK`] (32) bytes.
    #[error("snapshot area mask of {len} bytes (max {MAX_AREAMASK}) at bit {bit}")]
    AreaMask {
        /// The length byte as read.
        len: u8,
        /// Bit position where the length byte starts.
        bit: usize,
    },
    /// A download block size outside 0..=[`MAX_DOWNLOAD_CHUNK`].
    #[error("download chunk of {size} bytes at bit {bit}")]
    DownloadSize {
        /// The block size as read (a signed short).
        size: i32,
        /// Bit position where the size short starts.
        bit: usize,
    },
    /// A VoIP payload size outside 0..=4096 bytes.
    #[error("voip packet of {size} bytes at bit {bit}")]
    VoipSize {
        /// The payload size as read (a signed short).
        size: i32,
        /// Bit position where the size short starts.
        bit: usize,
    },
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
    /// Index in the configstring table, 0..1024 (`CS_SERVERINFO` 0, `CS_SYSTEMINFO` 1, ...).
    pub index: u16,
    /// The text as `MSG_ReadBigString` gives it (at most 8191 chars, `%` and bytes above 127
    /// read as `.`).
    pub value: String,
}

/// svc_gamestate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gamestate {
    /// Bit position right after the `svc_gamestate` op byte.
    pub bit: usize,
    /// `serverCommandSequence`: the server's latest reliable command sequence; the client
    /// takes it as the last server command received.
    #[serde(rename = "serverCommandSequence")]
    pub server_command_seq: i32,
    /// The non-empty configstrings, in the order sent (ascending index).
    pub configstrings: Vec<ConfigString>,
    /// The `svc_baseline` entity deltas (each from an all-zero state); empty with
    /// [`Detail::Events`].
    pub baselines: Vec<EntityDelta>,
    /// `clientNum`: the receiving client's slot (0..64); its player configstring is
    /// `CS_PLAYERS` + this.
    #[serde(rename = "clientNum")]
    pub client_num: i32,
    /// `checksumFeed`: random per map load; part of the usercmd key until the next gamestate.
    #[serde(rename = "checksumFeed")]
    pub checksum_feed: i32,
}

/// svc_snapshot, with the absolute state it produced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Snapshot {
    /// Bit position right after the `svc_snapshot` op byte.
    pub bit: usize,
    /// `serverTime` in ms (1.32: `svs.time`, monotonic across maps; ioquake3: `sv.time`).
    #[serde(rename = "serverTime")]
    pub server_time: i32,
    /// The delta byte as sent (0 = full snapshot).
    #[serde(rename = "deltaNum")]
    pub delta_num: u8,
    /// The base message number (-1 for a full snapshot).
    #[serde(rename = "deltaBase")]
    pub delta_base: i32,
    /// `snapFlags`: bits `SNAPFLAG_RATE_DELAYED` 1, `SNAPFLAG_NOT_ACTIVE` 2,
    /// `SNAPFLAG_SERVERCOUNT` 4.
    pub flags: u8,
    /// The area mask bytes as sent (0..=32; one bit per map area, set for an area the
    /// client cannot see).
    pub areamask: Vec<u8>,
    /// Whether the client accepted it (a delta needs a valid base it still holds).
    pub valid: bool,
    /// Why the client discarded it, in the engine's words ("Delta from invalid frame",
    /// "Delta frame too old", "Delta parseEntitiesNum too old"); `None` when valid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalid_reason: Option<&'static str>,
    /// Bit position where the playerstate starts (the engine's "playerstate" line).
    pub ps_bit: usize,
    /// The playerstate delta, from the base frame's playerstate (all zero for a full one).
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
    /// Bit position right after the `svc_download` op byte.
    pub bit: usize,
    /// Block number (a signed short on the wire, so it wraps; 0 starts a download).
    pub block: i32,
    /// File size in bytes, sent with block 0 when the client expects block 0; negative: the
    /// server refused the download and `error_message` follows instead of data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file_size: Option<i32>,
    /// The server's reason for refusing the download (with a negative `file_size`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// Data bytes in this block, 0..=[`MAX_DOWNLOAD_CHUNK`]; 0 ends the file.
    pub size: i32,
    /// True when this block is the one the client expected (it keeps only those); `None`
    /// mid-session until a download's first block shows which one the client expects.
    pub expected: Option<bool>,
    /// The block's data bytes (not serialized).
    #[serde(skip)]
    pub data: Vec<u8>,
}

/// svc_voipSpeex / svc_voipOpus (protocol 71).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Voip {
    /// Bit position right after the op byte.
    pub bit: usize,
    /// True for `svc_voipOpus`, false for `svc_voipSpeex`.
    pub opus: bool,
    /// Client number of the speaker.
    pub sender: i16,
    /// The speaker's stream generation (changes when the speaker starts a new stream).
    pub generation: u8,
    /// Sequence number of the packet's first frame in the speaker's stream.
    pub sequence: i32,
    /// Number of codec frames in the payload.
    pub frames: u8,
    /// The two `VOIP_FLAGCNT` flag bits: `VOIP_SPATIAL` 1, `VOIP_DIRECT` 2.
    pub flags: i32,
    /// Payload bytes, 0..=4096 (skipped, not kept).
    pub size: i16,
}

/// One server op.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "op")]
pub enum ServerOp {
    /// `svc_nop`.
    #[serde(rename = "nop")]
    Nop {
        /// Bit position right after the op byte.
        bit: usize,
    },
    /// `svc_serverCommand`: a reliable server command (`cs`, `print`, `scores`, ...).
    #[serde(
        rename = "serverCommand",
        serialize_with = "crate::q3::color::command_json"
    )]
    ServerCommand {
        /// Bit position right after the op byte.
        bit: usize,
        /// The command's reliable sequence number (the server's `reliableSequence`).
        seq: i32,
        /// The command text as `MSG_ReadString` gives it (at most 1023 chars, `%` and bytes
        /// above 127 read as `.`).
        text: String,
        /// False for a retransmission the client already had.
        new: bool,
    },
    /// `svc_gamestate`.
    #[serde(rename = "gamestate")]
    Gamestate(Box<Gamestate>),
    /// `svc_snapshot`.
    #[serde(rename = "snapshot")]
    Snapshot(Box<Snapshot>),
    /// `svc_download`.
    #[serde(rename = "download")]
    Download(Box<Download>),
    /// `svc_voipSpeex` or `svc_voipOpus` (protocol 71).
    #[serde(rename = "voip")]
    Voip(Box<Voip>),
    /// `svc_EOF`: the end of the message.
    #[serde(rename = "EOF")]
    Eof {
        /// Bit position right after the op byte.
        bit: usize,
    },
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
    /// `reliableAcknowledge`: the highest client command sequence the server has received
    /// (0 when the message is too short to hold it).
    pub ack: i32,
    /// The ops in message order, as far as [`Detail`] records them.
    pub ops: Vec<ServerOp>,
    /// Not in JSON: the message's own `error` (with its position) says it.
    #[serde(skip)]
    pub error: Option<SvcError>,
    /// With [`Detail::Headers`]: the message's snapshot as its head (`ops` then holds no
    /// snapshot and no EOF). With [`Detail::Events`]: a snapshot whose frame holds no event
    /// entity, as its head.
    #[serde(skip)]
    pub snapshot_head: Option<SnapshotHead>,
    /// Not in JSON: the protocol the message was decoded with, whose tables its states are
    /// written with.
    #[serde(skip)]
    pub protocol: u32,
}

/// What a snapshot says before its playerstate: enough to check times and delta windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotHead {
    /// Bit of the svc_snapshot op.
    pub bit: usize,
    /// `serverTime` in ms.
    pub server_time: i32,
    /// The delta byte as sent (0 = full snapshot).
    pub delta_num: u8,
    /// The base message number (-1 for a full snapshot).
    pub delta_base: i32,
    /// `snapFlags` (`SNAPFLAG_*` bits, see [`Snapshot::flags`]).
    pub flags: u8,
    /// Whether the client accepted it (see [`Snapshot::valid`]).
    pub valid: bool,
    /// Why the client discarded it (see [`Snapshot::invalid_reason`]).
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
    /// Every op; a snapshot with its whole frame (playerstate and entities, as the client
    /// holds them) but no delta records (`quakecap cheats`).
    Frames,
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
