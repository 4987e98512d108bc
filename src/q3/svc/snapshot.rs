//! `svc_snapshot`: `CL_ParseSnapshot` and `CL_ParsePacketEntities` on the client state,
//! through a recorder that keeps what the asked detail needs.
use super::*;
use crate::q3::fields::{PS_CLIENT_NUM, PS_PM_TYPE};

/// The part of a snapshot before the playerstate, and how the client takes it.
pub(super) struct SnapHead {
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
    pub(super) fn head(&self, bit: usize) -> SnapshotHead {
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
pub(super) fn read_snap_head(
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
pub(super) trait Recorder {
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
pub(super) struct EntityWire<C> {
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
pub(super) struct CommandTimeOnly;

impl Recorder for CommandTimeOnly {
    type Changes = ();
    const WHOLE: bool = false;
}

/// A snapshot's playerstate commandTime on its base's ([`Detail::Samples`]): of the frame
/// only that field is known (where the base's was, or the delta sent it), no entity.
pub(super) fn read_command_time_into(
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
    let sent = read_command_time(r, st.proto, &mut frame.ps)?;
    frame.ps_known = PsKnown {
        fields: known | u64::from(sent),
        arrays: [0; 4],
    };
    frame.ents_partial = true;
    Ok(())
}

/// The records of a snapshot parsed with [`Detail::Full`].
#[derive(Default)]
pub(super) struct SnapRecord {
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
pub(super) fn parse_snapshot_with<R: Recorder>(
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

pub(super) fn read_snapshot_into<R: Recorder>(
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
    let proto = st.proto;
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
        let wire = read_playerstate_into(r, proto, &mut frame.ps, &mut changes)?;
        frame.ps_known = PsKnown::ALL;
        (wire, changes)
    } else {
        let mut changes = Masked::new(R::Changes::default());
        let wire = read_playerstate_into(r, proto, &mut frame.ps, &mut changes)?;
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
        proto,
        baselines,
        known: entering,
    };
    merge_packet_entities(r, old_ents, pool, &bases, &mut frame.ents, rec)?;
    Ok(h)
}

/// The baselines entities enter from, and which of their fields are known.
pub(super) struct Bases<'a> {
    proto: &'static crate::q3::protocol::Protocol,
    baselines: &'a Baselines,
    known: u64,
}

/// A [`ChangeSink`] that also collects the changed fields as a mask.
pub(super) struct Masked<C> {
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
pub(super) fn parse_snapshot(
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

/// A snapshot with its whole frame but no delta records ([`Detail::Frames`]).
pub(super) fn parse_snapshot_frame(
    r: &mut BitReader<'_>,
    bit: usize,
    seq: i32,
    st: &mut ClientState,
) -> Result<Snapshot, SvcError> {
    let mut rec = FrameOnly::default();
    let h = parse_snapshot_with(r, seq, st, &mut rec)?;
    let none = PlayerDelta::default();
    Ok(snapshot_op(bit, &h, none, Vec::new(), Vec::new(), rec.0))
}

/// The record of a snapshot parsed with [`Detail::Frames`]: its frame alone.
#[derive(Default)]
pub(super) struct FrameOnly(SnapFrame);

impl Recorder for FrameOnly {
    type Changes = ();
    fn frame(&mut self, st: &ClientState, f: &mut HistFrame) {
        self.0 = st.snap_frame(f);
    }
}

/// A snapshot for [`Detail::Events`]: the head, and a frame holding only its obituary
/// entities, without delta records or playerstate. Most frames hold none: such a snapshot
/// is only its head (as with [`Detail::Headers`]), which spares building and boxing a
/// snapshot op per message.
pub(super) fn parse_snapshot_events(
    r: &mut BitReader<'_>,
    bit: usize,
    seq: i32,
    st: &mut ClientState,
    head: &mut Option<SnapshotHead>,
) -> Result<Option<ServerOp>, SvcError> {
    let mut rec = EventFrame {
        ev_obituary: st.proto.ev_obituary,
        ..Default::default()
    };
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
pub(super) fn snapshot_op(
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
pub(super) struct EventFrame {
    /// The game's obituary event number.
    ev_obituary: i32,
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
        self.base_pm_type = old.and_then(|o| o.ps_known.value(&o.ps, PS_PM_TYPE));
    }
    fn entity(&mut self, _e: EntityWire<()>, state: Option<(&EntityState, u64)>) {
        self.sent_events |= state.is_some_and(|(s, _)| is_obituary(s, self.ev_obituary));
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
        self.pm_type = f.ps_known.value(&f.ps, PS_PM_TYPE);
        self.client_num = f.ps_known.value(&f.ps, PS_CLIENT_NUM);
    }
}

/// `CL_ParsePacketEntities`: merge the old frame's sorted list with the transmitted deltas.
/// Old entities below each transmitted number are kept as they are (shared, not copied),
/// the transmitted one is read from its base (the old state or the baseline); the rest of
/// the old list follows the end marker.
pub(super) fn merge_packet_entities<R: Recorder>(
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
        read_entity(
            r,
            bases.proto,
            newnum,
            from_old,
            (base, bases.known),
            pool,
            out,
            rec,
        )?;
    }
    out.extend_from_slice(&old[oi..]);
    Ok(())
}

/// `MSG_ReadDeltaEntity` into the new frame: an unchanged entity of the old frame is shared,
/// a changed one gets its own state.
#[allow(clippy::too_many_arguments)]
pub(super) fn read_entity<'b, R: Recorder>(
    r: &mut BitReader<'_>,
    proto: &crate::q3::protocol::Protocol,
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
            read_entity_fields(r, proto, &mut pool.get_mut(e).fields, &mut wire.changes)?
        } else {
            // Only a partly known entity (mid-session) collects the mask of what it got.
            let mut changes = Masked::new(std::mem::take(&mut wire.changes));
            let got = read_entity_fields(r, proto, &mut pool.get_mut(e).fields, &mut changes);
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
