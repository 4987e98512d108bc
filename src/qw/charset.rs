//! The QuakeWorld character set as plain text, for every command that shows game text
//! (`decode`, `flows`, `events`, the report): strings hold the protocol's bytes one char each
//! (U+0000–U+00FF). The high bit only selects the brown/gold font, so it is cleared; the
//! console font's glyphs below 0x20 become the characters they look like (`[`, `]`, gold
//! digits, dots, bar ends); other control characters are dropped.

/// One character of a decoded string as plain text; None for a control character.
pub fn plain_char(c: char) -> Option<char> {
    let code = u32::from(c);
    if code > 0xFF {
        return Some(c);
    }
    let b = (code & 0x7F) as u8;
    match b {
        b'\n' => Some('\n'),
        0x10 => Some('['),
        0x11 => Some(']'),
        0x12..=0x1B => Some(char::from(b'0' + (b - 0x12))),
        0x05 | 0x0E | 0x0F | 0x1C => Some('•'),
        0x1D => Some('<'),
        0x1E => Some('-'),
        0x1F => Some('>'),
        0x7F => Some('←'),
        0x00..=0x1F => None,
        _ => Some(char::from(b)),
    }
}

/// A decoded string as plain text, newlines kept.
pub fn plain(s: &str) -> String {
    s.chars().filter_map(plain_char).collect()
}
