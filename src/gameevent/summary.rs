//! Per-player totals over a merged timeline: frags, deaths, suicides, team kills, chat lines,
//! time in game, the final score and CTF flag takes, captures and returns. Players are keyed by clean name: a player who
//! reconnects gets another client number but is the same person to the reader.
use std::collections::BTreeMap;

use serde::Serialize;

use super::{Detail, GameEvent, Kind};

/// One player's totals.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PlayerSummary {
    /// The player's clean name, or `#N` (client number) when the input never named them.
    pub name: String,
    /// Kills of others that were not team kills.
    pub frags: u32,
    /// Times killed, suicides and team kills included.
    pub deaths: u32,
    /// Deaths by their own hand or by the world.
    pub suicides: u32,
    /// Teammates killed (not counted in `frags`).
    pub team_kills: u32,
    /// Chat lines the player sent (`say`, `say_team`, `tell`).
    pub chat_lines: u32,
    /// Seconds in the game: from joining to leaving, summed over each stint (a rename starts
    /// a stint under the new name). A player already in the game when the input began (a
    /// capture started mid-session: his first event is not a join) counts from the input's
    /// first event; a player still in the game at the end, to its last event.
    pub time_in_game: f64,
    /// Score of the last final `score` event (sent during the intermission); None without one.
    pub final_score: Option<i32>,
    /// CTF: flags taken, captured and returned by the player.
    pub flag_takes: u32,
    /// CTF: flags the player captured.
    pub flag_captures: u32,
    /// CTF: flags the player returned to their base.
    pub flag_returns: u32,
    #[serde(skip)]
    joined_at: Option<f64>,
}

/// Totals for every player of the timeline, by name.
pub fn summarize(events: &[GameEvent]) -> Vec<PlayerSummary> {
    let mut by: BTreeMap<String, PlayerSummary> = BTreeMap::new();
    let end = events.iter().map(|e| e.time).fold(f64::MIN, f64::max);
    let start = events.iter().map(|e| e.time).fold(f64::MAX, f64::min);
    for e in events {
        match (&e.kind, &e.detail) {
            (Kind::Kill, Detail::Kill(k)) => {
                if let Some(victim) = or_number(k.victim.as_deref(), k.victim_num) {
                    let v = get(&mut by, &victim, start);
                    v.deaths += 1;
                    if k.suicide {
                        v.suicides += 1;
                    }
                }
                let killer = or_number(k.killer.as_deref(), k.killer_num);
                if let (false, Some(killer)) = (k.suicide, killer) {
                    let p = get(&mut by, &killer, start);
                    if k.team_kill {
                        p.team_kills += 1;
                    } else {
                        p.frags += 1;
                    }
                }
            }
            (Kind::Chat, Detail::Chat(c)) => {
                if let Some(n) = &c.name {
                    get(&mut by, n, start).chat_lines += 1;
                }
            }
            (Kind::Join, Detail::Player(p)) => {
                joins(&mut by, &p.name, e.time);
            }
            (Kind::Rename, Detail::Player(p)) => {
                // Time so far stays with the old name; the new name starts now.
                if let Some(old) = &p.old_name {
                    close_stint(get(&mut by, old, start), e.time);
                }
                joins(&mut by, &p.name, e.time);
            }
            (Kind::Leave, Detail::Player(p)) => close_stint(get(&mut by, &p.name, start), e.time),
            (Kind::Score, Detail::Score(s)) if s.is_final => {
                let name = or_number(Some(&s.name), Some(s.num)).unwrap_or_default();
                get(&mut by, &name, start).final_score = Some(s.score);
            }
            (Kind::Flag, Detail::Flag(f)) => {
                if let Some(n) = &f.name {
                    let p = get(&mut by, n, start);
                    match f.action.as_str() {
                        "taken" => p.flag_takes += 1,
                        "captured" => p.flag_captures += 1,
                        "returned" => p.flag_returns += 1,
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    let mut v: Vec<PlayerSummary> = by.into_values().filter(|p| !p.name.is_empty()).collect();
    for p in &mut v {
        close_stint(p, end);
    }
    v
}

/// A player's name, or `#N` by client number when the input never named him (a capture
/// that began mid-session): his frags still count.
fn or_number(name: Option<&str>, num: Option<i32>) -> Option<String> {
    match (name.filter(|n| !n.is_empty()), num) {
        (Some(n), _) => Some(n.to_string()),
        (None, Some(n)) => Some(format!("#{n}")),
        (None, None) => None,
    }
}

/// The player `name` joins (or takes the name) at `t`; a stint already running goes on.
fn joins(by: &mut BTreeMap<String, PlayerSummary>, name: &str, t: f64) {
    by.entry(name.to_string())
        .or_insert_with(|| PlayerSummary {
            name: name.to_string(),
            ..Default::default()
        })
        .joined_at
        .get_or_insert(t);
}

/// The player `name`, met in an event other than his join: met for the first time, he was
/// in the game before the input began (a capture started mid-session), from its `start`.
fn get<'a>(
    by: &'a mut BTreeMap<String, PlayerSummary>,
    name: &str,
    start: f64,
) -> &'a mut PlayerSummary {
    by.entry(name.to_string()).or_insert_with(|| PlayerSummary {
        name: name.to_string(),
        joined_at: Some(start),
        ..Default::default()
    })
}

fn close_stint(p: &mut PlayerSummary, t: f64) {
    if let Some(j) = p.joined_at.take() {
        p.time_in_game += (t - j).max(0.0);
    }
}
