//! The Quake 3 extractor of the cheat signals: each snapshot of a connection (or of a demo's
//! recorder) as a [`View`], each of its client messages as a [`Sent`].
use super::{Sent, Track, View};
use crate::q3::clc::ClientOp;
use crate::q3::fields::{entity_field_index, player_field_index, PS_CLIENT_NUM, PS_PM_TYPE};
use crate::q3::gamemod::info_value;
use crate::q3::message::Message;
use crate::q3::protocol::Protocol;
use crate::q3::state::SnapFrame;
use crate::q3::svc::ServerOp;
use crate::q3::usercmd::{UserCmd, UNKNOWN_BUTTONS};
use crate::q3::EntityState;

/// `BUTTON_ATTACK` in a command's buttons.
const BUTTON_ATTACK: i32 = 1;

/// `ET_PLAYER`.
const ET_PLAYER: i32 = 1;
/// `EF_DEAD` in `eFlags`.
const EF_DEAD: i32 = 1;
/// Commands kept for the echo of `delta_angles` (about half a second).
const CMDS_KEPT: usize = 64;
/// Snapshots in a row whose echo gives the same `delta_angles` before it is taken.
const ECHO_AGREE: u32 = 5;
/// `DEFAULT_VIEWHEIGHT`: the eyes' height above the origin of a standing player.
const DEFAULT_VIEWHEIGHT: f64 = 26.0;
/// `PM_NORMAL`: alive and playing (`PM_DEAD`, `PM_SPECTATOR`, `PM_INTERMISSION` are not).
const PM_NORMAL: i32 = 0;

/// The field indices a view reads, looked up once.
#[derive(Debug, Clone, Copy)]
struct Fields {
    command_time: usize,
    origin: [usize; 3],
    angles: [usize; 2],
    view_height: usize,
    delta_angles: [usize; 2],
    e_type: usize,
    e_flags: usize,
    tr_base: [usize; 3],
}

fn fields() -> Fields {
    let p = |n: &str| player_field_index(n).expect("player field");
    let e = |n: &str| entity_field_index(n).expect("entity field");
    Fields {
        command_time: p("commandTime"),
        origin: [p("origin[0]"), p("origin[1]"), p("origin[2]")],
        angles: [p("viewangles[0]"), p("viewangles[1]")],
        view_height: p("viewheight"),
        delta_angles: [p("delta_angles[0]"), p("delta_angles[1]")],
        e_type: e("eType"),
        e_flags: e("eFlags"),
        tr_base: [e("pos.trBase[0]"), e("pos.trBase[1]"), e("pos.trBase[2]")],
    }
}

/// One connection's (or demo's) signals and the names of its server's players.
#[derive(Debug)]
pub(crate) struct Flow {
    pub(crate) track: Track,
    fields: Fields,
    /// The connection's own slot (`clientNum`), once known.
    client_num: Option<i32>,
    /// Player names by slot (clean).
    names: Vec<String>,
    /// `delta_angles` (pitch, yaw) of the latest snapshot: the server adds them to a
    /// command's angles to give the view.
    delta_angles: Option<[i32; 2]>,
    /// Server time of the last command read.
    last_cmd: Option<i32>,
    /// The latest commands' server times and angles (pitch, yaw), for the echo below.
    cmds: std::collections::VecDeque<(i32, [i32; 2])>,
    /// `delta_angles` as the echo gives it (a capture begun mid-session, before the
    /// playerstate sent them): the candidate and how many snapshots in a row agreed.
    echo: Option<([i32; 2], u32)>,
}

impl Default for Flow {
    fn default() -> Self {
        Flow {
            track: Track::default(),
            fields: fields(),
            client_num: None,
            names: vec![String::new(); 64],
            delta_angles: None,
            last_cmd: None,
            cmds: std::collections::VecDeque::new(),
            echo: None,
        }
    }
}

impl Flow {
    /// The player's clean name, or `#N`, or `-` when not even his slot is known.
    pub(crate) fn player(&self) -> String {
        self.client_num.map_or("-".to_string(), |n| self.name(n))
    }

    /// Slot `n`'s clean name, or `#N`.
    pub(crate) fn name(&self, n: i32) -> String {
        super::slot_name(&self.names, n)
    }

    /// Read one decoded message.
    pub(crate) fn message(&mut self, m: &Message, demo: bool) {
        if let Some(c) = m.client() {
            for op in &c.ops {
                if let ClientOp::Move { cmds, .. } = op {
                    if let Some(last) = cmds.last() {
                        self.track.sent(Sent {
                            last_cmd: last.server_time,
                            ack: c.message_ack,
                            time: (!demo).then_some(m.time),
                        });
                    }
                    for cmd in cmds {
                        self.command(cmd, c.message_ack, m.time);
                    }
                }
            }
            return;
        }
        let Some(s) = m.server() else {
            return;
        };
        for op in &s.ops {
            match op {
                ServerOp::Gamestate(g) => {
                    self.client_num = Some(g.client_num);
                    self.last_cmd = None;
                    let players = Protocol::of(m.protocol).cs.players;
                    for c in &g.configstrings {
                        self.configstring(players, usize::from(c.index), &c.value);
                    }
                    self.track.reset_level();
                }
                ServerOp::ServerCommand { text, .. } => {
                    if let Some((i, v)) = crate::q3::command::configstring(text) {
                        self.configstring(Protocol::of(m.protocol).cs.players, i, &v);
                    }
                }
                ServerOp::Snapshot(sn) if sn.valid => {
                    if let Some(v) = self.view(&sn.frame, (!demo).then_some(m.time)) {
                        self.track.view(v);
                    }
                }
                _ => {}
            }
        }
    }

    /// A command: its view when it fires (the server adds `delta_angles` to its angles).
    fn command(&mut self, cmd: &UserCmd, ack: i32, time: f64) {
        // A client message repeats the commands of the one before (against loss): each
        // command once, in order.
        if self.last_cmd.is_some_and(|t| cmd.server_time <= t) {
            return;
        }
        self.last_cmd = Some(cmd.server_time);
        let (Some(pitch), Some(yaw), Some(buttons)) = (cmd.angle(0), cmd.angle(1), buttons(cmd))
        else {
            return;
        };
        if self.cmds.len() == CMDS_KEPT {
            self.cmds.pop_front();
        }
        self.cmds.push_back((cmd.server_time, [pitch, yaw]));
        let Some(d) = self.delta_angles else {
            return;
        };
        let deg = |a: i32, d: i32| f64::from((a + d) & 0xffff) * 360.0 / 65536.0;
        let angles = [deg(pitch, d[0]), deg(yaw, d[1])];
        let fires = buttons & BUTTON_ATTACK != 0;
        self.track
            .command(angles, fires, ack, Some(time), cmd.server_time);
    }

    /// Mid-session, `delta_angles` unknown: the snapshot's view is the last command it ran
    /// (the one of server time `command_time`) plus `delta_angles`, so their difference is
    /// `delta_angles`. Taken once [`ECHO_AGREE`] snapshots in a row give the same: a command
    /// a proxy rewrote on the way gives another, and a respawn changes it.
    fn echo(&mut self, command_time: i32, view: [f64; 2]) {
        let Some(&(_, a)) = self.cmds.iter().rev().find(|c| c.0 == command_time) else {
            return;
        };
        let short = |deg: f64| ((deg * 65536.0 / 360.0) as i32) & 0xffff;
        let d = [
            (short(view[0]) - a[0]) & 0xffff,
            (short(view[1]) - a[1]) & 0xffff,
        ];
        let n = match self.echo {
            Some((e, n)) if e == d => n + 1,
            _ => 1,
        };
        self.echo = Some((d, n));
        if n >= ECHO_AGREE && self.delta_angles != Some(d) {
            self.delta_angles = Some(d);
            self.track.view_reset();
        }
    }

    /// A player configstring (`players`: the protocol's first, `CS_PLAYERS`): the slot's
    /// name (a cleared slot keeps the last one: the player's answer is given at the end,
    /// after he left).
    fn configstring(&mut self, players: usize, index: usize, value: &str) {
        if let Some(slot) = index.checked_sub(players).filter(|n| *n < 64) {
            let name = crate::q3::color::plain(info_value(value, "n").unwrap_or(""));
            if !name.is_empty() {
                self.names[slot] = name;
            }
        }
    }

    /// The player's view at snapshot `f`: `None` where its values are not known (a
    /// capture begun mid-session before the playerstate was whole).
    fn view(&mut self, f: &SnapFrame, time: Option<f64>) -> Option<View> {
        let k = &f.ps_known;
        let ps = &f.ps;
        let fl = self.fields;
        let float = |i: usize| k.value(ps, i).map(|v| f64::from(f32::from_bits(v as u32)));
        let int = |i: usize| k.value(ps, i);
        if let Some(n) = int(PS_CLIENT_NUM) {
            self.client_num = Some(n);
        }
        if let (Some(p), Some(y)) = (int(fl.delta_angles[0]), int(fl.delta_angles[1])) {
            if self.delta_angles != Some([p, y]) {
                self.delta_angles = Some([p, y]);
                self.track.view_reset();
            }
        } else if let (Some(t), Some(p), Some(y)) = (
            int(fl.command_time),
            float(fl.angles[0]),
            float(fl.angles[1]),
        ) {
            self.echo(t, [p, y]);
        }
        // The command clock is the snapshot's first field, sent in every one: known even
        // mid-session. Where the aim's values are not (yet), the view is not judged.
        let mut view = View {
            time,
            server_time: f.server_time,
            message_num: f.message_num,
            command_time: int(fl.command_time)?,
            command_clock: true,
            ..View::default()
        };
        // Mid-session the rarely sent values may stay unknown: `pm_type` (then playing is
        // taken from the view moving at all, a dead player's does not), `viewheight`
        // (`DEFAULT_VIEWHEIGHT`, 26), `clientNum` (a snapshot never holds its own player's
        // entity anyway).
        let aim = (|| {
            let angles = [float(fl.angles[0])?, float(fl.angles[1])?];
            let origin = [
                float(fl.origin[0])?,
                float(fl.origin[1])?,
                float(fl.origin[2])?,
            ];
            let playing = int(PS_PM_TYPE).is_none_or(|t| t == PM_NORMAL);
            let height = int(fl.view_height).map_or(DEFAULT_VIEWHEIGHT, f64::from);
            Some((
                self.client_num.unwrap_or(-1),
                playing,
                angles,
                origin,
                height,
            ))
        })();
        if let Some((me, playing, angles, origin, view_height)) = aim {
            view.playing = playing;
            view.angles = angles;
            view.origin = origin;
            view.view_height = view_height;
            for (i, e) in f.entities.iter().enumerate() {
                let known = f.known.get(i).copied().unwrap_or(u64::MAX);
                if let Some(pos) = target(e, known, &fl, me) {
                    view.targets.push((e.number, pos));
                }
            }
        }
        Some(view)
    }
}

/// A command's buttons, when known.
fn buttons(cmd: &UserCmd) -> Option<i32> {
    (cmd.unknown & UNKNOWN_BUTTONS == 0).then_some(cmd.buttons)
}

/// A living player entity other than `me`, with its known position.
fn target(e: &EntityState, known: u64, fl: &Fields, me: i32) -> Option<[f64; 3]> {
    let val = |i: usize| (known & (1u64 << i) != 0).then(|| e.fields[i]);
    if e.number == me || e.number >= 64 || val(fl.e_type)? != ET_PLAYER {
        return None;
    }
    if val(fl.e_flags)? & EF_DEAD != 0 {
        return None;
    }
    let f = |i: usize| val(i).map(|v| f64::from(f32::from_bits(v as u32)));
    Some([f(fl.tr_base[0])?, f(fl.tr_base[1])?, f(fl.tr_base[2])?])
}
