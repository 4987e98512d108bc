//! Text for HTML and XML documents (the report, JUnit): one escape serves both, since the
//! numeric reference for `'` and the replacement character are valid in either.

/// Text for element content and attribute values: markup characters as references, and
/// control characters (XML 1.0 forbids most of them even escaped) as U+FFFD, except tab and
/// line breaks.
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            '\t' | '\n' | '\r' => o.push(c),
            c if c.is_control() => o.push('\u{fffd}'),
            c => o.push(c),
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn markup_and_controls_are_escaped() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(escape("a\u{1}b\tc\n"), "a\u{fffd}b\tc\n");
    }
}
