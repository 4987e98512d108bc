//! What a Quake 3 client knows while parsing server messages (q3-protocol.md §6): the
//! configstring table, baselines, snapshot history (32 frames by message number) and the
//! reliable server-command ring. The same state serves captures and demo files.
use super::baselines::Baselines;
use super::cmdring::CommandRing;
use super::configstrings::Configstrings;
pub use super::delta::PsKnown;
use super::delta::{EntityState, PlayerState};
use super::fields::NUM_ENTITY_FIELDS;

/// `MAX_CONFIGSTRINGS`: size of the configstring table (indices 0..1024).
pub const MAX_CONFIGSTRINGS: usize = 1024;
/// `PACKET_BACKUP`: snapshot history slots (`cl.snapshots`), indexed by message number & 31.
pub const PACKET_BACKUP: usize = 32;
/// `MAX_RELIABLE_COMMANDS`: size of each reliable command ring (slot = sequence & 63).
pub const MAX_RELIABLE_COMMANDS: usize = 64;
/// ioquake3's limit on parse entities between a delta base and its snapshot.
pub const MAX_PARSE_ENTITIES: u64 = 32 * 256;
/// ioquake3's `MAX_SNAPSHOT_ENTITIES`: a delta base more than `MAX_PARSE_ENTITIES` minus
/// this many parse entities back is too old ("Delta parseEntitiesNum too old").
pub const MAX_SNAPSHOT_ENTITIES: u64 = 256;
/// Client-side limit on the total configstring text of a gamestate.
pub const MAX_GAMESTATE_CHARS: usize = 16000;
/// `CS_SYSTEMINFO`: the systeminfo configstring (`sv_serverid`, `sv_paks`, `fs_game`, ...).
pub const CS_SYSTEMINFO: usize = 1;
/// First player configstring (`CS_PLAYERS`) of Quake 3 (Quake Live's: [`Protocol::cs`]).
///
/// [`Protocol::cs`]: crate::q3::protocol::Protocol::cs
pub const CS_PLAYERS: usize = 544;
/// Client slots (configstrings CS_PLAYERS.. hold one each).
pub const MAX_CLIENTS: usize = 64;

/// One parsed snapshot: the absolute game state the client holds after it (the record a
/// decoded [`super::svc::Snapshot`] carries; the history keeps [`HistFrame`]s).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SnapFrame {
    /// `messageNum`: netchan sequence of the message that carried the snapshot.
    pub message_num: i32,
    /// `serverTime` in ms.
    pub server_time: i32,
    /// `deltaNum` as the engine keeps it: the base message number, -1 for a full snapshot
    /// (not the delta byte sent).
    pub delta_num: i32,
    /// `snapFlags` (`SNAPFLAG_*` bits).
    pub flags: u8,
    /// The area mask bytes (empty from a [`super::svc::Detail::Events`] decode).
    pub areamask: Vec<u8>,
    /// The playerstate after the delta (`ps`); see `ps_known` for which values are known.
    pub ps: PlayerState,
    /// Sorted by entity number.
    pub entities: Vec<EntityState>,
    /// Running count of entities parsed before this frame (the engine's ring position).
    pub parse_entities_num: u64,
    /// Which playerstate values are known (all, unless the capture missed the delta base).
    pub ps_known: PsKnown,
    /// Per entity of `entities`, the fields whose values are known (bit `i` for field `i`
    /// of the table); empty when every value is known.
    pub known: Vec<u64>,
    /// The entity list itself is incomplete: the frame descends from a delta base the
    /// capture missed, so entities it did not mention may be missing.
    pub ents_partial: bool,
}

/// Every entity field known.
pub const ENT_ALL_KNOWN: u64 = (1u64 << NUM_ENTITY_FIELDS) - 1;

/// An entity of a history frame: its number (the sort key, kept here so the merge of
/// `CL_ParsePacketEntities` need not look into the pool) and its state in the [`EntityPool`],
/// in one word: 32 frames of them are most of a connection's history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntRef(u32);

/// Bits of an [`EntRef`] for the entity number (GENTITYNUM_BITS).
const NUMBER_BITS: u32 = 10;

impl EntRef {
    #[inline]
    fn new(number: i32, id: u32) -> EntRef {
        // Numbers come from 10-bit reads; slots stay far below 2^22 (a history holds at
        // most 32 × 1,024 states, and the pool's slack is a share of that).
        debug_assert!((0..1 << NUMBER_BITS).contains(&number) && id < 1 << (32 - NUMBER_BITS));
        EntRef((id << NUMBER_BITS) | (number as u32 & ((1 << NUMBER_BITS) - 1)))
    }

    /// The entity number.
    #[inline]
    pub fn number(self) -> i32 {
        (self.0 & ((1 << NUMBER_BITS) - 1)) as i32
    }

    /// The state's slot in the pool.
    #[inline]
    fn id(self) -> u32 {
        self.0 >> NUMBER_BITS
    }
}

/// Entity states shared between the frames of the history. A snapshot usually changes a few
/// entities of its base frame and keeps the rest, so an unchanged entity is a shared
/// reference here, not a copy of its 216 bytes. Nothing is counted per reference: slots that
/// no history frame holds any more are found by an occasional mark-and-sweep over the
/// history ([`ClientState::new_frame`]), sized so that its cost per allocated state stays
/// constant, and reused, so a snapshot allocates nothing.
#[derive(Debug, Clone, Default)]
pub struct EntityPool {
    states: Vec<EntityState>,
    /// Known fields of each slot's state (see [`SnapFrame::known`]); empty while every
    /// state is wholly known, as in any capture with its handshake: the masks are made by
    /// the first partly known state (mid-session), so a full session never pays for them.
    known: Vec<u64>,
    /// Collection epoch in which each slot was last found held.
    marks: Vec<u32>,
    epoch: u32,
    /// Slots nobody holds.
    free: Vec<u32>,
    /// The pool grows (instead of collecting) until it has this many slots.
    grow_to: usize,
    /// Slots holding a baseline as read by an entity unchanged from it, indexed by entity
    /// number (the slot + 1, 0 for none; as long as the largest number pinned, at most
    /// 1,024): every full snapshot would otherwise copy each such entity again, and a
    /// client that only gets full snapshots (while it downloads) fills the history with
    /// 32 copies of the same states. Held until the next gamestate.
    pinned: Vec<u32>,
    /// Collect after as many new states as the history holds, not a
    /// [`COLLECT_SHARE`]th of that ([`Self::roomy`]).
    roomy: bool,
}

/// Fewest slots between two collections.
const MIN_COLLECT_INTERVAL: usize = 32;
/// A collection looks at every reference of the history; the next one waits for
/// 1/COLLECT_SHARE of that many new states, so a collection costs a few stores per state
/// allocated, and the slack (what a connection holds beyond its history's states) stays a
/// eighth of the history. With a thousand connections live, slack is most of the memory.
/// A pool that is alone in its process ([`EntityPool::roomy`]) collects 16 times less often.
const COLLECT_SHARE: usize = 16;

impl EntityPool {
    /// The only pool of its input (a demo file): memory is no concern, so collect after as
    /// many new states as the history holds (slack the size of the history, a few hundred
    /// KB in real demos) and spend 16 times less on collections: collecting as often as a
    /// thousand live connections need cost the shared demos' decode 7 % more instructions.
    pub fn roomy(&mut self) {
        self.roomy = true;
    }

    /// A collection lets the pool grow by the history's references over this before the
    /// next one.
    fn collect_share(&self) -> usize {
        if self.roomy {
            1
        } else {
            COLLECT_SHARE
        }
    }

    /// A free slot (reused, or a new one).
    #[inline]
    fn take_slot(&mut self) -> u32 {
        match self.free.pop() {
            Some(id) => id,
            None => {
                let len = self.states.len();
                if len == self.states.capacity() {
                    // Grow to the next collection bound at once and no further (a doubling
                    // would copy every state so far, and leave up to half the slots unused
                    // for good); past it (one huge snapshot), by half.
                    let bound = self.grow_to.max(MIN_COLLECT_INTERVAL);
                    let want = if len < bound {
                        bound - len
                    } else {
                        (len / 2).max(MIN_COLLECT_INTERVAL)
                    };
                    self.states.reserve_exact(want);
                    self.marks.reserve_exact(want);
                }
                self.states.push(EntityState::default());
                self.marks.push(0);
                if !self.known.is_empty() {
                    self.known.push(ENT_ALL_KNOWN);
                }
                (self.states.len() - 1) as u32
            }
        }
    }

    /// A new entity state.
    #[inline]
    pub fn alloc(&mut self, number: i32, fields: &[i32; NUM_ENTITY_FIELDS]) -> EntRef {
        let id = self.take_slot();
        let dst = &mut self.states[id as usize];
        dst.number = number;
        dst.fields = *fields;
        if let Some(k) = self.known.get_mut(id as usize) {
            *k = ENT_ALL_KNOWN;
        }
        EntRef::new(number, id)
    }

    /// Entity `number` unchanged from its baseline `base`: one shared state per entity
    /// number until [`Self::unpin_baselines`].
    #[inline]
    pub fn baseline_copy(&mut self, number: i32, base: &EntityState) -> EntRef {
        // Numbers are 10-bit reads; anything else is only allocated (never a huge table).
        let n = match usize::try_from(number) {
            Ok(n) if n < 1 << NUMBER_BITS => n,
            _ => return self.alloc(number, &base.fields),
        };
        if let Some(&p) = self.pinned.get(n) {
            if p > 0 {
                return EntRef::new(number, p - 1);
            }
        }
        let e = self.alloc(number, &base.fields);
        if self.pinned.len() <= n {
            self.pinned.resize(n + 1, 0);
        }
        self.pinned[n] = e.id() + 1;
        e
    }

    /// The baselines changed (a new gamestate): their shared states go at the next
    /// collection, once no history frame holds them.
    pub fn unpin_baselines(&mut self) {
        self.pinned.clear();
    }

    /// A copy of the state behind `from`, renumbered, as a new entity.
    #[inline]
    pub fn alloc_copy(&mut self, from: EntRef, number: i32) -> EntRef {
        let id = self.take_slot();
        let src = self.states[from.id() as usize].fields;
        let dst = &mut self.states[id as usize];
        dst.number = number;
        dst.fields = src;
        if !self.known.is_empty() {
            self.known[id as usize] = self.known[from.id() as usize];
        }
        EntRef::new(number, id)
    }

    /// The fields of `e` whose values are known.
    #[inline]
    pub fn known(&self, e: EntRef) -> u64 {
        self.known
            .get(e.id() as usize)
            .copied()
            .unwrap_or(ENT_ALL_KNOWN)
    }

    /// Set the known fields of an entity just allocated.
    #[inline]
    pub fn set_known(&mut self, e: EntRef, mask: u64) {
        if self.known.is_empty() {
            if mask == ENT_ALL_KNOWN {
                return;
            }
            self.known.resize(self.states.len(), ENT_ALL_KNOWN);
        }
        self.known[e.id() as usize] = mask;
    }

    /// The state behind `e`.
    #[inline]
    pub fn get(&self, e: EntRef) -> &EntityState {
        &self.states[e.id() as usize]
    }

    /// The state behind `e`, to be changed: only for an entity just allocated (one holder).
    #[inline]
    pub fn get_mut(&mut self, e: EntRef) -> &mut EntityState {
        &mut self.states[e.id() as usize]
    }

    /// Slots in the pool (held or not).
    pub fn len(&self) -> usize {
        self.states.len()
    }

    /// True when the pool has no slot.
    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }

    /// True when the states allocated since the last collection used up its slack. (Not
    /// "when no slot is free": the free slots may run out within a snapshot, which then
    /// grows the pool for good, a little more at every collection.)
    fn collect_due(&self) -> bool {
        self.states.len() - self.free.len() >= self.grow_to
    }

    /// Free every slot that none of `frames` holds. The next collection waits until the
    /// pool has made room for a share of the states this one looked at, so the work per
    /// state stays constant.
    fn collect<'a>(&mut self, frames: impl Iterator<Item = &'a [EntRef]>) {
        self.epoch = self.epoch.wrapping_add(1).max(1);
        let mut refs = 0;
        for f in frames {
            refs += f.len();
            for e in f {
                self.marks[e.id() as usize] = self.epoch;
            }
        }
        for &p in &self.pinned {
            if p > 0 {
                self.marks[p as usize - 1] = self.epoch;
            }
        }
        self.free.clear();
        let epoch = self.epoch;
        let free = &mut self.free;
        free.extend((0..self.marks.len() as u32).filter(|&id| self.marks[id as usize] != epoch));
        let held = self.states.len() - self.free.len();
        self.grow_to = held + (refs / self.collect_share()).max(MIN_COLLECT_INTERVAL);
    }
}

/// A frame of the snapshot history (`cl.snapshots[]`): what a later snapshot deltas from.
///
/// `repr(C)`, the small fields first: a snapshot's parse checks its base frame's number,
/// validity and entity count before anything else, and the prefetch of the likely base
/// ([`ClientState::prefetch`]) brings in the frame's first two lines. In Rust's own order
/// those fields came after the 448-byte playerstate, in lines nothing had prefetched.
#[derive(Debug, Clone, Default)]
#[repr(C)]
pub struct HistFrame {
    /// `messageNum`: netchan sequence of the message that carried the snapshot.
    pub message_num: i32,
    /// `serverTime` in ms.
    pub server_time: i32,
    /// The base message number, -1 for a full snapshot (see [`SnapFrame::delta_num`]).
    pub delta_num: i32,
    /// The client still holds it as valid.
    pub valid: bool,
    /// `snapFlags` (`SNAPFLAG_*` bits).
    pub flags: u8,
    areamask_len: u8,
    /// The entity list may lack entities (see [`SnapFrame::ents_partial`]).
    pub ents_partial: bool,
    /// The frame may hold an obituary entity (set only by the game-events decode,
    /// [`super::svc::Detail::Events`]: false is exact, true may be stale).
    pub maybe_obituaries: bool,
    /// Running count of entities parsed before this frame (the engine's ring position).
    pub parse_entities_num: u64,
    /// See [`SnapFrame::ps_known`] and [`SnapFrame::ents_partial`] (entity masks: the pool).
    pub ps_known: PsKnown,
    /// Sorted by entity number (as the server sent them), states in the pool.
    pub ents: Vec<EntRef>,
    areamask: [u8; MAX_AREAMASK],
    /// The playerstate after the delta.
    pub ps: PlayerState,
}

/// A temporary event entity carrying an obituary (`eType` past `ET_EVENTS` by
/// `EV_OBITUARY`, toggle bits aside): the one entity event the game events read (kills).
/// The other event entities (sounds, impacts, most of those in a firefight's snapshots)
/// are not looked for.
/// `ev_obituary` is the game's number for it ([`Protocol::ev_obituary`]).
///
/// [`Protocol::ev_obituary`]: crate::q3::protocol::Protocol::ev_obituary
pub fn is_obituary(s: &EntityState, ev_obituary: i32) -> bool {
    use super::gamemod::{ET_EVENTS, EV_EVENT_BITS};
    let et = s.fields[super::fields::ENTITY_ETYPE];
    et > ET_EVENTS && (et - ET_EVENTS) & !EV_EVENT_BITS == ev_obituary
}

impl HistFrame {
    /// The area mask bytes as sent (at most [`MAX_AREAMASK`]).
    pub fn areamask(&self) -> &[u8] {
        &self.areamask[..self.areamask_len as usize]
    }

    /// Set the area mask; at most [`MAX_AREAMASK`] bytes (the parser rejects longer ones).
    pub fn set_areamask(&mut self, mask: &[u8]) {
        let n = mask.len().min(MAX_AREAMASK);
        self.areamask[..n].copy_from_slice(&mask[..n]);
        self.areamask_len = n as u8;
    }
}

/// The largest area mask a snapshot may carry (MAX_MAP_AREA_BYTES).
pub const MAX_AREAMASK: usize = 32;

/// The client's parse state for one connection (or one demo file).
#[derive(Debug, Clone)]
pub struct ClientState {
    /// The protocol's field tables and string rules (Quake 3's unless a Quake Live demo).
    pub proto: &'static crate::q3::protocol::Protocol,
    /// The configstring table: the gamestate's, updated by `cs` and `bcs0/1/2` commands.
    pub configstrings: Configstrings,
    /// The entity baselines of the last gamestate (`cl.entityBaselines`).
    pub baselines: Baselines,
    /// The snapshot ring, by message number; `None` for a slot never filled.
    snapshots: Vec<Option<Box<HistFrame>>>,
    /// Entity states of the history frames.
    pub pool: EntityPool,
    /// A frame's buffers kept for the next snapshot (no allocation per snapshot).
    /// (All of them after a gamestate emptied the history.) Boxed: frames move between the
    /// history and here as pointers, not as their 600 bytes.
    #[allow(clippy::vec_box)]
    spare: Vec<Box<HistFrame>>,
    /// Message number of the last valid snapshot (the engine's `cl.snap.messageNum`).
    pub last_snap_num: i32,
    /// serverTime (ms) of the last valid snapshot; `None` until one since the gamestate.
    pub last_snap_time: Option<i32>,
    /// Entities parsed so far (`cl.parseEntitiesNum`), the count a delta base's age is
    /// measured in.
    pub parse_entities_num: u64,
    /// Highest server command received (`clc.serverCommandSequence`).
    pub server_command_seq: i32,
    /// The server commands received (`clc.serverCommands`), by sequence.
    server_commands: CommandRing,
    /// `clc.clientNum`: the client's slot, from the last gamestate.
    pub client_num: i32,
    /// `clc.checksumFeed` of the last gamestate (part of the usercmd key).
    pub checksum_feed: i32,
    /// `cl.serverId`: `sv_serverid` of the systeminfo configstring; 0 before one.
    pub server_id: i32,
    /// Gamestates parsed so far.
    pub gamestates: u32,
    /// Next expected download block (`clc.downloadBlock`).
    pub download_block: i32,
    /// Mid-session: a download's first block (block 0, with the file size) was seen, so
    /// `download_block` follows the client's; before it, whether a block is the one the
    /// client expects is unknown.
    pub download_synced: bool,
    /// A big configstring being assembled from `bcs0/1/2`.
    pub big_cs: Option<(usize, String)>,
    /// The capture missed this connection's start (gamestate and earlier snapshots): until
    /// a gamestate, a delta base the capture never showed is taken as unknown (the client
    /// held it), not as invalid, and what it would have given is marked unknown.
    pub mid_session: bool,
    /// Mid-session: the ring slots whose command the capture showed (bit per slot); the
    /// others hold what was sent before it. (A full session knows every slot: it starts
    /// empty.)
    pub commands_seen: u64,
    /// Mid-session: server messages the capture showed but that stayed undecodable (their
    /// key string unknown), by ring slot of their message number. A snapshot the client
    /// stored from one of them is unknown to us, so a later delta from it has an unknown
    /// base, not an invalid one.
    unseen: [Option<i32>; PACKET_BACKUP],
}

impl Default for ClientState {
    fn default() -> Self {
        ClientState {
            proto: crate::q3::protocol::Protocol::q3(),
            configstrings: Configstrings::default(),
            baselines: Baselines::default(),
            snapshots: vec![None; PACKET_BACKUP],
            unseen: [None; PACKET_BACKUP],
            pool: EntityPool::default(),
            spare: Vec::new(),
            last_snap_num: 0,
            last_snap_time: None,
            parse_entities_num: 0,
            server_command_seq: 0,
            server_commands: CommandRing::default(),
            client_num: 0,
            checksum_feed: 0,
            server_id: 0,
            gamestates: 0,
            download_block: 0,
            download_synced: false,
            big_cs: None,
            mid_session: false,
            commands_seen: 0,
        }
    }
}

/// Append as the engine's `Q_strcat(bigConfigString, BIG_INFO_STRING, s)` does: silently
/// cut at `BIG_INFO_STRING - 1` bytes, so endless `bcs1` commands cannot grow memory.
fn push_bounded(s: &mut String, more: &str) {
    let room = (super::bits::BIG_INFO_STRING - 1).saturating_sub(s.len());
    let mut cut = more.len().min(room);
    while !more.is_char_boundary(cut) {
        cut -= 1;
    }
    s.push_str(&more[..cut]);
}

impl ClientState {
    /// `CL_ClearState` on a new gamestate: snapshots, configstrings and baselines go; the
    /// command ring stays (q3-protocol.md §3.4).
    pub fn clear_for_gamestate(&mut self) {
        self.configstrings.clear();
        self.baselines.clear();
        self.pool.unpin_baselines();
        for k in 0..PACKET_BACKUP {
            if let Some(f) = self.snapshots[k].take() {
                self.recycle(f);
            }
        }
        self.last_snap_num = 0;
        self.last_snap_time = None;
        self.big_cs = None;
        self.unseen = [None; PACKET_BACKUP];
    }

    /// Mid-session: server message `message_num` was received but could not be decoded.
    pub fn mark_unseen(&mut self, message_num: i32) {
        self.unseen[(message_num as usize) & (PACKET_BACKUP - 1)] = Some(message_num);
    }

    /// True when server message `message_num` was received undecodable ([`Self::mark_unseen`]):
    /// whether it held a snapshot, and which, is unknown.
    pub fn message_unseen(&self, message_num: i32) -> bool {
        self.unseen[(message_num as usize) & (PACKET_BACKUP - 1)] == Some(message_num)
    }

    /// The server command stored for `seq` (what the client keeps in its ring).
    pub fn server_command(&self, seq: i32) -> &str {
        self.server_commands.text(seq)
    }

    /// [`Self::server_command`] with its `CommandRing` version (the key caches').
    pub fn server_command_keyed(&self, seq: i32) -> (&str, u64) {
        self.server_commands.keyed(seq)
    }

    /// The ring of server commands, for `crate::prefetch`.
    pub(crate) fn server_commands(&self) -> &CommandRing {
        &self.server_commands
    }

    /// Store a received server command with the client's rule (only newer sequences) and
    /// apply engine-level ones (`cs`, `bcs0/1/2`) to the configstring table.
    /// Returns true when the command was new.
    pub fn receive_server_command(&mut self, seq: i32, text: &str) -> bool {
        if seq <= self.server_command_seq {
            return false;
        }
        self.server_command_seq = seq;
        self.server_commands.set(seq, text.to_string());
        self.commands_seen |= 1u64 << ((seq as usize) & (MAX_RELIABLE_COMMANDS - 1));
        self.apply_command(text);
        true
    }

    fn apply_command(&mut self, text: &str) {
        // Most commands are prints, scores, team info: skip the tokenizing (and its
        // allocations) unless the first word can be `cs` or `bcs0/1/2`.
        let head = text.trim_start_matches(|c: char| c <= ' ');
        if !(head.starts_with("cs") || head.starts_with("bcs") || head.starts_with('"')) {
            return;
        }
        let toks = super::oob::tokenize(text);
        let Some(cmd) = toks.first() else { return };
        let index = toks
            .get(1)
            .and_then(|s| s.parse::<usize>().ok())
            .filter(|&i| i < MAX_CONFIGSTRINGS);
        let value = || toks.get(2).cloned().unwrap_or_default();
        match (cmd.as_str(), index) {
            ("cs", Some(i)) => self.set_configstring(i, value()),
            ("bcs0", Some(i)) => self.big_cs = Some((i, value())),
            ("bcs1", Some(i)) => {
                if let Some((j, s)) = &mut self.big_cs {
                    if *j == i {
                        push_bounded(s, &value());
                    }
                }
            }
            ("bcs2", Some(i)) => {
                if let Some((j, mut s)) = self.big_cs.take() {
                    if j == i {
                        push_bounded(&mut s, &value());
                        self.set_configstring(i, s);
                    }
                }
            }
            _ => {}
        }
    }

    /// Set a configstring; the systeminfo string carries the serverId.
    pub fn set_configstring(&mut self, i: usize, v: String) {
        if i == CS_SYSTEMINFO {
            if let Some(id) = super::oob::info_value(&v, "sv_serverid").and_then(|s| s.parse().ok())
            {
                self.server_id = id;
            }
        }
        self.configstrings.set(i, v);
    }

    /// Set baseline `num` (an `svc_baseline` of the gamestate).
    pub fn set_baseline(&mut self, num: usize, state: &EntityState) {
        self.baselines.set(num, state);
    }

    /// The history slot for a message number (whatever message it holds now), if it was
    /// ever filled.
    pub fn slot(&self, message_num: i32) -> Option<&HistFrame> {
        self.snapshots[(message_num as usize) & (PACKET_BACKUP - 1)].as_deref()
    }

    /// The history frames, ring order.
    pub fn history(&self) -> impl Iterator<Item = &HistFrame> {
        self.snapshots.iter().flatten().map(|f| &**f)
    }

    /// For a snapshot parse: the base frame (by message number), the pool, the baselines.
    pub fn delta_parts(
        &mut self,
        base: Option<i32>,
    ) -> (Option<&HistFrame>, &mut EntityPool, &Baselines) {
        let old = base.and_then(|n| self.snapshots[(n as usize) & (PACKET_BACKUP - 1)].as_deref());
        (old, &mut self.pool, &self.baselines)
    }

    /// True while a missed delta base means "unknown" rather than "invalid": mid-session,
    /// before the first gamestate.
    pub fn bases_unseen(&self) -> bool {
        self.mid_session && self.gamestates == 0
    }

    /// True when `download_block` is the client's (always in a full session).
    pub fn download_block_known(&self) -> bool {
        !self.mid_session || self.download_synced
    }

    /// True when the text of server command `seq` is known: always in a full session;
    /// mid-session, once the capture showed it (or for 0: see below).
    pub fn server_command_known(&self, seq: i32) -> bool {
        // Acknowledging 0, the client has received no command since it connected: slot 0
        // is as its connect left it, empty (ioquake3's CL_Disconnect wipes `clc`; commands
        // are numbered from 1, and slot 0 is next written by command 64).
        !self.mid_session
            || seq == 0
            || self.commands_seen & (1u64 << ((seq as usize) & (MAX_RELIABLE_COMMANDS - 1))) != 0
    }

    /// The known fields of an entity entering from its baseline.
    pub fn baseline_known(&self) -> u64 {
        if self.bases_unseen() {
            0
        } else {
            ENT_ALL_KNOWN
        }
    }

    /// A history frame as a self-contained [`SnapFrame`].
    pub fn snap_frame(&self, f: &HistFrame) -> SnapFrame {
        let partial = f.ents.iter().any(|&e| self.pool.known(e) != ENT_ALL_KNOWN);
        SnapFrame {
            message_num: f.message_num,
            server_time: f.server_time,
            delta_num: f.delta_num,
            flags: f.flags,
            areamask: f.areamask().to_vec(),
            ps: f.ps.clone(),
            entities: f.ents.iter().map(|&e| self.pool.get(e).clone()).collect(),
            parse_entities_num: f.parse_entities_num,
            ps_known: f.ps_known,
            known: if partial {
                f.ents.iter().map(|&e| self.pool.known(e)).collect()
            } else {
                Vec::new()
            },
            ents_partial: f.ents_partial,
        }
    }

    /// The obituary entities of `f` ([`is_obituary`]), as game events read them, and
    /// whether it holds any such entity at all. Mid-session, an obituary's fields the
    /// server did not send are its baseline's, which the capture missed; they are read as
    /// 0, as the full decode reads them: an obituary is a temporary entity the game spawned
    /// after the level loaded, in a slot with no baseline (the server makes baselines of
    /// the entities linked at load), so its unsent fields are 0 (a victim or killer 0 is
    /// client 0). Kills of every stored capture's cuts equal the full capture's
    /// (tests/mid_session.rs); leaving such entities out lost every death of client 0.
    pub fn obituary_entities(&self, f: &HistFrame) -> (Vec<EntityState>, bool) {
        let mut any = false;
        let mut out = Vec::new();
        for &e in &f.ents {
            let s = self.pool.get(e);
            if is_obituary(s, self.proto.ev_obituary) {
                any = true;
                out.push(s.clone());
            }
        }
        (out, any)
    }

    /// An empty frame to build the next snapshot in (buffers reused). Entity states no
    /// history frame holds are collected here, between snapshots, when the pool is full.
    pub fn new_frame(&mut self) -> Box<HistFrame> {
        if self.pool.collect_due() {
            let frames = self.snapshots.iter().flatten().map(|f| &f.ents[..]);
            self.pool.collect(frames);
        }
        let mut f = self.spare.pop().unwrap_or_else(|| {
            // Room for a typical game's entities, so a new frame does not grow five times.
            Box::new(HistFrame {
                ents: Vec::with_capacity(64),
                ..Default::default()
            })
        });
        f.ents.clear();
        f
    }

    /// Prefetch what the next snapshot parse will touch, one level of pointers per call
    /// (each level reads only what the one before asked for; see `crate::prefetch`):
    /// 0, this state's head; 1, the history ring's slot of the last snapshot and the tops
    /// of the spare-frame and free-slot stacks; 2, the frame the snapshot will be built in
    /// (last used 32 snapshots ago, written whole: the playerstate is copied into it), the
    /// last snapshot's head (the likely delta base) and the pool slot the first changed
    /// entity takes; 3, their entity lists.
    #[inline]
    pub fn prefetch(&self, level: u8) {
        use crate::prefetch::{self, read};
        let last_slot = (self.last_snap_num as usize) & (PACKET_BACKUP - 1);
        let last = || self.snapshots.get(last_slot).and_then(|f| f.as_deref());
        match level {
            0 => {
                read(&self.last_snap_num);
                read(&self.spare);
                read(&self.snapshots);
                read(&self.pool.free);
            }
            1 => {
                if let Some(f) = self.snapshots.get(last_slot) {
                    read(f);
                }
                if let Some(f) = self.spare.last() {
                    read(f);
                }
                if let Some(id) = self.pool.free.last() {
                    read(id);
                }
            }
            2 => {
                if let Some(f) = self.spare.last() {
                    prefetch::object::<true, HistFrame>(f, 10);
                }
                if let Some(f) = last() {
                    prefetch::range::<false>((f as *const HistFrame).cast(), 128, 2);
                }
                if let Some(e) = self
                    .pool
                    .free
                    .last()
                    .and_then(|&id| self.pool.states.get(id as usize))
                {
                    prefetch::object::<true, EntityState>(e, 4);
                }
            }
            _ => {
                if let Some(f) = self.spare.last() {
                    prefetch::range::<true>(f.ents.as_ptr().cast(), f.ents.capacity() * 4, 2);
                }
                if let Some(f) = last() {
                    prefetch::range::<false>(f.ents.as_ptr().cast(), f.ents.len() * 4, 2);
                }
            }
        }
    }

    /// Let go of a frame that is not (or no longer) in the history (its entity states
    /// become free at the next collection).
    pub fn recycle(&mut self, mut f: Box<HistFrame>) {
        f.ents.clear();
        if self.spare.len() <= PACKET_BACKUP {
            self.spare.push(f);
        }
    }

    /// Store a valid snapshot as `CL_ParseSnapshot` does: slots of skipped message numbers
    /// are invalidated first.
    pub fn store_snapshot(&mut self, mut frame: Box<HistFrame>) {
        let num = frame.message_num;
        // The engine invalidates old..num with old clamped to num - 31; wrapping arithmetic
        // keeps hostile message numbers (a demo's sequences are any i32) from overflowing.
        let gap = num.wrapping_sub(self.last_snap_num.wrapping_add(1));
        for k in 1..=gap.clamp(0, PACKET_BACKUP as i32 - 1) {
            let old = num.wrapping_sub(k);
            if let Some(s) = &mut self.snapshots[(old as usize) & (PACKET_BACKUP - 1)] {
                s.valid = false;
            }
        }
        self.last_snap_num = num;
        self.last_snap_time = Some(frame.server_time);
        frame.valid = true;
        let old = self.snapshots[(num as usize) & (PACKET_BACKUP - 1)].replace(frame);
        if let Some(old) = old {
            self.recycle(old);
        }
    }

    /// Player name from CS_PLAYERS for the recording client.
    pub fn player_name(&self, client: i32) -> Option<String> {
        // clientNum comes from the message: any i32.
        let i = usize::try_from(client)
            .ok()?
            .checked_add(self.proto.cs.players)?;
        super::oob::info_value(self.configstrings.get(i), "n")
    }

    /// Names of the clients in the game now (team 3, spectators, aside), by client number.
    pub fn players(&self) -> impl Iterator<Item = String> + '_ {
        self.configstrings
            .range(self.proto.cs.players, MAX_CLIENTS)
            .filter(|cs| super::oob::info_value(cs, "t").as_deref() != Some("3"))
            .filter_map(|cs| super::oob::info_value(cs, "n"))
    }

    /// Map name from the serverinfo configstring.
    pub fn map_name(&self) -> Option<String> {
        super::oob::info_value(self.configstrings.get(0), "mapname")
    }

    /// The game type the serverinfo names (`g_gametype`), in the game's own words.
    pub fn game_type(&self) -> Option<&'static str> {
        use super::gamemod::GameMod;
        let info = self.configstrings.get(0);
        let game = if self.proto.is_quake_live() {
            GameMod::QuakeLive
        } else {
            GameMod::detect(info, self.configstrings.get(1))
        };
        let n = super::oob::info_value(info, "g_gametype")?
            .trim()
            .parse()
            .ok()?;
        game.game_type(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frames_small_fields_are_in_its_first_two_lines() {
        // What a snapshot parse reads of its base first, and the history's walks read of
        // every frame, must lie in the two lines the lookahead prefetches: at least the
        // first 80 bytes of a heap block (16-byte aligned).
        use std::mem::{offset_of, size_of};
        let ends = [
            offset_of!(HistFrame, message_num) + 4,
            offset_of!(HistFrame, valid) + 1,
            offset_of!(HistFrame, parse_entities_num) + 8,
            offset_of!(HistFrame, ps_known) + size_of::<PsKnown>(),
            offset_of!(HistFrame, ents) + size_of::<Vec<EntRef>>(),
        ];
        assert!(ends.iter().all(|&e| e <= 128 - 48), "{ends:?}");
        // The playerstate comes after them (448 bytes: before them, it pushed them out).
        assert!(offset_of!(HistFrame, ps) >= offset_of!(HistFrame, ents));
    }

    #[test]
    fn player_name_of_a_hostile_client_number_is_none() {
        let mut st = ClientState::default();
        st.set_configstring(CS_PLAYERS, "n\\bob".into());
        assert_eq!(st.player_name(0).as_deref(), Some("bob"));
        for c in [-1, i32::MIN, i32::MAX, MAX_CONFIGSTRINGS as i32] {
            assert_eq!(st.player_name(c), None);
        }
    }

    #[test]
    fn snapshots_at_extreme_message_numbers_do_not_overflow() {
        let mut st = ClientState::default();
        for num in [i32::MIN, i32::MIN + 3, 5, i32::MAX, i32::MIN] {
            let mut frame = st.new_frame();
            frame.message_num = num;
            st.store_snapshot(frame);
            assert_eq!(st.last_snap_num, num);
        }
    }

    /// A collection frees exactly the states no frame holds; they are reused.
    #[test]
    fn pool_reuses_only_states_no_frame_holds() {
        let mut pool = EntityPool::default();
        let a = pool.alloc(7, &[1; NUM_ENTITY_FIELDS]);
        let b = pool.alloc_copy(a, 9);
        let c = pool.alloc(3, &[2; NUM_ENTITY_FIELDS]);
        assert!(pool.collect_due());
        let held = [a, c];
        pool.collect(std::iter::once(&held[..]));
        assert_eq!(pool.free, vec![b.id()]);
        let d = pool.alloc(4, &[3; NUM_ENTITY_FIELDS]);
        assert_eq!(d.id(), b.id(), "the free slot is reused");
        assert_eq!(
            pool.get(a),
            &EntityState {
                number: 7,
                fields: [1; NUM_ENTITY_FIELDS]
            }
        );
        assert_eq!(pool.get(c).fields, [2; NUM_ENTITY_FIELDS]);
        assert_eq!(pool.get(d).number, 4);
        // Full again, but not grown to its bound: it grows instead of collecting.
        assert!(!pool.collect_due());
        assert_eq!(pool.alloc(5, &[0; NUM_ENTITY_FIELDS]).id(), 3);
    }

    /// One snapshot may allocate far past the collection bound (collections run between
    /// snapshots): the pool then keeps growing.
    #[test]
    fn pool_grows_past_its_bound_within_a_snapshot() {
        let mut pool = EntityPool::default();
        for k in 0..5 * MIN_COLLECT_INTERVAL as i32 {
            let e = pool.alloc(k, &[k; NUM_ENTITY_FIELDS]);
            assert_eq!(pool.get(e).fields[3], k);
        }
        assert_eq!(pool.len(), 5 * MIN_COLLECT_INTERVAL);
    }

    /// Over a long run of snapshots the pool stays the size of what the history holds, and
    /// no state a frame holds is ever reused.
    #[test]
    fn pool_stays_bounded_over_many_snapshots() {
        run_pool_over_many_snapshots(false);
    }

    /// A roomy pool (a demo file's) keeps the same guarantees with a history's worth of
    /// slack, and collects at least 8 times less often than a shared one (16 by design).
    #[test]
    fn roomy_pool_stays_bounded_and_collects_less() {
        let shared = run_pool_over_many_snapshots(false);
        let roomy = run_pool_over_many_snapshots(true);
        assert!(
            roomy > 0 && roomy * 8 <= shared,
            "{roomy} vs {shared} collections"
        );
    }

    /// The run of [`pool_stays_bounded_over_many_snapshots`]; returns how many collections
    /// it made.
    fn run_pool_over_many_snapshots(roomy: bool) -> u32 {
        let mut st = ClientState::default();
        if roomy {
            st.pool.roomy();
        }
        let share = st.pool.collect_share();
        let state = |num: i32, number: i32| {
            let mut f = [0; NUM_ENTITY_FIELDS];
            f[0] = num;
            f[1] = number;
            f
        };
        let mut most = 0;
        // Three new states a snapshot and a collection per few dozen: about a hundred
        // collections, far past the steady state, and quick in a debug build.
        for num in 1..3_000 {
            // Each snapshot deltas from the previous one (or from two back, as after a
            // loss): keeps its entities but one, which it replaces, and adds two events.
            let base = if num % 7 == 0 { num - 2 } else { num - 1 };
            let old: Vec<EntRef> = st.slot(base).map(|f| f.ents.clone()).unwrap_or_default();
            let mut frame = st.new_frame();
            frame.message_num = num;
            let changed = num % 40;
            frame.ents.extend(
                old.iter()
                    .filter(|e| e.number() >= 2 && e.number() != changed),
            );
            for number in [0, 1, changed] {
                frame.ents.push(st.pool.alloc(number, &state(num, number)));
            }
            frame.ents.sort_by_key(|e| e.number());
            frame.ents.dedup_by_key(|e| e.number());
            st.store_snapshot(frame);
            let ids: std::collections::HashSet<u32> = st
                .history()
                .flat_map(|f| f.ents.iter().map(|e| e.id()))
                .collect();
            let refs: usize = st.history().map(|f| f.ents.len()).sum();
            // What a collection may leave: the held states, the slack it allows, and the
            // states allocated since.
            most = most.max(ids.len() + (refs / share).max(MIN_COLLECT_INTERVAL) + 3);
            for f in st.history() {
                for &e in &f.ents {
                    let held = st.pool.get(e);
                    assert_eq!(held.number, e.number(), "a held state was reused");
                    assert_eq!(held.fields[1], e.number(), "a held state was reused");
                    assert!(held.fields[0] <= f.message_num, "a held state was reused");
                }
            }
        }
        assert!(st.pool.len() <= most, "{} > {most}", st.pool.len());
        st.pool.epoch
    }

    #[test]
    fn big_configstring_is_bounded_like_the_engine() {
        let mut st = ClientState::default();
        let chunk = "x".repeat(1000);
        assert!(st.receive_server_command(1, &format!("bcs0 5 \"{chunk}\"")));
        for seq in 2..200 {
            st.receive_server_command(seq, &format!("bcs1 5 \"{chunk}\""));
        }
        st.receive_server_command(200, &format!("bcs2 5 \"{chunk}\""));
        assert_eq!(
            st.configstrings.get(5).len(),
            super::super::bits::BIG_INFO_STRING - 1
        );
    }
}
