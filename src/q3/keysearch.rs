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
use super::bits::{BitError, BitReader};
use super::scramble::S2C_START;
use super::state::ClientState;
use super::svc::{self, Detail, SvcError};

/// One scrambled server message: its netchan sequence and its body (from the
/// reliableAcknowledge on).
#[derive(Debug, Clone, Copy)]
pub struct Scrambled<'a> {
    pub seq: i32,
    pub body: &'a [u8],
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
    (b' '..=b'~').filter(|&c| c != b'%')
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
        self.work.decodes += 1;
        let Some((ack, bit)) = reliable_ack(m.body) else {
            return Check::Wrong;
        };
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
            Some(SvcError::Delta(super::delta::DeltaError::Bits(BitError::PastEnd { .. })))
                if !whole =>
            {
                Check::Open
            }
            Some(_) => Check::Wrong,
            // The writer ends a message in its last byte, the unused bits zero.
            None if whole && ends_as_written(&self.buf, r.bit_pos()) => Check::Complete,
            None => Check::Wrong,
        }
    }
}

/// A message whose last op ended at bit `end` fills exactly `(end >> 3) + 1` bytes, and
/// the bits after `end` in a partly used last byte are zero. (The engine's Huffman writer
/// clears a byte when it starts writing into it: a last byte it never wrote into, when the
/// message ends on a byte boundary, holds whatever the buffer held, as the captures show.)
fn ends_as_written(buf: &[u8], end: usize) -> bool {
    let last = end >> 3;
    last + 1 == buf.len() && (end & 7 == 0 || buf[last] >> (end & 7) == 0)
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
    let longest = group.iter().map(|m| m.body.len()).max().unwrap_or(0);
    // The stream of challenge byte 0 (a sequence-0 key stream); another byte XORs it.
    let mut x = vec![0u8; longest.max(S2C_START)];
    super::scramble::s2c(&mut x, 0, 0, command);
    let x = &x[S2C_START..];
    let mut u = vec![0u8; x.len()];
    let mut found = Vec::new();
    for ch in 0..=255u8 {
        for (u, x) in u.iter_mut().zip(x) {
            *u = x ^ ch;
        }
        // The first bytes first: nearly every wrong byte fails there on every message.
        let head = group
            .iter()
            .all(|m| checker.check(m, &u, S2C_START + QUICK_BYTES) != Check::Wrong);
        let all = head
            && group
                .iter()
                .all(|m| checker.check(m, &u, m.body.len()) == Check::Complete);
        if all && !group.is_empty() {
            found.push(ch);
        }
    }
    (found, checker.work)
}

/// Bytes of each message decoded before whole messages are (see [`challenges_for`]).
const QUICK_BYTES: usize = 6;

/// The one (command, challenge byte) among [`GUESSABLE_COMMANDS`] under which every message
/// of `group` decodes to its end; `None` when no guess or more than one does.
pub fn guess_command(group: &[Scrambled<'_>]) -> (Option<(&'static str, u8)>, Work) {
    let mut work = Work::default();
    let mut found = None;
    for g in GUESSABLE_COMMANDS {
        let (chs, w) = challenges_for(group, g.as_bytes());
        work.decodes += w.decodes;
        for ch in chs {
            if found.replace((g, ch)).is_some() {
                return (None, work);
            }
        }
    }
    (found, work)
}
