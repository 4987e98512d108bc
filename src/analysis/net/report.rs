//! From a connection's accumulation to what `quakecap net` prints: vantage, ping, loss,
//! jitter, rates, lag events and the per-interval series. The JSON keys are described field
//! by field in `docs/reference.md`.
#![warn(missing_docs)]
use serde::Serialize;

use super::acc::{Bin, FlowAcc, RttMethod, BIN_S};
use super::strip::Strip;
use crate::flow::{Dir, FlowSummary};

/// Where the capture was taken, as the traffic shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Vantage {
    /// At the client's end of the path: the server's packets show the path's gaps.
    Client,
    /// At the server's end: the client's packets show the path's gaps.
    Server,
    /// Somewhere along the path: both directions show gaps.
    Between,
    /// No gap either way and no telling side (loopback, a clean path).
    Unknown,
}

/// A pair of per-direction values, `null` where unknowable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Both<T> {
    /// Client to server.
    pub c2s: Option<T>,
    /// Server to client.
    pub s2c: Option<T>,
}

/// A connection's ping, as the engines define it from this vantage (see the guide's **Ping**).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Ping {
    /// Median (ms, to the millisecond).
    pub median: Option<f64>,
    /// 95th percentile (ms).
    pub p95: Option<f64>,
    /// Highest (ms).
    pub max: Option<f64>,
    /// "ack" (a packet seen leaving, to the far side's first acknowledgement of it),
    /// "command" (Quake 3 client side: usercmd sent to the first snapshot that ran it),
    /// "server" (Quake 3 client side: the server's ping estimated, see
    /// `RttMethod::Server` in the accumulator).
    pub method: Option<&'static str>,
    /// Round trips measured.
    pub samples: u64,
}

/// Jitter each way and of the ping.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct JitterOut {
    /// RFC 3550 interarrival jitter of the client's packets (ms), where they crossed the
    /// path before the capture and carry the sender's stamps.
    pub c2s: Option<f64>,
    /// The same for the server's packets (ms).
    pub s2c: Option<f64>,
    /// Mean absolute difference of successive ping samples (ms).
    pub rtt: Option<f64>,
    /// "rfc3550" when a direction's value comes from sender timestamps.
    pub method: &'static str,
}

/// A window of bad network.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LagEvent {
    /// "ping" or "loss".
    pub kind: &'static str,
    /// Seconds since the Unix epoch (capture clock).
    pub start: f64,
    /// End, seconds since the Unix epoch.
    pub end: f64,
    /// The direction that lagged, when known (a ping event's `c2s`: the client's upstream
    /// stalled, the server heard nothing or ran none of its commands; `s2c`: its downstream
    /// stalled, nothing the server sent reached it while it kept sending).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dir: Option<Dir>,
    /// Ping: the highest ping in the window (ms); loss: the worst loss fraction in it.
    pub peak: f64,
    /// Ping: the connection's median ping (ms); loss: the loss fraction over the window.
    pub baseline: f64,
}

impl LagEvent {
    /// A ping event's stalled direction in words ("upstream stalled"), if known.
    pub fn stalled(&self) -> Option<&'static str> {
        match (self.kind, self.dir) {
            ("ping", Some(Dir::C2s)) => Some("upstream stalled"),
            ("ping", Some(Dir::S2c)) => Some("downstream stalled"),
            _ => None,
        }
    }
}

/// One interval of the series.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Interval {
    /// Start, seconds since the Unix epoch.
    pub start: f64,
    /// Mean and highest ping of the samples whose packet left in the interval (ms).
    pub ping: Option<f64>,
    /// The highest of them (ms).
    pub ping_max: Option<f64>,
    /// Loss each way in the interval (fraction), by the connection's loss methods.
    pub loss: Both<f64>,
    /// Packets each way.
    pub packets: Both<u32>,
    /// UDP payload bytes each way.
    pub bytes: Both<u64>,
    /// Snapshots accepted (Quake 3).
    pub snapshots: u32,
    /// Of them, flagged SNAPFLAG_RATE_DELAYED.
    pub rate_delayed: u32,
    /// Mean of the running RFC 3550 jitter estimate over the interval (ms), each way where
    /// the connection's `jitter` is known.
    pub jitter: Both<f64>,
}

/// The network quality of one connection (one object of `quakecap net --json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NetQuality {
    /// The connection's `flows` id.
    pub flow: u32,
    /// `"q3"` or `"qw"`.
    pub game: &'static str,
    /// The player's name, when the capture tells it.
    pub name: Option<String>,
    /// First netchan packet, seconds since the Unix epoch (capture clock).
    pub first_time: f64,
    /// Last netchan packet, the same clock.
    pub last_time: f64,
    /// Where the capture was taken.
    pub vantage: Vantage,
    /// The ping.
    pub ping: Ping,
    /// Path loss each way (fraction 0..1), `None` where this vantage cannot know it.
    pub loss: Both<f64>,
    /// "gaps" (sequence gaps of packets that crossed the path before the capture) or "acks"
    /// (packets seen leaving that the far side never acknowledged).
    pub loss_method: Both<&'static str>,
    /// QuakeWorld client side, where neither direction's loss can be told apart (see
    /// `qw_loss_methods`): the share of the client's packets that got no answer, not
    /// counting the answers the server skipped for its rate limit (`svc_chokecount`); what
    /// ezQuake shows as packet loss. Both directions together: 1 - (1 - up)(1 - down).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub round_trip_loss: Option<f64>,
    /// Share of packets each way that were duplicates.
    pub duplicates: Both<f64>,
    /// Share of packets each way that arrived after a newer one.
    pub reordered: Both<f64>,
    /// Jitter each way and of the ping.
    pub jitter: JitterOut,
    /// Accepted snapshots per second (Quake 3).
    pub snapshot_rate: Option<f64>,
    /// Share of snapshots flagged SNAPFLAG_RATE_DELAYED (the client's `rate` is too low).
    pub rate_delayed: Option<f64>,
    /// Server datagrams per second.
    pub server_packet_rate: f64,
    /// Client datagrams per second.
    pub client_packet_rate: f64,
    /// New usercmds per client packet.
    pub usercmds_per_packet: Option<f64>,
    /// New usercmds per second: the client's command frame rate.
    pub fps: Option<f64>,
    /// UDP payload bytes per second each way.
    pub bytes_per_second: Both<f64>,
    /// Messages each way that came in fragments (gamestate, downloads).
    pub fragmented: Both<u64>,
    /// Windows of bad network.
    pub lag_events: Vec<LagEvent>,
    /// Seconds per entry of `series`.
    pub interval: f64,
    /// The connection over time, an entry per `interval`.
    pub series: Vec<Interval>,
    /// The round trips `ping` reports (HTML report only; not in the JSON).
    #[serde(skip)]
    pub ping_method: Option<RttMethod>,
    /// The lagometer strip (HTML report only; not in the JSON).
    #[serde(skip)]
    pub strip: Option<Box<Strip>>,
    /// Capture time from which samples are counted in the totals but not in the series or
    /// lag events: the connection's packets were too few for its span (hostile or damaged
    /// timestamps; absent for a real connection).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub binned_until: Option<f64>,
}

/// The near side's acknowledgements take at least this much longer (ms) than the far side's.
const MIN_PATH_GAP_MS: f64 = 20.0;
/// Round trips shorter than this (ms) cannot place the capture.
const MIN_PATH_MS: f64 = 30.0;
/// A direction needs this many packets before its loss or jitter means anything.
const MIN_PACKETS: u64 = 20;

fn both<T>(c2s: Option<T>, s2c: Option<T>) -> Both<T> {
    Both { c2s, s2c }
}

fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

/// Share of sequence numbers lost in a direction.
fn gap_loss(acc: &FlowAcc, d: usize) -> Option<f64> {
    let t = &acc.dir[d];
    // Late (reordered) packets filled gaps counted when a newer one arrived first.
    let lost = t.gaps.saturating_sub(t.out_of_order);
    ratio(lost, t.accepted + lost).filter(|_| t.accepted >= MIN_PACKETS)
}

/// mvdsv answers client packet N with server packet N: at the client, a server sequence
/// that never came is a client packet lost, an answer lost, or an answer skipped for the rate
/// limit (the next answer says how many: `svc_chokecount`). The first two are the loss. The
/// answers missing after a stall of over a second are not judged, nor the skips the server
/// counts in them: a held upstream's packets reach the server together and get a few
/// answers, and from here that looks like a loss (the stall is a lag event instead).
fn qw_round_trip_loss(acc: &FlowAcc) -> Option<f64> {
    let t = &acc.dir[1];
    let missing = t
        .gaps
        .saturating_sub(t.out_of_order)
        .saturating_sub(acc.stalled_gaps.0);
    let chokes = t.chokes.saturating_sub(acc.stalled_gaps.1);
    let lost = missing.saturating_sub(chokes);
    ratio(lost, (t.accepted + missing).saturating_sub(chokes)).filter(|_| t.accepted >= MIN_PACKETS)
}

fn ack_loss(acc: &FlowAcc, d: usize) -> Option<f64> {
    let t = &acc.dir[d];
    ratio(t.unacked, t.acked + t.unacked).filter(|_| t.acked >= MIN_PACKETS)
}

/// Which side the capture was near: the direction that crossed the path before the capture
/// point shows gaps, the other does not; with no gap anywhere, the side whose packets wait
/// a full round trip for their ack is the near one.
pub(crate) fn vantage(acc: &FlowAcc, game: &str) -> Vantage {
    let gappy = |d: usize| gap_loss(acc, d).is_some_and(|l| l > 0.002);
    if game == "qw" {
        return qw_vantage(acc, gappy(0));
    }
    match (gappy(0), gappy(1)) {
        (false, true) => Vantage::Client,
        (true, false) => Vantage::Server,
        // mvdsv numbers each reply after the client packet it answers: a client packet lost
        // before a server-side capture shows again as a server sequence skip.
        (true, true) if mirrors(acc) => Vantage::Server,
        (true, true) => Vantage::Between,
        (false, false) => by_ack_timing(acc),
    }
}

/// QuakeWorld servers echo the client's sequence (see [`qw_loss_methods`]): their gaps
/// also show client packets lost or answered together (even on loopback), so only client
/// gaps place the capture; else ack timing.
fn qw_vantage(acc: &FlowAcc, c2s_gaps: bool) -> Vantage {
    if c2s_gaps {
        return Vantage::Server;
    }
    by_ack_timing(acc)
}

/// The server's sequence gaps are the client's, echoed (no more of them, at most 20% more).
fn mirrors(acc: &FlowAcc) -> bool {
    let (c, s) = (&acc.dir[0], &acc.dir[1]);
    s.gaps <= c.gaps + c.gaps / 5 + 2
}

fn by_ack_timing(acc: &FlowAcc) -> Vantage {
    let s2c = acc.rtt[RttMethod::AckS2c as usize].quantile(0.5);
    let c2s = acc.rtt[RttMethod::AckC2s as usize].quantile(0.5);
    match (s2c, c2s) {
        // Below this the path is too short (loopback) to tell a round trip from a reply.
        (Some(s), Some(c)) if s.max(c) < MIN_PATH_MS => Vantage::Unknown,
        // The near side waits a path round trip; the far side only its next frame.
        (Some(s), Some(c)) if s > c + MIN_PATH_GAP_MS => Vantage::Server,
        (Some(s), Some(c)) if c > s + MIN_PATH_GAP_MS => Vantage::Client,
        _ => Vantage::Unknown,
    }
}

/// The round-trip method that matches the engines' ping from this vantage point.
fn ping_method(acc: &FlowAcc, v: Vantage) -> Option<RttMethod> {
    let has = |m: RttMethod| !acc.rtt[m as usize].is_empty();
    let order: &[RttMethod] = match v {
        Vantage::Client => &[RttMethod::AckC2s, RttMethod::Command],
        Vantage::Server => &[RttMethod::AckS2c],
        Vantage::Between | Vantage::Unknown => {
            &[RttMethod::AckS2c, RttMethod::AckC2s, RttMethod::Command]
        }
    };
    order.iter().copied().find(|&m| has(m))
}

/// The method of the ping summary: at a Quake 3 client's side the server's ping as the
/// capture can estimate it (what `status` and the scoreboard show), the figure a player
/// compares; elsewhere the timing method itself. (The series over time and the lag events
/// keep the timing method: at the client's side that is the client's own `cl.snap.ping`,
/// which answers to a delay at once, where the estimate waits for its round trip.)
fn summary_method(acc: &FlowAcc, v: Vantage, m: Option<RttMethod>) -> Option<RttMethod> {
    let server = RttMethod::Server;
    match (v, m) {
        (Vantage::Client, Some(RttMethod::Command)) if !acc.rtt[server as usize].is_empty() => {
            Some(server)
        }
        _ => m,
    }
}

fn ping(acc: &FlowAcc, m: Option<RttMethod>) -> Ping {
    let Some(m) = m else {
        return Ping::default();
    };
    let h = &acc.rtt[m as usize];
    Ping {
        median: h.quantile(0.5),
        p95: h.quantile(0.95),
        max: h.max(),
        method: Some(match m {
            RttMethod::Command => "command",
            RttMethod::Server => "server",
            _ => "ack",
        }),
        samples: h.len(),
    }
}

/// How each direction's loss can be known from here (None: it cannot).
fn loss_methods(acc: &FlowAcc, v: Vantage, game: &str) -> Both<&'static str> {
    let ack = |d: usize| acc.acked(if d == 0 { Dir::C2s } else { Dir::S2c });
    if game == "qw" {
        return qw_loss_methods(v);
    }
    match v {
        Vantage::Client => both(ack(0).then_some("acks"), Some("gaps")),
        Vantage::Server => both(Some("gaps"), ack(1).then_some("acks")),
        // A capture in the middle sees only part of the path each way.
        Vantage::Between => both(None, None),
        // No gap either way and no telling side: what the capture saw is all that is known.
        Vantage::Unknown => both(Some("gaps"), Some("gaps")),
    }
}

/// mvdsv answers each client packet it processes with a packet numbered like it (sequence
/// and ack both the client's sequence; several client packets in one server frame get one
/// answer). So a server sequence missing at the client is a client packet lost, a server
/// packet lost, or a coalesced answer — the sequences cannot tell which, and the client's
/// ack only names its newest packet, while answers arrive as often as it sends (two within
/// one client frame leave the first unacknowledged though it arrived). Only the client's
/// own gaps at a server-side capture are path loss alone.
fn qw_loss_methods(v: Vantage) -> Both<&'static str> {
    match v {
        Vantage::Server | Vantage::Unknown => both(Some("gaps"), None),
        Vantage::Client | Vantage::Between => both(None, None),
    }
}

fn loss_value(acc: &FlowAcc, d: usize, m: Option<&'static str>) -> Option<f64> {
    match m? {
        "gaps" => gap_loss(acc, d),
        _ => ack_loss(acc, d),
    }
}

/// Jitter each way where the direction's packets crossed the path before the capture and
/// the sender stamped them (Quake 3); the ping variation otherwise.
fn jitter(acc: &FlowAcc, v: Vantage, m: Option<RttMethod>) -> JitterOut {
    let crossed = |d: usize| match v {
        Vantage::Client => d == 1,
        Vantage::Server => d == 0,
        Vantage::Between | Vantage::Unknown => true,
    };
    let dir = |d: usize| {
        (crossed(d) && acc.dir[d].accepted >= MIN_PACKETS)
            .then(|| acc.jitter[d].mean())
            .flatten()
    };
    let (c2s, s2c) = (dir(0), dir(1));
    JitterOut {
        c2s,
        s2c,
        rtt: m.and_then(|m| acc.rtt_var[m as usize].mean()),
        method: if c2s.is_some() || s2c.is_some() {
            "rfc3550"
        } else {
            "rtt"
        },
    }
}

/// Build the report of one connection.
pub(crate) fn build(acc: &FlowAcc, sum: &FlowSummary, interval: f64) -> NetQuality {
    let v = vantage(acc, sum.game);
    let m = ping_method(acc, v);
    let lm = loss_methods(acc, v, sum.game);
    let loss = both(loss_value(acc, 0, lm.c2s), loss_value(acc, 1, lm.s2c));
    let lm = both(
        lm.c2s.filter(|_| loss.c2s.is_some()),
        lm.s2c.filter(|_| loss.s2c.is_some()),
    );
    let span = (acc.t_last - acc.t0).max(1e-3);
    let (c, s) = (&acc.dir[0], &acc.dir[1]);
    let ping = ping(acc, summary_method(acc, v, m));
    // The lag events' baseline is the timing method's own.
    let baseline = match ping.method {
        Some("server") => m.and_then(|m| acc.rtt[m as usize].quantile(0.5)),
        _ => ping.median,
    };
    let lag_events = super::events::find(
        acc,
        m,
        baseline,
        &lm,
        v == Vantage::Client,
        sum.game == "qw",
    );
    let jitter = jitter(acc, v, m);
    let jd = both(jitter.c2s.map(|_| ()), jitter.s2c.map(|_| ()));
    let per = ((interval / BIN_S).round() as usize).max(1);
    NetQuality {
        flow: sum.id,
        game: sum.game,
        name: sum.name.clone(),
        first_time: acc.t0,
        last_time: acc.t_last,
        vantage: v,
        series: series(acc, m, &lm, &jd, per),
        interval: per as f64 * BIN_S,
        jitter,
        strip: acc.strip.clone(),
        ping_method: m,
        ping,
        round_trip_loss: (sum.game == "qw" && v == Vantage::Client)
            .then(|| qw_round_trip_loss(acc))
            .flatten(),
        loss,
        loss_method: lm,
        duplicates: both(
            ratio(c.duplicates, c.packets),
            ratio(s.duplicates, s.packets),
        ),
        reordered: both(
            ratio(c.out_of_order, c.packets),
            ratio(s.out_of_order, s.packets),
        ),
        snapshot_rate: (acc.snapshots > 0).then(|| acc.snapshots as f64 / span),
        rate_delayed: ratio(acc.rate_delayed, acc.snapshots),
        server_packet_rate: s.packets as f64 / span,
        client_packet_rate: c.packets as f64 / span,
        usercmds_per_packet: ratio(acc.new_cmds, c.accepted).filter(|_| acc.new_cmds > 0),
        fps: (acc.new_cmds > 0).then(|| acc.new_cmds as f64 / span),
        bytes_per_second: both(Some(c.bytes as f64 / span), Some(s.bytes as f64 / span)),
        fragmented: both(Some(c.fragmented), Some(s.fragmented)),
        lag_events,
        binned_until: acc.binned_until,
    }
}

/// Loss fraction of direction `d` over bins, by the direction's method.
pub(crate) fn bins_loss(bins: &[Bin], d: usize, method: Option<&'static str>) -> Option<f64> {
    let (lost, exp) = bins.iter().fold((0u64, 0u64), |(l, e), b| {
        let x = &b.dir[d];
        match method {
            Some("gaps") => (l + u64::from(x.lost_gap), e + u64::from(x.expected_gap)),
            Some(_) => (l + u64::from(x.lost_ack), e + u64::from(x.expected_ack)),
            None => (l, e),
        }
    });
    ratio(lost, exp)
}

/// `per` bins to an interval.
fn series(
    acc: &FlowAcc,
    m: Option<RttMethod>,
    lm: &Both<&'static str>,
    jd: &Both<()>,
    per: usize,
) -> Vec<Interval> {
    acc.bins
        .chunks(per)
        .enumerate()
        .map(|(i, bins)| interval_of(acc.t0 + (i * per) as f64 * BIN_S, bins, m, lm, jd))
        .collect()
}

fn interval_of(
    start: f64,
    bins: &[Bin],
    m: Option<RttMethod>,
    lm: &Both<&'static str>,
    jd: &Both<()>,
) -> Interval {
    let (sum, n, max) = m.map_or((0.0, 0, 0.0), |m| {
        bins.iter().fold((0.0, 0u32, 0.0f64), |(s, n, x), b| {
            let r = &b.rtt[m as usize];
            (s + r.sum_ms, n + r.n, x.max(r.max_ms))
        })
    });
    let pk = |d: usize| bins.iter().map(|b| b.dir[d].packets).sum::<u32>();
    let by = |d: usize| bins.iter().map(|b| b.dir[d].bytes).sum::<u64>();
    Interval {
        start,
        ping: (n > 0).then(|| sum / f64::from(n)),
        ping_max: (n > 0).then_some(max),
        loss: both(bins_loss(bins, 0, lm.c2s), bins_loss(bins, 1, lm.s2c)),
        packets: both(Some(pk(0)), Some(pk(1))),
        bytes: both(Some(by(0)), Some(by(1))),
        snapshots: bins.iter().map(|b| b.snapshots).sum(),
        rate_delayed: bins.iter().map(|b| b.rate_delayed).sum(),
        jitter: both(
            jd.c2s.and_then(|_| bins_jitter(bins, 0)),
            jd.s2c.and_then(|_| bins_jitter(bins, 1)),
        ),
    }
}

fn bins_jitter(bins: &[Bin], d: usize) -> Option<f64> {
    let (s, n) = bins.iter().fold((0.0, 0u32), |(s, n), b| {
        (s + f64::from(b.jitter_sum[d]), n + b.jitter_n[d])
    });
    (n > 0).then(|| s / f64::from(n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::net::sample::{Arrival, Sample};

    #[test]
    fn a_connection_of_a_few_packets_reports_nothing_made_up() {
        let mut acc = FlowAcc::new(100.0);
        for (i, dir) in [Dir::C2s, Dir::S2c, Dir::C2s].into_iter().enumerate() {
            let mut s = Sample::new(
                1,
                dir,
                100.0 + i as f64 * 0.05,
                40,
                i as i64,
                Arrival::Accepted,
            );
            s.gap = 1;
            acc.add(&s);
        }
        acc.finish();
        let sum = FlowSummary {
            id: 1,
            game: "q3",
            kind: "connection",
            ..Default::default()
        };
        let r = build(&acc, &sum, 1.0);
        assert_eq!(r.vantage, Vantage::Unknown);
        assert_eq!(r.loss, Both::default());
        assert_eq!(r.ping.median, None);
        assert_eq!((r.jitter.c2s, r.jitter.s2c), (None, None));
        assert!(r.lag_events.is_empty());
        assert_eq!(r.series.len(), 1);
    }
}
