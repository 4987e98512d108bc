//! Cutting an .mvd (spec §9): a window of a server demo that ezQuake plays on its own.
//!
//! In MVD playback every frame (a block whose msec byte is not 0 starts one) deltas its
//! packet entities from the previous frame, and each player's `DF_` playerinfo from that
//! player's last state (ezQuake `CL_ParsePacketEntities`, `CL_ParsePlayerinfo`). So the cut
//! is: the level's state messages from before the window (as for a .qwd, [`super::cut`]; the
//! stats of each player in its own `dem_stats` blocks, messages to one player in
//! `dem_single` blocks), every player's last state as one full playerinfo, then the window
//! from a frame's first block on with its first packet entities re-encoded as a full update,
//! then `svc_disconnect "EndOfDemo"`.
use super::cursor::Reader;
use super::cut::{write_state_blocks, Clock, CutError, CutStats, StateLog, Stretch, Window};
use super::entity;
use super::ext::Ext;
use super::playerinfo::{
    PlayerInfo, DF_ANGLES, DF_EFFECTS, DF_MODEL, DF_ORIGIN, DF_SKINNUM, DF_WEAPONFRAME,
};
use super::svc::{self, ServerOp, ServerState};
use std::collections::BTreeMap;

const DEM_READ: u8 = 1;
const DEM_SET: u8 = 2;
const DEM_MULTIPLE: u8 = 3;
const DEM_SINGLE: u8 = 4;
const DEM_STATS: u8 = 5;
const DEM_ALL: u8 = 6;
const DF_DEAD: u32 = 1 << 8;
const DF_GIB: u32 = 1 << 9;

struct Block<'a> {
    msec: u8,
    /// Type in bits 0–2, target player in bits 3–7.
    kind: u8,
    mask: Option<u32>,
    body: &'a [u8],
    raw: &'a [u8],
    /// Demo time at this block, seconds.
    time: f64,
}

fn blocks(data: &[u8]) -> Result<Vec<Block<'_>>, CutError> {
    let mut r = Reader::new(data);
    let mut out = Vec::new();
    let mut ms: u64 = 0;
    while !r.is_empty() {
        let start = r.pos();
        let n = out.len() + 1;
        let bad = |what: String| CutError::Bad {
            block: n,
            at: start,
            what,
        };
        let msec = r.u8().map_err(|e| bad(e.what))?;
        let kind = r.u8().map_err(|e| bad(e.what))?;
        ms += u64::from(msec);
        let mut mask = None;
        let body = match kind & 7 {
            DEM_SET => r.bytes(8).map_err(|e| bad(e.what))?,
            k @ (DEM_READ | DEM_MULTIPLE | DEM_SINGLE | DEM_STATS | DEM_ALL) => {
                if k == DEM_MULTIPLE {
                    mask = Some(r.u32().map_err(|e| bad(e.what))?);
                }
                let l = r.i32().map_err(|e| bad(e.what))?;
                let l = usize::try_from(l)
                    .ok()
                    .filter(|l| *l <= 8192 * 8)
                    .ok_or_else(|| bad(format!("bad .mvd block length {l}")))?;
                r.bytes(l).map_err(|e| bad(e.what))?
            }
            k => return Err(bad(format!("bad .mvd block type {k}"))),
        };
        out.push(Block {
            msec,
            kind,
            mask,
            body,
            raw: data.get(start..r.pos()).unwrap_or(&[]),
            time: ms as f64 / 1000.0,
        });
    }
    Ok(out)
}

/// Decoded ops of a block with their byte ranges; None for blocks players skip.
#[allow(clippy::type_complexity)]
fn feed(st: &mut ServerState, b: &Block<'_>) -> Option<Vec<(usize, usize, ServerOp)>> {
    if b.msec > 0 {
        st.seq = st.seq.wrapping_add(1);
    }
    if b.kind & 7 == DEM_SET || b.mask == Some(0) {
        return None;
    }
    let mut r = Reader::new(b.body);
    let (ops, _) = svc::parse_message(st, &mut r);
    let mut out = Vec::with_capacity(ops.len());
    let mut it = ops.into_iter().peekable();
    while let Some((at, op)) = it.next() {
        let end = it.peek().map_or(r.pos(), |(next, _)| *next);
        out.push((at, end, op));
    }
    Some(out)
}

fn write(out: &mut Vec<u8>, msec: u8, kind: u8, body: &[u8]) {
    out.push(msec);
    out.push(kind);
    out.extend_from_slice(&(body.len() as i32).to_le_bytes());
    out.extend_from_slice(body);
}

/// A player's whole state as one MVD playerinfo (every `DF_` field present).
fn full_playerinfo(out: &mut Vec<u8>, p: &PlayerInfo, ext: &Ext) {
    let mut flags = DF_MODEL | DF_SKINNUM | DF_EFFECTS | DF_WEAPONFRAME;
    for i in 0..3 {
        flags |= (DF_ORIGIN << i) | (DF_ANGLES << i);
    }
    flags |= p.flags & (DF_DEAD | DF_GIB);
    out.push(42);
    out.push(p.num);
    out.extend_from_slice(&(flags as u16).to_le_bytes());
    out.push(p.frame);
    for o in p.origin {
        ext.write_coord(out, o);
    }
    for a in p.angles.unwrap_or_default() {
        out.extend_from_slice(&((a * 65536.0 / 360.0).round() as i32 as i16).to_le_bytes());
    }
    let dbl = p.model >= 256;
    out.push((p.model & 255) as u8);
    out.push(p.skin | if dbl { 0x80 } else { 0 });
    out.push(p.effects);
    out.push(p.weaponframe);
}

fn window_range(bl: &[Block<'_>], w: &Window, clock: Clock) -> Result<(usize, usize), CutError> {
    let mut st = ServerState::new(true);
    let mut level: Option<f64> = None;
    let mut span = Stretch::default();
    for (i, b) in bl.iter().enumerate() {
        if let Some(ops) = feed(&mut st, b) {
            if ops
                .iter()
                .any(|(_, _, op)| matches!(op, ServerOp::Serverdata(_)))
            {
                level = Some(b.time);
            }
        }
        // The window starts at a frame's first block.
        let frame_start = b.msec > 0 || span.started();
        if !span.offer(i, frame_start && w.holds(b.time, level, &clock)) {
            break;
        }
    }
    span.range()
}

/// Cut `data` (an .mvd) to `window`; times as for [`super::cut::cut`] (demo time).
pub fn cut(data: &[u8], window: &Window) -> Result<(Vec<u8>, CutStats), CutError> {
    let bl = blocks(data)?;
    let clock = Clock {
        demo_zero: 0.0,
        first_packet: 0.0,
    };
    let (wa, wb) = window_range(&bl, window, clock)?;
    let now = bl.get(wa).map_or(0.0, |b| b.time) as f32;
    let mut st = ServerState::new(true);
    let mut global: Option<StateLog> = None;
    // Per player: stats (dem_stats) and messages to that player alone (dem_single).
    let mut to_player: BTreeMap<(u8, u8), StateLog> = BTreeMap::new();
    let mut last_update = [None::<u32>; 32];
    for b in bl.get(..wa).unwrap_or(&[]) {
        let Some(ops) = feed(&mut st, b) else {
            continue;
        };
        let kind = b.kind & 7;
        for (at, end, op) in &ops {
            if matches!(op, ServerOp::Serverdata(_)) {
                global = Some(StateLog::default());
                to_player.clear();
                last_update = [None; 32];
            }
            if let ServerOp::Playerinfo(p) = op {
                if let Some(s) = last_update.get_mut(usize::from(p.num)) {
                    *s = Some(st.seq);
                }
            }
            let bytes = b.body.get(*at..*end).unwrap_or(&[]);
            let t = b.time as f32;
            match kind {
                DEM_READ | DEM_ALL => {
                    if let Some(g) = &mut global {
                        g.push(op, bytes, t);
                    }
                }
                DEM_STATS | DEM_SINGLE if global.is_some() => {
                    to_player
                        .entry((kind, b.kind >> 3))
                        .or_default()
                        .push(op, bytes, t);
                }
                _ => {}
            }
        }
    }
    let Some(global) = global else {
        return Err(CutError::NoSignon);
    };
    let mut stats = CutStats::default();
    let mut out = Vec::with_capacity(data.len() / 2);
    let msgs = global.finish(now);
    stats.state_messages = msgs.len();
    write_state_blocks(&msgs, |body| write(&mut out, 0, DEM_ALL, body));
    for ((kind, to), log) in to_player {
        let msgs = log.finish(now);
        stats.state_messages += msgs.len();
        write_state_blocks(&msgs, |body| write(&mut out, 0, kind | (to << 3), body));
    }
    // Every player updated within the last 63 frames, as ezQuake holds it.
    let mut players = Vec::new();
    for (num, seq) in last_update.iter().enumerate() {
        let recent = seq.is_some_and(|s| st.seq.wrapping_sub(s) < 63);
        if let (true, Some(p)) = (recent, st.mvd_players.get(num)) {
            full_playerinfo(&mut players, p, &st.ext);
        }
    }
    if !players.is_empty() {
        write(&mut out, 0, DEM_ALL, &players);
    }
    let mut need_full = true;
    let mut ends = false;
    for b in bl.get(wa..=wb).unwrap_or(&[]) {
        let ops = feed(&mut st, b);
        if b.msec > 0 {
            stats.cmds += 1;
        }
        let Some(ops) = ops else {
            out.extend_from_slice(b.raw);
            continue;
        };
        stats.packets += 1;
        ends = ops
            .iter()
            .any(|(_, _, op)| matches!(op, ServerOp::Disconnect { .. }));
        let pe_at = ops.iter().position(|(_, _, op)| {
            matches!(
                op,
                ServerOp::Packetentities(_) | ServerOp::Deltapacketentities(_)
            )
        });
        let first_pe = need_full && pe_at.is_some();
        if ops
            .iter()
            .any(|(_, _, op)| matches!(op, ServerOp::Serverdata(_)))
        {
            need_full = false;
        }
        let Some(i) = pe_at.filter(|_| first_pe) else {
            out.extend_from_slice(b.raw);
            continue;
        };
        need_full = false;
        if matches!(ops.get(i), Some((_, _, ServerOp::Packetentities(_)))) {
            out.extend_from_slice(b.raw);
            continue;
        }
        let mut body = Vec::with_capacity(b.body.len() + 256);
        for (j, (at, end, _)) in ops.iter().enumerate() {
            if j == i {
                entity::write_full_packet_entities(
                    &mut body,
                    &st.last_frame,
                    &st.baselines,
                    &st.ext,
                );
            } else {
                body.extend_from_slice(b.body.get(*at..*end).unwrap_or(&[]));
            }
        }
        stats.reencoded += 1;
        out.push(b.msec);
        out.push(b.kind);
        if let Some(m) = b.mask {
            out.extend_from_slice(&m.to_le_bytes());
        }
        out.extend_from_slice(&(body.len() as i32).to_le_bytes());
        out.extend_from_slice(&body);
    }
    if stats.packets == 0 {
        return Err(CutError::Empty);
    }
    if !ends {
        let mut eod = vec![2u8];
        eod.extend_from_slice(b"EndOfDemo\0");
        write(&mut out, 0, DEM_ALL, &eod);
    }
    Ok((out, stats))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qw::cut::At;

    /// Damaged demos (cut short, bytes changed) give a cut or an error, never a panic.
    #[test]
    fn damaged_demos_never_panic() {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("captures/qw-basic/server-demo0.mvd");
        let Ok(data) = std::fs::read(&p) else {
            eprintln!("skipped: {} missing", p.display());
            return;
        };
        let w = Window {
            from: Some(At::Relative(3.0)),
            to: Some(At::Relative(5.0)),
        };
        assert!(cut(&data, &w).is_ok());
        for d in crate::fuzzing::damaged_copies(&data, 777, 200) {
            let _ = cut(&d, &w);
        }
        assert_eq!(cut(&[], &w).unwrap_err(), CutError::Empty);
    }
}
