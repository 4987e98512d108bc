//! Reading .qwd (spec §8) and .mvd (spec §9) demo files through the same decoders as captures.
use super::clc::ClientOp;
use super::cursor::Reader;
use super::message::{Message, NetchanStatus, Op, OpKind};
use super::oob;
use super::svc::{self, ServerState};
use super::usercmd::Usercmd;
use super::Event;
use crate::error::{Error, ErrorKind};
use crate::flow::{Dir, FlowSummary};

/// Blocks larger than this are rejected (ezQuake's demo read buffer).
const MAX_BLOCK: usize = 8192 * 8;

fn summary(name: &str) -> FlowSummary {
    FlowSummary {
        id: 1,
        game: "qw",
        // Like Quake 3 demo files: one connection (.qwd) or one game's server side (.mvd).
        kind: "demo",
        protocol: Some(28),
        server: name.to_string(),
        ..Default::default()
    }
}

/// Count the message's error, placed at its block (the byte is within the block).
fn push_error(sum: &mut FlowSummary, m: &mut Message) {
    if let Some(e) = &mut m.error {
        e.pos.record = Some(m.frame);
        e.pos.dir = Some(m.dir);
        sum.push_error(Error::clone(e));
    }
}

/// Decode a whole .qwd or .mvd (chosen by extension; anything not ending in `.mvd` is read as
/// .qwd). Every block becomes one [`Event::Message`] with flow id 1; the summary counts blocks
/// and errors. A truncated file ends with an error, never a panic. Holds every message: for
/// a pass over a demo of any length, [`decode_demo_stream`].
pub fn decode_demo_file(name: &str, data: &[u8], out: &mut Vec<Event>) -> Vec<FlowSummary> {
    decode_demo_stream(name, data, &mut |m| {
        out.push(Event::Message(m));
        true
    })
}

/// [`decode_demo_file`], each block's message handed to `emit` as it is decoded and then
/// dropped, so memory does not grow with the file (holding them all took about 17 bytes per
/// byte of .mvd). `emit` returns false to stop (its own error); the summary then covers the
/// blocks read so far.
pub fn decode_demo_stream(
    name: &str,
    data: &[u8],
    emit: &mut dyn FnMut(Message) -> bool,
) -> Vec<FlowSummary> {
    let mut sum = summary(name);
    let mut facts = Facts::default();
    let mut take = |sum: &mut FlowSummary, m: Message| {
        facts.note(sum, &m);
        emit(m)
    };
    if name.to_ascii_lowercase().ends_with(".mvd") {
        decode_mvd(data, &mut sum, &mut take);
    } else {
        decode_qwd(data, &mut sum, &mut take);
    }
    sum.game_seconds = facts.span.map(|(a, b)| b - a);
    vec![sum]
}

/// What a block's message hands on ([`decode_demo_stream`]'s `take`): false to stop.
type Take<'a> = dyn FnMut(&mut FlowSummary, Message) -> bool + 'a;

fn decode_qwd(data: &[u8], sum: &mut FlowSummary, out: &mut Take<'_>) {
    let mut r = Reader::new(data);
    let mut st = ServerState::new(false);
    let mut incoming: u32 = 0;
    let mut block = 0u64;
    while !r.is_empty() {
        block += 1;
        let start = r.pos();
        let res = (|| -> super::cursor::Result<Message> {
            let time = r.f32()?;
            let kind = r.u8()? & 7;
            match kind {
                0 => {
                    let cmd = Usercmd::from_qwd(&mut r)?;
                    let va = [r.f32()?, r.f32()?, r.f32()?];
                    let mut m = Message::new(1, Dir::C2s, block, f64::from(time), 36);
                    m.block = Some("cmd");
                    m.ops.push(Op {
                        at: 0,
                        kind: OpKind::Client(ClientOp::Democmd {
                            cmd,
                            viewangles: va,
                        }),
                    });
                    Ok(m)
                }
                1 => {
                    let len = r.i32()?;
                    let len = usize::try_from(len)
                        .ok()
                        .filter(|l| *l <= MAX_BLOCK)
                        .ok_or_else(|| r.err(format!("bad dem_read length {len}")))?;
                    let body = r.bytes(len)?;
                    let mut m = Message::new(1, Dir::S2c, block, f64::from(time), len);
                    m.block = Some("read");
                    decode_qwd_read(&mut st, &mut incoming, body, &mut m);
                    Ok(m)
                }
                2 => {
                    let out_seq = r.i32()?;
                    let in_seq = r.i32()?;
                    incoming = in_seq as u32;
                    let mut m = Message::new(1, Dir::S2c, block, f64::from(time), 8);
                    m.block = Some("set");
                    m.seq = Some(i64::from(in_seq));
                    m.ack = Some(i64::from(out_seq));
                    Ok(m)
                }
                k => Err(r.err(format!("bad .qwd block type {k}"))),
            }
        })();
        if !record_block(res, block, start, sum, out) {
            break;
        }
    }
}

/// One dem_read: an OOB packet, or a netchan packet that goes through `Netchan_Process`
/// (sequence must increase, else the engine drops it silently).
fn decode_qwd_read(st: &mut ServerState, incoming: &mut u32, body: &[u8], m: &mut Message) {
    if oob::is_oob(body) {
        m.connectionless = true;
        m.kind = "oob";
        m.ops.push(Op {
            at: 4,
            kind: OpKind::Oob(oob::parse_s2c(body.get(4..).unwrap_or(&[]))),
        });
        return;
    }
    let mut r = Reader::new(body);
    let (Ok(w1), Ok(w2)) = (r.u32(), r.u32()) else {
        let text = format!("netchan header truncated ({} bytes)", body.len());
        m.error = Some(Box::new(Error::new(ErrorKind::Truncated, text)));
        return;
    };
    let seq = w1 & 0x7fff_ffff;
    m.seq = Some(i64::from(seq));
    m.ack = Some(i64::from(w2 & 0x7fff_ffff));
    m.reliable = Some(w1 >> 31 != 0);
    m.ack_reliable = Some(w2 >> 31 != 0);
    if seq <= *incoming {
        m.netchan = Some(if seq == *incoming {
            NetchanStatus::Duplicate
        } else {
            NetchanStatus::OutOfOrder
        });
        return;
    }
    m.dropped = Some(seq - *incoming - 1);
    *incoming = seq;
    m.netchan = Some(NetchanStatus::Accepted);
    st.seq = seq;
    let mut pr = Reader::with_base(body.get(8..).unwrap_or(&[]), 8);
    let (ops, err) = svc::parse_message(st, &mut pr);
    m.ops = Op::servers(ops);
    m.error = err.map(|e| Box::new(Error::from(&e)));
}

fn decode_mvd(data: &[u8], sum: &mut FlowSummary, out: &mut Take<'_>) {
    let mut r = Reader::new(data);
    let mut st = ServerState::new(true);
    let mut time_ms: u64 = 0;
    let mut block = 0u64;
    while !r.is_empty() {
        block += 1;
        let start = r.pos();
        let res = (|| -> super::cursor::Result<Message> {
            let msec = r.u8()?;
            let tb = r.u8()?;
            let kind = tb & 7;
            time_ms += u64::from(msec);
            if msec > 0 {
                // Each advance of demo time is one new "incoming sequence" for the player.
                st.seq = st.seq.wrapping_add(1);
            }
            let name: &'static str = match kind {
                2 => {
                    r.bytes(8)?;
                    let mut m = Message::new(1, Dir::S2c, block, time_ms as f64 / 1000.0, 8);
                    m.block = Some("set");
                    return Ok(m);
                }
                3 => "multiple",
                4 => "single",
                5 => "stats",
                6 => "all",
                1 => "read",
                k => return Err(r.err(format!("bad .mvd block type {k}"))),
            };
            let mask = if kind == 3 { Some(r.u32()?) } else { None };
            let len = r.i32()?;
            let len = usize::try_from(len)
                .ok()
                .filter(|l| *l <= MAX_BLOCK)
                .ok_or_else(|| r.err(format!("bad .mvd block length {len}")))?;
            let body = r.bytes(len)?;
            let mut m = Message::new(1, Dir::S2c, block, time_ms as f64 / 1000.0, len);
            m.block = Some(name);
            if mask == Some(0) {
                // Hidden block (MVD_PEXT1_HIDDEN_MESSAGES): not svc data, players skip it.
                return Ok(m);
            }
            let mut pr = Reader::new(body);
            let (ops, err) = svc::parse_message(&mut st, &mut pr);
            m.ops = Op::servers(ops);
            m.error = err.map(|e| Box::new(Error::from(&e)));
            Ok(m)
        })();
        if !record_block(res, block, start, sum, out) {
            break;
        }
    }
}

/// The map (the model list's first entry, `maps/NAME.bsp`), the players and the demo time
/// the blocks cover (their times are demo time in seconds), gathered block by block.
#[derive(Default)]
struct Facts {
    span: Option<(f64, f64)>,
    /// A .qwd's recording client: the slot serverdata gives it (.mvd has none).
    slot: Option<u8>,
}

impl Facts {
    fn note(&mut self, sum: &mut FlowSummary, m: &Message) {
        let t = m.time;
        self.span = Some(self.span.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
        for op in &m.ops {
            let OpKind::Server(op) = &op.kind else {
                continue;
            };
            match op {
                svc::ServerOp::Serverdata(sd) => self.slot = sd.playernum.map(|p| p & 0x7f),
                svc::ServerOp::Modellist(l) | svc::ServerOp::FteModellistshort(l) => {
                    if let Some(map) = l.map_name() {
                        sum.add_map(map);
                    }
                }
                svc::ServerOp::Updateuserinfo {
                    slot: s, userinfo, ..
                } => {
                    let name = info_value(userinfo, "name").filter(|n| !n.is_empty());
                    if Some(*s) == self.slot && sum.name.is_none() {
                        sum.name.clone_from(&name);
                    }
                    let spectator = info_value(userinfo, "*spectator").is_some_and(|v| v != "0");
                    if let (Some(n), false) = (name, spectator) {
                        sum.add_player(&n);
                    }
                }
                _ => {}
            }
        }
    }
}

/// The value of `key` in a `\\key\\value` userinfo string.
fn info_value(info: &str, key: &str) -> Option<String> {
    crate::vocab::info::value(info, key).map(str::to_string)
}

/// Count one decoded demo block on the summary and hand it on; an unreadable block is
/// recorded with its file offset and ends the file (its framing is lost). Returns false then,
/// or when the taker asks to stop.
fn record_block(
    res: Result<Message, super::cursor::DecodeError>,
    block: u64,
    start: usize,
    sum: &mut FlowSummary,
    out: &mut Take<'_>,
) -> bool {
    match res {
        Ok(mut m) => {
            *sum.packets.get_mut(m.dir) += 1;
            *sum.bytes.get_mut(m.dir) += m.size as u64;
            push_error(sum, &mut m);
            out(sum, m)
        }
        Err(e) => {
            // The block reader runs over the whole file: the byte is a file offset.
            let mut err = Error::from(&e).record(block);
            err.message = format!("{} (block starts at byte {start})", e.what);
            sum.push_error(err);
            false
        }
    }
}
