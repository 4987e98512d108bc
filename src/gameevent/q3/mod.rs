//! Game events read from one Quake 3 connection's decoded messages (or one demo file): player
//! configstrings (joins, leaves, renames, teams), chat server commands and the client's own
//! chat commands, obituary event entities in snapshots (kills), `scores` during the
//! intermission, and the level/warmup/intermission configstrings (match flow). The extractor
//! only reads decoded state; it never decodes bytes itself.
use std::collections::VecDeque;

use crate::error::{Error, ErrorKind};
use crate::gameevent::names::LearnedName;
use crate::gameevent::{
    Chat, Detail, GameEvent, Kill, Kind, MapChange, MatchFlow, Player, Score, Scoreline,
};
use crate::q3::clc::ClientOp;
use crate::q3::color::plain;
use crate::q3::command::{first_arg, split_command, tokenize};
use crate::q3::delta::EntityState;
use crate::q3::fields::{ENTITYNUM_WORLD, PS_CLIENT_NUM, PS_PM_TYPE};
use crate::q3::gamemod::{info_value, GameMod, ET_EVENTS, EV_EVENT_BITS};
use crate::q3::message::Message;
use crate::q3::protocol::{CsLayout, Protocol};
use crate::q3::state::SnapFrame;
use crate::q3::svc::{Gamestate, ServerOp};
use flags::Flags;

pub mod flags;
pub mod scores;

const CS_SERVERINFO: usize = 0;
const CS_SYSTEMINFO: usize = 1;
const MAX_CLIENTS: usize = 64;
const MAX_CONFIGSTRINGS: usize = 1024;
/// Configstrings below this are kept (server and system info up to Quake 3's CTF flag
/// status, with every game's warmup, level start and intermission).
const LOW_KEPT: usize = 24;

/// The configstrings game events read: the low ones (server and system info, warmup, level
/// start, intermission, flag status) and the player slots. The others (models, sounds,
/// items, a mod's own) are never looked at, so they are not kept: a connection's extractor
/// held all 1,024 (24 KB, plus its gamestate's text, for every connection of a capture
/// until the end of the input).
#[derive(Debug, Clone)]
struct Watched {
    /// Where the game keeps them.
    at: CsLayout,
    /// `LOW_KEPT` low ones, the flag status (where it is above them), the round status,
    /// the first and second place's names, then `MAX_CLIENTS` player slots.
    kept: Vec<String>,
}

/// Where in [`Watched::kept`] the flag status is when it is not among the low ones.
const FLAG_KEPT: usize = LOW_KEPT;
/// Where in [`Watched::kept`] the round status is (Quake Live).
const ROUND_KEPT: usize = LOW_KEPT + 1;
/// Where in [`Watched::kept`] the first and second place's names are (Quake Live).
const PLACES_KEPT: usize = LOW_KEPT + 2;
/// Where in [`Watched::kept`] the player slots start.
const PLAYERS_KEPT: usize = LOW_KEPT + 4;

impl Watched {
    fn new() -> Self {
        Watched {
            at: Protocol::q3().cs,
            kept: vec![String::new(); PLAYERS_KEPT + MAX_CLIENTS],
        }
    }

    /// Where configstring `i` is kept, if it is.
    fn slot(&self, i: usize) -> Option<usize> {
        let players = self.at.players;
        if i < LOW_KEPT {
            Some(i)
        } else if i == self.at.flag_status {
            Some(FLAG_KEPT)
        } else if Some(i) == self.at.round {
            Some(ROUND_KEPT)
        } else if let Some(p) = self.at.places.and_then(|p| p.iter().position(|&c| c == i)) {
            Some(PLACES_KEPT + p)
        } else if (players..players + MAX_CLIENTS).contains(&i) {
            Some(PLAYERS_KEPT + i - players)
        } else {
            None
        }
    }

    /// The player slot configstring `i` is, if it is one.
    fn player_slot(&self, i: usize) -> Option<usize> {
        let players = self.at.players;
        (players..players + MAX_CLIENTS)
            .contains(&i)
            .then(|| i - players)
    }

    /// Configstring `i` ("" when unset or not kept).
    fn get(&self, i: usize) -> &str {
        self.slot(i).map_or("", |k| self.kept[k].as_str())
    }

    fn set(&mut self, i: usize, value: &str) {
        if let Some(k) = self.slot(i) {
            self.kept[k].clear();
            self.kept[k].push_str(value);
        }
    }

    /// The player slots' configstrings, by client number.
    fn players(&self) -> &[String] {
        &self.kept[PLAYERS_KEPT..]
    }

    /// Player slot `n`'s configstring (`n` < `MAX_CLIENTS`).
    fn player(&self, n: usize) -> &str {
        &self.kept[PLAYERS_KEPT + n]
    }

    fn clear(&mut self) {
        self.kept.iter_mut().for_each(String::clear);
    }
}

/// Entity field indices (the order of `fields::ENTITY_FIELDS`; checked by a test).
const F_ETYPE: usize = crate::q3::fields::ENTITY_ETYPE;
const F_EVENT_PARM: usize = 13;
const F_OTHER: usize = 18;
const F_OTHER2: usize = 30;

/// One obituary as the entity carried it: victim, attacker, means of death.
type Obituary = (i32, i32, i32);

/// `pm_type` of a dead player (`PM_DEAD`).
const PM_DEAD: i32 = 3;
/// The client's own chat lines kept to recognise the server's echo, and how long.
const MAX_SAID: usize = 8;
const ECHO_S: f64 = 5.0;
/// Names learned per connection (a slot's occupants over a session: a few per slot).
const MAX_LEARNED: usize = 256;
/// The disconnect notices of one message kept (`SV_DropClient`'s reasons).
const MAX_PRINTS: usize = 16;
const LEAVE_REASONS: [&str; 3] = [" disconnected", " timed out", " was kicked"];

/// Events kept waiting for the first snapshot's game time (a gamestate's players, chat during
/// a download): a real session has a few dozen.
const MAX_UNTIMED: usize = 4096;

/// Events of one connection (or demo file), built message by message.
pub struct Extractor {
    demo: bool,
    cs: Watched,
    /// A big configstring being assembled (`bcs0`/`bcs1`/`bcs2`).
    big: Option<(usize, String)>,
    gamemod: GameMod,
    have_gamestate: bool,
    client_num: Option<i32>,
    /// The name each slot had when its player left (until another joins in it).
    departed: Vec<Option<String>>,
    server_time: Option<i32>,
    /// Obituary entities of the previous snapshot: an event entity stays in consecutive
    /// snapshots for a while but happened once (the client fires it when it first appears).
    prev_obits: Vec<(i32, Obituary)>,
    final_scores_sent: bool,
    /// The protocol of the latest gamestate.
    protocol: u32,
    /// The scoreline last handed out, and whether this message changed its configstrings.
    scoreline: Option<Box<Scoreline>>,
    scores_touched: bool,
    last_print: String,
    /// CTF flags: this message's flag prints and status changes, each flag's carrier.
    flags: Flags,
    /// Events of the current message, timed once its snapshot (if any) is known.
    /// (kind, detail, server time of its own, read from the client's command)
    pending: Vec<(Kind, Detail, Option<i32>, bool)>,
    /// Of `pending`, those without a server time of their own (all but kills).
    untimed: usize,
    /// Capture time of the latest message.
    last_time: f64,
    /// Problems found (malformed event or configstring, unknown mod), with their position.
    pub warnings: crate::gameevent::Warnings,
    warned_mod: bool,
    /// Mid-session naming ([`crate::gameevent::names`]): what tells who is who without the
    /// gamestate's player configstrings.
    names: Box<Naming>,
}

/// What a connection that started mid-session learns of names: its own player's (his chat
/// coming back from the server, his number from the playerstate or his own death), and
/// other slots' from their configstring changes and the notices that come with them.
#[derive(Default)]
struct Naming {
    /// Player slots whose configstring this extractor has seen (a gamestate sets them all).
    seen: u64,
    /// This message's notices (plain text).
    prints: Vec<String>,
    /// Player slots whose configstring this message changed from a value never seen, with
    /// the new value's name (None: cleared).
    changed: Vec<(usize, Option<String>)>,
    /// The client's own chat lines (plain text), with their time.
    said: VecDeque<(f64, String)>,
    own_name: Option<String>,
    /// Two different names came back for the client's own lines: his name stays unknown.
    own_clash: bool,
    /// `pm_type` of the latest snapshot that knew it.
    pm_type: Option<i32>,
    first_time: Option<f64>,
    learned: Vec<LearnedName>,
}

impl Extractor {
    /// `demo`: the input is a demo file (times come from the server clock).
    pub fn new(demo: bool) -> Self {
        Extractor {
            demo,
            cs: Watched::new(),
            big: None,
            gamemod: GameMod::BaseQ3,
            have_gamestate: false,
            client_num: None,
            departed: vec![None; MAX_CLIENTS],
            server_time: None,
            prev_obits: Vec::new(),
            final_scores_sent: false,
            protocol: 68,
            scoreline: None,
            scores_touched: false,
            last_print: String::new(),
            flags: Flags::default(),
            pending: Vec::new(),
            untimed: 0,
            last_time: 0.0,
            warnings: Default::default(),
            warned_mod: false,
            names: Box::default(),
        }
    }

    /// The names this connection learned after the events that needed them: each slot
    /// whose name a later change told, and its own player for as long as it lasted.
    pub(crate) fn take_learned_names(&mut self) -> Vec<LearnedName> {
        let mut out = std::mem::take(&mut self.names.learned);
        if let (Some(num), Some(name), Some(from)) = (
            self.client_num,
            self.names.own_name.clone(),
            self.names.first_time,
        ) {
            out.push(LearnedName {
                num,
                name,
                from,
                to: self.last_time,
            });
        }
        out
    }

    /// The input is a demo file.
    pub fn is_demo(&self) -> bool {
        self.demo
    }

    /// The game events of one decoded message, appended to `out`.
    pub fn message(&mut self, m: &Message, out: &mut Vec<GameEvent>) {
        let mut snap_time = None;
        if !self.demo {
            self.names.first_time.get_or_insert(m.time);
        }
        if let Some(s) = m.server() {
            self.names.prints.clear();
            for op in &s.ops {
                match op {
                    ServerOp::Gamestate(g) => self.gamestate(g, m),
                    ServerOp::ServerCommand { text, new, .. } if *new => {
                        self.server_command(text, m)
                    }
                    ServerOp::Snapshot(sn) if sn.valid => {
                        snap_time = Some(sn.server_time);
                        self.snapshot(&sn.frame, m);
                    }
                    _ => {}
                }
            }
            // A snapshot without obituary entities comes as its head only (`Detail::Events`).
            if let Some(h) = s.snapshot_head.filter(|h| h.valid) {
                snap_time = Some(h.server_time);
                self.prev_obits.clear();
            }
            if !self.names.changed.is_empty() {
                self.slots_learned(m.time);
            }
        } else if let Some(c) = m.client() {
            for op in &c.ops {
                if let ClientOp::ClientCommand { text, new, .. } = op {
                    // A command not known to be new (mid-session) is left out: it may be
                    // a retransmission of one already reported.
                    if *new == Some(true) {
                        self.client_command(text);
                    }
                    self.own_line(text, m.time);
                }
            }
        }
        if let Some(t) = snap_time {
            self.server_time = Some(t);
        }
        if self.flags.touched {
            self.flag_events();
        }
        if self.scores_touched {
            self.scoreline_event();
        }
        self.flush(m, out);
    }

    /// Time the pending events and hand them out.
    fn flush(&mut self, m: &Message, out: &mut Vec<GameEvent>) {
        self.last_time = m.time;
        // Before the first snapshot (a gamestate's players) nothing gives the game time yet:
        // those events wait for the snapshot that follows.
        // A capture whose snapshots never decode would gather every event here (and this
        // test scanned them per message): past MAX_UNTIMED they go out without game time,
        // as the input's end would give them.
        if self.server_time.is_none() && self.untimed > 0 && self.pending.len() < MAX_UNTIMED {
            return;
        }
        // Most messages give no event: no call for them.
        if !self.pending.is_empty() {
            self.emit(out);
        }
    }

    /// Hand out what is still pending at the end of the input.
    pub fn finish(&mut self, out: &mut Vec<GameEvent>) {
        self.emit(out);
    }

    fn emit(&mut self, out: &mut Vec<GameEvent>) {
        // Most messages give no event: skip the level-start parse for them.
        if self.pending.is_empty() {
            return;
        }
        let level_start: Option<i64> = self.cs.get(self.cs.at.level_start_time).trim().parse().ok();
        self.untimed = 0;
        for (kind, detail, st, from_client) in self.pending.drain(..) {
            let st = st.or(self.server_time);
            let time = if self.demo {
                st.map_or(0.0, |t| f64::from(t) / 1000.0)
            } else {
                self.last_time
            };
            out.push(GameEvent {
                kind,
                time,
                game_time: st.map(|t| i64::from(t) - level_start.unwrap_or(0)),
                session_time: None,
                flows: Vec::new(),
                server: None,
                server_clock: true,
                from_client,
                detail,
            });
        }
    }

    fn push(&mut self, kind: Kind, detail: Detail) {
        self.untimed += 1;
        self.pending.push((kind, detail, None, false));
    }

    fn gamestate(&mut self, g: &Gamestate, m: &Message) {
        let old: Vec<String> = self.cs.players().to_vec();
        let first = !self.have_gamestate;
        self.cs.clear();
        let proto = Protocol::of(m.protocol);
        self.cs.at = proto.cs;
        self.protocol = m.protocol;
        self.departed.iter_mut().for_each(|d| *d = None);
        for c in &g.configstrings {
            self.cs.set(usize::from(c.index), &c.value);
        }
        self.have_gamestate = true;
        self.names.seen = u64::MAX;
        // The old level's clock means nothing in the new one.
        self.server_time = None;
        self.client_num = Some(g.client_num);
        self.prev_obits.clear();
        self.final_scores_sent = false;
        self.scoreline = None;
        self.scores_touched = true;
        self.flags.reset();
        // Quake Live's demos say so by their protocol (its protocol 91 servers leave
        // `gamename` out of the serverinfo).
        self.gamemod = if proto.is_quake_live() {
            GameMod::QuakeLive
        } else {
            GameMod::detect(self.cs.get(CS_SERVERINFO), self.cs.get(CS_SYSTEMINFO))
        };
        if self.gamemod.is_unknown() && !self.warned_mod {
            self.warned_mod = true;
            let text = format!(
                "unknown game module {:?}: kills read with the baseq3 tables",
                self.gamemod.to_string()
            );
            self.warnings.push(warning(m, text));
        }
        let map = info_value(self.cs.get(CS_SERVERINFO), "mapname").unwrap_or("");
        self.push(
            Kind::Map,
            Detail::Map(MapChange {
                map: map.to_string(),
                restart: false,
                mod_name: self.gamemod.to_string(),
            }),
        );
        for (n, old) in old.iter().enumerate() {
            let before = if first { "" } else { old.as_str() };
            let now = self.cs.player(n).to_string();
            self.player_change(n, before, &now);
        }
    }

    /// Compare a player slot's configstring before and after a change.
    fn player_change(&mut self, n: usize, before: &str, now: &str) {
        let num = n as i32;
        let (name0, team0) = (info_value(before, "n"), info_value(before, "t"));
        let (name1, team1) = (info_value(now, "n"), info_value(now, "t"));
        let player = |raw: &str, team: Option<&str>| Player {
            num,
            name: plain(raw),
            name_raw: raw.to_string(),
            team: team.map(team_word),
            old_name: None,
            old_team: None,
        };
        match (name0, name1) {
            (None, Some(n1)) => {
                self.departed[n % MAX_CLIENTS] = None;
                self.push(Kind::Join, Detail::Player(player(n1, team1)));
            }
            (Some(n0), None) => {
                self.departed[n % MAX_CLIENTS] = Some(plain(n0));
                self.push(Kind::Leave, Detail::Player(player(n0, team0)));
            }
            (Some(n0), Some(n1)) => {
                if n0 != n1 {
                    let mut p = player(n1, team1);
                    p.old_name = Some(plain(n0));
                    self.push(Kind::Rename, Detail::Player(p));
                }
                if team0 != team1 {
                    let mut p = player(n1, team1);
                    p.old_team = team0.map(team_word);
                    self.push(Kind::Team, Detail::Player(p));
                }
            }
            (None, None) => {}
        }
    }

    fn set_configstring(&mut self, index: usize, value: String, m: &Message) {
        if index >= MAX_CONFIGSTRINGS {
            self.warnings.push(warning(
                m,
                format!("configstring index {index} out of range"),
            ));
            return;
        }
        if self.cs.slot(index).is_none() {
            return;
        }
        let old = self.cs.get(index).to_string();
        self.cs.set(index, &value);
        let at = self.cs.at;
        if at.scores.contains(&index) || at.places.is_some_and(|p| p.contains(&index)) {
            self.scores_touched = true;
        }
        if let Some(n) = self.cs.player_slot(index) {
            let unknown = !self.demo && !self.have_gamestate && self.names.seen & (1 << n) == 0;
            self.names.seen |= 1 << n;
            if unknown {
                // What the slot held before is not known: the notices of this message say
                // whether this is a join, a rename or the same player ([`Self::slots_learned`]).
                let now = info_value(&value, "n").map(plain);
                self.names.changed.push((n, now));
            } else {
                self.player_change(n, &old, &value);
            }
        } else if index == at.flag_status {
            self.flags.status(&old, &value);
        } else if index == at.intermission && is_on(&value) && !is_on(&old) {
            let reason = if self.last_print.is_empty() {
                "intermission".to_string()
            } else {
                self.last_print.clone()
            };
            self.push(Kind::MatchEnd, Detail::Match(MatchFlow { reason }));
        } else if index == at.level_start_time && old != value {
            self.push(
                Kind::MatchStart,
                Detail::Match(MatchFlow {
                    reason: "level start".into(),
                }),
            );
        } else if Some(index) == at.round {
            // A round is on when its status no longer counts down to it.
            let round = |s: &str| {
                (info_value(s, "time").is_none())
                    .then(|| info_value(s, "round")?.trim().parse::<u32>().ok())
                    .flatten()
            };
            // Attack and defend plays each round in two turns: the countdown names the round
            // and the turn (`\time\T\round\N\turn\0\state\1`), the turn's start names
            // only the turn (`\turn\0\state\2`).
            let turn = |s: &str| {
                (info_value(s, "state").map(str::trim) == Some("2"))
                    .then(|| info_value(s, "turn")?.trim().parse::<u32>().ok())
                    .flatten()
            };
            let reason = if let Some(t) = turn(&value).filter(|_| turn(&old).is_none()) {
                info_value(&old, "round")
                    .and_then(|n| n.trim().parse::<u32>().ok())
                    .map(|n| format!("round {n} turn {}", t + 1))
            } else if turn(&value).is_some() {
                None
            } else {
                round(&value)
                    .filter(|&n| round(&old) != Some(n))
                    .map(|n| format!("round {n}"))
            };
            if let Some(reason) = reason {
                self.push(Kind::MatchStart, Detail::Match(MatchFlow { reason }));
            }
        } else if index == at.warmup && is_on(&value) && !is_on(&old) {
            self.push(
                Kind::MatchStart,
                Detail::Match(MatchFlow {
                    reason: "warmup".into(),
                }),
            );
        }
    }

    fn server_command(&mut self, text: &str, m: &Message) {
        let (cmd, rest) = split_command(text);
        match cmd {
            "cs" => self.cs_command(rest, m),
            "bcs0" | "bcs1" | "bcs2" => self.big_cs(cmd, rest, m),
            "chat" | "tchat" => {
                let body = first_arg(rest);
                // Quake Live's lines start with the sender's client number: the name and
                // clan tag are his configstring's.
                let (sender, body) = match self.gamemod {
                    GameMod::QuakeLive => quake_live_sender(&body),
                    _ => (None, body.as_str()),
                };
                if let Some(mut c) = parse_chat(body, cmd == "tchat") {
                    if let Some(n) = sender {
                        c.num = Some(n);
                        c.name = self.name(n).or(c.name);
                        c.clan = self
                            .player_info(n, "cn")
                            .map(plain)
                            .filter(|s| !s.is_empty());
                    }
                    self.echo(&c, m.time);
                    self.push(Kind::Chat, Detail::Chat(c));
                }
            }
            "mm2" => self.cpma_team_chat(rest),
            "print" | "cp" => {
                let raw = first_arg(rest);
                self.flags.print(&raw);
                let t = plain(raw.trim());
                if cmd == "print" && self.names.prints.len() < MAX_PRINTS {
                    self.names.prints.push(t.clone());
                }
                if t.contains("limit hit") || t.contains("hit the") {
                    self.last_print = t;
                }
            }
            "scores" | "scores_duel" | "scores_ca" | "scores_ctf" | "rrscores" => {
                self.scores(cmd, rest)
            }
            "map_restart" => {
                let map = info_value(self.cs.get(CS_SERVERINFO), "mapname").unwrap_or("");
                let detail = Detail::Map(MapChange {
                    map: map.to_string(),
                    restart: true,
                    mod_name: self.gamemod.to_string(),
                });
                self.prev_obits.clear();
                self.final_scores_sent = false;
                self.flags.reset();
                self.push(Kind::Map, detail);
            }
            _ => {}
        }
    }

    fn cs_command(&mut self, rest: &str, m: &Message) {
        let (idx, value) = split_command(rest);
        match idx.parse::<usize>() {
            Ok(i) => self.set_configstring(i, first_arg(value), m),
            Err(_) => self.warnings.push(warning(
                m,
                format!("malformed configstring command {:?}", truncate(rest)),
            )),
        }
    }

    /// Big configstrings arrive in pieces: `bcs0` starts, `bcs1` continues, `bcs2` ends.
    fn big_cs(&mut self, cmd: &str, rest: &str, m: &Message) {
        let (idx, value) = split_command(rest);
        let Ok(i) = idx.parse::<usize>() else {
            self.warnings
                .push(warning(m, format!("malformed {cmd} command")));
            return;
        };
        let piece = first_arg(value);
        match (cmd, self.big.take()) {
            ("bcs0", _) => self.big = Some((i, piece)),
            ("bcs1", Some((j, mut s))) if j == i => {
                s.push_str(&piece);
                self.big = Some((j, s));
            }
            ("bcs2", Some((j, mut s))) if j == i => {
                s.push_str(&piece);
                self.set_configstring(i, s, m);
            }
            _ => {}
        }
    }

    /// CPMA's team chat: `mm2 <client> <location> "text"`.
    fn cpma_team_chat(&mut self, rest: &str) {
        let args = tokenize(rest);
        let (Some(num), Some(raw)) = (args.first().and_then(|n| n.parse().ok()), args.get(2))
        else {
            return;
        };
        let chat = Chat {
            clan: None,
            name: self.name(num),
            num: Some(num),
            text: plain(raw),
            text_raw: raw.clone(),
            team: true,
            to: None,
            mode: "say_team",
        };
        self.push(Kind::Chat, Detail::Chat(chat));
    }

    /// The final scoreboard (`scores`; Quake Live's `scores_duel`, `scores_ca`,
    /// `scores_ctf`, `rrscores`): the first one sent during the intermission.
    fn scores(&mut self, cmd: &str, rest: &str) {
        if self.final_scores_sent || !is_on(self.cs.get(self.cs.at.intermission)) {
            return;
        }
        let quake_live = self.gamemod == GameMod::QuakeLive;
        let Some(rows) = scores::parse(cmd, rest, quake_live, self.protocol) else {
            return;
        };
        self.final_scores_sent = true;
        for (num, score, ping) in rows {
            let name = self.name(num).unwrap_or_default();
            self.push(
                Kind::Score,
                Detail::Score(Score {
                    name,
                    num,
                    score,
                    ping,
                    is_final: true,
                }),
            );
        }
    }

    /// A scoreline event when this message changed the score the game shows (once per
    /// message, as the client draws it). Not for CPMA, whose scores are in its own
    /// configstrings; not before a connection's first gamestate (mid-session, a score
    /// configstring not yet re-sent is unknown, not "no one").
    fn scoreline_event(&mut self) {
        self.scores_touched = false;
        if self.gamemod == GameMod::Cpma || !self.have_gamestate {
            return;
        }
        let at = self.cs.at;
        // SCORE_NOT_PRESENT (-9999): no one holds the place.
        let score = |i: usize| {
            let v: Option<i32> = self.cs.get(i).trim().parse().ok();
            v.filter(|&v| v != -9999)
        };
        let (score1, score2) = (score(at.scores[0]), score(at.scores[1]));
        if score1.is_none() && score2.is_none() {
            return;
        }
        let places = at.places.map(|p| p.map(|i| self.cs.get(i).to_string()));
        let teams = match &places {
            // Quake Live names the places, or the teams in a team game.
            Some([a, _]) if !a.is_empty() => a == "TEAM_RED",
            _ => self.team_game(),
        };
        let mut line = Scoreline {
            teams,
            score1,
            score2,
            name1: None,
            num1: None,
            name2: None,
            num2: None,
        };
        if let (false, Some([a, b])) = (teams, &places) {
            (line.name1, line.num1) = self.place(a);
            (line.name2, line.num2) = self.place(b);
        }
        if self.scoreline.as_deref() != Some(&line) {
            self.scoreline = Some(Box::new(line.clone()));
            self.push(Kind::Scoreline, Detail::Scoreline(line));
        }
    }

    /// A place's holder from Quake Live's place configstring ([`player_named`]); else the
    /// configstring's own text. "none": no one.
    fn place(&self, value: &str) -> (Option<String>, Option<i32>) {
        let text = plain(value);
        if text.is_empty() || text == "none" {
            return (None, None);
        }
        match player_named(self.cs.players(), value) {
            Some((num, name)) => (Some(name), Some(num)),
            None => (Some(text), None),
        }
    }

    /// The flag events of the message just read (its prints and `CS_FLAGSTATUS` changes).
    fn flag_events(&mut self) {
        let players = self.cs.players();
        for f in self.flags.take_events(players) {
            self.push(Kind::Flag, Detail::Flag(f));
        }
    }

    /// The player's clean name from its configstring.
    /// A team game (`g_gametype` from GT_TEAM, 3, on).
    fn team_game(&self) -> bool {
        info_value(self.cs.get(CS_SERVERINFO), "g_gametype")
            .and_then(|g| g.parse::<i32>().ok())
            .is_some_and(|g| g >= 3)
    }

    /// The player's clean name; a slot its player just left names him still (the game
    /// clears his configstring before the snapshot that carries his last death).
    fn name(&self, num: i32) -> Option<String> {
        let n = usize::try_from(num).ok().filter(|&n| n < MAX_CLIENTS)?;
        info_value(self.cs.player(n), "n")
            .map(plain)
            .or_else(|| self.departed[n].clone())
            .or_else(|| {
                (self.client_num == Some(num))
                    .then(|| self.names.own_name.clone())
                    .flatten()
            })
    }

    /// Key `key` of player `num`'s configstring.
    fn player_info(&self, num: i32, key: &str) -> Option<&str> {
        let n = usize::try_from(num).ok().filter(|&n| n < MAX_CLIENTS)?;
        info_value(self.cs.player(n), key)
    }

    fn team(&self, num: i32) -> Option<&str> {
        let n = usize::try_from(num).ok().filter(|&n| n < MAX_CLIENTS)?;
        info_value(self.cs.player(n), "t")
    }

    fn snapshot(&mut self, frame: &SnapFrame, m: &Message) {
        if !self.have_gamestate && !self.demo {
            self.own_number(frame);
        }
        let ev_obit = self.gamemod.obituary_event();
        let mut now = Vec::new();
        for e in &frame.entities {
            let Some(o) = obituary_of(e, ev_obit) else {
                continue;
            };
            now.push((e.number, o));
            if !self.prev_obits.contains(&(e.number, o)) {
                self.kill(o, frame.server_time, m);
            }
        }
        self.prev_obits = now;
    }

    fn kill(&mut self, (victim, attacker, means): Obituary, server_time: i32, m: &Message) {
        if !(0..MAX_CLIENTS as i32).contains(&victim) {
            self.warnings.push(warning(
                m,
                format!("server time {server_time}: obituary with victim {victim} (not a client)"),
            ));
            return;
        }
        let killer_num = (0..MAX_CLIENTS as i32)
            .contains(&attacker)
            .then_some(attacker);
        if killer_num.is_none() && attacker != ENTITYNUM_WORLD {
            self.warnings.push(warning(
                m,
                format!(
                    "server time {server_time}: obituary with attacker {attacker}, taken as the world"
                ),
            ));
        }
        let team_kill = self.team_game()
            && killer_num.is_some_and(|k| {
                k != victim && self.team(k).is_some() && self.team(k) == self.team(victim)
            });
        let means = match self.gamemod.means_of_death(means) {
            Some(s) => s.to_string(),
            None => format!("MOD_#{means}"),
        };
        let kill = Kill {
            killer: killer_num.and_then(|k| self.name(k)),
            // Unknown (a capture that started mid-session has no configstrings yet): null.
            victim: self.name(victim),
            killer_num,
            victim_num: Some(victim),
            means,
            suicide: killer_num.is_none_or(|k| k == victim),
            team_kill,
        };
        self.pending
            .push((Kind::Kill, Detail::Kill(kill), Some(server_time), false));
    }

    /// Mid-session, the connection's own client number: the playerstate's `clientNum` once
    /// a delta sends it, or the one victim of the obituaries that come with this player's
    /// own death (`player_die` sets `PM_DEAD` in the server frame of the obituary).
    fn own_number(&mut self, frame: &SnapFrame) {
        let pm = frame.ps_known.value(&frame.ps, PS_PM_TYPE);
        if self.client_num.is_none() {
            let c = frame.ps_known.value(&frame.ps, PS_CLIENT_NUM);
            self.client_num = c.filter(|c| (0..MAX_CLIENTS as i32).contains(c));
        }
        // Known now and not dead before: sent by this delta (a value the capture never saw
        // is sent only when it changed), unless the snapshot is a full one.
        let died = pm == Some(PM_DEAD)
            && self.names.pm_type != Some(PM_DEAD)
            && (self.names.pm_type.is_some() || frame.delta_num >= 0);
        if self.client_num.is_none() && died {
            let ev_obit = self.gamemod.obituary_event();
            let mut victims = frame
                .entities
                .iter()
                .filter_map(|e| Some((e.number, obituary_of(e, ev_obit)?)))
                .filter(|o| !self.prev_obits.contains(o))
                .map(|(_, o)| o.0);
            if let Some(v) = victims.next() {
                if victims.all(|w| w == v) && (0..MAX_CLIENTS as i32).contains(&v) {
                    self.client_num = Some(v);
                }
            }
        }
        if pm.is_some() {
            self.names.pm_type = pm;
        }
    }

    /// One of the client's own commands, new or resent: its chat lines are kept to
    /// recognise them when the server sends them back.
    fn own_line(&mut self, text: &str, time: f64) {
        if self.demo {
            return;
        }
        let args = tokenize(text);
        let words = match args.first().map(|s| s.to_ascii_lowercase()).as_deref() {
            Some("say" | "say_team") => &args[1..],
            Some("tell") if args.len() > 2 => &args[2..],
            _ => return,
        };
        let line = plain(&words.join(" "));
        if self.names.said.iter().any(|(_, s)| *s == line) {
            return;
        }
        if self.names.said.len() == MAX_SAID {
            self.names.said.pop_front();
        }
        self.names.said.push_back((time, line));
    }

    /// A chat line from the server that is one of the client's own lines coming back names
    /// its own player. Two names for his lines (another player said the same): none.
    fn echo(&mut self, c: &Chat, time: f64) {
        if self.demo || self.names.own_clash {
            return;
        }
        let Some(name) = &c.name else {
            return;
        };
        let mine = self
            .names
            .said
            .iter()
            .any(|(t, s)| *s == c.text && (0.0..=ECHO_S).contains(&(time - t)));
        if !mine {
            return;
        }
        match &self.names.own_name {
            None => self.names.own_name = Some(name.clone()),
            Some(n) if n != name => {
                self.names.own_clash = true;
                self.names.own_name = None;
            }
            Some(_) => {}
        }
    }

    /// Player slots this message changed from a value never seen: who they were before, by
    /// the notices that come with each change (ioq3 `SV_DropClient` notices a leave with
    /// its reason before the game clears the slot; `ClientConnect` notices a new player and
    /// `ClientUserinfoChanged` a rename; other changes re-send the same name). A join, a
    /// leave and a rename are events; the same name re-sent is none (the player was there).
    fn slots_learned(&mut self, time: f64) {
        let mut prints = std::mem::take(&mut self.names.prints);
        let from = self.names.first_time.unwrap_or(time);
        for (n, now) in std::mem::take(&mut self.names.changed) {
            let before = match &now {
                None => take_first(&mut prints, |p| {
                    LEAVE_REASONS
                        .iter()
                        .find_map(|r| p.strip_suffix(r))
                        .map(str::to_string)
                }),
                Some(name) => {
                    let joined = format!("{name} connected");
                    let renamed = format!(" renamed to {name}");
                    if take_first(&mut prints, |p| (*p == joined).then_some(())).is_some() {
                        None
                    } else {
                        take_first(&mut prints, |p| {
                            p.strip_suffix(&renamed).map(str::to_string)
                        })
                        .or_else(|| Some(name.clone()))
                    }
                }
            };
            let Some(before) = before else {
                // A new player: the join the slot's change means.
                let now = self.cs.player(n).to_string();
                self.player_change(n, "", &now);
                continue;
            };
            if now.as_ref().is_some_and(|now| *now != before) {
                // A rename, from the name the notice gives.
                let raw = self.cs.player(n).to_string();
                let name_raw = info_value(&raw, "n").unwrap_or("").to_string();
                self.push(
                    Kind::Rename,
                    Detail::Player(Player {
                        num: n as i32,
                        name: plain(&name_raw),
                        name_raw,
                        team: info_value(&raw, "t").map(team_word),
                        old_name: Some(before.clone()),
                        old_team: None,
                    }),
                );
            }
            if now.is_none() {
                self.departed[n] = Some(before.clone());
                self.push(
                    Kind::Leave,
                    Detail::Player(Player {
                        num: n as i32,
                        name: before.clone(),
                        name_raw: before.clone(),
                        team: None,
                        old_name: None,
                        old_team: None,
                    }),
                );
            }
            if self.names.learned.len() < MAX_LEARNED {
                self.names.learned.push(LearnedName {
                    num: n as i32,
                    name: before,
                    from,
                    to: time,
                });
            }
        }
    }

    /// The client's own commands: its chat (with a tell's target) and its disconnect.
    fn client_command(&mut self, text: &str) {
        let Some(me) = self.client_num else {
            return;
        };
        let name = self.name(me);
        let args = tokenize(text);
        let Some(cmd) = args.first().map(|s| s.to_ascii_lowercase()) else {
            return;
        };
        let (mode, to, words) = match cmd.as_str() {
            "say" => ("say", None, &args[1..]),
            "say_team" => ("say_team", None, &args[1..]),
            "tell" if args.len() > 2 => {
                let target = args[1].parse::<i32>().ok().and_then(|n| self.name(n));
                ("tell", target, &args[2..])
            }
            "disconnect" => {
                let before = self.cs.player(me as usize % MAX_CLIENTS).to_string();
                self.player_change(me as usize % MAX_CLIENTS, &before, "");
                return;
            }
            _ => return,
        };
        // Outside team games the game says a `say_team` to everyone (`G_Say`: below
        // GT_TEAM it is SAY_ALL), as every receiver sees it.
        let mode = if mode == "say_team" && !self.team_game() {
            "say"
        } else {
            mode
        };
        let raw = words.join(" ");
        self.untimed += 1;
        self.pending.push((
            Kind::Chat,
            Detail::Chat(Chat {
                name,
                clan: None,
                num: Some(me),
                text: plain(&raw),
                text_raw: raw,
                team: mode == "say_team",
                to,
                mode,
            }),
            None,
            true,
        ));
    }
}

/// The first of `items` that `f` reads, taken out.
fn take_first<T>(items: &mut Vec<String>, f: impl Fn(&String) -> Option<T>) -> Option<T> {
    let (i, v) = items
        .iter()
        .enumerate()
        .find_map(|(i, p)| Some((i, f(p)?)))?;
    items.remove(i);
    Some(v)
}

/// A malformed-content warning at message `m`'s position (capture frame, or demo record and
/// its byte offset in the file).
fn warning(m: &Message, text: String) -> Error {
    let e = Error::new(ErrorKind::Malformed, text)
        .flow(m.flow)
        .dir(m.dir);
    match m.file_offset {
        Some(off) => e.record(m.frame).byte(off),
        None => e.frame(m.frame),
    }
}

/// The obituary an entity carries, if it is one.
fn obituary_of(e: &EntityState, ev_obit: i32) -> Option<Obituary> {
    let et = e.fields[F_ETYPE];
    if et <= ET_EVENTS || (et - ET_EVENTS) & !EV_EVENT_BITS != ev_obit {
        return None;
    }
    Some((
        e.fields[F_OTHER],
        e.fields[F_OTHER2],
        e.fields[F_EVENT_PARM],
    ))
}

/// "1"/"2"/... are the game's team numbers.
fn team_word(t: &str) -> String {
    match t {
        "0" => "free".into(),
        "1" => "red".into(),
        "2" => "blue".into(),
        "3" => "spectator".into(),
        other => other.into(),
    }
}

/// A configstring flag that is set (non-empty, not "0").
fn is_on(v: &str) -> bool {
    let v = v.trim();
    !v.is_empty() && v != "0"
}

fn truncate(s: &str) -> String {
    s.chars().take(60).collect()
}

/// A `chat`/`tchat` body: `Name^7\x19: text` (say), `\x19(Name^7\x19)\x19: text` (team,
/// optionally with a location), `\x19[Name^7\x19]\x19: text` (tell), `console: text`.
pub fn parse_chat(body: &str, team: bool) -> Option<Chat> {
    let body = body.trim_end_matches('\n');
    // baseq3 ends the name with 0x19; CPMA with the white colour code alone (names may hold
    // ": " themselves, so the first separator after a colour reset is taken).
    let sep = body
        .find("\u{19}: ")
        .map(|i| (i, i + 3))
        .or_else(|| body.find("^7: ").map(|i| (i + 2, i + 4)));
    let (prefix, text_raw) = match sep {
        Some((end, start)) => (&body[..end], &body[start..]),
        None => {
            let text = body
                .strip_prefix("console: ")
                .or(body.strip_prefix("server: "))?;
            return Some(Chat {
                clan: None,
                name: None,
                num: None,
                text: plain(text),
                text_raw: text.to_string(),
                team: false,
                to: None,
                mode: "console",
            });
        }
    };
    let p = prefix.trim_start_matches('\u{19}');
    let (name_raw, mode) = if let Some(r) = p.strip_prefix('[') {
        (r.split("\u{19}]").next().unwrap_or(r), "tell")
    } else if let Some(r) = p.strip_prefix('(').filter(|_| team) {
        (r.split("\u{19})").next().unwrap_or(r), "say_team")
    } else {
        (p, if team { "say_team" } else { "say" })
    };
    Some(Chat {
        clan: None,
        name: Some(plain(name_raw)),
        num: None,
        text: plain(text_raw),
        text_raw: text_raw.to_string(),
        team,
        to: None,
        mode,
    })
}

/// A Quake Live chat line's sender: its two-digit client number and the rest of the line.
fn quake_live_sender(body: &str) -> (Option<i32>, &str) {
    let b = body.as_bytes();
    match (b.first(), b.get(1), b.get(2)) {
        (Some(d0), Some(d1), Some(b' ')) if d0.is_ascii_digit() && d1.is_ascii_digit() => {
            let n = i32::from(d0 - b'0') * 10 + i32::from(d1 - b'0');
            (Some(n), &body[3..])
        }
        _ => (None, body),
    }
}

/// The player slot (client number) a name that the game wrote in a print or a place
/// configstring stands for, and his clean name: the raw name of his configstring (`n`), else
/// his name or (Quake Live) his clan tag, a space and his name, compared without colour
/// codes and in any case.
pub(crate) fn player_named(players: &[String], raw: &str) -> Option<(i32, String)> {
    let exact = players.iter().position(|p| info_value(p, "n") == Some(raw));
    let wanted = plain(raw);
    let i = exact.or_else(|| {
        players.iter().position(|p| {
            let Some(n) = info_value(p, "n").map(plain) else {
                return false;
            };
            n.eq_ignore_ascii_case(&wanted)
                || info_value(p, "cn")
                    .map(plain)
                    .filter(|c| !c.is_empty())
                    .is_some_and(|c| format!("{c} {n}").eq_ignore_ascii_case(&wanted))
        })
    })?;
    Some((i as i32, plain(info_value(&players[i], "n")?)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::q3::fields::entity_field_index;

    #[test]
    fn field_indices() {
        assert_eq!(entity_field_index("eType"), Some(F_ETYPE));
        assert_eq!(entity_field_index("eventParm"), Some(F_EVENT_PARM));
        assert_eq!(entity_field_index("otherEntityNum"), Some(F_OTHER));
        assert_eq!(entity_field_index("otherEntityNum2"), Some(F_OTHER2));
    }

    #[test]
    fn chat_forms() {
        let c = parse_chat("LabPlayer1^7\u{19}: ^2hello", false).unwrap();
        assert_eq!(
            (c.name.as_deref(), c.text.as_str(), c.mode),
            (Some("LabPlayer1"), "hello", "say")
        );
        let c = parse_chat("\u{19}(LabPlayer2^7\u{19})\u{19}: ^5team chat 2", true).unwrap();
        assert_eq!(
            (c.name.as_deref(), c.text.as_str(), c.mode),
            (Some("LabPlayer2"), "team chat 2", "say_team")
        );
        let c = parse_chat("\u{19}[Lab^7\u{19}]\u{19}: ^6private", false).unwrap();
        assert_eq!((c.name.as_deref(), c.mode), (Some("Lab"), "tell"));
        let c = parse_chat("console: hi", false).unwrap();
        assert_eq!((c.name, c.mode), (None, "console"));
        assert!(parse_chat("garbage", false).is_none());
    }

    fn server_message(cmds: &[&str]) -> Message {
        use crate::q3::message::Body;
        use crate::q3::svc::ServerMessage;
        let ops = cmds
            .iter()
            .enumerate()
            .map(|(i, t)| ServerOp::ServerCommand {
                bit: i * 8,
                seq: i as i32,
                text: t.to_string(),
                new: true,
            })
            .collect();
        Message {
            flow: 1,
            game: "q3",
            dir: crate::flow::Dir::S2c,
            frame: 7,
            time: 1.5,
            seq: Some(1),
            fragmented: false,
            kind: "server",
            body: Body::Server(ServerMessage {
                ack: 0,
                ops,
                error: None,
                snapshot_head: None,
                protocol: 68,
            }),
            error: None,
            raw: None,
            client_gone: false,
            protocol: 68,
            size: 0,
            file_offset: None,
        }
    }

    /// A gamestate message whose serverinfo names the game `game`.
    fn gamestate_of(game: &str) -> Message {
        use crate::q3::svc::{ConfigString, Gamestate, ServerMessage};
        let mut m = server_message(&[]);
        let g = Gamestate {
            bit: 8,
            server_command_seq: 0,
            configstrings: vec![ConfigString {
                index: CS_SERVERINFO as u16,
                value: format!("\\gamename\\{game}\\mapname\\q3dm17"),
            }],
            baselines: Vec::new(),
            client_num: 0,
            checksum_feed: 0,
        };
        m.body = crate::q3::message::Body::Server(ServerMessage {
            ack: 0,
            ops: vec![ServerOp::Gamestate(Box::new(g))],
            error: None,
            snapshot_head: None,
            protocol: 68,
        });
        m
    }

    /// Chat with no snapshot ever decoding: the events waiting for a game time stay bounded,
    /// and every one comes out.
    #[test]
    fn events_waiting_for_a_game_time_stay_bounded() {
        let mut ex = Extractor::new(false);
        let mut out = Vec::new();
        ex.message(&gamestate_of("baseq3"), &mut out);
        let n = 3 * MAX_UNTIMED + 5;
        for _ in 0..n {
            ex.message(&server_message(&["chat \"console: hi\""]), &mut out);
            assert!(ex.pending.len() <= MAX_UNTIMED);
        }
        ex.finish(&mut out);
        let chats = out.iter().filter(|e| e.kind == Kind::Chat).count();
        assert_eq!(chats, n);
    }

    #[test]
    fn an_unknown_mod_is_read_with_baseq3_tables_and_said_once() {
        let mut ex = Extractor::new(false);
        let mut out = Vec::new();
        for _ in 0..3 {
            ex.message(&gamestate_of("defrag"), &mut out);
        }
        let said: Vec<_> = ex
            .warnings
            .iter()
            .filter(|w| w.to_string().contains("unknown game module"))
            .collect();
        assert_eq!(said.len(), 1, "{:?}", ex.warnings);
        assert!(said[0].to_string().contains("baseq3"));
        assert_eq!(ex.gamemod, GameMod::Unknown("defrag".into()));
        for i in 0..40 {
            assert_eq!(
                ex.gamemod.means_of_death(i),
                GameMod::BaseQ3.means_of_death(i),
                "means of death {i}"
            );
        }
        // A known mod says nothing.
        let mut ex = Extractor::new(false);
        ex.message(&gamestate_of("baseoa"), &mut out);
        assert!(ex.warnings.is_empty(), "{:?}", ex.warnings);
    }

    #[test]
    fn malformed_commands_are_warnings_with_position() {
        let mut ex = Extractor::new(false);
        let mut out = Vec::new();
        // Mid-session (no gamestate): a slot's first change is a join when the game's
        // notice says so.
        let m = server_message(&[
            "print \"A^7 connected\n\"",
            "cs x \"1\"",
            "cs 99999 \"a\"",
            "cs 544 \"n\\A\\t\\1\"",
            "chat",
            "chat \"\"",
            "scores 5 1",
            "bcs1 3 \"x\"",
            "mm2",
            "tchat \"\u{19}(\"",
        ]);
        ex.message(&m, &mut out);
        ex.finish(&mut out);
        assert_eq!(ex.warnings.len(), 2, "{:?}", ex.warnings);
        assert!(ex.warnings.iter().all(|w| w.pos.frame == Some(7)));
        assert!(out.iter().any(|e| e.kind == Kind::Join));
    }

    /// Mid-session (no gamestate), a slot's first change: a join with the game's "connected"
    /// notice, a rename with its "renamed to" notice, nothing when the same player's info is
    /// re-sent (he was in the game before the capture), a leave with the drop notice.
    #[test]
    fn first_change_of_an_unseen_slot_follows_its_notice() {
        let kinds = |cmds: &[&str]| {
            let mut ex = Extractor::new(false);
            let mut out = Vec::new();
            ex.message(&server_message(cmds), &mut out);
            ex.finish(&mut out);
            out.iter().map(|e| e.kind).collect::<Vec<_>>()
        };
        let cs = "cs 545 \"n\\B^7ee\\t\\1\"";
        assert_eq!(kinds(&["print \"B^7ee^7 connected\n\"", cs]), [Kind::Join]);
        assert_eq!(kinds(&[cs]), []);
        assert_eq!(
            kinds(&["print \"Aa^7 renamed to B^7ee\n\"", cs]),
            [Kind::Rename]
        );
        assert_eq!(
            kinds(&["print \"B^7ee^7 disconnected\n\"", "cs 545 \"\""]),
            [Kind::Leave]
        );
    }

    #[test]
    fn flag_print_and_status_are_one_event() {
        let mut ex = Extractor::new(false);
        let mut out = Vec::new();
        let m = server_message(&[
            "cs 544 \"n\\^1Kyon\\t\\2\"",
            "cs 23 \"00\"",
            "print \"^1Kyon^7 got the RED flag!\n\"",
            "cs 23 \"10\"",
        ]);
        ex.message(&m, &mut out);
        ex.message(&server_message(&["cs 23 \"20\""]), &mut out);
        // A restart resets the status: no event.
        ex.message(&server_message(&["map_restart", "cs 23 \"00\""]), &mut out);
        ex.finish(&mut out);
        let flags: Vec<_> = out
            .iter()
            .filter_map(|e| match &e.detail {
                Detail::Flag(f) => Some((f.team.as_str(), f.action.as_str(), f.num)),
                _ => None,
            })
            .collect();
        assert_eq!(
            flags,
            [("red", "taken", Some(0)), ("red", "dropped", Some(0))]
        );
        assert!(ex.warnings.is_empty(), "{:?}", ex.warnings);
    }
}
