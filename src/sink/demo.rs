//! Demo writing as a sink: routes each Quake 3 connection's accepted server messages to a
//! `.dm_NN` writer (q3-protocol.md §7.5). The demo starts at the connection's real gamestate
//! message and keeps every later message verbatim (descrambled, Huffman bytes untouched,
//! original sequence numbers). A delta snapshot whose base is not in the demo is re-encoded
//! as a full snapshot when the decoder holds its state, and dropped otherwise while the
//! message's server commands are kept (re-encoded message).
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{self, Write};

use crate::pipeline::{Event, Sink};
use crate::q3::baselines::Baselines;
use crate::q3::bits::BitWriter;
use crate::q3::demo::Writer;
use crate::q3::message::Message;
use crate::q3::svc::{emit, ServerOp};

/// Counts of what the writer did for one demo.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct DemoStats {
    /// Records written (QuakeWorld: dem_read and dem_cmd blocks).
    pub records: u64,
    /// Snapshots written (QuakeWorld: the server packets of a cut, else 0).
    pub snapshots: u64,
    /// Gamestates written (QuakeWorld: 1, the signon).
    pub gamestates: u64,
    /// Delta snapshots re-encoded as full ones (base missing from the demo).
    pub reencoded: u64,
    /// Snapshots dropped because their state could not be reconstructed.
    pub dropped_snapshots: u64,
    /// Messages whose svc_download ops were removed (re-encoded without them).
    pub downloads_removed: u64,
    /// Server messages skipped before the first gamestate.
    pub before_gamestate: u64,
    /// Messages that failed to decode (skipped: the real client would have dropped on them).
    pub skipped_bad: u64,
    /// Quake 3: serverTime (ms) of the first snapshot written.
    pub first_server_time: Option<i32>,
    /// Quake 3: serverTime (ms) of the last snapshot written.
    pub last_server_time: Option<i32>,
    /// Game time covered, in ms: the forward steps between consecutive snapshots, summed.
    /// Server time restarts at a map change (and a stale snapshot of the old map may follow
    /// the new gamestate), so `last - first` is wrong, even negative, across one.
    pub game_ms: u64,
    /// A gamestate came since the last snapshot: the next step is not game time.
    #[serde(skip)]
    pub new_map: bool,
    /// The map of the demo's first gamestate (Quake 3 `mapname`; QuakeWorld: the model
    /// list's `maps/NAME.bsp`).
    pub map: Option<String>,
    /// The recording player's name, colour codes kept (Quake 3: the gamestate's `CS_PLAYERS`
    /// entry of its `clientNum`; QuakeWorld: the flow's player name).
    pub player: Option<String>,
    /// A QuakeWorld cut: what it holds, for the summary line.
    #[serde(skip)]
    pub qw_cut: Option<crate::qw::cut::CutStats>,
}

impl DemoStats {
    /// Count a snapshot's server time into [`DemoStats::game_ms`].
    fn snapshot_time(&mut self, t: i32) {
        if let Some(prev) = self.last_server_time.filter(|_| !self.new_map) {
            // A step back is a restart (map change): nothing to add.
            self.game_ms += u64::try_from(i64::from(t) - i64::from(prev)).unwrap_or(0);
        }
        self.new_map = false;
        self.first_server_time.get_or_insert(t);
        self.last_server_time = Some(t);
    }
}

/// How the writer treats snapshots.
#[derive(Debug, Clone, Copy, Default)]
pub struct DemoOptions {
    /// QuakeWorld: write only this window of each connection ([`crate::qw::cut`]); the
    /// writer must then see every packet of the connection (the cut rebuilds the client's
    /// state from those before the window).
    pub qw_cut: Option<crate::qw::cut::Window>,
    /// Re-encode every snapshot as full (the demo can then be cut anywhere).
    pub full_snapshots: bool,
    /// Start a new output at every gamestate after the first.
    pub split_maps: bool,
}

/// Where one demo goes.
pub trait DemoOutput {
    /// Where one demo's bytes are written.
    type W: Write;
    /// Open the output for `flow`'s `part`-th map (0-based), named after `map`/`player`.
    fn open(
        &mut self,
        flow: u32,
        part: u32,
        protocol: u32,
        map: Option<&str>,
        player: Option<&str>,
    ) -> io::Result<Self::W>;
    /// The output is complete.
    fn closed(&mut self, flow: u32, part: u32, w: Self::W, stats: &DemoStats) -> io::Result<()>;
}

/// Demos kept in memory (library users and tests): by (flow, part), the bytes and stats.
#[derive(Debug, Default)]
pub struct MemoryDemos {
    /// Each finished demo's bytes and stats, by (flow id, part).
    pub files: BTreeMap<(u32, u32), (Vec<u8>, DemoStats)>,
}

impl DemoOutput for MemoryDemos {
    type W = Vec<u8>;
    fn open(
        &mut self,
        _: u32,
        _: u32,
        _: u32,
        _: Option<&str>,
        _: Option<&str>,
    ) -> io::Result<Vec<u8>> {
        Ok(Vec::new())
    }
    fn closed(&mut self, flow: u32, part: u32, w: Vec<u8>, stats: &DemoStats) -> io::Result<()> {
        self.files.insert((flow, part), (w, stats.clone()));
        Ok(())
    }
}

struct Open<W: Write> {
    writer: Writer<W>,
    stats: DemoStats,
    part: u32,
}

struct FlowDemo<W: Write> {
    open: Option<Open<W>>,
    parts: u32,
    /// Snapshot message numbers present (valid) in the demo being written.
    written: HashSet<i32>,
    baselines: Baselines,
    before_gamestate: u64,
}

/// Writes one demo per Quake 3 connection.
pub struct DemoSink<O: DemoOutput> {
    out: O,
    opts: DemoOptions,
    flows: HashMap<u32, FlowDemo<O::W>>,
    /// QuakeWorld connections: one .qwd writer each, in memory until the connection ends
    /// (or, for a cut, which counts from the capture's first packet, the input does).
    qw: BTreeMap<u32, crate::qw::qwd::Writer>,
    /// .qwd files written per QuakeWorld flow (a flow that resumes gets the next part).
    qw_parts: HashMap<u32, u32>,
    /// Flows whose server stream never reached a gamestate (QuakeWorld: a signon): (flow,
    /// messages seen).
    pub no_gamestate: Vec<(u32, u64)>,
    /// QuakeWorld connections whose cut was not written, and why.
    pub qw_not_cut: Vec<(u32, String)>,
    /// Capture time (ns) of the first QuakeWorld packet: the base of relative cut times.
    qw_first_ns: Option<i64>,
}

impl<O: DemoOutput> DemoSink<O> {
    /// A sink that writes its demos to `out`.
    pub fn new(out: O, opts: DemoOptions) -> Self {
        DemoSink {
            out,
            opts,
            flows: HashMap::new(),
            qw: BTreeMap::new(),
            qw_parts: HashMap::new(),
            no_gamestate: Vec::new(),
            qw_not_cut: Vec::new(),
            qw_first_ns: None,
        }
    }

    /// The output back, once the run has finished (every demo is then closed).
    pub fn into_output(self) -> O {
        self.out
    }

    /// Demos being written now: Quake 3 files open and QuakeWorld .qwd held in memory.
    pub fn open(&self) -> usize {
        self.flows.values().filter(|f| f.open.is_some()).count() + self.qw.len()
    }

    fn close(&mut self, flow: u32) -> io::Result<()> {
        if let Some(fd) = self.flows.get_mut(&flow) {
            if let Some(mut o) = fd.open.take() {
                o.stats.records = o.writer.records;
                let w = o.writer.finish()?;
                self.out.closed(flow, o.part, w, &o.stats)?;
            }
        }
        Ok(())
    }
}

fn gamestate_info(m: &Message) -> Option<(Option<String>, Option<String>, Baselines)> {
    let sm = m.server()?;
    sm.ops.iter().find_map(|op| match op {
        ServerOp::Gamestate(g) => {
            let cs = |i: u16| {
                g.configstrings
                    .iter()
                    .find(|c| c.index == i)
                    .map(|c| c.value.as_str())
            };
            let map = cs(0).and_then(|s| crate::q3::oob::info_value(s, "mapname"));
            // clientNum comes from the message: any i32.
            let player = u16::try_from(g.client_num)
                .ok()
                .and_then(|c| {
                    let players = crate::q3::protocol::Protocol::of(m.protocol).cs.players;
                    c.checked_add(players as u16)
                })
                .and_then(cs)
                .and_then(|s| crate::q3::oob::info_value(s, "n"));
            let mut baselines = Baselines::default();
            for b in &g.baselines {
                if let Ok(n) = usize::try_from(b.state.number) {
                    baselines.set(n, &b.state);
                }
            }
            Some((map, player, baselines))
        }
        _ => None,
    })
}

/// Decide what to write for one message: `None` = verbatim, `Some(bytes)` = re-encoded,
/// and whether its snapshot (if any) ends up in the demo.
///
/// Re-encoded: messages with svc_download (a playing client has requested no download and
/// would stop parsing there), and delta snapshots whose base is not in the demo.
fn plan(
    m: &Message,
    fd: &FlowDemo<impl Write>,
    opts: DemoOptions,
    stats: &mut DemoStats,
) -> (Option<Vec<u8>>, Option<i32>) {
    let Some(sm) = m.server() else {
        return (None, None);
    };
    let seq = m.seq.unwrap_or(0);
    let snap = sm.ops.iter().find_map(|op| match op {
        ServerOp::Snapshot(s) => Some(s),
        _ => None,
    });
    let has_download = sm.ops.iter().any(|op| matches!(op, ServerOp::Download(_)));
    let verbatim_snapshot = snap.is_none_or(|s| {
        let base_ok = s.delta_num == 0 || fd.written.contains(&s.delta_base);
        base_ok && s.valid && !(opts.full_snapshots && s.delta_num != 0)
    });
    if !has_download && verbatim_snapshot {
        return (None, snap.map(|_| seq));
    }
    // Re-encode: ack, the server commands, the snapshot as full (if its state is known), EOF.
    let proto = crate::q3::protocol::Protocol::of(m.protocol);
    let keep_snapshot = snap.is_some_and(|s| s.valid);
    let mut w = BitWriter::new();
    emit::ack(&mut w, sm.ack);
    for op in &sm.ops {
        match op {
            ServerOp::ServerCommand { seq, text, .. } => {
                emit::server_command(&mut w, proto, *seq, text)
            }
            ServerOp::Snapshot(s) if keep_snapshot => {
                emit::full_snapshot(&mut w, proto, &s.frame, &fd.baselines)
            }
            _ => {}
        }
    }
    emit::eof(&mut w);
    if has_download {
        stats.downloads_removed += 1;
    }
    match snap {
        Some(s) if keep_snapshot => {
            if s.delta_num != 0 {
                stats.reencoded += 1;
            }
            (Some(w.finish()), Some(seq))
        }
        Some(_) => {
            stats.dropped_snapshots += 1;
            (Some(w.finish()), None)
        }
        None => (Some(w.finish()), None),
    }
}

impl<O: DemoOutput> DemoSink<O> {
    /// Write the .qwd of every QuakeWorld connection still open that reached its signon.
    fn finish_qw(&mut self, r: &crate::pipeline::Report) -> io::Result<()> {
        // Relative cut times count from the file's first game packet (any flow).
        let first_packet = r
            .flows
            .iter()
            .map(|f| f.first_time)
            .filter(|t| *t > 0.0)
            .reduce(f64::min);
        for (flow, w) in std::mem::take(&mut self.qw) {
            let player = r
                .flows
                .iter()
                .find(|f| f.id == flow)
                .and_then(|f| f.name.clone());
            self.write_qw(flow, w, player, first_packet)?;
        }
        Ok(())
    }

    /// Write one QuakeWorld connection's .qwd (its next part when the flow had one before);
    /// `first_packet`: the capture's first game packet, for relative cut times.
    fn write_qw(
        &mut self,
        flow: u32,
        w: crate::qw::qwd::Writer,
        player: Option<String>,
        first_packet: Option<f64>,
    ) -> io::Result<()> {
        let (reads, cmds) = w.counts();
        if !w.has_signon() {
            self.no_gamestate.push((flow, reads as u64));
            return Ok(());
        }
        let map = w.map().map(str::to_string);
        let t0 = w.t0_ns();
        let mut bytes = w.finish()?;
        let mut stats = DemoStats {
            records: (reads + cmds) as u64,
            gamestates: 1,
            map,
            player,
            ..Default::default()
        };
        if let Some(window) = self.opts.qw_cut {
            let clock = crate::qw::cut::Clock {
                demo_zero: t0.unwrap_or(0) as f64 / 1e9,
                first_packet: first_packet
                    .unwrap_or(self.qw_first_ns.or(t0).unwrap_or(0) as f64 / 1e9),
            };
            match crate::qw::cut::cut(&bytes, &window, Some(clock)) {
                Ok((cut, cs)) => {
                    bytes = cut;
                    stats.records = (cs.packets + cs.cmds) as u64;
                    // A QuakeWorld packet is the client's snapshot.
                    stats.snapshots = cs.packets as u64;
                    stats.reencoded = cs.reencoded as u64;
                    stats.qw_cut = Some(cs);
                }
                Err(e) => {
                    self.qw_not_cut.push((flow, e.to_string()));
                    return Ok(());
                }
            }
        }
        let part = self.qw_parts.entry(flow).or_insert(0);
        let this = *part;
        *part += 1;
        let mut out = self.out.open(
            flow,
            this,
            28,
            stats.map.as_deref(),
            stats.player.as_deref(),
        )?;
        out.write_all(&bytes)?;
        self.out.closed(flow, this, out, &stats)
    }
}

impl<O: DemoOutput> Sink for DemoSink<O> {
    fn event(&mut self, e: Event<'_>) -> io::Result<()> {
        match e {
            Event::Q3(m) => self.q3_message(m),
            Event::FlowEnd(f) => self.flow_end(f),
            Event::QwRaw(p) => {
                self.qw_first_ns.get_or_insert(p.ts_ns);
                self.qw.entry(p.flow).or_default().push(p)
            }
            _ => Ok(()),
        }
    }

    fn finish(&mut self, r: &crate::pipeline::Report) -> io::Result<()> {
        self.finish_qw(r)?;
        let mut ids: Vec<u32> = self.flows.keys().copied().collect();
        // Flow order, not the hash map's (which changes from run to run): the demos are
        // closed, and so reported, in the same order every time.
        ids.sort_unstable();
        for id in ids {
            let before = self.flows.get(&id).map_or(0, |f| f.before_gamestate);
            let opened = self.flows.get(&id).is_some_and(|f| f.parts > 0);
            if !opened {
                self.no_gamestate.push((id, before));
            }
            self.close(id)?;
        }
        self.no_gamestate.sort();
        Ok(())
    }
}

impl<O: DemoOutput> DemoSink<O> {
    /// A connection's end (`Event::FlowEnd`): its demo is closed now, not at the end of the
    /// input, so the files open at once are those of the connections live at once (a long
    /// capture's thousands of sessions would pass the open-file limit) and its state goes;
    /// a QuakeWorld .qwd, kept in memory, is written now unless a cut waits for the input's
    /// end. The part count stays: a client back on the same flow starts a new file.
    #[cold]
    fn flow_end(&mut self, f: &crate::flow::FlowSummary) -> io::Result<()> {
        let flow = f.id;
        if self.opts.qw_cut.is_none() {
            if let Some(w) = self.qw.remove(&flow) {
                self.write_qw(flow, w, f.name.clone(), None)?;
            }
        }
        self.close(flow)?;
        if let Some(fd) = self.flows.get_mut(&flow) {
            fd.written = HashSet::new();
            fd.baselines = Baselines::default();
        }
        Ok(())
    }

    /// One Quake 3 server message into its flow's demo.
    fn q3_message(&mut self, m: &Message) -> io::Result<()> {
        if m.kind != "server" || m.client_gone {
            return Ok(());
        }
        let (Some(raw), Some(seq)) = (m.raw.as_ref(), m.seq) else {
            return Ok(());
        };
        let gs = gamestate_info(m);
        let opts = self.opts;
        if gs.is_some() {
            let split =
                opts.split_maps && self.flows.get(&m.flow).is_some_and(|f| f.open.is_some());
            if split {
                self.close(m.flow)?;
            }
        }
        let fd = self.flows.entry(m.flow).or_insert_with(|| FlowDemo {
            open: None,
            parts: 0,
            written: HashSet::new(),
            baselines: Baselines::default(),
            before_gamestate: 0,
        });
        if let Some((map, player, baselines)) = gs {
            fd.baselines = baselines;
            fd.written.clear();
            if fd.open.is_none() {
                let part = fd.parts;
                fd.parts += 1;
                let w =
                    self.out
                        .open(m.flow, part, m.protocol, map.as_deref(), player.as_deref())?;
                let stats = DemoStats {
                    map: map.clone(),
                    player: player.clone(),
                    before_gamestate: fd.before_gamestate,
                    ..Default::default()
                };
                fd.open = Some(Open {
                    writer: Writer::new(w),
                    stats,
                    part,
                });
            }
            if let Some(o) = &mut fd.open {
                o.stats.new_map = true;
                o.stats.gamestates += 1;
                if o.stats.map.is_none() {
                    o.stats.map = map;
                }
            }
        }
        let Some(mut o) = fd.open.take() else {
            fd.before_gamestate += 1;
            return Ok(());
        };
        if m.error.is_some() {
            // The real client would have dropped the connection on it; keep the demo playable.
            o.stats.skipped_bad += 1;
            fd.open = Some(o);
            return Ok(());
        }
        let (bytes, snap) = plan(m, fd, opts, &mut o.stats);
        o.writer.record(seq, bytes.as_deref().unwrap_or(raw))?;
        if let Some(s) = snap {
            fd.written.insert(s);
            o.stats.snapshots += 1;
            if let Some(t) = m.server().and_then(|sm| {
                sm.ops.iter().find_map(|op| match op {
                    ServerOp::Snapshot(s) => Some(s.server_time),
                    _ => None,
                })
            }) {
                o.stats.snapshot_time(t);
            }
        }
        fd.open = Some(o);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::Dir;
    use crate::q3::message::Body;
    use crate::q3::svc::{ConfigString, Gamestate, ServerMessage};

    fn gamestate(client_num: i32) -> Message {
        let g = Gamestate {
            bit: 0,
            server_command_seq: 0,
            configstrings: vec![ConfigString {
                index: 545,
                value: "n\\bob".into(),
            }],
            baselines: Vec::new(),
            client_num,
            checksum_feed: 0,
        };
        Message {
            flow: 1,
            game: "q3",
            dir: Dir::S2c,
            frame: 1,
            time: 0.0,
            seq: Some(1),
            fragmented: false,
            kind: "server",
            body: Body::Server(ServerMessage {
                ack: 0,
                ops: vec![ServerOp::Gamestate(Box::new(g))],
                error: None,
                snapshot_head: None,
                protocol: 68,
            }),
            error: None,
            raw: None,
            protocol: 68,
            size: 0,
            file_offset: None,
            client_gone: false,
        }
    }

    #[test]
    fn player_of_a_hostile_client_number_is_none() {
        let player = |c| gamestate_info(&gamestate(c)).and_then(|g| g.1);
        assert_eq!(player(1).as_deref(), Some("bob"));
        // Found by the q3_datagrams and pipeline fuzz targets: 544 + clientNum overflowed.
        for c in [-1, i32::MIN, i32::MAX, 65_000] {
            assert_eq!(player(c), None);
        }
    }
}
