//! Game-neutral game events (kills, chat, players, match flow, scores), produced by each
//! game's extractor (`q3::events`, later `qw::events`) and consumed by game-blind sinks. The
//! JSON keys are part of the user-facing contract (README, "quakecap events").
use serde::Serialize;

pub mod merge;
pub mod summary;

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Kill,
    Chat,
    Join,
    Leave,
    Rename,
    Team,
    Map,
    MatchStart,
    MatchEnd,
    Score,
    Flag,
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
        }
    }

    /// Parse a command-line name.
    pub fn parse(s: &str) -> Option<Kind> {
        ALL_KINDS.iter().copied().find(|k| k.name() == s)
    }
}

/// Every kind, for `--kind` help and parsing.
pub const ALL_KINDS: [Kind; 11] = [
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
];

/// One game event as one server's game saw it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GameEvent {
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
    #[serde(flatten)]
    pub detail: Detail,
}

impl GameEvent {
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
            Detail::Map(_) | Detail::Match(_) => Vec::new(),
        }
    }
}

/// The kind-specific part; its fields are flattened into the event's JSON object.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Detail {
    Kill(Kill),
    Chat(Chat),
    Player(Player),
    Map(MapChange),
    Score(Score),
    Match(MatchFlow),
    Flag(Flag),
}

/// A frag. `killer` is None for the world (falls, lava, triggers) and for a team kill whose
/// message names only the victim; `victim` is None for a team kill whose message names only
/// the killer (QuakeWorld's "K checks his glasses").
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Kill {
    pub killer: Option<String>,
    pub victim: Option<String>,
    pub killer_num: Option<i32>,
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
    pub name: Option<String>,
    pub num: Option<i32>,
    /// Without colour codes.
    pub text: String,
    /// As sent, colour codes kept.
    pub text_raw: String,
    pub team: bool,
    /// The target of a `tell`, when known.
    pub to: Option<String>,
    /// "say", "say_team", "tell" or "console".
    pub mode: &'static str,
}

/// A player joined, left, renamed or changed team.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Player {
    pub num: i32,
    pub name: String,
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
    pub name: String,
    pub num: i32,
    pub score: i32,
    pub ping: i32,
    /// Final (sent during the intermission).
    #[serde(rename = "final")]
    pub is_final: bool,
}

/// Match start or end.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MatchFlow {
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
