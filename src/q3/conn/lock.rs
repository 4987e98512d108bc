//! The protocol-68 lock-on policy of a connection that starts mid-session: when and how
//! often each search runs, and what it found.
use super::*;

/// Searches per connection. A search tries 13 guesses of 256 challenge bytes, but each
/// message's last bytes rule out nearly all of them before any decode
/// ([`crate::q3::midsession::keysearch::may_end_after`]): a search costs a few hundred body decodes, about
/// 0.5 M instructions (callgrind, release, stored cuts), so 16 searches cost a connection
/// that never locks on half what 3 cost before that check (5.4 M each). A group no guess
/// decodes uses a search too: server messages acknowledging free text (`userinfo`,
/// `say …`) come first on some cuts (q3-basic cut at 10 %, q3-two-clients cut at 30 %:
/// locked on at the 4th search, before the client-side lock-on existed).
pub(super) const LOCK_TRIES: u32 = 16;

/// Body decodes the lock-on searches of a connection may spend before another starts: a
/// message the last-bytes check cannot rule out (crafted, or a long one that ends alike
/// under many keys) costs decodes, and this keeps such input to what 3 searches could cost
/// before that check (at most 18 301 decodes on the stored cuts then; 2 050 now).
pub(super) const LOCK_DECODES: usize = 20_000;

/// A mid-session protocol-68 connection before lock-on: the latest server messages of one
/// acknowledgement, and what the search has cost.
#[derive(Debug)]
pub(super) struct Lock68 {
    pub(super) group: crate::q3::midsession::keysearch::AckGroup,
    /// The latest client messages of one acknowledgement (of a server command), for the
    /// lock-on from the client's side ([`c2ssearch::lock_search`]), and its searches.
    pub(super) client_group: crate::q3::midsession::keysearch::AckGroup,
    pub(super) client_tries: u32,
    pub(super) client_decodes: usize,
    /// The acknowledgement and the message lengths (`AckGroup::length_counts`) of the
    /// last client-group search whose answer more messages of those lengths cannot change
    /// ([`c2ssearch::LockOutcome`]): the group is not searched again until a message of
    /// another length (or a second one of a length) comes, and the tries are kept for
    /// the next acknowledgement.
    client_searched: Option<(i32, Vec<(usize, u8)>)>,
    /// The latest lead of a client group ([`c2ssearch::Lead`]) and its acknowledgement.
    client_lead: Option<(i32, c2ssearch::Lead)>,
    /// Accepted messages of both directions so far, and the first one's capture time.
    pub(super) packets: u64,
    pub(super) first_ns: Option<i64>,
    pub(super) tries: u32,
    pub(super) decodes: usize,
    /// No guess decodes the current acknowledgement's group: more of its messages cannot
    /// change that, so the tries are kept for the next acknowledgement.
    ruled_out: bool,
    /// The ends of the server messages acknowledging the current command, for reading its
    /// text with every challenge byte ([`Lock68::tail_lock`]), and the reads so far.
    tails: crate::q3::midsession::tailsearch::Tails,
    pub(super) tail_reads: u32,
    /// The current acknowledgement's server messages older than the group's latest
    /// ([`Lock68::spill`]), oldest first, and their bytes: decoded for the state with the
    /// group's once locked on, so that the server commands they carried (which the client's
    /// keys are made of) are known.
    pub(super) spilled: std::collections::VecDeque<(i32, Vec<u8>)>,
    spilled_bytes: usize,
}

/// Older server messages of the current acknowledgement kept for the lock-on (about 13 s of
/// snapshots at 20 a second), and at most this many bytes of them: a reliable server
/// command is in every message until the client acknowledges it, a round trip after its
/// first sending, so the messages that carried one before a late lock-on are among these.
const SPILL_MAX: usize = 256;
const SPILL_MAX_BYTES: usize = 256 << 10;

/// Reads of a command's text off the server messages' ends before the lock-on, the
/// challenge byte solved with the text (a group is read at every 8 ends kept from 16:
/// about 0.9 M instructions each).
pub(super) const TAIL_LOCK_READS: u32 = 16;

impl Default for Lock68 {
    fn default() -> Self {
        Lock68 {
            group: Default::default(),
            client_group: crate::q3::midsession::keysearch::AckGroup::client_lock(),
            client_tries: 0,
            client_decodes: 0,
            client_searched: None,
            client_lead: None,
            packets: 0,
            first_ns: None,
            tries: 0,
            decodes: 0,
            ruled_out: false,
            tails: Default::default(),
            tail_reads: 0,
            spilled: Default::default(),
            spilled_bytes: 0,
        }
    }
}

/// Longest client message held for the client-side lock-on: its group keeps 32, and a
/// client's messages are mostly moves of 15–60 bytes (one that carries a command is longer,
/// up to about 1 KB); held bodies stay small whatever a hostile capture sends.
pub(super) const MAX_LOCK_CLIENT_BODY: usize = 1_100;

/// Client-message lock-on searches per connection: each costs at most
/// [`c2ssearch::LOCK_LIMITS`]`.decodes` body decodes (1.4–5.0 M instructions per stored
/// cut, about a millisecond). A group is searched at 8, 16 and 32 messages (and as it
/// slides at 32), again only when that can change the answer (`Lock68::client_searched`);
/// a group that ends with 4 to 7 messages as it ends, and the next one from 4 messages
/// when that left a lead (`c2ssearch::joint_answer`): four tries reach a second group
/// where a team game's server commands (`tinfo` every second) keep groups short.
pub(super) const CLIENT_LOCK_TRIES: u32 = 4;

impl Lock68 {
    /// Take client message `seq` and search when its group is complete: the challenge
    /// byte, the server command the group acknowledges, and its key stream.
    pub(super) fn offer_client(
        &mut self,
        seq: i32,
        body: &[u8],
    ) -> Option<(u8, i32, c2ssearch::Found)> {
        if body.len() > MAX_LOCK_CLIENT_BODY {
            return None;
        }
        let (ack, _) = c2ssearch::ClientScrambled::new(body)?;
        // A group that ends short of 8 messages (a team game's server commands come every
        // second) is searched as it ends: its lead may answer with the next group's.
        if let Some(prev) = self.client_group.ack().filter(|&a| a != ack) {
            if (4..8).contains(&self.client_group.msgs.len()) {
                // Its own joint answer is not taken: the lock-on is on the current group.
                let _ = self.search_client(prev);
            }
        }
        if !self.client_group.push(ack, seq, body) {
            return None;
        }
        // From 4 messages only with another group's lead to answer with.
        let lead_elsewhere = self.client_lead.as_ref().is_some_and(|(a, _)| *a != ack);
        if self.client_group.msgs.len() < 8 && !lead_elsewhere {
            return None;
        }
        self.search_client(ack)
    }

    /// Search the client group (acknowledging server command `ack`): its answer, or the
    /// answer of its lead and another group's ([`c2ssearch::joint_answer`]).
    fn search_client(&mut self, ack: i32) -> Option<(u8, i32, c2ssearch::Found)> {
        if self.client_tries >= CLIENT_LOCK_TRIES {
            return None;
        }
        let lens = self.client_group.length_counts();
        if let Some((a, seen)) = &self.client_searched {
            if *a == ack && lens.iter().all(|l| seen.binary_search(l).is_ok()) {
                return None;
            }
        }
        self.client_tries += 1;
        let msgs: Vec<c2ssearch::ClientScrambled<'_>> = self
            .client_group
            .msgs
            .iter()
            .filter_map(|(_, b)| c2ssearch::ClientScrambled::new(b).map(|(_, m)| m))
            .filter(|m| m.body.len() > scramble::C2S_START)
            .collect();
        // A group of 8 gets a third of the budget: its messages end at few positions, so
        // a search that runs long there would rather wait for 16.
        let limits = match msgs.len() {
            n if n < 16 => c2ssearch::Limits {
                decodes: c2ssearch::LOCK_LIMITS.decodes / 3,
                ..c2ssearch::LOCK_LIMITS
            },
            _ => c2ssearch::LOCK_LIMITS,
        };
        let o = c2ssearch::lock_search(&msgs, limits);
        self.client_decodes += o.work.decodes;
        self.client_searched = o.settled.then_some((ack, lens));
        if let Some((ch, f)) = o.found {
            return Some((ch, ack, f));
        }
        let lead = o.lead?;
        let joint = match &self.client_lead {
            Some((a, earlier)) if *a != ack => c2ssearch::joint_answer(earlier, &lead),
            _ => None,
        };
        self.client_lead = Some((ack, lead));
        joint.map(|(ch, f)| (ch, ack, f))
    }

    /// Take server message `seq` and search when a group is complete: the guessed client
    /// command the group acknowledges, and the challenge byte.
    /// The searches are bounded by [`LOCK_TRIES`] and [`LOCK_DECODES`], not by time: a
    /// capture whose first guessable acknowledgement comes late still locks on then.
    // Out of line: only connections seen mid-session before their lock-on come here, and
    // inlined into the datagram path it made that path slower for every connection.
    #[inline(never)]
    pub(super) fn offer(&mut self, seq: i32, body: &[u8]) -> Option<(i32, String, u8, bool)> {
        let (ack, _) = crate::q3::midsession::keysearch::reliable_ack(body)?;
        if self.group.start(ack) {
            self.ruled_out = false;
            self.tails.clear();
            self.spilled.clear();
            self.spilled_bytes = 0;
        }
        self.spill();
        // Read every 8 ends kept from 16 on: before the lock-on nothing else decodes
        // these messages, and a read costs about 0.2 ms. No ends are kept once the reads
        // are spent.
        let read_due = self.tail_reads < TAIL_LOCK_READS && {
            let kept = self.tails.len();
            self.tails.push(seq, body);
            let n = self.tails.len();
            n > kept && n >= 16 && n % 8 == 0
        };
        // Search when a group is complete, then once more when it has doubled (if more
        // than one guess decoded it).
        let complete = self.group.push(ack, seq, body);
        if read_due {
            self.tail_reads += 1;
            if let Some((cmd, ch)) = self.tail_lock() {
                return Some((ack, cmd, ch, true));
            }
        }
        if self.ruled_out || !complete || self.tries >= LOCK_TRIES || self.decodes >= LOCK_DECODES {
            return None;
        }
        self.tries += 1;
        let (guess, work) =
            crate::q3::midsession::keysearch::guess_command(&self.group.scrambled());
        self.decodes += work.decodes;
        match guess {
            crate::q3::midsession::keysearch::Guess::Found(cmd, ch) => Some((ack, cmd, ch, false)),
            crate::q3::midsession::keysearch::Guess::Ambiguous => None,
            crate::q3::midsession::keysearch::Guess::None => {
                self.ruled_out = true;
                None
            }
        }
    }

    /// The group's oldest message, about to leave it for the next one, into
    /// [`Lock68::spilled`] (the oldest spilled ones go first past its bounds).
    fn spill(&mut self) {
        if self.group.msgs.len() < crate::q3::midsession::keysearch::AckGroup::MAX {
            return;
        }
        let Some(oldest) = self.group.msgs.first().cloned() else {
            return;
        };
        self.spilled_bytes += oldest.1.len();
        self.spilled.push_back(oldest);
        while self.spilled.len() > SPILL_MAX || self.spilled_bytes > SPILL_MAX_BYTES {
            let Some((_, b)) = self.spilled.pop_front() else {
                break;
            };
            self.spilled_bytes -= b.len();
        }
    }

    /// The command the server messages acknowledge, read off their ends
    /// ([`crate::q3::midsession::tailsearch`]) when no guess decodes them (free text sent before the
    /// capture, as a player's `tell` or `say_team`): the (challenge byte, text) pairs the
    /// kept ends allow, each then decoding the group's latest messages whole
    /// ([`crate::q3::midsession::keysearch::command_for`]). Taken only when one pair does.
    fn tail_lock(&mut self) -> Option<(String, u8)> {
        let group = self.group.scrambled();
        if group.len() < crate::q3::midsession::keysearch::AckGroup::MAX {
            return None;
        }
        let mut found: Option<(String, u8)> = None;
        for (ch, text) in self.tails.texts_any() {
            let (hit, work) =
                crate::q3::midsession::keysearch::command_for(&group, ch, [text.as_str()]);
            self.decodes += work.decodes;
            if hit.is_some() {
                if found.is_some() {
                    return None;
                }
                found = Some((text, ch));
            }
        }
        found
    }
}
