//! Connectionless packets (spec §3): `FF FF FF FF` + text, and the raw 1-byte replies.
use super::cursor::Reader;
use super::ext::Ext;
use serde::Serialize;

/// One connectionless packet, decoded.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Oob {
    /// `getchallenge`: the client asks for a challenge (answered by `c`).
    Getchallenge,
    /// `c`: the challenge and the extension pairs the server offers.
    Challenge {
        /// The challenge number the client echoes in `connect` (may be negative).
        challenge: i64,
        /// Extension sets offered after the NUL (`<magic> <flags>` pairs); all zero from vanilla
        /// servers.
        ext: Ext,
    },
    /// `connect 28 <qport> <challenge> "<userinfo>"`, then a `0x<magic> 0x<flags>` line per
    /// extension set the client claims.
    Connect {
        /// Protocol version (28 for QuakeWorld; −1 when missing).
        protocol: i64,
        /// The client's 16-bit qport; its c2s netchan packets carry it after the header.
        qport: u16,
        /// The challenge from the server's `c` reply (0 when missing).
        challenge: i64,
        /// The userinfo string `\key\value…` (name, rate, `*client`, …), quotes removed.
        userinfo: String,
        /// Extension flags claimed on the lines after the command (ezQuake: the server's offer
        /// masked by what it supports).
        ext: Ext,
    },
    /// `j`: connection accepted.
    Accept,
    /// `n`: text (status reply, rejection, rcon output).
    Print {
        /// The text up to the NUL; Quake-charset bytes as chars U+0000–U+00FF (see `qw::charset`).
        text: String,
    },
    /// `n` "\\chunk": a chunked-download block sent out of band.
    Chunk {
        /// Download number the chunk belongs to.
        dlnum: i32,
        /// Chunk number: the data starts at byte `chunk × 1024` of the file.
        chunk: i32,
        /// Bytes of data after the chunk header (1024 normally).
        len: usize,
    },
    /// `status [flags]`: a server browser or scoreboard query (answered by `n` text).
    Status {
        /// The arguments after `status`, space-joined (ezQuake's browser sends `23`: bit flags of
        /// what to list).
        args: String,
    },
    /// `ping` or `k` (A2A_PING): answered by a raw `l`.
    Ping,
    /// Raw `l` (ping reply) — no FF prefix.
    Ack,
    /// svc_disconnect: the .qwd end marker `FF FF FF FF 02 "EndOfDemo"`.
    Disconnect {
        /// The text after it (`EndOfDemo`).
        text: String,
    },
    /// Any other client command line (`ip`, `log`, `rcon` — its arguments are not kept).
    Command {
        /// The command word, at most 32 characters.
        name: String,
    },
    /// Any other server reply letter.
    Reply {
        /// The byte after the prefix, as a char (`'\0'` for an empty packet).
        letter: char,
        /// Bytes after the letter.
        len: usize,
    },
}

impl Oob {
    /// Is this one of the messages that identify QuakeWorld traffic by content alone?
    pub fn is_qw_handshake_or_query(&self) -> bool {
        !matches!(
            self,
            Oob::Command { .. } | Oob::Reply { .. } | Oob::Disconnect { .. }
        )
    }
    /// The packet's `op` name in JSON (`getchallenge`, `challenge`, `connect`, …).
    pub fn name(&self) -> &'static str {
        match self {
            Oob::Getchallenge => "getchallenge",
            Oob::Challenge { .. } => "challenge",
            Oob::Connect { .. } => "connect",
            Oob::Accept => "accept",
            Oob::Print { .. } => "print",
            Oob::Chunk { .. } => "chunk",
            Oob::Status { .. } => "status",
            Oob::Ping => "ping",
            Oob::Ack => "ack",
            Oob::Disconnect { .. } => "disconnect",
            Oob::Command { .. } => "command",
            Oob::Reply { .. } => "reply",
        }
    }
}

/// True when `payload` starts with the connectionless prefix `FF FF FF FF` (long −1).
pub fn is_oob(payload: &[u8]) -> bool {
    payload.starts_with(&[0xFF, 0xFF, 0xFF, 0xFF])
}

/// Split a command line like the engine's tokenizer (quoted strings keep spaces).
fn tokens(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = line.chars().peekable();
    loop {
        while it.peek().is_some_and(|c| c.is_whitespace()) {
            it.next();
        }
        let Some(&c) = it.peek() else { break };
        let mut t = String::new();
        if c == '"' {
            it.next();
            for c in it.by_ref() {
                if c == '"' {
                    break;
                }
                t.push(c);
            }
        } else {
            while let Some(&c) = it.peek() {
                if c.is_whitespace() {
                    break;
                }
                t.push(c);
                it.next();
            }
        }
        out.push(t);
    }
    out
}

fn parse_int(s: &str) -> Option<i64> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).ok()
    } else {
        s.parse().ok()
    }
}

/// Client → server connectionless payload (after the FF×4 prefix).
pub fn parse_c2s(body: &[u8]) -> Oob {
    let text: String = body.iter().map(|&b| b as char).collect();
    let first_line = text.split(['\n', '\0']).next().unwrap_or("");
    let t = tokens(first_line);
    let cmd = t.first().map(String::as_str).unwrap_or("");
    match cmd {
        "getchallenge" => Oob::Getchallenge,
        "connect" => {
            let mut ext = Ext::default();
            for line in text.split('\n').skip(1) {
                let p = tokens(line);
                if let (Some(m), Some(f)) = (
                    p.first().and_then(|s| parse_int(s)),
                    p.get(1).and_then(|s| parse_int(s)),
                ) {
                    ext.set(m as u32, f as u32);
                }
            }
            Oob::Connect {
                protocol: t.get(1).and_then(|s| parse_int(s)).unwrap_or(-1),
                qport: t.get(2).and_then(|s| parse_int(s)).unwrap_or(0) as u16,
                challenge: t.get(3).and_then(|s| parse_int(s)).unwrap_or(0),
                userinfo: t.get(4).cloned().unwrap_or_default(),
                ext,
            }
        }
        "status" => Oob::Status {
            args: t.get(1..).map(|a| a.join(" ")).unwrap_or_default(),
        },
        "ping" | "k" => Oob::Ping,
        _ => Oob::Command {
            name: cmd.chars().take(32).collect(),
        },
    }
}

/// Server → client connectionless payload (after the FF×4 prefix).
pub fn parse_s2c(body: &[u8]) -> Oob {
    let Some((&letter, rest)) = body.split_first() else {
        return Oob::Reply {
            letter: '\0',
            len: 0,
        };
    };
    match letter {
        b'c' => {
            let nul = rest.iter().position(|&b| b == 0);
            let digits: String = rest
                .get(..nul.unwrap_or(rest.len()))
                .unwrap_or(&[])
                .iter()
                .map(|&b| b as char)
                .collect();
            let mut ext = Ext::default();
            if let Some(n) = nul {
                let mut r = Reader::new(rest.get(n + 1..).unwrap_or(&[]));
                while r.remaining() >= 8 {
                    let (Ok(m), Ok(f)) = (r.u32(), r.u32()) else {
                        break;
                    };
                    ext.set(m, f);
                }
            }
            Oob::Challenge {
                challenge: parse_int(&digits).unwrap_or(0),
                ext,
            }
        }
        b'j' => Oob::Accept,
        b'n' => {
            if rest.starts_with(b"\\chunk") {
                let mut r = Reader::new(rest.get(6..).unwrap_or(&[]));
                let dlnum = r.i32().unwrap_or(0);
                let _svc = r.u8();
                let chunk = r.i32().unwrap_or(0);
                Oob::Chunk {
                    dlnum,
                    chunk,
                    len: r.remaining(),
                }
            } else {
                let mut r = Reader::new(rest);
                Oob::Print {
                    text: r.string().unwrap_or_default(),
                }
            }
        }
        b'l' => Oob::Ack,
        2 => {
            let mut r = Reader::new(rest);
            Oob::Disconnect {
                text: r.string().unwrap_or_default(),
            }
        }
        other => Oob::Reply {
            letter: other as char,
            len: rest.len(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_line_with_ext() {
        let body = b"connect 28 1234 -56 \"\\name\\x\\rate\\25000\"\n0x58455446 0x21407000\n0x3144564d 0x1\n";
        match parse_c2s(body) {
            Oob::Connect {
                protocol,
                qport,
                challenge,
                userinfo,
                ext,
            } => {
                assert_eq!((protocol, qport, challenge), (28, 1234, -56));
                assert_eq!(userinfo, "\\name\\x\\rate\\25000");
                assert_eq!(ext.fte, 0x21407000);
                assert_eq!(ext.mvd1, 1);
            }
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn challenge_with_pairs() {
        let mut b = b"c-42\0".to_vec();
        b.extend_from_slice(&0x5845_5446u32.to_le_bytes());
        b.extend_from_slice(&8u32.to_le_bytes());
        assert_eq!(
            parse_s2c(&b),
            Oob::Challenge {
                challenge: -42,
                ext: Ext {
                    fte: 8,
                    fte2: 0,
                    mvd1: 0
                }
            }
        );
    }
}
