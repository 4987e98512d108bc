//! Names learned after the events that needed them. A capture that starts mid-session has
//! no player configstrings: its kills name client numbers only. Later messages can still
//! tell who a number was (a player's disconnect notice just before his slot is cleared, his
//! own chat coming back from the server, an unchanged name re-sent with a team change),
//! and a connection's own player is the same number and name for as long as it lasts. Each
//! game's extractor reports what it learned; the events sink fills the unnamed events of
//! the same server in the time each name held, before events are merged.
use std::collections::HashMap;

use super::{Detail, GameEvent};

/// Client `num` was called `name` from `from` to `to` (the events' own clock).
#[derive(Debug, Clone, PartialEq)]
pub struct LearnedName {
    pub num: i32,
    pub name: String,
    pub from: f64,
    pub to: f64,
}

impl LearnedName {
    fn covers(&self, t: f64) -> bool {
        self.from <= t && t <= self.to
    }
}

/// The names learned in one input, by server and client number.
#[derive(Default)]
pub struct Learned {
    by: HashMap<(Option<String>, i32), Vec<LearnedName>>,
}

impl Learned {
    pub fn is_empty(&self) -> bool {
        self.by.is_empty()
    }

    /// A name learned on `server`'s connections (None: a demo's).
    pub fn add(&mut self, server: Option<&str>, l: LearnedName) {
        self.by
            .entry((server.map(str::to_string), l.num))
            .or_default()
            .push(l);
    }

    /// Name the unnamed players of `e` (kills, chat, scores) whose number a name learned
    /// on `e`'s server covers at the event's time.
    pub fn fill(&self, e: &mut GameEvent) {
        let t = e.time;
        let server = e.server.clone();
        let name_of = |num: Option<i32>| {
            self.by
                .get(&(server.clone(), num?))?
                .iter()
                .find(|l| l.covers(t))
                .map(|l| l.name.clone())
        };
        match &mut e.detail {
            Detail::Kill(k) => {
                if k.killer.is_none() {
                    k.killer = name_of(k.killer_num);
                }
                if k.victim.is_none() {
                    k.victim = name_of(k.victim_num);
                }
            }
            Detail::Chat(c) if c.name.is_none() && c.mode != "console" => c.name = name_of(c.num),
            Detail::Score(s) if s.name.is_empty() => {
                if let Some(n) = name_of(Some(s.num)) {
                    s.name = n;
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gameevent::{Kill, Kind};

    fn kill(time: f64, killer: i32, victim: i32) -> GameEvent {
        GameEvent::at(
            time,
            Kind::Kill,
            Detail::Kill(Kill {
                killer: None,
                victim: Some("Known".into()),
                killer_num: Some(killer),
                victim_num: Some(victim),
                means: "MOD_SHOTGUN".into(),
                suicide: false,
                team_kill: false,
            }),
        )
    }

    #[test]
    fn only_unnamed_numbers_in_the_names_time() {
        let mut learned = Learned::default();
        learned.add(
            None,
            LearnedName {
                num: 1,
                name: "Ann".into(),
                from: 10.0,
                to: 20.0,
            },
        );
        let names = |e: &GameEvent| match &e.detail {
            Detail::Kill(k) => (k.killer.clone(), k.victim.clone()),
            _ => unreachable!(),
        };
        let mut inside = kill(15.0, 1, 1);
        learned.fill(&mut inside);
        // A name already known is kept.
        assert_eq!(names(&inside), (Some("Ann".into()), Some("Known".into())));
        let mut before = kill(9.0, 1, 2);
        learned.fill(&mut before);
        assert_eq!(names(&before), (None, Some("Known".into())));
        let mut other = kill(15.0, 2, 3);
        learned.fill(&mut other);
        assert_eq!(names(&other), (None, Some("Known".into())));
        // Another server's slot 1 is someone else.
        let mut elsewhere = kill(15.0, 1, 2);
        elsewhere.server = Some("10.0.0.1:27960".into());
        learned.fill(&mut elsewhere);
        assert_eq!(names(&elsewhere), (None, Some("Known".into())));
    }
}
