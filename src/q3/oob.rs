//! Connectionless (out-of-band) messages (q3-protocol.md §2): `FF FF FF FF` + text, except
//! `connect`, whose userinfo is adaptive-Huffman compressed from byte 12 (§2.4).
use serde::Serialize;

/// A decoded connectionless message.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Oob {
    /// The command word as sent (`getchallenge`, `challengeResponse`, `connect`, ...).
    pub command: String,
    /// The remaining tokens of the first line (quotes removed).
    pub args: Vec<String>,
    /// The whole text after the 4-byte marker (decompressed for `connect`), lossily UTF-8.
    pub text: String,
    /// For `connect`: the userinfo pairs in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub userinfo: Vec<(String, String)>,
}

/// Why a connectionless packet could not be decoded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OobError {
    /// The payload is not connectionless: under 4 bytes, or not starting with `FF FF FF FF`
    /// (its length given).
    #[error("connectionless packet too short ({0} bytes)")]
    Short(usize),
    /// A `connect` whose adaptive-Huffman userinfo block did not decompress (why given).
    #[error("connect packet: {0}")]
    Connect(String),
}

/// True when the payload starts with the connectionless marker.
pub fn is_oob(p: &[u8]) -> bool {
    p.len() >= 4 && p[..4] == [0xff; 4]
}

impl Oob {
    /// Decode one connectionless payload (including the 4-byte marker) travelling in `dir`.
    pub fn parse(p: &[u8], dir: crate::flow::Dir) -> Result<Oob, OobError> {
        if !is_oob(p) {
            return Err(OobError::Short(p.len()));
        }
        let body = &p[4..];
        // The server decompresses whatever starts with the 7 bytes "connect" (case-sensitive);
        // the client never decompresses (its connectResponse is plain text).
        let to_server = dir == crate::flow::Dir::C2s;
        let text_bytes = if to_server && body.starts_with(b"connect") && p.len() > 12 {
            let mut t = p[4..12].to_vec();
            let plain = super::huffman::adaptive_decompress(&p[12..])
                .map_err(|e| OobError::Connect(e.to_string()))?;
            t.extend_from_slice(&plain);
            t
        } else {
            body.to_vec()
        };
        let text = String::from_utf8_lossy(&text_bytes).into_owned();
        let first_line = text.split('\n').next().unwrap_or("");
        let mut toks = tokenize(first_line);
        let command = if toks.is_empty() {
            String::new()
        } else {
            toks.remove(0)
        };
        let userinfo = if command == "connect" {
            toks.first().map(|s| parse_info(s)).unwrap_or_default()
        } else {
            Vec::new()
        };
        Ok(Oob {
            command,
            args: toks,
            text,
            userinfo,
        })
    }

    /// Value of a userinfo key (case-insensitive, as the engine's Info_ValueForKey).
    pub fn info(&self, key: &str) -> Option<&str> {
        self.userinfo
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
    }

    /// The first argument as an integer.
    pub fn arg_int(&self, i: usize) -> Option<i64> {
        self.args.get(i).and_then(|s| s.trim().parse::<i64>().ok())
    }
}

/// `Cmd_TokenizeString` for one line: whitespace separated, `"..."` quoting without escapes,
/// `//` starts a comment outside quotes.
pub fn tokenize(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && b[i] <= b' ' {
            i += 1;
        }
        if i >= b.len() || (b[i] == b'/' && b.get(i + 1) == Some(&b'/')) {
            break;
        }
        if b[i] == b'"' {
            let start = i + 1;
            let end = b[start..]
                .iter()
                .position(|&c| c == b'"')
                .map_or(b.len(), |p| start + p);
            out.push(String::from_utf8_lossy(&b[start..end]).into_owned());
            i = end + 1;
            continue;
        }
        let start = i;
        while i < b.len() && b[i] > b' ' {
            i += 1;
        }
        out.push(String::from_utf8_lossy(&b[start..i]).into_owned());
    }
    out
}

/// Split an info string `\k\v\k\v` into pairs.
pub fn parse_info(s: &str) -> Vec<(String, String)> {
    let s = s.strip_prefix('\\').unwrap_or(s);
    let parts: Vec<&str> = s.split('\\').collect();
    parts
        .chunks(2)
        .map(|c| (c[0].to_string(), c.get(1).unwrap_or(&"").to_string()))
        .collect()
}

/// Value of `key` in an info string (as [`parse_info`] pairs it: a last key without a
/// value has the empty one). Reads the string in place: only the value found is copied.
pub fn info_value(info: &str, key: &str) -> Option<String> {
    let mut parts = info.strip_prefix('\\').unwrap_or(info).split('\\');
    while let Some(k) = parts.next() {
        let v = parts.next().unwrap_or("");
        if k.eq_ignore_ascii_case(key) {
            return Some(v.to_string());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_value_pairs_like_parse_info() {
        for info in [
            "\\a\\1\\B\\2\\c",
            "a\\1\\b",
            "",
            "\\",
            "\\a\\\\b\\3",
            "x\\y\\x\\z",
        ] {
            for key in ["a", "b", "c", "x", "z", ""] {
                let slow = parse_info(info)
                    .into_iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(key))
                    .map(|(_, v)| v);
                assert_eq!(info_value(info, key), slow, "{info:?} {key:?}");
            }
        }
    }

    #[test]
    fn challenge_response() {
        // captures/q3-basic/capture.pcapng frame 2
        let mut p = vec![0xff; 4];
        p.extend_from_slice(b"challengeResponse 1552856705 -231586592 68");
        let o = Oob::parse(&p, crate::flow::Dir::S2c).unwrap();
        assert_eq!(o.command, "challengeResponse");
        assert_eq!(o.arg_int(0), Some(1552856705));
        assert_eq!(o.arg_int(2), Some(68));
    }

    #[test]
    fn connect_response_is_plain_text() {
        // captures/q3-basic/capture.pcapng frame 4: starts with "connect" but is not compressed.
        let mut p = vec![0xff; 4];
        p.extend_from_slice(b"connectResponse 1552856705");
        let o = Oob::parse(&p, crate::flow::Dir::S2c).unwrap();
        assert_eq!(
            (o.command.as_str(), o.arg_int(0)),
            ("connectResponse", Some(1552856705))
        );
    }

    #[test]
    fn tokenizer_quotes_and_comments() {
        assert_eq!(
            tokenize(r#"say "hi there" x // no"#),
            vec!["say", "hi there", "x"]
        );
    }

    #[test]
    fn info_pairs() {
        assert_eq!(
            info_value(r"\name\LabPlayer1\qport\123", "QPORT").as_deref(),
            Some("123")
        );
    }
}
