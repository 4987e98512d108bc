//! One timeline from the events of several connections (and both directions of each): an
//! event several flows saw is kept once, with every flow that saw it. Kills, chat and match
//! flow merge by server, content and game time; player events merge by the player slot's
//! state (a join of a player already in is a repeat, whoever reports it).
use std::collections::HashMap;

use super::{Detail, GameEvent, Kind};

/// Game-time distance (ms) under which two reports of the same content are one event.
/// Clients receive snapshots at different server frames, and a client's own chat command
/// reaches the capture before the server echoes it, so the reports differ by up to a few
/// snapshots (more under loss).
const WINDOW_MS: i64 = 3000;
/// The same window in wall-clock seconds, for events without game time.
const WINDOW_S: f64 = 3.0;

/// Player slot state per (server, client number): name and team.
type Slots = HashMap<(Option<String>, i32), (String, Option<String>)>;

/// Merge and order events (any order in, time order out).
pub fn merge(mut events: Vec<GameEvent>) -> Vec<GameEvent> {
    events.sort_by(|a, b| a.time.total_cmp(&b.time));
    let mut out: Vec<GameEvent> = Vec::with_capacity(events.len());
    let mut slots: Slots = HashMap::new();
    let mut maps: HashMap<Option<String>, String> = HashMap::new();
    for e in events {
        if let Some(i) = find_same(&out, &e) {
            absorb(&mut out[i], e);
            continue;
        }
        let keep = match &e.detail {
            Detail::Player(_) => player_is_new(&mut slots, &e),
            Detail::Map(m) if !m.restart => {
                maps.insert(e.server.clone(), m.map.clone()).as_ref() != Some(&m.map)
            }
            _ => true,
        };
        if keep {
            out.push(e);
        } else if let Some(i) = last_of_player(&out, &e) {
            // A repeat still tells which flows saw the player.
            add_flows(&mut out[i], &e.flows);
        }
    }
    out
}

/// Index of an earlier event with the same content within the window.
fn find_same(out: &[GameEvent], e: &GameEvent) -> Option<usize> {
    if matches!(e.detail, Detail::Player(_)) {
        return None;
    }
    if matches!(e.detail, Detail::Map(ref m) if !m.restart) {
        return None;
    }
    out.iter()
        .enumerate()
        .rev()
        .take_while(|(_, o)| e.time - o.time <= WINDOW_S * 4.0)
        .find(|(_, o)| o.kind == e.kind && o.server == e.server && close(o, e) && same(o, e))
        .map(|(i, _)| i)
}

fn close(a: &GameEvent, b: &GameEvent) -> bool {
    match (a.game_time, b.game_time) {
        (Some(x), Some(y)) if a.server_clock && b.server_clock => (x - y).abs() <= WINDOW_MS,
        _ => (a.time - b.time).abs() <= WINDOW_S,
    }
}

/// Same content (the fields each report has, ignoring what only some know).
fn same(a: &GameEvent, b: &GameEvent) -> bool {
    match (&a.detail, &b.detail) {
        (Detail::Kill(x), Detail::Kill(y)) => {
            (x.victim_num, x.killer_num, &x.means) == (y.victim_num, y.killer_num, &y.means)
        }
        (Detail::Chat(x), Detail::Chat(y)) => {
            x.name == y.name && x.text == y.text && x.team == y.team && x.mode == y.mode
        }
        (Detail::Score(x), Detail::Score(y)) => (x.num, x.score) == (y.num, y.score),
        // A connection that missed the take does not know who dropped the flag. A flag is
        // taken and dropped again and again: one connection's (or one demo's) two reports
        // are two events, even at one game time (a demo whose snapshots stopped decoding).
        (Detail::Flag(x), Detail::Flag(y)) => {
            b.flows.iter().any(|f| !a.flows.contains(f))
                && (&x.team, &x.action) == (&y.team, &y.action)
                && (x.num.is_none() || y.num.is_none() || x.num == y.num)
        }
        (x, y) => x == y,
    }
}

/// Fold a repeat into the kept event: its flows, and what only it knows.
fn absorb(kept: &mut GameEvent, e: GameEvent) {
    add_flows(kept, &e.flows);
    match (&mut kept.detail, e.detail) {
        (Detail::Chat(k), Detail::Chat(n)) => {
            if k.to.is_none() {
                k.to = n.to;
            }
            if k.num.is_none() {
                k.num = n.num;
            }
        }
        (Detail::Flag(k), Detail::Flag(n)) if k.num.is_none() => {
            k.num = n.num;
            k.name = n.name;
        }
        _ => {}
    }
}

fn add_flows(kept: &mut GameEvent, flows: &[u32]) {
    for f in flows {
        if !kept.flows.contains(f) {
            kept.flows.push(*f);
        }
    }
    kept.flows.sort_unstable();
}

/// Apply a player event to the slot state; false when it changes nothing (a repeat).
fn player_is_new(slots: &mut Slots, e: &GameEvent) -> bool {
    let Detail::Player(p) = &e.detail else {
        return true;
    };
    let key = (e.server.clone(), p.num);
    let now = (p.name.clone(), p.team.clone());
    match e.kind {
        Kind::Join => slots.insert(key, now.clone()) != Some(now),
        Kind::Leave => slots.remove(&key).is_some(),
        _ => match slots.get_mut(&key) {
            Some(s) if *s == now => false,
            Some(s) => {
                *s = now;
                true
            }
            None => {
                slots.insert(key, now);
                true
            }
        },
    }
}

fn last_of_player(out: &[GameEvent], e: &GameEvent) -> Option<usize> {
    let Detail::Player(p) = &e.detail else {
        return None;
    };
    out.iter().rposition(|o| {
        o.kind == e.kind
            && o.server == e.server
            && matches!(&o.detail, Detail::Player(q) if q.num == p.num && q.name == p.name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gameevent::Flag;

    fn flag(flow: u32, game_time: i64, num: Option<i32>) -> GameEvent {
        GameEvent {
            kind: Kind::Flag,
            time: 10.0 + game_time as f64 / 1000.0,
            game_time: Some(game_time),
            session_time: None,
            flows: vec![flow],
            server: Some("127.0.0.1:27960".into()),
            server_clock: true,
            detail: Detail::Flag(Flag {
                team: "red".into(),
                action: "dropped".into(),
                name: num.map(|n| format!("P{n}")),
                num,
            }),
        }
    }

    #[test]
    fn a_flag_event_two_connections_saw_is_one() {
        // The second connection missed the take, so it does not know the carrier.
        let out = merge(vec![flag(1, 5000, Some(3)), flag(2, 5050, None)]);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].flows, [1, 2]);
        assert!(matches!(&out[0].detail, Detail::Flag(f) if f.num == Some(3)));
        let out = merge(vec![flag(2, 5000, None), flag(1, 5050, Some(3))]);
        assert!(
            matches!(&out[..], [e] if matches!(&e.detail, Detail::Flag(f) if f.name.as_deref() == Some("P3")))
        );
        // Two carriers are two events.
        assert_eq!(
            merge(vec![flag(1, 5000, Some(3)), flag(2, 5050, Some(4))]).len(),
            2
        );
        // One connection's (or one demo's) two reports are two events.
        assert_eq!(
            merge(vec![flag(1, 5000, None), flag(1, 5000, None)]).len(),
            2
        );
        let mut demo = vec![flag(1, 5000, None), flag(1, 5000, None)];
        demo.iter_mut().for_each(|e| e.flows.clear());
        assert_eq!(merge(demo).len(), 2);
    }
}
