//! CTF flag events of one Quake 3 connection, from two signals the server sends reliably:
//! the broadcast prints of the game module (baseq3 / OpenArena `g_team.c`: "NAME^7 got the RED
//! flag!", "... captured the BLUE flag!", "... returned the RED flag!", "The RED flag has
//! returned!"; one-flag CTF without the colour word; CPMA's centre print "RED scores:
//! Capture") and `CS_FLAGSTATUS` (configstring 23: one character per flag, red then blue, `0`
//! at base, `1` taken, `2` dropped; one-flag CTF one character, `1`..`3` taken, `4` dropped).
//! The prints name the player; the configstring also covers what nothing prints: a dropped
//! flag (its carrier known from the take) and a dropped flag's automatic return. Both come in
//! the same server frame (the game prints, then sets the status), hence in the same message:
//! a status change that a print of its message explains is not reported twice.
//! (The `EV_GLOBAL_TEAM_SOUND` event entities carry no player, and their "taken" sound is
//! skipped for a flag taken again within 10 s, so they are not used.)
use crate::gameevent::Flag;
use crate::q3::color::plain;

/// Which flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagTeam {
    /// The red team's flag.
    Red,
    /// The blue team's flag.
    Blue,
    /// The one flag of one-flag CTF.
    Neutral,
}

impl FlagTeam {
    fn word(self) -> &'static str {
        match self {
            FlagTeam::Red => "red",
            FlagTeam::Blue => "blue",
            FlagTeam::Neutral => "neutral",
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    /// The game's `TeamName` word.
    fn parse(w: &str) -> Option<FlagTeam> {
        match w {
            "RED" => Some(FlagTeam::Red),
            "BLUE" => Some(FlagTeam::Blue),
            _ => None,
        }
    }

    fn other(self) -> FlagTeam {
        match self {
            FlagTeam::Red => FlagTeam::Blue,
            FlagTeam::Blue => FlagTeam::Red,
            FlagTeam::Neutral => FlagTeam::Neutral,
        }
    }
}

/// What happened to the flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// A player took it (from its base or where it was dropped).
    Taken,
    /// Its carrier brought it home and scored.
    Captured,
    /// It went back to its base: returned by a player, or by the game after lying dropped.
    Returned,
    /// Its carrier lost it (known from `CS_FLAGSTATUS` only; no print says it).
    Dropped,
}

impl Action {
    fn word(self) -> &'static str {
        match self {
            Action::Taken => "taken",
            Action::Captured => "captured",
            Action::Returned => "returned",
            Action::Dropped => "dropped",
        }
    }
}

/// One flag print: who (raw name as the print has it; None when the game itself acts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// The player as the print names them, colour codes kept (the closing `^7` cut); None
    /// when no one is named (a flag's automatic return, CPMA's capture print).
    pub name_raw: Option<String>,
    /// Which flag.
    pub team: FlagTeam,
    /// What happened to it.
    pub action: Action,
}

/// A flag print's meaning, if it is one (`text`: the print's argument, colour codes kept).
pub fn parse_print(text: &str) -> Option<Notice> {
    let t = text.trim_end();
    if let Some(w) = t.strip_suffix(" scores: Capture") {
        // CPMA: the scoring team captured the other team's flag; no player named.
        let team = FlagTeam::parse(plain(w).trim())?.other();
        return Some(notice(None, team, Action::Captured));
    }
    if let Some((w, rest)) = t.split_once(" CAPTURED the flag!") {
        // Quake Live: "^1RED TEAM^3 CAPTURED the flag!^7 (NAME captured in 0:14.003)": the
        // scoring team captured the other team's flag.
        let team = FlagTeam::parse(plain(w).trim().strip_suffix(" TEAM")?)?.other();
        let name = rest
            .trim_start_matches("^7")
            .trim_start()
            .strip_prefix('(')
            .and_then(|r| r.rsplit_once(" captured in "))
            .map(|(name, _)| strip_colour_end(name).to_string());
        return Some(notice(name, team, Action::Captured));
    }
    if let Some(r) = t
        .strip_prefix("The ")
        .and_then(|r| r.strip_suffix(" has returned!"))
    {
        let team = match r {
            "flag" => FlagTeam::Neutral,
            _ => FlagTeam::parse(r.strip_suffix(" flag")?)?,
        };
        return Some(notice(None, team, Action::Returned));
    }
    let body = t.strip_suffix(" flag!")?;
    for (verb, action) in [
        (" got the", Action::Taken),
        (" captured the", Action::Captured),
        (" returned the", Action::Returned),
    ] {
        // The last occurrence: a name may hold the words itself.
        let split = match body.strip_suffix(verb) {
            Some(name) => Some((name, FlagTeam::Neutral)),
            None => body.rsplit_once(verb).and_then(|(name, w)| {
                let team = FlagTeam::parse(w.strip_prefix(' ')?)?;
                Some((name, team))
            }),
        };
        let Some((name, team)) = split else {
            continue;
        };
        // The game ends the name with a colour code (S_COLOR_WHITE; Quake Live's ^3).
        return Some(notice(
            Some(strip_colour_end(name).to_string()),
            team,
            action,
        ));
    }
    None
}

/// `name` without the colour code that ends it (`^7`, Quake Live's `^3`).
fn strip_colour_end(name: &str) -> &str {
    let b = name.as_bytes();
    match b {
        [.., b'^', c] if c.is_ascii_alphanumeric() => &name[..name.len() - 2],
        _ => name,
    }
}

fn notice(name_raw: Option<String>, team: FlagTeam, action: Action) -> Notice {
    Notice {
        name_raw,
        team,
        action,
    }
}

/// A flag's state in `CS_FLAGSTATUS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    AtBase,
    Taken,
    Dropped,
}

/// Each flag's state (red, blue, neutral) as a `CS_FLAGSTATUS` value gives it.
fn states(v: &str) -> [Option<State>; 3] {
    let b = v.trim().as_bytes();
    let two = |c: u8| match c {
        b'0' => Some(State::AtBase),
        b'1' => Some(State::Taken),
        b'2' => Some(State::Dropped),
        _ => None,
    };
    match b {
        [r, bl] => [two(*r), two(*bl), None],
        [n] => {
            let one = match n {
                b'0' => Some(State::AtBase),
                b'1'..=b'3' => Some(State::Taken),
                b'4' => Some(State::Dropped),
                _ => None,
            };
            [None, None, one]
        }
        _ => [None, None, None],
    }
}

/// A status change: the flag went to `to` (from `from`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Move {
    team: FlagTeam,
    from: State,
    to: State,
}

/// The flags of one connection: this message's prints and status changes, and each flag's
/// carrier (number and clean name, kept from the take: a carrier who disconnects drops the
/// flag after its configstring is gone).
#[derive(Debug, Default)]
pub struct Flags {
    carriers: [Option<(i32, String)>; 3],
    notices: Vec<Notice>,
    moves: Vec<Move>,
    /// A `map_restart` in this message: the status it resets is no flag event.
    quiet: bool,
    /// Something to look at at the end of this message (most messages have nothing).
    pub touched: bool,
}

const TEAMS: [FlagTeam; 3] = [FlagTeam::Red, FlagTeam::Blue, FlagTeam::Neutral];

impl Flags {
    /// A new level or a restart: no carriers; the status the level starts with is no event.
    pub fn reset(&mut self) {
        self.carriers = Default::default();
        self.notices.clear();
        self.moves.clear();
        self.quiet = true;
        self.touched = true;
    }

    /// A `print` or `cp` server command's argument.
    pub fn print(&mut self, text: &str) {
        if let Some(n) = parse_print(text) {
            self.notices.push(n);
            self.touched = true;
        }
    }

    /// `CS_FLAGSTATUS` changed from `old` to `new`.
    pub fn status(&mut self, old: &str, new: &str) {
        if self.quiet {
            return;
        }
        let (a, b) = (states(old), states(new));
        for team in TEAMS {
            if let (Some(from), Some(to)) = (a[team.index()], b[team.index()]) {
                if from != to {
                    self.moves.push(Move { team, from, to });
                    self.touched = true;
                }
            }
        }
    }

    /// The flag events of the message just read, in order: each print (its player found by
    /// raw name among `players`, the `CS_PLAYERS` configstrings), then each status change no
    /// print explains. A flag back at base from being carried with no capture print is a
    /// reset (round end), not reported.
    pub fn take_events(&mut self, players: &[String]) -> Vec<Flag> {
        self.quiet = false;
        self.touched = false;
        if self.notices.is_empty() && self.moves.is_empty() {
            return Vec::new();
        }
        let mut out = Vec::new();
        for n in std::mem::take(&mut self.notices) {
            let who = n
                .name_raw
                .as_deref()
                .map(|raw| match super::player_named(players, raw) {
                    Some((num, name)) => (Some(num), name),
                    None => (None, plain(raw)),
                });
            let slot = &mut self.carriers[n.team.index()];
            *slot = match (n.action, &who) {
                (Action::Taken, Some((Some(num), name))) => Some((*num, name.clone())),
                _ => None,
            };
            let (num, name) = who.map_or((None, None), |(n, s)| (n, Some(s)));
            out.push((n.team, n.action, num, name));
        }
        for m in std::mem::take(&mut self.moves) {
            let explained = out.iter().any(|(t, a, ..)| {
                *t == m.team
                    && match m.to {
                        State::Taken => *a == Action::Taken,
                        State::AtBase => matches!(a, Action::Captured | Action::Returned),
                        State::Dropped => false,
                    }
            });
            if explained {
                continue;
            }
            let carrier = self.carriers[m.team.index()].take();
            let action = match (m.from, m.to) {
                (_, State::Dropped) => Action::Dropped,
                (_, State::Taken) => Action::Taken,
                (State::Dropped, State::AtBase) => Action::Returned,
                _ => continue,
            };
            let (num, name) = match carrier.filter(|_| action == Action::Dropped) {
                Some((n, s)) => (Some(n), Some(s)),
                None => (None, None),
            };
            out.push((m.team, action, num, name));
        }
        out.into_iter()
            .map(|(team, action, num, name)| Flag {
                team: team.word().to_string(),
                action: action.word().to_string(),
                name,
                num,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(name: Option<&str>, team: FlagTeam, action: Action) -> Option<Notice> {
        Some(notice(name.map(str::to_string), team, action))
    }

    #[test]
    fn quake_live_print_forms() {
        use Action::*;
        use FlagTeam::*;
        assert_eq!(
            parse_print("hated_one^3 got the RED flag!\n"),
            n(Some("hated_one"), Red, Taken)
        );
        assert_eq!(
            parse_print("^7P^7L^7N^7s^7 ns5venomxxxxxxx^3 returned the RED flag!\n"),
            n(Some("^7P^7L^7N^7s^7 ns5venomxxxxxxx"), Red, Returned)
        );
        assert_eq!(
            parse_print(
                "^1RED TEAM^3 CAPTURED the flag!^7 ((^3*^7_^3*^7)^7 fAiRy^3C^7aKe captured in 0:14.003)\n"
            ),
            n(Some("(^3*^7_^3*^7)^7 fAiRy^3C^7aKe"), Blue, Captured)
        );
        // The clan tag and name of a print are the player's configstring's `cn` and `n`.
        let players = vec![
            String::new(),
            "n\\fAiRy^3C^7aKe\\cn\\(^3*^7_^3*^7)\\t\\1".to_string(),
        ];
        assert_eq!(
            super::super::player_named(&players, "(^3*^7_^3*^7)^7 fAiRy^3C^7aKe"),
            Some((1, "fAiRyCaKe".to_string()))
        );
    }

    #[test]
    fn print_forms() {
        use Action::*;
        use FlagTeam::*;
        assert_eq!(
            parse_print("Kyonshi^7 got the RED flag!\n"),
            n(Some("Kyonshi"), Red, Taken)
        );
        assert_eq!(
            parse_print("^1A got the flag!^7 captured the BLUE flag!"),
            n(Some("^1A got the flag!"), Blue, Captured)
        );
        assert_eq!(
            parse_print("Major^7 returned the BLUE flag!\n"),
            n(Some("Major"), Blue, Returned)
        );
        assert_eq!(
            parse_print("The RED flag has returned!\n"),
            n(None, Red, Returned)
        );
        assert_eq!(
            parse_print("The flag has returned!\n"),
            n(None, Neutral, Returned)
        );
        assert_eq!(
            parse_print("Sarge^7 got the flag!\n"),
            n(Some("Sarge"), Neutral, Taken)
        );
        assert_eq!(parse_print("RED scores: Capture"), n(None, Blue, Captured));
        assert_eq!(parse_print("Major^7 fragged BLUE's flag carrier!\n"), None);
        assert_eq!(parse_print("X got the GREEN flag!"), None);
        assert_eq!(parse_print("RED scores: Touch"), None);
        assert_eq!(parse_print(""), None);
    }

    #[test]
    fn status_forms() {
        assert_eq!(
            states("02"),
            [Some(State::AtBase), Some(State::Dropped), None]
        );
        assert_eq!(states("3"), [None, None, Some(State::Taken)]);
        assert_eq!(states("4"), [None, None, Some(State::Dropped)]);
        assert_eq!(states(""), [None, None, None]);
        assert_eq!(states("x*"), [None, None, None]);
    }

    fn players() -> Vec<String> {
        vec!["n\\Sarge\\t\\1".into(), "n\\^1Kyon\\t\\2".into()]
    }

    fn ev(f: &Flag) -> (&str, &str, Option<i32>, Option<&str>) {
        (&f.team, &f.action, f.num, f.name.as_deref())
    }

    #[test]
    fn prints_and_status_give_one_event_each() {
        let mut f = Flags::default();
        f.status("00", "00");
        assert!(f.take_events(&players()).is_empty());
        // Taken: the print names the player, the status change is the same event.
        f.print("^1Kyon^7 got the RED flag!\n");
        f.status("00", "10");
        let v = f.take_events(&players());
        assert_eq!(
            v.iter().map(ev).collect::<Vec<_>>(),
            [("red", "taken", Some(1), Some("Kyon"))]
        );
        // Dropped: nothing prints it; the carrier is known from the take, even gone.
        f.status("10", "20");
        let v = f.take_events(&[]);
        assert_eq!(
            v.iter().map(ev).collect::<Vec<_>>(),
            [("red", "dropped", Some(1), Some("Kyon"))]
        );
        // Returned by nobody (the dropped flag's timeout).
        f.status("20", "00");
        let v = f.take_events(&players());
        assert_eq!(
            v.iter().map(ev).collect::<Vec<_>>(),
            [("red", "returned", None, None)]
        );
        // A carried flag back at base with no capture print: a reset, no event.
        f.status("01", "00");
        assert!(f.take_events(&players()).is_empty());
        // Captured, print after the status in the message.
        f.status("01", "00");
        f.print("Sarge^7 captured the BLUE flag!\n");
        let v = f.take_events(&players());
        assert_eq!(
            v.iter().map(ev).collect::<Vec<_>>(),
            [("blue", "captured", Some(0), Some("Sarge"))]
        );
        // A restart's status reset is no event.
        f.reset();
        f.status("20", "00");
        assert!(f.take_events(&players()).is_empty());
        // CPMA: taken and captured without names.
        f.status("00", "01");
        assert_eq!(f.take_events(&players())[0].action, "taken");
        f.print("RED scores: Capture");
        f.status("01", "00");
        let v = f.take_events(&players());
        assert_eq!(
            v.iter().map(ev).collect::<Vec<_>>(),
            [("blue", "captured", None, None)]
        );
    }
}
