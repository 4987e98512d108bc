//! XOR scrambling of protocol-68 message bodies (q3-protocol.md §3). The same routine
//! scrambles and descrambles; keys are pure functions of tracked connection state.

/// Body offset where server→client scrambling starts.
pub const S2C_START: usize = 4;
/// Body offset where client→server scrambling starts.
pub const C2S_START: usize = 12;

/// XOR `body[start..]` with the rolling key seeded by `key0` and driven by the reliable
/// command string `s` (§3.1). An empty string leaves the key constant.
pub fn xor_body(body: &mut [u8], start: usize, key0: i32, s: &[u8]) {
    let mut key = (key0 & 0xff) as u8;
    let mut idx = 0usize;
    for (i, b) in body.iter_mut().enumerate().skip(start) {
        // The string repeats from its start when its NUL is reached; the NUL is never used.
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
