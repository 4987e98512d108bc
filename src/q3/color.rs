//! Quake 3 colour codes: `^` and a character select a colour in the console font. Text and
//! JSON output show a command's words without them (JSON beside the raw string).
use serde::ser::{SerializeStruct, Serializer};

/// `s` without colour codes (the engine's `Q_IsColorString`: `^` then any character but
/// another `^`) and without control characters (the chat separator 0x19 and the like, which
/// the console does not draw); newlines and tabs stay.
pub fn plain(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '^' && chars.peek().is_some_and(|n| *n != '^') {
            let code = chars.next();
            // OSP's extended colour: `^x` (or `^X`) and six hex digits, `^xfff000Name`.
            if matches!(code, Some('x' | 'X')) {
                let ahead = chars.clone();
                if ahead.take(6).filter(char::is_ascii_hexdigit).count() == 6 {
                    chars.nth(5);
                }
            }
            continue;
        }
        if c == '\n' || c == '\t' || !c.is_control() {
            out.push(c);
        }
    }
    out
}

/// The JSON of a server or client command op: its fields, then `plain`, the text without
/// colour codes (the raw `text` stays for tools that want the colours).
pub fn command_json<S: Serializer, N: serde::Serialize>(
    bit: &usize,
    seq: &i32,
    text: &str,
    new: &N,
    s: S,
) -> Result<S::Ok, S::Error> {
    let mut st = s.serialize_struct("Command", 5)?;
    st.serialize_field("bit", bit)?;
    st.serialize_field("seq", seq)?;
    st.serialize_field("text", text)?;
    st.serialize_field("plain", &plain(text))?;
    st.serialize_field("new", new)?;
    st.end()
}

#[cfg(test)]
mod tests {
    use super::plain;

    #[test]
    fn colour_codes_go_osp_extended_ones_too() {
        assert_eq!(plain("^1Red^7Name"), "RedName");
        assert_eq!(plain("^xfff000Name"), "Name");
        assert_eq!(plain("^XA0b1C2x^7y"), "xy");
        // Not six hex digits: an ordinary code.
        assert_eq!(plain("^xyz"), "yz");
        assert_eq!(plain("^^7"), "^");
    }
}
