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
//!
//! The other direction stalls the same way: a client message acknowledges the last server
//! command the client received, and when the server sent it before the capture, its text
//! (the client message's key string) is unknown, and so are the client commands the
//! message carries. [`ClientRelock`] searches the key stream those messages share.
use super::c2ssearch;
use super::keysearch::{self, AckGroup, Held};
use super::tailsearch::Tails;
use crate::q3::scramble::{self, C2S_START};
use crate::q3::usercmd::hash_key;

/// Searches per connection: each costs at most a few hundred body decodes (one key per
/// candidate, nearly all ruled out by the first bytes of the first message).
const MAX_SEARCHES: u32 = 32;

/// Reads of texts off message ends per connection ([`super::tailsearch`]): at most 8 per
/// group (at 16 to 256 messages kept), each at most a few million instructions and
/// 16 × 8 body decodes.
const MAX_SOLVES: u32 = 40;

/// The latest server messages acknowledging one unknown client command, and the searches
/// done.
#[derive(Debug, Default)]
pub struct Relock {
    group: AckGroup,
    /// The ends of the group's messages, kept for [`super::tailsearch`].
    tails: Tails,
    /// The group was searched at its largest size: it stays that size from then on, and
    /// each guess must decode every message, so searching it again cannot help.
    searched_full: bool,
    pub searches: u32,
    /// Of the searches, those that read texts off message ends.
    solves: u32,
    pub decodes: usize,
}

impl Relock {
    /// Take server message `seq` (its body still scrambled) acknowledging client command
    /// `ack`, whose text is unknown; when a group is complete, search it. The command's text
    /// when exactly one candidate decodes every message of the group under challenge byte
    /// `ch`, and the group's earlier messages (reported undecoded; they reached the client,
    /// so they are decoded for its state). `seen`: the texts of this client's commands known
    /// so far. The candidates: the guessable commands and `seen` when the group reaches 4
    /// and 8 messages, then the texts its messages' ends show ([`super::tailsearch`]) as more
    /// lengths come.
    pub fn offer<'s>(
        &mut self,
        ack: i32,
        seq: i32,
        body: &[u8],
        ch: u8,
        seen: impl Iterator<Item = &'s str>,
    ) -> Option<(String, Held)> {
        if self.group.start(ack) {
            self.searched_full = false;
            self.tails.clear();
        }
        let at_size = self.group.push(ack, seq, body);
        let solve_due = self.tails.push(seq, body);
        let full = self.group.msgs.len() >= AckGroup::MAX;
        // Reads off message ends count apart: they do not use up the guesses.
        let guesses = self.searches - self.solves;
        let guess_due = at_size && !(full && self.searched_full) && guesses < MAX_SEARCHES;
        let mut text = None;
        if guess_due {
            self.searched_full |= full;
            text = self.guess(ch, seen);
        }
        if text.is_none() && solve_due && self.solves < MAX_SOLVES {
            text = self.solve(ch);
        }
        let text = text?;
        let mut prior = std::mem::take(&mut self.group.msgs);
        prior.pop(); // This message: decoded as usual next.
        self.group.clear();
        self.tails.clear();
        Some((text, prior))
    }

    /// The one guessable or `seen` command that decodes the group.
    fn guess<'s>(&mut self, ch: u8, seen: impl Iterator<Item = &'s str>) -> Option<String> {
        self.searches += 1;
        let mut candidates: Vec<&str> = keysearch::GUESSABLE_COMMANDS.to_vec();
        for s in seen {
            if !s.is_empty() && !candidates.contains(&s) {
                candidates.push(s);
            }
        }
        let (text, work) = keysearch::command_or_numbered(&self.group.scrambled(), ch, candidates);
        self.decodes += work.decodes;
        text
    }

    /// The one text read off the messages' ends that decodes the group.
    fn solve(&mut self, ch: u8) -> Option<String> {
        self.searches += 1;
        self.solves += 1;
        let texts = self.tails.texts(ch);
        let (text, work) = keysearch::command_for(
            &self.group.scrambled(),
            ch,
            texts.iter().map(String::as_str),
        );
        self.decodes += work.decodes;
        text.map(str::to_string)
    }
}

/// Client-message searches per connection ([`ClientRelock`]): each costs at most
/// [`CLIENT_LIMITS`]`.decodes` body decodes, most far fewer. 12 decoded a quarter to a third
/// as much of the cuts between a handshake and the first snapshot (e.g. q3-impaired: 245
/// against 2 299 of 2 823 messages); 48 needs a snapshot whose delta base is a server message
/// that stayed undecodable to count that base as unknown, not invalid
/// (`ClientState::mark_unseen`), which it now does.
const MAX_CLIENT_SEARCHES: u32 = 48;

/// Bounds of one client-message search (see [`c2ssearch::search_c2s`]). Against 2 000
/// candidates and 20 000 decodes, the stored cuts decode as much but for 5 connections
/// (within 18 messages either way), with a third to a half of the decodes.
const CLIENT_LIMITS: c2ssearch::Limits = c2ssearch::Limits {
    beam: 400,
    decodes: 8_000,
};

/// Messages of a group longer than what its key covers, since the last search, that start
/// a new search. One: a client repeats a new command only until the server acknowledges
/// it, and the server's acknowledgement usually changes the key string of the next
/// messages (q3-mapchange cut at 30 %: ` tell 0 private hello` went in one message, the
/// only one with key string `respawn 0` that the found prefix did not cover).
const LONG_TO_SEARCH: u32 = 1;

/// At most this many uncovered messages between searches of one group: a search that
/// finds nothing better (its budget spent, up to 8 000 body decodes) is not repeated at the
/// very next long message, so a group of long messages costs a few searches, not one each.
const MAX_LONG_TO_SEARCH: u32 = 16;

/// What is known of the key string of client messages acknowledging a server command the
/// capture did not show: found by [`c2ssearch::search_c2s`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientKey {
    /// The first bytes of the stream `u` (`challenge ^` the command's rolling part).
    stream: Vec<u8>,
    /// The command's whole text, when found: every message decodes.
    text: Option<Vec<u8>>,
}

impl ClientKey {
    /// A key found by [`c2ssearch::lock_search`] before the lock-on.
    pub fn new(stream: Vec<u8>, text: Option<Vec<u8>>) -> Self {
        ClientKey { stream, text }
    }

    /// A body of `len` bytes can be descrambled.
    pub fn covers(&self, len: usize) -> bool {
        self.text.is_some() || len <= C2S_START + self.stream.len()
    }

    /// Descramble client body `body` (serverId `sid`, messageAcknowledge `ack`, challenge
    /// byte `ch`); it must be covered.
    pub fn descramble(&self, body: &mut [u8], ch: i32, sid: i32, ack: i32) {
        match &self.text {
            Some(t) => scramble::c2s(body, ch, sid, ack, t),
            None => c2ssearch::descramble(body, (sid ^ ack) as u8, &self.stream),
        }
    }

    /// Covers more than `other` (`None`: nothing).
    fn better_than(&self, other: Option<&ClientKey>) -> bool {
        match other {
            None => true,
            Some(o) if o.text.is_some() => false,
            Some(o) => self.text.is_some() || self.stream.len() > o.stream.len(),
        }
    }
}

/// Mid-session protocol 68 after the lock-on: client messages acknowledging a server
/// command whose text is unknown (the server sent it before the capture), searched for
/// their key stream (see [`c2ssearch`]). Their client commands then become known, and the
/// server messages acknowledging those decode.
#[derive(Debug)]
pub struct ClientRelock {
    group: AckGroup,
    key: Option<ClientKey>,
    /// Messages of the group its key does not cover, since the last search.
    long: u32,
    /// Such messages that start the next search: [`LONG_TO_SEARCH`], doubled by each
    /// search that finds nothing better (up to [`MAX_LONG_TO_SEARCH`]).
    long_due: u32,
    /// The group was searched at its largest size (it stays that size from then on).
    searched_full: bool,
    pub searches: u32,
    pub decodes: usize,
    /// Keys found (a search that covered more than the key before).
    pub found: u32,
}

impl Default for ClientRelock {
    fn default() -> Self {
        ClientRelock {
            group: AckGroup::client(),
            key: None,
            long: 0,
            long_due: LONG_TO_SEARCH,
            searched_full: false,
            searches: 0,
            decodes: 0,
            found: 0,
        }
    }
}

/// What [`ClientRelock::offer`] gives: the key for the message offered (when known), and
/// earlier messages of its group that the key found now covers (they were reported
/// undecoded; they are decoded for the state, as their commands reached the server).
pub struct ClientOffer {
    pub key: Option<ClientKey>,
    pub prior: Vec<(i32, Vec<u8>)>,
}

impl ClientRelock {
    /// Take client message `seq` (body still scrambled) acknowledging server command `ack`,
    /// whose text is unknown, with challenge byte `ch`.
    pub fn offer(&mut self, ack: i32, seq: i32, body: &[u8], ch: u8) -> ClientOffer {
        let none = ClientOffer {
            key: None,
            prior: Vec::new(),
        };
        if self.group.start(ack) {
            self.key = None;
            self.long = 0;
            self.long_due = LONG_TO_SEARCH;
            self.searched_full = false;
        }
        let at_size = self.group.push(ack, seq, body);
        if let Some(k) = self.key.as_ref().filter(|k| k.covers(body.len())) {
            return ClientOffer {
                key: Some(k.clone()),
                prior: Vec::new(),
            };
        }
        self.long += 1;
        let full = self.group.msgs.len() >= 32;
        let due = (at_size && !(full && self.searched_full))
            || (self.key.is_some() && self.long >= self.long_due);
        if !due || self.searches >= MAX_CLIENT_SEARCHES {
            return none;
        }
        self.searches += 1;
        self.long = 0;
        self.searched_full |= full;
        let Some(k) = self.search(ch) else {
            self.long_due = (self.long_due * 2).min(MAX_LONG_TO_SEARCH);
            return none;
        };
        self.long_due = LONG_TO_SEARCH;
        self.found += 1;
        let old = self.key.replace(k.clone());
        let n = self.group.msgs.len().saturating_sub(1);
        let prior = self.group.msgs[..n]
            .iter()
            .filter(|(_, b)| !old.as_ref().is_some_and(|o| o.covers(b.len())) && k.covers(b.len()))
            .cloned()
            .collect();
        ClientOffer {
            key: k.covers(body.len()).then_some(k),
            prior,
        }
    }

    /// Take `key`, found before the lock-on from client messages acknowledging server
    /// command `ack`: the next ones it covers are descrambled with it.
    pub fn install(&mut self, ack: i32, key: ClientKey) {
        self.group.start(ack);
        self.key = Some(key);
        self.long = 0;
        self.long_due = LONG_TO_SEARCH;
    }

    /// The key known for client messages acknowledging server command `ack`.
    pub fn key_for(&self, ack: i32) -> Option<ClientKey> {
        self.key.clone().filter(|_| self.group.ack() == Some(ack))
    }

    /// `MSG_HashKey(text, 32)` of server command `ack` when the search found its whole text
    /// (`%` and bytes above 127 read as `.`, as the hash takes them): the usercmd key's
    /// part from the acknowledged command, though the capture never showed the command.
    pub fn text_hash(&self, ack: i32) -> Option<i32> {
        let text = self.key.as_ref()?.text.as_deref()?;
        (self.group.ack() == Some(ack)).then(|| hash_key(text, 32))
    }

    /// Search the group; a key that covers more than the one known.
    fn search(&mut self, ch: u8) -> Option<ClientKey> {
        let msgs: Vec<c2ssearch::ClientScrambled<'_>> = self
            .group
            .msgs
            .iter()
            .filter_map(|(_, b)| c2ssearch::ClientScrambled::new(b).map(|(_, m)| m))
            .filter(|m| m.body.len() > C2S_START)
            .collect();
        let known = self
            .key
            .as_ref()
            .map(|k| c2ssearch::command_text(ch, &k.stream));
        let (found, work) = c2ssearch::search_c2s(&msgs, ch, known.as_deref(), CLIENT_LIMITS);
        self.decodes += work.decodes;
        let k = found.map(|f| ClientKey {
            stream: f.stream,
            text: f.text,
        })?;
        k.better_than(self.key.as_ref()).then_some(k)
    }
}
