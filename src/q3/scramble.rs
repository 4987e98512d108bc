//! XOR scrambling of protocol-68 message bodies (q3-protocol.md §3). The same routine
//! scrambles and descrambles; keys are pure functions of tracked connection state.

use super::cmdring::NO_VERSION;

/// Body offset where server→client scrambling starts.
pub const S2C_START: usize = 4;
/// Body offset where client→server scrambling starts.
pub const C2S_START: usize = 12;

/// XOR `body[start..]` with the rolling key seeded by `key0` and driven by the reliable
/// command string `s` (§3.1). An empty string leaves the key constant.
pub fn xor_body(body: &mut [u8], start: usize, key0: i32, s: &[u8]) {
    // Tracked command strings never hold a NUL; one that does takes the engine's exact walk
    // (a NUL sends the index back to 0, yet a leading NUL is itself used and stepped over).
    if s.contains(&0) {
        return xor_body_bytewise(body, start, key0, s);
    }
    let mut key = (key0 & 0xff) as u8;
    let Some(tail) = body.get_mut(start..) else {
        return;
    };
    if s.is_empty() {
        tail.iter_mut().for_each(|b| *b ^= key);
        return;
    }
    // One pass of the string per chunk: no index wrap test per byte (this runs over every
    // byte of every protocol-68 message).
    let mut i = start;
    for chunk in tail.chunks_mut(s.len()) {
        for (b, &c) in chunk.iter_mut().zip(s) {
            key ^= key_char(c) << (i & 1);
            *b ^= key;
            i += 1;
        }
    }
}

/// `xor_body` one byte at a time, as the engine's loop is written.
fn xor_body_bytewise(body: &mut [u8], start: usize, key0: i32, s: &[u8]) {
    let mut key = (key0 & 0xff) as u8;
    let mut idx = 0usize;
    for (i, b) in body.iter_mut().enumerate().skip(start) {
        if idx >= s.len() || s[idx] == 0 {
            idx = 0;
        }
        key ^= key_char(s.get(idx).copied().unwrap_or(0)) << (i & 1);
        *b ^= key;
        idx += 1;
    }
}

/// Descramble a server→client body: key0 = challenge ^ sequence, string = the client command
/// the message acknowledges.
pub fn s2c(body: &mut [u8], challenge: i32, sequence: i32, acked_client_cmd: &[u8]) {
    if let Some((start, key0)) = s2c_key(body.len(), challenge, sequence) {
        xor_body(body, start, key0, acked_client_cmd);
    }
}

/// Where a server→client body of `len` bytes is scrambled from, and its key0.
fn s2c_key(len: usize, challenge: i32, sequence: i32) -> Option<(usize, i32)> {
    (len >= S2C_START).then_some((S2C_START, challenge ^ sequence))
}

/// Where a client→server body of `len` bytes is scrambled from, and its key0.
fn c2s_key(len: usize, challenge: i32, server_id: i32, message_ack: i32) -> Option<(usize, i32)> {
    (len > C2S_START).then_some((C2S_START, challenge ^ server_id ^ message_ack))
}

/// The string character the key takes: `%` and bytes above 127 count as `.`.
#[inline(always)]
fn key_char(c: u8) -> u8 {
    if c > 127 || c == b'%' {
        b'.'
    } else {
        c
    }
}

/// Descramble a client→server body: key0 = challenge ^ serverId ^ messageAcknowledge,
/// string = the server command the packet acknowledges. Nothing is scrambled when the body
/// is 12 bytes or shorter.
pub fn c2s(
    body: &mut [u8],
    challenge: i32,
    server_id: i32,
    message_ack: i32,
    acked_server_cmd: &[u8],
) {
    if let Some((start, key0)) = c2s_key(body.len(), challenge, server_id, message_ack) {
        xor_body(body, start, key0, acked_server_cmd);
    }
}

/// The rolling key of one direction, kept between messages. The key at body offset `i` is
/// `key0 ^ x[i - start]`, where `x` is a prefix XOR that depends only on the command string
/// and `start`; the string (an acknowledged reliable command) changes rarely, so `x` is
/// computed once per string and each message is one XOR pass the compiler vectorizes.
///
/// At most one cycle of `x` is kept: its terms repeat with the string (every `2l` bytes:
/// string length and parity), so `x[k + m] = x[k] ^ x[m - 1]` for any whole number `m` of
/// string periods, and a body longer than the cycle takes one pass per cycle. The stream was
/// as long as the longest message (a gamestate's 16 KB, per direction and connection, and
/// cold memory with a thousand connections live); now it is at most about `MIN_CYCLE`.
#[derive(Debug, Default, Clone)]
pub struct KeyCache {
    /// The command string `x` was computed for, exactly as given.
    s: Vec<u8>,
    start: usize,
    /// `x[k]` = XOR over `j` in `start..=start + k` of `(c_j << (j & 1)) as u8`, `c_j` the
    /// mapped string character used at body offset `j`; grown on demand, up to the cycle
    /// ([`Self::cycle`]).
    x: Vec<u8>,
    /// The [`super::cmdring`] version `s` had when last checked ([`NO_VERSION`]: none):
    /// while the acknowledged command's version is this one, its text is `s`.
    version: u64,
    /// The string holds a NUL: such strings take [`xor_body`] (never seen in practice).
    has_nul: bool,
    /// False until the first use.
    valid: bool,
    /// [`Self::cycle_of`] the string, computed when the string changes.
    cycle: usize,
}

impl KeyCache {
    pub fn new() -> Self {
        Self::default()
    }

    /// Same as [`xor_body`]`(body, start, key0, s)`. `version` is the [`super::cmdring`]
    /// version of `s` ([`NO_VERSION`]: unknown, compare the text): the same version as
    /// the last call's means the same text, and the text is not read.
    pub fn xor(&mut self, body: &mut [u8], start: usize, key0: i32, s: &[u8], version: u64) {
        let same_text = version != NO_VERSION && version == self.version;
        if !self.valid || self.start != start || !(same_text || self.s == s) {
            self.reset(start, s);
        }
        self.version = version;
        if self.has_nul {
            return xor_body(body, start, key0, s);
        }
        let Some(tail) = body.get_mut(start..) else {
            return;
        };
        let cycle = self.cycle;
        if tail.len() > self.x.len() {
            self.extend_to(tail.len().min(cycle));
        }
        let k = (key0 & 0xff) as u8;
        if tail.len() <= self.x.len() {
            for (b, &x) in tail.iter_mut().zip(&self.x) {
                *b ^= k ^ x;
            }
            return;
        }
        // Longer than a cycle: each further cycle is the first XORed with its last byte.
        let carry = self.x[cycle - 1];
        let mut q = 0;
        for chunk in tail.chunks_mut(cycle) {
            let kq = k ^ q;
            for (b, &x) in chunk.iter_mut().zip(&self.x) {
                *b ^= kq ^ x;
            }
            q ^= carry;
        }
    }

    /// Prefetch the start of the key stream, `bytes` long at most (see
    /// `crate::prefetch`).
    #[inline]
    pub fn prefetch_stream(&self, bytes: usize) {
        crate::prefetch::range::<false>(self.x.as_ptr(), self.x.len().min(bytes), 4);
    }

    /// Same as [`s2c`]; `version`: see [`Self::xor`].
    pub fn s2c(
        &mut self,
        body: &mut [u8],
        challenge: i32,
        sequence: i32,
        (acked_client_cmd, version): (&[u8], u64),
    ) {
        if let Some((start, key0)) = s2c_key(body.len(), challenge, sequence) {
            self.xor(body, start, key0, acked_client_cmd, version);
        }
    }

    /// Same as [`c2s`]; `version`: see [`Self::xor`].
    pub fn c2s(
        &mut self,
        body: &mut [u8],
        challenge: i32,
        (server_id, message_ack): (i32, i32),
        (acked_server_cmd, version): (&[u8], u64),
    ) {
        if let Some((start, key0)) = c2s_key(body.len(), challenge, server_id, message_ack) {
            self.xor(body, start, key0, acked_server_cmd, version);
        }
    }

    fn reset(&mut self, start: usize, s: &[u8]) {
        self.s.clear();
        self.s.extend_from_slice(s);
        self.start = start;
        self.x.clear();
        self.has_nul = s.contains(&0);
        self.valid = true;
        self.cycle = Self::cycle_of(s.len());
    }

    /// The length of the kept cycle: the whole number of string periods (`2l` bytes) that
    /// first reaches [`MIN_CYCLE`].
    fn cycle_of(string_len: usize) -> usize {
        match 2 * string_len {
            0 => MIN_CYCLE,
            period => MIN_CYCLE.div_ceil(period) * period,
        }
    }

    /// Make `x` cover `n` body bytes.
    fn extend_to(&mut self, n: usize) {
        let have = self.x.len();
        if have >= n {
            return;
        }
        let l = self.s.len();
        if l == 0 {
            // An empty string leaves the key constant.
            return self.x.resize(n, 0);
        }
        // The terms repeat every 2l bytes (string length and parity), so past the first
        // period x[k] = x[k - 2l] ^ x[2l - 1]; copying whole earlier stretches is cheaper
        // than walking the string (this runs whenever a new string meets a long body).
        let period = 2 * l;
        let mut acc = self.x.last().copied().unwrap_or(0);
        for k in have..n.min(period) {
            acc ^= key_char(self.s[k % l]) << ((self.start + k) & 1);
            self.x.push(acc);
        }
        if n <= period {
            return;
        }
        let p = self.x[period - 1];
        let mut k = self.x.len();
        self.x.resize(n, 0);
        while k < n {
            // Copy from the largest whole number of periods back: the stretch doubles.
            let periods = k / period;
            let d = periods * period;
            let q = if periods % 2 == 1 { p } else { 0 };
            let end = n.min(k + d);
            let (src, dst) = self.x.split_at_mut(k);
            for (o, &i) in dst[..end - k].iter_mut().zip(&src[k - d..]) {
                *o = i ^ q;
            }
            k = end;
        }
    }
}

/// The shortest key cycle a [`KeyCache`] keeps: most messages are shorter (one vectorized
/// pass, as with a stream of the message's length), and it is still a bounded share of what
/// a connection holds (the stream of a 16 KB gamestate was not).
const MIN_CYCLE: usize = 1024;

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn matches_the_byte_at_a_time_form(
            body in proptest::collection::vec(proptest::num::u8::ANY, 0..300),
            s in proptest::collection::vec(1u8.., 0..40),
            start in 0usize..16,
            key0 in proptest::num::i32::ANY,
        ) {
            let (mut a, mut b) = (body.clone(), body);
            xor_body(&mut a, start, key0, &s);
            xor_body_bytewise(&mut b, start, key0, &s);
            proptest::prop_assert_eq!(a, b);
        }
    }

    #[test]
    fn involution() {
        let orig: Vec<u8> = (0..40u8).collect();
        let mut b = orig.clone();
        s2c(&mut b, 0x1234, 77, b"say hello %x\xff");
        assert_ne!(b, orig);
        assert_eq!(&b[..4], &orig[..4]);
        s2c(&mut b, 0x1234, 77, b"say hello %x\xff");
        assert_eq!(b, orig);
    }

    #[test]
    fn empty_string_is_single_byte_xor() {
        let mut b = vec![0u8; 16];
        c2s(&mut b, 0x100 | 0x5a, 0, 0, b"");
        assert!(b[..12].iter().all(|&x| x == 0));
        assert!(b[12..].iter().all(|&x| x == 0x5a));
    }

    #[test]
    fn key_is_cumulative_with_parity_shift() {
        let mut b = vec![0u8; 7];
        s2c(&mut b, 0, 0, b"A");
        // i=4 (even): key ^= 'A'; i=5 (odd): key ^= 'A'<<1; ...
        let a = b'A';
        let k4 = a;
        let k5 = k4 ^ (a << 1);
        let k6 = k5 ^ a;
        assert_eq!(&b[4..], &[k4, k5, k6]);
    }
    #[test]
    fn cached_key_stream_follows_the_ring_versions() {
        use super::super::cmdring::CommandRing;
        let mut ring = CommandRing::default();
        let mut cache = KeyCache::new();
        let body: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
        let check = |cache: &mut KeyCache, ring: &CommandRing, seq: i32, start: usize| {
            let (text, v) = ring.keyed(seq);
            let (mut a, mut b) = (body.clone(), body.clone());
            cache.xor(&mut a, start, 0x1234, text.as_bytes(), v);
            xor_body(&mut b, start, 0x1234, text.as_bytes());
            assert_eq!(a, b, "seq {seq} text {text:?}");
        };
        check(&mut cache, &ring, 1, C2S_START);
        for (seq, text) in [
            (1, "cs 5 abc"),
            (2, "print x"),
            (1, "cs 5 abd"),
            (65, "cs 5 abd"),
        ] {
            check(&mut cache, &ring, seq, C2S_START);
            ring.set(seq, text.into());
            check(&mut cache, &ring, seq, C2S_START);
            check(&mut cache, &ring, seq, C2S_START);
            check(&mut cache, &ring, seq, S2C_START);
            check(&mut cache, &ring, seq - 1, C2S_START);
            check(&mut cache, &ring, seq, C2S_START);
        }
        ring.set_lossy(1, b"x\0y");
        check(&mut cache, &ring, 1, C2S_START);
    }

    /// One step of a cache-equivalence run: a body descrambled both ways.
    fn check_cached(cache: &mut KeyCache, body: &[u8], start: usize, key0: i32, s: &[u8]) {
        let (mut a, mut b) = (body.to_vec(), body.to_vec());
        cache.xor(&mut a, start, key0, s, NO_VERSION);
        xor_body(&mut b, start, key0, s);
        assert_eq!(a, b, "start {start} key0 {key0} s {s:?}");
    }

    proptest::proptest! {
        #[test]
        fn cached_key_stream_matches_xor_body(
            steps in proptest::collection::vec(
                (
                    proptest::collection::vec(proptest::num::u8::ANY, 0..400),
                    // Few distinct strings, so the cache is both reused and invalidated.
                    0usize..4,
                    proptest::sample::select(vec![0usize, 3, 4, 12, 13]),
                    proptest::num::i32::ANY,
                ),
                1..12,
            ),
            strings in proptest::collection::vec(
                proptest::collection::vec(proptest::num::u8::ANY, 0..40),
                4,
            ),
        ) {
            let mut cache = KeyCache::new();
            for (body, which, start, key0) in &steps {
                check_cached(&mut cache, body, *start, *key0, &strings[*which]);
            }
        }
    }

    #[test]
    fn cached_key_stream_edge_cases() {
        let mut cache = KeyCache::new();
        let body: Vec<u8> = (0..=255u8).cycle().take(3000).collect();
        for s in [
            &b""[..],
            b"%",
            b"\xff\x80a",
            b"\0abc",
            b"ab\0c",
            b"cs 5 \"x\"",
            b"a",
        ] {
            for start in [0, 4, 12, 5000] {
                for len in [0, 1, 4, 12, 13, 100, 3000] {
                    check_cached(&mut cache, &body[..len], start, 0x1234_5677, s);
                }
            }
        }
        // Bodies shorter and longer than the cycle with the same string.
        check_cached(&mut cache, &body[..10], 4, 9, b"xy");
        check_cached(&mut cache, &body[..2000], 4, 9, b"xy");
        check_cached(&mut cache, &body[..50], 4, 9, b"xy");
    }

    /// A gamestate-sized body (16 KB) against strings whose period is below, at and above
    /// the kept cycle, and the cache stays one cycle long.
    #[test]
    fn key_stream_cycles_over_long_bodies() {
        let body: Vec<u8> = (0..=255u8).cycle().take(16_384).collect();
        let long: Vec<u8> = (0..3000).map(|i| b'a' + (i % 26) as u8).collect();
        for l in [0, 1, 5, 31, 32, 33, 64, 100, 1500, 3000] {
            let s = &long[..l];
            let mut cache = KeyCache::new();
            for len in [16_384, 100, 4000, 13, 16_383] {
                for start in [4, 12] {
                    check_cached(&mut cache, &body[..len], start, 0x0bad_cafe, s);
                }
            }
            assert!(
                cache.x.len() <= MIN_CYCLE.max(2 * l) + 2 * l,
                "{}",
                cache.x.len()
            );
        }
    }

    #[test]
    fn cached_directions_match() {
        let body: Vec<u8> = (0..200u8).collect();
        let mut cache = KeyCache::new();
        for len in [0, 3, 4, 5, 12, 13, 200] {
            let (mut a, mut b) = (body[..len].to_vec(), body[..len].to_vec());
            cache.s2c(&mut a, 0x55aa, 31, (b"say hi", NO_VERSION));
            s2c(&mut b, 0x55aa, 31, b"say hi");
            assert_eq!(a, b);
            cache.c2s(&mut a, 0x55aa, (7, 8), (b"cs 1 x", NO_VERSION));
            c2s(&mut b, 0x55aa, 7, 8, b"cs 1 x");
            assert_eq!(a, b);
        }
    }
}
