//! Netchan header (spec §2.1) and the receiver's acceptance rule (spec §2.3).
use crate::flow::Dir;

/// A view of the netchan header of one datagram.
#[derive(Debug, Clone, Copy)]
pub struct Header<'a> {
    buf: &'a [u8],
    dir: Dir,
}

impl<'a> Header<'a> {
    /// Check the length: 8 bytes s2c, 10 c2s (with the qport). After this no accessor fails.
    pub fn new_checked(buf: &'a [u8], dir: Dir) -> Option<Self> {
        let need = if dir == Dir::C2s { 10 } else { 8 };
        (buf.len() >= need).then_some(Header { buf, dir })
    }
    fn word(&self, i: usize) -> u32 {
        let mut a = [0u8; 4];
        if let Some(s) = self.buf.get(i..i + 4) {
            a.copy_from_slice(s);
        }
        u32::from_le_bytes(a)
    }
    pub fn sequence(&self) -> u32 {
        self.word(0) & 0x7fff_ffff
    }
    pub fn reliable(&self) -> bool {
        self.word(0) >> 31 != 0
    }
    pub fn ack(&self) -> u32 {
        self.word(4) & 0x7fff_ffff
    }
    pub fn ack_reliable(&self) -> bool {
        self.word(4) >> 31 != 0
    }
    pub fn qport(&self) -> Option<u16> {
        match (self.dir, self.buf.get(8..10)) {
            (Dir::C2s, Some(q)) => Some(u16::from_le_bytes([q[0], q[1]])),
            _ => None,
        }
    }
    pub fn header_len(&self) -> usize {
        if self.dir == Dir::C2s {
            10
        } else {
            8
        }
    }
    pub fn payload(&self) -> &'a [u8] {
        self.buf.get(self.header_len()..).unwrap_or(&[])
    }
}

/// The receiving side of one direction, as `Netchan_Process` keeps it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Receiver {
    /// Last accepted sequence (starts at 0, so the very first c2s packet, seq 0, is dropped).
    pub incoming: u32,
    /// Receiver's reliable parity: flips with each accepted reliable-flagged packet.
    pub reliable_parity: bool,
}

/// What the receiver decided about one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Accepted { dropped: u32 },
    Duplicate,
    OutOfOrder,
}

impl Receiver {
    pub fn process(&mut self, h: &Header<'_>) -> Verdict {
        let seq = h.sequence();
        if seq <= self.incoming {
            return if seq == self.incoming {
                Verdict::Duplicate
            } else {
                Verdict::OutOfOrder
            };
        }
        let dropped = seq - self.incoming - 1;
        self.incoming = seq;
        if h.reliable() {
            self.reliable_parity = !self.reliable_parity;
        }
        Verdict::Accepted { dropped }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_c2s_packet_is_dropped() {
        // captures/qw-basic frame 7: the first netchan packet, seq 0, carrying "new".
        let pkt = [
            0, 0, 0, 0x80, 0, 0, 0, 0, 0x34, 0x12, 4, b'n', b'e', b'w', 0,
        ];
        let h = Header::new_checked(&pkt[..], Dir::C2s).unwrap();
        assert!(h.reliable());
        assert_eq!(h.qport(), Some(0x1234));
        let mut rx = Receiver::default();
        assert_eq!(rx.process(&h), Verdict::Duplicate);
    }
}
