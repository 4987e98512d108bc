//! Who cheated: aim and timing signals per player, from what each game's thin extractor
//! reads off the decoded stream (`q3`, `qw`): the player's view at each snapshot with the other
//! players he could aim at, and the client messages that carried his commands. The signals
//! are written once, game-neutral, over those observations ([`View`], [`Sent`]).
//!
//! * **Aim lock**: for each command the player fired (a capture), the angle between his
//!   view (the command's angles plus `delta_angles`) and the bearing of the nearest other
//!   living player in the snapshot his client had acknowledged: the positions it aimed with,
//!   from his origin, with and without his view height. Without commands (a demo, an .mvd)
//!   the view of each snapshot against the positions of the one or two before. An aimbot
//!   that writes a target's bearing into the command leaves angles within a few 16-bit
//!   angle quanta (0.0055°); a hand does not. A lock counts only when the view moved onto
//!   the target. [`LOCK_DEG`], [`LOCK_LIKELY`].
//! * **Timing, upstream holds**: the server's view of the player's command clock
//!   (`commandTime` in his snapshots) stands still for at least [`HOLD_MIN_MS`] of server
//!   time and then catches up at once, while the player kept receiving: the commands sent
//!   during the hold acknowledge server messages sent during it. A path that delays both
//!   directions leaves those acknowledgements standing too: a lag spike, not a switch.
//!   [`HOLDS_LIKELY`].
//!
//! * **Timing, a fast clock**: each client message's last command is stamped with the
//!   client's clock of server time; the message acknowledges the latest snapshot the client
//!   had. The engine keeps that clock behind its latest snapshot (it draws between the last
//!   two: −40 to −45 ms in the lab's clean sessions, the median of every 5 s), and
//!   `cl_timeNudge` moves it at most 30 ms (every engine clamps it). A client whose own
//!   clock runs fast (a speed hack) is pulled back by the engine's time adjustment only in
//!   steps, and stays ahead: +90 ms at 1.3× in the lab. A path's lag or loss delays the
//!   snapshots and their acknowledgement alike (the worst clean window, in a relay's lag
//!   spike, +16 ms). A window of [`CLOCK_WINDOW_MS`] whose median lead is above
//!   [`FAST_LEAD_MS`] is fast; [`FAST_LIKELY`] of them are `likely`. Without client
//!   messages (a demo) the snapshots tell it: the `commandTime` of each is the clock of the
//!   last command the server ran, which a fair client's never puts past the snapshot's own
//!   server time (at most 0 in every real demo here; 0 on a listen server). The player's
//!   latency lowers it, so a demo shows a fast clock only where it outruns the ping (+57 ms at
//!   1.3× on loopback): above [`FAST_SNAPSHOT_LEAD_MS`]. A QuakeWorld command carries the
//!   milliseconds it covers (`msec`), taken from the client's own clock: in a capture they
//!   add up, against the capture's clock, to the time that passed (0.99–1.00 in the clean
//!   lab windows, less where commands were lost), and to 1.3× of it for a 1.3× clock. A
//!   window above [`FAST_RATE`] next to another is fast (a lag switch's release alone makes
//!   one window high, beside the hold's low one).
//!
//! * **Snaps**: a fired command whose view jumped at least [`SNAP_MIN_DEG`] from the command
//!   before, onto the player its snapshot had nearest the crosshair (the aim error falls
//!   below [`SNAP_PULL`] of what it was, same target), while the commands either side
//!   turned at most 1/[`SNAP_ISOLATION`] as fast (degrees per millisecond of their server
//!   times). A hand moves the view over several commands (a flick has a rise and a fall of
//!   speed: at 60 commands a second and more, each a few milliseconds); an aimbot that
//!   writes a bearing, or part of the way to it, into one command moves it in one. In the
//!   lab: 9 for the smoothed aimbot (`q3-aimbot-smooth`, 60 % of the way), 29 for the exact
//!   one, none for any clean client (scripted play turns every command a little, and its
//!   respawns and teleports are not toward a player). Judged from commands only: a demo's
//!   snapshots come 20–40 a second, and real players' flicks fill one snapshot interval
//!   (up to 31 such jumps in a real duel demo). [`SNAPS_LIKELY`].
//!
//! Each player gets a verdict ([`Verdict`]) and a score on a 0–100 scale: the strongest
//! signal's share of the count that makes it `likely` (100 = at or beyond it), so below
//! [`SUSPICIOUS_SCORE`] is `clean`.
pub(crate) mod q3;
pub(crate) mod qw;
pub mod sink;

use serde::Serialize;

use crate::analysis::burst::{BurstWatch, Release};

/// An aim error below this (degrees) is a lock: about four 16-bit angle quanta (0.0055°
/// each), the precision an aimbot that writes a bearing into the command reaches and a hand
/// does not.
pub const LOCK_DEG: f64 = 0.02;
/// Lock snapshots that make the aim signal `likely` (100 on the score); a third of it is
/// `suspicious`. A human meets a 0.02° cone around one of a few targets by chance about once
/// in 10^6 snapshots.
pub const LOCK_LIKELY: u32 = 12;
/// The least turn (degrees) between two commands that can be a snap.
pub const SNAP_MIN_DEG: f64 = 5.0;
/// The largest: an aimbot aims within its field of view, and a larger jump is a respawn, a
/// teleporter or the view offset (`delta_angles`) learnt anew.
pub const SNAP_MAX_DEG: f64 = 60.0;
/// A snap's turn speed is at least this many times that of the commands either side.
pub const SNAP_ISOLATION: f64 = 4.0;
/// A snap brings the aim error on its target below this share of the command before's.
pub const SNAP_PULL: f64 = 0.5;
/// Snaps that make the snap signal `likely` (a half of it is `suspicious`).
pub const SNAPS_LIKELY: u32 = 4;
/// A held upstream's commands reach the server within this long (s) of each other.
pub const BURST_S: f64 = 0.25;
/// A standing command clock shorter than this (server time, ms) is not a hold: a few lost
/// packets or a hitch of the client's frame.
pub const HOLD_MIN_MS: i32 = 1000;
/// Commands of a hold further apart than this (ms of their server times) mean the client
/// stopped making them: a client that plays sends one every frame, and a relay's loss of a
/// few leaves gaps of tens of ms.
pub const HOLD_CMD_GAP_MS: i32 = 250;
/// Upstream holds (with the player receiving) that make the timing signal `likely`; one is
/// `suspicious`.
pub const HOLDS_LIKELY: u32 = 2;
/// The server time a fast-clock window spans (ms of the commands' clock).
pub const CLOCK_WINDOW_MS: i32 = 5000;
/// Client messages a window needs to be judged (about 2 s of a client's packets).
pub const CLOCK_WINDOW_MIN: usize = 50;
/// A window's median lead of the command clock over the acknowledged snapshot (ms) above
/// which the client's clock runs fast: the engine's own clock stays behind it, and
/// `cl_timeNudge` (clamped to ±30) and a lagging path add less (the lab's worst clean
/// window: +16 ms; a 1.3× clock: +90).
pub const FAST_LEAD_MS: i32 = 50;
/// The same from the snapshots (a demo): a window's median of `commandTime` past the
/// snapshot's server time (ms). A fair client's is at most 0 (a listen server's); the lab's
/// 1.3× clock, +57.
pub const FAST_SNAPSHOT_LEAD_MS: i32 = 25;
/// A QuakeWorld window's sum of command `msec` over its span of capture time above which it
/// is fast (with a neighbour): the clean lab windows reach 1.03 at most, a 1.1× clock 1.10.
pub const FAST_RATE: f64 = 1.06;
/// A client message whose acknowledgement has stood this long (ms of its commands' clock)
/// says nothing of the clock's speed: no snapshot has reached the client since (a
/// downstream stall), and an engine's clock runs on alone, ahead of the last one. A client
/// that receives acknowledges a new snapshot every 50–100 ms (20 or 10 a second).
pub const ACK_STALE_MS: i32 = 250;
/// Fast windows (10 s) that make the clock signal `likely`; one is `suspicious`.
pub const FAST_LIKELY: u32 = 2;
/// Score at and above which a player is `suspicious`; `likely` from [`LIKELY_SCORE`].
pub const SUSPICIOUS_SCORE: f64 = 30.0;
/// Score at and above which a player is `likely`.
pub const LIKELY_SCORE: f64 = 100.0;
/// Moments kept per player: the first ones in game time, not the strongest.
pub const MAX_MOMENTS: usize = 200;
/// Client messages kept per player for judging holds (about 16 s at 125 packets/s).
const SENT_KEPT: usize = 2048;

/// One snapshot of a player: where he looked and who he could aim at.
#[derive(Debug, Clone, Default)]
pub struct View {
    /// Capture time (s since the Unix epoch); `None` in a demo.
    pub time: Option<f64>,
    /// The snapshot's server time (ms).
    pub server_time: i32,
    /// Netchan sequence of the message that carried it.
    pub message_num: i32,
    /// The server time of the last command the server ran for him (`commandTime`).
    pub command_time: i32,
    /// `command_time` is the player's own command clock (Quake 3); a QuakeWorld demo has
    /// none and stands its own clock in.
    pub command_clock: bool,
    /// Pitch and yaw (degrees).
    pub angles: [f64; 2],
    /// His origin.
    pub origin: [f64; 3],
    /// His view height above the origin.
    pub view_height: f64,
    /// Alive and playing (not dead, spectating or in the intermission), with the view's
    /// values known: the aim is judged.
    pub playing: bool,
    /// Other living players in the snapshot: client number and position.
    pub targets: Vec<(i32, [f64; 3])>,
}

/// One client message of the player, as the capture shows it.
#[derive(Debug, Clone, Copy)]
pub struct Sent {
    /// Server time of its last command.
    pub last_cmd: i32,
    /// The server message it acknowledges (`messageAcknowledge`).
    pub ack: i32,
    /// Capture time (s since the Unix epoch).
    pub time: Option<f64>,
}

/// How sure the signals are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// No signal beyond what play gives.
    Clean,
    /// A signal, not enough to say.
    Suspicious,
    /// A signal no fair play gives.
    Likely,
}

/// One strong moment, for an admin to cut a demo there and watch.
#[derive(Debug, Clone, Serialize)]
pub struct Moment {
    /// `aim`, `snap` or `timing`.
    pub kind: &'static str,
    /// Capture time of its start (s since the Unix epoch); `null` in a demo.
    pub start: Option<f64>,
    /// Capture time of its end.
    pub end: Option<f64>,
    /// Server time of its start (ms); `null` where the input has none (a QuakeWorld
    /// capture's commands).
    pub game_start: Option<i32>,
    /// Server time of its end (ms).
    pub game_end: Option<i32>,
    /// What was seen, with its numbers.
    pub detail: String,
    /// The player aimed at (`aim`), as the input names him (`#N` by slot when unnamed);
    /// `null` for the other kinds.
    pub target: Option<String>,
    /// The target's slot, until the names are known.
    #[serde(skip)]
    target_num: Option<i32>,
}

impl Moment {
    /// Its server time as `demo --from`/`--to` take it ("g9.800{sep}g26.845"); `None`
    /// where the input has none.
    pub fn game_span(&self, sep: &str) -> Option<String> {
        let (a, b) = (self.game_start?, self.game_end?);
        Some(format!(
            "g{:.3}{sep}g{:.3}",
            f64::from(a) / 1000.0,
            f64::from(b) / 1000.0
        ))
    }
}

/// Each signal's value, `None` where the input cannot tell.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Signals {
    /// Where the aim was judged from: `commands` (the usercmds a capture shows: what the
    /// player's client sent) or `snapshots` (his view as the server ran it: a demo).
    pub aim_from: Option<&'static str>,
    /// Commands fired (or snapshots) with another player in view (within 45°) that the aim was judged on.
    pub aim_judged: Option<u32>,
    /// Of those, snapshots locked on a player (error below [`LOCK_DEG`]).
    pub aim_locks: Option<u32>,
    /// Median aim error over the judged snapshots (degrees).
    pub aim_error_median: Option<f64>,
    /// Fired commands whose view jumped onto a player in one command ([`SNAP_MIN_DEG`],
    /// [`SNAP_ISOLATION`], [`SNAP_PULL`]); `None` where the input has no commands (a demo,
    /// an .mvd, a QuakeWorld capture).
    pub snaps: Option<u32>,
    /// Upstream holds while the player kept receiving (a lag switch's signature); `None`
    /// where the input has no client messages (a demo).
    pub upstream_holds: Option<u32>,
    /// Holds of the command clock whose direction the input cannot tell (a demo) or that
    /// stalled both directions (the path).
    pub other_holds: u32,
    /// Where the command clock was judged from: `messages` (each client message's last
    /// command against the snapshot it acknowledged: a Quake 3 capture), `snapshots` (the
    /// `commandTime` of each snapshot against its server time: a Quake 3 demo) or `msec`
    /// (a QuakeWorld capture's commands' `msec` against the capture's clock); `None` where
    /// the input has none (a QuakeWorld demo).
    pub clock_from: Option<&'static str>,
    /// `msec`: the commands' milliseconds over the capture time they came in, the median
    /// of the 5 s windows (1.0 for a client's own clock, 1.3 for one running 1.3× fast;
    /// less where commands were lost).
    pub clock_rate: Option<f64>,
    /// The median lead (ms, 5 ms steps) of the command clock, as `clock_from` says:
    /// negative for an engine's own clock.
    pub clock_lead_ms: Option<i32>,
    /// Windows of [`CLOCK_WINDOW_MS`] whose median lead was above [`FAST_LEAD_MS`]
    /// ([`FAST_SNAPSHOT_LEAD_MS`] from snapshots): a client clock running fast.
    pub fast_clock_windows: Option<u32>,
}

impl Signals {
    /// The clock signal in words: "command clock 90 ms ahead of the snapshots it
    /// acknowledged, fast in 3 windows of 5 s".
    pub fn clock_words(&self) -> String {
        let windows = |fast: u32| match fast {
            0 => "never fast".to_string(),
            1 => format!("fast in 1 window of {} s", CLOCK_WINDOW_MS / 1000),
            n => format!("fast in {n} windows of {} s", CLOCK_WINDOW_MS / 1000),
        };
        if let (Some("msec"), Some(rate), Some(fast)) =
            (self.clock_from, self.clock_rate, self.fast_clock_windows)
        {
            return format!(
                "commands' msec {rate:.2}× the capture's clock, {}",
                windows(fast)
            );
        }
        let (Some(from), Some(lead), Some(fast)) =
            (self.clock_from, self.clock_lead_ms, self.fast_clock_windows)
        else {
            return "no command clock to judge".to_string();
        };
        let what = if from == "messages" {
            "the snapshots it acknowledged"
        } else {
            "its snapshots"
        };
        let side = if lead > 0 {
            format!("{lead} ms ahead of {what}")
        } else {
            format!("{} ms behind {what}", -lead)
        };
        format!("command clock {side}, {}", windows(fast))
    }

    /// The aim signal in words, as `cheats` and `report --cheats` say it: "650 of 667 fired
    /// commands locked on a player (median error 0.00°)".
    pub fn aim_words(&self) -> String {
        match (self.aim_from, self.aim_locks, self.aim_judged) {
            (Some(from), Some(l), Some(n)) => format!(
                "{l} of {n} {} locked on a player (median error {})",
                if from == "commands" {
                    "fired commands"
                } else {
                    "snapshots"
                },
                self.aim_error_median
                    .map_or("-".into(), |m| format!("{m:.2}°"))
            ),
            _ => "no player in view to judge".to_string(),
        }
    }
}

/// One player's answer.
#[derive(Debug, Clone, Serialize)]
pub struct PlayerCheats {
    /// Name without colour codes (`#N` when unknown).
    pub player: String,
    /// The flow's id; `None` for a demo.
    pub flow: Option<u32>,
    /// The input it came from.
    pub file: String,
    /// `clean`, `suspicious` or `likely`.
    pub verdict: Verdict,
    /// 0–100: the strongest signal's share of what makes it `likely`.
    pub score: f64,
    /// The signals' values.
    pub signals: Signals,
    /// The strongest moments, in time order.
    pub moments: Vec<Moment>,
}

/// Where and when a sample was taken.
#[derive(Debug, Clone, Copy)]
struct At {
    time: Option<f64>,
    server_time: i32,
}

impl At {
    fn of(v: &View) -> At {
        At {
            time: v.time,
            server_time: v.server_time,
        }
    }
}

/// The aim-lock signal over one source of view angles.
#[derive(Debug, Default)]
struct Aim {
    judged: u32,
    locks: u32,
    /// Aim errors in 0.01° bins up to 45° (for the median).
    errors: Vec<u32>,
    /// The run of locks going on: first, last, count, largest error, target's slot.
    run: Option<(At, At, u32, f64, i32)>,
    moments: Vec<Moment>,
}

impl Aim {
    /// A sample of aim error `err` (degrees); `moved`: the view turned since the sample
    /// before. A lock counts only when the view moved onto the target: a view and a target
    /// that both stand still stay aligned without aiming, and a target crossing a still
    /// crosshair passes through it by chance.
    fn sample(&mut self, err: f64, target: i32, at: At, moved: bool) {
        if err < LOCK_DEG && !moved {
            return;
        }
        if err > 45.0 {
            self.miss();
            return;
        }
        self.judged += 1;
        if self.errors.is_empty() {
            self.errors = vec![0; 4501];
        }
        self.errors[((err * 100.0) as usize).min(4500)] += 1;
        if err >= LOCK_DEG {
            self.miss();
            return;
        }
        self.locks += 1;
        if self.run.is_some_and(|r| r.4 != target) {
            self.miss();
        }
        match &mut self.run {
            Some((_, end, n, worst, _)) => {
                *end = at;
                *n += 1;
                *worst = worst.max(err);
            }
            None => self.run = Some((at, at, 1, err, target)),
        }
    }

    /// A sample that is not a lock (or none): the run of locks, if any, is a moment.
    fn miss(&mut self) {
        if let Some((a, b, n, worst, target)) = self.run.take() {
            let detail = format!(
                "{n} aim{} within {worst:.4}° of the target's position",
                if n == 1 { "" } else { "s" }
            );
            push_moment(&mut self.moments, "aim", a, b, detail);
            if let Some(m) = self.moments.last_mut() {
                m.target_num = Some(target);
            }
        }
    }
}

fn push_moment(moments: &mut Vec<Moment>, kind: &'static str, a: At, b: At, detail: String) {
    if moments.len() < MAX_MOMENTS {
        moments.push(Moment {
            kind,
            start: a.time,
            end: b.time,
            game_start: Some(a.server_time),
            game_end: Some(b.server_time),
            detail,
            target: None,
            target_num: None,
        });
    }
}

/// Snapshots kept for finding the one a command's acknowledgement names (about 1.5 s).
const VIEWS_KEPT: usize = 32;

/// The running signals of one player (one connection, or the recorder of a demo).
#[derive(Debug, Default)]
pub(crate) struct Track {
    /// Snapshots seen.
    pub(crate) views: u32,
    /// The latest snapshots, newest last.
    recent: std::collections::VecDeque<View>,
    /// Aim judged from the commands the player sent (captures).
    by_command: Aim,
    /// Aim judged from the view angles of his snapshots (demos, or a capture without his
    /// commands).
    by_view: Aim,
    /// The angles of the last command judged.
    last_fired: Option<[f64; 2]>,
    /// The last commands, for the snap signal (newest last).
    snap_cmds: std::collections::VecDeque<SnapCmd>,
    /// Commands the snap signal saw, and its snaps.
    snap_seen: bool,
    snaps: u32,
    /// The command clock standing since this view (and how many snapshots).
    stand: Option<(View, u32)>,
    sent: std::collections::VecDeque<Sent>,
    saw_sent: bool,
    /// The last command of the latest client message (each message judged once).
    last_sent_cmd: Option<i32>,
    /// The acknowledgement of the latest client message, and the command time of the first
    /// message that gave it.
    ack_since: Option<(i32, i32)>,
    /// The fast-clock signal from the client messages (captures).
    clock: Clock,
    /// The same from the snapshots' `commandTime` (demos).
    snap_clock: Clock,
    /// The same from QuakeWorld commands' `msec` (captures).
    msec: MsecClock,
    /// QuakeWorld: client messages with commands and their `msec`, for the holds.
    msec_burst: BurstWatch,
    upstream: u32,
    other: u32,
    moments: Vec<Moment>,
}

impl Track {
    /// A gamestate: positions and clocks start again.
    pub(crate) fn reset_level(&mut self) {
        self.by_command.miss();
        self.by_view.miss();
        for c in [&mut self.clock, &mut self.snap_clock] {
            c.close();
            c.end_run();
        }
        self.last_sent_cmd = None;
        self.ack_since = None;
        self.recent.clear();
        self.stand = None;
    }

    /// A client message of this player.
    pub(crate) fn sent(&mut self, s: Sent) {
        self.saw_sent = true;
        if self.sent.len() == SENT_KEPT {
            self.sent.pop_front();
        }
        self.sent.push_back(s);
        // The clock: the message's last command against the snapshot it acknowledged
        // (a message that brings no new command says nothing new).
        if self.last_sent_cmd.is_some_and(|t| s.last_cmd <= t) {
            return;
        }
        self.last_sent_cmd = Some(s.last_cmd);
        let since = match self.ack_since {
            Some((ack, t)) if ack == s.ack => t,
            _ => {
                self.ack_since = Some((s.ack, s.last_cmd));
                s.last_cmd
            }
        };
        if s.last_cmd.saturating_sub(since) > ACK_STALE_MS {
            return;
        }
        if let Some(v) = self.recent.iter().rev().find(|v| v.message_num == s.ack) {
            let at = At {
                time: s.time,
                server_time: s.last_cmd,
            };
            self.clock.add(s.last_cmd.saturating_sub(v.server_time), at);
        }
    }

    /// A command with view `angles` (pitch and yaw, degrees), firing or not, from a client
    /// that had received server message `ack`. A firing one is judged against that
    /// snapshot's positions (the ones the client aimed with).
    pub(crate) fn command(
        &mut self,
        angles: [f64; 2],
        fires: bool,
        ack: i32,
        time: Option<f64>,
        server_time: i32,
    ) {
        self.snap_seen = true;
        if self.snap_cmds.len() == 4 {
            self.snap_cmds.pop_front();
        }
        self.snap_cmds.push_back(SnapCmd {
            server_time,
            time,
            angles,
            fires,
            ack,
        });
        self.snap();
        if !fires {
            return;
        }
        let seen = self
            .recent
            .iter()
            .rev()
            .find(|v| v.message_num <= ack)
            .filter(|v| v.playing);
        let err = seen.and_then(|v| aim_error(angles, v));
        let at = At { time, server_time };
        let moved = self.last_fired.is_none_or(|a| turned(a, angles));
        self.last_fired = Some(angles);
        match err {
            Some((err, target)) => self.by_command.sample(err, target, at, moved),
            None => self.by_command.miss(),
        }
    }

    /// The view offset (`delta_angles`) changed: the commands' views before it are not
    /// comparable with those after.
    pub(crate) fn view_reset(&mut self) {
        self.snap_cmds.clear();
    }

    /// Judge the command before the newest as a snap ([`SNAP_MIN_DEG`] etc.).
    fn snap(&mut self) {
        let q = &self.snap_cmds;
        if q.len() < 4 || !q[2].fires {
            return;
        }
        let (p, a, b, c) = (q[0], q[1], q[2], q[3]);
        let speed = |x: &SnapCmd, y: &SnapCmd| {
            let dt = y.server_time.saturating_sub(x.server_time);
            (dt > 0).then(|| turn_deg(x.angles, y.angles) / f64::from(dt))
        };
        // The turn first: most commands turn less, and the rest is trigonometry. The view
        // turns at most the pitch's change plus the yaw's: below the least snap, no sine.
        let wrap = |d: f64| (d + 180.0).rem_euclid(360.0) - 180.0;
        let bound = wrap(b.angles[0] - a.angles[0]).abs() + wrap(b.angles[1] - a.angles[1]).abs();
        if bound < SNAP_MIN_DEG {
            return;
        }
        let jump = turn_deg(a.angles, b.angles);
        if !(SNAP_MIN_DEG..=SNAP_MAX_DEG).contains(&jump) {
            return;
        }
        let (Some(v), Some(before), Some(after)) = (speed(&a, &b), speed(&p, &a), speed(&b, &c))
        else {
            return;
        };
        if v < SNAP_ISOLATION * before.max(after) {
            return;
        }
        let err = |x: &SnapCmd| {
            self.recent
                .iter()
                .rev()
                .find(|v| v.message_num <= x.ack)
                .filter(|v| v.playing)
                .and_then(|v| aim_error(x.angles, v))
        };
        let (Some((from, t0)), Some((to, t1))) = (err(&a), err(&b)) else {
            return;
        };
        if t0 != t1 || to >= SNAP_PULL * from {
            return;
        }
        self.snaps += 1;
        let at = |x: &SnapCmd| At {
            time: x.time,
            server_time: x.server_time,
        };
        let detail = format!(
            "view jumped {jump:.1}° in one command ({} ms), error {from:.1}° → {to:.1}°; \
             {:.2}°/ms against {:.2}°/ms either side",
            b.server_time.saturating_sub(a.server_time),
            v,
            before.max(after)
        );
        push_moment(&mut self.moments, "snap", at(&a), at(&b), detail);
        if let Some(m) = self.moments.last_mut() {
            m.target_num = Some(t1);
        }
    }

    /// A QuakeWorld client message that brought commands covering `msec` milliseconds,
    /// seen at capture time `time`.
    pub(crate) fn msec(&mut self, time: f64, msec: u32) {
        self.msec.add(time, msec);
        let r = self.msec_burst.add(
            time,
            u64::from(msec),
            f64::from(HOLD_MIN_MS) / 1000.0,
            BURST_S,
        );
        self.msec_burst_end(r);
    }

    /// A QuakeWorld client's commands stood and then came within [`BURST_S`]: held on the
    /// way, if their milliseconds cover half the silence (a client's own hitch sends a few
    /// commands after it). mvdsv answers only what it hears, so whether the player kept
    /// receiving (a lag switch) or the path stalled both ways no packet tells: a hold of no
    /// direction ([`Signals::other_holds`]).
    fn msec_burst_end(&mut self, r: Option<Release>) {
        if r.is_some_and(|r| r.amount as f64 >= r.silence() * 1000.0 / 2.0) {
            self.other += 1;
        }
    }

    /// Client messages judged by their `msec` (a QuakeWorld connection).
    pub(crate) fn msec_judged(&self) -> bool {
        self.msec.messages > 0
    }

    /// A snapshot of this player.
    pub(crate) fn view(&mut self, v: View) {
        self.views += 1;
        self.clock(&v);
        if v.playing && v.command_clock {
            self.snap_clock.from = ClockFrom::Snapshots;
            self.snap_clock
                .add(v.command_time.saturating_sub(v.server_time), At::of(&v));
        }
        if v.playing {
            // The positions the client had when it aimed: the snapshot before (or the one
            // before that, when the command was built before the latest arrived).
            let err = self
                .recent
                .iter()
                .rev()
                .take(2)
                .filter(|p| p.playing)
                .filter_map(|p| aim_error(v.angles, p))
                .min_by(|a, b| a.0.total_cmp(&b.0));
            let moved = self
                .recent
                .back()
                .is_none_or(|p| turned(p.angles, v.angles));
            match err {
                Some((err, target)) => self.by_view.sample(err, target, At::of(&v), moved),
                None => self.by_view.miss(),
            }
        } else {
            self.by_view.miss();
        }
        if self.recent.len() == VIEWS_KEPT {
            self.recent.pop_front();
        }
        self.recent.push_back(v);
    }

    fn moment(&mut self, kind: &'static str, a: &View, b: &View, detail: String) {
        push_moment(&mut self.moments, kind, At::of(a), At::of(b), detail);
    }

    /// The command clock: a hold starts when `commandTime` stops while server time goes on,
    /// and is judged when it moves again.
    fn clock(&mut self, v: &View) {
        let Some(p) = self.recent.back() else {
            return;
        };
        if v.command_time == p.command_time && v.server_time > p.server_time {
            match &mut self.stand {
                Some((_, n)) => *n += 1,
                None => self.stand = Some((p.clone(), 1)),
            }
            return;
        }
        let Some((start, _)) = self.stand.take() else {
            return;
        };
        let held = v.server_time - start.server_time;
        let caught_up = v.command_time - start.command_time;
        // A hold ends with the held commands run at once: the clock jumps most of the way.
        if held < HOLD_MIN_MS || v.command_time < start.command_time || caught_up < held / 2 {
            return;
        }
        let (kind, what) = match self.acked_during(&start, v) {
            Some(true) => {
                self.upstream += 1;
                (true, "upstream held (the player kept receiving)")
            }
            Some(false) => {
                self.other += 1;
                (false, "both directions stalled (the path)")
            }
            None => {
                self.other += 1;
                (false, "direction unknown (no client messages)")
            }
        };
        let detail = format!(
            "command clock stood {:.2} s, then ran {:.2} s of commands at once: {what}",
            f64::from(held) / 1000.0,
            f64::from(caught_up) / 1000.0
        );
        if kind {
            self.moment("timing", &start, v, detail);
        }
    }

    /// Did the commands of the hold acknowledge server messages sent during it? `None`
    /// without client messages (a demo).
    fn acked_during(&self, start: &View, end: &View) -> Option<bool> {
        if !self.saw_sent {
            return None;
        }
        let during: Vec<&Sent> = self
            .sent
            .iter()
            .filter(|s| s.last_cmd > start.command_time && s.last_cmd <= end.command_time)
            .collect();
        // A client that was playing through the hold made commands all along it (a
        // switch holds them, it does not stop them); one whose commands leave a gap of
        // [`HOLD_CMD_GAP_MS`] stopped making them (a hitch of its own, loading, a pause):
        // nothing was held on the way.
        let mut times: Vec<i32> = during.iter().map(|s| s.last_cmd).collect();
        times.push(start.command_time);
        times.push(end.command_time);
        times.sort_unstable();
        if times.windows(2).any(|w| w[1] - w[0] > HOLD_CMD_GAP_MS) {
            return Some(false);
        }
        let mut acks: Vec<i32> = during.iter().map(|s| s.ack).collect();
        // A client that kept receiving acknowledged the server messages of the hold as they
        // came: the middle of its acknowledgements is about the middle of the hold. One that
        // received nothing acknowledged the last message before it (the last one or two of
        // the burst may already see the path recover: the median, not the maximum).
        acks.sort_unstable();
        let median = acks[acks.len() / 2];
        let span = end.message_num - start.message_num;
        Some(median - start.message_num >= (span / 4).max(3))
    }

    /// The answer, at the end of the input. The aim is judged from the commands where the
    /// input has them (what the player's client sent), else from the snapshots' view.
    /// `name` names a slot (for the moments' targets).
    pub(crate) fn finish(
        mut self,
        player: String,
        flow: Option<u32>,
        file: String,
        name: &dyn Fn(i32) -> String,
    ) -> PlayerCheats {
        self.by_command.miss();
        self.by_view.miss();
        for c in [&mut self.clock, &mut self.snap_clock] {
            c.close();
            c.end_run();
        }
        self.msec.close();
        self.msec.end_run();
        let r = self.msec_burst.finish();
        self.msec_burst_end(r);
        let clock = if self.clock.messages > 0 {
            self.clock
        } else {
            self.snap_clock
        };
        let by_msec = self.msec.messages > 0;
        let (aim, from) = if self.by_command.judged > 0 {
            (self.by_command, "commands")
        } else {
            (self.by_view, "snapshots")
        };
        let signals = Signals {
            aim_from: (aim.judged > 0).then_some(from),
            aim_judged: Some(aim.judged),
            aim_locks: Some(aim.locks),
            aim_error_median: median_of(&aim.errors, aim.judged),
            snaps: self.snap_seen.then_some(self.snaps),
            upstream_holds: self.saw_sent.then_some(self.upstream),
            other_holds: self.other,
            clock_from: if by_msec {
                Some("msec")
            } else {
                (clock.messages > 0).then_some(clock.from.word())
            },
            clock_rate: by_msec.then(|| self.msec.rate()).flatten(),
            clock_lead_ms: if by_msec { None } else { clock.median() },
            fast_clock_windows: if by_msec {
                Some(self.msec.fast)
            } else {
                (clock.messages > 0).then_some(clock.fast)
            },
        };
        let aim_score = 100.0 * f64::from(aim.locks) / f64::from(LOCK_LIKELY);
        let timing = 100.0 * f64::from(self.upstream) / f64::from(HOLDS_LIKELY);
        let fast = 100.0 * f64::from(clock.fast.max(self.msec.fast)) / f64::from(FAST_LIKELY);
        let snaps = 100.0 * f64::from(self.snaps) / f64::from(SNAPS_LIKELY);
        let score = aim_score.max(snaps).max(timing).max(fast).min(100.0);
        let verdict = if score >= LIKELY_SCORE {
            Verdict::Likely
        } else if score >= SUSPICIOUS_SCORE {
            Verdict::Suspicious
        } else {
            Verdict::Clean
        };
        let mut moments = self.moments;
        moments.extend(aim.moments);
        moments.extend(clock.moments);
        moments.extend(self.msec.moments);
        // Game time where there is one; a QuakeWorld capture's by capture time.
        moments.sort_by(|a, b| {
            a.game_start
                .cmp(&b.game_start)
                .then(a.start.unwrap_or(0.0).total_cmp(&b.start.unwrap_or(0.0)))
        });
        moments.truncate(MAX_MOMENTS);
        for m in &mut moments {
            m.target = m.target_num.map(name);
        }
        PlayerCheats {
            player,
            flow,
            file,
            verdict,
            score: (score * 10.0).round() / 10.0,
            signals,
            moments,
        }
    }
}

/// Lead bins of [`Clock`]'s histogram: 5 ms each, from −1000 to +1000 ms.
const LEAD_BINS: usize = 401;
/// Leads a window keeps for its median (a client sends at most a few hundred messages in
/// [`CLOCK_WINDOW_MS`]; more are not needed for a median).
const WINDOW_KEPT: usize = 2048;

/// The fast-clock signal: the lead of each client message's last command over the snapshot
/// it acknowledged, judged in windows of [`CLOCK_WINDOW_MS`].
#[derive(Debug, Default)]
struct Clock {
    from: ClockFrom,
    /// The window going on: its first command's time, its leads.
    start: Option<At>,
    last: Option<At>,
    leads: Vec<i32>,
    /// Every lead, for the connection's median.
    hist: Vec<u32>,
    messages: u32,
    fast: u32,
    /// The run of fast windows going on: first, last, windows, highest median.
    run: Option<(At, At, u32, i32)>,
    moments: Vec<Moment>,
}

impl Clock {
    fn add(&mut self, lead: i32, at: At) {
        if let Some(s) = self.start {
            if at.server_time < s.server_time
                || at.server_time.saturating_sub(s.server_time) >= CLOCK_WINDOW_MS
            {
                self.close();
            }
        }
        if self.start.is_none() {
            self.start = Some(at);
        }
        self.last = Some(at);
        if self.leads.len() < WINDOW_KEPT {
            self.leads.push(lead);
        }
        if self.hist.is_empty() {
            self.hist = vec![0; LEAD_BINS];
        }
        self.hist[lead_bin(lead)] += 1;
        self.messages += 1;
    }

    /// Judge the window going on.
    fn close(&mut self) {
        let (Some(start), Some(last)) = (self.start.take(), self.last.take()) else {
            return;
        };
        if self.leads.len() < CLOCK_WINDOW_MIN {
            self.leads.clear();
            return;
        }
        self.leads.sort_unstable();
        let median = self.leads[self.leads.len() / 2];
        self.leads.clear();
        if median <= self.from.threshold() {
            self.end_run();
            return;
        }
        self.fast += 1;
        match &mut self.run {
            Some((_, end, n, top)) => {
                *end = last;
                *n += 1;
                *top = (*top).max(median);
            }
            None => self.run = Some((start, last, 1, median)),
        }
    }

    /// A run of fast windows ended: a moment.
    fn end_run(&mut self) {
        if let Some((a, b, n, top)) = self.run.take() {
            let detail = format!(
                "command clock up to {top} ms ahead of {} in {n} window{} of {} s ({}): a client clock running fast",
                self.from.against(),
                if n == 1 { "" } else { "s" },
                CLOCK_WINDOW_MS / 1000,
                self.from.why()
            );
            push_moment(&mut self.moments, "timing", a, b, detail);
        }
    }

    /// The median lead over every message, to the bin (`None` without any).
    fn median(&self) -> Option<i32> {
        median_bin(&self.hist, self.messages).map(|i| i as i32 * 5 - 1000)
    }
}

/// The fast-clock signal of QuakeWorld: the commands' `msec` against the capture's clock,
/// in windows of [`CLOCK_WINDOW_MS`] of capture time.
#[derive(Debug, Default)]
struct MsecClock {
    /// The window going on: its first message, its last, the msec after its first.
    start: Option<At>,
    last: Option<At>,
    sum: u64,
    count: usize,
    /// The window before, when it was fast: its start, end and rate, and whether it is
    /// counted already.
    prev: Option<(At, At, f64, bool)>,
    /// The judged windows' rates, in steps of 0.005 up to 3 (for their median).
    rates: Vec<u32>,
    windows: u32,
    messages: u32,
    fast: u32,
    run: Option<(At, At, u32, f64)>,
    moments: Vec<Moment>,
}

impl MsecClock {
    fn add(&mut self, time: f64, msec: u32) {
        let at = At {
            time: Some(time),
            server_time: 0,
        };
        if let Some(s) = self.start.and_then(|s| s.time) {
            if time < s || (time - s) * 1000.0 >= f64::from(CLOCK_WINDOW_MS) {
                self.close();
            }
        }
        match self.start {
            None => self.start = Some(at),
            Some(_) => {
                self.sum += u64::from(msec);
                self.count += 1;
            }
        }
        self.last = Some(at);
        self.messages += 1;
    }

    /// Judge the window going on: fast next to a fast one.
    fn close(&mut self) {
        let (Some(start), Some(last)) = (self.start.take(), self.last.take()) else {
            return;
        };
        let span = (last.time.unwrap_or(0.0) - start.time.unwrap_or(0.0)) * 1000.0;
        let (sum, count) = (
            std::mem::take(&mut self.sum),
            std::mem::take(&mut self.count),
        );
        if count < CLOCK_WINDOW_MIN || span <= 0.0 {
            self.prev = None;
            self.end_run();
            return;
        }
        let rate = sum as f64 / span;
        if self.rates.is_empty() {
            self.rates = vec![0; RATE_BINS];
        }
        self.rates[((rate / 0.005).round() as usize).min(RATE_BINS - 1)] += 1;
        self.windows += 1;
        if rate <= FAST_RATE {
            self.prev = None;
            self.end_run();
            return;
        }
        if let Some((a, b, r, counted)) = self.prev.take() {
            if !counted {
                self.fast += 1;
                self.run = Some((a, b, 1, r));
            }
            self.fast += 1;
            if let Some((_, end, n, top)) = &mut self.run {
                *end = last;
                *n += 1;
                *top = top.max(rate);
            }
            self.prev = Some((start, last, rate, true));
        } else {
            self.prev = Some((start, last, rate, false));
        }
    }

    fn end_run(&mut self) {
        if let Some((a, b, n, top)) = self.run.take() {
            let detail = format!(
                "commands' msec ran up to {top:.2}× the capture's clock in {n} windows of {} s (a client's own clock gives 1.00 at most): a client clock running fast",
                CLOCK_WINDOW_MS / 1000
            );
            if self.moments.len() < MAX_MOMENTS {
                self.moments.push(Moment {
                    kind: "timing",
                    start: a.time,
                    end: b.time,
                    game_start: None,
                    game_end: None,
                    detail,
                    target: None,
                    target_num: None,
                });
            }
        }
    }

    /// The median rate of the judged windows (`None` without one).
    fn rate(&self) -> Option<f64> {
        median_bin(&self.rates, self.windows).map(|i| (i as f64 * 5.0).round() / 1000.0)
    }
}

/// [`MsecClock`]'s rate bins: 0.005 each, up to 3.
const RATE_BINS: usize = 601;

/// What a [`Clock`] reads.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum ClockFrom {
    /// Each client message's last command against the snapshot it acknowledged.
    #[default]
    Messages,
    /// Each snapshot's `commandTime` against its own server time.
    Snapshots,
}

impl ClockFrom {
    fn word(self) -> &'static str {
        match self {
            ClockFrom::Messages => "messages",
            ClockFrom::Snapshots => "snapshots",
        }
    }

    fn threshold(self) -> i32 {
        match self {
            ClockFrom::Messages => FAST_LEAD_MS,
            ClockFrom::Snapshots => FAST_SNAPSHOT_LEAD_MS,
        }
    }

    fn against(self) -> &'static str {
        match self {
            ClockFrom::Messages => "the snapshots it acknowledged",
            ClockFrom::Snapshots => "the server time of its snapshots",
        }
    }

    fn why(self) -> &'static str {
        match self {
            ClockFrom::Messages => {
                "an engine's own clock stays behind them; cl_timeNudge moves it at most 30 ms"
            }
            ClockFrom::Snapshots => "a fair client's commands never run past the snapshot",
        }
    }
}

/// [`Clock`]'s histogram bin of a lead (ms), clamped to ±1000.
fn lead_bin(lead: i32) -> usize {
    ((lead.clamp(-1000, 1000) + 1000 + 2) / 5) as usize
}

/// Slot `n`'s name in `names`, or `#N` when it has none.
fn slot_name(names: &[String], n: i32) -> String {
    let name = usize::try_from(n)
        .ok()
        .and_then(|i| names.get(i))
        .map_or("", String::as_str);
    if name.is_empty() {
        format!("#{n}")
    } else {
        name.to_string()
    }
}

fn median_of(hist: &[u32], n: u32) -> Option<f64> {
    median_bin(hist, n).map(|i| i as f64 / 100.0)
}

/// The bin of the median of `n` values counted in `hist` (`None` without any).
fn median_bin(hist: &[u32], n: u32) -> Option<usize> {
    if n == 0 {
        return None;
    }
    let mut seen = 0;
    hist.iter().position(|c| {
        seen += c;
        seen * 2 >= n
    })
}

/// The smallest angle (degrees) between a view of `angles` and the bearing of a player of
/// snapshot `p`, from `p`'s origin with and without view height; with the target.
fn aim_error(angles: [f64; 2], p: &View) -> Option<(f64, i32)> {
    let dir = forward(angles);
    let mut best: Option<(f64, i32)> = None;
    for (num, pos) in &p.targets {
        for h in [0.0, p.view_height] {
            let from = [p.origin[0], p.origin[1], p.origin[2] + h];
            let b = [pos[0] - from[0], pos[1] - from[1], pos[2] - from[2]];
            let len = (b[0] * b[0] + b[1] * b[1] + b[2] * b[2]).sqrt();
            if len < 1.0 {
                continue;
            }
            let cos = (dir[0] * b[0] + dir[1] * b[1] + dir[2] * b[2]) / len;
            let deg = cos.clamp(-1.0, 1.0).acos().to_degrees();
            if best.is_none_or(|(e, _)| deg < e) {
                best = Some((deg, *num));
            }
        }
    }
    best
}

/// The view turned between `a` and `b` (pitch and yaw, degrees) by more than a lock's width.
fn turned(a: [f64; 2], b: [f64; 2]) -> bool {
    turn_deg(a, b) > LOCK_DEG
}

/// The angle (degrees) between the views `a` and `b` (pitch and yaw, degrees).
fn turn_deg(a: [f64; 2], b: [f64; 2]) -> f64 {
    let (fa, fb) = (forward(a), forward(b));
    let cos = fa[0] * fb[0] + fa[1] * fb[1] + fa[2] * fb[2];
    cos.clamp(-1.0, 1.0).acos().to_degrees()
}

/// A command as the snap signal keeps it.
#[derive(Debug, Clone, Copy)]
struct SnapCmd {
    server_time: i32,
    time: Option<f64>,
    angles: [f64; 2],
    fires: bool,
    ack: i32,
}

/// The engine's `AngleVectors` forward vector of pitch and yaw (degrees).
fn forward(angles: [f64; 2]) -> [f64; 3] {
    let (p, y) = (angles[0].to_radians(), angles[1].to_radians());
    [p.cos() * y.cos(), p.cos() * y.sin(), -p.sin()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(t: i32, angles: [f64; 2], target: [f64; 3]) -> View {
        View {
            time: Some(f64::from(t) / 1000.0),
            server_time: t,
            message_num: t / 50,
            command_time: t,
            command_clock: true,
            angles,
            origin: [0.0, 0.0, 0.0],
            view_height: 26.0,
            playing: true,
            targets: vec![(3, target)],
        }
    }

    #[test]
    fn a_view_on_a_bearing_is_a_lock_and_a_near_miss_is_not() {
        // Target straight ahead along +y (yaw 90°), level.
        let t = [0.0, 500.0, 0.0];
        let p = view(0, [0.0, 0.0], t);
        assert!(aim_error([0.0, 90.0], &p).unwrap().0 < 1e-6);
        let off = aim_error([0.0, 90.5], &p).unwrap().0;
        assert!((off - 0.5).abs() < 1e-6, "{off}");
        // Pitch down is positive in the engine: a target below is at positive pitch.
        let below = [500.0, 0.0, -500.0];
        let p = view(0, [0.0, 0.0], below);
        assert!(aim_error([45.0, 0.0], &p).unwrap().0 < 1e-6);
    }

    #[test]
    fn locks_make_the_verdict_and_their_moments() {
        // A target walking along x, the view on its bearing in the snapshot before.
        let mut tr = Track::default();
        let at = |i: i32| [f64::from(i) * 10.0, 500.0, 0.0];
        let yaw = |i: i32| 500f64.atan2(f64::from(i) * 10.0).to_degrees();
        for i in 0..20 {
            tr.view(view(i * 50, [0.0, yaw(i - 1)], at(i)));
        }
        let r = tr.finish("X".into(), Some(1), "f".into(), &|n| format!("#{n}"));
        assert_eq!(r.verdict, Verdict::Likely);
        assert_eq!(r.signals.aim_locks, Some(19));
        assert_eq!(r.moments.len(), 1);
        assert_eq!(
            (r.moments[0].game_start, r.moments[0].game_end),
            (Some(50), Some(950))
        );
        // The same view a degree or two off: no lock.
        let mut tr = Track::default();
        for i in 0..20 {
            tr.view(view(
                i * 50,
                [0.0, yaw(i - 1) + 1.0 + f64::from(i % 2)],
                at(i),
            ));
        }
        assert_eq!(
            tr.finish("Y".into(), None, "f".into(), &|n| format!("#{n}"))
                .verdict,
            Verdict::Clean
        );
    }

    /// A target 20° to the right of a still view: the commands (16 ms apart, all fired)
    /// turn `steps` degrees each, in order; the snaps they make.
    fn snaps_of(steps: &[f64]) -> u32 {
        let mut tr = Track::default();
        let target = [
            500.0 * 20f64.to_radians().cos(),
            500.0 * 20f64.to_radians().sin(),
            0.0,
        ];
        tr.view(view(0, [0.0, 0.0], target));
        let mut yaw = 0.0;
        tr.command([0.0, yaw], true, 0, None, 0);
        for (i, d) in steps.iter().enumerate() {
            yaw += d;
            tr.command([0.0, yaw], true, 0, None, 16 * (i as i32 + 1));
        }
        tr.command([0.0, yaw], true, 0, None, 16 * (steps.len() as i32 + 1));
        tr.finish("S".into(), Some(1), "f".into(), &|n| format!("#{n}"))
            .signals
            .snaps
            .unwrap()
    }

    #[test]
    fn a_jump_onto_a_target_in_one_command_is_a_snap_and_a_flick_is_not() {
        // 14° of the 20° in one command, still before and after: a snap.
        assert_eq!(snaps_of(&[0.1, 0.1, 14.0, 0.1, 0.1]), 1);
        // The same 14° as a hand's flick, over five commands: none.
        assert_eq!(snaps_of(&[0.1, 1.5, 3.5, 4.5, 3.0, 1.5, 0.1]), 0);
        // A jump away from the target: none.
        assert_eq!(snaps_of(&[0.1, 0.1, -14.0, 0.1, 0.1]), 0);
        // Too small to tell from a hand's frame: none.
        assert_eq!(snaps_of(&[0.1, 0.1, 4.0, 0.1, 0.1]), 0);
    }

    #[test]
    fn a_hold_is_upstream_only_when_its_commands_acknowledge_the_server() {
        let run = |ack_moves: bool| {
            let mut tr = Track::default();
            let far = [9000.0, 0.0, 0.0];
            for i in 0..100 {
                let t = i * 50;
                let mut v = view(t, [0.0, 90.0], far);
                // The clock stands from 1000 to 3000 ms, then catches up.
                if (1000..3000).contains(&t) {
                    v.command_time = 1000;
                }
                tr.sent(Sent {
                    time: None,
                    last_cmd: t,
                    ack: if ack_moves || !(1000..3000).contains(&t) {
                        t / 50
                    } else {
                        20
                    },
                });
                tr.view(v);
            }
            tr.finish("Z".into(), Some(1), "f".into(), &|n| format!("#{n}"))
        };
        let switch = run(true);
        assert_eq!(switch.signals.upstream_holds, Some(1));
        assert_eq!(switch.verdict, Verdict::Suspicious);
        assert_eq!(switch.moments.len(), 1);
        let path = run(false);
        assert_eq!(path.signals.upstream_holds, Some(0));
        assert_eq!(path.signals.other_holds, 1);
        assert_eq!(path.verdict, Verdict::Clean);
    }
}
