//! Server→client message bodies (q3-protocol.md §6): reliableAcknowledge, then ops until
//! svc_EOF. Parsing updates the [`ClientState`] exactly as `CL_ParseServerMessage` does, so the
//! same code decodes captures and demo files. Every op records the bit position right after
//! its op byte (`bit`), from which the engine's `cl_shownet` offsets follow.
//!
//! Here: the message and op dispatch, downloads, VoIP and the demo writer's `emit`; the
//! records in `types`, `svc_gamestate` in `gamestate`, `svc_snapshot` in `snapshot`.
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

mod gamestate;
mod snapshot;
mod types;

use gamestate::*;
use snapshot::*;
pub use types::*;

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
        protocol: st.proto.number,
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
                if matches!(detail, Detail::Full | Detail::Frames) || (partial && !end) {
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
    if op == SVC_SNAPSHOT && detail == Detail::Frames {
        let s = parse_snapshot_frame(r, bit, seq, st)?;
        return Ok(Some(ServerOp::Snapshot(Box::new(s))));
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
            let text = if st.proto.utf8 {
                r.read_string_utf8()?
            } else {
                r.read_string()?
            };
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
    use super::*;
    use crate::q3::bits::BitWriter;
    use crate::q3::delta::{write_delta_entity, write_delta_playerstate};
    use crate::q3::fields::{GENTITYNUM_BITS, MAX_GENTITIES};
    use crate::q3::protocol::Protocol;
    use crate::q3::state::SnapFrame;

    /// `long reliableAcknowledge`, the start of every server message.
    pub fn ack(w: &mut BitWriter, ack: i32) {
        w.write_long(ack);
    }

    /// svc_serverCommand.
    pub fn server_command(w: &mut BitWriter, proto: &Protocol, seq: i32, text: &str) {
        w.write_byte(SVC_SERVERCOMMAND);
        w.write_long(seq);
        if proto.utf8 {
            w.write_string_utf8(text);
        } else {
            w.write_string(text);
        }
    }

    /// svc_EOF.
    pub fn eof(w: &mut BitWriter) {
        w.write_byte(SVC_EOF);
    }

    /// svc_snapshot as a full (non-delta) snapshot of `frame`: playerstate from zero, every
    /// entity from its baseline, as a server with no delta base writes it.
    pub fn full_snapshot(
        w: &mut BitWriter,
        proto: &Protocol,
        frame: &SnapFrame,
        baselines: &Baselines,
    ) {
        w.write_byte(SVC_SNAPSHOT);
        w.write_long(frame.server_time);
        w.write_byte(0);
        w.write_byte(frame.flags);
        w.write_byte(frame.areamask.len() as u8);
        for &b in &frame.areamask {
            w.write_byte(b);
        }
        write_delta_playerstate(w, proto, None, &frame.ps);
        for e in &frame.entities {
            // Entity numbers come from a decode: below MAX_GENTITIES.
            let base = baselines.get(e.number as usize);
            write_delta_entity(w, proto, base, Some(e), true);
        }
        w.write_bits(MAX_GENTITIES - 1, GENTITYNUM_BITS);
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::q3::bits::{BitReader, BitWriter};
    use crate::q3::delta::{EntityState, PlayerState};
    use crate::q3::fields::{NetField, ENTITY_FIELDS, PLAYER_FIELDS};
    use crate::q3::state::{ClientState, SnapFrame};

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

    /// Protocol 68's tables: the union tables' first fields.
    const Q3_E: &[NetField] = ENTITY_FIELDS
        .split_at(crate::q3::fields::Q3_ENTITY_FIELDS)
        .0;
    const Q3_P: &[NetField] = PLAYER_FIELDS
        .split_at(crate::q3::fields::Q3_PLAYER_FIELDS)
        .0;

    fn fields(table: &'static [NetField]) -> impl Strategy<Value = Vec<i32>> {
        table.iter().map(value).collect::<Vec<_>>()
    }

    fn entity(number: i32, v: &[i32]) -> EntityState {
        let mut e = EntityState::zeroed(number);
        e.fields[..v.len()].copy_from_slice(v);
        e
    }

    fn playerstate(v: &[i32], arrays: &[i16]) -> PlayerState {
        let mut ps = PlayerState::default();
        ps.fields[..v.len()].copy_from_slice(v);
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
            ents in proptest::collection::btree_map(0i32..1023, fields(Q3_E), 0..24),
            bases in proptest::collection::btree_map(0i32..1023, fields(Q3_E), 0..24),
            same_as_base in any::<bool>(),
            ps in fields(Q3_P),
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
            emit::full_snapshot(&mut w, crate::q3::protocol::Protocol::q3(), &frame, &st.baselines);
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
