//! One QuakeWorld flow's state: its netchan receivers, decode state and summary counters.
use super::*;

pub(super) struct Flow {
    pub(super) id: u32,
    pub(super) client_port: u16,
    pub(super) qport: Option<u16>,
    /// Saw the `j` reply: a netchan session exists.
    pub(super) accepted: bool,
    /// Started with a handshake (getchallenge / connect) rather than a query.
    pub(super) handshake: bool,
    pub(super) sum: FlowSummary,
    pub(super) rx_s2c: Receiver,
    pub(super) rx_c2s: Receiver,
    pub(super) rel: [RelTrack; 2],
    /// Decoder state of the server stream; allocated at the `j` reply (a query never needs it,
    /// and it holds 2048 baselines).
    pub(super) state: Option<Box<ServerState>>,
    /// Set for a connection recognised without its handshake.
    pub(super) mid: Option<Box<MidSession>>,
    /// Silent for [`IDLE_RELEASE_NS`]: the decoder state is gone and the flow no longer
    /// counts against the limits; later packets are only counted (see [`Tracker::scan_idle`])
    /// until the server accepts its client again.
    pub(super) released: bool,
}

impl Flow {
    pub(super) fn new(id: u32, server: SocketAddr, client: SocketAddr, handshake: bool) -> Self {
        let mut sum = FlowSummary {
            id,
            game: "qw",
            kind: if handshake { "connection" } else { "query" },
            server: server.to_string(),
            client_ip: client.ip().to_string(),
            ..Default::default()
        };
        sum.add_client_port(client.port());
        Flow {
            id,
            client_port: client.port(),
            qport: None,
            accepted: false,
            handshake,
            sum,
            rx_s2c: Receiver::default(),
            rx_c2s: Receiver::default(),
            rel: [RelTrack::default(), RelTrack::default()],
            state: None,
            mid: None,
            released: false,
        }
    }
}
