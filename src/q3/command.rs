//! The text of reliable commands as the engines tokenize them (`Cmd_TokenizeString`): the
//! command word, its arguments, quoted strings kept whole.

/// The first word and the rest (leading blanks skipped).
pub fn split_command(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    match s.find(|c: char| c.is_ascii_whitespace()) {
        Some(i) => (&s[..i], s[i..].trim_start()),
        None => (s, ""),
    }
}

/// The first argument as the engine's tokenizer reads it: a quoted string (no escapes in
/// Quake 3), or one word.
pub fn first_arg(s: &str) -> String {
    tokenize(s).into_iter().next().unwrap_or_default()
}

/// Split a command line into arguments: quoted strings keep their blanks.
pub fn tokenize(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = s.chars().peekable();
    loop {
        while it.peek().is_some_and(|c| c.is_whitespace()) {
            it.next();
        }
        let Some(&c) = it.peek() else {
            return out;
        };
        let mut arg = String::new();
        if c == '"' {
            it.next();
            for c in it.by_ref() {
                if c == '"' {
                    break;
                }
                arg.push(c);
            }
        } else {
            while let Some(&c) = it.peek() {
                if c.is_whitespace() {
                    break;
                }
                arg.push(c);
                it.next();
            }
        }
        out.push(arg);
    }
}

/// A configstring command `cs <index> "<value>"`: its index and value.
pub fn configstring(text: &str) -> Option<(usize, String)> {
    let (cmd, rest) = split_command(text);
    if cmd != "cs" {
        return None;
    }
    let (idx, value) = split_command(rest);
    Some((idx.parse().ok()?, first_arg(value)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_quotes_and_configstrings() {
        assert_eq!(split_command("  cs 547 \"a b\""), ("cs", "547 \"a b\""));
        assert_eq!(
            tokenize("tell 3 \"hi there\" x"),
            ["tell", "3", "hi there", "x"]
        );
        assert_eq!(first_arg("\"\""), "");
        assert_eq!(
            configstring("cs 547 \"n\\^1Bob\\t\\0\"\n"),
            Some((547, "n\\^1Bob\\t\\0".to_string()))
        );
        assert_eq!(configstring("print \"x\""), None);
        assert_eq!(configstring("cs x \"1\""), None);
    }
}
