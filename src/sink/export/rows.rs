//! Row builders: what one decoded message, sample, flow or game event becomes in each table.
//! Column order follows [`super::schema`]; the values are the ones `decode --json` shows.
use std::io;

use super::writer::{Cell, TableWriter};
use crate::analysis::net::sample::{Arrival, Sample};
use crate::flow::FlowSummary;
use crate::gameevent::GameEvent;
use crate::q3;
use crate::q3::clc::ClientOp as Q3ClientOp;
use crate::q3::delta::PsKnown;
use crate::q3::svc::ServerOp as Q3ServerOp;
use crate::qw;
use crate::qw::clc::ClientOp as QwClientOp;
use crate::qw::message::OpKind;
use crate::qw::svc::ServerOp as QwServerOp;

/// The writers of the streamed tables.
pub struct Streams<'a> {
    /// The `messages` table: one row per decoded message.
    pub messages: &'a mut TableWriter,
    /// The `usercmds` table: one row per user command of a client message.
    pub usercmds: &'a mut TableWriter,
    /// The `player_states` table: one row per Quake 3 snapshot or QuakeWorld `playerinfo` op.
    pub player_states: &'a mut TableWriter,
    /// The `server_commands` table: one row per Quake 3 `serverCommand` op and QuakeWorld
    /// `print`, `stufftext` or `centerprint` op.
    pub server_commands: &'a mut TableWriter,
}

/// Quake 3 sends angles as 16-bit fractions of a turn (`SHORT2ANGLE`).
fn short2angle(v: i32) -> f64 {
    f64::from(v) * (360.0 / 65536.0)
}

/// The player-state fields the table takes, by engine name, looked up once.
struct PsFields {
    origin: [usize; 3],
    velocity: [usize; 3],
    viewangles: [usize; 3],
    weapon: usize,
    client_num: usize,
}

/// The indices, looked up on first use.
fn ps_fields() -> Option<&'static PsFields> {
    static FIELDS: std::sync::OnceLock<Option<PsFields>> = std::sync::OnceLock::new();
    FIELDS.get_or_init(find_ps_fields).as_ref()
}

fn find_ps_fields() -> Option<PsFields> {
    let f = q3::fields::player_field_index;
    Some(PsFields {
        origin: [f("origin[0]")?, f("origin[1]")?, f("origin[2]")?],
        velocity: [f("velocity[0]")?, f("velocity[1]")?, f("velocity[2]")?],
        viewangles: [
            f("viewangles[0]")?,
            f("viewangles[1]")?,
            f("viewangles[2]")?,
        ],
        weapon: f("weapon")?,
        client_num: f("clientNum")?,
    })
}

/// `STAT_HEALTH` in `playerState_t.stats`.
const STAT_HEALTH: usize = 0;

/// The columns of a `messages` row both games fill the same way (the sequence differs in
/// width: it comes as a cell).
struct MessageHead<'a> {
    flow: Cell<'a>,
    game: Cell<'a>,
    dir: crate::flow::Dir,
    frame: Cell<'a>,
    time: Cell<'a>,
    kind: &'static str,
    size: usize,
    ops: usize,
    fragmented: bool,
}

impl MessageHead<'_> {
    fn row(self, seq: Cell<'_>, error: Option<&str>, t: &mut TableWriter) -> io::Result<()> {
        t.row(&[
            self.flow,
            self.game,
            Cell::Str(self.dir.as_str()),
            self.frame,
            self.time,
            seq,
            Cell::Str(self.kind),
            self.size.into(),
            Cell::I32(i32::try_from(self.ops).unwrap_or(i32::MAX)),
            self.fragmented.into(),
            error.into(),
        ])
    }
}

/// One Quake 3 message: its `messages` row, and its usercmds, player state and server commands.
pub fn q3_message(m: &q3::message::Message, t: &mut Streams<'_>) -> io::Result<()> {
    let flow = Cell::from(m.flow);
    let game = Cell::Str(m.game);
    let frame = Cell::from(m.frame);
    let time = Cell::F64(m.time);
    let (ops, body_error) = match &m.body {
        q3::message::Body::Server(s) => (s.ops.len(), s.error.as_ref().map(|e| e.to_string())),
        q3::message::Body::Client(c) => (c.ops.len(), c.error.as_ref().map(|e| e.to_string())),
        q3::message::Body::Oob(_) => (1, None),
        q3::message::Body::None => (0, None),
    };
    let error = m.error.as_ref().map(|e| e.to_string()).or(body_error);
    let head = MessageHead {
        flow,
        game,
        dir: m.dir,
        frame,
        time,
        kind: m.kind,
        size: m.size,
        ops,
        fragmented: m.fragmented,
    };
    head.row(m.seq.into(), error.as_deref(), t.messages)?;
    match &m.body {
        q3::message::Body::Client(c) => {
            for op in &c.ops {
                let Q3ClientOp::Move { cmds, .. } = op else {
                    continue;
                };
                for (slot, u) in cmds.iter().enumerate() {
                    // A command with values the decoder could not know (mid-session, before
                    // the key is) has no row: its columns are required.
                    if u.unknown != 0 {
                        continue;
                    }
                    t.usercmds.row(&[
                        flow,
                        game,
                        frame,
                        time,
                        Cell::I32(slot as i32),
                        u.server_time.into(),
                        Cell::Null,
                        short2angle(u.angles[0]).into(),
                        short2angle(u.angles[1]).into(),
                        short2angle(u.angles[2]).into(),
                        i32::from(u.forwardmove).into(),
                        i32::from(u.rightmove).into(),
                        i32::from(u.upmove).into(),
                        u.buttons.into(),
                        i32::from(u.weapon).into(),
                        Cell::Null,
                    ])?;
                }
            }
        }
        q3::message::Body::Server(s) => {
            let fields = ps_fields();
            for op in &s.ops {
                match op {
                    Q3ServerOp::ServerCommand { seq, text, new, .. } => {
                        t.server_commands.row(&[
                            flow,
                            game,
                            frame,
                            time,
                            Cell::Str("serverCommand"),
                            i64::from(*seq).into(),
                            (*new).into(),
                            Cell::Null,
                            Cell::Str(text),
                        ])?;
                    }
                    Q3ServerOp::Snapshot(snap) => {
                        let Some(f) = fields else { continue };
                        let ps = &snap.playerstate.state;
                        // Values from a delta base the capture missed (mid-session): a row
                        // only when the required ones are known, the optional ones null.
                        let known = snap.playerstate.known.unwrap_or(PsKnown::ALL);
                        let has = |i: usize| known.fields & (1u64 << i) != 0;
                        let required = [f.client_num, f.origin[0], f.origin[1], f.origin[2]];
                        let velocity = [f.velocity[0], f.velocity[1], f.velocity[2]];
                        if !required.iter().chain(&velocity).all(|&i| has(i)) {
                            continue;
                        }
                        let fl = |i: usize| -> Cell<'_> { has(i).then(|| ps.float(i)).into() };
                        let int = |i: usize| Cell::from(ps.fields.get(i).copied().unwrap_or(0));
                        let opt_int = |i: usize| -> Cell<'_> {
                            has(i)
                                .then(|| ps.fields.get(i).copied().unwrap_or(0))
                                .into()
                        };
                        let health_known = known.arrays[0] & (1 << STAT_HEALTH) != 0;
                        t.player_states.row(&[
                            flow,
                            game,
                            frame,
                            time,
                            snap.server_time.into(),
                            snap.valid.into(),
                            int(f.client_num),
                            fl(f.origin[0]),
                            fl(f.origin[1]),
                            fl(f.origin[2]),
                            fl(f.velocity[0]),
                            fl(f.velocity[1]),
                            fl(f.velocity[2]),
                            fl(f.viewangles[0]),
                            fl(f.viewangles[1]),
                            fl(f.viewangles[2]),
                            ps.stats
                                .get(STAT_HEALTH)
                                .copied()
                                .filter(|_| health_known)
                                .into(),
                            opt_int(f.weapon),
                        ])?;
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// One QuakeWorld message: its `messages` row, and its usercmds, playerinfos and prints.
pub fn qw_message(m: &qw::Message, t: &mut Streams<'_>) -> io::Result<()> {
    let flow = Cell::from(m.flow);
    let game = Cell::Str(m.game);
    let frame = Cell::from(m.frame);
    let time = Cell::F64(m.time);
    let error = m.error.as_ref().map(|e| e.to_string());
    let head = MessageHead {
        flow,
        game,
        dir: m.dir,
        frame,
        time,
        kind: m.kind,
        size: m.size,
        ops: m.ops.len(),
        fragmented: false,
    };
    head.row(m.seq.into(), error.as_deref(), t.messages)?;
    let cmd_row = |t: &mut Streams<'_>, slot: usize, u: &qw::usercmd::Usercmd, angles: [f32; 3]| {
        t.usercmds.row(&[
            flow,
            game,
            frame,
            time,
            Cell::I32(slot as i32),
            Cell::Null,
            i32::from(u.msec).into(),
            angles[0].into(),
            angles[1].into(),
            angles[2].into(),
            i32::from(u.forward).into(),
            i32::from(u.side).into(),
            i32::from(u.up).into(),
            i32::from(u.buttons).into(),
            Cell::Null,
            i32::from(u.impulse).into(),
        ])
    };
    for op in &m.ops {
        match &op.kind {
            OpKind::Client(QwClientOp::Move { cmds, .. }) => {
                for (slot, u) in cmds.iter().enumerate() {
                    cmd_row(t, slot, u, u.angles)?;
                }
            }
            OpKind::Client(QwClientOp::Democmd { cmd, viewangles }) => {
                cmd_row(t, 0, cmd, *viewangles)?;
            }
            OpKind::Server(s) => {
                let (name, level, text) = match s {
                    QwServerOp::Print { level, text } => ("print", Some(i32::from(*level)), text),
                    QwServerOp::Stufftext { text } => ("stufftext", None, text),
                    QwServerOp::Centerprint { text } => ("centerprint", None, text),
                    QwServerOp::Playerinfo(p) => {
                        let angles = p.angles.or(p.command.map(|c| c.angles));
                        let a = |i: usize| Cell::from(angles.map(|a| a[i]));
                        t.player_states.row(&[
                            flow,
                            game,
                            frame,
                            time,
                            Cell::Null,
                            Cell::Null,
                            i32::from(p.num).into(),
                            p.origin[0].into(),
                            p.origin[1].into(),
                            p.origin[2].into(),
                            f64::from(p.velocity[0]).into(),
                            f64::from(p.velocity[1]).into(),
                            f64::from(p.velocity[2]).into(),
                            a(0),
                            a(1),
                            a(2),
                            Cell::Null,
                            Cell::Null,
                        ])?;
                        continue;
                    }
                    _ => continue,
                };
                t.server_commands.row(&[
                    flow,
                    game,
                    frame,
                    time,
                    Cell::Str(name),
                    Cell::Null,
                    Cell::Null,
                    level.into(),
                    Cell::Str(text),
                ])?;
            }
            _ => {}
        }
    }
    Ok(())
}

fn arrival(a: Arrival) -> &'static str {
    match a {
        Arrival::Accepted => "accepted",
        Arrival::Duplicate => "duplicate",
        Arrival::OutOfOrder => "out_of_order",
        Arrival::Fragment => "fragment",
    }
}

/// One netchan datagram sample.
pub fn sample(s: &Sample, t: &mut TableWriter) -> io::Result<()> {
    t.row(&[
        s.flow.into(),
        Cell::Str(s.dir.as_str()),
        s.time.into(),
        s.bytes.into(),
        s.seq.into(),
        Cell::Str(arrival(s.arrival)),
        s.gap.into(),
        s.ack.into(),
        s.reliable.into(),
        s.fragmented.into(),
        s.snapshot.map(|x| x.server_time).into(),
        s.snapshot.map(|x| x.rate_delayed).into(),
        s.snapshot.map(|x| x.command_time).into(),
        s.cmds
            .map(|x| i32::try_from(x.new).unwrap_or(i32::MAX))
            .into(),
        s.cmds.and_then(|x| x.last_time).into(),
    ])
}

/// One flow of the input's report.
pub fn flow(f: &FlowSummary, t: &mut TableWriter) -> io::Result<()> {
    let ports = f
        .client_ports
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",");
    t.row(&[
        f.id.into(),
        Cell::Str(f.game),
        Cell::Str(f.kind),
        f.protocol.into(),
        Cell::Str(&f.server),
        Cell::Str(&f.client_ip),
        Cell::Str(&ports),
        f.qport.map(i32::from).into(),
        f.name.as_deref().into(),
        f.map.as_deref().into(),
        f.packets.c2s.into(),
        f.packets.s2c.into(),
        f.bytes.c2s.into(),
        f.bytes.s2c.into(),
        f.dropped.c2s.into(),
        f.dropped.s2c.into(),
        f.errors.into(),
        f.first_time.into(),
        f.last_time.into(),
    ])
}

/// One game event; the game-specific fields come from its JSON form (the `events --json`
/// keys), the whole object is kept in `detail`.
pub fn event(e: &GameEvent, t: &mut TableWriter) -> io::Result<()> {
    let v = serde_json::to_value(e).map_err(io::Error::other)?;
    let s = |k: &str| v.get(k).and_then(|x| x.as_str());
    let b = |k: &str| v.get(k).and_then(|x| x.as_bool());
    let detail = v.to_string();
    t.row(&[
        e.time.into(),
        e.game_time.into(),
        e.session_time.into(),
        Cell::Str(e.kind.name()),
        e.flows.first().copied().into(),
        e.server.as_deref().into(),
        s("killer").into(),
        s("victim").into(),
        s("mod").into(),
        b("suicide").into(),
        b("team_kill").into(),
        s("name").into(),
        s("text").into(),
        Cell::Str(&detail),
    ])
}
