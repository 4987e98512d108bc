//! Per-player totals over a merged timeline: frags, deaths, suicides, team kills, chat lines,
//! time in game, the final score and CTF flag takes, captures and returns. Players are keyed by clean name: a player who
//! reconnects gets another client number but is the same person to the reader. A rename
//! carries the player's row over to his new name (the names he had before are listed with
//! it): one player, one row, as the scoreboard shows him.
use std::collections::BTreeMap;

use serde::Serialize;

use super::{Detail, GameEvent, Kind};

/// One player's totals.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PlayerSummary {
    /// The player's clean name (his last, after renames), or `#N` (client number) when the
    /// input never named them.
    pub name: String,
    /// The names he had before, in the order he left them (renames).
    pub other_names: Vec<String>,
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
    /// Seconds in the game: from joining to leaving, summed over each stint (a rename does
    /// not end one). A player already in the game when the input began (a
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
    // A renamed player's old names, to his current one: events the game stamped with an old
    // name after the rename (or a merged input's other copy of it) still reach his row.
    let mut renamed: BTreeMap<String, String> = BTreeMap::new();
    let now = |renamed: &BTreeMap<String, String>, name: &str| -> String {
        let mut n = name;
        // A chain of renames, bounded (a cycle of names cannot loop).
        for _ in 0..16 {
            match renamed.get(n) {
                Some(next) if next != n => n = next,
                _ => break,
            }
        }
        n.to_string()
    };
    let end = events.iter().map(|e| e.time).fold(f64::MIN, f64::max);
    let start = events.iter().map(|e| e.time).fold(f64::MAX, f64::min);
    for e in events {
        match (&e.kind, &e.detail) {
            (Kind::Kill, Detail::Kill(k)) => {
                if let Some(victim) = or_number(k.victim.as_deref(), k.victim_num) {
                    let v = get(&mut by, &now(&renamed, &victim), start);
                    v.deaths += 1;
                    if k.suicide {
                        v.suicides += 1;
                    }
                }
                let killer = or_number(k.killer.as_deref(), k.killer_num);
                if let (false, Some(killer)) = (k.suicide, killer) {
                    let p = get(&mut by, &now(&renamed, &killer), start);
                    if k.team_kill {
                        p.team_kills += 1;
                    } else {
                        p.frags += 1;
                    }
                }
            }
            (Kind::Chat, Detail::Chat(c)) => {
                if let Some(n) = &c.name {
                    get(&mut by, &now(&renamed, n), start).chat_lines += 1;
                }
            }
            (Kind::Join, Detail::Player(p)) => {
                // Whoever joins with a name is that name's player from now on.
                renamed.remove(&p.name);
                joins(&mut by, &p.name, e.time);
            }
            (Kind::Rename, Detail::Player(p)) => {
                renamed.remove(&p.name);
                match p.old_name.as_deref().map(|o| now(&renamed, o)) {
                    Some(old) if old != p.name => {
                        // His row goes on under the new name (one already there, a player
                        // of that name before, is added up with it).
                        let mut row = get(&mut by, &old, start).clone();
                        by.remove(&old);
                        row.other_names.push(old.clone());
                        let to = get_new(&mut by, &p.name);
                        to.absorb(row, e.time);
                        renamed.insert(old, p.name.clone());
                    }
                    _ => joins(&mut by, &p.name, e.time),
                }
            }
            (Kind::Leave, Detail::Player(p)) => {
                close_stint(get(&mut by, &now(&renamed, &p.name), start), e.time);
            }
            (Kind::Score, Detail::Score(s)) if s.is_final => {
                let name = or_number(Some(&s.name), Some(s.num)).unwrap_or_default();
                get(&mut by, &now(&renamed, &name), start).final_score = Some(s.score);
            }
            (Kind::Flag, Detail::Flag(f)) => {
                if let Some(n) = &f.name {
                    let p = get(&mut by, &now(&renamed, n), start);
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

/// The row of `name`, made empty (not in the game) when there is none.
fn get_new<'a>(by: &'a mut BTreeMap<String, PlayerSummary>, name: &str) -> &'a mut PlayerSummary {
    by.entry(name.to_string()).or_insert_with(|| PlayerSummary {
        name: name.to_string(),
        ..Default::default()
    })
}

impl PlayerSummary {
    /// Add `other`'s totals (the same player under the name he left at `t`); his stint goes
    /// on here.
    fn absorb(&mut self, other: PlayerSummary, t: f64) {
        self.frags += other.frags;
        self.deaths += other.deaths;
        self.suicides += other.suicides;
        self.team_kills += other.team_kills;
        self.chat_lines += other.chat_lines;
        self.time_in_game += other.time_in_game;
        self.flag_takes += other.flag_takes;
        self.flag_captures += other.flag_captures;
        self.flag_returns += other.flag_returns;
        self.final_score = self.final_score.or(other.final_score);
        for n in other.other_names {
            if n != self.name && !self.other_names.contains(&n) {
                self.other_names.push(n);
            }
        }
        // His stint goes on; a row of this name already in the game keeps its own.
        let since = other.joined_at.unwrap_or(t);
        match self.joined_at {
            Some(j) => self.joined_at = Some(j.min(since)),
            None => self.joined_at = Some(since),
        }
    }
}

fn close_stint(p: &mut PlayerSummary, t: f64) {
    if let Some(j) = p.joined_at.take() {
        p.time_in_game += (t - j).max(0.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gameevent::{Chat, Player};

    fn player(name: &str, old: Option<&str>) -> Detail {
        Detail::Player(Player {
            num: 3,
            name: name.into(),
            name_raw: name.into(),
            team: None,
            old_name: old.map(Into::into),
            old_team: None,
        })
    }

    fn chat(name: &str) -> Detail {
        Detail::Chat(Chat {
            name: Some(name.into()),
            clan: None,
            num: Some(3),
            text: "hi".into(),
            text_raw: "hi".into(),
            team: false,
            to: None,
            mode: "say",
        })
    }

    /// A rename carries the row on under the new name (dm_90_ca's "adoif" → "adoIf" gave
    /// two rows before): time and lines add up, the old name is listed; a line the game
    /// stamped with the old name after the rename still counts for him; a player who then
    /// joins with the old name is someone else.
    #[test]
    fn a_rename_keeps_one_row() {
        let ev = vec![
            GameEvent::at(0.0, Kind::Join, player("adoif", None)),
            GameEvent::at(5.0, Kind::Chat, chat("adoif")),
            GameEvent::at(7.0, Kind::Rename, player("adoIf", Some("adoif"))),
            GameEvent::at(8.0, Kind::Chat, chat("adoif")),
            GameEvent::at(9.0, Kind::Chat, chat("adoIf")),
            GameEvent::at(20.0, Kind::Join, player("adoif", None)),
            GameEvent::at(25.0, Kind::Chat, chat("adoif")),
            GameEvent::at(30.0, Kind::Leave, player("adoIf", None)),
        ];
        let s = summarize(&ev);
        let names: Vec<&str> = s.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["adoIf", "adoif"]);
        assert_eq!(s[0].other_names, ["adoif"]);
        assert_eq!(s[0].chat_lines, 3);
        assert!(
            (s[0].time_in_game - 30.0).abs() < 1e-9,
            "{}",
            s[0].time_in_game
        );
        assert!(s[1].other_names.is_empty());
        assert_eq!(s[1].chat_lines, 1);
        assert!(
            (s[1].time_in_game - 10.0).abs() < 1e-9,
            "{}",
            s[1].time_in_game
        );
    }
}
