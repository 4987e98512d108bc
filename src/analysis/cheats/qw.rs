//! The QuakeWorld extractor of the cheat signals. An .mvd carries every player's origin and
//! view angles (`svc_playerinfo`, MVD form): each update of a player is a [`View`] of him,
//! with the other living players as targets. A QuakeWorld capture holds the connection's
//! commands but no player's view angles: their `msec` is judged against the capture's clock
//! (a fast clock); a .qwd holds the recorder's commands on his own clock: nothing is judged.
use super::{Track, View};
use crate::qw::clc::ClientOp;
use crate::qw::message::{Message, OpKind};
use crate::qw::playerinfo::PlayerInfo;
use crate::qw::svc::ServerOp;

/// Player slots of QuakeWorld.
const SLOTS: usize = 32;
/// `DEFAULT_VIEWHEIGHT` of QuakeWorld: the eyes above the origin.
const VIEW_HEIGHT: f64 = 22.0;
/// The player model's death frames (`axdeth1` .. `deathe9` of player.mdl): a player showing
/// one is dead, no target and not aiming.
const DEATH_FRAMES: std::ops::RangeInclusive<u8> = 41..=102;

/// A player's latest update.
#[derive(Debug, Clone, Copy)]
struct Seen {
    origin: [f64; 3],
    alive: bool,
}

/// One demo's players: their latest state, names and signals.
#[derive(Debug)]
pub(crate) struct Demo {
    /// Per slot: the latest origin and whether alive, once seen.
    state: [Option<Seen>; SLOTS],
    names: Vec<String>,
    pub(crate) tracks: Vec<Track>,
    /// A capture's connection: its player's commands (by their `msec`), his slot once the
    /// serverdata names it, the last client sequence read.
    pub(crate) conn: Track,
    pub(crate) me: Option<usize>,
    last_seq: Option<i64>,
    /// A game message was read (not only connectionless ones: a status query).
    pub(crate) game: bool,
}

impl Default for Demo {
    fn default() -> Self {
        Demo {
            state: [None; SLOTS],
            names: vec![String::new(); SLOTS],
            tracks: (0..SLOTS).map(|_| Track::default()).collect(),
            conn: Track::default(),
            me: None,
            last_seq: None,
            game: false,
        }
    }
}

impl Demo {
    /// Slot `n`'s clean name, or `#N`.
    pub(crate) fn name(&self, n: i32) -> String {
        super::slot_name(&self.names, n)
    }

    /// Read one decoded block.
    pub(crate) fn message(&mut self, m: &Message) {
        self.game |= !m.connectionless;
        for op in &m.ops {
            if let (OpKind::Client(ClientOp::Move { cmds, .. }), Some(seq)) = (&op.kind, m.seq) {
                self.commands(cmds, seq, m.time);
                continue;
            }
            let OpKind::Server(op) = &op.kind else {
                continue;
            };
            match op {
                ServerOp::Serverdata(sd) => {
                    self.me = sd.playernum.map(|p| usize::from(p & 0x7f));
                }
                ServerOp::Playerinfo(p) => self.player(p, m.time),
                ServerOp::Updateuserinfo { slot, userinfo, .. } => {
                    let name = crate::vocab::info::value(userinfo, "name").unwrap_or("");
                    self.set_name(*slot, name);
                }
                ServerOp::Setinfo { slot, key, value } if key == "name" => {
                    self.set_name(*slot, value);
                }
                _ => {}
            }
        }
    }

    /// A capture's `clc_move` of client sequence `seq`: it carries the commands of `seq`,
    /// `seq − 1` and `seq − 2` (against loss); each one's `msec` counts once.
    fn commands(&mut self, cmds: &[crate::qw::usercmd::Usercmd; 3], seq: i64, time: f64) {
        if self.last_seq.is_some_and(|l| seq <= l) {
            return;
        }
        let new = self.last_seq.map_or(1, |l| (seq - l).clamp(1, 3)) as usize;
        self.last_seq = Some(seq);
        let msec = cmds[3 - new..].iter().map(|c| u32::from(c.msec)).sum();
        self.conn.msec(time, msec);
    }

    fn set_name(&mut self, slot: u8, raw: &str) {
        let name: String = raw
            .chars()
            .filter_map(crate::qw::charset::plain_char)
            .collect();
        if let Some(n) = self
            .names
            .get_mut(usize::from(slot))
            .filter(|_| !name.is_empty())
        {
            *n = name;
        }
    }

    /// A player's update (MVD form, with his view angles): his view.
    fn player(&mut self, p: &PlayerInfo, time: f64) {
        let (Some(angles), Some(slot)) =
            (p.angles, Some(usize::from(p.num)).filter(|&s| s < SLOTS))
        else {
            return;
        };
        let origin = p.origin.map(f64::from);
        let angles = [f64::from(angles[0]), f64::from(angles[1])];
        let alive = !DEATH_FRAMES.contains(&p.frame);
        self.state[slot] = Some(Seen { origin, alive });
        // Demo time in ms (the demo's own clock; there is no server time in a QuakeWorld
        // demo), and it stands for the command clock too: no hold can be told.
        let ms = (time * 1000.0) as i32;
        let targets = self
            .state
            .iter()
            .enumerate()
            .filter(|&(i, s)| i != slot && s.is_some_and(|s| s.alive))
            .filter_map(|(i, s)| s.map(|s| (i as i32, s.origin)))
            .collect();
        self.tracks[slot].view(View {
            time: None,
            server_time: ms,
            message_num: ms,
            command_time: ms,
            command_clock: false,
            angles,
            origin,
            view_height: VIEW_HEIGHT,
            playing: alive,
            targets,
        });
    }
}
