//! Protocol-68 key search for server messages of a connection seen mid-session (issue 17).
//!
//! A server body is scrambled from byte 4 with the key `challenge ^ sequence` (low byte)
//! rolled by the client command the message acknowledges (q3-protocol.md §3.1). Every
//! message acknowledging the same command shares that rolling part: the key at body offset
//! `4 + k` is `seq ^ u[k]` where `u[k] = challenge ^ x[k]` depends on the command alone. So
//! the unknown of a group of messages with one acknowledgement is one byte stream `u`,
//! found byte by byte: `u[k] ^ u[k - 1]` is a command character (shifted left on odd `k`),
//! and every message of the group must still decode once byte `k` is known (op bytes,
//! Huffman codes, field counts, area mask length, and a message that ends must end with
//! `svc_EOF` in its last byte, the rest of that byte zero, as the engine's writer leaves it).
//! A candidate survives only when it holds on every message of the group, and the search
//! accepts a stream only when it is the only survivor: a wrong key never decodes.
//!
//! From `u` the command's characters follow (`c[k]` for `k >= 1`); its first character,
//! hence the challenge byte, once the command repeats inside the stream (its length is
//! then the period of `c`).
use crate::q3::bits::{BitError, BitReader};
use crate::q3::scramble::S2C_START;
use crate::q3::state::ClientState;
use crate::q3::svc::{self, Detail, SvcError};

/// One scrambled server message: its netchan sequence and its body (from the
/// reliableAcknowledge on).
#[derive(Debug, Clone, Copy)]
pub struct Scrambled<'a> {
    pub seq: i32,
    pub body: &'a [u8],
}

/// Messages held back while their key is unknown: (netchan sequence, body).
pub type Held = Vec<(i32, Vec<u8>)>;

/// The latest scrambled messages acknowledging one reliable command, gathered for a
/// search: server messages (acknowledging a client command) run a search when the group
/// reaches [`AckGroup::SIZE`] messages and once more at [`AckGroup::MAX`] (fewer than 4
/// do not rule a wrong guess out firmly enough; 8 settle most guesses that 4 left
/// ambiguous); client messages (acknowledging a server command, [`AckGroup::client`]) at
/// 8, 16 and 32. Bounded: only the latest messages of the largest size are kept.
#[derive(Debug)]
pub struct AckGroup {
    ack: Option<i32>,
    pub msgs: Held,
    /// Sizes to search at, the last the most kept.
    sizes: &'static [usize],
}

impl Default for AckGroup {
    fn default() -> Self {
        AckGroup {
            ack: None,
            msgs: Vec::new(),
            sizes: &[Self::SIZE, Self::MAX],
        }
    }
}

impl AckGroup {
    pub const SIZE: usize = 4;
    pub const MAX: usize = 8;

    /// A group of client messages: a client sends several per server message, and the
    /// search there needs messages that end at many positions of the key stream. From 8
    /// (the fewest a lock-on takes, `c2ssearch::MIN_WHOLE`): in a team game the server
    /// sends `tinfo` every second, and a client at 10 packets a second acknowledges each
    /// in about 10 messages.
    pub fn client() -> Self {
        AckGroup {
            sizes: &[8, 16, 32],
            ..Self::default()
        }
    }

    /// [`AckGroup::client`] before the lock-on, also at 4 messages: too few for an answer
    /// alone, but a group that implies one challenge byte answers with an earlier group
    /// that implied the same (`c2ssearch::joint_answer`), where a team game's server
    /// commands keep every group short (the lock-on searches there only with such a lead).
    pub fn client_lock() -> Self {
        AckGroup {
            sizes: &[4, 8, 16, 32],
            ..Self::default()
        }
    }

    /// Add message `seq` acknowledging command `ack` (a new acknowledgement starts a new
    /// group); true when the group just reached a size to search at.
    pub fn push(&mut self, ack: i32, seq: i32, body: &[u8]) -> bool {
        self.start(ack);
        let max = self.sizes.last().copied().unwrap_or(Self::MAX);
        if self.msgs.len() >= max {
            self.msgs.remove(0);
        }
        self.msgs.push((seq, body.to_vec()));
        self.sizes.contains(&self.msgs.len())
    }

    /// The lengths of the held messages, each with how many have it up to 2: what a
    /// client search's answer depends on besides the messages' contents (a whole text
    /// needs two messages reaching past its end; more of a length only rule candidates
    /// out).
    pub fn length_counts(&self) -> Vec<(usize, u8)> {
        let mut lens: Vec<usize> = self.msgs.iter().map(|(_, b)| b.len()).collect();
        lens.sort_unstable();
        let mut out: Vec<(usize, u8)> = Vec::new();
        for l in lens {
            match out.last_mut() {
                Some((m, n)) if *m == l => *n = (*n + 1).min(2),
                _ => out.push((l, 1)),
            }
        }
        out
    }

    /// Empty the group unless it already gathers acknowledgement `ack`; true when it was
    /// emptied.
    pub fn start(&mut self, ack: i32) -> bool {
        if self.ack == Some(ack) {
            return false;
        }
        self.ack = Some(ack);
        self.msgs.clear();
        true
    }

    /// The acknowledgement the group gathers.
    pub fn ack(&self) -> Option<i32> {
        self.ack
    }

    /// Forget the group (its command was found).
    pub fn clear(&mut self) {
        self.ack = None;
        self.msgs.clear();
    }

    /// The messages, as the searches take them.
    pub fn scrambled(&self) -> Vec<Scrambled<'_>> {
        self.msgs
            .iter()
            .map(|(seq, body)| Scrambled { seq: *seq, body })
            .collect()
    }
}

/// What a search found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The only stream every message decodes with: `u[k]` for body offsets `4..4 + len`.
    Found(Vec<u8>),
    /// More than one stream decodes every message (too few or too short messages).
    Ambiguous,
    /// No stream decodes every message (they do not share one command, or are not 68).
    None,
    /// The work budget ran out first.
    Budget,
}

/// Work done: body decodes tried.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Work {
    pub decodes: usize,
}

/// Characters a reliable command's key may take (`%` and bytes above 127 count as `.`):
/// commands are printable text.
fn key_chars() -> impl Iterator<Item = u8> {
    (b' '..=b'~').filter(|&c| is_key_char(c))
}

/// A character a client command keys with ([`key_chars`]).
pub(super) fn is_key_char(c: u8) -> bool {
    (b' '..=b'~').contains(&c) && c != b'%'
}

/// The acknowledgement a server body starts with, read as the client reads it (from the
/// still-scrambled bytes), and the bit after it.
pub fn reliable_ack(body: &[u8]) -> Option<(i32, usize)> {
    let mut r = BitReader::new(body);
    r.read_long().ok().map(|a| (a, r.bit_pos()))
}

/// How a body decodes with its first `known` bytes descrambled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// Nothing contradicts the key so far (the decode needs the bytes still unknown).
    Open,
    /// The whole body decodes and ends as the engine writes messages.
    Complete,
    Wrong,
}

/// Decodes bodies for the search, reusing buffers and one client state (bit layouts do
/// not depend on the state's values).
struct Checker {
    st: ClientState,
    buf: Vec<u8>,
    work: Work,
}

impl Checker {
    fn new() -> Self {
        let mut st = ClientState::default();
        st.mid_session = true;
        Checker {
            st,
            buf: Vec::new(),
            work: Work::default(),
        }
    }

    /// Descramble the first `known` bytes of `m` with `u` and decode them.
    fn check(&mut self, m: &Scrambled<'_>, u: &[u8], known: usize) -> Check {
        match reliable_ack(m.body) {
            Some(head) => self.check_after(m, head, u, known),
            None => {
                self.work.decodes += 1;
                Check::Wrong
            }
        }
    }

    /// [`Self::check`] with the message's acknowledgement and the bit after it
    /// ([`reliable_ack`]) read once by the caller: a search checks each message hundreds of
    /// times.
    fn check_after(
        &mut self,
        m: &Scrambled<'_>,
        (ack, bit): (i32, usize),
        u: &[u8],
        known: usize,
    ) -> Check {
        self.work.decodes += 1;
        let n = known.min(m.body.len());
        self.buf.clear();
        self.buf.extend_from_slice(&m.body[..n]);
        let seq = m.seq as u8;
        for (b, &k) in self.buf.iter_mut().skip(S2C_START).zip(u) {
            *b ^= seq ^ k;
        }
        let whole = n == m.body.len();
        let mut r = BitReader::new(&self.buf);
        r.set_bit_pos(bit);
        let msg = svc::parse_server_message_with(
            &mut r,
            Some(ack),
            m.seq,
            &mut self.st,
            Detail::StateOnly,
        );
        match msg.error {
            Some(SvcError::Bits(BitError::PastEnd { .. })) if !whole => Check::Open,
            Some(SvcError::Delta(crate::q3::delta::DeltaError::Bits(BitError::PastEnd {
                ..
            }))) if !whole => Check::Open,
            Some(_) => Check::Wrong,
            // The writer ends a message in its last byte, the unused bits zero.
            None if whole && ends_after_eofs(&mut r, &self.buf) => Check::Complete,
            None => Check::Wrong,
        }
    }
}

/// Extra `svc_EOF`s a message may end with: ioquake3 ends a download message with two
/// (q3-protocol.md §6.1).
const EXTRA_EOFS: usize = 2;

/// The message read up to its `svc_EOF` ends as written ([`ends_as_written`]), possibly
/// after a few more `svc_EOF`s.
fn ends_after_eofs(r: &mut BitReader<'_>, buf: &[u8]) -> bool {
    for _ in 0..=EXTRA_EOFS {
        if ends_as_written(buf, r.bit_pos()) {
            return true;
        }
        if r.read_byte() != Ok(svc::SVC_EOF) {
            return false;
        }
    }
    false
}

/// A message whose last op ended at bit `end` fills exactly `(end >> 3) + 1` bytes, and
/// the bits after `end` in a partly used last byte are zero. (The engine's Huffman writer
/// clears a byte when it starts writing into it: a last byte it never wrote into, when the
/// message ends on a byte boundary, holds whatever the buffer held, as the captures show.)
fn ends_as_written(buf: &[u8], end: usize) -> bool {
    let last = end >> 3;
    last + 1 == buf.len() && (end & 7 == 0 || buf[last] >> (end & 7) == 0)
}

/// A message whose last four bytes are `tail` (descrambled) can end as the engine writes it
/// ([`ends_as_written`]) right after the Huffman code of `sym` (its end-of-message op):
/// the code fills the bits just before some end bit in the last byte, and that byte's bits
/// from there on are zero (or the end is the byte's first bit). A necessary condition for a
/// message to decode whole, read off the last bytes alone: a wrong key passes it about once
/// in 16 for `svc_EOF` (a 5-bit code) and once in 128 for `clc_EOF` (8 bits), so a search
/// checks it before decoding anything.
pub(super) fn may_end_after(tail: [u8; 4], sym: u8) -> bool {
    let (code, len) = crate::q3::huffman::code_of(sym);
    let (code, len) = (u32::from(code), u32::from(len));
    let w = u32::from_le_bytes(tail);
    let last = tail[3];
    // The end bit `24 + p` of `w` (bit `p` of the last byte); `len` <= 11 keeps it in `w`.
    (0..8u32).any(|p| {
        let end = 24 + p;
        (p == 0 || last >> p == 0) && (w >> (end - len)) & ((1 << len) - 1) == code
    })
}

/// [`may_end_after`] for server message `m` descrambled with the stream `u` (`u(k)`: the
/// stream's byte `k`, `None` past its end: the byte then stays as it is) and ending after
/// `svc_EOF` (every message that decodes whole does): true for a message shorter than four
/// bytes (not checked).
fn server_may_end(m: &Scrambled<'_>, u: impl Fn(usize) -> Option<u8>) -> bool {
    let len = m.body.len();
    let Some(start) = len.checked_sub(4) else {
        return true;
    };
    let mut tail = [0u8; 4];
    for (j, t) in (start..len).zip(&mut tail) {
        *t = m.body[j];
        if let Some(k) = j.checked_sub(S2C_START).and_then(&u) {
            *t ^= m.seq as u8 ^ k;
        }
    }
    may_end_after(tail, svc::SVC_EOF)
}

/// The stream of a command (challenge byte and sequence 0) at any offset, without rolling
/// through the bytes before it: the characters key by offset parity, so the stream's steps
/// repeat every `2 * len` bytes, and whole periods XOR to the period's last byte or to 0.
struct Period {
    /// The stream's first `2 * len` bytes.
    x: Vec<u8>,
}

impl Period {
    fn of(text: &[u8]) -> Self {
        let mut b = vec![0u8; S2C_START + 2 * text.len()];
        crate::q3::scramble::s2c(&mut b, 0, 0, text);
        Period {
            x: b.split_off(S2C_START),
        }
    }

    /// The stream's byte `k` (that of body offset `S2C_START + k`).
    fn at(&self, k: usize) -> u8 {
        let p = self.x.len();
        if p == 0 {
            return 0;
        }
        let (whole, part) = ((k + 1) / p, (k + 1) % p);
        let periods = if whole % 2 == 1 { self.x[p - 1] } else { 0 };
        periods ^ part.checked_sub(1).map_or(0, |r| self.x[r])
    }
}

/// Find the one stream `u` under which every message of `group` (all acknowledging the same
/// client command) decodes, within `budget` body decodes. The stream covers the body bytes
/// of at least two messages (the longest message alone cannot tell candidates apart): the
/// length of the second-longest body.
pub fn search_s2c(group: &[Scrambled<'_>], budget: usize) -> (Outcome, Work) {
    let mut lens: Vec<usize> = group.iter().map(|m| m.body.len()).collect();
    lens.sort_unstable_by(|a, b| b.cmp(a));
    let depth = match lens.get(1) {
        Some(&l) if l > S2C_START => l - S2C_START,
        _ => return (Outcome::Ambiguous, Work::default()),
    };
    let mut s = Search {
        group,
        depth,
        budget,
        checker: Checker::new(),
        found: None,
        ambiguous: false,
        out_of_budget: false,
    };
    let mut u = Vec::with_capacity(depth);
    s.descend(&mut u);
    let work = s.checker.work;
    let outcome = match (s.out_of_budget, s.ambiguous, s.found) {
        (true, _, _) => Outcome::Budget,
        (false, true, _) => Outcome::Ambiguous,
        (false, false, Some(u)) => Outcome::Found(u),
        (false, false, None) => Outcome::None,
    };
    (outcome, work)
}

struct Search<'g, 'a> {
    group: &'g [Scrambled<'a>],
    depth: usize,
    budget: usize,
    checker: Checker,
    found: Option<Vec<u8>>,
    ambiguous: bool,
    out_of_budget: bool,
}

impl Search<'_, '_> {
    /// Try every next byte of `u`; stops at the second solution or when out of budget.
    fn descend(&mut self, u: &mut Vec<u8>) {
        if self.ambiguous || self.out_of_budget {
            return;
        }
        let k = u.len();
        if k == self.depth {
            match &self.found {
                None => self.found = Some(u.clone()),
                Some(_) => self.ambiguous = true,
            }
            return;
        }
        let prev = u.last().copied();
        let candidates: Vec<u8> = match prev {
            None => (0..=255).collect(),
            Some(p) => key_chars().map(|c| p ^ (c << (k & 1))).collect(),
        };
        for v in candidates {
            u.push(v);
            if self.holds(u) {
                self.descend(u);
            }
            u.pop();
            if self.ambiguous || self.out_of_budget {
                return;
            }
        }
    }

    /// Every message that reaches byte `u.len() - 1` still decodes.
    fn holds(&mut self, u: &[u8]) -> bool {
        let known = S2C_START + u.len();
        for m in self.group {
            if m.body.len() < known {
                continue;
            }
            if self.checker.work.decodes >= self.budget {
                self.out_of_budget = true;
                return false;
            }
            // A message longer than the searched depth is checked as far as it goes.
            if self.checker.check(m, u, known) == Check::Wrong {
                return false;
            }
        }
        true
    }
}

/// The command characters `u` shows: `c[k]` for `k >= 1` (`c[0]` is mixed with the
/// challenge). `None` where a byte pair is not a command character.
pub fn command_chars(u: &[u8]) -> Vec<Option<u8>> {
    let mut out = vec![None];
    for k in 1..u.len() {
        let d = u[k] ^ u[k - 1];
        let c = if k & 1 == 1 {
            (d & 1 == 0).then_some(d >> 1)
        } else {
            Some(d)
        };
        out.push(c.filter(|c| (b' '..=b'~').contains(c)));
    }
    out
}

/// The command and the challenge's low byte, when the command repeats inside `u`: its
/// length `l` is the smallest period of `c[1..]` that leaves at least `margin` characters
/// repeated, and `c[0] = c[l]`.
pub fn command_and_challenge(u: &[u8], margin: usize) -> Option<(Vec<u8>, u8)> {
    let c: Vec<u8> = command_chars(u)
        .into_iter()
        .skip(1)
        .collect::<Option<_>>()?;
    // c here is c[1..]; a period l means c[j] == c[j - l] for j >= l + 1 in full indices.
    let n = c.len() + 1;
    for l in 1..n {
        if n - l < margin + 1 {
            break;
        }
        let periodic = (l + 1..n).all(|j| c[j - 1] == c[j - l - 1]);
        if periodic {
            let first = c[l - 1];
            let mut s = vec![first];
            s.extend_from_slice(&c[..l - 1]);
            return Some((s, u[0] ^ first));
        }
    }
    None
}

/// Client commands whose whole text a capture can guess: the key string of every server
/// message acknowledging one of them is then known but for the challenge byte.
pub const GUESSABLE_COMMANDS: [&str; 13] = [
    // None yet: the server's lastClientCommandString starts empty.
    "",
    "score",
    "kill",
    "disconnect",
    "donedl",
    "vote yes",
    "vote no",
    "follownext",
    "followprev",
    "team spectator",
    "team free",
    "team red",
    "team blue",
];

/// The challenge bytes under which every message of `group` decodes to its end (ending as
/// the engine writes messages) when the messages acknowledge `command`. One answer is the
/// challenge byte; none: the messages acknowledge another command.
pub fn challenges_for(group: &[Scrambled<'_>], command: &[u8]) -> (Vec<u8>, Work) {
    let mut checker = Checker::new();
    let Some(heads) = Heads::new(group) else {
        // A message too short for its acknowledgement decodes under no key.
        return (Vec::new(), checker.work);
    };
    let found = checker.challenges(group, &heads, command);
    (found, checker.work)
}

impl Checker {
    /// [`challenges_for`] with the group's [`Heads`] (shared by the guesses of a search).
    fn challenges(&mut self, group: &[Scrambled<'_>], heads: &Heads, command: &[u8]) -> Vec<u8> {
        let longest = group.iter().map(|m| m.body.len()).max().unwrap_or(0);
        // The stream of challenge byte 0 (a sequence-0 key stream); another byte XORs it.
        let mut x = vec![0u8; longest.max(S2C_START)];
        crate::q3::scramble::s2c(&mut x, 0, 0, command);
        let x = &x[S2C_START..];
        let mut u = vec![0u8; x.len()];
        let mut found = Vec::new();
        for ch in 0..=255u8 {
            // Each message's last bytes first (no decode), then the first key bytes: only a
            // byte that passes them needs the whole stream.
            if !group
                .iter()
                .all(|m| server_may_end(m, |k| x.get(k).map(|x| x ^ ch)))
            {
                continue;
            }
            for (u, x) in u.iter_mut().zip(x).take(QUICK_BYTES) {
                *u = x ^ ch;
            }
            if !self.heads_hold(group, &heads.acks, &u) {
                continue;
            }
            for (u, x) in u.iter_mut().zip(x).skip(QUICK_BYTES) {
                *u = x ^ ch;
            }
            if self.all_complete(group, &heads.acks, &u) {
                found.push(ch);
            }
        }
        found
    }

    /// Every message of `group` decodes its first [`QUICK_BYTES`] key bytes with `u`: nearly
    /// every wrong key fails here, most on the first message.
    fn heads_hold(&mut self, group: &[Scrambled<'_>], heads: &[(i32, usize)], u: &[u8]) -> bool {
        group
            .iter()
            .zip(heads)
            .all(|(m, &h)| self.check_after(m, h, u, S2C_START + QUICK_BYTES) != Check::Wrong)
    }

    /// Every message of `group` (not empty) decodes whole with `u` and ends as written.
    fn all_complete(&mut self, group: &[Scrambled<'_>], heads: &[(i32, usize)], u: &[u8]) -> bool {
        !group.is_empty()
            && group
                .iter()
                .zip(heads)
                .all(|(m, &h)| self.check_after(m, h, u, m.body.len()) == Check::Complete)
    }
}

/// What a search reads of a group's messages once, whatever the key: each message's
/// acknowledgement and the bit after it ([`reliable_ack`]; a search checks each message
/// thousands of times).
struct Heads {
    acks: Vec<(i32, usize)>,
}

impl Heads {
    /// `None` when a message is too short to hold its acknowledgement (no key decodes it).
    fn new(group: &[Scrambled<'_>]) -> Option<Self> {
        let acks = group
            .iter()
            .map(|m| reliable_ack(m.body))
            .collect::<Option<_>>()?;
        Some(Heads { acks })
    }
}

/// Key bytes a guess must reach past its text's last character in the longest message.
const COVER_MARGIN: usize = 2;

/// Every character of `text` keys some byte of the longest message of `group` (and a few
/// bytes after its last): otherwise a guess and another text that differs only past the
/// messages' end would decode them alike (e.g. `nextdl 162` and `nextdl 167` on 13-byte
/// messages), and the one guessed could be the wrong one.
fn covers(group: &[Scrambled<'_>], text: &str) -> bool {
    let longest = group.iter().map(|m| m.body.len()).max().unwrap_or(0);
    longest >= S2C_START + text.len() + COVER_MARGIN
}

/// Bytes of each message decoded before whole messages are (see [`challenges_for`]).
const QUICK_BYTES: usize = 6;

/// What [`guess_command`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Guess {
    /// The only (command, challenge byte) under which every message decodes.
    Found(String, u8),
    /// More than one decodes every message: more messages may tell them apart.
    Ambiguous,
    /// None does: more messages of the group cannot change that (each guess must decode
    /// every message).
    None,
}

/// The one (command, challenge byte) among [`GUESSABLE_COMMANDS`] and the numbered
/// commands ([`NUMBERED_COMMANDS`] `0..`[`MAX_NUMBER`]) under which every message of `group`
/// decodes to its end.
pub fn guess_command(group: &[Scrambled<'_>]) -> (Guess, Work) {
    let mut work = Work::default();
    let mut found = None;
    let heads = Heads::new(group);
    for g in GUESSABLE_COMMANDS.into_iter().filter(|g| covers(group, g)) {
        // A message too short for its acknowledgement: no guess decodes the group.
        let Some(heads) = heads.as_ref() else { break };
        // A checker per guess, as [`challenges_for`]: its state is what that guess decoded.
        let mut checker = Checker::new();
        let chs = checker.challenges(group, heads, g.as_bytes());
        work.decodes += checker.work.decodes;
        for ch in chs {
            if found.replace((g.to_string(), ch)).is_some() {
                return (Guess::Ambiguous, work);
            }
        }
    }
    for prefix in NUMBERED_COMMANDS {
        let (hits, w) = numbered_for(group, prefix);
        work.decodes += w.decodes;
        for (n, ch) in hits {
            if found.replace((format!("{prefix}{n}"), ch)).is_some() {
                return (Guess::Ambiguous, work);
            }
        }
    }
    let guess = match found {
        Some((cmd, ch)) => Guess::Found(cmd, ch),
        None => Guess::None,
    };
    (guess, work)
}

/// Commands made of a fixed word and a number: `nextdl <block>` acknowledges each block of a
/// download (q3-protocol.md §6.4), so server messages acknowledge one for most of it.
pub const NUMBERED_COMMANDS: [&str; 1] = ["nextdl "];
/// Numbers tried after a numbered command's word: blocks of a download up to 2 MB (1.32's
/// 2048-byte blocks) or 1 MB (ioquake3's 1024).
pub const MAX_NUMBER: u32 = 1000;

/// The (number, challenge byte) pairs under which every message of `group` decodes to its
/// end when the messages acknowledge `prefix` followed by a number below [`MAX_NUMBER`].
pub fn numbered_for(group: &[Scrambled<'_>], prefix: &str) -> (Vec<(u32, u8)>, Work) {
    numbered_with(group, prefix, 0..=255)
}

/// Blocks the server sends after the one a `nextdl` acknowledges: ioquake3's download
/// window (1.32's is 8).
const DOWNLOAD_WINDOW: i32 = 48;

/// [`numbered_for`] trying only the challenge bytes `chs`. The numbers tried are the block
/// numbers the messages show: a server message acknowledging `nextdl N` that carries a
/// download block (ioquake3 sends them in messages of their own, the block number in the
/// first key bytes, which the word alone fixes) carries one of the next
/// `DOWNLOAD_WINDOW` blocks, and the blocks rise with the message sequence. So each
/// challenge byte under which the messages read as download messages of rising blocks
/// gives a few numbers, each then checked by decoding every message to its end.
pub fn numbered_with(
    group: &[Scrambled<'_>],
    prefix: &str,
    chs: impl IntoIterator<Item = u8>,
) -> (Vec<(u32, u8)>, Work) {
    let mut checker = Checker::new();
    let longest = group.iter().map(|m| m.body.len()).max().unwrap_or(0);
    let mut found = Vec::new();
    if group.is_empty() || longest <= S2C_START + prefix.len() {
        return (found, checker.work);
    }
    let mut buf = Vec::new();
    let stream = |buf: &mut Vec<u8>, len: usize, ch: u8, text: &[u8]| {
        buf.clear();
        buf.resize(len, 0);
        crate::q3::scramble::s2c(buf, i32::from(ch), 0, text);
    };
    let fixed = S2C_START + prefix.len();
    // Each number's text and stream period, made once for all challenge bytes.
    let mut texts: Vec<Option<(String, Period)>> = Vec::new();
    for ch in chs {
        stream(&mut buf, fixed, ch, prefix.as_bytes());
        let Some(first) = download_blocks(&mut checker, group, &buf[S2C_START..fixed]) else {
            continue;
        };
        let lowest = (first - DOWNLOAD_WINDOW).max(0);
        for n in lowest..first {
            let Ok(n) = u32::try_from(n) else { continue };
            if n >= MAX_NUMBER {
                break;
            }
            if texts.is_empty() {
                texts.resize_with(MAX_NUMBER as usize, || None);
            }
            let (text, period) = texts[n as usize].get_or_insert_with(|| {
                let text = format!("{prefix}{n}");
                let period = Period::of(text.as_bytes());
                (text, period)
            });
            if !covers(group, text) {
                continue;
            }
            // The messages' last bytes first: the whole stream only for a number they pass.
            if !group
                .iter()
                .all(|m| server_may_end(m, |k| Some(period.at(k) ^ ch)))
            {
                continue;
            }
            stream(&mut buf, longest, ch, text.as_bytes());
            let u = &buf[S2C_START..];
            if group
                .iter()
                .all(|m| checker.check(m, u, m.body.len()) == Check::Complete)
            {
                found.push((n, ch));
            }
        }
    }
    (found, checker.work)
}

/// The first block number when every message of `group`, descrambled over `u` (the key
/// bytes the command's word fixes), starts with a download op whose block number is read
/// within them, and the blocks rise with the sequence.
fn download_blocks(checker: &mut Checker, group: &[Scrambled<'_>], u: &[u8]) -> Option<i32> {
    let mut blocks: Vec<(i32, i32)> = Vec::with_capacity(group.len());
    for m in group {
        checker.work.decodes += 1;
        let (_, bit) = reliable_ack(m.body)?;
        let n = (S2C_START + u.len()).min(m.body.len());
        checker.buf.clear();
        checker.buf.extend_from_slice(&m.body[..n]);
        let seq = m.seq as u8;
        for (b, &k) in checker.buf.iter_mut().skip(S2C_START).zip(u) {
            *b ^= seq ^ k;
        }
        let mut r = BitReader::new(&checker.buf);
        r.set_bit_pos(bit);
        if r.read_byte().ok()? != svc::SVC_DOWNLOAD {
            return None;
        }
        let block = i32::from(r.read_short().ok()?);
        blocks.push((m.seq, block));
    }
    blocks.sort_unstable();
    let rising = blocks.windows(2).all(|w| w[1].1 > w[0].1);
    rising.then(|| blocks[0].1)
}

/// After a lock-on (the challenge byte `ch` known): the one command among `candidates`
/// under which every message of `group` decodes to its end, ending as the engine writes
/// messages; `None` when no candidate or more than one does. This is how decoding resumes
/// when the client sent a new command in a message the capture could not descramble (its
/// key string, a server command from before the capture, unknown): the server messages
/// then acknowledge a command whose text was never seen.
pub fn command_for<'c>(
    group: &[Scrambled<'_>],
    ch: u8,
    candidates: impl IntoIterator<Item = &'c str>,
) -> (Option<&'c str>, Work) {
    let mut checker = Checker::new();
    let Some(Heads { acks: heads }) = Heads::new(group) else {
        return (None, checker.work);
    };
    let longest = group.iter().map(|m| m.body.len()).max().unwrap_or(0);
    let mut found = None;
    let mut buf = Vec::new();
    for cmd in candidates.into_iter().filter(|c| covers(group, c)) {
        buf.clear();
        buf.resize(longest.max(S2C_START), 0);
        crate::q3::scramble::s2c(&mut buf, i32::from(ch), 0, cmd.as_bytes());
        let u = &buf[S2C_START..];
        let all = group
            .iter()
            .all(|m| server_may_end(m, |k| u.get(k).copied()))
            && checker.heads_hold(group, &heads, u)
            && checker.all_complete(group, &heads, u);
        if all && found.replace(cmd).is_some_and(|f| f != cmd) {
            return (None, checker.work);
        }
    }
    (found, checker.work)
}

/// [`command_for`] among the candidates and the numbered commands ([`NUMBERED_COMMANDS`]).
pub fn command_or_numbered<'c>(
    group: &[Scrambled<'_>],
    ch: u8,
    candidates: impl IntoIterator<Item = &'c str>,
) -> (Option<String>, Work) {
    let (found, mut work) = command_for(group, ch, candidates);
    let mut found = found.map(str::to_string);
    for prefix in NUMBERED_COMMANDS {
        let (hits, w) = numbered_with(group, prefix, [ch]);
        work.decodes += w.decodes;
        for (n, _) in hits {
            let text = format!("{prefix}{n}");
            if found.replace(text.clone()).is_some_and(|f| f != text) {
                return (None, work);
            }
        }
    }
    (found, work)
}

/// Diagnostic for [`search_s2c`]: how many streams survive after each byte `k` (breadth
/// first from `start`, the first key bytes taken as known, up to `depth` bytes, stopping
/// once more than `cap` survive). On the stored captures' groups this shows why the general
/// search does not converge: 248-256 streams after byte 0, 21 600-24 100 after byte 1 and
/// past 200 000 after byte 2, i.e. decoding rules out almost nothing (a snapshot's first
/// bytes are free values: serverTime, deltaNum, area mask, and every message of a group has
/// them in the same place); even with the real first 4, 8 or 12 key bytes given, the next
/// bytes mostly multiply the streams by close to 94 (every printable key character) each.
pub fn survivors(group: &[Scrambled<'_>], start: &[u8], depth: usize, cap: usize) -> Vec<usize> {
    let mut checker = Checker::new();
    let mut level: Vec<Vec<u8>> = vec![start.to_vec()];
    let mut out = Vec::new();
    for k in start.len()..depth {
        let mut next = Vec::new();
        for u in &level {
            let candidates: Vec<u8> = match u.last() {
                None => (0..=255).collect(),
                Some(&p) => key_chars().map(|c| p ^ (c << (k & 1))).collect(),
            };
            for v in candidates {
                let mut w = u.clone();
                w.push(v);
                let known = S2C_START + w.len();
                if group
                    .iter()
                    .all(|m| m.body.len() < known || checker.check(m, &w, known) != Check::Wrong)
                {
                    next.push(w);
                }
            }
            if next.len() > cap {
                break;
            }
        }
        out.push(next.len());
        if next.len() > cap || next.is_empty() {
            break;
        }
        level = next;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::q3::bits::BitWriter;
    use crate::q3::clc::CLC_EOF;

    fn tail(msg: &[u8]) -> [u8; 4] {
        let mut t = [0u8; 4];
        t.copy_from_slice(&msg[msg.len() - 4..]);
        t
    }

    /// Every message the writer ends with an end-of-message op passes the end check, at
    /// every bit alignment of its end (and whatever a last byte it never wrote holds).
    #[test]
    fn messages_as_written_may_end() {
        for sym in [svc::SVC_EOF, CLC_EOF] {
            for raw in 0..16u32 {
                for first in [0u8, 7, 0x41, 0xff] {
                    let mut w = BitWriter::new();
                    w.write_long(0x1234_5678);
                    w.write_byte(first);
                    w.put_raw(0x2d5 >> (raw % 3), raw);
                    w.write_byte(sym);
                    let ends_on_byte = w.bit_pos() % 8 == 0;
                    let mut msg = w.finish();
                    assert!(may_end_after(tail(&msg), sym), "{sym} {raw} {first}");
                    if ends_on_byte {
                        // A byte the writer never wrote into: any value.
                        for b in [1u8, 0x80, 0xff] {
                            *msg.last_mut().unwrap() = b;
                            assert!(may_end_after(tail(&msg), sym), "{sym} {raw} {b}");
                        }
                    }
                }
            }
        }
    }

    /// [`Period::at`] gives the stream the scrambler rolls, at every offset.
    #[test]
    fn period_gives_the_rolled_stream() {
        for text in ["", "a", "kill", "nextdl 84", "nextdl 167", "say 100%\u{e9}"] {
            let mut b = vec![0u8; 300];
            crate::q3::scramble::s2c(&mut b, 0, 0, text.as_bytes());
            let p = Period::of(text.as_bytes());
            for (k, &x) in b[S2C_START..].iter().enumerate() {
                assert_eq!(p.at(k), x, "{text:?} at {k}");
            }
        }
    }

    /// Random last bytes (a wrong key) pass about once in 16 (`svc_EOF`, a 5-bit code) or
    /// 128 (`clc_EOF`, 8 bits).
    #[test]
    fn random_tails_rarely_may_end() {
        for sym in [svc::SVC_EOF, CLC_EOF] {
            let passed = (0..=u16::MAX)
                .filter(|&v| {
                    let [a, b] = v.to_le_bytes();
                    may_end_after([0x5a, 0xc3, a, b], sym)
                })
                .count();
            assert!(passed < 65536 / 8, "{sym}: {passed} of 65536");
            assert!(passed > 0);
        }
    }
}
