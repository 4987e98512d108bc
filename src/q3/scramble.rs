//! XOR scrambling of protocol-68 message bodies (q3-protocol.md §3). The same routine
//! scrambles and descrambles; keys are pure functions of tracked connection state.

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
            let c = if c > 127 || c == b'%' { b'.' } else { c };
            key ^= c << (i & 1);
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
        let mut c = s.get(idx).copied().unwrap_or(0);
        if c > 127 || c == b'%' {
            c = b'.';
        }
        key ^= c << (i & 1);
        *b ^= key;
        idx += 1;
    }
}

/// Descramble a server→client body: key0 = challenge ^ sequence, string = the client command
/// the message acknowledges.
pub fn s2c(body: &mut [u8], challenge: i32, sequence: i32, acked_client_cmd: &[u8]) {
    if body.len() >= S2C_START {
        xor_body(body, S2C_START, challenge ^ sequence, acked_client_cmd);
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
    if body.len() > C2S_START {
        xor_body(
            body,
            C2S_START,
            challenge ^ server_id ^ message_ack,
            acked_server_cmd,
        );
    }
}

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
}
