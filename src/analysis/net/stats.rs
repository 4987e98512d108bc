//! Small bounded-memory statistics: a millisecond histogram for percentiles, the RFC 3550
//! jitter estimator, and the table of sent packets waiting for their acknowledgement.
use std::collections::VecDeque;

/// Round trips are kept as counts per millisecond up to [`FINE_MS`], per 10 ms above it up
/// to [`HIST_MS`] (longer ones count in the last bucket): percentiles to the millisecond
/// where pings live, in constant memory (8 KB) whatever the capture's length.
const FINE_MS: usize = 1_000;
const HIST_MS: usize = 10_000;
const COARSE_MS: usize = 10;
const BUCKETS: usize = FINE_MS + (HIST_MS - FINE_MS) / COARSE_MS;

fn bucket(ms: f64) -> usize {
    let ms = ms as usize;
    if ms < FINE_MS {
        ms
    } else {
        (FINE_MS + (ms - FINE_MS) / COARSE_MS).min(BUCKETS - 1)
    }
}

/// The middle of a bucket (ms).
fn bucket_mid(i: usize) -> f64 {
    if i < FINE_MS {
        i as f64 + 0.5
    } else {
        (FINE_MS + (i - FINE_MS) * COARSE_MS) as f64 + COARSE_MS as f64 / 2.0
    }
}

/// Counts per whole millisecond, kept for the window of buckets the round trips have
/// reached: a connection's pings sit within a few tens of milliseconds of each other, so the
/// window is usually a few hundred bytes, not the 7.6 KB of every bucket (three per
/// connection, for every connection of a capture).
#[derive(Debug, Clone, Default)]
pub struct Hist {
    /// Counts of buckets `lo..lo + counts.len()`.
    counts: Vec<u32>,
    lo: usize,
    n: u64,
    max: f64,
}

impl Hist {
    pub fn add(&mut self, ms: f64) {
        // Neither NaN, infinite nor negative: two comparisons (false for NaN).
        if !(0.0..f64::INFINITY).contains(&ms) {
            return;
        }
        let i = bucket(ms);
        match i.checked_sub(self.lo) {
            Some(k) if k < self.counts.len() => self.counts[k] = self.counts[k].saturating_add(1),
            _ => self.widen(i),
        }
        self.n += 1;
        // Finite and not negative here: a comparison does what `f64::max` does.
        if ms > self.max {
            self.max = ms;
        }
    }

    /// Count one in bucket `i`, outside the window: the window grown to hold it.
    #[cold]
    #[inline(never)]
    fn widen(&mut self, i: usize) {
        if self.counts.is_empty() {
            self.lo = i;
            self.counts.push(1);
            return;
        }
        if i < self.lo {
            let more = self.lo - i;
            self.counts.splice(0..0, std::iter::repeat_n(0, more));
            self.lo = i;
        } else {
            self.counts.resize(i - self.lo + 1, 0);
        }
        self.counts[i - self.lo] += 1;
    }

    pub fn len(&self) -> u64 {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The q-quantile (0..1), to the millisecond (bucket middle); None when empty.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.n == 0 {
            return None;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0u64;
        for (k, &c) in self.counts.iter().enumerate() {
            seen += u64::from(c);
            if seen >= rank {
                return Some(bucket_mid(self.lo + k).min(self.max));
            }
        }
        Some(self.max)
    }

    pub fn max(&self) -> Option<f64> {
        (self.n > 0).then_some(self.max)
    }
}

/// RFC 3550 §6.4.1 interarrival jitter over a sender's timestamps (ms) and the capture's
/// arrival times; the report gives the running estimate's mean over the connection, so
/// one quiet or noisy moment at the end does not decide it.
#[derive(Debug, Clone, Default)]
pub struct Jitter {
    last_transit: Option<f64>,
    j: f64,
    sum: f64,
    n: u64,
}

/// A timestamp step this large (ms) is a clock reset (map change, new gamestate), not jitter.
const STAMP_RESET_MS: f64 = 5_000.0;

impl Jitter {
    /// One packet; the estimate after it, when it updated one.
    pub fn add(&mut self, arrival_s: f64, stamp_ms: f64) -> Option<f64> {
        let transit = arrival_s * 1000.0 - stamp_ms;
        let prev = self.last_transit.replace(transit)?;
        let d = (transit - prev).abs();
        if d.is_nan() || d >= STAMP_RESET_MS {
            return None;
        }
        self.j += (d - self.j) / 16.0;
        self.sum += self.j;
        self.n += 1;
        Some(self.j)
    }

    pub fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / self.n as f64)
    }
}

/// Mean absolute difference of successive values (the RTT variation used as jitter when the
/// sender stamps nothing).
#[derive(Debug, Clone, Default)]
pub struct Variation {
    last: Option<f64>,
    sum: f64,
    n: u64,
}

impl Variation {
    pub fn add(&mut self, v: f64) {
        if let Some(p) = self.last {
            self.sum += (v - p).abs();
            self.n += 1;
        }
        self.last = Some(v);
    }

    pub fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / self.n as f64)
    }
}

/// One packet seen leaving towards the far side, waiting for the far side's ack.
#[derive(Debug, Clone, Copy)]
struct Sent {
    seq: i64,
    time: f64,
    acked: bool,
}

/// The fate of a sent packet once the far side's acks have settled it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settled {
    pub time: f64,
    pub delivered: bool,
}

/// Packets are settled this long after being sent when a later one was acknowledged (an ack
/// only ever names the newest packet the far side accepted, so older ones cannot be acked
/// afterwards; the delay leaves room for reordered acks).
const SETTLE_S: f64 = 2.0;
/// At most this many packets wait (constant memory when the far side never answers).
const MAX_PENDING: usize = 4096;
/// The far side is taken as listening once its acknowledgement moved forward this often.
const LIVE_ADVANCES: u32 = 5;

/// The packets of one direction seen before they crossed the path, and which of them the far
/// side acknowledged: round trips and, for those never acknowledged, inferred loss.
#[derive(Debug, Clone, Default)]
pub struct AckTable {
    pending: VecDeque<Sent>,
    max_ack: Option<i64>,
    /// The far side's acknowledgement moved forward: it is processing our packets (a Quake 3
    /// client loading its map keeps acknowledging the gamestate for seconds).
    live: bool,
    advances: u32,
    /// The sequence the latest first acknowledgement named. The far side repeats it until it
    /// accepts a newer packet, and a repeat finds that packet acknowledged already or
    /// settled: no search. Forgotten when that sequence is sent again (a netchan restart),
    /// so it always names a packet acknowledged or gone.
    last_acked: Option<i64>,
}

impl AckTable {
    /// A packet of sequence `seq` left at `time` (repeats and stale sequences are ignored);
    /// the oldest waiting packet, settled, when the table was full.
    pub fn sent(&mut self, seq: i64, time: f64) -> Option<Settled> {
        // Before the far side acknowledged anything it is not listening yet (connection
        // set-up): those packets tell nothing about the path.
        if !self.live || self.pending.back().is_some_and(|s| s.seq >= seq) {
            return None;
        }
        if self.last_acked.is_some_and(|a| a >= seq) {
            self.last_acked = None;
        }
        let full = if self.pending.len() >= MAX_PENDING {
            self.pending.pop_front().map(|s| self.settle(s))
        } else {
            None
        };
        self.pending.push_back(Sent {
            seq,
            time,
            acked: false,
        });
        full
    }

    /// The far side acknowledged `ack` at `now`: the round trip of that packet (seconds) when
    /// this is its first acknowledgement.
    pub fn ack(&mut self, ack: i64, now: f64, out: &mut Vec<Settled>) -> Option<(f64, f64)> {
        if self.max_ack.is_some_and(|m| ack > m) {
            self.advances += 1;
            self.live |= self.advances >= LIVE_ADVANCES;
        }
        self.max_ack = Some(self.max_ack.map_or(ack, |m| m.max(ack)));
        let rtt = match self.find_unacked(ack) {
            Some(i) => {
                self.pending[i].acked = true;
                self.last_acked = Some(ack);
                let s = self.pending[i];
                Some((s.time, now - s.time))
            }
            None => None,
        };
        self.settle_before(now - SETTLE_S, out);
        rtt
    }

    /// The pending packet of sequence `seq` when it is not acknowledged yet.
    fn find_unacked(&self, seq: i64) -> Option<usize> {
        if self.last_acked == Some(seq) {
            return None;
        }
        self.find(seq).ok().filter(|&i| !self.pending[i].acked)
    }

    /// The pending packet of sequence `seq`: sequences usually run without holes here (the
    /// packets were seen where they left), so its offset from the oldest is tried first.
    fn find(&self, seq: i64) -> Result<usize, usize> {
        let front = self.pending.front().map_or(seq, |s| s.seq);
        let guess = usize::try_from(seq - front).ok();
        if let Some(i) = guess.filter(|&i| self.pending.get(i).is_some_and(|s| s.seq == seq)) {
            return Ok(i);
        }
        self.pending.binary_search_by_key(&seq, |s| s.seq)
    }

    fn settle(&self, s: Sent) -> Settled {
        Settled {
            time: s.time,
            delivered: s.acked,
        }
    }

    /// Settle the packets sent before `t` and already passed by an acknowledgement.
    fn settle_before(&mut self, t: f64, out: &mut Vec<Settled>) {
        let Some(max) = self.max_ack else { return };
        while let Some(s) = self.pending.front().copied() {
            if s.time >= t || s.seq > max {
                break;
            }
            self.pending.pop_front();
            out.push(self.settle(s));
        }
    }

    /// End of the capture: settle what an acknowledgement passed; later packets stay unknown.
    pub fn finish(&mut self, out: &mut Vec<Settled>) {
        self.settle_before(f64::INFINITY, out);
        self.pending.clear();
    }

    /// True once the far side acknowledged anything.
    pub fn any_ack(&self) -> bool {
        self.max_ack.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hist_quantiles() {
        let mut h = Hist::default();
        for v in [10.0, 20.0, 30.0, 40.0] {
            h.add(v);
        }
        assert_eq!(h.quantile(0.5), Some(20.5));
        assert_eq!(h.max(), Some(40.0));
        // Above a second, 10 ms buckets (the middle, capped by the largest value).
        h.add(2_342.0);
        assert_eq!(h.quantile(1.0), Some(2_342.0));
        h.add(2_341.0);
        assert_eq!(h.quantile(0.9), Some(2_342.0));
        assert_eq!(Hist::default().quantile(0.5), None);
        // The window grows either way and gives what every bucket would.
        let mut w = Hist::default();
        for ms in [50.2, 12.0, 999.9, 3_000.0, 12.5, 0.0, 20_000.0] {
            w.add(ms);
        }
        assert_eq!(w.len(), 7);
        assert_eq!(w.quantile(0.0), Some(0.5));
        assert_eq!(w.quantile(0.3), Some(12.5));
        assert_eq!(w.quantile(0.5), Some(50.5));
        assert_eq!(w.quantile(0.7), Some(999.5));
        assert_eq!(w.quantile(0.8), Some(3_005.0));
        assert_eq!(w.quantile(1.0), Some(9_995.0));
        assert_eq!(w.max(), Some(20_000.0));
        assert!(w.counts.len() <= BUCKETS);
    }

    /// A table that has seen acknowledgements -5..=0 (the channel's start), and its output.
    fn acked_up_to_zero() -> (AckTable, Vec<Settled>) {
        let mut t = AckTable::default();
        let mut out = Vec::new();
        for a in -5..=0 {
            t.ack(a, 0.0, &mut out);
        }
        (t, out)
    }

    #[test]
    fn ack_table_settles_unacked_as_lost() {
        let (mut t, mut out) = acked_up_to_zero();
        for s in 1..=3 {
            out.extend(t.sent(s, s as f64 * 0.05));
        }
        assert!(t.ack(1, 0.2, &mut out).is_some());
        assert!(t.ack(3, 0.3, &mut out).is_some());
        t.finish(&mut out);
        let lost = out.iter().filter(|s| !s.delivered).count();
        assert_eq!((out.len(), lost), (3, 1));
    }

    #[test]
    fn ack_table_repeated_and_restarted_sequences() {
        let (mut t, mut out) = acked_up_to_zero();
        t.sent(1, 0.1);
        assert!(t.ack(1, 0.15, &mut out).is_some());
        // Repeats of an acknowledged sequence are no new round trip.
        assert!(t.ack(1, 0.2, &mut out).is_none());
        // Settled and gone, then the netchan restarts and sends sequence 1 again: its first
        // acknowledgement is a round trip again.
        t.ack(1, 5.0, &mut out);
        assert_eq!(out.len(), 1);
        t.sent(1, 6.0);
        assert_eq!(t.ack(1, 6.1, &mut out).map(|(sent, _)| sent), Some(6.0));
        assert!(t.ack(1, 6.2, &mut out).is_none());
    }

    #[test]
    fn jitter_of_constant_transit_is_zero() {
        let mut j = Jitter::default();
        for i in 0..10 {
            j.add(i as f64 * 0.05 + 0.1, i as f64 * 50.0);
        }
        assert!(j.mean().unwrap() < 1e-6);
    }
}
