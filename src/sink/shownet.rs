//! The engine's own `cl_shownet 4` trace (ioquake3 `CL_ParseServerMessage`,
//! `MSG_ReadDeltaEntity`, `MSG_ReadDeltaPlayerstate`), line for line, so quakecap can be
//! diffed against the engine. Offsets are the engine's `readcount` values; `(N bits)` uses its
//! formula on the absolute bit position (the one copy: `crate::q3::delta::shownet_bits`).
//! One difference by design: delta entity lines print the real entity number where the engine
//! prints a stale parse-buffer value.
use std::io::{self, Write};

use super::push_change;
use crate::pipeline::{Event, Sink};
use crate::q3::delta::{EntityDelta, PlayerDelta};
use crate::q3::message::{Body, Message};
use crate::q3::svc::ServerOp;

/// The ` (N bits)` tail of a delta line; `n` from [`crate::q3::delta::shownet_bits`].
fn push_bits(s: &mut String, n: usize) {
    s.push_str(&format!(" ({n} bits)"));
}

/// Lines of one entity delta (none for an unchanged entity).
pub fn entity_line(d: &EntityDelta) -> Option<String> {
    if d.removed {
        return Some(format!(
            "{:3}: #{:<3} remove",
            d.readcount_after_flag(),
            d.state.number
        ));
    }
    if !d.has_delta {
        return None;
    }
    let mut s = format!("{:3}: #{:<3} ", d.readcount_after_flag(), d.state.number);
    for c in &d.changes {
        push_change(&mut s, c, true);
    }
    push_bits(&mut s, d.shownet_bits());
    Some(s)
}

/// The playerstate line.
pub fn playerstate_line(p: &PlayerDelta) -> String {
    let mut s = format!("{:3}: playerstate ", p.readcount_at_start());
    for c in &p.changes {
        push_change(&mut s, c, false);
    }
    for (present, name) in
        p.arrays
            .iter()
            .zip(["PS_STATS", "PS_PERSISTANT", "PS_AMMO", "PS_POWERUPS"])
    {
        if *present {
            s.push_str(name);
            s.push(' ');
        }
    }
    push_bits(&mut s, p.shownet_bits());
    s
}

/// Append the trace lines of one server message to `out`.
pub fn message_lines(m: &Message, out: &mut Vec<String>) {
    let Body::Server(sm) = &m.body else { return };
    for op in &sm.ops {
        let at = op.bit() >> 3;
        match op {
            ServerOp::Eof { .. } => out.push(format!("{at:3}:END OF MESSAGE")),
            ServerOp::Gamestate(g) => {
                out.push(format!("{at:3}:svc_gamestate"));
                out.extend(g.baselines.iter().filter_map(entity_line));
            }
            ServerOp::Snapshot(s) => {
                out.push(format!("{at:3}:svc_snapshot"));
                out.push(format!("{:3}:playerstate", s.ps_bit >> 3));
                out.push(playerstate_line(&s.playerstate));
                out.push(format!("{:3}:packet entities", s.entities_bit >> 3));
                out.extend(s.entities.iter().filter_map(entity_line));
            }
            other => out.push(format!("{at:3}:{}", other.svc_name())),
        }
    }
    if let Some(e) = &sm.error {
        out.push(format!("ERROR: {e}"));
    }
}

/// Writes the trace of every server message: Quake 3 in `cl_shownet 4`, QuakeWorld in
/// ezQuake's `cl_shownet 2` ([`super::shownet_qw`]).
pub struct Shownet<W: Write> {
    out: W,
    lines: Vec<String>,
    /// One QuakeWorld message's trace, reused between messages.
    qw_buf: String,
}

impl<W: Write> Shownet<W> {
    /// A sink writing the traces to `out` (flushed at the end of the run).
    pub fn new(out: W) -> Self {
        Shownet {
            out,
            lines: Vec::new(),
            qw_buf: String::new(),
        }
    }
}

impl<W: Write> Shownet<W> {
    /// QuakeWorld has its own engine and trace format ([`super::shownet_qw`]).
    fn qw_message(&mut self, m: &crate::qw::Message) -> io::Result<()> {
        self.qw_buf.clear();
        super::shownet_qw::write_message(m, &mut self.qw_buf).map_err(io::Error::other)?;
        self.out.write_all(self.qw_buf.as_bytes())
    }
}

impl<W: Write> Sink for Shownet<W> {
    fn event(&mut self, e: Event<'_>) -> io::Result<()> {
        let m = match e {
            Event::Q3(m) => m,
            Event::Qw(m) => return self.qw_message(m),
            _ => return Ok(()),
        };
        self.lines.clear();
        message_lines(m, &mut self.lines);
        for l in &self.lines {
            writeln!(self.out, "{l}")?;
        }
        Ok(())
    }
    fn finish(&mut self, _r: &crate::pipeline::Report) -> io::Result<()> {
        self.out.flush()
    }
}
