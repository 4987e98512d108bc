//! One netchan packet of a connection: the receiving side's netchan, the reliable stream, and
//! the decode of its message (server ops, client moves) into the events.
use super::*;

impl Tracker {
    pub(super) fn netchan(
        &mut self,
        i: usize,
        dir: Dir,
        d: &Datagram<'_>,
        out: &mut Vec<Event>,
        count: bool,
    ) {
        let decoding = self.decoding();
        let (emit, keep_raw) = (self.opts.decode, self.opts.keep_raw);
        let Some(f) = self.flows.get_mut(i) else {
            return;
        };
        if count {
            f.sum.count_packet(dir, d.payload.len(), d.ts_ns);
        }
        if f.released {
            // Both ends timed out long ago: no state to decode it with.
            return;
        }
        let Some(h) = Header::new_checked(d.payload, dir) else {
            return;
        };
        if let Some(mid) = &mut f.mid {
            if mid.lock.is_none() {
                mid.packets += 1;
            }
            let di = dir_index(dir);
            if let Some(false) = mid.started.get(di).copied() {
                // The netchan is taken up at the first packet of each direction: no drops
                // before it, and the peer's reliable parity as its acks say.
                mid.started[di] = true;
                let rx = match dir {
                    Dir::C2s => &mut f.rx_c2s,
                    Dir::S2c => &mut f.rx_s2c,
                };
                rx.incoming = h.sequence().saturating_sub(1);
                if let Some(t) = f.rel.get_mut(1 - di) {
                    t.parity = h.ack_reliable();
                    t.pending = None;
                }
            }
        }
        if dir == Dir::C2s
            && f.client_port != d.src.port()
            && f.sum.client_ports.len() < MAX_CLIENT_PORTS
        {
            // NAT rebinding: the server adopts the new port (spec §1).
            f.client_port = d.src.port();
            f.sum.add_client_port(d.src.port());
            self.by_pair.insert((d.dst, d.src), Some(i));
            self.by_accepted_pair.insert((d.dst, d.src), Some(i));
        }
        // Reliable delivery bookkeeping: this packet's ack tells the other direction's fate.
        let mut lost_s2c = None;
        let other = match dir {
            Dir::C2s => Dir::S2c,
            Dir::S2c => Dir::C2s,
        };
        if let Some(t) = f.rel.get_mut(dir_index(other)) {
            let lost = t.peer_ack(h.ack(), h.ack_reliable());
            if dir == Dir::C2s {
                lost_s2c = lost;
            }
        }
        let rx = match dir {
            Dir::C2s => &mut f.rx_c2s,
            Dir::S2c => &mut f.rx_s2c,
        };
        let verdict = rx.process(&h);
        let mut m = Message::new(f.id, dir, d.frame, d.ts_ns as f64 / 1e9, d.payload.len());
        m.seq = Some(i64::from(h.sequence()));
        m.ack = Some(i64::from(h.ack()));
        m.reliable = Some(h.reliable());
        m.ack_reliable = Some(h.ack_reliable());
        m.qport = h.qport();
        m.netchan = Some(match verdict {
            Verdict::Accepted { dropped } => {
                m.dropped = Some(dropped);
                *f.sum.dropped.get_mut(dir) += u64::from(dropped);
                NetchanStatus::Accepted
            }
            Verdict::Duplicate => {
                *f.sum.duplicates.get_mut(dir) += 1;
                NetchanStatus::Duplicate
            }
            Verdict::OutOfOrder => {
                *f.sum.out_of_order.get_mut(dir) += 1;
                NetchanStatus::OutOfOrder
            }
        });
        let accepted = matches!(verdict, Verdict::Accepted { .. });
        // Every reliable-flagged send counts, accepted or not: the very first c2s packet (seq 0,
        // "new") is dropped by the server and its block comes again in a later packet.
        if h.reliable() {
            if let Some(t) = f.rel.get_mut(dir_index(dir)) {
                let rt = t.sent_reliable(h.sequence());
                if accepted {
                    m.retransmit = Some(rt);
                }
            }
        }
        if !decoding {
            return;
        }
        let base = h.header_len();
        let mut raw_cmd = None;
        let mut drop = false;
        let mut spans = Vec::new();
        match dir {
            Dir::C2s => {
                // Client messages carry no state, so even packets the server drops are decoded
                // (their moves are still checksummed).
                let mut r = Reader::with_base(h.payload(), base);
                let ext = f.state.as_ref().map(|st| st.ext).unwrap_or_default();
                let (ops, err) = match f.mid.as_deref().filter(|m| !m.settled) {
                    // Only clc_tmove reads by the extensions (coordinate size): decoded with
                    // both sizes when the survivors differ, and kept only when they agree.
                    Some(mid) => {
                        let mut res = None;
                        let mut agree = true;
                        let mut tried: Vec<bool> = Vec::new();
                        for (e, _) in &mid.survivors {
                            if tried.contains(&e.big_coords()) {
                                continue;
                            }
                            tried.push(e.big_coords());
                            let mut rr = r.clone();
                            let got = clc::parse_message(&mut rr, h.sequence(), e);
                            match &res {
                                None => res = Some(got),
                                Some(x) => agree &= *x == got,
                            }
                        }
                        match res {
                            Some(x) if agree => x,
                            _ => (
                                Vec::new(),
                                Some(crate::qw::cursor::DecodeError {
                                    what: "client message left undecoded: coordinate size not yet determined".into(),
                                    at: base,
                                }),
                            ),
                        }
                    }
                    None => clc::parse_message(&mut r, h.sequence(), &ext),
                };
                for (_, op) in &ops {
                    if matches!(op, clc::ClientOp::Stringcmd { text } if text == "drop") {
                        drop = true;
                    }
                    if let clc::ClientOp::Move {
                        cmds, checksum_ok, ..
                    } = op
                    {
                        raw_cmd = Some(cmds[2]);
                        if !checksum_ok {
                            m.error.get_or_insert_with(|| {
                                Box::new(Error::new(
                                    ErrorKind::Checksum,
                                    "clc_move checksum mismatch",
                                ))
                            });
                        }
                    }
                }
                m.ops = ops
                    .into_iter()
                    .map(|(at, op)| Op {
                        at,
                        kind: OpKind::Client(op),
                    })
                    .collect();
                if let Some(e) = err {
                    m.error = Some(Box::new(Error::from(&e)));
                }
            }
            Dir::S2c if accepted => {
                let st = f
                    .state
                    .get_or_insert_with(|| Box::new(ServerState::new(false)));
                st.seq = h.sequence();
                let decoded = match f.mid.as_deref_mut() {
                    Some(mid) if !mid.settled => {
                        let got = decode_unsettled(st, mid, h.payload(), base);
                        if got.is_none() {
                            mid.undecoded += 1;
                        }
                        got
                    }
                    _ => {
                        let mut r = Reader::with_base(h.payload(), base);
                        Some(svc::parse_message(st, &mut r))
                    }
                };
                if let Some(mid) = f.mid.as_deref_mut() {
                    if decoded.is_some() && mid.lock.is_none() {
                        mid.lock = Some((d.frame, mid.packets));
                    }
                    if mid.settled && mid.settled_frame.is_none() {
                        mid.settled_frame = Some(d.frame);
                    }
                }
                let (ops, err) = decoded.unwrap_or_else(|| {
                    (
                        Vec::new(),
                        Some(crate::qw::cursor::DecodeError {
                            what: "server message left undecoded: protocol extensions not yet determined".into(),
                            at: base,
                        }),
                    )
                });
                let ends: Vec<usize> = ops
                    .iter()
                    .skip(1)
                    .map(|(at, _)| *at)
                    .chain(std::iter::once(d.payload.len()))
                    .collect();
                for ((at, op), end) in ops.iter().zip(ends) {
                    spans.push((*at, end, op.id()));
                    match op {
                        ServerOp::Serverdata(sd) => {
                            f.sum.protocol = u32::try_from(sd.protocol).ok();
                            if let Some(mid) = f.mid.as_deref_mut() {
                                mid.settled = true;
                                mid.settled_frame.get_or_insert(d.frame);
                                mid.serverdata_frame.get_or_insert(d.frame);
                            }
                        }
                        ServerOp::Modellist(l) | ServerOp::FteModellistshort(l) => {
                            if let Some(map) = l.map_name() {
                                f.sum.add_map(map);
                            }
                        }
                        _ => {}
                    }
                }
                m.ops = Op::servers(ops);
                m.error = err.map(|e| Box::new(Error::from(&e)));
            }
            Dir::S2c => {}
        }
        if let Some(e) = &mut m.error {
            // The decoders know the byte; the flow knows where the message is.
            e.pos.flow = Some(f.id);
            e.pos.frame = Some(d.frame);
            e.pos.dir = Some(dir);
            if e.message.ends_with("not yet determined") {
                // Counted in the flow's one mid-session report, not once per message.
                e.kind = ErrorKind::MidSession;
            } else {
                f.sum.push_error(Error::clone(e));
            }
        }
        if keep_raw {
            let raw = RawPacket {
                flow: f.id,
                dir,
                frame: d.frame,
                ts_ns: d.ts_ns,
                seq: h.sequence(),
                ack: h.ack(),
                accepted,
                payload: if dir == Dir::S2c && accepted {
                    d.payload.to_vec()
                } else {
                    Vec::new()
                },
                spans,
                cmd: raw_cmd,
                drop,
                lost_s2c,
                pre_signon: f.state.as_ref().is_some_and(|st| !st.baselines_known),
            };
            if (dir == Dir::S2c && accepted) || raw.cmd.is_some() || drop || lost_s2c.is_some() {
                out.push(Event::Raw(raw));
            }
        }
        if emit {
            out.push(Event::Message(m));
        }
    }
}
