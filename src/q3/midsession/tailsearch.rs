//! Protocol-68 mid-session: the text of a client command the capture never showed, read off
//! the last bytes of the server messages that acknowledge it (issue 17).
//!
//! Every server message acknowledging one client command shares the key's rolling part
//! (see [`super::keysearch`]): the key at body offset `4 + k` is `sequence ^ u[k]`, where
//! `u[k] = challenge ^ x[k]` and `x[k] ^ x[k - 1]` is the command's character
//! `s[k mod len]` (shifted left on odd `k`). Decoding a message byte by byte rules out
//! almost no `u` (a snapshot's bytes are mostly free values), but its *last* bytes are not
//! free: every snapshot message ends with the entity list's end mark (entity number 1023 in
//! 10 bits: two raw 1 bits, then the Huffman code of `0xFF`), `svc_EOF`'s code and zero bits
//! to the end of its byte (q3-protocol.md §3.1, §5; ioq3 `SV_EmitPacketEntities`,
//! `SV_Netchan_Transmit`). That is 13 known bits at one of 8 bit offsets in the last four
//! bytes, so two messages of one length fix `u` at those bytes, and a connection sends
//! snapshots of many lengths: a few dozen messages give `u` at enough offsets to read every
//! character of the command and its length (the period of the characters). Each text found
//! must then agree with every known byte of `u` (with the challenge byte, which the lock-on
//! gave), end every message kept, and decode a group of whole messages
//! ([`super::keysearch::command_for`]) before it is taken.
use super::keysearch::is_key_char;
use crate::q3::huffman::code_of;
use crate::q3::scramble::S2C_START;
use crate::q3::svc::SVC_EOF;

/// Messages kept per body length: two fix the key bytes at their end (one leaves 8 bit
/// offsets open).
const PER_LENGTH: usize = 2;
/// Messages kept in all (each 4 bytes and a few counts).
const MAX_TAILS: usize = 256;
/// Message counts at which [`Tails::push`] asks for a solve: each adds message lengths.
/// Between the doublings too (48, 96, 192): which ends are kept decides whether a read
/// succeeds, and a read that fails at 64 but would at 96 otherwise waits until 128 (on the
/// q3-ctf 10 % cut, 99 messages of one connection stayed undecoded that way).
const SOLVE_AT: [usize; 8] = [16, 32, 48, 64, 96, 128, 192, 256];
/// Characters of the text no two known neighbouring bytes show that a solve may find from
/// the known bits (7 unknown bits each: at most 112, in one `u128` per equation).
const MAX_MISSING: usize = 16;
/// The longest text: the server keeps the last client command in `MAX_STRING_CHARS` (1024)
/// bytes with its terminating zero. Also bounds a solve's work on hostile input.
const MAX_TEXT: usize = 1023;
/// Texts returned: the decoding check ([`super::keysearch::command_for`]) takes one only when
/// no other decodes the messages, so a few texts the known bits leave open cost a few
/// decodes each, not a wrong answer.
const MAX_TEXTS: usize = 16;

/// The last four bytes of one server message, its body length and sequence.
#[derive(Debug, Clone, Copy)]
struct Tail {
    seq: u8,
    len: usize,
    last: [u8; 4],
}

/// The ends of the messages acknowledging one unknown client command (bounded:
/// `MAX_TAILS`, `PER_LENGTH` per body length).
#[derive(Debug, Default)]
pub struct Tails {
    tails: Vec<Tail>,
}

impl Tails {
    pub fn clear(&mut self) {
        self.tails.clear();
    }

    /// Message ends kept.
    pub fn len(&self) -> usize {
        self.tails.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tails.is_empty()
    }

    /// Keep server message `seq`'s end; true when a solve is due (`SOLVE_AT`).
    pub fn push(&mut self, seq: i32, body: &[u8]) -> bool {
        let len = body.len();
        if len < S2C_START + 4 || self.tails.len() >= MAX_TAILS {
            return false;
        }
        if self.tails.iter().filter(|t| t.len == len).count() >= PER_LENGTH {
            return false;
        }
        let mut last = [0u8; 4];
        last.copy_from_slice(&body[len - 4..]);
        self.tails.push(Tail {
            seq: seq as u8,
            len,
            last,
        });
        SOLVE_AT.contains(&self.tails.len())
    }

    /// The command texts (at most `MAX_TEXTS`, shortest period first) that agree with
    /// every kept message end under challenge byte `ch`.
    pub fn texts(&self, ch: u8) -> Vec<String> {
        self.texts_with(Some(ch))
            .into_iter()
            .map(|(_, t)| t)
            .collect()
    }

    /// [`Tails::texts`] before the lock-on, the challenge byte unknown: (challenge byte,
    /// text) pairs, the byte solved with the characters (it is one more XOR in every key
    /// byte: 8 more unknowns of the same equations).
    pub fn texts_any(&self) -> Vec<(u8, String)> {
        self.texts_with(None)
    }

    fn texts_with(&self, ch: Option<u8>) -> Vec<(u8, String)> {
        let mut known = known_stream(&self.tails);
        // Bytes past the last known bit tell nothing.
        let end = known
            .iter()
            .rposition(|b| b.mask != 0 && !b.conflict)
            .map_or(0, |k| k + 1);
        known.truncate(end);
        let seen = seen_chars(&known);
        // A longer text leaves more than MAX_MISSING characters unseen.
        let longest = (seen.len() + MAX_MISSING).min(known.len()).min(MAX_TEXT);
        let mut out: Vec<(u8, Vec<u8>)> = Vec::new();
        let mut chars = Vec::new();
        for l in 1..=longest {
            if out.len() >= MAX_TEXTS {
                break;
            }
            // A multiple of a period found keys the same characters: the same command.
            if out.iter().any(|(_, t)| l % t.len() == 0) {
                continue;
            }
            for (c, text) in texts_of_length(&known, &seen, ch, l, &mut chars) {
                if self.all_end(c, &text) && out.len() < MAX_TEXTS {
                    out.push((c, text));
                }
            }
        }
        out.into_iter()
            .map(|(c, t)| (c, t.into_iter().map(char::from).collect()))
            .collect()
    }

    /// Every kept message, descrambled with `text`'s stream, ends after `svc_EOF` as the
    /// engine writes messages.
    fn all_end(&self, ch: u8, text: &[u8]) -> bool {
        let longest = self.tails.iter().map(|t| t.len).max().unwrap_or(0);
        let mut b = vec![0u8; longest];
        crate::q3::scramble::s2c(&mut b, i32::from(ch), 0, text);
        self.tails.iter().all(|t| {
            let mut tail = t.last;
            for (j, x) in tail.iter_mut().enumerate() {
                *x ^= t.seq ^ b[t.len - 4 + j];
            }
            super::keysearch::may_end_after(tail, SVC_EOF)
        })
    }
}

/// What is known of one byte of `u`: the bits in `mask` are `value`'s; `conflict` when two
/// message ends disagreed (one of them was not a snapshot's): the byte is then not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Byte {
    mask: u8,
    value: u8,
    conflict: bool,
}

impl Byte {
    fn value(self) -> Option<u8> {
        (self.mask == 0xff && !self.conflict).then_some(self.value)
    }

    /// Learn bits `mask` of value `value`; true when something changed.
    fn learn(&mut self, mask: u8, value: u8) -> bool {
        if self.conflict {
            return false;
        }
        if (self.value ^ value) & self.mask & mask != 0 {
            self.conflict = true;
            return true;
        }
        let new = mask & !self.mask;
        self.mask |= new;
        self.value |= value & new;
        new != 0
    }
}

/// Bits of `u`'s four bytes ending a message: `(mask, value)` over the little-endian word of
/// `u[len - 8 .. len - 4]` (the stream bytes of body offsets `len - 4 .. len`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Hyp {
    mask: u32,
    value: u32,
}

impl Hyp {
    fn agrees(self, o: Hyp) -> bool {
        (self.value ^ o.value) & self.mask & o.mask == 0
    }

    fn merge(self, o: Hyp) -> Hyp {
        Hyp {
            mask: self.mask | o.mask,
            value: self.value | o.value,
        }
    }

    /// Byte `b` (0..4) when the mask covers it whole.
    fn byte(self, b: usize) -> Option<u8> {
        ((self.mask >> (8 * b)) & 0xff == 0xff).then_some((self.value >> (8 * b)) as u8)
    }

    /// Agrees with what is known of byte `b`.
    fn fits(self, b: usize, known: Byte) -> bool {
        let m = (self.mask >> (8 * b)) as u8 & known.mask;
        known.conflict || ((self.value >> (8 * b)) as u8 ^ known.value) & m == 0
    }
}

/// The end of every snapshot message as written, in write order from its first bit: the
/// entity end mark's two raw bits (1023's low bits), the Huffman code of `0xFF` (its other
/// eight), then `svc_EOF`'s code. `(bits, count)`.
fn end_mark() -> (u32, u32) {
    let (ff, ff_len) = code_of(0xff);
    let (eof, eof_len) = code_of(SVC_EOF);
    let bits = 0b11 | u32::from(ff) << 2 | u32::from(eof) << (2 + ff_len);
    (bits, 2 + u32::from(ff_len) + u32::from(eof_len))
}

/// The 8 ways message `t` may end (the end mark closing at each bit of its last byte, the
/// bits after it zero; on a byte boundary the last byte was never written), as constraints
/// on `u`.
fn hyps_of(t: &Tail) -> [Hyp; 8] {
    let (bits, count) = end_mark();
    let cipher = u32::from_le_bytes(t.last) ^ (u32::from(t.seq) * 0x0101_0101);
    std::array::from_fn(|p| {
        let end = 24 + p as u32;
        let low = end - count;
        let zeros = if p == 0 { 0 } else { u32::MAX << end };
        let mask = (((1u64 << count) - 1) << low) as u32 | zeros;
        Hyp {
            mask,
            value: (cipher ^ (bits << low)) & mask,
        }
    })
}

/// The ways the messages of one length all end: pairs of their hypotheses that agree.
fn hyps_of_length(tails: &[&Tail]) -> Vec<Hyp> {
    let mut hyps: Vec<Hyp> = Vec::new();
    for t in tails {
        let mine = hyps_of(t);
        hyps = if hyps.is_empty() {
            mine.to_vec()
        } else {
            let mut next = Vec::new();
            for h in &hyps {
                for m in mine.iter().filter(|m| h.agrees(**m)) {
                    let merged = h.merge(*m);
                    if !next.contains(&merged) {
                        next.push(merged);
                    }
                }
            }
            next
        };
    }
    hyps
}

/// `d = u[k] ^ u[k - 1]` is a command character's key step at `k`.
fn is_step(k: usize, d: u8) -> bool {
    char_of(k, d).is_some()
}

/// The command character keying stream byte `k >= 1` from its step `d`.
fn char_of(k: usize, d: u8) -> Option<u8> {
    let c = if k & 1 == 1 {
        (d & 1 == 0).then_some(d >> 1)?
    } else {
        d
    };
    is_key_char(c).then_some(c)
}

/// `u` as far as the message ends fix it: lengths whose messages leave one way to end give
/// their bytes first; each byte learnt rules out ways of other lengths, until nothing
/// changes.
fn known_stream(tails: &[Tail]) -> Vec<Byte> {
    let Some(longest) = tails.iter().map(|t| t.len).max() else {
        return Vec::new();
    };
    let mut known = vec![Byte::default(); longest - S2C_START];
    let mut lens: Vec<usize> = tails.iter().map(|t| t.len).collect();
    lens.sort_unstable();
    lens.dedup();
    let mut ways: Vec<(usize, Vec<Hyp>)> = lens
        .into_iter()
        .map(|len| {
            let of: Vec<&Tail> = tails.iter().filter(|t| t.len == len).collect();
            (len - 4 - S2C_START, hyps_of_length(&of))
        })
        .collect();
    loop {
        let mut changed = false;
        for (k0, hyps) in &mut ways {
            hyps.retain(|h| plausible(*h, *k0, &known));
            changed |= learn(hyps, *k0, &mut known);
        }
        if !changed {
            return known;
        }
    }
}

/// Hypothesis `h` for the bytes at `k0..k0 + 4` agrees with the known bytes and makes
/// command characters with them and with itself.
fn plausible(h: Hyp, k0: usize, known: &[Byte]) -> bool {
    if !(0..4).all(|b| h.fits(b, known[k0 + b])) {
        return false;
    }
    let at = |k: usize| -> Option<u8> {
        match k.checked_sub(k0) {
            Some(b) if b < 4 => h.byte(b).or(known[k].value()),
            _ => known.get(k).and_then(|b| b.value()),
        }
    };
    (k0.max(1)..(k0 + 5).min(known.len())).all(|k| match (at(k - 1), at(k)) {
        (Some(a), Some(b)) => is_step(k, a ^ b),
        _ => true,
    })
}

/// The bits every remaining hypothesis of one length fixes alike, into `known`; true when
/// something was learnt.
fn learn(hyps: &[Hyp], k0: usize, known: &mut [Byte]) -> bool {
    let Some(first) = hyps.first() else {
        return false;
    };
    let (mut mask, mut differ) = (u32::MAX, 0u32);
    for h in hyps {
        mask &= h.mask;
        differ |= h.value ^ first.value;
    }
    let mask = mask & !differ;
    let mut changed = false;
    for (b, k) in known[k0..k0 + 4].iter_mut().enumerate() {
        let m = (mask >> (8 * b)) as u8;
        if m != 0 {
            changed |= k.learn(m, (first.value >> (8 * b)) as u8);
        }
    }
    changed
}

/// The command characters two known neighbouring bytes show: `(k, c)`, `c` keying byte `k`.
fn seen_chars(known: &[Byte]) -> Vec<(usize, u8)> {
    (1..known.len())
        .filter_map(|k| {
            let (a, b) = (known[k - 1].value()?, known[k].value()?);
            // Not a character: one of the two is wrong; `agrees` rules the texts out.
            Some((k, char_of(k, a ^ b)?))
        })
        .collect()
}

/// Texts of length `l` whose stream under challenge byte `ch` (None: any, solved too)
/// agrees with every known bit: the characters `seen` shows (all must agree on each residue
/// `k mod l`), and those of up to [`MAX_MISSING`] other residues solved from the known bits
/// ([`solve_missing`]). (challenge byte, text) pairs; `s`: a buffer.
fn texts_of_length(
    known: &[Byte],
    seen: &[(usize, u8)],
    ch: Option<u8>,
    l: usize,
    s: &mut Vec<Option<u8>>,
) -> Vec<(u8, Vec<u8>)> {
    s.clear();
    s.resize(l, None);
    for &(k, c) in seen {
        match s[k % l] {
            None => s[k % l] = Some(c),
            Some(d) if d != c => return Vec::new(),
            Some(_) => {}
        }
    }
    let missing: Vec<usize> = (0..l).filter(|&r| s[r].is_none()).collect();
    if missing.len() > MAX_MISSING {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (c, fill) in solve_missing(known, ch, s, &missing) {
        let mut text: Vec<u8> = s.iter().map(|c| c.unwrap_or(0)).collect();
        for (&r, c) in missing.iter().zip(fill) {
            text[r] = c;
        }
        if agrees(known, c, &text) {
            out.push((c, text));
        }
    }
    out
}

/// Bits of the missing characters' unknowns a solve may leave free (each doubles the
/// texts tried).
const MAX_FREE: u32 = 10;

/// The characters of the `missing` residues of text `s` (the others known) under which
/// every known bit of `u` holds: each known bit is one linear equation over the missing
/// characters' bits (`u[k]` is `ch` XOR every character up to `k`, shifted on odd `k`),
/// solved by Gaussian elimination over GF(2). With `ch` None the challenge byte's 8 bits
/// are unknowns too. (challenge byte, characters) pairs: at most [`MAX_TEXTS`], none when
/// more than that many fit.
fn solve_missing(
    known: &[Byte],
    ch: Option<u8>,
    s: &[Option<u8>],
    missing: &[usize],
) -> Vec<(u8, Vec<u8>)> {
    if let (Some(c), true) = (ch, missing.is_empty()) {
        return vec![(c, Vec::new())];
    }
    let l = s.len();
    let mut slot = vec![usize::MAX; l];
    for (i, &r) in missing.iter().enumerate() {
        slot[r] = i;
    }
    let mut sys = Gf2::default();
    // par[i]: which unknown bits bit i of u[k] holds, so far; acc: the known part. The
    // challenge byte's bits, when unknown, are unknowns CH_VAR.. (past every character's).
    let mut par = [0u128; 8];
    let mut acc = ch.unwrap_or(0);
    if ch.is_none() {
        for (i, p) in par.iter_mut().enumerate() {
            *p = 1 << (CH_VAR + i as u32);
        }
    }
    for (k, b) in known.iter().enumerate() {
        let shift = k & 1;
        match s[k % l] {
            Some(c) => acc ^= c << shift,
            None => {
                let base = 7 * slot[k % l];
                for bit in 0..7 {
                    par[bit + shift] ^= 1 << (base + bit);
                }
            }
        }
        if b.conflict {
            continue;
        }
        for (i, p) in par.iter().enumerate() {
            if b.mask >> i & 1 == 1 && !sys.add(*p, (b.value ^ acc) >> i & 1 == 1) {
                return Vec::new();
            }
        }
    }
    let vars = (0..7 * missing.len() as u32).chain(if ch.is_none() {
        CH_VAR..CH_VAR + 8
    } else {
        0..0
    });
    let free: Vec<u32> = vars.filter(|v| !sys.is_pivot(*v)).collect();
    if free.len() as u32 > MAX_FREE {
        return Vec::new();
    }
    let mut out = Vec::new();
    for pick in 0u32..1 << free.len() {
        let mut x: u128 = 0;
        for (j, &v) in free.iter().enumerate() {
            if pick >> j & 1 == 1 {
                x |= 1 << v;
            }
        }
        x = sys.complete(x);
        let chars: Option<Vec<u8>> = (0..missing.len())
            .map(|i| {
                let c = (x >> (7 * i) & 0x7f) as u8;
                is_key_char(c).then_some(c)
            })
            .collect();
        if let Some(chars) = chars {
            if out.len() == MAX_TEXTS {
                return Vec::new();
            }
            out.push((ch.unwrap_or((x >> CH_VAR) as u8), chars));
        }
    }
    out
}

/// The first unknown of the challenge byte's bits in [`solve_missing`]'s equations: past
/// the [`MAX_MISSING`] characters' 7 bits each (112 + 8 fit in one `u128`).
const CH_VAR: u32 = 7 * MAX_MISSING as u32;

/// A linear system over GF(2) in up to 128 unknowns, kept reduced: each row has its pivot
/// (its lowest unknown) in no other row.
#[derive(Default)]
struct Gf2 {
    rows: Vec<(u128, bool)>,
}

impl Gf2 {
    /// Add the equation `XOR of the unknowns in row = rhs`; false when it contradicts the
    /// others.
    fn add(&mut self, mut row: u128, mut rhs: bool) -> bool {
        for &(r, v) in &self.rows {
            if row & (r & r.wrapping_neg()) != 0 {
                row ^= r;
                rhs ^= v;
            }
        }
        if row == 0 {
            return !rhs;
        }
        let pivot = row & row.wrapping_neg();
        for (r, v) in &mut self.rows {
            if *r & pivot != 0 {
                *r ^= row;
                *v ^= rhs;
            }
        }
        self.rows.push((row, rhs));
        true
    }

    fn is_pivot(&self, var: u32) -> bool {
        self.rows.iter().any(|(r, _)| r.trailing_zeros() == var)
    }

    /// The solution whose free unknowns are those set in `free` (pivots clear).
    fn complete(&self, free: u128) -> u128 {
        let mut x = free;
        for &(r, v) in &self.rows {
            let pivot = r & r.wrapping_neg();
            let others = (r & !pivot & free).count_ones() & 1 == 1;
            if v ^ others {
                x |= pivot;
            }
        }
        x
    }
}

/// Every known bit of `u` is that of `ch` rolled by `text` up to it.
fn agrees(known: &[Byte], ch: u8, text: &[u8]) -> bool {
    let mut u = ch;
    for (k, b) in known.iter().enumerate() {
        u ^= text[k % text.len()] << (k & 1);
        if !b.conflict && (u ^ b.value) & b.mask != 0 {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The end mark is the snapshot's end as the engine writes it: 13 bits.
    #[test]
    fn end_mark_is_13_bits() {
        assert_eq!(end_mark().1, 13);
    }

    /// Messages of a text's stream, each ending with the end mark at a varying bit, give
    /// back the text once enough lengths are kept.
    #[test]
    fn text_read_back_from_synthetic_ends() {
        let (text, ch) = (b" tell 0 private hello", 0x5au8);
        let mut tails = Tails::default();
        let (bits, count) = end_mark();
        for (i, len) in (12..80usize).enumerate() {
            for rep in 0..2u32 {
                // A plain body ending with the end mark at bit p of its last byte.
                let p = (i as u32 * 3 + rep) % 8;
                let end = (len as u32 - 1) * 8 + p;
                let mut body = vec![0u8; len];
                for j in 0..count {
                    if bits >> j & 1 == 1 {
                        let bit = end - count + j;
                        body[(bit / 8) as usize] |= 1 << (bit % 8);
                    }
                }
                let seq = i as i32 * 7 + rep as i32;
                crate::q3::scramble::s2c(&mut body, i32::from(ch), seq, text);
                tails.push(seq, &body);
            }
        }
        // The shortest text is the real one; longer ones leave characters the ends do not
        // show (the decoding check rules them out).
        let texts = tails.texts(ch);
        assert_eq!(
            texts.first().map(String::as_bytes),
            Some(&text[..]),
            "{texts:?}"
        );
    }
}
