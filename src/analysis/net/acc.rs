//! Per-connection accumulation of samples: counters per direction, fixed-width time bins,
//! round-trip histograms and jitter estimators. Memory grows with the capture's length (one
//! bin per [`BIN_S`]), never with its packet count.
use std::collections::VecDeque;

use crate::analysis::burst::{BurstWatch, Release};

use super::sample::{Arrival, Sample};
use super::stats::{AckTable, Hist, Jitter, Settled, Variation};
use super::strip::Strip;
use crate::flow::Dir;

/// Width of the internal time bins (s): fine enough to place a lag event within half a
/// second; the reported series sums them to the asked interval.
pub const BIN_S: f64 = 0.5;
/// At most this many bins per connection (about 70 days at [`BIN_S`]): a hostile timestamp
/// far in the future cannot allocate without bound.
const MAX_BINS: usize = 12_000_000;
/// Bins a connection may hold beyond one per packet it sent or received (about 68 minutes).
/// A real connection sends tens of packets per bin, so its bins never reach the budget; a
/// hostile capture of few packets each a couple of minutes apart (never silent the 200 s
/// that end the connection) would otherwise take 400 bins (90 KB) per packet.
const FREE_BINS: usize = 8192;
/// Client packets remembered for the Quake 3 client-side ping. The engine keeps
/// PACKET_BACKUP (32) and so finds no packet once a lag holds a round trip above 32 client
/// frames (about 0.5 s at 60 fps); keeping more measures those lags too.
const CMD_RING: usize = 512;

/// How a round trip was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RttMethod {
    /// A server packet seen leaving, to the client's first acknowledgement of it.
    AckS2c = 0,
    /// A client packet seen leaving, to the server's first acknowledgement of it (QW).
    AckC2s = 1,
    /// A Quake 3 client packet seen leaving, to the first snapshot whose playerstate
    /// commandTime reaches its last usercmd (the engine's `cl.snap.ping`).
    Command = 2,
    /// Quake 3, at the client's side: the ping the server computes (SV_CalcPings, what
    /// `status` and the scoreboard show), estimated per server message from when the client
    /// last acknowledged it and the path's round trip (`FlowAcc`'s `server_ping`).
    Server = 3,
}

/// Round-trip methods ([`RttMethod`]).
pub const RTT_METHODS: usize = 4;

/// How long the lowest recent `Command` round trip stands for the path's round trip in the
/// client-side estimate of the server's ping (s).
const PATH_RTT_WINDOW_S: f64 = 2.0;

/// One direction's counters in a bin.
#[derive(Debug, Clone, Copy, Default)]
pub struct DirBin {
    pub packets: u32,
    pub bytes: u64,
    /// Packets known to have crossed or been lost (sequence gaps, or settled acks).
    pub expected_gap: u32,
    pub lost_gap: u32,
    pub expected_ack: u32,
    pub lost_ack: u32,
    /// Capture times of the first and last loss in the bin.
    pub first_loss: Option<f64>,
    pub last_loss: Option<f64>,
}

/// Round trips of one method in a bin.
#[derive(Debug, Clone, Copy, Default)]
pub struct RttBin {
    pub sum_ms: f64,
    pub n: u32,
    pub max_ms: f64,
}

/// One time bin of a connection.
#[derive(Debug, Clone, Copy, Default)]
pub struct Bin {
    pub dir: [DirBin; 2],
    pub rtt: [RttBin; RTT_METHODS],
    pub snapshots: u32,
    pub rate_delayed: u32,
    /// Sum and count of the running RFC 3550 jitter estimate after each update, each way.
    pub jitter_sum: [f32; 2],
    pub jitter_n: [u32; 2],
}

/// One direction's totals.
#[derive(Debug, Clone, Copy, Default)]
pub struct DirTotals {
    pub packets: u64,
    pub bytes: u64,
    pub accepted: u64,
    pub duplicates: u64,
    pub out_of_order: u64,
    /// Sequence numbers skipped.
    pub gaps: u64,
    /// Of those, answers the sender skipped for its rate limit (QuakeWorld server).
    pub chokes: u64,
    pub fragmented: u64,
    pub acked: u64,
    pub unacked: u64,
}

/// Which cached bin a lookup uses ([`FlowAcc::bin_index`]): each kind of time runs in
/// order of its own, at its own distance behind the samples.
#[derive(Debug, Clone, Copy)]
enum Cache {
    /// The samples' own times.
    Now = 0,
    /// Send times of round trips measured now (a round trip behind).
    Rtt = 1,
    /// Send times of packets the acknowledgements settled (seconds behind).
    Settled = 2,
}

fn di(d: Dir) -> usize {
    match d {
        Dir::C2s => 0,
        Dir::S2c => 1,
    }
}

/// Everything kept about one connection.
#[derive(Debug, Clone, Default)]
pub struct FlowAcc {
    pub t0: f64,
    pub t_last: f64,
    pub bins: Vec<Bin>,
    /// The bin last looked up for each [`Cache`]: its bounds in bins since `t0`, [i, i + 1),
    /// and i.
    cur_bin: [(f64, f64, usize); 3],
    pub dir: [DirTotals; 2],
    /// Packets of each direction waiting for the far side's ack.
    acks: [AckTable; 2],
    pub rtt: [Hist; RTT_METHODS],
    pub rtt_var: [Variation; RTT_METHODS],
    /// Sender-stamped jitter: c2s by usercmd serverTime, s2c by snapshot serverTime.
    pub jitter: [Jitter; 2],
    /// Quake 3 client packets: (capture time, last usercmd serverTime), newest last.
    cmd_ring: VecDeque<(f64, i32)>,
    /// A packet of `cmd_ring` has an earlier capture time than the one before it.
    cmd_ring_unordered: bool,
    pub snapshots: u64,
    pub rate_delayed: u64,
    pub new_cmds: u64,
    settled: Vec<Settled>,
    /// Round trips waiting for the measuring side's next packet, per that side's direction:
    /// method, send time, and the server sequence for a server packet's acknowledgement.
    awaiting: [Vec<(RttMethod, f64, Option<i64>)>; 2],
    /// The lagometer strip (only when asked: [`FlowAcc::with_strip`]).
    pub strip: Option<Box<Strip>>,
    /// Capture time of the first sample past the bins' budget (`FREE_BINS`): counted in
    /// the totals, in no bin (none for a real connection).
    pub binned_until: Option<f64>,
    /// Quake 3 server packets with a snapshot: (sequence, snapshot serverTime, capture time).
    q3_snaps: Vec<(i64, i32, f64)>,
    /// Quake 3 client packets: (messageAcknowledge, last usercmd serverTime).
    q3_acks: Vec<(i64, i32)>,
    /// Quake 3 server packets with a snapshot, newest last: (sequence, capture time).
    q3_sent: VecDeque<(i64, f64)>,
    /// The server message the client acknowledges now, as SV_CalcPings keeps it: its send
    /// time, and the server's frame (send) time at its latest acknowledgement.
    q3_acking: Acking,
    /// The server message the client acknowledges now, seen at the client's side: its
    /// arrival, and the client's latest packet acknowledging it.
    q3_holding: Acking,
    /// Recent `Command` round trips, (send time, ms), their lowest first (a monotonic
    /// queue over [`PATH_RTT_WINDOW_S`]): the path's round trip with the least server-frame
    /// wait in it.
    path_rtt: VecDeque<(f64, f64)>,
    /// Quake 3: the shortest step between two snapshots' serverTimes (ms): the server frame.
    frame_ms: Option<f64>,
    /// Quake 3: the last snapshot's serverTime.
    last_server_time: Option<i32>,
    /// Windows (capture time) where the client's packets did not reach the server or the
    /// server ran none of its commands while it kept sending: a c2s stall (a held upstream).
    /// The third value: client packets with new commands seen within the window (none reach
    /// a server-side capture while the upstream is held; loopback sees them all).
    pub stalls: Vec<(f64, f64, u32)>,
    /// Client packets with new commands since the commandTime last advanced that a snapshot
    /// with the same commandTime followed (the server had them and ran none), and those no
    /// snapshot followed yet (they may be the ones it runs next).
    c2s_in_stall: u32,
    c2s_pending: u32,
    /// Arrival of the first of `c2s_pending`.
    c2s_pending_since: f64,
    /// Quake 3: the highest usercmd serverTime the client's packets carried.
    max_cmd_time: Option<i32>,
    /// Quake 3: (highest playerstate commandTime, when it last advanced, snapshots since).
    cmd_advance: Option<(i32, f64, u32)>,
    /// Windows (capture time) where the client kept sending commands but acknowledged no
    /// newer server message: nothing the server sent reached it (a downstream stall). The
    /// third value: server packets seen within the window (a server-side capture sees the
    /// server keep sending; a client-side one sees nothing arrive).
    pub down_stalls: Vec<(f64, f64, u32)>,
    /// The server message the client's packets acknowledge now, and since when.
    ack_stand: Option<AckStand>,
    /// Server sequences skipped before the server packets that end a stall of over
    /// [`STALL_S`] (the client sending, its acknowledgement standing; those within
    /// [`STALL_BURST_S`] of the first), and the answers those packets say the server skipped
    /// (`chokes`): answers a QuakeWorld server never made for a held upstream (it answers
    /// the released burst a few times), or lost ones; which, a capture at the client's side
    /// cannot tell.
    pub stalled_gaps: (u64, u64),
    /// Until when server packets still come in the release of such a stall (capture time).
    release_until: f64,
    /// Client packets with commands, for the release of a held upstream: both games'
    /// upstream holds as a capture past the hold sees them.
    c2s_burst: BurstWatch,
}

/// A client acknowledgement standing: the server sequence, the first and last client
/// packets (with new commands) carrying it, how many did, and the server packets since.
#[derive(Debug, Clone, Copy)]
struct AckStand {
    seq: i64,
    since: f64,
    last: f64,
    c2s: u32,
    s2c: u32,
}

impl AckStand {
    fn new(seq: i64, since: f64) -> Self {
        AckStand {
            seq,
            since,
            last: since,
            c2s: 0,
            s2c: 0,
        }
    }
}

/// The server message a client's packets acknowledge now: (sequence, when it left or
/// arrived, the time of its latest acknowledgement as the measure stamps it).
#[derive(Debug, Clone, Copy, Default)]
struct Acking(Option<(i64, f64, f64)>);

impl Acking {
    /// A client packet acknowledging message `a`, stamped `at`: a later acknowledgement of
    /// the message followed (`at` kept), an older one ignored, or a newer message started
    /// (`start` gives its time; None: not followed) and the one it ends returned.
    fn ack(
        &mut self,
        a: i64,
        at: f64,
        start: impl FnOnce() -> Option<f64>,
    ) -> Option<(i64, f64, f64)> {
        match self.0 {
            Some((seq, _, ref mut last)) if seq == a => {
                *last = at;
                None
            }
            Some((seq, ..)) if a < seq => None,
            ended => {
                self.0 = start().map(|t| (a, t, at.max(t)));
                ended
            }
        }
    }
}

/// The client's upstream stalled when the server heard nothing from it, or ran none of its
/// commands, this long (s) while still sending to it.
const STALL_S: f64 = 1.0;
/// Snapshots that must have left within such a window (the server kept sending).
pub(crate) const STALL_MIN_S2C: u32 = 5;
/// Client packets a second a stall's window must have carried (clients send 20 and more).
const STALL_MIN_RATE: f64 = 5.0;
/// A held upstream's packets reach the server within this long (s) of each other.
const STALL_BURST_S: f64 = 0.25;
/// A held upstream's release brings at least this many client packets (with commands) per
/// second of the silence before it: 33–70 in the lab's lag switches (both games); a client
/// that catches up after its own hitch or a map load sends 2–12.
const STALL_BURST_RATE: f64 = 20.0;
/// At most this many stalls are kept per connection.
const MAX_STALLS: usize = 10_000;

/// Quake 3 server packets remembered for the engine's ping (PACKET_BACKUP).
const Q3_SENT: usize = 32;

/// At most this many Quake 3 packets of each direction are kept for the server packets' fate
/// ([`FlowAcc::q3_s2c_fate`]): about 14 hours of snapshots at 20 a second (24 MB).
const MAX_Q3_FATE: usize = 1_000_000;

/// At most this many round trips wait for the measuring side's next packet.
const MAX_AWAITING: usize = 64;

impl FlowAcc {
    pub fn new(t0: f64) -> Self {
        FlowAcc {
            t0,
            t_last: t0,
            ..Default::default()
        }
    }

    /// Also keep the lagometer strip of the HTML report.
    pub fn with_strip(mut self) -> Self {
        self.strip = Some(Box::default());
        self
    }

    /// The index of the bin of capture time `t` (times before the first sample go to the
    /// first bin), the bins grown to hold it.
    #[inline]
    fn bin_index(&mut self, t: f64, cache: Cache) -> Option<usize> {
        let x = (t - self.t0) * (1.0 / BIN_S);
        // Most times fall in the bin of the one before of their kind: compared with its
        // bounds, exactly as the conversion below would place them, without the conversion.
        let c = &self.cur_bin[cache as usize];
        if x >= c.0 && x < c.1 {
            return Some(c.2);
        }
        self.bin_index_new(x, cache)
    }

    /// [`Self::bin_index`] past the cached bin: `x` in bins since `t0`.
    #[inline(never)]
    fn bin_index_new(&mut self, x: f64, cache: Cache) -> Option<usize> {
        let x = if x > 0.0 { x } else { 0.0 };
        if x.is_nan() || x >= MAX_BINS as f64 {
            return None;
        }
        let i = x as usize;
        if self.bins.len() <= i {
            let packets = self.dir[0].packets + self.dir[1].packets;
            let budget = FREE_BINS.saturating_add(usize::try_from(packets).unwrap_or(usize::MAX));
            if i >= budget {
                self.past_budget(x);
                return None;
            }
            self.bins.resize(i + 1, Bin::default());
        }
        self.cur_bin[cache as usize] = (i as f64, (i + 1) as f64, i);
        Some(i)
    }

    /// A time `x` bins after `t0` that the bins' budget cannot hold.
    #[cold]
    fn past_budget(&mut self, x: f64) {
        self.binned_until.get_or_insert(self.t0 + x * BIN_S);
    }

    /// The bin of time `t` if the samples made one (a pass at the connection's end must not
    /// grow the series past the budget the samples had: `binned_until`).
    fn existing_bin(&mut self, t: f64) -> Option<&mut Bin> {
        if self.binned_until.is_some_and(|u| t >= u) {
            return None;
        }
        let x = (t - self.t0) * (1.0 / BIN_S);
        if x.is_nan() {
            return None;
        }
        self.bins.get_mut(x.max(0.0) as usize)
    }

    /// The bin of a send time `t` (a round trip's or a settled packet's start): those run
    /// behind the samples, so they keep their own cached bins.
    fn bin(&mut self, t: f64, cache: Cache) -> Option<&mut Bin> {
        let i = self.bin_index(t, cache)?;
        self.bins.get_mut(i)
    }

    /// One sample. Inlined into its sinks' per-sample path: with two callers (`net`'s sink
    /// and `report`'s) the compiler kept it out of line, a call per sample (1.2 M
    /// instructions of `net` on the benchmark capture).
    #[inline(always)]
    pub fn add(&mut self, s: &Sample) {
        // Times are finite here (the sink drops the others), so a comparison does what
        // `f64::max` does.
        if s.time > self.t_last {
            self.t_last = s.time;
        }
        let d = di(s.dir);
        self.complete_rtts(d, s.time);
        let t = &mut self.dir[d];
        t.packets += 1;
        t.bytes += u64::from(s.bytes);
        match s.arrival {
            Arrival::Duplicate => t.duplicates += 1,
            Arrival::OutOfOrder => t.out_of_order += 1,
            Arrival::Fragment | Arrival::Accepted => {}
        }
        let late = s.arrival == Arrival::OutOfOrder;
        let bi = self.bin_index(s.time, Cache::Now);
        if let Some(b) = bi.and_then(|i| self.bins.get_mut(i)) {
            let db = &mut b.dir[d];
            db.packets += 1;
            db.bytes += u64::from(s.bytes);
            // A late packet filled a gap counted as lost when a newer one arrived first: it
            // crossed the path (the receiving engine still drops it).
            if late && db.lost_gap > 0 {
                db.lost_gap -= 1;
            }
        }
        if s.arrival == Arrival::Accepted {
            self.accepted(s, d, bi);
            self.stall_watch(s);
            self.down_watch(s);
            if s.dir == Dir::C2s && s.cmds.is_some_and(|c| c.new > 0) {
                let r = self.c2s_burst.add(s.time, 1, STALL_S, STALL_BURST_S);
                self.burst_end(r);
            }
        }
        if let Some(a) = s.ack {
            self.far_ack(s, a);
        }
    }

    /// An accepted message; `bi` the bin of its time.
    fn accepted(&mut self, s: &Sample, d: usize, bi: Option<usize>) {
        let t = &mut self.dir[d];
        t.accepted += 1;
        t.fragmented += u64::from(s.fragmented);
        t.gaps += u64::from(s.gap);
        t.chokes += u64::from(s.chokes);
        self.settle_gap(d, s, bi);
        if let Some(st) = self.acks[d].sent(s.seq, s.time) {
            self.record_one_settled(d, st);
        }
        if let Some(snap) = s.snapshot {
            self.snapshot(s, snap, bi);
            if s.dir == Dir::S2c {
                if self.q3_snaps.len() < MAX_Q3_FATE {
                    self.q3_snaps.push((s.seq, snap.server_time, s.time));
                }
                if self.q3_sent.len() >= Q3_SENT {
                    self.q3_sent.pop_front();
                }
                self.q3_sent.push_back((s.seq, s.time));
            }
        }
        if let (Dir::C2s, Some(a), Some(ct)) = (s.dir, s.ack, s.cmds.and_then(|c| c.last_time)) {
            if self.q3_acks.len() < MAX_Q3_FATE {
                self.q3_acks.push((a, ct));
            }
        }
        if let (Dir::S2c, Some(st)) = (s.dir, &mut self.strip) {
            st.packet(
                s.time,
                s.seq,
                s.snapshot.is_some_and(|x| x.rate_delayed),
                s.gap,
            );
        }
        if let Some(c) = s.cmds {
            self.new_cmds += u64::from(c.new);
            if let Some(ct) = c.last_time {
                let j = self.jitter[0].add(s.time, f64::from(ct));
                self.bin_jitter(0, bi, j);
                if self.cmd_ring.len() >= CMD_RING {
                    self.cmd_ring.pop_front();
                }
                if self.cmd_ring.back().is_some_and(|&(t, _)| t > s.time) {
                    self.cmd_ring_unordered = true;
                }
                self.cmd_ring.push_back((s.time, ct));
            }
        }
    }

    /// Count the gap before this packet as loss. (QuakeWorld servers' own gaps, which are
    /// not path loss, are never read as loss: see `report::qw_loss_methods`.)
    fn settle_gap(&mut self, d: usize, s: &Sample, bi: Option<usize>) {
        let lost = s.gap;
        if let Some(b) = bi.and_then(|i| self.bins.get_mut(i)) {
            let db = &mut b.dir[d];
            db.expected_gap += 1 + lost;
            db.lost_gap += lost;
            if lost > 0 {
                db.first_loss.get_or_insert(s.time);
                db.last_loss = Some(s.time);
            }
        }
    }

    /// Watch for c2s stalls: snapshots whose playerstate commandTime stands still while the
    /// client made commands (the server ran none of them: seen at both sides, the client's
    /// packets held or lost on the way up).
    fn stall_watch(&mut self, s: &Sample) {
        let mut found = None;
        match s.dir {
            Dir::C2s => {
                if s.cmds.is_some_and(|c| c.new > 0) {
                    if self.c2s_pending == 0 {
                        self.c2s_pending_since = s.time;
                    }
                    self.c2s_pending = self.c2s_pending.saturating_add(1);
                }
                if let Some(ct) = s.cmds.and_then(|c| c.last_time) {
                    self.max_cmd_time = Some(self.max_cmd_time.map_or(ct, |m| m.max(ct)));
                }
            }
            Dir::S2c => {
                if let Some(snap) = s.snapshot {
                    let ct = snap.command_time;
                    match &mut self.cmd_advance {
                        Some((top, at, n)) if ct > *top => {
                            // The client made commands over the window (a client loading,
                            // or not sending at all, stalls nothing).
                            let made = self
                                .max_cmd_time
                                .map_or(0.0, |m| f64::from(m) - f64::from(*top));
                            let wait = s.time - *at;
                            // And sent them on (a client hitch sends one packet after it:
                            // a held upstream every packet of the window, at once).
                            let seen = f64::from(self.c2s_in_stall);
                            let burst = f64::from(self.c2s_pending);
                            let sent = seen >= wait * STALL_MIN_RATE
                                || (burst >= wait * STALL_MIN_RATE
                                    && s.time - self.c2s_pending_since <= STALL_BURST_S);
                            if wait > STALL_S && *n >= STALL_MIN_S2C && made >= wait * 500.0 && sent
                            {
                                found = Some((*at, s.time, self.c2s_in_stall));
                            }
                            (*top, *at, *n) = (ct, s.time, 0);
                            self.c2s_in_stall = 0;
                            self.c2s_pending = 0;
                        }
                        // The same commandTime, or an older one after a map restart.
                        Some((top, at, n)) => {
                            if ct < *top {
                                (*top, *at, *n) = (ct, s.time, 0);
                                self.c2s_in_stall = 0;
                            } else {
                                *n = n.saturating_add(1);
                                self.c2s_in_stall =
                                    self.c2s_in_stall.saturating_add(self.c2s_pending);
                            }
                            self.c2s_pending = 0;
                        }
                        None => {
                            self.cmd_advance = Some((ct, s.time, 0));
                            self.c2s_in_stall = 0;
                        }
                    }
                }
            }
        }
        if let Some(st) = found {
            if self.stalls.len() < MAX_STALLS {
                self.stalls.push(st);
            }
        }
    }

    /// Watch for downstream stalls: client packets that go on carrying commands while their
    /// acknowledgement of the server's messages stands still for over [`STALL_S`] (both
    /// games: a client acknowledges the newest server message it has).
    fn down_watch(&mut self, s: &Sample) {
        let Some(st) = &mut self.ack_stand else {
            if let (Dir::C2s, Some(a)) = (s.dir, s.ack) {
                self.ack_stand = Some(AckStand::new(a, s.time));
            }
            return;
        };
        match (s.dir, s.ack) {
            (Dir::S2c, _) => {
                // The server's first packets after a stall (the answers to a released burst
                // come within a few milliseconds of each other).
                let wait = s.time - st.since;
                if st.s2c == 0 && wait > STALL_S && f64::from(st.c2s) >= wait * STALL_MIN_RATE {
                    self.release_until = s.time + STALL_BURST_S;
                }
                if s.time <= self.release_until {
                    self.stalled_gaps.0 += u64::from(s.gap);
                    self.stalled_gaps.1 += u64::from(s.chokes);
                }
                st.s2c = st.s2c.saturating_add(1);
            }
            (Dir::C2s, Some(a)) if a == st.seq => {
                if s.cmds.is_some_and(|c| c.new > 0) {
                    st.c2s = st.c2s.saturating_add(1);
                    st.last = s.time;
                }
            }
            (Dir::C2s, Some(a)) => {
                let ended = *st;
                *st = AckStand::new(a, s.time);
                // Older: a new connection's sequences (a reconnect), not an end.
                if a > ended.seq {
                    self.down_stall(ended, s.time);
                }
            }
            (Dir::C2s, None) => {}
        }
    }

    /// Watch for held upstreams by their release: a client packet with commands after a
    /// silence of over [`STALL_S`], followed within [`STALL_BURST_S`] by the rest of what the
    /// client sent meanwhile (at least [`STALL_BURST_RATE`] a second of the silence). A client
    /// that stops sending (loading, a hitch) sends a few packets after, not the window's.
    fn burst_end(&mut self, r: Option<Release>) {
        let Some(r) = r else {
            return;
        };
        if r.amount as f64 >= r.silence() * STALL_BURST_RATE && self.stalls.len() < MAX_STALLS {
            self.stalls.push((r.from, r.first, 0));
        }
    }

    /// A standing acknowledgement `st` ended at `end`: a downstream stall if it stood over
    /// [`STALL_S`] while the client sent commands all along.
    fn down_stall(&mut self, st: AckStand, end: f64) {
        let wait = end - st.since;
        if wait > STALL_S
            && f64::from(st.c2s) >= wait * STALL_MIN_RATE
            && st.last - st.since >= wait - STALL_S
            && self.down_stalls.len() < MAX_STALLS
        {
            self.down_stalls.push((st.since, end, st.s2c));
        }
    }

    /// Quake 3, a client packet acknowledging server message `a`: the ping as ioq3's
    /// SV_CalcPings has it. The server stamps a message with its frame time when it sends
    /// it (messageSent), and each client packet acknowledging it with the frame time current
    /// when the packet is read (messageAcked, overwritten by every later acknowledgement of
    /// the same message); the ping is messageAcked - messageSent. A server frame's time is
    /// when it sends: so the round trip runs from the message's send to the last server send
    /// before the message's last acknowledgement (0 on loopback, not one server frame).
    fn q3_engine_ack(&mut self, a: i64, now: f64) {
        let frame = self
            .q3_sent
            .iter()
            .rev()
            .find(|x| x.1 <= now)
            .map_or(now, |x| x.1);
        let sent = &self.q3_sent;
        let ended = self
            .q3_acking
            .ack(a, frame, || sent.iter().find(|x| x.0 == a).map(|x| x.1));
        if let Some((seq, sent, acked)) = ended {
            self.q3_engine_rtt(seq, sent, acked);
        }
    }

    /// Quake 3, a client packet acknowledging server message `a`, seen at `now`: the
    /// server's ping as the client's side can estimate it. SV_CalcPings stamps message `a`
    /// with the frame time T it was sent in, and its acknowledgement with the frame time
    /// current when the server reads the last client packet acknowledging it; frames come
    /// every `frame` ms from T. At the client's side `a` arrived at t_a = T + down, its last
    /// acknowledgement left at t_l and reached the server at t_l + up: so the server's ping
    /// is `frame * floor((t_l - t_a + round trip) / frame)` (0 on loopback, where each
    /// message is acknowledged before the next frame). The round trip is the lowest recent
    /// `Command` one (a command that reached the server just before a frame waited least).
    fn q3_client_hold(&mut self, a: i64, now: f64) {
        let sent = &self.q3_sent;
        let ended = self.q3_holding.ack(a, now, || {
            sent.iter()
                .find(|x| x.0 == a)
                .map(|x| x.1)
                .filter(|&t| t <= now)
        });
        if let Some((seq, arrived, last)) = ended {
            self.q3_server_ping(seq, arrived, last);
        }
    }

    fn q3_server_ping(&mut self, seq: i64, arrived: f64, last: f64) {
        let (Some(frame), Some(&(_, path))) = (self.frame_ms, self.path_rtt.front()) else {
            return;
        };
        let held = (last - arrived) * 1000.0;
        let ms = frame * ((held + path) / frame).floor();
        if !(0.0..f64::INFINITY).contains(&ms) {
            return;
        }
        self.rtt_sample(RttMethod::Server, arrived, ms);
        if let Some(st) = &mut self.strip {
            st.latency(RttMethod::Server, Some(seq), ms);
        }
    }

    /// A `Command` round trip of `ms` for a packet sent at `sent`, into the window of
    /// recent ones ([`Self::path_rtt`]).
    fn note_path_rtt(&mut self, sent: f64, ms: f64) {
        let q = &mut self.path_rtt;
        while q.back().is_some_and(|&(_, x)| x >= ms) {
            q.pop_back();
        }
        q.push_back((sent, ms));
        while q
            .front()
            .is_some_and(|&(t, _)| t < sent - PATH_RTT_WINDOW_S)
        {
            q.pop_front();
        }
    }

    fn q3_engine_rtt(&mut self, seq: i64, sent: f64, acked: f64) {
        let ms = (acked - sent) * 1000.0;
        if !(0.0..f64::INFINITY).contains(&ms) {
            return;
        }
        self.rtt_sample(RttMethod::AckS2c, sent, ms);
        if let Some(st) = &mut self.strip {
            st.latency(RttMethod::AckS2c, Some(seq), ms);
        }
    }

    /// Acknowledgement `a` of the far direction's packets.
    fn far_ack(&mut self, s: &Sample, a: i64) {
        let far = 1 - di(s.dir);
        let q3 = !self.q3_sent.is_empty();
        if q3 && far == 1 {
            self.q3_engine_ack(a, s.time);
            self.q3_client_hold(a, s.time);
        }
        if let Some((sent, _)) = self.acks[far].ack(a, s.time, &mut self.settled) {
            if q3 && far == 1 {
                self.record_settled(far);
                return;
            }
            let (m, side, seq) = if far == 1 {
                (RttMethod::AckS2c, Dir::S2c, Some(a))
            } else {
                (RttMethod::AckC2s, Dir::C2s, None)
            };
            self.await_rtt(side, m, sent, seq);
        }
        self.record_settled(far);
    }

    /// The packets of direction `d` the acknowledgements settled into `self.settled` (most
    /// calls: none).
    #[inline]
    fn record_settled(&mut self, d: usize) {
        if self.settled.is_empty() {
            return;
        }
        for i in 0..self.settled.len() {
            let st = self.settled[i];
            self.record_one_settled(d, st);
        }
        self.settled.clear();
    }

    fn record_one_settled(&mut self, d: usize, st: Settled) {
        let t = &mut self.dir[d];
        if st.delivered {
            t.acked += 1;
        } else {
            t.unacked += 1;
        }
        if let Some(b) = self.bin(st.time, Cache::Settled) {
            let db = &mut b.dir[d];
            db.expected_ack += 1;
            if !st.delivered {
                db.lost_ack += 1;
                db.first_loss.get_or_insert(st.time);
                db.last_loss = Some(st.time);
            }
        }
        if let (Some(strip), false, 1) = (&mut self.strip, st.delivered, d) {
            strip.lost_ack(st.time);
        }
    }

    /// An engine reads packets at the start of its frame and sends at the end of the same
    /// frame, and both engines stamp a ping with their frame clock: so a round trip ends
    /// when the measuring side next sends (ioq3's SV_CalcPings counts server frames; the
    /// client's cl.snap.ping its own frame's time).
    fn await_rtt(&mut self, side: Dir, m: RttMethod, sent: f64, seq: Option<i64>) {
        let w = &mut self.awaiting[di(side)];
        if w.len() < MAX_AWAITING {
            w.push((m, sent, seq));
        }
    }

    fn complete_rtts(&mut self, d: usize, now: f64) {
        if self.awaiting[d].is_empty() {
            return;
        }
        for i in 0..self.awaiting[d].len() {
            let (m, sent, seq) = self.awaiting[d][i];
            let ms = (now - sent) * 1000.0;
            // A capture whose timestamps go back (damaged, or merged from clocks that
            // disagree) ends a round trip before it began: no sample. The histograms already
            // refused those, but the series' means and the round trips' variation took them
            // (a mean ping of -15,856,423,635 ms in a fuzzed capture).
            if !(0.0..f64::INFINITY).contains(&ms) {
                continue;
            }
            self.rtt_sample(m, sent, ms);
            if let Some(st) = &mut self.strip {
                st.latency(m, seq, ms);
            }
        }
        self.awaiting[d].clear();
    }

    /// A round trip, filed at the time its measured packet left (where a delay began).
    fn rtt_sample(&mut self, m: RttMethod, sent: f64, ms: f64) {
        let k = m as usize;
        if m == RttMethod::Command {
            self.note_path_rtt(sent, ms);
        }
        self.rtt[k].add(ms);
        self.rtt_var[k].add(ms);
        if let Some(b) = self.bin(sent, Cache::Rtt) {
            let r = &mut b.rtt[k];
            r.sum_ms += ms;
            r.n += 1;
            // Finite (two sample times apart): a comparison does what `f64::max` does.
            if ms > r.max_ms {
                r.max_ms = ms;
            }
        }
    }

    fn snapshot(&mut self, s: &Sample, snap: super::sample::SnapStamp, bi: Option<usize>) {
        self.snapshots += 1;
        self.rate_delayed += u64::from(snap.rate_delayed);
        if let Some(prev) = self.last_server_time {
            let step = f64::from(snap.server_time.wrapping_sub(prev));
            if step > 0.0 && self.frame_ms.is_none_or(|f| step < f) {
                self.frame_ms = Some(step);
            }
        }
        self.last_server_time = Some(snap.server_time);
        let j = self.jitter[1].add(s.time, f64::from(snap.server_time));
        self.bin_jitter(1, bi, j);
        if let Some(b) = bi.and_then(|i| self.bins.get_mut(i)) {
            b.snapshots += 1;
            b.rate_delayed += u32::from(snap.rate_delayed);
        }
        // The engine takes the newest client packet whose last command the server has run.
        let hit = self
            .cmd_ring
            .iter()
            .rev()
            .find(|(_, ct)| *ct <= snap.command_time)
            .copied();
        if let Some((sent, _)) = hit {
            // Each client packet counts once: the first snapshot that reaches it. Capture
            // times only go back in a damaged capture: in order, those are a prefix.
            if self.cmd_ring_unordered {
                self.cmd_ring.retain(|(t, _)| *t > sent);
                let r = &self.cmd_ring;
                self.cmd_ring_unordered = r.iter().zip(r.iter().skip(1)).any(|(a, b)| a.0 > b.0);
            } else {
                while self.cmd_ring.front().is_some_and(|&(t, _)| t <= sent) {
                    self.cmd_ring.pop_front();
                }
            }
            self.await_rtt(Dir::C2s, RttMethod::Command, sent, None);
        }
    }

    /// The running jitter estimate of direction `d` after an update, into bin `bi`.
    fn bin_jitter(&mut self, d: usize, bi: Option<usize>, j: Option<f64>) {
        if let (Some(j), Some(b)) = (j, bi.and_then(|i| self.bins.get_mut(i))) {
            b.jitter_sum[d] += j as f32;
            b.jitter_n[d] += 1;
        }
    }

    /// End of the capture: settle what the acknowledgements can still tell.
    pub fn finish(&mut self) {
        if let Some((seq, sent, acked)) = self.q3_acking.0.take() {
            self.q3_engine_rtt(seq, sent, acked);
        }
        if let Some((seq, arrived, last)) = self.q3_holding.0.take() {
            self.q3_server_ping(seq, arrived, last);
        }
        let r = self.c2s_burst.finish();
        self.burst_end(r);
        // The client left while its acknowledgement stood: the stall ran to its last packet.
        if let Some(st) = self.ack_stand.take() {
            self.down_stall(st, st.last);
        }
        for d in 0..2 {
            self.acks[d].finish(&mut self.settled);
            self.record_settled(d);
        }
        self.q3_s2c_fate();
    }

    /// Quake 3: which server packets never reached the client, from the client's own
    /// packets. An acknowledgement names only the newest server message the client had when
    /// it sent; a server message no client packet acknowledges either never arrived, or
    /// arrived together with the next one before the client sent again, or the client packets
    /// that acknowledged it were lost or held on the way back (a lag switch). Only the first
    /// is loss. The client stamps each packet with its last usercmd's serverTime, which runs
    /// a steady distance behind the newest snapshot it holds: normally at most `hi` (the
    /// 90th percentile of usercmd serverTime minus the acknowledged snapshot's serverTime).
    /// A client packet that still acknowledges a message before `n` when its usercmd time is
    /// past snapshot `n`'s serverTime + (`hi` - one snapshot interval) was sent when `n`
    /// should long have been there: `n` was lost. Replaces the acknowledgement table's
    /// settling for server packets (which read every skipped acknowledgement as loss).
    fn q3_s2c_fate(&mut self) {
        if self.q3_snaps.len() < 20 || self.q3_acks.is_empty() {
            return;
        }
        let mut snaps = std::mem::take(&mut self.q3_snaps);
        let mut acks = std::mem::take(&mut self.q3_acks);
        snaps.sort_by_key(|x| x.0);
        snaps.dedup_by_key(|x| x.0);
        acks.sort_unstable();
        let st_of = |seq: i64| {
            snaps
                .binary_search_by_key(&seq, |x| x.0)
                .ok()
                .map(|i| snaps[i].1)
        };
        let mut excess: Vec<i64> = acks
            .iter()
            .filter_map(|&(a, ct)| st_of(a).map(|st| i64::from(ct) - i64::from(st)))
            .collect();
        let mut steps: Vec<i64> = snaps
            .windows(2)
            .map(|w| i64::from(w[1].1) - i64::from(w[0].1))
            .filter(|&d| d > 0 && d < 5_000)
            .collect();
        if excess.len() < 20 || steps.is_empty() {
            return;
        }
        excess.sort_unstable();
        steps.sort_unstable();
        let hi = excess[excess.len() * 9 / 10];
        let frame = steps[steps.len() / 2];
        let margin = hi - frame;
        // Highest usercmd time among client packets acknowledging at most each message.
        let mut pmax = Vec::with_capacity(acks.len());
        let mut m = i64::MIN;
        for &(_, ct) in &acks {
            m = m.max(i64::from(ct));
            pmax.push(m);
        }
        let last_ack = acks.last().map_or(i64::MIN, |x| x.0);
        let d = 1;
        for b in &mut self.bins {
            let x = &mut b.dir[d];
            x.expected_ack = 0;
            x.lost_ack = 0;
            if x.lost_gap == 0 {
                x.first_loss = None;
                x.last_loss = None;
            }
        }
        let (mut delivered, mut lost) = (0u64, 0u64);
        for &(n, st, time) in &snaps {
            let i = acks.partition_point(|x| x.0 < n);
            let was_acked = acks.get(i).is_some_and(|x| x.0 == n);
            if !was_acked && n > last_ack {
                continue; // the capture ends before the client could tell
            }
            if !was_acked && i > 0 && stalled_before(&acks, i) {
                // The client sent on for a second and more acknowledging the same message:
                // nothing reached it meanwhile (a downstream stall). Whether what the server
                // sent then was dropped or held and delivered at once (the client then
                // acknowledges only the newest) no packet of this side tells: unjudged.
                continue;
            }
            let gone = !was_acked && i > 0 && pmax[i - 1] - i64::from(st) > margin;
            if gone {
                lost += 1;
            } else {
                delivered += 1;
            }
            if let Some(b) = self.existing_bin(time) {
                let x = &mut b.dir[d];
                x.expected_ack += 1;
                if gone {
                    x.lost_ack += 1;
                    x.first_loss = Some(x.first_loss.map_or(time, |f| f.min(time)));
                    x.last_loss = Some(x.last_loss.map_or(time, |l| l.max(time)));
                }
            }
        }
        self.dir[d].acked = delivered;
        self.dir[d].unacked = lost;
    }

    /// True once the far side acknowledged packets of direction `d`.
    pub fn acked(&self, d: Dir) -> bool {
        self.acks[di(d)].any_ack() || self.dir[di(d)].acked > 0
    }
}

/// Client packets acknowledged the same server message (the one before `acks[i]`, sorted
/// by acknowledgement then usercmd time) over more than [`STALL_MS`] of their usercmd
/// clock: the client got nothing new for that long.
fn stalled_before(acks: &[(i64, i32)], i: usize) -> bool {
    let a = acks[i - 1].0;
    let first = acks[..i].partition_point(|x| x.0 < a);
    i64::from(acks[i - 1].1) - i64::from(acks[first].1) > STALL_MS
}

/// A client that acknowledges one server message this long (ms of usercmd time) while it
/// sends got no server packet meanwhile: a stall of the downstream path, not packets lost
/// one by one (a client that receives acknowledges a new snapshot every 50–100 ms).
const STALL_MS: i64 = 1000;

/// Index of a direction in the per-direction arrays.
pub fn dir_index(d: Dir) -> usize {
    di(d)
}
