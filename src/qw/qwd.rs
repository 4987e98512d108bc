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
use super::usercmd::Usercmd;
use super::Event;
use crate::flow::Dir;
use std::collections::BTreeMap;

/// One packet of a connection as the .qwd writer needs it ([`super::Event::Raw`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RawPacket {
    pub flow: u32,
    pub dir: Dir,
    pub frame: u64,
    pub ts_ns: i64,
    pub seq: u32,
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
}

const SVC_DISCONNECT: u8 = 2;
const SVC_DOWNLOAD: u8 = 41;
const SVC_SERVERDATA: u8 = 11;
const DEM_CMD: u8 = 0;
const DEM_READ: u8 = 1;
/// ezQuake rejects dem_read blocks larger than this.
const MAX_DEM_READ: usize = 8192;

/// Builds one .qwd from the [`RawPacket`]s of one connection, fed in capture order.
#[derive(Debug, Default)]
pub struct Writer {
    buf: Vec<u8>,
    t0: Option<i64>,
    last_time: f32,
    next_cmd_seq: u32,
    last_cmd: Usercmd,
    reads: usize,
    cmds: usize,
    signon: bool,
    /// dem_read bodies parsed since the last command, waiting for that frame's time.
    pending: Vec<Vec<u8>>,
    ended: bool,
}

impl Writer {
    pub fn new() -> Self {
        Writer::default()
    }

    fn time(&mut self, ts_ns: i64) -> f32 {
        let t0 = *self.t0.get_or_insert(ts_ns);
        // Demo time must not go backwards (ezQuake compares it with its clock).
        let t = (ts_ns.saturating_sub(t0) as f64 / 1e9) as f32;
        self.last_time = self.last_time.max(t);
        self.last_time
    }

    fn block_header(&mut self, time: f32, kind: u8) {
        self.buf.extend_from_slice(&time.to_le_bytes());
        self.buf.push(kind);
    }

    fn write_cmd(&mut self, time: f32, cmd: &Usercmd) {
        self.block_header(time, DEM_CMD);
        self.buf.extend_from_slice(&cmd.to_qwd_bytes());
        for a in cmd.angles {
            self.buf.extend_from_slice(&a.to_le_bytes());
        }
        self.cmds += 1;
    }

    fn write_read(&mut self, time: f32, data: &[u8]) {
        self.block_header(time, DEM_READ);
        self.buf
            .extend_from_slice(&(data.len() as i32).to_le_bytes());
        self.buf.extend_from_slice(data);
        self.reads += 1;
    }

    fn flush_reads(&mut self, time: f32) {
        for data in std::mem::take(&mut self.pending) {
            self.write_read(time, &data);
        }
    }

    /// Feed one packet of the connection (others' packets must not be fed).
    pub fn push(&mut self, p: &RawPacket) {
        if self.ended {
            return;
        }
        match p.dir {
            Dir::C2s => {
                if p.drop {
                    self.ended = true;
                    return;
                }
                let Some(cmd) = p.cmd else { return };
                if p.seq < self.next_cmd_seq {
                    return; // a duplicate of a command already written
                }
                let t = self.time(p.ts_ns);
                self.flush_reads(t);
                // Sequences the client skipped (cl_c2spps) still had a dem_cmd: repeat the last.
                while self.next_cmd_seq < p.seq && p.seq - self.next_cmd_seq < 64 {
                    let last = self.last_cmd;
                    self.write_cmd(t, &last);
                    self.next_cmd_seq += 1;
                }
                self.write_cmd(t, &cmd);
                self.last_cmd = cmd;
                self.next_cmd_seq = p.seq + 1;
            }
            Dir::S2c => {
                if !p.accepted || p.spans.is_empty() {
                    return;
                }
                let Some(header) = p.payload.get(..8) else {
                    return;
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
                    if id == SVC_SERVERDATA {
                        self.signon = true;
                    }
                    data.extend_from_slice(p.payload.get(start..end).unwrap_or(&[]));
                }
                // Only the header left: the packet held svc_disconnect alone.
                if data.len() > MAX_DEM_READ || (self.ended && data.len() == 8) {
                    return;
                }
                self.time(p.ts_ns);
                self.pending.push(data);
            }
        }
    }

    /// Did the stream contain an svc_serverdata (without it the demo cannot be played)?
    pub fn has_signon(&self) -> bool {
        self.signon
    }
    /// dem_read and dem_cmd blocks written so far.
    pub fn counts(&self) -> (usize, usize) {
        (self.reads, self.cmds)
    }

    /// Close the demo with the `EndOfDemo` block and return the file.
    pub fn finish(mut self) -> Vec<u8> {
        let t = self.last_time;
        self.flush_reads(t);
        let mut eod = vec![0xFF, 0xFF, 0xFF, 0xFF, 2];
        eod.extend_from_slice(b"EndOfDemo\0");
        self.block_header(t, DEM_READ);
        self.buf
            .extend_from_slice(&(eod.len() as i32).to_le_bytes());
        self.buf.extend_from_slice(&eod);
        self.buf
    }
}

/// One [`Writer`] per connection, fed from the tracker's events.
#[derive(Debug, Default)]
pub struct Writers {
    by_flow: BTreeMap<u32, Writer>,
}

impl Writers {
    pub fn new() -> Self {
        Writers::default()
    }
    /// Route a tracker event (only [`Event::Raw`] matters).
    pub fn push(&mut self, e: &Event) {
        if let Event::Raw(p) = e {
            self.by_flow.entry(p.flow).or_default().push(p);
        }
    }
    /// The .qwd of every connection that had a signon, by flow id.
    pub fn finish(self) -> Vec<(u32, Vec<u8>)> {
        self.by_flow
            .into_iter()
            .filter(|(_, w)| w.has_signon())
            .map(|(id, w)| (id, w.finish()))
            .collect()
    }
}
