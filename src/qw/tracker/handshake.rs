//! Connectionless packets: the handshake (`getchallenge`, `challenge`, `connect`, `j`), queries
//! and their replies, routed to their flows or summed past the limits.
use super::*;

impl Tracker {
    pub(super) fn offer_oob(
        &mut self,
        d: &Datagram<'_>,
        table: &mut FlowTable,
        out: &mut Vec<Event>,
    ) -> bool {
        let body = d.payload.get(4..).unwrap_or(&[]);
        let c2s = oob::parse_c2s(body);
        if is_qw_client_command(&c2s, body) {
            let handshake = matches!(c2s, Oob::Getchallenge | Oob::Connect { .. });
            let existing = self.find_by_addrs(d.dst, d.src);
            let reuse = match (existing, &c2s) {
                // A new getchallenge after an accepted connection starts a new connection;
                // before acceptance (e.g. a rejected try) it continues the same handshake.
                (Some(i), Oob::Getchallenge) => self
                    .flows
                    .get(i)
                    .is_some_and(|f| f.handshake && !f.accepted),
                (Some(i), Oob::Connect { .. }) => self
                    .flows
                    .get(i)
                    .is_some_and(|f| f.handshake && !f.accepted),
                (Some(i), _) => self
                    .flows
                    .get(i)
                    .is_some_and(|f| !f.handshake || f.accepted),
                (None, _) => false,
            };
            let i = match (reuse, existing) {
                (true, Some(i)) => i,
                _ => match self.new_flow(d, handshake, table) {
                    Some(i) => i,
                    None => {
                        table.aggregate_query("qw", d.dst, body, d, Dir::C2s);
                        self.note_summarised(d.dst);
                        return true;
                    }
                },
            };
            if let (
                Some(f),
                Oob::Connect {
                    qport,
                    challenge,
                    userinfo,
                    ..
                },
            ) = (self.flows.get_mut(i), &c2s)
            {
                f.qport = Some(*qport);
                f.sum.qport = Some(*qport);
                f.sum.challenge = Some(*challenge);
                f.sum.protocol = Some(28);
                f.sum.name = info_value(userinfo, "name");
            }
            self.count(i, Dir::C2s, d, Some(c2s), out);
            return true;
        }
        // A server reply to a client we know.
        if let Some(i) = self.find_by_addrs(d.src, d.dst) {
            let s2c = oob::parse_s2c(body);
            let (handshake, accepted, released) =
                self.flows.get(i).map_or((false, false, true), |f| {
                    (f.handshake, f.accepted, f.released)
                });
            match &s2c {
                // A re-accept restarts the netchan; past the connections' limit an accepted
                // handshake keeps its row but gets no decoder state (bounded memory). A
                // released flow accepted again (its client back after 200 s from the same
                // address) is a new session: it counts as a connection again.
                Oob::Accept
                    if handshake
                        && ((accepted && !released) || self.connections < MAX_CONNECTIONS) =>
                {
                    if released {
                        if let Some(f) = self.flows.get_mut(i) {
                            f.released = false;
                            f.accepted = false;
                        }
                    } else if !accepted {
                        self.handshakes = self.handshakes.saturating_sub(1);
                    }
                    self.accept(i, d);
                }
                Oob::Challenge { challenge, .. } => {
                    if let Some(f) = self.flows.get_mut(i) {
                        f.sum.challenge = Some(*challenge);
                    }
                }
                _ => {}
            }
            self.count(i, Dir::S2c, d, Some(s2c), out);
            return true;
        }
        if body.first() == Some(&b'j') && self.accept_summarised(d, table, out) {
            return true;
        }
        let request: &[u8] = match body.first() {
            Some(b'n') => b"status",
            Some(b'c') => b"getchallenge",
            Some(b'j') => b"connect",
            _ => return false,
        };
        self.summarised_reply(d, request, table)
    }

    /// The server accepts a client whose handshake was summed past the handshakes' limit (a
    /// flood of spoofed `connect`s filled it): the connection starts here, decoded from its
    /// first netchan packet as any other (its `connect`, and so its userinfo, stays in the
    /// aggregate). False when the server has no aggregates or the connections are full.
    pub(super) fn accept_summarised(
        &mut self,
        d: &Datagram<'_>,
        table: &mut FlowTable,
        out: &mut Vec<Event>,
    ) -> bool {
        let summarised = self.summarised_servers.contains_key(&d.src);
        if !summarised || self.connections >= MAX_CONNECTIONS {
            return false;
        }
        if self.flows.len() >= MAX_FLOW_ROWS {
            table.refuse_row(d.frame);
            return false;
        }
        let i = self.push_flow(d.src, d.dst, true, table);
        self.accept(i, d);
        self.count(i, Dir::S2c, d, Some(Oob::Accept), out);
        true
    }

    /// Handshake flow `i` accepted by the server's `j` reply `d`: a netchan session starts
    /// (a new one at each accept), with a decoder state, counted as a connection.
    pub(super) fn accept(&mut self, i: usize, d: &Datagram<'_>) {
        let Some(f) = self.flows.get_mut(i) else {
            return;
        };
        if !f.accepted {
            self.connections += 1;
        }
        f.accepted = true;
        f.client_port = d.dst.port();
        self.by_accepted_pair.insert((d.src, d.dst), Some(i));
        if let Some(q) = f.qport {
            self.by_qport.insert(d.src, d.dst.ip(), q, i);
        }
        f.rx_c2s = Receiver::default();
        f.rx_s2c = Receiver::default();
        f.rel = [RelTrack::default(), RelTrack::default()];
        f.state = Some(Box::new(ServerState::new(false)));
    }

    /// A new flow of server `d.dst` and client `d.src`, or None past its kind's limit.
    pub(super) fn new_flow(
        &mut self,
        d: &Datagram<'_>,
        handshake: bool,
        table: &mut FlowTable,
    ) -> Option<usize> {
        let (count, limit) = if handshake {
            (&mut self.handshakes, MAX_CONNECTIONS)
        } else {
            (&mut self.queries, MAX_QUERY_FLOWS)
        };
        if self.flows.len() >= MAX_FLOW_ROWS {
            table.refuse_row(d.frame);
            return None;
        }
        if *count >= limit {
            return None;
        }
        *count += 1;
        Some(self.push_flow(d.dst, d.src, handshake, table))
    }

    /// A new flow of `server` and `client`, whatever the limits (the caller counted it).
    pub(super) fn push_flow(
        &mut self,
        server: SocketAddr,
        client: SocketAddr,
        handshake: bool,
        table: &mut FlowTable,
    ) -> usize {
        // QuakeWorld never adopted other UDP: a QW flow starts with a client command (or, past
        // the handshakes' limit, the server's accept).
        let id = table.claim(server, client, false).id;
        self.flows.push(Flow::new(id, server, client, handshake));
        let i = self.flows.len() - 1;
        self.by_pair.insert((server, client), Some(i));
        i
    }

    pub(super) fn note_summarised(&mut self, server: SocketAddr) {
        if self.summarised_servers.len() < crate::flow::table::MAX_AGGREGATES {
            self.summarised_servers.insert(server, ());
        }
    }

    /// A reply of a server whose queries were summed, to a client with no flow: counted as
    /// answered in the aggregate of `request`. False when the server has no aggregates.
    pub(super) fn summarised_reply(
        &mut self,
        d: &Datagram<'_>,
        request: &[u8],
        table: &mut FlowTable,
    ) -> bool {
        if self.summarised_servers.is_empty() || !self.summarised_servers.contains_key(&d.src) {
            return false;
        }
        table.aggregate_query("qw", d.src, request, d, Dir::S2c);
        true
    }

    /// Count a connectionless packet and emit its message.
    pub(super) fn count(
        &mut self,
        i: usize,
        dir: Dir,
        d: &Datagram<'_>,
        op: Option<Oob>,
        out: &mut Vec<Event>,
    ) {
        let decode = self.opts.decode;
        let Some(f) = self.flows.get_mut(i) else {
            return;
        };
        f.sum.count_packet(dir, d.payload.len(), d.ts_ns);
        if dir == Dir::C2s {
            f.sum.add_client_port(d.src.port());
        }
        if decode {
            let mut m = Message::new(f.id, dir, d.frame, d.ts_ns as f64 / 1e9, d.payload.len());
            m.connectionless = true;
            m.kind = "oob";
            if let Some(op) = op {
                m.ops.push(Op {
                    at: 4,
                    kind: OpKind::Oob(op),
                });
            }
            out.push(Event::Message(m));
        }
    }
}
