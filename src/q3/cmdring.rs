//! A ring of reliable command texts, as the engine keeps them (`clc.serverCommands`,
//! `clc.reliableCommands`: 64 slots by command number), each slot stamped with a version.
//!
//! Protocol 68 keys every message with the text of the command it acknowledges (the
//! descrambling key streams, the usercmd key hash), and the decoder caches what it derives
//! from that text. The cache used to compare the text with its own copy on every message:
//! two strings in memory nothing else touches, so with a thousand connections live two or
//! three cache misses per datagram. A version changes with every write to a slot and is
//! never given to another text, so a cache that remembers the version its text had can
//! skip the comparison while the version is unchanged.

use std::sync::atomic::{AtomicU64, Ordering};

use super::state::MAX_RELIABLE_COMMANDS;

/// A command text and the version of that text ([`CommandRing`]). Aligned so that a slot
/// (32 bytes) never straddles two cache lines.
#[derive(Debug, Clone, Default)]
#[repr(align(32))]
struct Slot {
    text: String,
    version: u64,
}

/// A version no slot has: a cache given it compares the text (callers without a ring).
pub const NO_VERSION: u64 = 0;

/// Versions are unique in the process, not only in a ring: a cache that outlived its ring
/// (or was handed another ring's text) can never mistake one text for another. Writes are
/// rare (commands, not messages), so the shared counter costs nothing measurable; a u64
/// never wraps.
static NEXT_VERSION: AtomicU64 = AtomicU64::new(NO_VERSION + 1);

fn new_version() -> u64 {
    NEXT_VERSION.fetch_add(1, Ordering::Relaxed)
}

/// The 64 command texts of one direction, by command number modulo 64.
#[derive(Debug, Clone)]
pub struct CommandRing {
    slots: Vec<Slot>,
}

impl Default for CommandRing {
    fn default() -> Self {
        // The empty texts share a version: the same version still means the same text.
        let version = new_version();
        CommandRing {
            slots: vec![
                Slot {
                    text: String::new(),
                    version,
                };
                MAX_RELIABLE_COMMANDS
            ],
        }
    }
}

/// The slot of command number `seq` (any i32: a hostile message's).
fn index(seq: i32) -> usize {
    (seq as usize) & (MAX_RELIABLE_COMMANDS - 1)
}

impl CommandRing {
    /// The text stored for command `seq`.
    pub fn text(&self, seq: i32) -> &str {
        &self.slots[index(seq)].text
    }

    /// The text stored for command `seq` and its version: the same version later means
    /// the same text.
    pub fn keyed(&self, seq: i32) -> (&str, u64) {
        let s = &self.slots[index(seq)];
        (&s.text, s.version)
    }

    /// The text of ring slot `i` (0..64).
    pub fn slot_text(&self, i: usize) -> &str {
        self.slots.get(i).map_or("", |s| s.text.as_str())
    }

    /// Store `text` for command `seq`.
    pub fn set(&mut self, seq: i32, text: String) {
        self.slots[index(seq)] = Slot {
            text,
            version: new_version(),
        };
    }

    /// Store the bytes `text` (invalid UTF-8 replaced, as `String::from_utf8_lossy`) for
    /// command `seq`, reusing the slot's buffer; returns the stored text.
    pub fn set_lossy(&mut self, seq: i32, text: &[u8]) -> &str {
        let slot = &mut self.slots[index(seq)];
        slot.text.clear();
        slot.text.push_str(&String::from_utf8_lossy(text));
        slot.version = new_version();
        &slot.text
    }

    /// The slot of command `seq`, for `crate::prefetch` (its text's pointer, length and
    /// version share a cache line).
    #[inline]
    pub fn slot_ptr(&self, seq: i32) -> *const u8 {
        (&self.slots[index(seq)] as *const Slot).cast()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_write_gets_a_new_version_even_with_the_same_text() {
        let mut r = CommandRing::default();
        let (t, v0) = r.keyed(5);
        assert_eq!(t, "");
        assert_ne!(v0, NO_VERSION);
        assert_eq!(r.keyed(6).1, v0, "the empty texts share a version");
        assert_ne!(
            CommandRing::default().keyed(5).1,
            v0,
            "another ring, other versions"
        );
        r.set(5, "say hi".into());
        let (t, v1) = r.keyed(5);
        assert_eq!(t, "say hi");
        assert_ne!(v1, v0);
        assert_eq!(r.set_lossy(5 + 64, b"say hi"), "say hi");
        let (_, v2) = r.keyed(5);
        assert!(v2 > v1, "a rewrite with the same text is a new version");
        // Another slot's write never takes a version a text had.
        r.set(6, "x".into());
        assert!(r.keyed(6).1 > v2);
        assert_eq!(r.keyed(5).1, v2);
    }

    #[test]
    fn hostile_numbers_and_invalid_utf8() {
        let mut r = CommandRing::default();
        r.set_lossy(i32::MIN, b"a\xffb");
        assert_eq!(r.text(i32::MIN), "a\u{fffd}b");
        assert_eq!(r.text(i32::MIN + 64), "a\u{fffd}b");
        assert_eq!(r.slot_text(0), "a\u{fffd}b");
        assert_eq!(r.slot_text(64), "");
        assert!(r.keyed(-1).1 != NO_VERSION);
    }
}
