//! Mid-session protocol 68 after the lock-on: resuming when the server messages start
//! acknowledging a client command whose text the capture never showed (issue 17).
//!
//! The client sends a new command inside a client message; when that message's key string
//! (a server command from before the capture) is unknown, the command's text is lost, and
//! every server message acknowledging it is keyed by that text. The challenge byte is known
//! by then, so one guess costs one key stream: each command whose whole text can be guessed
//! ([`keysearch::GUESSABLE_COMMANDS`]) and each command this client was seen sending before
//! (clients repeat commands) is tried on a group of such messages, and taken only when it is
//! the only one under which every message of the group decodes to its end.
use super::keysearch::{self, AckGroup};

/// Searches per connection: each costs at most a few hundred body decodes (one key per
/// candidate, nearly all ruled out by the first bytes of the first message).
const MAX_SEARCHES: u32 = 32;

/// The latest server messages acknowledging one unknown client command, and the searches
/// done.
#[derive(Debug, Default)]
pub struct Relock {
    group: AckGroup,
    pub searches: u32,
    pub decodes: usize,
}

impl Relock {
    /// Take server message `seq` (its body still scrambled) acknowledging client command
    /// `ack`, whose text is unknown; when a group is complete, search it. The command's text
    /// when exactly one candidate decodes every message of the group under challenge byte
    /// `ch`. `seen`: the texts of this client's commands known so far.
    pub fn offer<'s>(
        &mut self,
        ack: i32,
        seq: i32,
        body: &[u8],
        ch: u8,
        seen: impl Iterator<Item = &'s str>,
    ) -> Option<String> {
        if !self.group.push(ack, seq, body) || self.searches >= MAX_SEARCHES {
            return None;
        }
        self.searches += 1;
        let mut candidates: Vec<&str> = keysearch::GUESSABLE_COMMANDS.to_vec();
        for s in seen {
            if !s.is_empty() && !candidates.contains(&s) {
                candidates.push(s);
            }
        }
        let (text, work) = keysearch::command_or_numbered(&self.group.scrambled(), ch, candidates);
        self.decodes += work.decodes;
        if text.is_some() {
            self.group.clear();
        }
        text
    }
}
