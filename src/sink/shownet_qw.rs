//! QuakeWorld in ezQuake's `cl_shownet 2` format (`CL_ParseServerMessage`, src/cl_parse.c):
//! for every server message the client parses, a separator line, one `OFFSET:svc_name` line
//! per svc (offset of its id byte from the start of the packet or demo block, `%3i`), then
//! `SIZE:END OF MESSAGE`. So quakecap can be diffed against the engine's own trace.
//!
//! Which messages the client parses: of a capture and a .qwd, the server packets its netchan
//! accepts (not connectionless, not duplicate or stale); of a .mvd, the `read`, `single`,
//! `stats` and `all` blocks (a `multiple` block is for other viewers; checked against the
//! stored traces of `captures/qw-*`). The engine stops a message at `svc_disconnect` (it
//! ends the game there), so that message has no END line.
use std::fmt::{self, Write};

use crate::flow::Dir;
use crate::qw::svc::ServerOp;
use crate::qw::{Message, NetchanStatus, OpKind};

/// ezQuake prints this before each message (`cl_shownet 2`).
pub const SEPARATOR: &str = "------------------";

/// True when ezQuake's client would parse (and trace) this message.
pub fn traced(m: &Message) -> bool {
    let block = matches!(m.block, None | Some("read" | "single" | "stats" | "all"));
    // .mvd blocks have no netchan; a capture's and a .qwd's packets must have been accepted.
    let accepted = matches!(m.netchan, None | Some(NetchanStatus::Accepted));
    m.dir == Dir::S2c && !m.connectionless && block && accepted
}

/// The trace of one message (nothing when the client would not parse it); every line ends
/// with a newline. A message that failed to decode ends with an `ERROR:` line instead of the
/// END line (the engine would have dropped the connection).
pub fn write_message(m: &Message, w: &mut dyn Write) -> fmt::Result {
    if !traced(m) {
        return Ok(());
    }
    writeln!(w, "{SEPARATOR}")?;
    for op in &m.ops {
        let OpKind::Server(s) = &op.kind else {
            continue;
        };
        let name = s.shownet_name();
        // Ids past ezQuake's range are not printed by it (it fails the message instead).
        if name != "unknown" {
            writeln!(w, "{:3}:{name}", op.at)?;
        }
        if matches!(s, ServerOp::Disconnect { .. }) {
            return Ok(());
        }
    }
    match &m.error {
        Some(e) => writeln!(w, "ERROR: {e}"),
        None => writeln!(w, "{:3}:END OF MESSAGE", m.size),
    }
}
