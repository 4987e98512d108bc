//! The game-neutral observation the network analysis reads: one per netchan datagram of a
//! connection, filled by a thin per-game extractor (`q3::conn`, `qw::netsample`).
use super::Dir;

/// What the receiving engine's netchan did with the datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// A new (complete) message: processed.
    Accepted,
    /// A sequence already accepted: dropped by the receiver.
    Duplicate,
    /// A sequence below the last accepted one: dropped as stale.
    OutOfOrder,
    /// A fragment of a message not complete yet (Quake 3).
    Fragment,
}

/// What a Quake 3 snapshot says about the server's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapStamp {
    /// Server time of the snapshot (ms): the sender's timestamp.
    pub server_time: i32,
    /// SNAPFLAG_RATE_DELAYED: the server held back a snapshot for the client's `rate`.
    pub rate_delayed: bool,
    /// The playerstate's commandTime: the last usercmd the server ran for this client.
    pub command_time: i32,
}

/// The usercmds a client packet carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CmdStamp {
    /// Commands not seen in earlier packets (the client's frames since the last packet).
    pub new: u32,
    /// serverTime (ms) of the packet's last command (Quake 3), the client's send stamp.
    pub last_time: Option<i32>,
}

/// One netchan datagram of a connection, as the capture saw it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// The connection's `flows` id.
    pub flow: u32,
    /// Which way the datagram went.
    pub dir: Dir,
    /// 1-based capture frame of the packet (0 when not told): ties the sample to its packet
    /// (`annotate` comments that packet).
    pub frame: u64,
    /// Capture time, seconds since the Unix epoch.
    pub time: f64,
    /// UDP payload bytes.
    pub bytes: u32,
    /// Netchan sequence.
    pub seq: i64,
    /// What the receiving netchan made of it (accepted, duplicate, out of order, ...).
    pub arrival: Arrival,
    /// Sequence numbers skipped just before this accepted one.
    pub gap: u32,
    /// The far side's sequence this packet acknowledges (QuakeWorld: both directions;
    /// Quake 3: client messages' messageAcknowledge).
    pub ack: Option<i64>,
    /// The packet carries a reliable block (QuakeWorld header bit).
    pub reliable: bool,
    /// The message came in fragments (counted on the datagram that completed it).
    pub fragmented: bool,
    /// The snapshot's stamps, for a server message carrying one (Quake 3).
    pub snapshot: Option<SnapStamp>,
    /// The usercmds, for a client message carrying some.
    pub cmds: Option<CmdStamp>,
    /// Answers the server says it did not send since its previous packet, for the rate
    /// limit (QuakeWorld `svc_chokecount`).
    pub chokes: u8,
}

impl Sample {
    /// A datagram with nothing decoded yet.
    pub fn new(flow: u32, dir: Dir, time: f64, bytes: usize, seq: i64, arrival: Arrival) -> Self {
        Sample {
            flow,
            dir,
            frame: 0,
            time,
            bytes: u32::try_from(bytes).unwrap_or(u32::MAX),
            seq,
            arrival,
            gap: 0,
            ack: None,
            reliable: false,
            fragmented: false,
            snapshot: None,
            cmds: None,
            chokes: 0,
        }
    }
}
