//! The `quakecap` command: parse arguments, run, map the outcome to an exit code
//! (0 ok, 2 unusable input, 1 other failure).
//!
//! `unsafe` is refused here as in the library, but for three named uses, each allowed where
//! it is and justified there: the heap's huge-page setup (`huge_pages`), the open-file
//! limit raised for `demo` (`cli/demo.rs`) and the local time zone's offset
//! (`cli/timefmt.rs`).
#![deny(unsafe_code)]
use clap::Parser;

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[global_allocator]
static HEAP: huge_pages::Heap = huge_pages::Heap;

fn main() {
    huge_pages::set_up();
    let cli = quakecap_cli::Cli::parse();
    std::process::exit(quakecap_cli::run(cli));
}

#[path = "cli/mod.rs"]
mod quakecap_cli;

/// The heap on transparent huge pages, set up in the process itself (issue 16's gain without a
/// second start). With a thousand connections live, their decode state (about 80 MB) is
/// spread over some 20,000 small pages and most datagrams miss the TLB on the way to their
/// connection's state; on 2 MB pages the same decoding takes about 12 % less CPU time
/// (`docs/performance.md`). The kernel here gives huge pages only to memory advised with
/// `madvise(MADV_HUGEPAGE)` (THP mode `madvise`), and glibc advises its heap only when a
/// tunable is set before the process starts. So, at the start of `main`:
///
/// - the small allocations (the decode state is made of them) are kept in glibc's main heap:
///   one arena (`M_ARENA_MAX`; the decode threads allocate little per datagram, their message
///   buffers go back to the reader); blocks of 128 KB and more keep their own mappings;
/// - the heap grows in steps of [`STEP`] (`M_TOP_PAD`), so that it grows rarely, and each
///   step is advised before most of it is touched (a 2 MB region whose first page was
///   touched before the advice stays on small pages);
/// - the global allocator ([`Heap`]) passes every call to the system's and, when an
///   allocation lies beyond the part of the heap already advised, advises the heap up to its
///   current end (the `sbrk(0)` it reads is a variable in glibc, not a system call). The fast
///   path is one comparison.
///
/// `QUAKECAP_SMALL_PAGES=1` leaves the heap as glibc makes it. Where the kernel's THP setting
/// is `never`, or off Linux with glibc, the advice does nothing.
mod huge_pages {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    pub use imp::*;

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[allow(unsafe_code)] // the allocator and the libc calls below: see the module's doc
    mod imp {
        use std::alloc::{GlobalAlloc, Layout, System};
        use std::sync::atomic::{AtomicUsize, Ordering};

        /// How much the heap grows at a time, and keeps free at its top after a trim: 16 MB.
        /// Smaller steps leave more of the heap on small pages (4 MB: 14 of about 85 MB on
        /// huge pages at 980 live, 8 MB: 51, 16 MB: 68, 32 MB: 82); larger ones keep more free
        /// memory resident (a flood of 45,000 connects, `tests/floods.rs`: 135 MB peak at
        /// 4–16 MB, 148 MB at 32 MB).
        const STEP: usize = 16 << 20;

        /// Where the advised part of the main heap begins and ends (0: not set up).
        static BEGIN: AtomicUsize = AtomicUsize::new(0);
        static END: AtomicUsize = AtomicUsize::new(0);

        /// The system's allocator, advising the main heap's growth (see the module's doc).
        pub struct Heap;

        /// Sets glibc's heap up as the module's doc says, unless `QUAKECAP_SMALL_PAGES` is
        /// set to anything but `0`. Call first in `main`.
        pub fn set_up() {
            if std::env::var_os("QUAKECAP_SMALL_PAGES").is_some_and(|v| v != "0") {
                return;
            }
            let step = STEP as libc::c_int;
            // SAFETY: mallopt and sbrk(0) only set and read glibc's own settings; no memory
            // is touched.
            unsafe {
                libc::mallopt(libc::M_ARENA_MAX, 1);
                libc::mallopt(libc::M_TOP_PAD, step);
                let now = libc::sbrk(0) as usize;
                BEGIN.store(now, Ordering::Relaxed);
                END.store(now, Ordering::Relaxed);
            }
        }

        /// Advises the heap from [`BEGIN`] to its current end, when `at` lies in its new part.
        #[cold]
        fn grown(at: usize) {
            let begin = BEGIN.load(Ordering::Relaxed);
            if begin == 0 || at < begin {
                return; // not set up, or a separate mapping below the heap
            }
            // SAFETY: sbrk(0) reads glibc's current break; madvise only advises the kernel
            // about pages of the heap, which stay mapped and keep their contents.
            unsafe {
                let end = libc::sbrk(0) as usize;
                if at >= end {
                    return; // a separate mapping above the heap
                }
                let page = 4096;
                let from = begin & !(page - 1);
                libc::madvise(from as *mut libc::c_void, end - from, libc::MADV_HUGEPAGE);
                END.fetch_max(end, Ordering::Relaxed);
            }
        }

        #[inline(always)]
        fn seen(p: *mut u8) -> *mut u8 {
            if p as usize >= END.load(Ordering::Relaxed) {
                grown(p as usize);
            }
            p
        }

        // SAFETY: every call is the system allocator's own, with the same arguments.
        unsafe impl GlobalAlloc for Heap {
            unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
                seen(unsafe { System.alloc(layout) })
            }
            unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
                seen(unsafe { System.alloc_zeroed(layout) })
            }
            unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
                unsafe { System.dealloc(ptr, layout) }
            }
            unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
                seen(unsafe { System.realloc(ptr, layout, new_size) })
            }
        }
    }

    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    pub fn set_up() {}
}
