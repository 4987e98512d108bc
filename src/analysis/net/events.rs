//! Lag events: windows where the ping rose well above the connection's median, and loss
//! bursts, found on the fixed bins of the accumulation.
use super::acc::{Bin, FlowAcc, RttMethod, BIN_S, STALL_MIN_S2C};
use super::report::{bins_loss, Both, LagEvent};
use crate::flow::Dir;

/// A ping this far above the median (at least this many ms, or the median again) is lag.
const PING_RISE_MIN_MS: f64 = 50.0;
/// A bin needs this many ping samples to count (a connection's last packets, acknowledged
/// by a leaving peer or not at all, are no lag).
const MIN_PING_SAMPLES: u32 = 3;
/// A loss burst: at least this fraction lost (or this many times the connection's loss) ...
const BURST_MIN: f64 = 0.2;
const BURST_FACTOR: f64 = 2.5;
/// ... over a window this many bins wide (2 s: one unlucky second of a lossy path is not
/// a burst), and the event lasts at least this many bins (1 s).
const BURST_WINDOW: usize = 4;
const MIN_RUN: usize = 2;
/// A loss burst spans at least this long from its first to its last loss (s).
const MIN_BURST_S: f64 = 1.0;

/// Every lag event of a connection, in time order.
/// `answers_only`: the server sends only in answer to the client's packets (QuakeWorld), so
/// at the client's side its silence does not tell which way the path stalled.
pub(crate) fn find(
    acc: &FlowAcc,
    m: Option<RttMethod>,
    median: Option<f64>,
    lm: &Both<&'static str>,
    client_side: bool,
    answers_only: bool,
) -> Vec<LagEvent> {
    let mut v = Vec::new();
    if let (Some(m), Some(med)) = (m, median) {
        v.extend(ping_events(acc, m, med));
    }
    stall_events(acc, median, client_side, &mut v);
    down_stall_events(acc, median, client_side, answers_only, &mut v);
    for (d, dir, method) in [(0, Dir::C2s, lm.c2s), (1, Dir::S2c, lm.s2c)] {
        if method.is_some() {
            v.extend(loss_events(acc, d, dir, method));
        }
    }
    v.sort_by(|a, b| a.start.total_cmp(&b.start));
    v
}

/// Runs of marked bins (a single unmarked bin inside a run is bridged), as index ranges of
/// at least [`MIN_RUN`] bins.
fn runs(marked: &[bool]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < marked.len() {
        if !marked[i] {
            i += 1;
            continue;
        }
        let start = i;
        let mut end = i;
        let mut j = i + 1;
        while j < marked.len() && (marked[j] || marked.get(j + 1) == Some(&true)) {
            if marked[j] {
                end = j;
            }
            j += 1;
        }
        if end + 1 - start >= MIN_RUN {
            out.push((start, end));
        }
        i = end + 1;
    }
    out
}

fn ping_events(acc: &FlowAcc, m: RttMethod, median: f64) -> Vec<LagEvent> {
    let limit = median + PING_RISE_MIN_MS.max(median);
    let k = m as usize;
    let marked: Vec<bool> = acc
        .bins
        .iter()
        .map(|b| b.rtt[k].n >= MIN_PING_SAMPLES && b.rtt[k].sum_ms / f64::from(b.rtt[k].n) > limit)
        .collect();
    runs(&marked)
        .into_iter()
        .map(|(a, z)| LagEvent {
            kind: "ping",
            start: acc.t0 + a as f64 * BIN_S,
            end: acc.t0 + (z + 1) as f64 * BIN_S,
            dir: None,
            peak: acc.bins[a..=z]
                .iter()
                .map(|b| b.rtt[k].max_ms)
                .fold(0.0, f64::max),
            baseline: median,
        })
        .collect()
}

/// The client's upstream stalled (held, or lost whole): every command sent in the window
/// waited for the window's end before the server ran it. A ping event over the same time
/// takes the direction; else the stall is a ping event of its own, its peak the wait. Only
/// a capture at the clients' side sees their packets leave in a stall: anywhere else client
/// packets seen in the window reached the server, and the server ran none of them for
/// reasons of its own (no network stall).
fn stall_events(acc: &FlowAcc, median: Option<f64>, client_side: bool, v: &mut Vec<LagEvent>) {
    for &(a, z, seen) in &acc.stalls {
        if seen > 0 && !client_side {
            continue;
        }
        stall_event(v, a, z, Some(Dir::C2s), median);
    }
}

/// The client's downstream stalled: it kept sending commands but acknowledged no newer
/// server message for over a second, so nothing the server sent reached it (held on the
/// way, or lost whole). Away from the client the server must have kept sending in the
/// window (else the server stopped: no network stall). At the client's side the server's
/// packets held on the way arrive together at the end (at least [`STALL_MIN_S2C`]); a
/// server that answers only what it hears sends almost nothing after an upstream hold, and
/// nothing through a loss either way: those stalls have no direction.
fn down_stall_events(
    acc: &FlowAcc,
    median: Option<f64>,
    client_side: bool,
    answers_only: bool,
    v: &mut Vec<LagEvent>,
) {
    for &(a, z, seen) in &acc.down_stalls {
        let dir = if seen >= STALL_MIN_S2C {
            Some(Dir::S2c)
        } else if !client_side {
            continue;
        } else if answers_only {
            None
        } else {
            Some(Dir::S2c)
        };
        stall_event(v, a, z, dir, median);
    }
}

/// A stall from `a` to `z`, of direction `dir` where known: a ping event of no direction
/// over the same time takes it (and the stall's span and wait); else the stall is a ping
/// event of its own, its peak the wait.
fn stall_event(v: &mut Vec<LagEvent>, a: f64, z: f64, dir: Option<Dir>, median: Option<f64>) {
    let hit = v.iter_mut().find(|e| {
        e.kind == "ping" && (e.dir.is_none() || e.dir == dir) && e.start <= z && e.end >= a
    });
    if let Some(e) = hit {
        e.dir = e.dir.or(dir);
        e.start = e.start.min(a);
        e.end = e.end.max(z);
        e.peak = e.peak.max((z - a) * 1000.0);
    } else {
        v.push(LagEvent {
            kind: "ping",
            start: a,
            end: z,
            dir,
            peak: (z - a) * 1000.0,
            baseline: median.unwrap_or(0.0),
        });
    }
}

fn loss_events(acc: &FlowAcc, d: usize, dir: Dir, method: Option<&'static str>) -> Vec<LagEvent> {
    let overall = bins_loss(&acc.bins, d, method).unwrap_or(0.0);
    let limit = BURST_MIN.max(BURST_FACTOR * overall);
    let bins = &acc.bins;
    let own = |b: &Bin| bins_loss(std::slice::from_ref(b), d, method).unwrap_or(0.0);
    let mut marked = vec![false; bins.len()];
    for w in 0..bins.len() {
        let win = &bins[w..(w + BURST_WINDOW).min(bins.len())];
        if bins_loss(win, d, method).unwrap_or(0.0) < limit {
            continue;
        }
        for (i, b) in win.iter().enumerate() {
            if own(b) >= limit {
                marked[w + i] = true;
            }
        }
    }
    runs(&marked)
        .into_iter()
        .filter_map(|(a, z)| {
            let span = &bins[a..=z];
            let start = span.iter().find_map(|b| b.dir[d].first_loss)?;
            let end = span.iter().rev().find_map(|b| b.dir[d].last_loss)?;
            if end - start < MIN_BURST_S {
                return None;
            }
            Some(LagEvent {
                kind: "loss",
                start,
                end,
                dir: Some(dir),
                peak: span.iter().map(own).fold(0.0, f64::max),
                baseline: bins_loss(span, d, method).unwrap_or(0.0),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::runs;

    #[test]
    fn runs_bridge_single_holes_and_drop_short_ones() {
        let m = [false, true, false, true, true, false, false, true, false];
        assert_eq!(runs(&m), vec![(1, 4)]);
    }
}
