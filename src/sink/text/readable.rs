//! Game strings as a terminal should show them: Quake 3 colour codes removed, QuakeWorld's
//! "coloured" (high-bit) characters and console glyphs turned into plain characters, and no
//! control character left to reach the terminal. JSON output keeps the raw strings.

/// A Quake 3 string without its colour codes and control characters
/// ([`crate::q3::color::plain`]).
pub fn q3_plain(s: &str) -> String {
    crate::q3::color::plain(s)
}

/// A QuakeWorld string (one char per byte, as decoded) in plain characters
/// ([`crate::qw::charset`]).
pub fn qw_plain(s: &str) -> String {
    crate::qw::charset::plain(s)
}

/// `s` in double quotes for text output: `"`, `\` and newlines escaped the C way (so a line
/// stays one line), nothing else.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quakeworld_high_bit_text_reads_plainly() {
        // "dago is ready" in the gold font, as a server prints it.
        let gold: String = "dago is ready"
            .bytes()
            .map(|b| char::from(if b == b' ' { b } else { b | 0x80 }))
            .collect();
        assert_eq!(gold, "äáçï éó òåáäù");
        assert_eq!(qw_plain(&gold), "dago is ready");
        assert_eq!(qw_plain("\u{10}12\u{11} \u{92}\u{93}"), "[12] 01");
    }

    #[test]
    fn quake3_colours_and_controls_go() {
        assert_eq!(
            q3_plain("chat \"LabPlayer1^7\u{19}: ^2hello\""),
            "chat \"LabPlayer1: hello\""
        );
        // As Q_IsColorString: the first `^` is shown, the second starts a colour code.
        assert_eq!(q3_plain("a^^b"), "a^");
        assert_eq!(quote("say \"hi\"\n"), "\"say \\\"hi\\\"\\n\"");
    }
}
