//! The adaptive Huffman coder (FGK, Sayood) of the `connect` packet (spec §2.4, §4.3):
//! [`adaptive_compress`] / [`adaptive_decompress`]. Unrelated to the static netchan tree of
//! [`super`] except for sharing the NYT symbol. The tree update must follow the C code step
//! by step because the code shapes depend on every swap, so [`AdaptiveTree`] is a
//! line-by-line port of `Huff_addRef` / `increment` / `swap` / `swaplist` over an index arena.

use super::NYT;

/// Symbol used by the C code for internal nodes (`INTERNAL_NODE = NYT + 1`).
const INTERNAL: u16 = NYT + 1;

/// Errors of [`adaptive_decompress`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HuffError {
    /// The block must hold at least the 2-byte big-endian length prefix.
    #[error("adaptive Huffman block too short: {len} bytes, need at least the 2-byte length")]
    TooShort { len: usize },
}

/// `MAX_MSGLEN - 12`: `Huff_Decompress` clamps the declared length to what fits in the message
/// buffer after the 12 plain bytes of the OOB header.
pub const ADAPTIVE_MAX_LEN: usize = 16384 - 12;

const NONE: u16 = u16::MAX;

#[derive(Clone, Copy, Debug)]
struct Node {
    left: u16,
    right: u16,
    parent: u16,
    next: u16,
    prev: u16,
    /// Index into `AdaptiveTree::slots` (the C `node_t **head`, shared by a weight block).
    head: u16,
    weight: u32,
    symbol: u16,
}

const EMPTY_NODE: Node = Node {
    left: NONE,
    right: NONE,
    parent: NONE,
    next: NONE,
    prev: NONE,
    head: NONE,
    weight: 0,
    symbol: 0,
};

/// Room for every node (the C `nodeList` holds 768; a tree of 257 symbols has at most 513)
/// and every block-leader slot, a power of two: indices are masked to it, so the arena's
/// reads need no bounds check (this walk runs for every byte of a `connect`).
const ARENA: usize = 1024;

/// An arena index, masked to [`ARENA`] (a valid index is below it and unchanged).
#[inline(always)]
fn at(i: u16) -> usize {
    usize::from(i) & (ARENA - 1)
}

/// Port of the C `huff_t`: nodes in an arena (index = C pointer), block-leader slots with the
/// same LIFO free list as `get_ppnode` / `free_ppnode`.
#[derive(Clone, Debug)]
pub struct AdaptiveTree {
    nodes: Box<[Node; ARENA]>,
    /// Nodes in use (the next one's index).
    n_nodes: u16,
    slots: Box<[u16; ARENA]>,
    n_slots: u16,
    /// The free slots, a stack: `free[..n_free]`.
    free: Box<[u16; ARENA]>,
    n_free: u16,
    tree: u16,
    lhead: u16,
    loc: [u16; 257],
}

impl Default for AdaptiveTree {
    fn default() -> Self {
        Self::new()
    }
}

impl AdaptiveTree {
    /// A tree holding only the NYT node (weight 0) as root, as `Huff_Init` / `Huff_Compress`
    /// set it up.
    pub fn new() -> Self {
        let mut nodes = Box::new([EMPTY_NODE; ARENA]);
        nodes[0] = Node {
            symbol: NYT,
            ..EMPTY_NODE
        };
        let mut loc = [NONE; 257];
        loc[NYT as usize] = 0;
        AdaptiveTree {
            nodes,
            n_nodes: 1,
            slots: Box::new([NONE; ARENA]),
            n_slots: 0,
            free: Box::new([0; ARENA]),
            n_free: 0,
            tree: 0,
            lhead: 0,
            loc,
        }
    }

    #[inline(always)]
    fn n(&self, i: u16) -> &Node {
        // Indices are only ever produced by this arena, so the mask changes none.
        &self.nodes[at(i)]
    }

    #[inline(always)]
    fn nm(&mut self, i: u16) -> &mut Node {
        &mut self.nodes[at(i)]
    }

    #[inline(always)]
    fn slot(&self, s: u16) -> u16 {
        self.slots[at(s)]
    }

    #[inline(always)]
    fn set_slot(&mut self, s: u16, v: u16) {
        self.slots[at(s)] = v;
    }

    fn get_ppnode(&mut self) -> u16 {
        if self.n_free > 0 {
            self.n_free -= 1;
            return self.free[at(self.n_free)];
        }
        let s = self.n_slots;
        self.n_slots += 1;
        self.set_slot(s, NONE);
        s
    }

    fn free_ppnode(&mut self, s: u16) {
        self.free[at(self.n_free)] = s;
        self.n_free += 1;
    }

    /// C `swap`: exchange the tree positions of two nodes.
    fn swap(&mut self, n1: u16, n2: u16) {
        let par1 = self.n(n1).parent;
        let par2 = self.n(n2).parent;
        if par1 != NONE {
            if self.n(par1).left == n1 {
                self.nm(par1).left = n2;
            } else {
                self.nm(par1).right = n2;
            }
        } else {
            self.tree = n2;
        }
        if par2 != NONE {
            if self.n(par2).left == n2 {
                self.nm(par2).left = n1;
            } else {
                self.nm(par2).right = n1;
            }
        } else {
            self.tree = n1;
        }
        self.nm(n1).parent = par2;
        self.nm(n2).parent = par1;
    }

    /// C `swaplist`: exchange the list (rank) positions of two nodes.
    fn swaplist(&mut self, n1: u16, n2: u16) {
        let t = self.n(n1).next;
        self.nm(n1).next = self.n(n2).next;
        self.nm(n2).next = t;
        let t = self.n(n1).prev;
        self.nm(n1).prev = self.n(n2).prev;
        self.nm(n2).prev = t;
        if self.n(n1).next == n1 {
            self.nm(n1).next = n2;
        }
        if self.n(n2).next == n2 {
            self.nm(n2).next = n1;
        }
        let x = self.n(n1).next;
        if x != NONE {
            self.nm(x).prev = n1;
        }
        let x = self.n(n2).next;
        if x != NONE {
            self.nm(x).prev = n2;
        }
        let x = self.n(n1).prev;
        if x != NONE {
            self.nm(x).next = n1;
        }
        let x = self.n(n2).prev;
        if x != NONE {
            self.nm(x).next = n2;
        }
    }

    /// C `increment` (recursive towards the root; depth is bounded by the tree height <= 513).
    fn increment(&mut self, node: u16) {
        if node == NONE {
            return;
        }
        let next = self.n(node).next;
        if next != NONE && self.n(next).weight == self.n(node).weight {
            let lnode = self.slot(self.n(node).head);
            if lnode != self.n(node).parent {
                self.swap(lnode, node);
            }
            self.swaplist(lnode, node);
        }
        let prev = self.n(node).prev;
        let head = self.n(node).head;
        if prev != NONE && self.n(prev).weight == self.n(node).weight {
            self.set_slot(head, prev);
        } else {
            self.set_slot(head, NONE);
            self.free_ppnode(head);
        }
        self.nm(node).weight += 1;
        let next = self.n(node).next;
        if next != NONE && self.n(next).weight == self.n(node).weight {
            self.nm(node).head = self.n(next).head;
        } else {
            let s = self.get_ppnode();
            self.nm(node).head = s;
            self.set_slot(s, node);
        }
        let parent = self.n(node).parent;
        if parent != NONE {
            self.increment(parent);
            // Re-read: the recursion may have moved things around.
            let parent = self.n(node).parent;
            if self.n(node).prev == parent {
                self.swaplist(node, parent);
                let head = self.n(node).head;
                if self.slot(head) == node {
                    self.set_slot(head, parent);
                }
            }
        }
    }

    /// C `Huff_addRef`: count one more occurrence of `ch`, creating its leaf on first use.
    pub fn add_ref(&mut self, ch: u8) {
        if self.loc[ch as usize] != NONE {
            self.increment(self.loc[ch as usize]);
            return;
        }
        // First transmission: split NYT into (NYT, new leaf) under a new internal node.
        let tnode = self.n_nodes;
        let tnode2 = tnode + 1;
        self.n_nodes += 2;
        *self.nm(tnode) = EMPTY_NODE;
        *self.nm(tnode2) = EMPTY_NODE;
        let lhead = self.lhead;

        self.nm(tnode2).symbol = INTERNAL;
        self.nm(tnode2).weight = 1;
        let lnext = self.n(lhead).next;
        self.nm(tnode2).next = lnext;
        if lnext != NONE {
            self.nm(lnext).prev = tnode2;
            if self.n(lnext).weight == 1 {
                self.nm(tnode2).head = self.n(lnext).head;
            } else {
                let s = self.get_ppnode();
                self.nm(tnode2).head = s;
                self.set_slot(s, tnode2);
            }
        } else {
            let s = self.get_ppnode();
            self.nm(tnode2).head = s;
            self.set_slot(s, tnode2);
        }
        self.nm(lhead).next = tnode2;
        self.nm(tnode2).prev = lhead;

        self.nm(tnode).symbol = u16::from(ch);
        self.nm(tnode).weight = 1;
        let lnext = self.n(lhead).next;
        self.nm(tnode).next = lnext;
        if lnext != NONE {
            self.nm(lnext).prev = tnode;
            if self.n(lnext).weight == 1 {
                self.nm(tnode).head = self.n(lnext).head;
            } else {
                // "this should never happen" in the C source; kept as written there.
                let s = self.get_ppnode();
                self.nm(tnode).head = s;
                self.set_slot(s, tnode2);
            }
        } else {
            let s = self.get_ppnode();
            self.nm(tnode).head = s;
            self.set_slot(s, tnode);
        }
        self.nm(lhead).next = tnode;
        self.nm(tnode).prev = lhead;
        self.nm(tnode).left = NONE;
        self.nm(tnode).right = NONE;

        let lparent = self.n(lhead).parent;
        if lparent != NONE {
            if self.n(lparent).left == lhead {
                self.nm(lparent).left = tnode2;
            } else {
                self.nm(lparent).right = tnode2;
            }
        } else {
            self.tree = tnode2;
        }
        self.nm(tnode2).right = tnode;
        self.nm(tnode2).left = lhead;
        self.nm(tnode2).parent = lparent;
        self.nm(lhead).parent = tnode2;
        self.nm(tnode).parent = tnode2;
        self.loc[ch as usize] = tnode;
        self.increment(lparent);
    }

    /// Current code of `sym` (0..=256) as transmission-ordered bits (root first), or `None` if
    /// the symbol has no leaf yet.
    pub fn code(&self, sym: u16) -> Option<Vec<bool>> {
        let leaf = *self.loc.get(sym as usize)?;
        if leaf == NONE {
            return None;
        }
        let mut bits = Vec::new();
        let mut child = leaf;
        let mut node = self.n(leaf).parent;
        while node != NONE {
            bits.push(self.n(node).right == child);
            child = node;
            node = self.n(node).parent;
        }
        bits.reverse();
        Some(bits)
    }

    /// C `Huff_Receive`: walk from the root using `next_bit` until a leaf; returns its symbol.
    fn receive(&self, mut next_bit: impl FnMut() -> bool) -> u16 {
        let mut node = self.tree;
        while self.n(node).symbol == INTERNAL {
            node = if next_bit() {
                self.n(node).right
            } else {
                self.n(node).left
            };
            if node == NONE {
                // "Illegal tree" in C (returns 0); cannot happen with a tree built by add_ref.
                return 0;
            }
        }
        self.n(node).symbol
    }
}

/// Bit sink for the adaptive coder: same packing as the C `add_bit` (LSB first).
struct BitOut {
    buf: Vec<u8>,
    bloc: usize,
}

impl BitOut {
    fn add_bit(&mut self, bit: bool) {
        let i = self.bloc >> 3;
        if i >= self.buf.len() {
            self.buf.resize(i + 1, 0);
        }
        if bit {
            if let Some(b) = self.buf.get_mut(i) {
                *b |= 1 << (self.bloc & 7);
            }
        }
        self.bloc += 1;
    }
}

/// Adaptive-Huffman compress `plain` the way `Huff_Compress(msg, 12)` rewrites the OOB `connect`
/// packet from byte 12 (§2.4): 2-byte big-endian length, the codes from bit 16, and a trailing
/// pad byte (`(16 + bits + 8) >> 3` bytes in total). Empty input gives an empty block (the C
/// function leaves such a message untouched).
///
/// This follows id 1.32's `Huff_Compress`. ioq3's version additionally stops emitting tree codes
/// once the output would exceed `8 * plain.len()` bits, which only changes the (already
/// undecodable) output of incompressible inputs; it is not emulated.
pub fn adaptive_compress(plain: &[u8]) -> Vec<u8> {
    if plain.is_empty() {
        return Vec::new();
    }
    let size = plain.len();
    let mut out = BitOut {
        buf: Vec::with_capacity(size + 8),
        bloc: 16,
    };
    out.buf.push((size >> 8) as u8);
    out.buf.push(size as u8);
    let mut tree = AdaptiveTree::new();
    for &ch in plain {
        match tree.code(u16::from(ch)) {
            Some(bits) => bits.into_iter().for_each(|b| out.add_bit(b)),
            None => {
                // NYT's current code, then the symbol's 8 bits MSB first.
                if let Some(bits) = tree.code(NYT) {
                    bits.into_iter().for_each(|b| out.add_bit(b));
                }
                for i in (0..8).rev() {
                    out.add_bit((ch >> i) & 1 != 0);
                }
            }
        }
        tree.add_ref(ch);
    }
    let total = (out.bloc + 8) >> 3;
    out.buf.resize(total, 0);
    out.buf
}

/// Adaptive-Huffman decompress a `connect` block (`Huff_Decompress(msg, 12)`, §2.4): `block` is
/// everything from offset 12 of the OOB packet. Returns exactly `count` bytes (the big-endian
/// length, clamped to [`ADAPTIVE_MAX_LEN`] like the engine). As in the engine, running out of
/// input is not an error: decoding stops and the rest is zero-filled (the C code leaves stack
/// garbage there); bits read beyond the block count as 0.
pub fn adaptive_decompress(block: &[u8]) -> Result<Vec<u8>, HuffError> {
    adaptive_decompress_prefix(block, ADAPTIVE_MAX_LEN)
}

/// The first `n` bytes of [`adaptive_decompress`] (fewer when the block holds fewer): each
/// symbol only updates the tree, so decoding can stop anywhere.
pub fn adaptive_decompress_prefix(block: &[u8], n: usize) -> Result<Vec<u8>, HuffError> {
    let (hi, lo) = match block {
        [hi, lo, ..] => (*hi, *lo),
        _ => return Err(HuffError::TooShort { len: block.len() }),
    };
    let size = block.len();
    let cch = (usize::from(hi) * 256 + usize::from(lo))
        .min(ADAPTIVE_MAX_LEN)
        .min(n);
    let mut out = vec![0u8; cch];
    let mut tree = AdaptiveTree::new();
    let mut bloc = 16usize;
    fn get_bit(block: &[u8], bloc: &mut usize) -> bool {
        let b = block.get(*bloc >> 3).copied().unwrap_or(0);
        let bit = (b >> (*bloc & 7)) & 1 != 0;
        *bloc += 1;
        bit
    }
    for slot in out.iter_mut() {
        // The engine's only overflow guard: stop once the cursor is past the buffer.
        if (bloc >> 3) > size {
            break;
        }
        let mut ch = tree.receive(|| get_bit(block, &mut bloc));
        if ch == NYT {
            ch = 0;
            for _ in 0..8 {
                ch = (ch << 1) | u16::from(get_bit(block, &mut bloc));
            }
        }
        *slot = ch as u8;
        tree.add_ref(ch as u8);
    }
    Ok(out)
}

/// [`adaptive_decompress_prefix`]`(block, 2)` without a tree, which costs more to set up
/// (20 KB of arena) than two symbols cost to decode: a flood of spoofed `connect`s is
/// judged by their first two bytes. A fresh tree is its NYT leaf alone, so the first byte
/// comes as NYT (no bit) and 8 raw bits; then the root's 0 branch is NYT and its 1 branch
/// that byte, so the second is a 1 (the same byte again) or a 0 and 8 raw bits.
pub fn adaptive_first_two(block: &[u8]) -> Result<Vec<u8>, HuffError> {
    let (hi, lo) = match block {
        [hi, lo, ..] => (*hi, *lo),
        _ => return Err(HuffError::TooShort { len: block.len() }),
    };
    let cch = (usize::from(hi) * 256 + usize::from(lo))
        .min(ADAPTIVE_MAX_LEN)
        .min(2);
    let mut out = vec![0u8; cch];
    let mut bloc = 16usize;
    let mut bit = || {
        let b = block.get(bloc >> 3).copied().unwrap_or(0);
        bloc += 1;
        (b >> ((bloc - 1) & 7)) & 1 != 0
    };
    fn raw(bit: &mut impl FnMut() -> bool) -> u8 {
        (0..8).fold(0u8, |c, _| (c << 1) | u8::from(bit()))
    }
    // The decoder's guard before each symbol: its cursor still within the block.
    let within = |bits_read: usize| ((16 + bits_read) >> 3) <= block.len();
    if cch >= 1 && within(0) {
        out[0] = raw(&mut bit);
        if cch >= 2 && within(8) {
            out[1] = if bit() { out[0] } else { raw(&mut bit) };
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tree-free first two bytes are the tree's, whatever the block: the stored vector,
    /// and 256 pseudo-random blocks of each length up to 6 bytes, a quarter of them with a
    /// stated length of 0 to 3 bytes.
    #[test]
    fn first_two_bytes_without_a_tree_are_the_trees() {
        let mut x = 0x2545_f491u32;
        let mut next = || {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (x >> 16) as u8
        };
        let mut blocks = vec![unhex(CONNECT_PACKET_HEX)[12..].to_vec()];
        for len in 0..=6 {
            for k in 0..256 {
                let mut b: Vec<u8> = (0..len).map(|_| next()).collect();
                if len >= 2 && k % 4 == 0 {
                    b[0] = 0;
                    b[1] = (k / 4 % 4) as u8;
                }
                blocks.push(b);
            }
        }
        for b in &blocks {
            assert_eq!(
                adaptive_first_two(b),
                adaptive_decompress_prefix(b, 2),
                "{b:02x?}"
            );
        }
    }

    const CONNECT_PLAIN: &[u8] = b"connect \"\\challenge\\123\\qport\\5\\protocol\\68\"";
    const CONNECT_PACKET_HEX: &str = "ff ff ff ff 63 6f 6e 6e 65 63 74 20 00 24 44 74 30 8e 05 0c c7 26 c3 14 ec 8e f9 67 30 1a 26 c1 1c e2 08 1c 16 fb c3 a9 71 e9 c0 da 3b 77 b6 f6 78 c2 b6 e1 e8 00";

    fn unhex(s: &str) -> Vec<u8> {
        s.split_whitespace()
            .map(|h| u8::from_str_radix(h, 16).unwrap_or(0))
            .collect()
    }

    /// §2.4 test vector: compress from offset 12 and compare all 54 bytes.
    #[test]
    fn spec_2_4_connect_compress() {
        assert_eq!(CONNECT_PLAIN.len() + 4, 48);
        let mut packet = vec![0xffu8; 4];
        packet.extend_from_slice(&CONNECT_PLAIN[..8]);
        packet.extend(adaptive_compress(&CONNECT_PLAIN[8..]));
        assert_eq!(packet, unhex(CONNECT_PACKET_HEX));
    }

    #[test]
    fn spec_2_4_connect_decompress() {
        let packet = unhex(CONNECT_PACKET_HEX);
        let plain = adaptive_decompress(&packet[12..]);
        assert_eq!(plain.as_deref(), Ok(&CONNECT_PLAIN[8..]));
    }

    const REAL_CONNECT_HEX: &str = concat!(
        "ffffffff636f6e6e6563742001284474308e050cc726c314ec8ef967301a56299800071fb683bd61680647c721b0579c",
        "0c17198679c390e7161f9390660100b13d71c8788991414198e249f70625d38ef8f919c339a4ffec83c2f261e2b2bbf1",
        "1303aa4e2fcd56ea87866ffcd325fac114642456d79116f9d799eb3d5116d581ea17a6d584c9ef590c964e617969538f",
        "cb3a8425b8ac28c6069e044433d69dcddce05181b052ef38e23bd448e33adbe612b16fcc8d3e24910cd4d3bf5153306e",
        "9e8071db97cfd426d5bf9d3a4796bbabfd40b4216c88480445b763c4c0b19721ba0a270e31be865a8dfd1921e5cb0b24",
        "f82204",
    );

    fn unhex_compact(s: &str) -> Vec<u8> {
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap_or(0))
            .collect()
    }

    /// The `connect` packet an ioq3 client sent in the q3-basic capture: decompresses to the
    /// quoted userinfo, and recompressing gives the captured bytes back exactly.
    #[test]
    fn real_ioq3_connect_roundtrip() {
        let packet = unhex_compact(REAL_CONNECT_HEX);
        assert_eq!(&packet[..12], b"\xff\xff\xff\xffconnect ");
        let plain = adaptive_decompress(&packet[12..]).unwrap_or_default();
        assert_eq!(plain.len(), 0x128);
        let text = String::from_utf8_lossy(&plain);
        assert!(text.starts_with("\"\\"), "{text}");
        assert!(text.ends_with('"'), "{text}");
        assert!(text.contains("\\protocol\\68\\"), "{text}");
        assert!(text.contains("\\challenge\\"), "{text}");
        assert_eq!(adaptive_compress(&plain), &packet[12..]);
    }

    #[test]
    fn adaptive_edge_cases() {
        assert_eq!(adaptive_compress(&[]), Vec::<u8>::new());
        assert_eq!(
            adaptive_decompress(&[]),
            Err(HuffError::TooShort { len: 0 })
        );
        assert_eq!(
            adaptive_decompress(&[0]),
            Err(HuffError::TooShort { len: 1 })
        );
        // Declared 5 bytes but no bits: NYT + 8 zero bits per symbol until past the buffer.
        assert_eq!(adaptive_decompress(&[0, 5]), Ok(vec![0; 5]));
        // Huge declared length is clamped like the engine.
        assert_eq!(
            adaptive_decompress(&[0xff, 0xff]).map(|v| v.len()),
            Ok(ADAPTIVE_MAX_LEN)
        );
    }

    proptest::proptest! {
        #[test]
        fn prop_adaptive_roundtrip(plain in proptest::collection::vec(proptest::prelude::any::<u8>(), 1..600)) {
            let block = adaptive_compress(&plain);
            proptest::prop_assert_eq!(adaptive_decompress(&block), Ok(plain));
        }

        #[test]
        fn prop_adaptive_random_input_never_panics(block in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..100)) {
            let _ = adaptive_decompress(&block);
        }
    }
}
