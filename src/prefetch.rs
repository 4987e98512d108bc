//! Cache prefetch hints (issue 16). With a thousand connections interleaved, a datagram's
//! connection state is evicted between two of its packets, and the decode waits on DRAM for
//! it; the pipeline knows the next datagrams' connections before it decodes this one, so it
//! asks for their state early and the loads overlap the decoding.
//!
//! A prefetch is only a hint: it never faults, whatever the address, and changes no value.
//! Callers still pass only addresses of live objects. On other architectures these are
//! no-ops.

/// Cache line size assumed when prefetching a range.
const LINE: usize = 64;

/// Ask for the line holding `p`, to be read soon.
#[inline(always)]
pub fn read<T: ?Sized>(p: *const T) {
    hint::<false>(p.cast());
}

/// Ask for the line holding `p`, to be written soon (in exclusive state where the CPU has
/// `prefetchw`; elsewhere a read prefetch).
#[inline(always)]
pub fn write<T: ?Sized>(p: *const T) {
    hint::<true>(p.cast());
}

/// Ask for every line of `bytes` bytes from `p` (at most `max_lines` lines).
#[inline(always)]
pub fn range<const WRITE: bool>(p: *const u8, bytes: usize, max_lines: usize) {
    let skew = p as usize % LINE;
    let lines = (skew + bytes).div_ceil(LINE).min(max_lines);
    // wrapping: only addresses are formed, nothing is read through them.
    let first = p.wrapping_sub(skew);
    for k in 0..lines {
        hint::<WRITE>(first.wrapping_add(k * LINE));
    }
}

/// Ask for every line of `*r` (at most `max_lines`).
#[inline(always)]
pub fn object<const WRITE: bool, T>(r: &T, max_lines: usize) {
    range::<WRITE>((r as *const T).cast(), std::mem::size_of::<T>(), max_lines);
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[inline(always)]
fn hint<const WRITE: bool>(p: *const u8) {
    use core::arch::x86_64::{_mm_prefetch, _MM_HINT_ET0, _MM_HINT_T0};
    // SAFETY: a prefetch instruction reads no memory the program sees and cannot fault on
    // any address (an unmapped one is dropped); SSE, which `_mm_prefetch` needs, is part of
    // the x86_64 baseline.
    unsafe {
        if WRITE {
            _mm_prefetch::<_MM_HINT_ET0>(p.cast());
        } else {
            _mm_prefetch::<_MM_HINT_T0>(p.cast());
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn hint<const WRITE: bool>(_p: *const u8) {}
