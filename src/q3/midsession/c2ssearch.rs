//! Protocol-68 key search for client messages of a connection seen mid-session (issue 17).
//!
//! A client body is scrambled from byte 12 (q3-protocol.md §3.2): the key at body offset
//! `12 + i` is `k ^ u[i]`, where `k = serverId ^ messageAcknowledge` (low byte, in the
//! clear header) changes with every message and `u[i] = challenge ^ x[i]` depends only on
//! the server command the message acknowledges (`x[i]` = XOR of its characters up to `i`,
//! each shifted left on odd `i`). The client keeps acknowledging one server command until
//! the server sends the next, often for hundreds of messages: all of them share `u`. So
//! `u` is searched byte by byte, breadth first, as in [`super::keysearch`]: `u[i] ^ u[i - 1]`
//! is a command character, and every message of the group must still decode once byte `i`
//! is known (ops, command counts, client command texts, usercmd delta bits), and a message
//! whose last byte is reached must end with `clc_EOF` there, the rest of the byte zero.
//!
//! Unlike a server message, a client message's first scrambled bytes are not free values
//! (its first op usually lies in the clear header bytes), and the messages' lengths vary,
//! so the end-of-message check lands at many positions of `u`: the candidates stay few.
//! What is returned is the prefix every surviving candidate shares: the messages no longer
//! than it decode with it and with no other stream; a wrong stream never decodes.
use super::keysearch::{self, Work};
use crate::q3::bits::{BitError, BitReader};
use crate::q3::clc;
use crate::q3::scramble::C2S_START;
use crate::q3::usercmd::{read_delta_usercmd, UserCmd};

/// One scrambled client message: its clear header and its whole body.
#[derive(Debug, Clone, Copy)]
pub struct ClientScrambled<'a> {
    /// `serverId ^ messageAcknowledge`, low byte: the message's part of the key.
    pub key: u8,
    /// The bit after the header's three longs.
    pub bit: usize,
    pub body: &'a [u8],
}

impl<'a> ClientScrambled<'a> {
    /// The header of `body` (read from the scrambled bytes, as the server reads it); `None`
    /// when it is shorter than its header.
    pub fn new(body: &'a [u8]) -> Option<(i32, Self)> {
        let mut r = BitReader::new(body);
        let (sid, ack, rel) = clc::read_header(&mut r).ok()?;
        let m = ClientScrambled {
            key: (sid ^ ack) as u8,
            bit: r.bit_pos(),
            body,
        };
        Some((rel, m))
    }

    /// The scrambled bytes (those past the clear header bytes).
    fn scrambled_len(&self) -> usize {
        self.body.len().saturating_sub(C2S_START)
    }
}

/// Characters a server command's key may take. `%` and bytes above 127 key as `.`; the
/// control characters commands carry are the newline (`print "...\n"`) and the chat
/// escape 0x19 (`chat "name^7\x19: text"`).
fn key_chars() -> impl Iterator<Item = u8> {
    (b' '..=b'~').filter(|&c| c != b'%').chain([b'\n', 0x19])
}

/// What the engines write after some command words, so a key byte there is searched over
/// the characters the command can hold there instead of all 96 (with the short client
/// messages of a team game, whose ends are the only check on most key bytes, the 96-way
/// branching of a three-byte stretch outruns the search's bounds; the command's grammar
/// keeps one candidate):
/// * `cs N "…"`, `bcs0 N "…"`, `bcs1 N "…"`, `bcs2 N "…"` (ioq3 `SV_SendConfigstring`):
///   digits, one space, a quote, then anything;
/// * `tinfo` (team overlay, every second or so in team games: `"tinfo %i %s"` of
///   `" %i %i %i %i %i %i"` entries, game `TeamplayInfoMessage`), `scores` (`%i` fields,
///   `DeathmatchScoreboardMessage`) and `respawn N`: numbers and spaces;
/// * `vchat`, `vtchat`, `vtell` (`"%s %d %d %d %s"`, game `G_VoiceTo`): three numbers, then
///   anything.
///
/// `text` is the command so far; the characters its next byte may take.
fn next_chars(text: &[u8]) -> &'static [u8] {
    const NUMERIC: &[u8] = b"0123456789 -";
    const DIGITS: &[u8] = b"0123456789";
    const DIGITS_SPACE: &[u8] = b"0123456789 ";
    let after = |w: &[u8]| text.strip_prefix(w);
    if let Some(rest) = [&b"cs "[..], b"bcs0 ", b"bcs1 ", b"bcs2 "]
        .iter()
        .find_map(|w| after(w))
    {
        return match rest {
            _ if rest.contains(&b'"') => key_chars_all(),
            [] => DIGITS,
            [.., b' '] => b"\"",
            _ => DIGITS_SPACE,
        };
    }
    if [&b"tinfo "[..], b"scores ", b"respawn "]
        .iter()
        .any(|w| text.starts_with(w))
    {
        return NUMERIC;
    }
    if let Some(rest) = [&b"vchat "[..], b"vtchat ", b"vtell "]
        .iter()
        .find_map(|w| after(w))
    {
        let spaces = rest.iter().filter(|&&c| c == b' ').count();
        if spaces < 3 {
            return NUMERIC;
        }
    }
    key_chars_all()
}

/// [`key_chars`] as a slice.
fn key_chars_all() -> &'static [u8] {
    static ALL: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| key_chars().collect())
}

/// How a body decodes with its first `known` bytes descrambled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    Open,
    Complete,
    Wrong,
}

/// What the messages of one candidate showed, checked across them: a client repeats each
/// command (same number, same text) in every message until the server acknowledges it,
/// and the first usercmds of messages sent within a few seconds have close serverTimes.
#[derive(Default)]
struct Seen {
    /// (number, text read so far, whole text read).
    commands: Vec<(i32, Vec<u8>, bool)>,
    /// Lowest and highest first-usercmd serverTime.
    times: Option<(i32, i32)>,
}

/// The first usercmds of one group's messages lie within this many milliseconds.
const TIME_SPREAD: i32 = 10_000;

impl Seen {
    fn clear(&mut self) {
        self.commands.clear();
        self.times = None;
    }

    /// Record command `seq` (its text so far); false when another message gave it another
    /// text.
    fn command(&mut self, seq: i32, text: &[u8], whole: bool) -> bool {
        for (s, t, w) in &mut self.commands {
            if *s != seq {
                continue;
            }
            let n = t.len().min(text.len());
            if t[..n] != text[..n]
                || (*w && text.len() > t.len())
                || (whole && t.len() > text.len())
            {
                return false;
            }
            if text.len() > t.len() {
                t.clear();
                t.extend_from_slice(text);
            }
            *w |= whole;
            return true;
        }
        self.commands.push((seq, text.to_vec(), whole));
        true
    }

    fn time(&mut self, t: i32) -> bool {
        let (lo, hi) = self.times.map_or((t, t), |(lo, hi)| (lo.min(t), hi.max(t)));
        self.times = Some((lo, hi));
        i64::from(hi) - i64::from(lo) <= i64::from(TIME_SPREAD)
    }
}

/// Decodes client bodies for the search, reusing its buffers.
#[derive(Default)]
struct Checker {
    buf: Vec<u8>,
    text: Vec<u8>,
    seen: Seen,
    work: Work,
}

/// A client command character as clients send them: printable.
fn plausible_char(c: u8) -> bool {
    (b' '..=b'~').contains(&c)
}

/// Longest client command text read (the engine's `MAX_STRING_CHARS - 1`).
const MAX_TEXT: usize = crate::q3::bits::MAX_STRING_CHARS - 1;

/// Why a partial decode stopped: the known bytes ran out (`Open`) or the bytes are wrong.
enum Stop {
    Open,
    Wrong,
}

impl From<BitError> for Stop {
    fn from(e: BitError) -> Self {
        match e {
            BitError::PastEnd { .. } => Stop::Open,
            _ => Stop::Wrong,
        }
    }
}

impl Checker {
    /// Descramble the first `known` bytes of `m` with `u` and decode them.
    fn check(&mut self, m: &ClientScrambled<'_>, u: &[u8], known: usize) -> Check {
        self.work.decodes += 1;
        // A whole message that cannot end as written is wrong before any decode (counted as
        // one all the same: the searches' budgets are in decodes, and stay as they were).
        if known >= m.body.len() && !client_may_end(m, u) {
            return Check::Wrong;
        }
        let n = known.min(m.body.len());
        self.buf.clear();
        self.buf.extend_from_slice(&m.body[..n]);
        for (b, &k) in self.buf.iter_mut().skip(C2S_START).zip(u) {
            *b ^= m.key ^ k;
        }
        let whole = n == m.body.len();
        let buf = std::mem::take(&mut self.buf);
        let mut r = BitReader::new(&buf);
        r.set_bit_pos(m.bit);
        let out = match self.ops(&mut r) {
            Ok(()) if whole && ends_as_written(&buf, r.bit_pos()) => Check::Complete,
            Ok(()) => Check::Wrong,
            Err(Stop::Open) if !whole => Check::Open,
            Err(_) => Check::Wrong,
        };
        self.buf = buf;
        out
    }

    /// Read the ops up to `clc_EOF` as the server does (`SV_ExecuteClientMessage`), checking
    /// what a wrong key would spoil: op bytes, command numbers and texts (character by
    /// character, so a partly known text is checked too), usercmd counts.
    fn ops(&mut self, r: &mut BitReader<'_>) -> Result<(), Stop> {
        loop {
            match r.read_byte()? {
                clc::CLC_EOF => return Ok(()),
                clc::CLC_NOP => {}
                clc::CLC_CLIENTCOMMAND => self.command(r)?,
                clc::CLC_MOVE | clc::CLC_MOVE_NODELTA => self.moves(r)?,
                _ => return Err(Stop::Wrong),
            }
        }
    }

    fn command(&mut self, r: &mut BitReader<'_>) -> Result<(), Stop> {
        let seq = r.read_long()?;
        if seq <= 0 {
            return Err(Stop::Wrong);
        }
        self.text.clear();
        let mut whole = false;
        let mut stop = None;
        while self.text.len() < MAX_TEXT {
            match r.read_byte() {
                Ok(0) => {
                    whole = true;
                    break;
                }
                Ok(c) if plausible_char(c) => self.text.push(c),
                Ok(_) => return Err(Stop::Wrong),
                Err(e) => {
                    stop = Some(Stop::from(e));
                    break;
                }
            }
        }
        if !self.seen.command(seq, &self.text, whole) {
            return Err(Stop::Wrong);
        }
        match stop {
            Some(s) => Err(s),
            None if whole => Ok(()),
            // Longer than the engine reads: no client sends that.
            None => Err(Stop::Wrong),
        }
    }

    fn moves(&mut self, r: &mut BitReader<'_>) -> Result<(), Stop> {
        let count = r.read_byte()?;
        if !(1..=clc::MAX_PACKET_USERCMDS).contains(&count) {
            return Err(Stop::Wrong);
        }
        let mut from = UserCmd::default();
        for i in 0..count {
            // The key changes values, never the bit layout: any key reads the bits.
            let c = read_delta_usercmd(r, 0, &from)?;
            // A client's commands carry serverTime 0 until its first snapshot (right after
            // a connect or a download): not a time to compare with the others.
            if i == 0 && c.server_time != 0 && !self.seen.time(c.server_time) {
                return Err(Stop::Wrong);
            }
            from = c;
        }
        Ok(())
    }
}

/// [`keysearch::may_end_after`] for client message `m` descrambled with `u` (bytes `u`
/// does not reach stay as they are, as [`Checker::check`] leaves them) ending after
/// `clc_EOF`.
fn client_may_end(m: &ClientScrambled<'_>, u: &[u8]) -> bool {
    let len = m.body.len();
    let Some(start) = len.checked_sub(4) else {
        return true;
    };
    let mut tail = [0u8; 4];
    for (j, t) in (start..len).zip(&mut tail) {
        *t = m.body[j];
        if let Some(&k) = j.checked_sub(C2S_START).and_then(|i| u.get(i)) {
            *t ^= m.key ^ k;
        }
    }
    keysearch::may_end_after(tail, clc::CLC_EOF)
}

/// The message read up to its `clc_EOF` (ending at bit `end`) fills exactly
/// `(end >> 3) + 1` bytes, and the bits after `end` in a partly used last byte are zero, as
/// the engine's Huffman writer leaves them (see [`super::keysearch`]).
fn ends_as_written(buf: &[u8], end: usize) -> bool {
    let last = end >> 3;
    last + 1 == buf.len() && (end & 7 == 0 || buf[last] >> (end & 7) == 0)
}

/// What the first byte of `u` may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum First {
    /// The challenge's low byte is known: `u[0] = challenge ^ c[0]`, `c[0]` a key character.
    Challenge(u8),
    /// Unknown: any byte.
    Any,
}

/// Bounds of one search: the candidates kept per byte and the body decodes in all.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub beam: usize,
    pub decodes: usize,
}

/// What [`extend`] found: the candidates of the last byte it completed, and the whole
/// command texts that decode every message.
#[derive(Default)]
struct Extended {
    level: Vec<Vec<u8>>,
    whole: Vec<Vec<u8>>,
}

/// The candidates for `u` that extend `seed`, searched breadth first as deep as the
/// group's longest message; the search stops early (keeping the last complete byte's
/// candidates) when more than `limits.beam` survive a byte or the decodes run out. At each
/// byte each candidate is also taken as the command's whole text (the key then repeats
/// it: `u` is known for every length), kept when every message decodes whole with it.
fn extend(
    checker: &mut Checker,
    group: &[ClientScrambled<'_>],
    ch: u8,
    seed: &[u8],
    limits: Limits,
) -> Extended {
    let mut out = Extended::default();
    let depth = depth(group);
    // The seed itself must hold on every message (it is a guess).
    let known = C2S_START + seed.len();
    checker.seen.clear();
    let seed_ok = group
        .iter()
        .all(|m| checker.check(m, seed, known) != Check::Wrong);
    if !seed_ok {
        return out;
    }
    let mut level: Vec<Vec<u8>> = vec![seed.to_vec()];
    let first = First::Challenge(ch);
    for k in seed.len()..=depth {
        if level.len() <= WHOLE_TRIES {
            for w in &level {
                let text = command_text(ch, w);
                if whole_text_holds(checker, group, ch, &text) && !out.whole.contains(&text) {
                    out.whole.push(text);
                }
            }
        }
        if k == depth {
            break;
        }
        match next_level(checker, group, first, &level, k, limits) {
            Some(next) => level = next,
            None => break,
        }
        if level.is_empty() {
            break;
        }
    }
    out.level = level;
    out
}

/// Candidates per byte also tried as whole texts (each costs about one decode).
const WHOLE_TRIES: usize = 256;

/// Key bytes past a whole text's end that two messages must reach: the repeat is then
/// checked, not assumed.
const WRAP_MARGIN: usize = 2;

/// Key bytes past a whole text's end that one message alone must reach. A client sends a
/// new command in few messages (until the server acknowledges it), often one, and with
/// 16 bytes keyed by the repeat a wrong text cannot read to the message's end. (Two bytes
/// are not enough for one message: on q3-download cut at 30 %, `chat "B` passed a 21-byte
/// message for `chat "LabPlayer1^7\x19: ^2team chat 1"`.)
const WRAP_ONE: usize = 16;

/// Every message of `group` decodes whole when the command is exactly `text`, and two of
/// them reach past its end, or one far past it (so the text is not just a prefix that
/// decodes the short ones): past the end, a wrong text keys those bytes at random, and the
/// message must still read to `clc_EOF` in its last byte with printable command text and,
/// where it carries a move, a first usercmd time within [`TIME_SPREAD`] of the others'.
fn whole_text_holds(
    checker: &mut Checker,
    group: &[ClientScrambled<'_>],
    ch: u8,
    text: &[u8],
) -> bool {
    let longer = group
        .iter()
        .filter(|m| m.scrambled_len() >= text.len() + WRAP_MARGIN)
        .count();
    let far = group
        .iter()
        .any(|m| m.scrambled_len() >= text.len() + WRAP_ONE);
    if (longer < 2 && !far) || group.len() < MIN_WHOLE {
        return false;
    }
    let u = whole_stream(ch, text, depth(group));
    checker.seen.clear();
    // The longest first: a wrong text nearly always fails there.
    let mut order: Vec<&ClientScrambled<'_>> = group.iter().collect();
    order.sort_by_key(|m| std::cmp::Reverse(m.body.len()));
    order
        .into_iter()
        .all(|m| checker.check(m, &u, m.body.len()) == Check::Complete)
}

/// Server command beginnings (the engine's and the game's commands, with what follows
/// their word): a guessed beginning fixes the first key bytes, so the search starts past
/// the bytes no message ends in (a client message's middle bytes are usercmd values the
/// key makes random: without a guess, every candidate survives them).
pub const COMMAND_STARTS: [&str; 19] = [
    "cs ",
    "bcs0 ",
    "bcs1 ",
    "bcs2 ",
    "print \"",
    "cp \"",
    "chat \"",
    "tchat \"",
    "vchat ",
    "vtchat ",
    "vtell ",
    "scores ",
    "tinfo ",
    "respawn ",
    "map_restart",
    "remapShader ",
    "loaddefered",
    "clientLevelShot",
    "disconnect",
];

/// Messages a stream must decode whole (each ending with `clc_EOF` in its last byte)
/// before it is taken: a wrong stream decodes one such message in about one case in a few
/// thousand, so eight rule out every wrong candidate the search can try.
pub const MIN_WHOLE: usize = 8;

/// What [`search_c2s`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The first bytes of `u`: messages no longer than `C2S_START` + its length decode.
    pub stream: Vec<u8>,
    /// The server command's whole text (`%` and bytes above 127 as `.`), when found: `u`
    /// is then known for every length.
    pub text: Option<Vec<u8>>,
}

/// The stream `u` of `group` (client messages acknowledging one server command) with the
/// challenge byte `ch` known: every command beginning ([`COMMAND_STARTS`], and `known`,
/// text of this command found earlier) is extended by `extend`. The answer is the one
/// whole text every message decodes with, if exactly one was found; else the prefix all
/// candidates of all beginnings share, when at least [`MIN_WHOLE`] messages of the group
/// end within it (they decode whole with it, and with no other candidate).
pub fn search_c2s(
    group: &[ClientScrambled<'_>],
    ch: u8,
    known: Option<&[u8]>,
    limits: Limits,
) -> (Option<Found>, Work) {
    let mut checker = Checker::default();
    let mut all: Vec<Vec<u8>> = Vec::new();
    let mut whole: Vec<Vec<u8>> = Vec::new();
    // What an earlier search of this group found first: it holds on the messages it
    // covered, and the decode budget is shared by all beginnings.
    let starts = known
        .into_iter()
        .chain(COMMAND_STARTS.iter().map(|s| s.as_bytes()));
    for text in starts {
        let seed = stream(ch, text);
        let e = extend(&mut checker, group, ch, &seed, limits);
        all.extend(e.level);
        for t in e.whole {
            if !whole.contains(&t) {
                whole.push(t);
            }
        }
    }
    if let [text] = whole.as_slice() {
        let found = Found {
            stream: whole_stream(ch, text, depth(group)),
            text: Some(text.clone()),
        };
        return (Some(found), checker.work);
    }
    let p = common_prefix(&all);
    let n_whole = group
        .iter()
        .filter(|m| m.body.len() <= C2S_START + p.len())
        .count();
    let found = (whole.is_empty() && !p.is_empty() && n_whole >= MIN_WHOLE).then_some(Found {
        stream: p,
        text: None,
    });
    (found, checker.work)
}

/// Bounds of a [`lock_search`]: its first check alone costs a decode for each of the
/// 19 × 256 beginnings.
pub const LOCK_LIMITS: Limits = Limits {
    beam: 400,
    decodes: 24_000,
};

/// What [`lock_search`] gave.
pub struct LockOutcome {
    pub found: Option<(u8, Found)>,
    pub work: Work,
    /// Nothing was found, and more messages of the lengths searched cannot change that:
    /// no candidate decoded them, or those that did key every byte the messages reach
    /// alike (they differ in the challenge byte, or past the messages' ends), so such
    /// messages decode alike with each. The search ran to its end (not cut by the budget).
    pub settled: bool,
    /// No answer, but every candidate implies one challenge byte and decodes the messages
    /// that end within their shared prefix ([`Lead`]).
    pub lead: Option<Lead>,
}

/// What a group too small for an answer alone says: the challenge byte every candidate
/// implies, their shared key-stream prefix, and how many messages end within it (fewer
/// than [`MIN_WHOLE`]). Two groups acknowledging different commands that each imply the
/// same byte alone, with [`MIN_WHOLE`] such messages between them, answer together
/// ([`joint_answer`]).
#[derive(Debug, Clone)]
pub struct Lead {
    pub challenge: u8,
    pub found: Found,
    pub whole: usize,
}

/// The answer two leads of different groups give together: the current group's stream
/// and the byte, when both imply the same byte and at least [`MIN_WHOLE`] messages between
/// them decode whole. Each group alone ruled out every other byte (all 256 were tried on
/// it), so a wrong byte would have to come out of two groups at once.
pub fn joint_answer(earlier: &Lead, current: &Lead) -> Option<(u8, Found)> {
    (earlier.challenge == current.challenge && earlier.whole + current.whole >= MIN_WHOLE)
        .then(|| (current.challenge, current.found.clone()))
}

/// [`search_c2s`] before the lock-on, when the challenge byte is unknown too: every
/// command beginning is tried with every challenge byte (`u[0] = challenge ^ c[0]`), the
/// group's shortest messages checked first. First the beginnings at least as long as the
/// shortest message's scrambled bytes: a message ends within each, so most of their 256
/// seeds die on their first check. Only if those give nothing, the shorter ones (each of
/// their seeds survives until it is extended to a message's end, at about 96 candidates a
/// byte: "cs " costs about 25 000 decodes on messages of 16 bytes). The answer, with the
/// challenge byte it implies, must be unique within its round: the one whole text found,
/// or else the prefix every surviving candidate shares when all of them imply one challenge
/// byte and at least [`MIN_WHOLE`] messages end within it (they decode whole with it).
/// Nothing when the budget ran out: the candidates not tried could be the answer. The
/// outcome also says whether a larger group of the same lengths could answer, and what a
/// group too small to answer alone implies ([`LockOutcome`]).
pub fn lock_search(group: &[ClientScrambled<'_>], limits: Limits) -> LockOutcome {
    let mut checker = Checker::default();
    let mut sorted = group.to_vec();
    sorted.sort_by_key(|m| m.body.len());
    let shortest = group.iter().map(|m| m.scrambled_len()).min().unwrap_or(0);
    let (long, short): (Vec<&[u8]>, Vec<&[u8]>) = COMMAND_STARTS
        .iter()
        .map(|s| s.as_bytes())
        .partition(|t| t.len() >= shortest);
    // Between the two: a numeric command (`tinfo `, a team game's most frequent) one byte
    // short of the shortest message, whose byte there takes one of 12 characters: about as
    // cheap, and as well checked, as the long ones.
    let (near, short): (Vec<&[u8]>, Vec<&[u8]>) = short
        .into_iter()
        .partition(|t| t.len() + 1 >= shortest && next_chars(t).len() < 16);
    // Whole commands shorter than every message, tried as they are between the near
    // round and the short one (whose extension of a short beginning may spend the
    // budget before it reaches them).
    let wholes: Vec<&[u8]> = WHOLE_COMMANDS
        .iter()
        .map(|s| s.as_bytes())
        .filter(|t| t.len() < shortest)
        .collect();
    let mut settled = true;
    let mut lead = None;
    for (starts, whole_only) in [(long, false), (near, false), (wholes, true), (short, false)] {
        let round = if whole_only {
            whole_round(&mut checker, &sorted, &starts)
        } else {
            lock_round(&mut checker, &sorted, &starts, limits)
        };
        match round {
            Round::Nothing => continue,
            Round::Found(ch, f) => {
                return LockOutcome {
                    found: Some((ch, f)),
                    work: checker.work,
                    settled: false,
                    lead: None,
                }
            }
            Round::Ambiguous { alike } => {
                settled = alike;
                break;
            }
            Round::Lead(ch, f, n) => {
                lead = Some(Lead {
                    challenge: ch,
                    found: f,
                    whole: n,
                });
                settled = false;
                break;
            }
            Round::Budget => {
                settled = false;
                break;
            }
        }
    }
    LockOutcome {
        found: None,
        work: checker.work,
        settled,
        lead,
    }
}

/// What one round of [`lock_search`] gave.
enum Round {
    Found(u8, Found),
    Nothing,
    /// More than one answer; `alike`: their streams agree on every byte a message of the
    /// group reaches.
    Ambiguous {
        alike: bool,
    },
    /// Every candidate implies one challenge byte and they share a prefix, but fewer than
    /// [`MIN_WHOLE`] messages end within it: the byte, the prefix, and how many do.
    Lead(u8, Found, usize),
    Budget,
}

/// Commands the game sends whole, with no part of their own, shorter than most beginnings
/// (OpenArena's `cp "`, an empty centre print, after a player enters: stored captures
/// `q3-mapchange`, `q3-download`).
const WHOLE_COMMANDS: [&str; 1] = ["cp \""];

/// The whole commands `texts`, each with every challenge byte, on `group`: each one must
/// decode every message whole, its repeat checked ([`whole_text_holds`]).
fn whole_round(checker: &mut Checker, group: &[ClientScrambled<'_>], texts: &[&[u8]]) -> Round {
    let mut hits: Vec<(u8, Vec<u8>)> = Vec::new();
    for text in texts {
        for ch in 0..=255u8 {
            if whole_text_holds(checker, group, ch, text) {
                hits.push((ch, text.to_vec()));
            }
        }
    }
    let depth = depth(group);
    match hits.as_slice() {
        [] => Round::Nothing,
        [(ch, text)] => Round::Found(
            *ch,
            Found {
                stream: whole_stream(*ch, text, depth),
                text: Some(text.clone()),
            },
        ),
        _ => Round::Ambiguous {
            alike: alike(&hits, &[], depth),
        },
    }
}

/// The beginnings `starts`, each with every challenge byte, on `group` (shortest first).
fn lock_round(
    checker: &mut Checker,
    group: &[ClientScrambled<'_>],
    starts: &[&[u8]],
    limits: Limits,
) -> Round {
    let mut all: Vec<(u8, Vec<u8>)> = Vec::new();
    let mut whole: Vec<(u8, Vec<u8>)> = Vec::new();
    for text in starts {
        for ch in 0..=255u8 {
            let e = extend(checker, group, ch, &stream(ch, text), limits);
            if checker.work.decodes >= limits.decodes {
                return Round::Budget;
            }
            all.extend(e.level.into_iter().map(|u| (ch, u)));
            for t in e.whole {
                if !whole.iter().any(|(c, w)| *c == ch && *w == t) {
                    whole.push((ch, t));
                }
            }
        }
    }
    let depth = depth(group);
    match whole.as_slice() {
        [(ch, text)] => {
            let found = Found {
                stream: whole_stream(*ch, text, depth),
                text: Some(text.clone()),
            };
            return Round::Found(*ch, found);
        }
        [] => {}
        _ => {
            return Round::Ambiguous {
                alike: alike(&whole, &all, depth),
            }
        }
    }
    let Some(&(ch, _)) = all.first() else {
        return Round::Nothing;
    };
    if all.iter().any(|(c, _)| *c != ch) {
        return Round::Ambiguous {
            alike: alike(&whole, &all, depth),
        };
    }
    let level: Vec<Vec<u8>> = all.into_iter().map(|(_, u)| u).collect();
    let p = common_prefix(&level);
    let n_whole = group
        .iter()
        .filter(|m| m.body.len() <= C2S_START + p.len())
        .count();
    if p.is_empty() {
        return Round::Ambiguous { alike: false };
    }
    if n_whole < MIN_WHOLE {
        // More messages may end within the prefix; with another group's lead of the same
        // byte, the messages of both may be enough.
        return Round::Lead(
            ch,
            Found {
                stream: p,
                text: None,
            },
            n_whole,
        );
    }
    let found = Found {
        stream: p,
        text: None,
    };
    Round::Found(ch, found)
}

/// The first `depth` bytes of `u` for the whole command `text` (its characters repeat).
fn whole_stream(ch: u8, text: &[u8], depth: usize) -> Vec<u8> {
    let mut b = vec![0u8; C2S_START + depth];
    crate::q3::scramble::c2s(&mut b, i32::from(ch), 0, 0, text);
    b.drain(..C2S_START);
    b
}

/// The candidates of a round (whole texts and streams, each with its challenge byte) key
/// the first `depth` bytes alike: messages no longer than that decode alike with each.
fn alike(whole: &[(u8, Vec<u8>)], all: &[(u8, Vec<u8>)], depth: usize) -> bool {
    let mut streams = whole
        .iter()
        .map(|(ch, t)| Some(whole_stream(*ch, t, depth)))
        .chain(all.iter().map(|(_, u)| u.get(..depth).map(<[u8]>::to_vec)));
    let Some(Some(first)) = streams.next() else {
        return false;
    };
    streams.all(|u| u.as_ref() == Some(&first))
}

/// The first `text.len()` bytes of `u` for a command starting with `text`.
pub fn stream(ch: u8, text: &[u8]) -> Vec<u8> {
    whole_stream(ch, text, text.len())
}

/// The longest message's scrambled bytes: how far into `u` the group reaches.
fn depth(group: &[ClientScrambled<'_>]) -> usize {
    group.iter().map(|m| m.scrambled_len()).max().unwrap_or(0)
}

/// The command characters `u` shows (challenge byte `ch`): `%` and bytes above 127 show
/// as `.`.
pub fn command_text(ch: u8, u: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(u.len());
    let mut prev = ch;
    for (i, &b) in u.iter().enumerate() {
        out.push((b ^ prev) >> (i & 1));
        prev = b;
    }
    out
}

/// The candidates of byte `k` that every message reaching it still decodes with; `None`
/// past the beam or the budget.
fn next_level(
    checker: &mut Checker,
    group: &[ClientScrambled<'_>],
    first: First,
    level: &[Vec<u8>],
    k: usize,
    limits: Limits,
) -> Option<Vec<Vec<u8>>> {
    let known = C2S_START + k + 1;
    // Messages ending at this byte first: their last bytes rule most candidates out
    // before any decode (`client_may_end`), where a longer message costs a decode of `k`
    // bytes. The survivors are the same in any order.
    let (mut reach, longer): (Vec<&ClientScrambled<'_>>, Vec<&ClientScrambled<'_>>) = group
        .iter()
        .filter(|m| m.body.len() >= known)
        .partition(|m| m.body.len() == known);
    reach.extend(longer);
    let mut next = Vec::new();
    // One candidate buffer for the level: only survivors are copied out.
    let mut w = Vec::with_capacity(k + 1);
    let mut candidates = Vec::with_capacity(256);
    for u in level {
        candidates.clear();
        let chars = match first {
            First::Challenge(ch) => next_chars(&command_text(ch, u)),
            First::Any => key_chars_all(),
        };
        match (u.last(), first) {
            (None, First::Any) => candidates.extend(0..=255),
            (None, First::Challenge(ch)) => candidates.extend(chars.iter().map(|&c| ch ^ c)),
            (Some(&p), _) => candidates.extend(chars.iter().map(|&c| p ^ (c << (k & 1)))),
        }
        w.clear();
        w.extend_from_slice(u);
        w.push(0);
        for &v in &candidates {
            w[u.len()] = v;
            let mut ok = true;
            checker.seen.clear();
            for m in &reach {
                if checker.work.decodes >= limits.decodes {
                    return None;
                }
                if checker.check(m, &w, known) == Check::Wrong {
                    ok = false;
                    break;
                }
            }
            if ok {
                next.push(w.clone());
                if next.len() > limits.beam {
                    return None;
                }
            }
        }
    }
    Some(next)
}

/// The longest prefix all of `level` shares.
fn common_prefix(level: &[Vec<u8>]) -> Vec<u8> {
    let Some(first) = level.first() else {
        return Vec::new();
    };
    let mut n = first.len();
    for u in &level[1..] {
        n = n.min(first.iter().zip(u).take_while(|(a, b)| a == b).count());
    }
    first[..n].to_vec()
}

/// Diagnostic: candidates surviving each byte (breadth first, no beam but `cap`), as
/// [`search_c2s`] sees them.
pub fn survivors(
    group: &[ClientScrambled<'_>],
    first: First,
    depth: usize,
    cap: usize,
) -> Vec<usize> {
    let mut checker = Checker::default();
    let mut level: Vec<Vec<u8>> = vec![Vec::new()];
    let mut out = Vec::new();
    let limits = Limits {
        beam: cap,
        decodes: usize::MAX,
    };
    for k in 0..depth {
        match next_level(&mut checker, group, first, &level, k, limits) {
            Some(next) => {
                out.push(next.len());
                if next.is_empty() {
                    break;
                }
                level = next;
            }
            None => {
                out.push(cap + 1);
                break;
            }
        }
    }
    out
}

/// Descramble client body `body` with the stream `u` (it must cover the body).
pub fn descramble(body: &mut [u8], key: u8, u: &[u8]) {
    for (b, &k) in body.iter_mut().skip(C2S_START).zip(u) {
        *b ^= key ^ k;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two leads answer only together, only on one byte, and only with 8 whole messages
    /// between them; the answer is the later group's stream.
    #[test]
    fn leads_answer_together_on_one_byte() {
        let lead = |ch: u8, whole: usize, u: &[u8]| Lead {
            challenge: ch,
            found: Found {
                stream: u.to_vec(),
                text: None,
            },
            whole,
        };
        let (a, b) = (lead(114, 4, b"ab"), lead(114, 4, b"cd"));
        assert_eq!(
            joint_answer(&a, &b),
            Some((114, b.found.clone())),
            "4 + 4 on one byte"
        );
        assert_eq!(joint_answer(&a, &lead(115, 4, b"cd")), None, "two bytes");
        assert_eq!(joint_answer(&a, &lead(114, 3, b"cd")), None, "7 messages");
    }

    /// `tchat "` with challenge byte 39 and `vchat ` with 37 (`t ^ 39 == v ^ 37`) key the
    /// same first six bytes (a late lock-on of one of our CTF recordings: every message of
    /// the group was five scrambled bytes): alike up to there, not past it, where the first
    /// takes `"` and the second a digit.
    #[test]
    fn candidates_alike_up_to_the_bytes_they_share() {
        let t = [(39u8, b"tchat \"".to_vec())];
        let v = [(37u8, stream(37, b"vchat 1"))];
        assert_eq!(stream(39, b"tchat ")[..], stream(37, b"vchat ")[..]);
        for depth in 1..=6 {
            assert!(alike(&t, &v, depth), "depth {depth}");
        }
        assert!(!alike(&t, &v, 7));
        // A candidate that does not reach the depth keys bytes nobody knows.
        assert!(!alike(&t, &[(37, stream(37, b"vchat"))], 6));
        assert!(!alike(&[], &[], 3));
    }

    /// The characters a command may hold next, as the engine and game write them: numbers
    /// after `tinfo`, `scores`, `respawn`; `cs N "` then anything; three numbers after the
    /// voice commands; all key characters elsewhere.
    #[test]
    fn next_chars_follow_the_commands_grammar() {
        let all = key_chars_all();
        assert_eq!(all.len(), 96);
        for text in ["tinfo ", "tinfo 2  0 7 11", "scores 6 0 -1", "respawn 4"] {
            assert_eq!(next_chars(text.as_bytes()), b"0123456789 -", "{text:?}");
        }
        assert_eq!(next_chars(b"cs "), b"0123456789");
        assert_eq!(next_chars(b"bcs1 54"), b"0123456789 ");
        assert_eq!(next_chars(b"cs 547 "), b"\"");
        assert_eq!(next_chars(b"cs 547 \"n\\Major"), all);
        assert_eq!(next_chars(b"vchat 0 1 "), b"0123456789 -");
        assert_eq!(next_chars(b"vchat 0 1 50 "), all);
        for text in ["", "print \"", "chat \"x", "tinf", "cs", "disconnect"] {
            assert_eq!(next_chars(text.as_bytes()), all, "{text:?}");
        }
        // Every grammar's characters are key characters: a real command is never left out
        // for a character the key could not hold.
        for text in ["tinfo ", "cs ", "cs 5", "cs 5 "] {
            assert!(next_chars(text.as_bytes()).iter().all(|c| all.contains(c)));
        }
    }
}
