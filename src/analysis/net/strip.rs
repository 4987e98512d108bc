//! The lagometer strip of the HTML report, in the style of Quake 3's `cg_lagometer`: one
//! column per server packet (a snapshot in Quake 3) with its latency, yellow when the server
//! held it back for the client's `rate` (SNAPFLAG_RATE_DELAYED), red when packets were lost
//! before it. Bounded: at most [`MAX_COLS`] columns; when full, neighbouring columns are
//! merged pairwise (worst latency, counts summed), so a long match keeps its whole length at
//! a coarser step.
use super::acc::RttMethod;

/// Columns kept per connection: a packet each for the first 1,024 server packets (about a
/// minute of Quake 3 snapshots), then merged pairwise; enough to zoom into a match in the
/// report's plots (each column is three or four numbers of the page's data, about 20 bytes,
/// and the columns are most of the report's numbers and of its cost).
pub const MAX_COLS: usize = 1024;

/// One column: one server packet, or several merged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Col {
    /// Capture time of the first packet in the column (s since the Unix epoch).
    pub start: f64,
    /// Capture time of the last packet in the column (s since the Unix epoch).
    pub end: f64,
    /// Netchan sequence of the first packet.
    pub seq_first: i64,
    /// Netchan sequence of the last packet.
    pub seq_last: i64,
    /// Packets (snapshots) in the column.
    pub packets: u32,
    /// Worst latency per round-trip method (ms; negative: none measured).
    pub latency: [f32; super::acc::RTT_METHODS],
    /// Snapshots the server marked rate-delayed (`SNAPFLAG_RATE_DELAYED`) in the column.
    pub rate_delayed: u32,
    /// Server packets lost before these, by sequence gaps at the client / unacknowledged at
    /// the server (the report shows the one its loss method uses): by sequence gaps.
    pub lost_gap: u32,
    /// Server packets lost before these, left unacknowledged (the server's side).
    pub lost_ack: u32,
}

impl Col {
    fn merge(&mut self, o: &Col) {
        self.end = o.end;
        self.seq_last = o.seq_last;
        self.packets += o.packets;
        for (a, b) in self.latency.iter_mut().zip(o.latency) {
            *a = a.max(b);
        }
        self.rate_delayed += o.rate_delayed;
        self.lost_gap += o.lost_gap;
        self.lost_ack += o.lost_ack;
    }
}

/// The columns of one connection.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Strip {
    /// The columns, in time order.
    pub cols: Vec<Col>,
    /// Server packets per column (a power of two).
    pub per_col: u32,
}

impl Strip {
    /// An accepted server packet.
    pub fn packet(&mut self, time: f64, seq: i64, rate_delayed: bool, gap: u32) {
        let per = self.per_col.max(1);
        let c = Col {
            start: time,
            end: time,
            seq_first: seq,
            seq_last: seq,
            packets: 1,
            latency: [-1.0; super::acc::RTT_METHODS],
            rate_delayed: u32::from(rate_delayed),
            lost_gap: gap,
            lost_ack: 0,
        };
        match self.cols.last_mut() {
            Some(last) if last.packets < per => last.merge(&c),
            _ => {
                if self.cols.len() >= MAX_COLS {
                    self.halve();
                    return self.packet(time, seq, rate_delayed, gap);
                }
                self.cols.push(c);
            }
        }
        self.per_col = self.per_col.max(1);
    }

    /// Merge neighbouring columns pairwise, in place: the strip keeps its one allocation
    /// (a new vector per halving, then grown back to [`MAX_COLS`], held a strip and a half
    /// per connection at the peak and copied each column twice).
    fn halve(&mut self) {
        let n = self.cols.len();
        for i in 0..n.div_ceil(2) {
            let mut c = self.cols[2 * i];
            if let Some(o) = self.cols.get(2 * i + 1) {
                c.merge(o);
            }
            self.cols[i] = c;
        }
        self.cols.truncate(n.div_ceil(2));
        self.per_col = self.per_col.max(1).saturating_mul(2);
    }

    /// A round trip of method `m`: for a server packet's acknowledgement, the column holding
    /// that sequence; otherwise the newest column (the snapshot that just answered).
    pub fn latency(&mut self, m: RttMethod, seq: Option<i64>, ms: f64) {
        let i = match seq {
            Some(s) => self
                .cols
                .iter()
                .rposition(|c| c.seq_first <= s)
                .filter(|&i| self.cols[i].seq_last >= s),
            None => self.cols.len().checked_sub(1),
        };
        if let Some(c) = i.and_then(|i| self.cols.get_mut(i)) {
            let l = &mut c.latency[m as usize];
            *l = l.max(ms as f32);
        }
    }

    /// A server packet sent at `time` that the client never acknowledged.
    pub fn lost_ack(&mut self, time: f64) {
        let i = self.cols.partition_point(|c| c.start <= time);
        if let Some(c) = i.checked_sub(1).and_then(|i| self.cols.get_mut(i)) {
            c.lost_ack += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strip_stays_bounded_and_keeps_totals() {
        let mut s = Strip::default();
        let n = MAX_COLS as i64 * 5 + 3;
        for i in 0..n {
            s.packet(i as f64 * 0.05, i, i % 10 == 0, u32::from(i % 7 == 0));
            s.latency(RttMethod::AckS2c, Some(i), i as f64);
        }
        assert!(s.cols.len() <= MAX_COLS);
        assert_eq!(s.per_col, 8);
        let total: u32 = s.cols.iter().map(|c| c.packets).sum();
        assert_eq!(i64::from(total), n);
        assert_eq!(
            s.cols.iter().map(|c| c.rate_delayed).sum::<u32>(),
            (0..n).filter(|i| i % 10 == 0).count() as u32
        );
        // Worst latency of the merged packets.
        let last = s.cols.last().unwrap();
        assert_eq!(last.latency[RttMethod::AckS2c as usize], (n - 1) as f32);
    }
}
