//! One timeline from the events of several connections (and both directions of each): an
//! event several flows saw is kept once, with every flow that saw it. Kills, chat and match
//! flow merge by server, content and game time, each report by its source: one connection
//! (or demo) reports an event once from what the server sent it (one reliable command, one
//! event entity) and once at most from its own command (its chat as it sent it), so two
//! reports of one source are two events however alike (a repeated kill, a chat line said
//! twice), and a kept event takes at most one report of each source. Player events merge by
//! the player slot's state (a join of a player already in is a repeat, whoever reports it).
use std::collections::{HashMap, VecDeque};

use super::{Detail, GameEvent, Kind};

/// Game-time distance (ms) under which two reports of the same content are one event.
/// Clients receive snapshots at different server frames, and a client's own chat command
/// reaches the capture before the server echoes it, so the reports differ by up to a few
/// snapshots (more under loss).
const WINDOW_MS: i64 = 3000;
/// The same window in wall-clock seconds, for events without game time.
const WINDOW_S: f64 = 3.0;

/// Player slot state per (server, client number): name and team, `None` once left.
type Slots = HashMap<(Option<String>, i32), Option<(String, Option<String>)>>;

/// Who reported an event: its input, its flow (0 for a demo file: one source) and whether
/// it came from the client's own command.
type Source = (usize, u32, bool);

fn source(input: usize, e: &GameEvent) -> Source {
    (input, e.flows.first().copied().unwrap_or(0), e.from_client)
}

/// Merge and order the events of one input (any order in, time order out).
pub fn merge(events: Vec<GameEvent>) -> Vec<GameEvent> {
    merge_sources(events.into_iter().map(|e| (0, e)).collect())
}

/// Merge and order events tagged with their input.
fn merge_sources(mut events: Vec<(usize, GameEvent)>) -> Vec<GameEvent> {
    events.sort_by(|a, b| a.1.time.total_cmp(&b.1.time));
    let mut out: Vec<GameEvent> = Vec::with_capacity(events.len());
    // Per kept event, the sources whose reports it holds.
    let mut sources: Vec<Vec<Source>> = Vec::with_capacity(events.len());
    let mut slots: Slots = HashMap::new();
    let mut maps: HashMap<Option<String>, String> = HashMap::new();
    for (input, e) in events {
        if let Some(i) = find_same(&out, &sources, &e, source(input, &e)) {
            sources[i].push(source(input, &e));
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
            sources.push(vec![source(input, &e)]);
            out.push(e);
        } else if let Some(i) = last_of_player(&out, &e) {
            // A repeat still tells which flows saw the player.
            add_flows(&mut out[i], &e.flows);
        }
    }
    out
}

/// Index of an earlier event with the same content within the window that holds no report
/// of `e`'s source yet.
fn find_same(
    out: &[GameEvent],
    sources: &[Vec<Source>],
    e: &GameEvent,
    from: Source,
) -> Option<usize> {
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
        .find(|(i, o)| {
            o.kind == e.kind
                && o.server == e.server
                && close(o, e)
                && same(o, e)
                && !sources[*i].contains(&from)
        })
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
        // A connection that missed the take does not know who dropped the flag.
        (Detail::Flag(x), Detail::Flag(y)) => {
            (&x.team, &x.action) == (&y.team, &y.action)
                && (x.num.is_none() || y.num.is_none() || x.num == y.num)
        }
        (x, y) => x == y,
    }
}

/// Events that two inputs' reports of one session share: kills and chat on the server's
/// clock (Quake 3 captures and demos, QuakeWorld MVDs).
fn shared_kind(e: &GameEvent) -> bool {
    e.server_clock && e.game_time.is_some() && matches!(e.kind, Kind::Kill | Kind::Chat)
}

/// When `b` is a report of the session `a` reports (a capture and a client's demo of it, two
/// clients' demos, the two sides of a relay), the offset from `b`'s clock to `a`'s: at least
/// 3 of their kills and chat lines, and half of the fewer's, pair up one to one by content
/// within `WINDOW_MS` of game time. Two sessions share no such run of frags at the same
/// game times.
pub fn session_offset(a: &[GameEvent], b: &[GameEvent]) -> Option<f64> {
    let xs: Vec<&GameEvent> = a.iter().filter(|e| shared_kind(e)).collect();
    let ys: Vec<&GameEvent> = b.iter().filter(|e| shared_kind(e)).collect();
    let mut used = vec![false; xs.len()];
    let mut offsets = Vec::new();
    for y in &ys {
        let hit = xs
            .iter()
            .enumerate()
            .position(|(i, x)| !used[i] && x.kind == y.kind && close(x, y) && same(x, y));
        if let Some(i) = hit {
            used[i] = true;
            offsets.push(xs[i].time - y.time);
        }
    }
    let fewer = xs.len().min(ys.len());
    if offsets.len() < 3 || offsets.len() * 2 < fewer {
        return None;
    }
    offsets.sort_by(f64::total_cmp);
    Some(offsets[offsets.len() / 2])
}

/// One timeline from several inputs' events that report one session (see
/// [`session_offset`]): `inputs[0]` gives the clock and the server; each event the inputs
/// share is kept once, with what each report knows.
pub fn merge_session(mut inputs: Vec<Vec<GameEvent>>) -> Vec<GameEvent> {
    let Some(base) = inputs.first() else {
        return Vec::new();
    };
    // The session's server: another vantage names it by another address (a relay's, a
    // proxy's), a demo by none. A base of several servers keeps the others' addresses.
    let server = base.iter().find_map(|e| e.server.clone());
    let one_server = base
        .iter()
        .all(|e| e.server.is_none() || e.server == server);
    // Session time as the base counts it (captures: from its first packet).
    let zero = base.iter().find_map(|e| e.session_time.map(|s| e.time - s));
    let offsets: Vec<f64> = inputs
        .iter()
        .map(|b| session_offset(base, b).unwrap_or(0.0))
        .collect();
    let mut all = Vec::new();
    for (i, offset) in offsets.into_iter().enumerate() {
        for mut e in std::mem::take(&mut inputs[i]) {
            e.time += offset;
            if i > 0 && (one_server || e.server.is_none()) {
                e.server.clone_from(&server);
            }
            if let Some(z) = zero {
                e.session_time = Some(e.time - z);
            }
            all.push((i, e));
        }
    }
    merge_sources(all)
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
        (Detail::Kill(k), Detail::Kill(n)) => {
            if k.killer.is_none() {
                k.killer = n.killer;
            }
            if k.victim.is_none() {
                k.victim = n.victim;
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

/// Apply a player event to the slot state; false when it changes nothing (a repeat). A
/// slot never seen before (a capture that began mid-session) takes any event as new, a
/// leave included; a slot already left takes a second leave as a repeat.
fn player_is_new(slots: &mut Slots, e: &GameEvent) -> bool {
    let Detail::Player(p) = &e.detail else {
        return true;
    };
    let key = (e.server.clone(), p.num);
    if e.kind == Kind::Leave {
        return slots.insert(key, None) != Some(None);
    }
    let now = Some((p.name.clone(), p.team.clone()));
    match e.kind {
        Kind::Join => slots.insert(key, now.clone()) != Some(now),
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

/// How long (capture time, seconds) a follow holds a new event for the other connections'
/// reports of it before handing it out ([`LiveMerge`]): the clients of one server get an
/// event in snapshots a few server frames and their pings apart.
pub const HOLD_S: f64 = 0.5;

/// The merge of a followed input, decided with a watermark: events come in as the flows
/// report them; one is handed out once capture time is [`HOLD_S`] past it, and is still
/// kept (handed out, not repeated) as long as a later report of it can come
/// (`4 × WINDOW_S`), so an event several connections saw comes once. Memory: the events of
/// the last few seconds, and each server's slots and map.
#[derive(Debug, Default)]
pub struct LiveMerge {
    kept: VecDeque<GameEvent>,
    sources: VecDeque<Vec<Source>>,
    /// Of `kept`, the first this many were handed out.
    told: usize,
    slots: Slots,
    maps: HashMap<Option<String>, String>,
}

impl LiveMerge {
    /// No event yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// One report, merged as [`merge`] merges it into the events before it.
    pub fn push(&mut self, e: GameEvent) {
        let from = source(0, &e);
        let kept = self.kept.make_contiguous();
        let sources = self.sources.make_contiguous();
        if let Some(i) = find_same(kept, sources, &e, from) {
            sources[i].push(from);
            absorb(&mut kept[i], e);
            return;
        }
        let keep = match &e.detail {
            Detail::Player(_) => player_is_new(&mut self.slots, &e),
            Detail::Map(m) if !m.restart => {
                self.maps.insert(e.server.clone(), m.map.clone()).as_ref() != Some(&m.map)
            }
            _ => true,
        };
        if keep {
            // In time order among those not handed out yet (as the sort of `merge`).
            let mut at = self.kept.len();
            while at > self.told && self.kept[at - 1].time > e.time {
                at -= 1;
            }
            self.sources.insert(at, vec![from]);
            self.kept.insert(at, e);
        } else if let Some(i) = last_of_player(kept, &e) {
            add_flows(&mut kept[i], &e.flows);
        }
    }

    /// Capture time reached `now`: hand out the events [`HOLD_S`] older, in time order, and
    /// forget those no report can join any more.
    pub fn advance(
        &mut self,
        now: f64,
        out: &mut dyn FnMut(&GameEvent) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        while let Some(e) = self.kept.get(self.told) {
            if e.time + HOLD_S > now {
                break;
            }
            out(e)?;
            self.told += 1;
        }
        while self.told > 0 && self.kept.front().is_some_and(|e| now - e.time > WINDOW_S * 4.0) {
            self.kept.pop_front();
            self.sources.pop_front();
            self.told -= 1;
        }
        Ok(())
    }

    /// End of the input: hand out every event held.
    pub fn finish(
        &mut self,
        out: &mut dyn FnMut(&GameEvent) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        self.advance(f64::INFINITY, out)
    }
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
            from_client: false,
            detail: Detail::Flag(Flag {
                team: "red".into(),
                action: "dropped".into(),
                name: num.map(|n| format!("P{n}")),
                num,
            }),
        }
    }

    fn kill(flow: Option<u32>, game_time: i64) -> GameEvent {
        let mut e = flag(flow.unwrap_or(0), game_time, None);
        e.flows = flow.into_iter().collect();
        e.kind = Kind::Kill;
        e.detail = Detail::Kill(crate::gameevent::Kill {
            killer: Some("A".into()),
            victim: Some("B".into()),
            killer_num: Some(1),
            victim_num: Some(2),
            means: "MOD_RAILGUN".into(),
            suicide: false,
            team_kill: false,
        });
        e
    }

    fn chat(flow: u32, game_time: i64, from_client: bool) -> GameEvent {
        let mut e = flag(flow, game_time, None);
        e.kind = Kind::Chat;
        e.from_client = from_client;
        e.detail = Detail::Chat(crate::gameevent::Chat {
            clan: None,
            name: Some("A".into()),
            num: None,
            text: "gg".into(),
            text_raw: "gg".into(),
            team: false,
            to: None,
            mode: "say",
        });
        e
    }

    #[test]
    fn repeated_events_of_one_source_are_kept_and_copies_merge_by_source() {
        // The same frag twice within a second, seen by one connection: two kills.
        assert_eq!(
            merge(vec![kill(Some(1), 5000), kill(Some(1), 5800)]).len(),
            2
        );
        // ... and by a demo (no flow): two kills.
        assert_eq!(merge(vec![kill(None, 5000), kill(None, 5800)]).len(), 2);
        // Two connections saw both: still two, each with both flows.
        let out = merge(vec![
            kill(Some(1), 5000),
            kill(Some(2), 5050),
            kill(Some(1), 5800),
            kill(Some(2), 5850),
        ]);
        assert_eq!(out.len(), 2);
        assert!(out.iter().all(|e| e.flows == [1, 2]));
        // A chat line said twice: each command and its echo are one line.
        let out = merge(vec![
            chat(1, 1000, true),
            chat(1, 1050, false),
            chat(2, 1060, false),
            chat(1, 1500, true),
            chat(1, 1550, false),
            chat(2, 1560, false),
        ]);
        assert_eq!(out.len(), 2, "{out:#?}");
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
