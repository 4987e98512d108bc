//! Info strings (`\key\value\key\value`): the serverinfo, systeminfo and player
//! configstrings of Quake 3, the serverinfo and userinfo of QuakeWorld. Both games write them
//! alike and look keys up differently: Quake 3's `Info_ValueForKey` ignores the key's case,
//! QuakeWorld's compares it exactly.

/// The value of `key` (exactly as written: QuakeWorld), in place. A missing leading `\` is
/// taken as there.
pub fn value<'a>(info: &'a str, key: &str) -> Option<&'a str> {
    find(info, |k| k == key)
}

/// The value of `key` in any case (Quake 3's rule), in place.
pub fn value_any_case<'a>(info: &'a str, key: &str) -> Option<&'a str> {
    find(info, |k| k.eq_ignore_ascii_case(key))
}

fn find(info: &str, is_key: impl Fn(&str) -> bool) -> Option<&str> {
    let mut it = info.strip_prefix('\\').unwrap_or(info).split('\\');
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        if is_key(k) {
            return Some(v);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_cases() {
        let i = "\\n\\Sarge\\t\\1\\Model\\sarge/red";
        assert_eq!(value(i, "n"), Some("Sarge"));
        assert_eq!(value(i, "model"), None);
        assert_eq!(value_any_case(i, "model"), Some("sarge/red"));
        assert_eq!(value("n\\Grunt", "n"), Some("Grunt"));
        // A last key without its value is no pair.
        assert_eq!(value("\\n\\Grunt\\t", "t"), None);
        assert_eq!(value("", "n"), None);
    }
}
