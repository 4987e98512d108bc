//! Game events read from one QuakeWorld connection's decoded messages (or one .qwd/.mvd file):
//! players from `svc_updateuserinfo` / `svc_setinfo`, chat from chat-level prints (and the
//! client's own `say` commands), kills from the obituary prints (the QuakeWorld progs' and
//! KTX's frag messages, matched against the names of the players in the game, so names that
//! hold the messages' own words are still read right), scores from `svc_updatefrags` (final at
//! `svc_intermission`), maps from `svc_serverdata` and the model list, KTX's match start from
//! its `//ktx matchstart` marker. Only decoded state is read; no bytes are decoded here.
use crate::error::{Error, ErrorKind};
use crate::flow::Dir;
use crate::gameevent::{Chat, Detail, GameEvent, Kill, Kind, MapChange, MatchFlow, Player, Score};
use crate::qw::clc::ClientOp;
use crate::qw::message::{Message, NetchanStatus, OpKind};
use crate::qw::svc::ServerOp;
use crate::vocab::info::value as info_value;

/// Player slots a server may have (mvdsv MAX_CLIENTS).
const MAX_SLOTS: usize = 32;

/// Distinct prints remembered at one demo time (to take an .mvd's copies of a print, one per
/// recipient, once). A real demo has a few at one time; a damaged or hostile one may hold
/// any number, and a list searched for each print made that quadratic (a 2 MB .mvd of prints
/// at one time took `events` 17 s). Past this many the memory starts over: a copy may then be
/// taken twice, in such files only.
const MAX_SEEN_PRINTS: usize = 1024;
const PRINT_MEDIUM: u8 = 1;
const PRINT_CHAT: u8 = 3;

/// One player slot as the userinfo says.
#[derive(Debug, Clone, Default, PartialEq)]
struct Slot {
    userid: i32,
    name: String,
    team: String,
    spectator: bool,
    frags: i32,
    ping: i32,
}

impl Slot {
    fn used(&self) -> bool {
        !self.name.is_empty()
    }
    fn team_word(&self) -> String {
        if self.spectator {
            "spectator".into()
        } else {
            clean(&self.team)
        }
    }
}

/// Events of one connection (or demo file), built message by message.
pub struct Extractor {
    demo: bool,
    /// The demo is an .mvd: its clock is the server's.
    mvd: bool,
    slots: Vec<Slot>,
    /// The recording / connected client's own slot (serverdata), when known.
    me: Option<usize>,
    gamedir: String,
    ktx: bool,
    /// Time of the level's serverdata (the game clock's zero).
    level_start: Option<f64>,
    /// A serverdata was seen and its map is not yet named (the model list names it).
    map_pending: bool,
    /// A print line cut across prints, per level.
    partial: [String; 4],
    /// Prints already taken at this time (an .mvd repeats one print per recipient).
    seen_prints: (f64, std::collections::HashSet<(u8, String)>),
    intermission: bool,
    /// The last round KTX marked as played (`//demomark 0 round- N` at a round's end, in its
    /// round-based modes: a hoonymode duel restarts the match every round).
    rounds_done: Option<u32>,
    /// Per direction (c2s, s2c): the last reliable block sent was read here (not dropped by
    /// the receiver as out of order): its retransmission repeats what was read.
    reliable_taken: [bool; 2],
    /// Problems found, with their position.
    pub warnings: crate::gameevent::Warnings,
}

impl Extractor {
    /// `demo`: the input is a demo file (times from its clock).
    pub fn new(demo: bool) -> Self {
        Extractor {
            demo,
            mvd: false,
            slots: vec![Slot::default(); MAX_SLOTS],
            me: None,
            gamedir: String::new(),
            ktx: false,
            level_start: None,
            map_pending: false,
            partial: Default::default(),
            seen_prints: (f64::NAN, Default::default()),
            intermission: false,
            rounds_done: None,
            reliable_taken: [false; 2],
            warnings: Default::default(),
        }
    }

    /// The input is a demo file.
    pub fn is_demo(&self) -> bool {
        self.demo
    }

    /// Nothing is held back: events are out as soon as their message is read.
    pub fn finish(&mut self, _out: &mut Vec<GameEvent>) {}

    /// The game events of one decoded message, appended to `out`.
    pub fn message(&mut self, m: &Message, out: &mut Vec<GameEvent>) {
        let d = usize::from(m.dir == Dir::S2c);
        // The receiver dropped it: what it carries never happened for the client. A reliable
        // block in it is not taken: its retransmission will be.
        if m.netchan == Some(NetchanStatus::OutOfOrder) {
            if m.reliable == Some(true) {
                self.reliable_taken[d] = false;
            }
            return;
        }
        if m.netchan == Some(NetchanStatus::Duplicate) {
            return;
        }
        // A reliable block sent again after its first sending was read here (the peer's ack
        // said it never got it: lost after the capture point): its prints, commands and
        // state changes are the ones already read, once. (A block lost before the capture
        // point is never seen: its retransmission is the first sending read.)
        if m.reliable == Some(true) {
            let again = m.retransmit == Some(true) && self.reliable_taken[d];
            self.reliable_taken[d] = true;
            if again {
                return;
            }
        }
        if m.block == Some("all") || m.block == Some("stats") {
            self.mvd = true;
        }
        let repeatable = matches!(m.block, Some("single" | "multiple"));
        for op in &m.ops {
            match &op.kind {
                OpKind::Server(s) => self.server_op(s, m, repeatable, out),
                OpKind::Client(ClientOp::Stringcmd { text }) => self.client_command(text, m, out),
                _ => {}
            }
        }
    }

    fn event(&self, kind: Kind, detail: Detail, m: &Message) -> GameEvent {
        GameEvent {
            kind,
            time: m.time,
            game_time: self
                .level_start
                .map(|t| ((m.time - t) * 1000.0).round() as i64),
            session_time: None,
            flows: Vec::new(),
            server: None,
            server_clock: self.demo && self.mvd,
            from_client: false,
            detail,
        }
    }

    fn server_op(
        &mut self,
        op: &ServerOp,
        m: &Message,
        repeatable: bool,
        out: &mut Vec<GameEvent>,
    ) {
        match op {
            ServerOp::Serverdata(sd) => {
                self.level_start = Some(m.time);
                self.rounds_done = None;
                self.gamedir.clone_from(&sd.gamedir);
                // Bit 7 marks a spectator; a slot past the server's players is damage (the
                // chat and leave paths index the slots by it).
                self.me = sd.playernum.map(|p| usize::from(p & 0x7f));
                if let Some(me) = self.me.filter(|&s| s >= MAX_SLOTS) {
                    self.warn(
                        m,
                        format!("serverdata for player slot {me} (max {MAX_SLOTS})"),
                    );
                    self.me = None;
                }
                self.map_pending = true;
                self.intermission = false;
            }
            ServerOp::Modellist(l) | ServerOp::FteModellistshort(l)
                if l.start == 0 && self.map_pending =>
            {
                self.map_pending = false;
                let map = l
                    .names
                    .first()
                    .map(|n| {
                        let n = n.strip_prefix("maps/").unwrap_or(n);
                        n.strip_suffix(".bsp").unwrap_or(n).to_string()
                    })
                    .unwrap_or_default();
                let game = if self.ktx {
                    "ktx".into()
                } else {
                    self.gamedir.clone()
                };
                out.push(self.event(
                    Kind::Map,
                    Detail::Map(MapChange {
                        map,
                        restart: false,
                        mod_name: game,
                    }),
                    m,
                ));
            }
            ServerOp::Stufftext { text } => {
                if text.starts_with("fullserverinfo") && text.contains("\\ktxver\\") {
                    self.ktx = true;
                } else if text.starts_with("//ktx matchstart") {
                    // After a marked round, the match goes on: the next round, not a match.
                    let reason = match self.rounds_done {
                        Some(n) => format!("round {}", n.saturating_add(1)),
                        None => "match start".into(),
                    };
                    out.push(self.event(Kind::MatchStart, Detail::Match(MatchFlow { reason }), m));
                } else if let Some(n) = round_mark(text) {
                    self.rounds_done = Some(n);
                }
            }
            ServerOp::Serverinfo { key, .. } if key == "ktxver" => self.ktx = true,
            ServerOp::Updateuserinfo {
                slot,
                userid,
                userinfo,
            } => self.userinfo(usize::from(*slot), *userid, userinfo, m, out),
            ServerOp::Setinfo { slot, key, value } => {
                let s = usize::from(*slot);
                let Some(old) = self.slots.get(s).cloned() else {
                    self.warn(m, format!("setinfo for player slot {s} (max {MAX_SLOTS})"));
                    return;
                };
                let mut now = old.clone();
                match key.as_str() {
                    "name" => now.name.clone_from(value),
                    "team" => now.team.clone_from(value),
                    "*spectator" => now.spectator = !value.is_empty() && value != "0",
                    _ => return,
                }
                self.change(s, &old, &now, m, out);
                self.slots[s] = now;
            }
            ServerOp::Updatefrags { slot, frags } => {
                if let Some(s) = self.slots.get_mut(usize::from(*slot)) {
                    s.frags = i32::from(*frags);
                }
            }
            ServerOp::Updateping { slot, ping } => {
                if let Some(s) = self.slots.get_mut(usize::from(*slot)) {
                    s.ping = i32::from(*ping);
                }
            }
            ServerOp::Print { level, text } => {
                if repeatable && !self.first_time(m.time, *level, text) {
                    return;
                }
                let Some(buf) = self.partial.get_mut(usize::from(*level)) else {
                    return;
                };
                buf.push_str(text);
                if !buf.contains('\n') {
                    return;
                }
                let whole = std::mem::take(buf);
                let mut lines: Vec<&str> = whole.split('\n').collect();
                // What follows the last newline waits for the rest of its line.
                if let Some(rest) = lines.pop() {
                    self.partial[usize::from(*level)] = rest.to_string();
                }
                for line in lines {
                    match *level {
                        PRINT_CHAT => self.chat_line(line, m, out),
                        PRINT_MEDIUM => self.obituary(line, m, out),
                        _ => {}
                    }
                }
            }
            ServerOp::Intermission { .. } if !self.intermission => {
                self.intermission = true;
                out.push(self.event(
                    Kind::MatchEnd,
                    Detail::Match(MatchFlow {
                        reason: "intermission".into(),
                    }),
                    m,
                ));
                for (n, s) in self.slots.iter().enumerate() {
                    if s.used() && !s.spectator {
                        out.push(self.event(
                            Kind::Score,
                            Detail::Score(Score {
                                name: clean(&s.name),
                                num: n as i32,
                                score: s.frags,
                                ping: s.ping,
                                is_final: true,
                            }),
                            m,
                        ));
                    }
                }
            }
            ServerOp::Disconnect { .. } if !self.demo => {
                // The server dropped this client: it leaves (the others are told by
                // updateuserinfo, which this client no longer receives).
                if let Some(me) = self.me {
                    let old = self.slots[me].clone();
                    self.change(me, &old, &Slot::default(), m, out);
                    self.slots[me] = Slot::default();
                }
            }
            _ => {}
        }
    }

    /// True the first time a print is seen at this demo time (an .mvd sends a print to
    /// several players as one `dem_single` block each).
    fn first_time(&mut self, time: f64, level: u8, text: &str) -> bool {
        let (at, seen) = &mut self.seen_prints;
        if *at != time || seen.len() >= MAX_SEEN_PRINTS {
            *at = time;
            seen.clear();
        }
        seen.insert((level, text.to_string()))
    }

    fn warn(&mut self, m: &Message, text: String) {
        let e = Error::new(ErrorKind::Malformed, text)
            .flow(m.flow)
            .dir(m.dir);
        self.warnings.push(if self.demo {
            e.record(m.frame)
        } else {
            e.frame(m.frame)
        });
    }

    fn userinfo(
        &mut self,
        s: usize,
        userid: i32,
        info: &str,
        m: &Message,
        out: &mut Vec<GameEvent>,
    ) {
        let Some(old) = self.slots.get(s).cloned() else {
            self.warn(
                m,
                format!("updateuserinfo for player slot {s} (max {MAX_SLOTS})"),
            );
            return;
        };
        let now = Slot {
            userid,
            name: info_value(info, "name").unwrap_or("").to_string(),
            team: info_value(info, "team").unwrap_or("").to_string(),
            spectator: info_value(info, "*spectator").is_some_and(|v| !v.is_empty() && v != "0"),
            frags: if old.userid == userid { old.frags } else { 0 },
            ping: old.ping,
        };
        if old.used() && now.used() && old.userid != userid {
            // Another player took the slot: the old one left.
            self.change(s, &old, &Slot::default(), m, out);
            self.change(s, &Slot::default(), &now, m, out);
        } else {
            self.change(s, &old, &now, m, out);
        }
        self.slots[s] = now;
    }

    /// Events for a slot going from `old` to `now`.
    fn change(&self, s: usize, old: &Slot, now: &Slot, m: &Message, out: &mut Vec<GameEvent>) {
        let player = |p: &Slot| Player {
            num: s as i32,
            name: clean(&p.name),
            name_raw: p.name.clone(),
            team: Some(p.team_word()),
            old_name: None,
            old_team: None,
        };
        match (old.used(), now.used()) {
            (false, true) => out.push(self.event(Kind::Join, Detail::Player(player(now)), m)),
            (true, false) => out.push(self.event(Kind::Leave, Detail::Player(player(old)), m)),
            (true, true) => {
                if old.name != now.name {
                    let mut p = player(now);
                    p.old_name = Some(clean(&old.name));
                    out.push(self.event(Kind::Rename, Detail::Player(p), m));
                }
                if old.team_word() != now.team_word() {
                    let mut p = player(now);
                    p.old_team = Some(old.team_word());
                    out.push(self.event(Kind::Team, Detail::Player(p), m));
                }
            }
            (false, false) => {}
        }
    }

    /// The slot of the longest player name `text` starts with (names may share prefixes).
    fn name_at_start(&self, text: &str) -> Option<usize> {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, p)| p.used() && text.starts_with(p.name.as_str()))
            .max_by_key(|(_, p)| p.name.len())
            .map(|(i, _)| i)
    }

    /// The slot whose name is exactly `text`.
    fn name_is(&self, text: &str) -> Option<usize> {
        self.slots.iter().position(|p| p.used() && p.name == text)
    }

    /// A chat-level print: `name: text` (say), `(name): text` (say_team), `[SPEC] name: text`
    /// (a spectator), `console: text` (the server console).
    fn chat_line(&mut self, line: &str, m: &Message, out: &mut Vec<GameEvent>) {
        let (body, team) = match line.strip_prefix('(') {
            Some(r) => (r, true),
            None => (line.strip_prefix("[SPEC] ").unwrap_or(line), false),
        };
        let sep = if team { "): " } else { ": " };
        let who = self
            .name_at_start(body)
            .filter(|&s| body[self.slots[s].name.len()..].starts_with(sep));
        let (name, num, text) = match who {
            Some(s) => {
                let n = self.slots[s].name.len() + sep.len();
                (Some(self.slots[s].name.clone()), Some(s as i32), &body[n..])
            }
            None => match line.strip_prefix("console: ") {
                Some(t) => (None, None, t),
                // A print at chat level that is no chat line (server notices).
                None => return,
            },
        };
        let mode = match (&name, team) {
            (None, _) => "console",
            (_, true) => "say_team",
            _ => "say",
        };
        let chat = Chat {
            clan: None,
            name: name.as_deref().map(clean),
            num,
            text: chat_text(text),
            text_raw: text.to_string(),
            team,
            to: None,
            mode,
        };
        out.push(self.event(Kind::Chat, Detail::Chat(chat), m));
    }

    /// The client's own chat commands (`say "text"`, `say_team "text"`).
    fn client_command(&mut self, text: &str, m: &Message, out: &mut Vec<GameEvent>) {
        let Some(me) = self.me.filter(|&s| self.slots[s].used()) else {
            return;
        };
        let (cmd, rest) = text.split_once(' ').unwrap_or((text, ""));
        let team = match cmd {
            "say" => false,
            "say_team" => true,
            _ => return,
        };
        let rest = rest.trim();
        let raw = rest
            .strip_prefix('"')
            .and_then(|r| r.strip_suffix('"'))
            .unwrap_or(rest);
        let chat = Chat {
            clan: None,
            name: Some(clean(&self.slots[me].name)),
            num: Some(me as i32),
            text: chat_text(raw),
            text_raw: raw.to_string(),
            team,
            to: None,
            mode: if team { "say_team" } else { "say" },
        };
        let mut e = self.event(Kind::Chat, Detail::Chat(chat), m);
        e.from_client = true;
        out.push(e);
    }

    /// An obituary print, if `line` is one.
    fn obituary(&mut self, line: &str, m: &Message, out: &mut Vec<GameEvent>) {
        let Some(k) = self.parse_obituary(line) else {
            return;
        };
        let name = |s: Option<usize>| s.map(|s| clean(&self.slots[s].name));
        let team = |s: usize| {
            let p = &self.slots[s];
            (!p.team.is_empty()).then_some(p.team.as_str())
        };
        let team_kill = k.team_kill
            || matches!((k.killer, k.victim), (Some(a), Some(v)) if a != v && team(a).is_some() && team(a) == team(v));
        let kill = Kill {
            killer: name(k.killer),
            victim: name(k.victim),
            killer_num: k.killer.map(|s| s as i32),
            victim_num: k.victim.map(|s| s as i32),
            means: k.weapon.to_string(),
            suicide: k.suicide,
            team_kill,
        };
        out.push(self.event(Kind::Kill, Detail::Kill(kill), m));
    }

    fn parse_obituary(&self, line: &str) -> Option<Obit> {
        let slot_name = |s: usize| self.slots[s].name.as_str();
        // Victim first: "V <form>" — a two-name form, a suicide, a death by the world, or a
        // team kill whose killer the message does not name.
        if let Some(v) = self.name_at_start(line) {
            let rest = &line[slot_name(v).len()..];
            for &(before, after, weapon) in VICTIM_FIRST {
                if let Some(r) = rest.strip_prefix(before) {
                    if let Some(k) = r.strip_suffix(after).and_then(|n| self.name_is(n)) {
                        return Some(Obit::kill(Some(k), Some(v), weapon));
                    }
                }
            }
            if let Some(&(_, weapon, world)) = ALONE.iter().find(|(s, _, _)| rest == *s) {
                let killer = (!world).then_some(v);
                return Some(Obit {
                    killer,
                    victim: Some(v),
                    weapon,
                    suicide: true,
                    team_kill: false,
                });
            }
            if let Some(&(_, weapon)) = VICTIM_OF_TEAMMATE.iter().find(|(s, _)| rest == *s) {
                return Some(Obit {
                    killer: None,
                    victim: Some(v),
                    weapon,
                    suicide: false,
                    team_kill: true,
                });
            }
            // The killer first: "K squishes V", "K stomps V", "K rips V a new one", and the
            // team kills naming the killer only.
            for &(before, after, weapon) in KILLER_FIRST {
                if let Some(r) = rest.strip_prefix(before) {
                    if let Some(victim) = r.strip_suffix(after).and_then(|n| self.name_is(n)) {
                        return Some(Obit::kill(Some(v), Some(victim), weapon));
                    }
                }
            }
            if let Some(&(_, weapon)) = KILLER_OF_TEAMMATE.iter().find(|(s, _)| rest == *s) {
                return Some(Obit {
                    killer: Some(v),
                    victim: None,
                    weapon,
                    suicide: false,
                    team_kill: true,
                });
            }
        }
        // "Satan's power deflects V's telefrag": the victim's own death.
        let r = line.strip_prefix("Satan's power deflects ")?;
        let v = self.name_is(r.strip_suffix("'s telefrag")?)?;
        Some(Obit {
            killer: Some(v),
            victim: Some(v),
            weapon: "tele",
            suicide: true,
            team_kill: false,
        })
    }
}

/// A parsed obituary: slots and the weapon word.
struct Obit {
    killer: Option<usize>,
    victim: Option<usize>,
    weapon: &'static str,
    suicide: bool,
    team_kill: bool,
}

impl Obit {
    fn kill(killer: Option<usize>, victim: Option<usize>, weapon: &'static str) -> Obit {
        Obit {
            suicide: killer == victim,
            killer,
            victim,
            weapon,
            team_kill: false,
        }
    }
}

/// "V<before>K<after>": the frag messages of the QuakeWorld progs and KTX naming the victim
/// first. Longer forms come before their prefixes.
const VICTIM_FIRST: &[(&str, &str, &str)] = &[
    (" was telefragged by ", "'s Satan's power", "tele"),
    (" was telefragged by ", "", "tele"),
    (" was ax-murdered by ", "", "axe"),
    (" was axed to pieces by ", "!", "axe"),
    (" was hooked by ", "", "hook"),
    (" chewed on ", "'s boomstick", "sg"),
    (" was lead poisoned by ", "", "sg"),
    (" was instagibbed by ", "", "sg"),
    (" ate 2 loads of ", "'s buckshot", "ssg"),
    (" ate 8 loads of ", "'s buckshot", "ssg"),
    (" was body pierced by ", "", "ng"),
    (" was nailed by ", "", "ng"),
    (" was punctured by ", "", "sng"),
    (" was perforated by ", "", "sng"),
    (" was ventilated by ", "", "sng"),
    (" was straw-cuttered by ", "", "sng"),
    (" eats ", "'s pineapple", "gl"),
    (" was gibbed by ", "'s grenade", "gl"),
    (" rides ", "'s rocket", "rl"),
    (" was gibbed by ", "'s rocket", "rl"),
    (" was brutalized by ", "'s quad rocket", "rl"),
    (" was smeared by ", "'s quad rocket", "rl"),
    (" accepts ", "'s shaft", "lg"),
    (" gets a natural disaster from ", "", "lg"),
    (" drains ", "'s batteries", "discharge"),
    (" accepts ", "'s discharge", "discharge"),
    (" softens ", "'s fall", "stomp"),
    (" tried to catch ", "", "stomp"),
    (" was jumped by ", "", "stomp"),
    (" was crushed by ", "", "stomp"),
    (" was literally stomped into particles by ", "!", "stomp"),
    (" was railed by ", "", "rail"),
    (" killed by ", " ?", "unknown"),
];

/// "K<before>V<after>": the forms naming the killer first.
const KILLER_FIRST: &[(&str, &str, &str)] = &[
    (" squishes ", "", "squish"),
    (" stomps ", "", "stomp"),
    (" rips ", " a new one", "rl"),
];

/// "V<text>": deaths by one's own hand (false) or by the world (true).
const ALONE: &[(&str, &str, bool)] = &[
    (" tries to put the pin back in", "gl", false),
    (" discovers blast radius", "rl", false),
    (" becomes bored with life", "rl", false),
    (" somehow becomes bored with life", "unknown", false),
    (" electrocutes himself", "lg", false),
    (" electrocutes herself", "lg", false),
    (" electrocutes itself", "lg", false),
    (" discharges into the slime", "discharge", false),
    (" discharges into the lava", "discharge", false),
    (" discharges into the water", "discharge", false),
    (" heats up the water", "discharge", false),
    (" suicides", "suicide", false),
    (" was squished", "squish", true),
    (" blew up", "explobox", true),
    (" cratered", "fall", true),
    (" fell to his death", "fall", true),
    (" fell to her death", "fall", true),
    (" fell to its death", "fall", true),
    (" was spiked", "spikes", true),
    (" was zapped", "laser", true),
    (" ate a lavaball", "fireball", true),
    (" tried to leave", "changelevel", true),
    (" sleeps with the fishes", "water", true),
    (" sucks it down", "water", true),
    (" gulped a load of slime", "slime", true),
    (" can't exist on slime alone", "slime", true),
    (" turned into hot slag", "lava", true),
    (" visits the Volcano God", "lava", true),
    (" burst into flames", "lava", true),
    (" died", "world", true),
    (" killed by monster? :)", "monster", true),
];

/// "V<text>": team kills naming the victim only.
const VICTIM_OF_TEAMMATE: &[(&str, &str)] = &[
    (" was telefragged by his teammate", "tele"),
    (" was telefragged by her teammate", "tele"),
    (" was telefragged by its teammate", "tele"),
    (" was jumped by his teammate", "stomp"),
    (" was jumped by her teammate", "stomp"),
    (" was crushed by his teammate", "stomp"),
    (" was crushed by her teammate", "stomp"),
];

/// "K<text>": team kills naming the killer only.
const KILLER_OF_TEAMMATE: &[(&str, &str)] = &[
    (" checks his glasses", "teamkill"),
    (" checks her glasses", "teamkill"),
    (" checks its glasses", "teamkill"),
    (" loses another friend", "teamkill"),
    (" gets a frag for the other team", "teamkill"),
    (" mows down a teammate", "teamkill"),
    (" squished a teammate", "squish"),
];

/// The round of KTX's `//demomark 0 round- N`, which KTX writes into the demo as a round
/// ends (in the 1on1 hoonymode .mvd of ../shared/demos/qw, `round- 1` comes 3 s before
/// the second `//ktx matchstart`).
fn round_mark(text: &str) -> Option<u32> {
    let mut w = text.split_whitespace();
    if w.next() != Some("//demomark") {
        return None;
    }
    let _slot = w.next()?;
    let rest: String = w.collect();
    rest.strip_prefix("round-")?.parse().ok()
}

/// A chat line's text as ezQuake shows it, in plain characters ([`clean`]): its colour
/// codes `&cRGB` (three hex digits) and `&r` (reset) drawn as colours, not text (ezQuake's
/// `Util_SkipEZColors` rules), and the braces of its white text (`{text}`, teamplay
/// macros' way to keep a part out of the gold font) dropped where a `}` closes them, as
/// `TP_ParseWhiteText` does with its default `cl_parseWhiteText 1`. Both are matched on
/// the bytes as sent: a gold `&` or `{` is a character.
pub fn chat_text(s: &str) -> String {
    let b: Vec<char> = s.chars().collect();
    let hex = |i: usize| b.get(i).is_some_and(char::is_ascii_hexdigit);
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    // A `{` is white text only when a `}` follows it (anywhere after it).
    let last_close = b.iter().rposition(|&c| c == '}');
    let mut open = false;
    while i < b.len() {
        match b[i] {
            '&' if b.get(i + 1) == Some(&'c') && hex(i + 2) && hex(i + 3) && hex(i + 4) => {
                i += 5;
                continue;
            }
            '&' if b.get(i + 1) == Some(&'r') => {
                i += 2;
                continue;
            }
            '{' if !open && last_close.is_some_and(|j| j > i) => open = true,
            '}' if open => open = false,
            c => out.push(c),
        }
        i += 1;
    }
    clean(&out)
}

/// QuakeWorld text as one line of plain characters ([`crate::qw::charset`], newlines dropped):
/// names and text of the game events.
pub fn clean(s: &str) -> String {
    s.chars()
        .filter_map(crate::qw::charset::plain_char)
        .filter(|&c| c != '\n')
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::Dir;
    use crate::qw::message::Op;

    fn msg(ops: Vec<ServerOp>) -> Message {
        let mut m = Message::new(1, Dir::S2c, 3, 10.0, 0);
        m.ops = ops
            .into_iter()
            .map(|s| Op {
                at: 0,
                kind: OpKind::Server(s),
            })
            .collect();
        m
    }

    fn user(slot: u8, userid: i32, name: &str, team: &str) -> ServerOp {
        ServerOp::Updateuserinfo {
            slot,
            userid,
            userinfo: format!("\\team\\{team}\\name\\{name}"),
        }
    }

    fn print(level: u8, text: &str) -> ServerOp {
        ServerOp::Print {
            level,
            text: text.into(),
        }
    }

    #[test]
    fn names_holding_message_words() {
        let mut x = Extractor::new(false);
        let mut out = Vec::new();
        x.message(
            &msg(vec![
                user(0, 1, "> rides", "red"),
                user(1, 2, ": Timber", "blue"),
                user(2, 3, "tom", "blue"),
                print(1, "> rides rides : Timber's rocket\n"),
                print(1, ": Timber discovers blast radius\n"),
                print(1, "tom mows down a "),
                print(1, "teammate\n"),
                print(3, "(: Timber): hi: there\n"),
                print(1, "nobody rides tom's rocket\n"),
                ServerOp::Setinfo {
                    slot: 2,
                    key: "name".into(),
                    value: "tim".into(),
                },
            ]),
            &mut out,
        );
        let kills: Vec<&Kill> = out
            .iter()
            .filter_map(|e| match &e.detail {
                Detail::Kill(k) => Some(k),
                _ => None,
            })
            .collect();
        assert_eq!(kills.len(), 3, "{out:?}");
        assert_eq!(
            (
                kills[0].killer_num,
                kills[0].victim_num,
                kills[0].means.as_str()
            ),
            (Some(1), Some(0), "rl")
        );
        assert!(kills[1].suicide && kills[1].killer_num == Some(1));
        assert!(kills[2].team_kill && kills[2].victim.is_none());
        assert!(out.iter().any(|e| matches!(&e.detail, Detail::Chat(c) if c.team && c.text == "hi: there" && c.num == Some(1))));
        assert!(out.iter().any(|e| e.kind == Kind::Rename));
    }

    /// Found by the `export` fuzz target: a serverdata naming slot 101 made the client's own
    /// `say` (and a later disconnect) index past the 32 slots.
    #[test]
    fn a_serverdata_slot_past_the_players_is_a_warning() {
        let mut x = Extractor::new(false);
        let mut out = Vec::new();
        let sd = ServerOp::Serverdata(crate::qw::svc::ServerData {
            ext: Default::default(),
            protocol: 28,
            spawncount: 1,
            gamedir: "qw".into(),
            playernum: Some(101),
            demotime: None,
            levelname: String::new(),
            movevars: [0.0; 10],
        });
        x.message(&msg(vec![sd, user(5, 1, "a", "")]), &mut out);
        assert_eq!(x.warnings.len(), 1, "{:?}", x.warnings);
        let mut say = Message::new(1, Dir::C2s, 4, 11.0, 0);
        say.ops = vec![Op {
            at: 0,
            kind: OpKind::Client(ClientOp::Stringcmd {
                text: "say hi".into(),
            }),
        }];
        x.message(&say, &mut out);
        x.message(&msg(vec![ServerOp::Disconnect { text: None }]), &mut out);
        assert!(!out
            .iter()
            .any(|e| e.kind == Kind::Chat || e.kind == Kind::Leave));
    }

    /// An .mvd's copies of a print (one per recipient, at one time) are taken once; the
    /// prints remembered at one time stay bounded however many a damaged demo holds there.
    #[test]
    fn prints_at_one_time_are_taken_once_and_remembered_within_a_bound() {
        let mut x = Extractor::new(true);
        assert!(x.first_time(1.0, 2, "a"));
        assert!(!x.first_time(1.0, 2, "a"));
        assert!(x.first_time(1.0, 3, "a"), "another level is another print");
        assert!(x.first_time(1.5, 2, "a"), "another time is another print");
        for i in 0..5 * MAX_SEEN_PRINTS + 10 {
            assert!(x.first_time(2.0, 2, &format!("p{i}")));
            assert!(x.seen_prints.1.len() <= MAX_SEEN_PRINTS);
        }
        assert!(!x.first_time(2.0, 2, &format!("p{}", 5 * MAX_SEEN_PRINTS + 9)));
    }

    /// A bad event in every message: the warnings kept stay bounded, all are counted.
    #[test]
    fn warnings_are_bounded_and_counted() {
        let mut x = Extractor::new(true);
        let mut out = Vec::new();
        let bad = ServerOp::Setinfo {
            slot: 200,
            key: "name".into(),
            value: "x".into(),
        };
        for _ in 0..300 {
            x.message(&msg(vec![bad.clone()]), &mut out);
        }
        assert_eq!(x.warnings.len(), crate::pipeline::MAX_WARNINGS);
        assert_eq!(x.warnings.total(), 300);
    }

    #[test]
    fn bad_slots_are_warnings() {
        let mut x = Extractor::new(true);
        let mut out = Vec::new();
        x.message(&msg(vec![user(200, 1, "a", "")]), &mut out);
        assert_eq!(x.warnings.len(), 1);
        assert_eq!(x.warnings[0].pos.record, Some(3));
    }

    #[test]
    fn cleans_charset() {
        assert_eq!(clean("r\u{12}t"), "r0t");
        // Lines of the 1on1 and 4on4 MVDs in ../shared/demos/qw, as KTX relayed them.
        assert_eq!(
            chat_text("{&cf60 mil coming \u{10} \u{11}&cfff} "),
            " mil coming [ ] "
        );
        assert_eq!(
            chat_text("{&c666 mil&cfff} [{ }] y{128}/{178} {&cf60rl&cfff}{&cf66:4&cfff}"),
            " mil [ ] y128/178 rl:4"
        );
        assert_eq!(
            chat_text("{&cfff0&r}/{&cfff100&r} [{tele}]  {&caaa}"),
            "0/100 [tele]  "
        );
        // No closing brace: shown as sent; `&` without a code stays.
        assert_eq!(chat_text("a {b & c &cxyz"), "a {b & c &cxyz");
        assert_eq!(chat_text("{a}}"), "a}");
        assert_eq!(clean("\u{d4}hunde\u{d2}"), "ThundeR");
        // Glyphs as `decode` shows them (qw::charset), the newline dropped.
        assert_eq!(clean("\u{1d}\u{1e}\u{9f} \u{1c}x\n"), "<-> •x");
    }
}
