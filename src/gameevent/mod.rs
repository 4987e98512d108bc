//! Game-neutral game events (kills, chat, players, match flow, scores), produced by each
//! game's extractor ([`q3`], [`qw`]) and consumed by game-blind sinks. The
//! JSON keys are part of the user-facing contract (README, "quakecap events").
use serde::Serialize;

internal_mod!(merge, names);
pub mod q3;
pub mod qw;
pub mod summary;

pub use crate::error::Warnings;

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A frag ([`Kill`]).
    Kill,
    /// A chat line ([`Chat`]).
    Chat,
    /// A player entered ([`Player`]).
    Join,
    /// A player left ([`Player`]).
    Leave,
    /// A player renamed ([`Player`], with the old name).
    Rename,
    /// A player changed team ([`Player`], with the old team).
    Team,
    /// A level started or restarted ([`MapChange`]).
    Map,
    /// The match started ([`MatchFlow`]).
    MatchStart,
    /// The match ended ([`MatchFlow`]).
    MatchEnd,
    /// A player's score as the server reported it ([`Score`]).
    Score,
    /// A CTF flag taken, captured, returned or dropped ([`Flag`]).
    Flag,
    /// The score the game shows of the two teams, or of the first two places
    /// ([`Scoreline`]), when it changed.
    Scoreline,
}

impl Kind {
    /// The JSON / command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Kill => "kill",
            Kind::Chat => "chat",
            Kind::Join => "join",
            Kind::Leave => "leave",
            Kind::Rename => "rename",
            Kind::Team => "team",
            Kind::Map => "map",
            Kind::MatchStart => "match_start",
            Kind::MatchEnd => "match_end",
            Kind::Score => "score",
            Kind::Flag => "flag",
            Kind::Scoreline => "scoreline",
        }
    }

    /// Parse a command-line name.
    pub fn parse(s: &str) -> Option<Kind> {
        ALL_KINDS.iter().copied().find(|k| k.name() == s)
    }
}

/// Every kind, for `--kind` help and parsing.
pub const ALL_KINDS: [Kind; 12] = [
    Kind::Kill,
    Kind::Chat,
    Kind::Join,
    Kind::Leave,
    Kind::Rename,
    Kind::Team,
    Kind::Map,
    Kind::MatchStart,
    Kind::MatchEnd,
    Kind::Score,
    Kind::Flag,
    Kind::Scoreline,
];

/// `mm:ss.mmm` of a time in milliseconds (negative ones with a sign): the clock of the
/// `quakecap events` timeline and of the report's.
pub fn clock_ms(ms: i64) -> String {
    let sign = if ms < 0 { "-" } else { "" };
    let ms = ms.unsigned_abs();
    format!(
        "{sign}{:02}:{:02}.{:03}",
        ms / 60_000,
        ms / 1000 % 60,
        ms % 1000
    )
}

/// One game event as one server's game saw it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GameEvent {
    /// What happened.
    pub kind: Kind,
    /// Seconds since the Unix epoch (captures); demo files: the demo's own clock.
    pub time: f64,
    /// Milliseconds since the level started (None before any level start is known).
    pub game_time: Option<i64>,
    /// Seconds since the session's first packet (captures only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_time: Option<f64>,
    /// The flows that saw it (captures only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<u32>,
    /// The server's address (captures only), the merge key with `game_time`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// `game_time` is the server's own clock (Quake 3 snapshots, QuakeWorld MVD demo time),
    /// so two connections' reports of one event have close game times; false when it is
    /// counted from what one connection saw (a QuakeWorld client's serverdata), and merging
    /// compares capture times instead.
    #[serde(skip)]
    pub server_clock: bool,
    /// Read from the client's own command (its chat as it sent it), not from what the server
    /// sent: a connection's command and the server's echo of it to that connection are one
    /// event, two commands or two echoes are two (`gameevent::merge`).
    #[serde(skip)]
    pub from_client: bool,
    /// The kind's own fields.
    #[serde(flatten)]
    pub detail: Detail,
}

impl GameEvent {
    /// An event of `kind` at capture time `t` with no game time, flow or server: the unit
    /// tests' own.
    #[cfg(test)]
    pub(crate) fn at(t: f64, kind: Kind, detail: Detail) -> GameEvent {
        GameEvent {
            kind,
            time: t,
            game_time: None,
            session_time: None,
            flows: Vec::new(),
            server: None,
            server_clock: true,
            from_client: false,
            detail,
        }
    }

    /// One line of text saying what happened ("Major → Sarge  rocket", "Sarge: hello"):
    /// the timeline of `quakecap events` and of the HTML report.
    pub fn describe(&self) -> String {
        match &self.detail {
            Detail::Kill(k) => {
                let weapon = k.means.trim_start_matches("MOD_").to_ascii_lowercase();
                let tag = if k.team_kill { " (team kill)" } else { "" };
                // A client whose name is unknown (a capture that missed the configstrings) is
                // shown by number.
                let victim = match (k.victim.as_deref(), k.victim_num) {
                    (Some("") | None, Some(n)) => format!("#{n}"),
                    (v, _) => v.unwrap_or("<a team mate>").to_string(),
                };
                match &k.killer {
                    Some(killer) if !k.suicide => format!("{killer} → {victim}  {weapon}{tag}"),
                    Some(_) => format!("{victim} (suicide)  {weapon}"),
                    None if k.suicide && k.killer_num.is_some() => {
                        format!("{victim} (suicide)  {weapon}")
                    }
                    None if k.killer_num.is_some() => format!(
                        "#{} → {victim}  {weapon}{tag}",
                        k.killer_num.unwrap_or_default()
                    ),
                    None if k.team_kill => format!("<a team mate> → {victim}  {weapon}{tag}"),
                    None => format!("<world> → {victim}  {weapon}"),
                }
            }
            Detail::Chat(c) => {
                let who = c.name.as_deref().unwrap_or("console");
                match (&c.to, c.mode) {
                    (Some(to), _) => format!("{who} → {to}: {}", c.text),
                    (None, "say_team") => format!("({who}): {}", c.text),
                    (None, "tell") => format!("[{who}]: {}", c.text),
                    _ => format!("{who}: {}", c.text),
                }
            }
            Detail::Player(p) => match (&p.old_name, &p.old_team) {
                (Some(old), _) => format!("{old} → {} (#{})", p.name, p.num),
                (_, Some(old)) => format!(
                    "{} (#{}) {old} → {}",
                    p.name,
                    p.num,
                    p.team.as_deref().unwrap_or("?")
                ),
                _ => format!(
                    "{} (#{}) {}",
                    p.name,
                    p.num,
                    p.team.as_deref().unwrap_or("")
                ),
            },
            Detail::Map(m) => format!(
                "{}{} ({})",
                m.map,
                if m.restart { " restart" } else { "" },
                m.mod_name
            ),
            Detail::Score(s) if s.name.is_empty() => {
                format!("#{} {} ping {}", s.num, s.score, s.ping)
            }
            Detail::Score(s) => format!("{} (#{}) {} ping {}", s.name, s.num, s.score, s.ping),
            Detail::Match(m) => m.reason.clone(),
            Detail::Flag(f) => match &f.name {
                Some(n) => format!("{} flag {} by {n}", f.team, f.action),
                None => format!("{} flag {}", f.team, f.action),
            },
            Detail::Scoreline(s) => s.describe(),
        }
    }

    /// The players the event names (killer and victim, who spoke, who joined or scored).
    pub fn names(&self) -> Vec<&str> {
        match &self.detail {
            Detail::Kill(k) => [k.killer.as_deref(), k.victim.as_deref()]
                .into_iter()
                .flatten()
                .collect(),
            Detail::Chat(c) => [c.name.as_deref(), c.to.as_deref()]
                .into_iter()
                .flatten()
                .collect(),
            Detail::Player(p) => [Some(p.name.as_str()), p.old_name.as_deref()]
                .into_iter()
                .flatten()
                .collect(),
            Detail::Score(s) => vec![s.name.as_str()],
            Detail::Flag(f) => f.name.as_deref().into_iter().collect(),
            Detail::Scoreline(s) => [s.name1.as_deref(), s.name2.as_deref()]
                .into_iter()
                .flatten()
                .collect(),
            Detail::Map(_) | Detail::Match(_) => Vec::new(),
        }
    }
}

/// The kind-specific part; its fields are flattened into the event's JSON object.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Detail {
    /// Of [`Kind::Kill`].
    Kill(Kill),
    /// Of [`Kind::Chat`].
    Chat(Chat),
    /// Of joins, leaves, renames and team changes.
    Player(Player),
    /// Of [`Kind::Map`].
    Map(MapChange),
    /// Of [`Kind::Score`].
    Score(Score),
    /// Of match starts and ends.
    Match(MatchFlow),
    /// Of [`Kind::Flag`].
    Flag(Flag),
    /// Of [`Kind::Scoreline`].
    Scoreline(Scoreline),
}

/// A frag. `killer` is None for the world (falls, lava, triggers) and for a team kill whose
/// message names only the victim; `victim` is None for a team kill whose message names only
/// the killer (QuakeWorld's "K checks his glasses").
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Kill {
    /// The killer's name, colour codes removed.
    pub killer: Option<String>,
    /// The victim's name, colour codes removed.
    pub victim: Option<String>,
    /// The killer's client number, when known.
    pub killer_num: Option<i32>,
    /// The victim's client number, when known.
    pub victim_num: Option<i32>,
    /// The game's means-of-death name ("MOD_ROCKET"; QuakeWorld: a weapon word).
    #[serde(rename = "mod")]
    pub means: String,
    /// Killed themselves (including the world killing them).
    pub suicide: bool,
    /// Killed a team mate.
    pub team_kill: bool,
}

/// A chat line. `name` is None for the server console.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Chat {
    /// The sender's name, colour codes removed.
    pub name: Option<String>,
    /// The sender's clan tag, colour codes removed (Quake Live, where the player has one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clan: Option<String>,
    /// The sender's client number, when known.
    pub num: Option<i32>,
    /// Without colour codes.
    pub text: String,
    /// As sent, colour codes kept.
    pub text_raw: String,
    /// Sent to the sender's team only.
    pub team: bool,
    /// The target of a `tell`, when known.
    pub to: Option<String>,
    /// "say", "say_team", "tell" or "console".
    pub mode: &'static str,
}

/// A player joined, left, renamed or changed team.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Player {
    /// The client number (slot).
    pub num: i32,
    /// The name, colour codes removed.
    pub name: String,
    /// The name as the game sent it.
    pub name_raw: String,
    /// The game's team word ("red", "blue", "free", "spectator"; QuakeWorld: the team name).
    pub team: Option<String>,
    /// Renames: the name before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_name: Option<String>,
    /// Team changes: the team before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_team: Option<String>,
}

/// A level (re)started.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MapChange {
    /// The map's name.
    pub map: String,
    /// The same map restarted (`map_restart`).
    pub restart: bool,
    /// The game's mod ("baseq3", "cpma", ...).
    #[serde(rename = "game")]
    pub mod_name: String,
}

/// One player's score as the server reported it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Score {
    /// The player's name, colour codes removed.
    pub name: String,
    /// The client number.
    pub num: i32,
    /// The score (frags in free-for-all).
    pub score: i32,
    /// The ping the server reported (ms).
    pub ping: i32,
    /// Final (sent during the intermission).
    #[serde(rename = "final")]
    pub is_final: bool,
}

/// The score the game shows (Quake 3's and Quake Live's `CS_SCORES1` and `CS_SCORES2`):
/// red and blue in team games; otherwise the first and second place, whom Quake Live names
/// (`CS_FIRST_PLACE`, `CS_SECOND_PLACE`) and Quake 3 does not.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scoreline {
    /// Team game: `score1` is red's, `score2` blue's.
    pub teams: bool,
    /// Red's score, or the first place's (None: no one, the game's -9999).
    pub score1: Option<i32>,
    /// Blue's score, or the second place's (None: no one).
    pub score2: Option<i32>,
    /// The first place's name, colour codes removed (Quake Live's places).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name1: Option<String>,
    /// The first place's client number, when a player of that name is in the game.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num1: Option<i32>,
    /// The second place's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name2: Option<String>,
    /// The second place's client number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num2: Option<i32>,
}

impl Scoreline {
    /// "red 7 : 8 blue", "mejtisson 10 : 5 Terifire", "10 : 5".
    fn describe(&self) -> String {
        let score = |s: Option<i32>| s.map_or("-".to_string(), |s| s.to_string());
        let (a, b) = if self.teams {
            ("red", "blue")
        } else {
            (
                self.name1.as_deref().unwrap_or("first"),
                self.name2.as_deref().unwrap_or("second"),
            )
        };
        format!("{a} {} : {} {b}", score(self.score1), score(self.score2))
    }
}

/// Match start or end.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MatchFlow {
    /// Why it started or ended: the game's own words, or "level start", "warmup", "intermission".
    pub reason: String,
}

/// A CTF flag event.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Flag {
    /// Which flag: "red", "blue", "neutral" (one-flag CTF).
    pub team: String,
    /// "taken", "captured", "returned", "dropped".
    pub action: String,
    /// Who (clean name): the taker, capturer, returner, the carrier who dropped it; None when
    /// the game acted (a dropped flag's automatic return) or the mod names no one (CPMA).
    pub name: Option<String>,
    /// That player's client number, when known.
    pub num: Option<i32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip() {
        for k in ALL_KINDS {
            assert_eq!(Kind::parse(k.name()), Some(k));
        }
    }
}
