//! JSON Lines: one object per message.
//!
//! Keys: `flow`, `game` ("q3"), `dir` ("c2s"/"s2c"), `frame` (capture frame, or demo record
//! number), `time` (s since the Unix epoch; 0 for demo files), `seq` (netchan sequence, null
//! for connectionless), `kind` ("oob"/"server"/"client"), `fragmented`, then the body:
//! server messages `ack` and `ops`; client messages `serverId`, `messageAcknowledge`,
//! `reliableAcknowledge` and `ops`; connectionless `command`, `args`, `text`, `userinfo`.
//! Each op has `op` (`gamestate`, `serverCommand`, `snapshot`, `download`, `nop`, `voip`,
//! `EOF`, `clientCommand`, `move`) and its fields; `bit` is the bit offset after the op byte.
//! A message that failed carries `error` (what and at which bit) and the ops before it.
use std::io::{self, Write};

use crate::pipeline::{Event, Sink};

/// Writes one JSON object per message.
pub struct JsonLines<W: Write> {
    out: W,
}

impl<W: Write> JsonLines<W> {
    /// A sink writing JSON Lines to `out` (flushed at the end of the run).
    pub fn new(out: W) -> Self {
        JsonLines { out }
    }
}

impl<W: Write> Sink for JsonLines<W> {
    fn event(&mut self, e: Event<'_>) -> io::Result<()> {
        match e {
            Event::Q3(m) => serde_json::to_writer(&mut self.out, m)?,
            Event::Qw(m) => serde_json::to_writer(&mut self.out, m)?,
            _ => return Ok(()),
        }
        self.out.write_all(b"\n")
    }
    fn finish(&mut self, _r: &crate::pipeline::Report) -> io::Result<()> {
        self.out.flush()
    }
}
