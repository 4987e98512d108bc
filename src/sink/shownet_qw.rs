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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qw::Op;

    fn server(ops: Vec<(usize, ServerOp)>, size: usize) -> Message {
        let mut m = Message::new(1, Dir::S2c, 1, 0.0, size);
        m.netchan = Some(NetchanStatus::Accepted);
        m.ops = Op::servers(ops);
        m
    }

    fn trace(m: &Message) -> String {
        let mut s = String::new();
        write_message(m, &mut s).unwrap();
        s
    }

    #[test]
    fn a_message_is_separator_ops_and_end() {
        let m = server(vec![(8, ServerOp::Nop), (9, ServerOp::Nop)], 10);
        assert_eq!(
            trace(&m),
            "------------------\n  8:svc_nop\n  9:svc_nop\n 10:END OF MESSAGE\n"
        );
    }

    #[test]
    fn disconnect_ends_the_message_without_end_line() {
        let m = server(vec![(0, ServerOp::Disconnect { text: None })], 1);
        assert_eq!(trace(&m), "------------------\n  0:svc_disconnect\n");
    }

    #[test]
    fn messages_the_client_does_not_parse_print_nothing() {
        let mut dup = server(vec![(8, ServerOp::Nop)], 9);
        dup.netchan = Some(NetchanStatus::Duplicate);
        let mut c2s = server(Vec::new(), 8);
        c2s.dir = Dir::C2s;
        let mut multiple = server(vec![(0, ServerOp::Nop)], 1);
        multiple.block = Some("multiple");
        for m in [dup, c2s, multiple] {
            assert_eq!(trace(&m), "");
        }
    }
}
