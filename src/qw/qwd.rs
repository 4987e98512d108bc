//! Writing .qwd demos from a capture (spec §8.1): what ezQuake itself records when `record`
//! is on from the start of the connection.
//!
//! ezQuake records per frame (src/cl_parse.c `CL_ParseServerMessage`, src/cl_demo.c):
//! * each s2c packet its netchan accepted and that held at least one message becomes a
//!   dem_read of the original 8-byte header plus the messages, `svc_download` left out (a
//!   packet of downloads only is written as the bare header); deltas are copied because their
//!   base frame is in the demo too;
//! * each command it sends becomes a dem_cmd (the newest usercmd and the view angles), one per
//!   outgoing sequence, so playback's `outgoing_sequence` and delta bookkeeping match;
//! * both in the order the client saw them — on a client-side capture, capture order — and
//!   with the client's frame clock: the packets read in a frame carry the time of the command
//!   sent at the end of that frame (one timedemo frame per dem_cmd, as in ezQuake's demos);
//! * recording ends when the client disconnects (its `drop`) or parses `svc_disconnect`
//!   (`Host_EndGame` leaves before that message is written), then the file ends with the
//!   connectionless `FF FF FF FF 02 "EndOfDemo"` block.
//!
//! A recording that starts with the connection has no dem_set: both netchans start at 0.
//! A connection seen mid-session ([`RawPacket::pre_signon`]) is recorded from its first
//! serverdata (a map change) on, after a dem_set naming both netchans' sequences there, as
//! ezQuake's own `record` in the middle of a connection does; without a serverdata, nothing.
//!
//! On a capture taken at the server's side, a reliable packet lost after the tap is left out
//! once the client's ack proves the loss (its block comes again in a later packet; written
//! twice it would be executed twice). Blocks are held back for [`HOLD_CMDS`] client frames
//! for that evidence to arrive. Unreliable packets lost after such a tap cannot be told
//! (acks only name the newest packet) and stay in.
use super::usercmd::Usercmd;
use super::Event;
use crate::flow::Dir;
use std::collections::{BTreeMap, VecDeque};
use std::io::{self, Write};

/// One packet of a connection as the .qwd writer needs it ([`super::Event::Raw`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RawPacket {
    /// Flow id of the connection (as in `Message::flow`).
    pub flow: u32,
    /// Direction of the packet.
    pub dir: Dir,
    /// Capture frame number.
    pub frame: u64,
    /// Capture time in nanoseconds since the Unix epoch.
    pub ts_ns: i64,
    /// Netchan sequence, reliable bit stripped.
    pub seq: u32,
    /// Sequence of the other direction acknowledged, bit 31 stripped.
    pub ack: u32,
    /// The receiving engine accepted it (sequence above the last accepted one).
    pub accepted: bool,
    /// s2c: the whole UDP payload, netchan header included. Empty for c2s.
    pub payload: Vec<u8>,
    /// s2c: (start, end, svc id) of every decoded message in `payload`.
    pub spans: Vec<(usize, usize, u8)>,
    /// c2s: the newest usercmd of the packet's clc_move.
    pub cmd: Option<Usercmd>,
    /// c2s: the packet carries the client's `drop` (it disconnects).
    pub drop: bool,
    /// c2s: this packet's ack proves that the reliable s2c packet with this sequence never
    /// reached the client (spec §2.4.3; only seen on captures taken on the server's side).
    pub lost_s2c: Option<u32>,
    /// A packet of a connection seen mid-session, before its first serverdata: not recorded
    /// (the demo starts at the serverdata, after a dem_set).
    pub pre_signon: bool,
}

const SVC_DISCONNECT: u8 = 2;
const SVC_DOWNLOAD: u8 = 41;
const SVC_SERVERDATA: u8 = 11;
const SVC_MODELLIST: u8 = 45;
const DEM_CMD: u8 = 0;
const DEM_READ: u8 = 1;
const DEM_SET: u8 = 2;
/// Client frames a block is held back before it is written (about 1–2 s of play).
pub const HOLD_CMDS: usize = 128;
/// ezQuake rejects dem_read blocks larger than this.
const MAX_DEM_READ: usize = 8192;

/// Builds one .qwd from the [`RawPacket`]s of one connection, fed in capture order, streaming
/// it into `W` (memory: the few packets of one client frame).
#[derive(Debug)]
pub struct Writer<W: Write = Vec<u8>> {
    out: W,
    t0: Option<i64>,
    last_time: f32,
    next_cmd_seq: u32,
    last_cmd: Usercmd,
    reads: usize,
    cmds: usize,
    signon: bool,
    map: Option<String>,
    /// dem_read bodies (sequence, bytes) parsed since the last command, waiting for that
    /// frame's time.
    pending: Vec<(u32, Vec<u8>)>,
    /// Timed blocks not written yet: (time, command or (sequence, dem_read body)).
    held: VecDeque<(f32, Held)>,
    held_cmds: usize,
    ended: bool,
    block: Vec<u8>,
    /// Mid-session stream: the sequences before its serverdata (client's last sent, last
    /// accepted server packet) for the dem_set; None once written or never needed.
    skipped: Option<(Option<u32>, Option<u32>)>,
}

#[derive(Debug)]
enum Held {
    Cmd(Usercmd),
    Read(u32, Vec<u8>),
}

impl Default for Writer<Vec<u8>> {
    fn default() -> Self {
        Writer::new(Vec::new())
    }
}

impl<W: Write> Writer<W> {
    /// A writer streaming the .qwd of one connection into `out`.
    pub fn new(out: W) -> Self {
        Writer {
            out,
            t0: None,
            last_time: 0.0,
            next_cmd_seq: 0,
            last_cmd: Usercmd::default(),
            reads: 0,
            cmds: 0,
            signon: false,
            map: None,
            pending: Vec::new(),
            held: VecDeque::new(),
            held_cmds: 0,
            ended: false,
            block: Vec::with_capacity(MAX_DEM_READ + 16),
            skipped: None,
        }
    }

    fn time(&mut self, ts_ns: i64) -> f32 {
        let t0 = *self.t0.get_or_insert(ts_ns);
        // Demo time must not go backwards (ezQuake compares it with its clock).
        let t = (ts_ns.saturating_sub(t0) as f64 / 1e9) as f32;
        self.last_time = self.last_time.max(t);
        self.last_time
    }

    fn write_block(&mut self, time: f32, kind: u8, body: &[&[u8]]) -> io::Result<()> {
        self.block.clear();
        self.block.extend_from_slice(&time.to_le_bytes());
        self.block.push(kind);
        for b in body {
            self.block.extend_from_slice(b);
        }
        self.out.write_all(&self.block)
    }

    fn write_cmd(&mut self, time: f32, cmd: &Usercmd) -> io::Result<()> {
        let mut va = [0u8; 12];
        for (i, a) in cmd.angles.iter().enumerate() {
            va[4 * i..4 * i + 4].copy_from_slice(&a.to_le_bytes());
        }
        self.write_block(time, DEM_CMD, &[&cmd.to_qwd_bytes(), &va])?;
        self.cmds += 1;
        Ok(())
    }

    fn write_read(&mut self, time: f32, data: &[u8]) -> io::Result<()> {
        self.write_block(time, DEM_READ, &[&(data.len() as i32).to_le_bytes(), data])?;
        self.reads += 1;
        Ok(())
    }

    /// The reads of the frame that ends now get its time and join the held blocks.
    fn flush_reads(&mut self, time: f32) {
        for (seq, data) in std::mem::take(&mut self.pending) {
            self.held.push_back((time, Held::Read(seq, data)));
        }
    }

    fn hold_cmd(&mut self, time: f32, cmd: Usercmd) -> io::Result<()> {
        self.held.push_back((time, Held::Cmd(cmd)));
        self.held_cmds += 1;
        while self.held_cmds > HOLD_CMDS {
            self.write_oldest()?;
        }
        Ok(())
    }

    fn write_oldest(&mut self) -> io::Result<()> {
        match self.held.pop_front() {
            Some((t, Held::Cmd(c))) => {
                self.held_cmds -= 1;
                self.write_cmd(t, &c)
            }
            Some((t, Held::Read(_, data))) => self.write_read(t, &data),
            None => Ok(()),
        }
    }

    /// The reliable s2c packet `seq` never reached the client: leave it out.
    fn forget(&mut self, seq: u32) {
        self.pending.retain(|(s, _)| *s != seq);
        self.held
            .retain(|(_, b)| !matches!(b, Held::Read(s, _) if *s == seq));
    }

    /// Feed one packet of the connection (others' packets must not be fed).
    pub fn push(&mut self, p: &RawPacket) -> io::Result<()> {
        if self.ended {
            return Ok(());
        }
        if p.pre_signon {
            let (out_seq, in_seq) = self.skipped.get_or_insert((None, None));
            match p.dir {
                Dir::C2s => *out_seq = Some(out_seq.map_or(p.seq, |s| s.max(p.seq))),
                Dir::S2c if p.accepted => *in_seq = Some(p.seq),
                Dir::S2c => {}
            }
            return Ok(());
        }
        if let Some((out_seq, in_seq)) = self.skipped.take() {
            // ezQuake's dem_set: the client's next outgoing sequence, its last incoming one.
            let out_next = out_seq.map_or(0, |s| s.wrapping_add(1));
            let incoming = in_seq.unwrap_or_else(|| p.seq.saturating_sub(1));
            let t = self.time(p.ts_ns);
            let body = [out_next.to_le_bytes(), incoming.to_le_bytes()].concat();
            self.write_block(t, DEM_SET, &[&body])?;
            self.next_cmd_seq = out_next;
        }
        match p.dir {
            Dir::C2s => {
                if let Some(seq) = p.lost_s2c {
                    self.forget(seq);
                }
                if p.drop {
                    self.ended = true;
                    return Ok(());
                }
                let Some(cmd) = p.cmd else { return Ok(()) };
                if p.seq < self.next_cmd_seq {
                    return Ok(()); // a duplicate of a command already written
                }
                let t = self.time(p.ts_ns);
                self.flush_reads(t);
                // Sequences the client skipped (cl_c2spps) still had a dem_cmd: repeat the last.
                while self.next_cmd_seq < p.seq && p.seq - self.next_cmd_seq < 64 {
                    let last = self.last_cmd;
                    self.hold_cmd(t, last)?;
                    self.next_cmd_seq += 1;
                }
                self.hold_cmd(t, cmd)?;
                self.last_cmd = cmd;
                self.next_cmd_seq = p.seq + 1;
            }
            Dir::S2c => {
                if !p.accepted || p.spans.is_empty() {
                    return Ok(());
                }
                let Some(header) = p.payload.get(..8) else {
                    return Ok(());
                };
                let mut data = header.to_vec();
                for &(start, end, id) in &p.spans {
                    if id == SVC_DISCONNECT {
                        self.ended = true;
                        break;
                    }
                    if id == SVC_DOWNLOAD {
                        continue;
                    }
                    let msg = p.payload.get(start..end).unwrap_or(&[]);
                    if id == SVC_SERVERDATA {
                        self.signon = true;
                    }
                    if id == SVC_MODELLIST && self.map.is_none() {
                        self.map = map_name(msg);
                    }
                    data.extend_from_slice(msg);
                }
                // Only the header left: the packet held svc_disconnect alone.
                if data.len() > MAX_DEM_READ || (self.ended && data.len() == 8) {
                    return Ok(());
                }
                self.time(p.ts_ns);
                self.pending.push((p.seq, data));
            }
        }
        Ok(())
    }

    /// Did the stream contain an svc_serverdata (without it the demo cannot be played)?
    pub fn has_signon(&self) -> bool {
        self.signon
    }
    /// The map of the first model list (`maps/<name>.bsp` → `<name>`), for file names.
    pub fn map(&self) -> Option<&str> {
        self.map.as_deref()
    }
    /// Capture time (ns) of demo time 0: the connection's first packet fed.
    pub fn t0_ns(&self) -> Option<i64> {
        self.t0
    }
    /// dem_read and dem_cmd blocks written so far.
    pub fn counts(&self) -> (usize, usize) {
        (self.reads, self.cmds)
    }

    /// Close the demo with the `EndOfDemo` block and hand back the output.
    pub fn finish(mut self) -> io::Result<W> {
        let t = self.last_time;
        self.flush_reads(t);
        while !self.held.is_empty() {
            self.write_oldest()?;
        }
        let mut eod = vec![0xFF, 0xFF, 0xFF, 0xFF, 2];
        eod.extend_from_slice(b"EndOfDemo\0");
        self.write_read(t, &eod)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// `maps/<name>.bsp` from an svc_modellist message that starts the list (index 1 = the map).
fn map_name(msg: &[u8]) -> Option<String> {
    let (&start, rest) = msg.get(1..)?.split_first()?;
    if start != 0 {
        return None;
    }
    let end = rest.iter().position(|&b| b == 0)?;
    let s = String::from_utf8_lossy(rest.get(..end)?).into_owned();
    let name = s.strip_prefix("maps/")?.strip_suffix(".bsp")?;
    Some(name.to_string())
}

/// One [`Writer`] per connection, fed from the tracker's events.
#[derive(Debug, Default)]
pub struct Writers {
    by_flow: BTreeMap<u32, Writer>,
}

impl Writers {
    /// No connections yet.
    pub fn new() -> Self {
        Writers::default()
    }
    /// Route a tracker event (only [`Event::Raw`] matters).
    pub fn push(&mut self, e: &Event) {
        if let Event::Raw(p) = e {
            // Writing into memory cannot fail.
            let _ = self.by_flow.entry(p.flow).or_default().push(p);
        }
    }
    /// The .qwd of every connection that had a signon, by flow id.
    pub fn finish(self) -> Vec<(u32, Vec<u8>)> {
        self.by_flow
            .into_iter()
            .filter(|(_, w)| w.has_signon())
            .filter_map(|(id, w)| w.finish().ok().map(|d| (id, d)))
            .collect()
    }
}
