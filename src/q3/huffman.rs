//! Quake 3 static Huffman coding, the netchan tree (spec `q3-protocol.md` §4.2, Appendix A):
//! the code of every byte of a sequenced message body (`MSG_ReadBits` / `MSG_WriteBits` in
//! bitstream mode). This is the lowest layer of the Quake 3 codec: the bitstream
//! ([`crate::q3::bits`]) and the usercmd fast path use these tables; nothing here uses them.
//!
//! The engine builds the tree at start-up by feeding `msg_hData` into its adaptive coder; the
//! resulting tree never changes, so we keep it as two compile-time tables: [`CODES`]
//! (symbol -> code, length) for encoding and a 2048-entry decode LUT indexed by the next 11
//! stream bits (the longest code is 11 bits, and the codes form a complete prefix code with
//! NYT, so every 11-bit window decodes to exactly one leaf). The table is Appendix A; a test
//! rebuilds the tree from `msg_hData` with the faithful adaptive port ([`adaptive`]) and checks
//! that both agree bit for bit.
//!
//! The adaptive coder of the `connect` packet is a different coder and lives in [`adaptive`]
//! (re-exported here).

pub mod adaptive;

pub use adaptive::{
    adaptive_compress, adaptive_decompress, adaptive_decompress_prefix, HuffError, ADAPTIVE_MAX_LEN,
};

/// The "not yet transmitted" pseudo-symbol. In the static tree it is an 11-bit leaf that the
/// engine's writer never emits; a reader reaching it reports a NYT error (`BitError::Nyt`).
pub const NYT: u16 = 256;

/// Length in bits of the longest static code; the decode LUT is indexed by this many bits.
pub const LUT_BITS: u32 = 11;

/// Static netchan code table (Appendix A), indexed by symbol (0..=255, then NYT).
///
/// Each entry is `(code, len)` where bit `k` of `code` is the `k`-th transmitted bit (the
/// decision at depth `k`, 0 = left, 1 = right). Because the stream is packed LSB first, writing
/// `code` as `len` raw bits emits exactly the engine's root-to-leaf walk.
pub const CODES: [(u16, u8); 257] = [
    (0x0002, 2),
    (0x001b, 5),
    (0x0048, 7),
    (0x006c, 7),
    (0x00a1, 8),
    (0x0011, 8),
    (0x0010, 7),
    (0x003f, 6),
    (0x0015, 5),
    (0x0034, 7),
    (0x0069, 7),
    (0x000b, 7),
    (0x0013, 7),
    (0x002d, 6),
    (0x0039, 8),
    (0x00ac, 9),
    (0x0025, 7),
    (0x0058, 9),
    (0x01f0, 9),
    (0x01f8, 9),
    (0x01dd, 10),
    (0x03f3, 10),
    (0x022b, 10),
    (0x0323, 10),
    (0x00f4, 9),
    (0x018d, 10),
    (0x00ab, 10),
    (0x0363, 10),
    (0x01eb, 10),
    (0x0043, 8),
    (0x004f, 9),
    (0x00d4, 8),
    (0x0037, 6),
    (0x00d3, 10),
    (0x0044, 9),
    (0x02cd, 10),
    (0x03c5, 10),
    (0x03f9, 10),
    (0x030d, 10),
    (0x03cd, 10),
    (0x0094, 9),
    (0x01ac, 10),
    (0x0033, 10),
    (0x0014, 10),
    (0x0271, 10),
    (0x02f0, 10),
    (0x01f4, 9),
    (0x0078, 8),
    (0x0027, 7),
    (0x00c3, 8),
    (0x00ef, 8),
    (0x0197, 9),
    (0x0053, 8),
    (0x00b1, 8),
    (0x000d, 9),
    (0x0161, 9),
    (0x0007, 9),
    (0x00f1, 9),
    (0x0199, 9),
    (0x0191, 10),
    (0x0123, 10),
    (0x00bc, 9),
    (0x0144, 9),
    (0x01f3, 10),
    (0x00cf, 8),
    (0x0050, 7),
    (0x007c, 7),
    (0x0004, 7),
    (0x0021, 8),
    (0x0051, 8),
    (0x0080, 9),
    (0x0070, 9),
    (0x013d, 9),
    (0x0063, 10),
    (0x02d7, 10),
    (0x0371, 10),
    (0x019d, 9),
    (0x02ab, 10),
    (0x01c7, 10),
    (0x0333, 10),
    (0x012c, 9),
    (0x009d, 10),
    (0x016b, 10),
    (0x036b, 10),
    (0x01d3, 10),
    (0x0171, 10),
    (0x01e3, 10),
    (0x0233, 10),
    (0x00d7, 10),
    (0x02cb, 10),
    (0x0170, 9),
    (0x00a8, 9),
    (0x00c7, 9),
    (0x0105, 9),
    (0x00eb, 9),
    (0x00d8, 8),
    (0x00f3, 9),
    (0x003c, 8),
    (0x01ab, 9),
    (0x018f, 9),
    (0x0097, 9),
    (0x0030, 7),
    (0x0041, 8),
    (0x014f, 9),
    (0x001c, 6),
    (0x0028, 8),
    (0x00bd, 9),
    (0x00c4, 9),
    (0x0098, 8),
    (0x008f, 9),
    (0x000c, 8),
    (0x00b3, 8),
    (0x0085, 8),
    (0x008c, 8),
    (0x0047, 8),
    (0x0079, 8),
    (0x0059, 7),
    (0x0040, 7),
    (0x0017, 8),
    (0x0019, 8),
    (0x004b, 8),
    (0x00e1, 8),
    (0x00a3, 8),
    (0x0073, 8),
    (0x006f, 8),
    (0x0068, 7),
    (0x0008, 7),
    (0x0065, 7),
    (0x001f, 6),
    (0x0029, 7),
    (0x004c, 7),
    (0x007d, 7),
    (0x000f, 8),
    (0x0083, 8),
    (0x0001, 8),
    (0x0087, 8),
    (0x0067, 8),
    (0x00e7, 8),
    (0x0057, 8),
    (0x0074, 8),
    (0x01cb, 9),
    (0x01c4, 9),
    (0x0081, 9),
    (0x004d, 9),
    (0x0131, 9),
    (0x0163, 10),
    (0x0180, 9),
    (0x03d7, 10),
    (0x002b, 10),
    (0x0145, 10),
    (0x006b, 10),
    (0x003d, 10),
    (0x032b, 10),
    (0x00f9, 10),
    (0x00e3, 10),
    (0x0245, 10),
    (0x012b, 10),
    (0x0031, 10),
    (0x03eb, 10),
    (0x01b9, 10),
    (0x0114, 9),
    (0x01f9, 10),
    (0x0133, 10),
    (0x002c, 10),
    (0x02dd, 10),
    (0x01c1, 10),
    (0x031d, 10),
    (0x01d1, 10),
    (0x0138, 9),
    (0x0061, 10),
    (0x02e3, 10),
    (0x0345, 10),
    (0x026b, 10),
    (0x00cd, 10),
    (0x00cb, 10),
    (0x014d, 10),
    (0x0038, 9),
    (0x03c1, 10),
    (0x023d, 10),
    (0x03bc, 10),
    (0x00c5, 10),
    (0x03ac, 10),
    (0x03e3, 10),
    (0x0299, 10),
    (0x03d3, 10),
    (0x0214, 10),
    (0x0203, 10),
    (0x01bc, 10),
    (0x029d, 10),
    (0x0381, 10),
    (0x0263, 10),
    (0x008d, 10),
    (0x0054, 8),
    (0x0103, 9),
    (0x005d, 8),
    (0x0020, 6),
    (0x0009, 7),
    (0x03c7, 10),
    (0x0307, 10),
    (0x00b8, 8),
    (0x01f1, 9),
    (0x022c, 10),
    (0x0045, 10),
    (0x0003, 10),
    (0x011d, 10),
    (0x01c5, 10),
    (0x034d, 10),
    (0x001d, 10),
    (0x0000, 9),
    (0x03b9, 10),
    (0x00dd, 10),
    (0x0181, 10),
    (0x010d, 10),
    (0x00b9, 10),
    (0x01cd, 10),
    (0x0394, 10),
    (0x01bd, 10),
    (0x0194, 10),
    (0x038d, 10),
    (0x0158, 10),
    (0x03bd, 10),
    (0x00c1, 10),
    (0x03dd, 10),
    (0x00f8, 10),
    (0x00d1, 9),
    (0x0091, 9),
    (0x0099, 10),
    (0x02f8, 10),
    (0x0023, 10),
    (0x0071, 10),
    (0x02d3, 10),
    (0x0391, 10),
    (0x0049, 7),
    (0x0231, 10),
    (0x0107, 10),
    (0x0261, 10),
    (0x0223, 10),
    (0x0018, 8),
    (0x0205, 10),
    (0x02c1, 10),
    (0x01d7, 10),
    (0x00f0, 10),
    (0x02c5, 10),
    (0x0300, 10),
    (0x03d1, 10),
    (0x03a8, 10),
    (0x021d, 10),
    (0x0500, 11),
    (0x0005, 10),
    (0x0358, 10),
    (0x02f9, 10),
    (0x01a8, 10),
    (0x02b9, 10),
    (0x028d, 10),
    (0x002f, 7),
    (0x0024, 6),
    (0x0100, 11),
];

/// Decode LUT: entry = `symbol | (len << 9)`, indexed by the next [`LUT_BITS`] stream bits
/// gathered LSB first (bit 0 of the index = next bit in the stream).
static DECODE_LUT: [u16; 1 << LUT_BITS] = build_decode_lut();

const fn build_decode_lut() -> [u16; 1 << LUT_BITS] {
    let mut lut = [0u16; 1 << LUT_BITS];
    let mut sym = 0;
    while sym < CODES.len() {
        let (code, len) = CODES[sym];
        // Every index whose low `len` bits equal the code decodes to this symbol.
        let step = 1usize << len;
        let mut idx = code as usize;
        while idx < (1 << LUT_BITS) {
            lut[idx] = (sym as u16) | ((len as u16) << 9);
            idx += step;
        }
        sym += 1;
    }
    lut
}

/// Decode one static-tree symbol from an 11-bit (or wider; high bits ignored) LSB-first window.
/// Returns `(symbol, code length)`; `symbol` is [`NYT`] for the NYT leaf.
#[inline(always)]
pub fn decode_window(window: u32) -> (u16, u32) {
    let e = DECODE_LUT[(window & ((1 << LUT_BITS) - 1)) as usize];
    (e & 0x1ff, u32::from(e >> 9))
}

/// Raw LUT entry for an LSB-first window: `symbol | (len << 9)`; bit 8 set means NYT.
#[inline(always)]
pub fn lut_entry(window: u32) -> u16 {
    DECODE_LUT[(window & ((1 << LUT_BITS) - 1)) as usize]
}

/// Static code of `sym` (0..=255) as `(code, len)`, see [`CODES`].
#[inline(always)]
pub fn code_of(sym: u8) -> (u16, u8) {
    CODES[sym as usize]
}

#[cfg(test)]
mod tests {
    use super::adaptive::AdaptiveTree;
    use super::*;

    /// `msg_hData` from msg.c (symbol frequencies fed to the netchan tree by `MSG_initHuffman`).
    const MSG_HDATA: [u32; 256] = [
        250315, 41193, 6292, 7106, 3730, 3750, 6110, 23283, 33317, 6950, 7838, 9714, 9257, 17259,
        3949, 1778, 8288, 1604, 1590, 1663, 1100, 1213, 1238, 1134, 1749, 1059, 1246, 1149, 1273,
        4486, 2805, 3472, 21819, 1159, 1670, 1066, 1043, 1012, 1053, 1070, 1726, 888, 1180, 850,
        960, 780, 1752, 3296, 10630, 4514, 5881, 2685, 4650, 3837, 2093, 1867, 2584, 1949, 1972,
        940, 1134, 1788, 1670, 1206, 5719, 6128, 7222, 6654, 3710, 3795, 1492, 1524, 2215, 1140,
        1355, 971, 2180, 1248, 1328, 1195, 1770, 1078, 1264, 1266, 1168, 965, 1155, 1186, 1347,
        1228, 1529, 1600, 2617, 2048, 2546, 3275, 2410, 3585, 2504, 2800, 2675, 6146, 3663, 2840,
        14253, 3164, 2221, 1687, 3208, 2739, 3512, 4796, 4091, 3515, 5288, 4016, 7937, 6031, 5360,
        3924, 4892, 3743, 4566, 4807, 5852, 6400, 6225, 8291, 23243, 7838, 7073, 8935, 5437, 4483,
        3641, 5256, 5312, 5328, 5370, 3492, 2458, 1694, 1821, 2121, 1916, 1149, 1516, 1367, 1236,
        1029, 1258, 1104, 1245, 1006, 1149, 1025, 1241, 952, 1287, 997, 1713, 1009, 1187, 879,
        1099, 929, 1078, 951, 1656, 930, 1153, 1030, 1262, 1062, 1214, 1060, 1621, 930, 1106, 912,
        1034, 892, 1158, 990, 1175, 850, 1121, 903, 1087, 920, 1144, 1056, 3462, 2240, 4397, 12136,
        7758, 1345, 1307, 3278, 1950, 886, 1023, 1112, 1077, 1042, 1061, 1071, 1484, 1001, 1096,
        915, 1052, 995, 1070, 876, 1111, 851, 1059, 805, 1112, 923, 1103, 817, 1899, 1872, 976,
        841, 1127, 956, 1159, 950, 7791, 954, 1289, 933, 1127, 3207, 1020, 927, 1355, 768, 1040,
        745, 952, 805, 1073, 740, 1013, 805, 1008, 796, 996, 1057, 11457, 13504,
    ];

    /// Appendix A of the spec, verbatim (symbol order, then NYT), transmission-ordered bits.
    const APPENDIX_A: [&str; 257] = [
        "01",
        "11011",
        "0001001",
        "0011011",
        "10000101",
        "10001000",
        "0000100",
        "111111",
        "10101",
        "0010110",
        "1001011",
        "1101000",
        "1100100",
        "101101",
        "10011100",
        "001101010",
        "1010010",
        "000110100",
        "000011111",
        "000111111",
        "1011101110",
        "1100111111",
        "1101010001",
        "1100010011",
        "001011110",
        "1011000110",
        "1101010100",
        "1100011011",
        "1101011110",
        "11000010",
        "111100100",
        "00101011",
        "111011",
        "1100101100",
        "001000100",
        "1011001101",
        "1010001111",
        "1001111111",
        "1011000011",
        "1011001111",
        "001010010",
        "0011010110",
        "1100110000",
        "0010100000",
        "1000111001",
        "0000111101",
        "001011111",
        "00011110",
        "1110010",
        "11000011",
        "11110111",
        "111010011",
        "11001010",
        "10001101",
        "101100000",
        "100001101",
        "111000000",
        "100011110",
        "100110011",
        "1000100110",
        "1100010010",
        "001111010",
        "001000101",
        "1100111110",
        "11110011",
        "0000101",
        "0011111",
        "0010000",
        "10000100",
        "10001010",
        "000000010",
        "000011100",
        "101111001",
        "1100011000",
        "1110101101",
        "1000111011",
        "101110011",
        "1101010101",
        "1110001110",
        "1100110011",
        "001101001",
        "1011100100",
        "1101011010",
        "1101011011",
        "1100101110",
        "1000111010",
        "1100011110",
        "1100110001",
        "1110101100",
        "1101001101",
        "000011101",
        "000101010",
        "111000110",
        "101000001",
        "110101110",
        "00011011",
        "110011110",
        "00111100",
        "110101011",
        "111100011",
        "111010010",
        "0000110",
        "10000010",
        "111100101",
        "001110",
        "00010100",
        "101111010",
        "001000110",
        "00011001",
        "111100010",
        "00110000",
        "11001101",
        "10100001",
        "00110001",
        "11100010",
        "10011110",
        "1001101",
        "0000001",
        "11101000",
        "10011000",
        "11010010",
        "10000111",
        "11000101",
        "11001110",
        "11110110",
        "0001011",
        "0001000",
        "1010011",
        "111110",
        "1001010",
        "0011001",
        "1011111",
        "11110000",
        "11000001",
        "10000000",
        "11100001",
        "11100110",
        "11100111",
        "11101010",
        "00101110",
        "110100111",
        "001000111",
        "100000010",
        "101100100",
        "100011001",
        "1100011010",
        "000000011",
        "1110101111",
        "1101010000",
        "1010001010",
        "1101011000",
        "1011110000",
        "1101010011",
        "1001111100",
        "1100011100",
        "1010001001",
        "1101010010",
        "1000110000",
        "1101011111",
        "1001110110",
        "001010001",
        "1001111110",
        "1100110010",
        "0011010000",
        "1011101101",
        "1000001110",
        "1011100011",
        "1000101110",
        "000111001",
        "1000011000",
        "1100011101",
        "1010001011",
        "1101011001",
        "1011001100",
        "1101001100",
        "1011001010",
        "000111000",
        "1000001111",
        "1011110001",
        "0011110111",
        "1010001100",
        "0011010111",
        "1100011111",
        "1001100101",
        "1100101111",
        "0010100001",
        "1100000001",
        "0011110110",
        "1011100101",
        "1000000111",
        "1100011001",
        "1011000100",
        "00101010",
        "110000001",
        "10111010",
        "000001",
        "1001000",
        "1110001111",
        "1110000011",
        "00011101",
        "100011111",
        "0011010001",
        "1010001000",
        "1100000000",
        "1011100010",
        "1010001110",
        "1011001011",
        "1011100000",
        "000000000",
        "1001110111",
        "1011101100",
        "1000000110",
        "1011000010",
        "1001110100",
        "1011001110",
        "0010100111",
        "1011110110",
        "0010100110",
        "1011000111",
        "0001101010",
        "1011110111",
        "1000001100",
        "1011101111",
        "0001111100",
        "100010110",
        "100010010",
        "1001100100",
        "0001111101",
        "1100010000",
        "1000111000",
        "1100101101",
        "1000100111",
        "1001001",
        "1000110001",
        "1110000010",
        "1000011001",
        "1100010001",
        "00011000",
        "1010000001",
        "1000001101",
        "1110101110",
        "0000111100",
        "1010001101",
        "0000000011",
        "1000101111",
        "0001010111",
        "1011100001",
        "00000000101",
        "1010000000",
        "0001101011",
        "1001111101",
        "0001010110",
        "1001110101",
        "1011000101",
        "1111010",
        "001001",
        "00000000100",
    ];

    fn bits_of(code: u16, len: u8) -> String {
        (0..len)
            .map(|k| if code >> k & 1 == 1 { '1' } else { '0' })
            .collect()
    }

    #[test]
    fn codes_table_matches_appendix_a() {
        for (sym, want) in APPENDIX_A.iter().enumerate() {
            let (c, l) = CODES[sym];
            assert_eq!(bits_of(c, l), *want, "symbol {sym}");
        }
    }

    /// Rebuild the netchan tree exactly like `MSG_initHuffman` (addRef i, msg_hData[i] times)
    /// with the faithful adaptive port and compare every code with Appendix A.
    #[test]
    fn add_ref_port_reproduces_appendix_a() {
        let mut t = AdaptiveTree::new();
        for (i, &n) in MSG_HDATA.iter().enumerate() {
            for _ in 0..n {
                t.add_ref(i as u8);
            }
        }
        for (sym, want) in APPENDIX_A.iter().enumerate() {
            let got: String = t
                .code(sym as u16)
                .unwrap_or_default()
                .into_iter()
                .map(|b| if b { '1' } else { '0' })
                .collect();
            assert_eq!(got, *want, "symbol {sym}");
        }
    }

    #[test]
    fn code_length_histogram_and_kraft() {
        let mut hist = [0u32; 12];
        let mut kraft = 0u32; // in units of 2^-11
        for &(_, l) in CODES.iter().take(256) {
            hist[l as usize] += 1;
            kraft += 1 << (11 - l);
        }
        let want: [(usize, u32); 8] = [
            (2, 1),
            (5, 2),
            (6, 7),
            (7, 24),
            (8, 43),
            (9, 49),
            (10, 129),
            (11, 1),
        ];
        for (l, n) in want {
            assert_eq!(hist[l], n, "length {l}");
        }
        assert_eq!(hist.iter().sum::<u32>(), 256);
        assert_eq!(kraft, 2047);
        assert_eq!(CODES[NYT as usize], (0b00100000000, 11));
        // Spot values from §4.2.
        assert_eq!(bits_of(CODES[0].0, CODES[0].1), "01");
        assert_eq!(bits_of(CODES[8].0, CODES[8].1), "10101");
        assert_eq!(bits_of(CODES[5].0, CODES[5].1), "10001000");
        assert_eq!(bits_of(CODES[255].0, CODES[255].1), "001001");
    }

    #[test]
    fn lut_decodes_every_symbol_with_any_suffix() {
        for sym in 0..=256u16 {
            let (code, len) = CODES[sym as usize];
            for suffix in [0u32, 0x7ff, 0x555, 0x2aa] {
                let w = u32::from(code) | (suffix << len);
                assert_eq!(decode_window(w), (sym, u32::from(len)));
            }
        }
    }
}
