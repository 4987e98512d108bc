//! Bounds-checked fixed-width reads from untrusted bytes, in either byte order.
//! Every accessor returns `None` past the end instead of panicking.

pub(crate) fn u16_at(b: &[u8], pos: usize, big_endian: bool) -> Option<u16> {
    let a: [u8; 2] = b.get(pos..pos.checked_add(2)?)?.try_into().ok()?;
    Some(if big_endian {
        u16::from_be_bytes(a)
    } else {
        u16::from_le_bytes(a)
    })
}

pub(crate) fn u32_at(b: &[u8], pos: usize, big_endian: bool) -> Option<u32> {
    let a: [u8; 4] = b.get(pos..pos.checked_add(4)?)?.try_into().ok()?;
    Some(if big_endian {
        u32::from_be_bytes(a)
    } else {
        u32::from_le_bytes(a)
    })
}

pub(crate) fn u64_at(b: &[u8], pos: usize, big_endian: bool) -> Option<u64> {
    let a: [u8; 8] = b.get(pos..pos.checked_add(8)?)?.try_into().ok()?;
    Some(if big_endian {
        u64::from_be_bytes(a)
    } else {
        u64::from_le_bytes(a)
    })
}

/// Round `n` up to the next multiple of 4 (pcapng pads every field to 32 bits).
pub(crate) fn pad4(n: usize) -> usize {
    n.saturating_add(3) & !3
}
