//! The scoreboard commands the server sends (`scores`, and Quake Live's own per game type:
//! `scores_duel`, `scores_ca`, `scores_ctf`, `rrscores`; not yet `scores_tdm`, `scores_ft`,
//! `scores_ad`, `scores_rr` and the older forms, of which no demo here has one):
//! each player's client number, score and ping. Only these three are read; the layouts are
//! those the games write (Quake 3's `DeathmatchScoreboardMessage`; Quake Live's, as its
//! demos show them and Uber Demo Tools reads them), told apart by their argument counts.

/// One player's row: (client number, score, ping).
pub type Row = (i32, i32, i32);

/// The rows of a scoreboard command `cmd` with arguments `rest` (after the command word),
/// or `None` when it is not one whose layout is known or its arguments do not fit it.
/// `quake_live`: the demo's protocol is Quake Live's (its `scores` has another layout);
/// `protocol`: its number (91 dropped a column from `scores_ctf`).
pub fn parse(cmd: &str, rest: &str, quake_live: bool, protocol: u32) -> Option<Vec<Row>> {
    let v: Vec<&str> = rest.split_ascii_whitespace().collect();
    match (cmd, quake_live) {
        ("scores", false) => quake3(&v),
        ("scores", true) => {
            // The count, two team scores, then 18 numbers a player.
            let n = count(&v, 0)?;
            rows(&v, 3, n, 18, 0, 1, 2)
        }
        ("scores_duel", true) => {
            // The count, then the client number and as many numbers a player.
            let n = count(&v, 0)?;
            if n == 0 || (v.len() - 1) % n != 0 {
                return None;
            }
            let stride = (v.len() - 1) / n;
            (stride >= 3).then_some(())?;
            rows(&v, 1, n, stride, 0, 1, 2)
        }
        ("scores_ca", true) => {
            // The count, two team scores; a player's client number, team, (a subscriber
            // flag in the longer form), score, ping, ... in 16 or 17 numbers.
            let n = count(&v, 0)?;
            let stride = if v.len() == 3 + n * 17 { 17 } else { 16 };
            let skip = stride - 16;
            rows(&v, 3, n, stride, 0, 2 + skip, 3 + skip)
        }
        ("scores_ctf", true) => {
            // 34 team numbers, the count, (the team scores), then per player: client
            // number, team, (a subscriber flag up to protocol 90), score, ping, ...
            let n = count(&v, 34)?;
            let (stride, skip) = if protocol <= 90 { (19, 1) } else { (17, 0) };
            let head = if protocol <= 90 && v.len() <= 35 + n * 19 {
                35
            } else {
                37
            };
            rows(&v, head, n, stride, 0, 2 + skip, 3 + skip)
        }
        ("rrscores", true) => {
            // Red rover (protocol 73): the count, two team scores, then 19 numbers a
            // player: client number, score, a number, ping, ...
            let n = count(&v, 0)?;
            rows(&v, 3, n, 19, 0, 1, 3)
        }
        _ => None,
    }
}

/// baseq3 sends the count, the two team scores and 14 numbers per player; OpenArena one
/// more header number and 15 per player.
fn quake3(v: &[&str]) -> Option<Vec<Row>> {
    let n = count(v, 0)?;
    let (head, per) = [(3, 14), (4, 15)]
        .into_iter()
        .find(|&(h, p)| v.len() == h + n * p)?;
    // Every number of the Quake 3 forms is an integer.
    v.iter().all(|w| w.parse::<i32>().is_ok()).then_some(())?;
    rows(v, head, n, per, 0, 1, 2)
}

/// The player count at `i` (at most 64).
fn count(v: &[&str], i: usize) -> Option<usize> {
    usize::try_from(v.get(i)?.parse::<i32>().ok()?)
        .ok()
        .filter(|&n| n <= 64)
}

/// `n` rows of `stride` numbers from `head` on (exactly filling `v`), each giving its
/// client number, score and ping at the offsets given.
fn rows(
    v: &[&str],
    head: usize,
    n: usize,
    stride: usize,
    client: usize,
    score: usize,
    ping: usize,
) -> Option<Vec<Row>> {
    if v.len() != head + n * stride {
        return None;
    }
    let int = |w: &str| w.parse::<i32>().ok();
    v[head..]
        .chunks(stride)
        .map(|c| Some((int(c[client])?, int(c[score])?, int(c[ping])?)))
        .filter(|r| r.is_none_or(|(num, _, _)| (0..64).contains(&num)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quake3_forms() {
        let p = |s: &str| parse("scores", s, false, 68);
        assert_eq!(
            p("1 0 0 7000 3 5 9 0 0 0 0 0 0 0 0 0 0 0 0"),
            Some(vec![(3, 5, 9)])
        );
        assert_eq!(
            p("1 0 0 3 5 9 0 0 0 0 0 0 0 0 0 0 0"),
            Some(vec![(3, 5, 9)])
        );
        assert_eq!(p("2 0 0 x"), None);
        assert_eq!(p(""), None);
    }

    #[test]
    fn quake_live_forms() {
        // A duel of protocol 91: two players of 91 numbers each (floats among them).
        let mut duel = vec!["2".to_string()];
        for (client, score, ping) in [(0, 11, 2), (1, 5, 35)] {
            duel.extend([client, score, ping].map(|x| x.to_string()));
            duel.extend((0..88).map(|i| if i == 10 { "7.13".into() } else { "0".into() }));
        }
        assert_eq!(
            parse("scores_duel", &duel.join(" "), true, 91),
            Some(vec![(0, 11, 2), (1, 5, 35)])
        );
        // Clan arena, the 17-number form: client, team, subscriber, score, ping, ...
        let mut ca = vec!["1", "5", "10", "2", "2", "0", "56", "40"];
        ca.extend(["0"; 12]);
        assert_eq!(
            parse("scores_ca", &ca.join(" "), true, 90),
            Some(vec![(2, 56, 40)])
        );
        // Quake Live's `scores` is not Quake 3's.
        assert_eq!(
            parse("scores", "1 0 0 3 5 9 0 0 0 0 0 0 0 0 0 0 0", true, 73),
            None
        );
        assert_eq!(parse("scores_tdm", "0", true, 90), None);
    }
}
