//! Readable text, one block per message for both games, in one layout: a header line (frame
//! or demo record, time, flow, direction, sequence and what the netchan did), then one
//! indented line per op with its fields. Each game's op formatting is in its own file
//! ([`q3`], [`qw`]); both build text in memory (sans-IO), the [`Text`] sink writes it.
use std::io::{self, Write};

use crate::pipeline::{Event, Sink};

pub mod q3;
pub mod qw;
pub mod readable;

pub use q3::message_lines;

/// Writes messages as text.
pub struct Text<W: Write> {
    out: W,
    /// One QuakeWorld message's text, reused between messages.
    buf: String,
}

impl<W: Write> Text<W> {
    /// A sink writing the text to `out` (flushed at the end of the run).
    pub fn new(out: W) -> Self {
        Text {
            out,
            buf: String::new(),
        }
    }
}

impl<W: Write> Sink for Text<W> {
    fn event(&mut self, e: Event<'_>) -> io::Result<()> {
        match e {
            Event::Q3(m) => {
                for l in q3::message_lines(m) {
                    writeln!(self.out, "{l}")?;
                }
            }
            Event::Qw(m) => {
                self.buf.clear();
                qw::write_message(m, &mut self.buf).map_err(io::Error::other)?;
                self.out.write_all(self.buf.as_bytes())?;
            }
            _ => {}
        }
        Ok(())
    }
    fn finish(&mut self, _r: &crate::pipeline::Report) -> io::Result<()> {
        self.out.flush()
    }
}
