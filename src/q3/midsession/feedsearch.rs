//! Mid-session protocol 68: the usercmd key's gamestate part, recovered from the snapshots.
//!
//! The usercmd key (`MSG_WriteDeltaUsercmdKey`, ioq3 `CL_WritePacket`) is
//! `checksumFeed ^ serverMessageSequence ^ MSG_HashKey(acknowledged server command, 32)`,
//! XORed with each command's serverTime and masked to the field's width (angles and buttons
//! 16 bits, moves and weapon 8). A capture that starts after the gamestate misses
//! `checksumFeed`, but only its low 16 bits ever matter (`F` here), and the server's
//! snapshots echo the commands: the playerstate of a snapshot whose `commandTime` is a
//! command's serverTime has `viewangles[i] = SHORT2ANGLE((short)(cmd.angles[i] +
//! delta_angles[i]))` (`PM_UpdateViewAngles`; pitch clamped to ±16000) and, nearly always,
//! the command's weapon. A command read with `F = 0` gives `true ^ F` for every keyed value
//! (the others are known), so each candidate `F` predicts the snapshots; the one `F` that
//! makes them agree is the key's part:
//!
//! * a view angle with `delta_angles` known gives `F` outright;
//! * with `delta_angles` unknown (not sent since the capture started) it is constant between
//!   respawns, so consecutive echoes of the same angle must give the same difference;
//! * the playerstate's weapon gives the low byte;
//! * ioq3 sets button bits 0..14 only (`CL_CmdButtons`), and real clients none past 11, so
//!   a keyed buttons value bounds the high bits (the one bit the differences above cannot
//!   see is bit 15).
//!
//! Every candidate is scored against a bounded window of the latest echoes; a candidate is
//! taken only when it alone explains nearly all of them, and then only once the echoes that
//! came after it was found agree with it too. A candidate is verified, and a search that
//! the weapon echoes narrow to 256 candidates is tried, at the first echo that brings enough
//! evidence; a scan of all 65536 only every few echoes, a bounded number of times. The
//! search runs only while the key is unknown (mid-session, before a gamestate, with
//! usercmds being decoded) and gives up after a bounded number of tries.
//!
//! The acknowledged server command's hash is part of the key too. While the client
//! acknowledges a command the capture did not show (its text unknown, hashed as some
//! placeholder `hash`), the unknown is `(checksumFeed ^ HashKey(text) ^ hash) & 0xffff`,
//! constant for as long as it acknowledges that command: one *period* ([`Epoch`]), searched
//! for with the same echoes. A new period starts the search again (what was gathered for the
//! last one is dropped; only a found checksumFeed part carries over, to every period whose
//! command is known). A command whose text the client-message search found whole
//! ([`super::relock::ClientRelock::text_hash`]) counts as known: its hash is exact (the key
//! string reads `%` and bytes above 127 as `.`, as `MSG_HashKey` does), so its period needs
//! no search of its own once the checksumFeed part is found, and feeds that search.
//!
//! Values are filled in from the message the part is found on: the messages before it are
//! already handed out (decoding streams in capture order), so they keep their nulls.

use std::collections::VecDeque;

use crate::q3::delta::{PlayerState, PsKnown};
use crate::q3::fields::PS_PM_TYPE;
use crate::q3::usercmd::{UserCmd, UNKNOWN_ANGLE, UNKNOWN_BUTTONS, UNKNOWN_WEAPON};

/// Playerstate field indices ([`crate::q3::fields::PLAYER_FIELDS`]; checked by a test).
const PS_COMMAND_TIME: usize = 0;
const PS_VIEWANGLES: [usize; 2] = [7, 6];
const PS_DELTA_ANGLES: [usize; 2] = [35, 26];
const PS_WEAPON: usize = 41;

/// The keyed values the search reads: pitch, yaw, buttons, weapon.
const KEYED: u8 = (UNKNOWN_ANGLE * 3) | UNKNOWN_BUTTONS | UNKNOWN_WEAPON;

/// Commands kept (those with keyed values), and snapshot echoes.
const MAX_CMDS: usize = 256;
const MAX_SNAPS: usize = 64;
/// A counted try every this many new echoes (between them, uncounted ones that verify a
/// candidate or scan only the 256 a weapon majority leaves, as soon as the evidence is
/// enough); at most this many counted tries per connection, of which this many scan all
/// 65536 candidates (the others, the 256 a weapon echo leaves).
const TRY_EVERY: usize = 8;
const MAX_TRIES: u32 = 2048;
const MAX_FULL_SCANS: u32 = 32;
/// A candidate needs at least this much evidence, this share of it, and this lead.
const MIN_SCORE: i32 = 16;

/// One command read with `F = 0`.
#[derive(Clone, Copy)]
struct Cmd {
    time: i32,
    cmd: UserCmd,
}

/// One snapshot's echo of the command executed last.
#[derive(Clone, Copy)]
struct Echo {
    command_time: i32,
    /// Pitch and yaw as shorts, when known and not clamped.
    view: [Option<u16>; 2],
    delta: [Option<u16>; 2],
    weapon: Option<u8>,
}

/// The evidence a candidate is scored on, built from the echoes and the commands.
#[derive(Default)]
struct Evidence {
    /// (x, v, D): `((x ^ F) + D) & 0xffff == v`.
    absolute: Vec<(u16, u16, u16)>,
    /// Echoes of the same angle a few echoes apart, delta unknown (constant between
    /// respawns): `v1 - (x1 ^ F) == v2 - (x2 ^ F)`.
    pairs: Vec<(u16, u16, u16, u16)>,
    /// (x, w): `(x ^ F) & 0xff == w`.
    weapons: Vec<(u8, u8)>,
    /// Keyed buttons values read with `F = 0`.
    buttons: Vec<u16>,
}

/// A candidate's score: from the echoes (angles, weapon), and from the buttons.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Score {
    echoes: i32,
    buttons: i32,
}

impl Evidence {
    /// Score of candidate `f`. The echoes count 2 for an absolute angle, 1 for a pair or a
    /// weapon. Buttons: a value with bit 15 set (ioq3 never sets it) costs 4, one with
    /// bits 12..14 (unbound `+button12..14`) 2; one with a clear high byte gains 1.
    #[inline]
    fn score(&self, f: u16) -> Score {
        let mut s = 0i32;
        for &(x, v, d) in &self.absolute {
            s += 2 * i32::from((x ^ f).wrapping_add(d) == v);
        }
        for &(x1, v1, x2, v2) in &self.pairs {
            s += i32::from(v1.wrapping_sub(x1 ^ f) == v2.wrapping_sub(x2 ^ f));
        }
        let fl = f as u8;
        for &(x, w) in &self.weapons {
            s += i32::from(x ^ fl == w);
        }
        let mut b = 0i32;
        for &x in &self.buttons {
            let t = x ^ f;
            b += i32::from(t & 0xff00 == 0)
                - 4 * i32::from(t & 0x8000 != 0)
                - 2 * i32::from(t & 0x7000 != 0);
        }
        Score {
            echoes: s,
            buttons: b,
        }
    }

    fn max_echoes(&self) -> i32 {
        (2 * self.absolute.len() + self.pairs.len() + self.weapons.len()) as i32
    }

    /// The low byte when the weapon echoes agree on it: at least 16, all but 1 in 20.
    fn weapon_consensus(&self) -> Option<u8> {
        let (top, n) = self.weapon_vote();
        (n >= 16 && n * 20 >= self.weapons.len() * 19).then_some(top)
    }

    /// The low byte most weapon echoes give, and how many give it.
    fn weapon_vote(&self) -> (u8, usize) {
        let mut votes = [0u32; 256];
        for &(x, w) in &self.weapons {
            votes[usize::from(x ^ w)] += 1;
        }
        votes
            .iter()
            .enumerate()
            .max_by_key(|(_, n)| **n)
            .map_or((0, 0), |(i, n)| (i as u8, *n as usize))
    }

    /// The low bytes worth scanning: the weapon echoes' clear majority, else all.
    fn low_bytes(&self) -> Vec<u8> {
        let (top, n) = self.weapon_vote();
        if n >= 8 && n * 10 >= self.weapons.len() * 9 {
            vec![top]
        } else {
            (0..=255).collect()
        }
    }

    /// The best candidate when it is clear: it explains nearly all the echoes, and it is
    /// well ahead of every other candidate (on the echoes, else on the buttons).
    fn best(&self, full_scans: &mut u32) -> Option<u16> {
        let max = self.max_echoes();
        if max < MIN_SCORE {
            return None;
        }
        let lows = self.low_bytes();
        if lows.len() > 1 {
            // All 65536 candidates: a bounded number of times per connection.
            if *full_scans >= MAX_FULL_SCANS {
                return None;
            }
            *full_scans += 1;
        }
        let (mut best, mut best_f, mut second) = ((i32::MIN, i32::MIN), 0u16, (i32::MIN, i32::MIN));
        for lo in lows {
            for hi in 0..=255u16 {
                let f = hi << 8 | u16::from(lo);
                let s = self.score(f);
                let s = (s.echoes, s.buttons);
                if s > best {
                    second = best;
                    best = s;
                    best_f = f;
                } else if s > second {
                    second = s;
                }
            }
        }
        let margin = (max / 8).max(4);
        let echoes_clear = best.0 * 10 >= max * 9;
        let ahead = best.0 - second.0 >= margin || (best.0 == second.0 && best.1 - second.1 >= 4);
        (echoes_clear && ahead).then_some(best_f)
    }
}

/// The search of one connection (see the module documentation).
#[derive(Default)]
pub struct FeedSearch {
    cmds: VecDeque<Cmd>,
    echoes: VecDeque<Echo>,
    new_echoes: usize,
    tries: u32,
    full_scans: u32,
    /// A candidate waiting for the echoes after it to agree.
    candidate: Option<(u16, usize)>,
    /// Echoes received since the candidate was found (the verification's window).
    since_candidate: usize,
    found: Option<u16>,
    low: Option<u8>,
    /// What the search is for: `None`, the checksumFeed part (the acknowledged server
    /// command known); `Some((seq, hash))`, the key's part while the client acknowledges
    /// server command `seq` whose text the capture did not show (hashed as `hash` in its
    /// place): `(checksumFeed ^ HashKey(text) ^ hash) & 0xffff`, constant while it does.
    epoch: Option<(i32, i32)>,
    /// The checksumFeed part, once found (it holds for every later known command).
    feed: Option<u16>,
    /// The last snapshot's ammo and which of it is known: a weapon whose ammo went down
    /// was fired, so it is the weapon (echoes the weapon when the playerstate's own weapon
    /// was not sent since the capture started).
    ammo: Option<([i32; 16], u16)>,
}

/// See `FeedSearch::epoch`.
pub type Epoch = Option<(i32, i32)>;

impl std::fmt::Debug for FeedSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FeedSearch")
            .field("tries", &self.tries)
            .field("found", &self.found)
            .finish()
    }
}

impl FeedSearch {
    /// The low 16 bits of checksumFeed, once found.
    pub fn found(&self) -> Option<u16> {
        self.feed.or(self.found.filter(|_| self.epoch.is_none()))
    }

    /// For a message of `epoch`: the key's unknown part (low 16 bits) when found, and its
    /// low byte, all the 8-bit values (moves, weapon) depend on, from the whole part or
    /// from a clear consensus of the weapon echoes.
    pub fn part(&self, epoch: Epoch) -> (Option<u16>, Option<u8>) {
        if let (None, Some(f)) = (epoch, self.feed) {
            return (Some(f), Some(f as u8));
        }
        if epoch != self.epoch {
            return (None, None);
        }
        (self.found, self.found.map(|f| f as u8).or(self.low))
    }

    /// Still looking: tries left.
    pub fn active(&self) -> bool {
        self.tries < MAX_TRIES
    }

    /// Search for `epoch` from here (what was gathered for another is dropped).
    fn start(&mut self, epoch: Epoch) {
        self.cmds.clear();
        self.echoes.clear();
        self.new_echoes = 0;
        self.candidate = None;
        self.since_candidate = 0;
        self.found = None;
        self.low = None;
        self.epoch = epoch;
        self.ammo = None;
    }

    /// Commands of a move read with `F = used` (their `unknown` bits mark the keyed
    /// values).
    pub fn offer_cmds(&mut self, epoch: Epoch, cmds: &[UserCmd], used: u16) {
        if !self.active() || (epoch.is_none() && self.feed.is_some()) {
            return;
        }
        if epoch != self.epoch {
            self.start(epoch);
        }
        if self.found.is_some() {
            return;
        }
        for c in cmds {
            if c.unknown & (KEYED) == 0 {
                continue;
            }
            // A command is sent in a few packets in a row: keep it once.
            if self
                .cmds
                .iter()
                .rev()
                .take(64)
                .any(|k| k.time == c.server_time)
            {
                continue;
            }
            if self.cmds.len() == MAX_CMDS {
                self.cmds.pop_front();
            }
            // As read with F = 0.
            let mut cmd = *c;
            for i in 0..3 {
                if cmd.unknown & (UNKNOWN_ANGLE << i) != 0 {
                    cmd.angles[i] ^= i32::from(used);
                }
            }
            if cmd.unknown & UNKNOWN_BUTTONS != 0 {
                cmd.buttons ^= i32::from(used);
            }
            if cmd.unknown & UNKNOWN_WEAPON != 0 {
                cmd.weapon ^= used as u8;
            }
            self.cmds.push_back(Cmd {
                time: c.server_time,
                cmd,
            });
        }
    }

    /// A valid snapshot's playerstate; tries the search (see `TRY_EVERY`). True when the
    /// key part was found by this call.
    pub fn offer_snapshot(&mut self, ps: &PlayerState, known: &PsKnown) -> bool {
        if !self.active() || self.found.is_some() {
            return false;
        }
        let k = |i: usize| known.fields & (1u64 << i) != 0;
        if !k(PS_COMMAND_TIME) {
            return false;
        }
        // Dead, frozen or at the intermission: the view does not follow the commands.
        if k(PS_PM_TYPE) && !(0..=2).contains(&ps.fields[PS_PM_TYPE]) {
            self.ammo = None;
            return false;
        }
        // The weapon fired since the last snapshot: the one whose ammo alone went down.
        let ammo_known = known.arrays[2];
        let fired = self.ammo.and_then(|(before, was_known)| {
            let mut down = (0..16).filter(|&i| {
                let both = ammo_known & was_known & (1 << i) != 0;
                both && (1..=5).contains(&before[i].wrapping_sub(ps.ammo[i]))
            });
            match (down.next(), down.next()) {
                (Some(w), None) => Some(w as u8),
                _ => None,
            }
        });
        self.ammo = Some((ps.ammo, ammo_known));
        let mut e = Echo {
            command_time: ps.fields[PS_COMMAND_TIME],
            view: [None; 2],
            delta: [None; 2],
            weapon: k(PS_WEAPON).then_some(ps.fields[PS_WEAPON] as u8).or(fired),
        };
        for i in 0..2 {
            if k(PS_VIEWANGLES[i]) {
                let a = f64::from(f32::from_bits(ps.fields[PS_VIEWANGLES[i]] as u32));
                let v = (a * 65536.0 / 360.0).round();
                // SHORT2ANGLE of a short is exact; anything else is not an echo.
                if v.is_finite() && v.abs() <= 32768.0 && v * 360.0 / 65536.0 == a {
                    let v = (v as i64 & 0xffff) as u16;
                    // A clamped pitch says nothing of the command.
                    if !(i == 0 && (v == 16000 || v == (-16000i32 as u16))) {
                        e.view[i] = Some(v);
                    }
                }
            }
            if k(PS_DELTA_ANGLES[i]) {
                e.delta[i] = Some(ps.fields[PS_DELTA_ANGLES[i]] as u16);
            }
        }
        if e.view == [None; 2] && e.weapon.is_none() {
            return false;
        }
        if self
            .echoes
            .back()
            .is_some_and(|b| b.command_time == e.command_time)
        {
            return false;
        }
        if self.echoes.len() == MAX_SNAPS {
            self.echoes.pop_front();
        }
        self.echoes.push_back(e);
        self.new_echoes += 1;
        self.since_candidate += 1;
        // Every few echoes a try that may scan all the candidates (they count against the
        // tries); between them a cheap one, as soon as the evidence is enough.
        let due = self.new_echoes >= TRY_EVERY;
        if due {
            self.new_echoes = 0;
            self.tries += 1;
        }
        self.try_now(due)
    }

    /// The evidence of the last `n` echoes.
    fn evidence(&self, n: usize) -> Evidence {
        let mut ev = Evidence::default();
        // The angle echoes of each angle, in order; pairs are taken a few echoes apart (the
        // farther, the more bits a difference tells).
        let mut seen: [Vec<(u16, u16)>; 2] = [Vec::new(), Vec::new()];
        let skip = self.echoes.len().saturating_sub(n);
        for e in self.echoes.iter().skip(skip) {
            let Some(c) = self.cmds.iter().rev().find(|c| c.time == e.command_time) else {
                continue;
            };
            let c = c.cmd;
            for (i, seen) in seen.iter_mut().enumerate() {
                let keyed = c.unknown & (UNKNOWN_ANGLE << i) != 0;
                let (Some(v), true) = (e.view[i], keyed) else {
                    continue;
                };
                let x = c.angles[i] as u16;
                if let Some(d) = e.delta[i] {
                    ev.absolute.push((x, v, d));
                }
                for lag in [1, 8] {
                    if let Some(&(x0, v0)) = seen.len().checked_sub(lag).and_then(|j| seen.get(j)) {
                        ev.pairs.push((x0, v0, x, v));
                    }
                }
                seen.push((x, v));
            }
            if let (Some(w), true) = (e.weapon, c.unknown & UNKNOWN_WEAPON != 0) {
                ev.weapons.push((c.weapon, w));
            }
        }
        ev.buttons = self
            .cmds
            .iter()
            .rev()
            .filter(|c| c.cmd.unknown & UNKNOWN_BUTTONS != 0)
            .take(MAX_SNAPS)
            .map(|c| c.cmd.buttons as u16)
            .collect();
        ev
    }

    /// Verify the candidate, or look for one; `due`: a counted try, which may scan all the
    /// candidates (otherwise only the 256 a weapon majority leaves).
    fn try_now(&mut self, due: bool) -> bool {
        if let Some((f, _)) = self.candidate {
            // Verify on the echoes that came after the candidate was found.
            let ev = self.evidence(self.since_candidate);
            let max = ev.max_echoes();
            if max >= MIN_SCORE / 2 {
                if ev.score(f).echoes * 10 >= max * 9 {
                    self.found = Some(f);
                    if self.epoch.is_none() {
                        self.feed = Some(f);
                    }
                    return true;
                }
                self.candidate = None;
            }
        }
        if self.candidate.is_none() {
            let ev = self.evidence(MAX_SNAPS);
            if self.low.is_none() {
                self.low = ev.weapon_consensus();
            }
            if !due && (ev.max_echoes() < MIN_SCORE || ev.low_bytes().len() > 1) {
                return false;
            }
            if let Some(f) = ev.best(&mut self.full_scans) {
                self.candidate = Some((f, self.echoes.len()));
                self.since_candidate = 0;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::q3::fields::PLAYER_FIELDS;

    #[test]
    fn field_indices_match_the_table() {
        let name = |i: usize| PLAYER_FIELDS[i].name;
        assert_eq!(name(PS_COMMAND_TIME), "commandTime");
        assert_eq!(name(PS_VIEWANGLES[0]), "viewangles[0]");
        assert_eq!(name(PS_VIEWANGLES[1]), "viewangles[1]");
        assert_eq!(name(PS_DELTA_ANGLES[0]), "delta_angles[0]");
        assert_eq!(name(PS_DELTA_ANGLES[1]), "delta_angles[1]");
        assert_eq!(name(PS_PM_TYPE), "pm_type");
        assert_eq!(name(PS_WEAPON), "weapon");
    }

    /// A player turning and firing: the search finds `F` from echoes without delta_angles
    /// (bit 15 from the buttons), and never from echoes that contradict each other.
    #[test]
    fn finds_the_key_part_from_echoes() {
        let f: u16 = 0xb3c5;
        let d: [u16; 2] = [1200, 40000];
        let mut s = FeedSearch::default();
        let mut found = None;
        for t in 0..400i32 {
            let time = 1000 + t * 16;
            let yaw = (t * 97 + (t * t) % 313) as u16;
            let pitch = ((t * 37) % 3000) as u16;
            let buttons = u16::from(t % 7 == 0);
            let cmd = UserCmd {
                server_time: time,
                angles: [i32::from(pitch ^ f), i32::from(yaw ^ f), 0],
                buttons: i32::from(buttons ^ f),
                weapon: 5 ^ f as u8,
                unknown: KEYED,
                ..UserCmd::default()
            };
            s.offer_cmds(None, &[cmd], 0);
            let mut ps = PlayerState::default();
            ps.fields[PS_COMMAND_TIME] = time;
            for (i, a) in [pitch, yaw].into_iter().enumerate() {
                let v = a.wrapping_add(d[i]) as i16;
                ps.fields[PS_VIEWANGLES[i]] = (f32::from(v) * (360.0 / 65536.0)).to_bits() as i32;
            }
            ps.fields[PS_WEAPON] = 5;
            let known = PsKnown {
                fields: 1 | 1 << PS_VIEWANGLES[0] | 1 << PS_VIEWANGLES[1] | 1 << PS_WEAPON,
                arrays: [0; 4],
            };
            if s.offer_snapshot(&ps, &known) {
                found = s.found();
                break;
            }
        }
        assert_eq!(found, Some(f));

        // Random echoes: nothing is taken.
        let mut s = FeedSearch::default();
        let mut x = 12345u32;
        let mut rnd = || {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (x >> 8) as u16
        };
        for t in 0..2000i32 {
            let cmd = UserCmd {
                server_time: t,
                angles: [i32::from(rnd()), i32::from(rnd()), 0],
                buttons: i32::from(rnd()),
                weapon: rnd() as u8,
                unknown: KEYED,
                ..UserCmd::default()
            };
            s.offer_cmds(None, &[cmd], 0);
            let mut ps = PlayerState::default();
            ps.fields[PS_COMMAND_TIME] = t;
            ps.fields[PS_VIEWANGLES[1]] =
                (f32::from(rnd() as i16) * (360.0 / 65536.0)).to_bits() as i32;
            ps.fields[PS_WEAPON] = i32::from(rnd() as u8 & 15);
            let known = PsKnown {
                fields: 1 | 1 << PS_VIEWANGLES[1] | 1 << PS_WEAPON,
                arrays: [0; 4],
            };
            assert!(!s.offer_snapshot(&ps, &known));
        }
        assert!(s.found().is_none());
    }
}
