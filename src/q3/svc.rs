//! Server→client message bodies (q3-protocol.md §6): reliableAcknowledge, then ops until
//! svc_EOF. Parsing updates the [`ClientState`] exactly as `CL_ParseServerMessage` does, so the
//! same code decodes captures and demo files. Every op records the bit position right after
//! its op byte (`bit`), from which the engine's `cl_shownet` offsets follow.
use std::sync::Arc;

use serde::Serialize;

use super::baselines::Baselines;
use super::bits::{read_bytes_into, BitError, BitReader};
use super::delta::{
    read_command_time, read_delta_entity, read_delta_entity_state, read_entity_fields,
    read_entity_flags, read_playerstate_into, ChangeSink, DeltaError, EntityDelta, EntityFlags,
    EntityState, FieldChange, PlayerDelta, PlayerState, PlayerWire,
};
use super::fields::{GENTITYNUM_BITS, MAX_GENTITIES};
pub use super::state::MAX_AREAMASK;
use super::state::{
    is_obituary, ClientState, EntRef, EntityPool, HistFrame, PsKnown, SnapFrame, ENT_ALL_KNOWN,
    MAX_CONFIGSTRINGS, MAX_GAMESTATE_CHARS, MAX_PARSE_ENTITIES, MAX_SNAPSHOT_ENTITIES,
};

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
        serialize_with = "super::color::command_json"
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
    /// entities ([`super::state::is_obituary`], the one entity event the game events read):
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

/// Decode a (descrambled) server message body whose netchan sequence is `seq`, updating
/// `st`. `r` may already be past the reliableAcknowledge (when the caller read it from the
/// scrambled bytes); pass `ack` then.
pub fn parse_server_message(
    r: &mut BitReader<'_>,
    ack: Option<i32>,
    seq: i32,
    st: &mut ClientState,
) -> ServerMessage {
    parse_server_message_with(r, ack, seq, st, Detail::Full)
}

/// [`parse_server_message`] recording `detail`. The client state after it, and the error,
/// are the same whatever the detail but [`Detail::Samples`].
pub fn parse_server_message_with(
    r: &mut BitReader<'_>,
    ack: Option<i32>,
    seq: i32,
    st: &mut ClientState,
    detail: Detail,
) -> ServerMessage {
    let mut msg = ServerMessage {
        ack: ack.unwrap_or(0),
        // The first push allocates room for four ops (a message holds a few: commands, a
        // snapshot, EOF); a message that records none allocates nothing.
        ops: Vec::new(),
        error: None,
        snapshot_head: None,
    };
    if ack.is_none() {
        match r.read_long() {
            Ok(a) => msg.ack = a,
            Err(e) => {
                msg.error = Some(e.into());
                return msg;
            }
        }
    }
    loop {
        match parse_op(r, seq, st, detail, &mut msg.snapshot_head) {
            Ok(None) => {}
            Ok(Some(op)) => {
                let end = matches!(op, ServerOp::Eof { .. });
                let partial = matches!(detail, Detail::Headers | Detail::Events);
                if detail == Detail::Full || (partial && !end) {
                    msg.ops.push(op);
                }
                if end {
                    break;
                }
            }
            Err(e) => {
                msg.error = Some(e);
                break;
            }
        }
    }
    msg
}

/// One op; `None` for a snapshot parsed without its record ([`Detail::StateOnly`]).
fn parse_op(
    r: &mut BitReader<'_>,
    seq: i32,
    st: &mut ClientState,
    detail: Detail,
    head: &mut Option<SnapshotHead>,
) -> Result<Option<ServerOp>, SvcError> {
    let op = r.read_byte()?;
    let bit = r.bit_pos();
    if op == SVC_SNAPSHOT && detail == Detail::StateOnly {
        parse_snapshot_with(r, seq, st, &mut ())?;
        return Ok(None);
    }
    if op == SVC_SNAPSHOT && detail == Detail::Headers {
        let h = parse_snapshot_with(r, seq, st, &mut ())?;
        *head = Some(h.head(bit));
        return Ok(None);
    }
    if op == SVC_SNAPSHOT && detail == Detail::Events {
        return parse_snapshot_events(r, bit, seq, st, head);
    }
    if op == SVC_SNAPSHOT && detail == Detail::Samples {
        parse_snapshot_with(r, seq, st, &mut CommandTimeOnly)?;
        // Not recorded: it ends what is read of the message (see `Detail::Samples`).
        return Ok(Some(ServerOp::Eof { bit }));
    }
    if op == SVC_GAMESTATE && matches!(detail, Detail::StateOnly | Detail::Samples) {
        read_gamestate(r, st, None)?;
        return Ok(None);
    }
    Ok(Some(match op {
        SVC_EOF => ServerOp::Eof { bit },
        SVC_NOP => ServerOp::Nop { bit },
        SVC_SERVERCOMMAND => {
            let cseq = r.read_long()?;
            let text = r.read_string()?;
            let new = st.receive_server_command(cseq, &text);
            ServerOp::ServerCommand {
                bit,
                seq: cseq,
                text,
                new,
            }
        }
        SVC_GAMESTATE => ServerOp::Gamestate(Box::new(parse_gamestate(
            r,
            bit,
            st,
            detail != Detail::Events,
        )?)),
        SVC_SNAPSHOT => ServerOp::Snapshot(Box::new(parse_snapshot(r, bit, seq, st)?)),
        SVC_DOWNLOAD => ServerOp::Download(Box::new(parse_download(r, bit, st)?)),
        SVC_VOIP_SPEEX | SVC_VOIP_OPUS => {
            ServerOp::Voip(Box::new(parse_voip(r, bit, op == SVC_VOIP_OPUS)?))
        }
        _ => return Err(SvcError::BadOp { op, bit }),
    }))
}

/// `CL_ParseGamestate`, recorded: its configstrings and, `with_baselines`, its baselines
/// (the game events read none: [`Detail::Events`]).
fn parse_gamestate(
    r: &mut BitReader<'_>,
    bit: usize,
    st: &mut ClientState,
    with_baselines: bool,
) -> Result<Gamestate, SvcError> {
    let mut configstrings = Vec::new();
    let mut baselines = Vec::new();
    let record = Record {
        configstrings: &mut configstrings,
        baselines: with_baselines.then_some(&mut baselines),
    };
    let (server_command_seq, client_num, checksum_feed) = read_gamestate(r, st, Some(record))?;
    Ok(Gamestate {
        bit,
        server_command_seq,
        configstrings,
        baselines,
        client_num,
        checksum_feed,
    })
}

/// Where [`read_gamestate`] records a gamestate.
struct Record<'a> {
    configstrings: &'a mut Vec<ConfigString>,
    baselines: Option<&'a mut Vec<EntityDelta>>,
}

/// `CL_ParseGamestate` on the client state; the configstrings and baselines also go to
/// `record` when given (without it, as for the flow table, no copy is made). Returns the
/// server command sequence, the client number and the checksum feed.
fn read_gamestate(
    r: &mut BitReader<'_>,
    st: &mut ClientState,
    mut record: Option<Record<'_>>,
) -> Result<(i32, i32, i32), SvcError> {
    st.clear_for_gamestate();
    st.gamestates += 1;
    let server_command_seq = r.read_long()?;
    st.server_command_seq = server_command_seq;
    let mut total = 0usize;
    loop {
        let op = r.read_byte()?;
        let at = r.bit_pos();
        match op {
            SVC_EOF => break,
            SVC_CONFIGSTRING => {
                let index = r.read_short()? as i32;
                if index < 0 || index as usize >= MAX_CONFIGSTRINGS {
                    return Err(SvcError::ConfigstringIndex { index, bit: at });
                }
                let value = r.read_big_string()?;
                total += value.len() + 1;
                // CL_ParseGamestate's dataCount starts at 1 (a 0 for unset configstrings) and
                // must stay within MAX_GAMESTATE_CHARS with each string and its terminator.
                if 1 + total > MAX_GAMESTATE_CHARS {
                    return Err(SvcError::GamestateTooBig { bit: at });
                }
                match &mut record {
                    Some(rec) => {
                        st.set_configstring(index as usize, value.clone());
                        rec.configstrings.push(ConfigString {
                            index: index as u16,
                            value,
                        });
                    }
                    None => st.set_configstring(index as usize, value),
                }
            }
            SVC_BASELINE => {
                let num = r.read_bits(GENTITYNUM_BITS)?;
                let zero = EntityState::default();
                match record.as_mut().and_then(|rec| rec.baselines.as_mut()) {
                    Some(bl) => {
                        let d = read_delta_entity(r, &zero, num)?;
                        st.set_baseline(num as usize, &d.state);
                        bl.push(d);
                    }
                    None => {
                        let state = read_delta_entity_state(r, &zero, num)?;
                        st.set_baseline(num as usize, &state);
                    }
                }
            }
            _ => return Err(SvcError::BadGamestateOp { op, bit: at }),
        }
    }
    st.baselines.share();
    let client_num = r.read_long()?;
    let checksum_feed = r.read_long()?;
    st.client_num = client_num;
    st.checksum_feed = checksum_feed;
    Ok((server_command_seq, client_num, checksum_feed))
}

/// The part of a snapshot before the playerstate, and how the client takes it.
struct SnapHead {
    server_time: i32,
    delta_num: u8,
    delta_base: i32,
    flags: u8,
    /// Message number of the history slot to delta from, when that slot was ever filled.
    old: Option<i32>,
    /// Mid-session: the delta base precedes the capture (the client held it; its values
    /// are unknown).
    base_unknown: bool,
    valid: bool,
    invalid_reason: Option<&'static str>,
}

impl SnapHead {
    /// The public head of the snapshot whose op byte ends at `bit`.
    fn head(&self, bit: usize) -> SnapshotHead {
        SnapshotHead {
            bit,
            server_time: self.server_time,
            delta_num: self.delta_num,
            delta_base: self.delta_base,
            flags: self.flags,
            valid: self.valid,
            invalid_reason: self.invalid_reason,
        }
    }
}

/// Read the snapshot head; the area mask goes into `frame`.
fn read_snap_head(
    r: &mut BitReader<'_>,
    seq: i32,
    st: &ClientState,
    frame: &mut HistFrame,
) -> Result<SnapHead, SvcError> {
    let server_time = r.read_long()?;
    let delta_num = r.read_byte()?;
    let delta_base = if delta_num == 0 {
        -1
    } else {
        seq.wrapping_sub(delta_num as i32)
    };
    let flags = r.read_byte()?;
    let mask_at = r.bit_pos();
    let mask_len = r.read_byte()?;
    if mask_len as usize > MAX_AREAMASK {
        return Err(SvcError::AreaMask {
            len: mask_len,
            bit: mask_at,
        });
    }
    let mut areamask = [0u8; MAX_AREAMASK];
    for b in &mut areamask[..mask_len as usize] {
        *b = r.read_byte()?;
    }
    frame.set_areamask(&areamask[..mask_len as usize]);
    // The engine deltas from the slot even when it is not valid (values are then garbage,
    // the parse stays in step); only an empty slot means "from nothing".
    // A base from a message that stayed undecodable (mid-session) is unknown: the client may
    // have stored a snapshot from it that the slot does not hold.
    let unseen = delta_base > 0 && st.message_unseen(delta_base);
    let old = if delta_base <= 0 || unseen {
        None
    } else {
        st.slot(delta_base)
    };
    let base_unknown = delta_base > 0 && (unseen || (old.is_none() && st.bases_unseen()));
    let (valid, invalid_reason) = match old {
        None if delta_base <= 0 || base_unknown => (true, None),
        None => (false, Some("Delta from invalid frame")),
        Some(s) if !s.valid => (false, Some("Delta from invalid frame")),
        Some(s) if s.message_num != delta_base => (false, Some("Delta frame too old")),
        Some(s)
            if st.parse_entities_num - s.parse_entities_num
                > MAX_PARSE_ENTITIES - MAX_SNAPSHOT_ENTITIES =>
        {
            (false, Some("Delta parseEntitiesNum too old"))
        }
        Some(_) => (true, None),
    };
    Ok(SnapHead {
        server_time,
        delta_num,
        delta_base,
        flags,
        old: old.map(|_| delta_base),
        base_unknown,
        valid,
        invalid_reason,
    })
}

/// What a snapshot parse records besides the new frame: everything for [`Detail::Full`]
/// ([`SnapRecord`]), nothing for [`Detail::StateOnly`] (`()`, which compiles away).
/// Each method records nothing unless the recorder says otherwise.
trait Recorder {
    type Changes: ChangeSink + Default;
    /// The snapshot is read whole; false: only to the playerstate's commandTime.
    const WHOLE: bool = true;
    #[inline(always)]
    fn playerstate(
        &mut self,
        _ps: &PlayerState,
        _known: PsKnown,
        _wire: PlayerWire,
        _changes: Self::Changes,
        _bits: (usize, usize),
    ) {
    }
    /// One transmitted entity with its known fields; `None` for a removal.
    #[inline(always)]
    fn entity(&mut self, _e: EntityWire<Self::Changes>, _state: Option<(&EntityState, u64)>) {}
    /// The frame the snapshot deltas from (its slot's, even when too old), before any
    /// entity is read.
    #[inline(always)]
    fn base(&mut self, _old: Option<&HistFrame>) {}
    /// The finished frame, before it enters the history.
    #[inline(always)]
    fn frame(&mut self, _st: &ClientState, _f: &mut HistFrame) {}
}

/// What the wire said about one transmitted entity.
struct EntityWire<C> {
    number: i32,
    flags: EntityFlags,
    lc: u8,
    changes: C,
    bit_after_flag: usize,
    start_bit: usize,
    end_bit: usize,
}

impl Recorder for () {
    type Changes = ();
}

/// [`Detail::Samples`]: a snapshot read to its playerstate's commandTime, nothing recorded.
struct CommandTimeOnly;

impl Recorder for CommandTimeOnly {
    type Changes = ();
    const WHOLE: bool = false;
}

/// A snapshot's playerstate commandTime on its base's ([`Detail::Samples`]): of the frame
/// only that field is known (where the base's was, or the delta sent it), no entity.
fn read_command_time_into(
    r: &mut BitReader<'_>,
    st: &ClientState,
    h: &SnapHead,
    frame: &mut HistFrame,
) -> Result<(), SvcError> {
    let (base, known) = match h.old.and_then(|n| st.slot(n)) {
        Some(o) => (o.ps.fields[0], o.ps_known.fields & 1),
        None => (0, u64::from(!h.base_unknown)),
    };
    frame.ps.fields[0] = base;
    let sent = read_command_time(r, &mut frame.ps)?;
    frame.ps_known = PsKnown {
        fields: known | u64::from(sent),
        arrays: [0; 4],
    };
    frame.ents_partial = true;
    Ok(())
}

/// The records of a snapshot parsed with [`Detail::Full`].
#[derive(Default)]
struct SnapRecord {
    playerstate: PlayerDelta,
    entities: Vec<EntityDelta>,
    frame: SnapFrame,
}

impl Recorder for SnapRecord {
    type Changes = Vec<FieldChange>;

    fn playerstate(
        &mut self,
        ps: &PlayerState,
        known: PsKnown,
        wire: PlayerWire,
        changes: Vec<FieldChange>,
        bits: (usize, usize),
    ) {
        self.playerstate = PlayerDelta::new(ps.clone(), known, wire, changes, bits);
    }

    fn entity(&mut self, e: EntityWire<Vec<FieldChange>>, state: Option<(&EntityState, u64)>) {
        let known = state.map_or(ENT_ALL_KNOWN, |s| s.1);
        self.entities.push(EntityDelta {
            state: state.map_or(EntityState::zeroed(e.number), |s| s.0.clone()),
            known: (known != ENT_ALL_KNOWN).then_some(known),
            removed: e.flags == EntityFlags::Removed,
            has_delta: e.flags == EntityFlags::Delta,
            lc: e.lc,
            changes: e.changes,
            bit_after_flag: e.bit_after_flag,
            start_bit: e.start_bit,
            end_bit: e.end_bit,
        });
    }

    fn frame(&mut self, st: &ClientState, f: &mut HistFrame) {
        self.frame = st.snap_frame(f);
    }
}

/// `CL_ParseSnapshot`: build the new frame from its base and keep it in the history when
/// the client would. Nothing is kept when the snapshot does not decode to its end.
fn parse_snapshot_with<R: Recorder>(
    r: &mut BitReader<'_>,
    seq: i32,
    st: &mut ClientState,
    rec: &mut R,
) -> Result<SnapHead, SvcError> {
    let mut frame = st.new_frame();
    match read_snapshot_into(r, seq, st, &mut frame, rec) {
        Ok(h) => {
            frame.message_num = seq;
            frame.server_time = h.server_time;
            frame.delta_num = h.delta_base;
            frame.flags = h.flags;
            frame.parse_entities_num = st.parse_entities_num;
            st.parse_entities_num += frame.ents.len() as u64;
            rec.frame(st, &mut frame);
            if h.valid {
                st.store_snapshot(frame);
            } else {
                st.recycle(frame);
            }
            Ok(h)
        }
        Err(e) => {
            st.recycle(frame);
            Err(e)
        }
    }
}

fn read_snapshot_into<R: Recorder>(
    r: &mut BitReader<'_>,
    seq: i32,
    st: &mut ClientState,
    frame: &mut HistFrame,
    rec: &mut R,
) -> Result<SnapHead, SvcError> {
    let h = read_snap_head(r, seq, st, frame)?;
    if !R::WHOLE {
        read_command_time_into(r, st, &h, frame)?;
        return Ok(h);
    }
    let baseline_known = st.baseline_known();
    let (old, pool, baselines) = st.delta_parts(h.old);
    // What is known of the base: all of a full snapshot's (from zero and the baselines),
    // nothing of a base the capture missed, the base frame's own knowledge otherwise.
    let (base_ps, base_partial) = match old {
        Some(o) => {
            frame.ps.clone_from(&o.ps);
            (o.ps_known, o.ents_partial)
        }
        None => {
            frame.ps = PlayerState::default();
            match h.base_unknown {
                true => (PsKnown::NONE, true),
                false => (PsKnown::ALL, false),
            }
        }
    };
    let ps_bit = r.bit_pos();
    // The masks are collected only when something is unknown: a full session never pays.
    let (wire, changes) = if base_ps.is_all() {
        let mut changes = R::Changes::default();
        let wire = read_playerstate_into(r, &mut frame.ps, &mut changes)?;
        frame.ps_known = PsKnown::ALL;
        (wire, changes)
    } else {
        let mut changes = Masked::new(R::Changes::default());
        let wire = read_playerstate_into(r, &mut frame.ps, &mut changes)?;
        frame.ps_known = PsKnown {
            fields: base_ps.fields | changes.mask,
            arrays: std::array::from_fn(|i| base_ps.arrays[i] | wire.masks[i]),
        };
        (wire, changes.inner)
    };
    frame.ents_partial = base_partial;
    let bits = (ps_bit, r.bit_pos());
    rec.playerstate(&frame.ps, frame.ps_known, wire, changes, bits);
    rec.base(old);
    let old_ents = old.map_or(&[][..], |o| &o.ents[..]);
    // An entity not in a partial base frame may have been in the real one: only what its
    // delta sends is known.
    let entering = if base_partial { 0 } else { baseline_known };
    let bases = Bases {
        baselines,
        known: entering,
    };
    merge_packet_entities(r, old_ents, pool, &bases, &mut frame.ents, rec)?;
    Ok(h)
}

/// The baselines entities enter from, and which of their fields are known.
struct Bases<'a> {
    baselines: &'a Baselines,
    known: u64,
}

/// A [`ChangeSink`] that also collects the changed fields as a mask.
struct Masked<C> {
    inner: C,
    mask: u64,
}

impl<C> Masked<C> {
    fn new(inner: C) -> Self {
        Masked { inner, mask: 0 }
    }
}

impl<C: ChangeSink> ChangeSink for Masked<C> {
    #[inline(always)]
    fn change(&mut self, c: FieldChange) {
        self.mask |= 1u64 << (c.index & 63);
        self.inner.change(c);
    }
}

/// A snapshot with every record ([`Detail::Full`]).
fn parse_snapshot(
    r: &mut BitReader<'_>,
    bit: usize,
    seq: i32,
    st: &mut ClientState,
) -> Result<Snapshot, SvcError> {
    let mut rec = SnapRecord::default();
    let h = parse_snapshot_with(r, seq, st, &mut rec)?;
    let SnapRecord {
        playerstate,
        entities,
        frame,
    } = rec;
    let areamask = frame.areamask.clone();
    Ok(snapshot_op(bit, &h, playerstate, entities, areamask, frame))
}

/// A snapshot for [`Detail::Events`]: the head, and a frame holding only its obituary
/// entities, without delta records or playerstate. Most frames hold none: such a snapshot
/// is only its head (as with [`Detail::Headers`]), which spares building and boxing a
/// snapshot op per message.
fn parse_snapshot_events(
    r: &mut BitReader<'_>,
    bit: usize,
    seq: i32,
    st: &mut ClientState,
    head: &mut Option<SnapshotHead>,
) -> Result<Option<ServerOp>, SvcError> {
    let mut rec = EventFrame::default();
    let h = parse_snapshot_with(r, seq, st, &mut rec)?;
    let pm_changed = rec.pm_type.is_some() && rec.pm_type != rec.base_pm_type;
    if rec.entities.is_empty() && !pm_changed {
        *head = Some(h.head(bit));
        return Ok(None);
    }
    // Of the playerstate, only what the game events read: `pm_type` and `clientNum`.
    let mut ps = PlayerState::default();
    let mut ps_known = PsKnown::NONE;
    for (i, v) in [(PS_PM_TYPE, rec.pm_type), (PS_CLIENT_NUM, rec.client_num)] {
        if let Some(v) = v {
            ps.fields[i] = v;
            ps_known.fields |= 1u64 << i;
        }
    }
    let frame = SnapFrame {
        message_num: seq,
        server_time: h.server_time,
        delta_num: h.delta_base,
        flags: h.flags,
        areamask: Vec::new(),
        ps,
        entities: rec.entities,
        parse_entities_num: rec.parse_entities_num,
        ps_known,
        known: Vec::new(),
        ents_partial: rec.ents_partial,
    };
    let none = PlayerDelta::default();
    Ok(Some(ServerOp::Snapshot(Box::new(snapshot_op(
        bit,
        &h,
        none,
        Vec::new(),
        Vec::new(),
        frame,
    )))))
}

/// The snapshot op of a parsed head, its records and its frame.
fn snapshot_op(
    bit: usize,
    h: &SnapHead,
    playerstate: PlayerDelta,
    entities: Vec<EntityDelta>,
    areamask: Vec<u8>,
    frame: SnapFrame,
) -> Snapshot {
    Snapshot {
        bit,
        server_time: h.server_time,
        delta_num: h.delta_num,
        delta_base: h.delta_base,
        flags: h.flags,
        areamask,
        valid: h.valid,
        invalid_reason: h.invalid_reason,
        ps_bit: playerstate.start_bit,
        entities_bit: playerstate.end_bit,
        playerstate,
        entities,
        entity_count: (!frame.ents_partial).then_some(frame.entities.len()),
        base_unknown: h.base_unknown,
        frame: Arc::new(frame),
    }
}

/// The records of a snapshot parsed with [`Detail::Events`]: the frame's obituary
/// entities. A frame can only hold one when its base did or one was transmitted: the others
/// (most) are not searched ([`HistFrame::maybe_obituaries`]).
#[derive(Default)]
struct EventFrame {
    base_events: bool,
    sent_events: bool,
    /// The playerstate's `pm_type` in the base and in this frame, and its `clientNum`,
    /// where known: a frame whose `pm_type` changed is handed out too (the game events
    /// tell a connection's own player by his death, mid-session).
    base_pm_type: Option<i32>,
    pm_type: Option<i32>,
    client_num: Option<i32>,
    entities: Vec<EntityState>,
    parse_entities_num: u64,
    ents_partial: bool,
}

impl Recorder for EventFrame {
    type Changes = ();
    fn base(&mut self, old: Option<&HistFrame>) {
        self.base_events = old.is_some_and(|o| o.maybe_obituaries);
        self.base_pm_type = old.and_then(|o| ps_value(&o.ps, o.ps_known, PS_PM_TYPE));
    }
    fn entity(&mut self, _e: EntityWire<()>, state: Option<(&EntityState, u64)>) {
        self.sent_events |= state.is_some_and(|(s, _)| is_obituary(s));
    }
    fn frame(&mut self, st: &ClientState, f: &mut HistFrame) {
        f.maybe_obituaries = false;
        if self.base_events || self.sent_events {
            let (entities, any) = st.obituary_entities(f);
            self.entities = entities;
            f.maybe_obituaries = any;
        }
        self.parse_entities_num = f.parse_entities_num;
        self.ents_partial = f.ents_partial;
        self.pm_type = ps_value(&f.ps, f.ps_known, PS_PM_TYPE);
        self.client_num = ps_value(&f.ps, f.ps_known, PS_CLIENT_NUM);
    }
}

/// Playerstate field indices of `pm_type` and `clientNum` ([`super::fields::PLAYER_FIELDS`]).
const PS_PM_TYPE: usize = 34;
const PS_CLIENT_NUM: usize = 40;

/// Playerstate field `i`'s value, where known.
fn ps_value(ps: &PlayerState, known: PsKnown, i: usize) -> Option<i32> {
    (known.fields & (1u64 << i) != 0).then(|| ps.fields[i])
}

/// `CL_ParsePacketEntities`: merge the old frame's sorted list with the transmitted deltas.
/// Old entities below each transmitted number are kept as they are (shared, not copied),
/// the transmitted one is read from its base (the old state or the baseline); the rest of
/// the old list follows the end marker.
fn merge_packet_entities<R: Recorder>(
    r: &mut BitReader<'_>,
    old: &[EntRef],
    pool: &mut EntityPool,
    bases: &Bases<'_>,
    out: &mut Vec<EntRef>,
    rec: &mut R,
) -> Result<(), SvcError> {
    let mut oi = 0usize;
    loop {
        let newnum = r.read_bits(GENTITYNUM_BITS)?;
        if newnum == MAX_GENTITIES - 1 {
            break;
        }
        // Old entities below the transmitted one stay as they are: shared in one run.
        let kept = old[oi..].iter().take_while(|e| e.number() < newnum).count();
        out.extend_from_slice(&old[oi..oi + kept]);
        oi += kept;
        let from_old = old.get(oi).copied().filter(|e| e.number() == newnum);
        oi += usize::from(from_old.is_some());
        let base = || bases.baselines.get(newnum as usize);
        read_entity(r, newnum, from_old, (base, bases.known), pool, out, rec)?;
    }
    out.extend_from_slice(&old[oi..]);
    Ok(())
}

/// `MSG_ReadDeltaEntity` into the new frame: an unchanged entity of the old frame is shared,
/// a changed one gets its own state.
fn read_entity<'b, R: Recorder>(
    r: &mut BitReader<'_>,
    number: i32,
    from_old: Option<EntRef>,
    (base, base_known): (impl Fn() -> &'b EntityState, u64),
    pool: &mut EntityPool,
    out: &mut Vec<EntRef>,
    rec: &mut R,
) -> Result<(), SvcError> {
    let start_bit = r.bit_pos();
    // As DeltaError, like read_delta_entity, so the message text is the same.
    let flags = read_entity_flags(r).map_err(DeltaError::from)?;
    let bit = r.bit_pos();
    let mut wire = EntityWire {
        number,
        flags,
        lc: 0,
        changes: R::Changes::default(),
        bit_after_flag: bit,
        start_bit,
        end_bit: bit,
    };
    let e = match (flags, from_old) {
        (EntityFlags::Removed, _) => {
            rec.entity(wire, None);
            return Ok(());
        }
        (EntityFlags::Unchanged, Some(o)) => o,
        (EntityFlags::Delta, Some(o)) => pool.alloc_copy(o, number),
        // Shared only when exact: a partial entry's known fields vary by snapshot.
        (EntityFlags::Unchanged, None) if base_known == ENT_ALL_KNOWN => {
            pool.baseline_copy(number, base())
        }
        (_, None) => {
            let e = pool.alloc(number, &base().fields);
            if base_known != ENT_ALL_KNOWN {
                pool.set_known(e, base_known);
            }
            e
        }
    };
    out.push(e);
    if flags == EntityFlags::Delta {
        let known = pool.known(e);
        let (lc, after_lc) = if known == ENT_ALL_KNOWN {
            read_entity_fields(r, &mut pool.get_mut(e).fields, &mut wire.changes)?
        } else {
            // Only a partly known entity (mid-session) collects the mask of what it got.
            let mut changes = Masked::new(std::mem::take(&mut wire.changes));
            let got = read_entity_fields(r, &mut pool.get_mut(e).fields, &mut changes);
            wire.changes = changes.inner;
            pool.set_known(e, known | changes.mask);
            got?
        };
        wire.lc = lc;
        wire.bit_after_flag = after_lc;
        wire.end_bit = r.bit_pos();
    }
    rec.entity(wire, Some((pool.get(e), pool.known(e))));
    Ok(())
}

fn parse_download(
    r: &mut BitReader<'_>,
    bit: usize,
    st: &mut ClientState,
) -> Result<Download, SvcError> {
    let block = r.read_short()? as i32;
    let mut file_size = None;
    let mut error_message = None;
    if block == 0 && st.download_block == 0 {
        let size = r.read_long()?;
        file_size = Some(size);
        if size < 0 {
            error_message = Some(r.read_string()?);
            return Ok(Download {
                bit,
                block,
                file_size,
                error_message,
                size: 0,
                expected: Some(false),
                data: Vec::new(),
            });
        }
    }
    let at = r.bit_pos();
    let size = r.read_short()? as i32;
    if !(0..=MAX_DOWNLOAD_CHUNK).contains(&size) {
        return Err(SvcError::DownloadSize { size, bit: at });
    }
    let mut data = Vec::new();
    read_bytes_into(r, size as usize, &mut data)?;
    if block == 0 && file_size.is_some() {
        // A download starts: the client expects block 0 (and the ones after).
        st.download_synced = true;
    }
    let known = st.download_block_known();
    let expected = (st.download_block & 0xffff) == (block & 0xffff);
    if known && expected {
        st.download_block += 1;
        if size == 0 {
            st.download_block = 0;
        }
    }
    Ok(Download {
        bit,
        block,
        file_size,
        error_message,
        size,
        expected: known.then_some(expected),
        data,
    })
}

fn parse_voip(r: &mut BitReader<'_>, bit: usize, opus: bool) -> Result<Voip, SvcError> {
    let sender = r.read_short()?;
    let generation = r.read_byte()?;
    let sequence = r.read_long()?;
    let frames = r.read_byte()?;
    let at = r.bit_pos();
    let size = r.read_short()?;
    let flags = r.read_bits(2)?;
    if !(0..=4096).contains(&(size as i32)) {
        return Err(SvcError::VoipSize {
            size: size as i32,
            bit: at,
        });
    }
    for _ in 0..size {
        r.read_byte()?;
    }
    Ok(Voip {
        bit,
        opus,
        sender,
        generation,
        sequence,
        frames,
        flags,
        size,
    })
}

/// Writers for the server ops a demo writer re-encodes (exact inverses of the readers above).
pub mod emit {
    use super::super::bits::BitWriter;
    use super::super::delta::{write_delta_entity, write_delta_playerstate};
    use super::super::fields::{GENTITYNUM_BITS, MAX_GENTITIES};
    use super::super::state::SnapFrame;
    use super::*;

    /// `long reliableAcknowledge`, the start of every server message.
    pub fn ack(w: &mut BitWriter, ack: i32) {
        w.write_long(ack);
    }

    /// svc_serverCommand.
    pub fn server_command(w: &mut BitWriter, seq: i32, text: &str) {
        w.write_byte(SVC_SERVERCOMMAND);
        w.write_long(seq);
        w.write_string(text);
    }

    /// svc_EOF.
    pub fn eof(w: &mut BitWriter) {
        w.write_byte(SVC_EOF);
    }

    /// svc_snapshot as a full (non-delta) snapshot of `frame`: playerstate from zero, every
    /// entity from its baseline, as a server with no delta base writes it.
    pub fn full_snapshot(w: &mut BitWriter, frame: &SnapFrame, baselines: &Baselines) {
        w.write_byte(SVC_SNAPSHOT);
        w.write_long(frame.server_time);
        w.write_byte(0);
        w.write_byte(frame.flags);
        w.write_byte(frame.areamask.len() as u8);
        for &b in &frame.areamask {
            w.write_byte(b);
        }
        write_delta_playerstate(w, None, &frame.ps);
        for e in &frame.entities {
            // Entity numbers come from a decode: below MAX_GENTITIES.
            let base = baselines.get(e.number as usize);
            write_delta_entity(w, base, Some(e), true);
        }
        w.write_bits(MAX_GENTITIES - 1, GENTITYNUM_BITS);
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::bits::{BitReader, BitWriter};
    use super::super::delta::{EntityState, PlayerState};
    use super::super::fields::{NetField, ENTITY_FIELDS, PLAYER_FIELDS};
    use super::super::state::{ClientState, SnapFrame};
    use super::*;

    /// A field value the wire carries exactly (-0.0 travels as +0.0, so it is left out).
    fn value(f: &'static NetField) -> BoxedStrategy<i32> {
        if f.is_float() {
            prop_oneof![
                Just(0),
                (-4096i32..4096).prop_map(|v| (v as f32).to_bits() as i32),
                any::<f32>()
                    .prop_filter("exact on the wire", |v| v.is_finite()
                        && v.to_bits() != (-0.0f32).to_bits())
                    .prop_map(|v| v.to_bits() as i32),
            ]
            .boxed()
        } else {
            let bits = f.bits.unsigned_abs();
            let mask = if bits == 32 {
                u32::MAX
            } else {
                (1u32 << bits) - 1
            };
            let signed = f.bits < 0;
            any::<u32>()
                .prop_map(move |v| {
                    let v = v & mask;
                    if signed && v & (1 << (bits - 1)) != 0 {
                        (v | !mask) as i32
                    } else {
                        v as i32
                    }
                })
                .boxed()
        }
    }

    fn fields(table: &'static [NetField]) -> impl Strategy<Value = Vec<i32>> {
        table.iter().map(value).collect::<Vec<_>>()
    }

    fn entity(number: i32, v: &[i32]) -> EntityState {
        let mut e = EntityState::zeroed(number);
        e.fields.copy_from_slice(v);
        e
    }

    fn playerstate(v: &[i32], arrays: &[i16]) -> PlayerState {
        let mut ps = PlayerState::default();
        ps.fields.copy_from_slice(v);
        for i in 0..16 {
            ps.stats[i] = i32::from(arrays[i]);
            ps.persistant[i] = i32::from(arrays[16 + i]);
            ps.ammo[i] = i32::from(arrays[32 + i]);
            ps.powerups[i] = i32::from(arrays[48 + i]).wrapping_mul(65537);
        }
        ps
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// decode(full_snapshot(frame)) == frame: the whole-snapshot writer the demo writer
        /// uses is an exact inverse of the reader, entities delta'd from their baselines.
        #[test]
        fn prop_full_snapshot_roundtrip(
            ents in proptest::collection::btree_map(0i32..1023, fields(&ENTITY_FIELDS), 0..24),
            bases in proptest::collection::btree_map(0i32..1023, fields(&ENTITY_FIELDS), 0..24),
            same_as_base in any::<bool>(),
            ps in fields(&PLAYER_FIELDS),
            arrays in proptest::collection::vec(any::<i16>(), 64),
            server_time in any::<i32>(),
            flags in any::<u8>(),
            areamask in proptest::collection::vec(any::<u8>(), 0..=32),
        ) {
            let mut st = ClientState::default();
            for (n, v) in &bases {
                st.baselines.set(*n as usize, &entity(*n, v));
            }
            let entities: Vec<EntityState> = ents
                .iter()
                .map(|(n, v)| if same_as_base && bases.contains_key(n) { st.baselines.get(*n as usize).clone() } else { entity(*n, v) })
                .collect();
            let frame = SnapFrame {
                message_num: 77,
                server_time,
                delta_num: -1,
                flags,
                areamask,
                ps: playerstate(&ps, &arrays),
                entities,
                parse_entities_num: 0,
                ..Default::default()
            };
            let mut w = BitWriter::new();
            emit::ack(&mut w, 3);
            emit::full_snapshot(&mut w, &frame, &st.baselines);
            emit::eof(&mut w);
            let bytes = w.finish();
            let mut r = BitReader::new(&bytes);
            let m = parse_server_message(&mut r, None, 77, &mut st);
            prop_assert!(m.error.is_none(), "{:?}", m.error);
            let snap = m.ops.iter().find_map(|op| match op {
                ServerOp::Snapshot(s) => Some(s),
                _ => None,
            });
            let s = snap.expect("a snapshot op");
            prop_assert!(s.valid);
            prop_assert_eq!(s.delta_num, 0);
            prop_assert_eq!(s.server_time, frame.server_time);
            prop_assert_eq!(s.flags, frame.flags);
            prop_assert_eq!(&s.areamask, &frame.areamask);
            prop_assert_eq!(&s.frame.ps, &frame.ps);
            prop_assert_eq!(&s.frame.entities, &frame.entities);
        }
    }
}
