//! A sender's silence and the burst that ends it: what a held upstream's release looks like
//! past the hold (its packets come together), written once for the analyses that judge it
//! (`net`'s upstream stalls, `cheats`' QuakeWorld holds).

/// A silence of a sender and what came within the burst window after it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Release {
    /// The last packet before the silence (capture time, s).
    pub from: f64,
    /// The first packet after it.
    pub first: f64,
    /// What the burst's packets carried, summed (packets, or their commands' milliseconds).
    pub amount: u64,
}

impl Release {
    /// The silence's length (s).
    pub fn silence(&self) -> f64 {
        self.first - self.from
    }
}

/// Watches one sender's packets for silences longer than `silence_s` and sums what comes
/// within `within_s` of the first packet after one.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct BurstWatch {
    last: Option<f64>,
    open: Option<Release>,
}

impl BurstWatch {
    /// A packet at `t` carrying `amount`: the release it closed, if any (the first packet
    /// past the burst window closes it).
    pub fn add(&mut self, t: f64, amount: u64, silence_s: f64, within_s: f64) -> Option<Release> {
        let last = self.last.replace(t);
        if let Some(r) = &mut self.open {
            if t - r.first <= within_s {
                r.amount = r.amount.saturating_add(amount);
                return None;
            }
        }
        let closed = self.open.take();
        if let Some(from) = last.filter(|&l| t - l > silence_s) {
            self.open = Some(Release {
                from,
                first: t,
                amount,
            });
        }
        closed
    }

    /// The end of the input: the release still open.
    pub fn finish(&mut self) -> Option<Release> {
        self.open.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_after_a_silence_is_summed_and_closed_by_the_next_packet() {
        let mut w = BurstWatch::default();
        for t in [0.0, 0.1, 0.2] {
            assert_eq!(w.add(t, 1, 1.0, 0.25), None);
        }
        // 3 s of silence, then 4 packets within 0.25 s.
        for t in [3.2, 3.21, 3.3, 3.44] {
            assert_eq!(w.add(t, 1, 1.0, 0.25), None);
        }
        let r = w.add(3.6, 1, 1.0, 0.25).expect("closed");
        assert_eq!((r.from, r.first, r.amount), (0.2, 3.2, 4));
        assert!((r.silence() - 3.0).abs() < 1e-9);
        assert_eq!(w.finish(), None);
        // One still open at the end.
        w.add(5.0, 7, 1.0, 0.25);
        assert_eq!(w.finish().map(|r| r.amount), Some(7));
    }
}
