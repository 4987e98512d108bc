//! The `quakecap` command: parse arguments, run, map the outcome to an exit code
//! (0 ok, 2 unusable input, 1 other failure).
use clap::Parser;

fn main() {
    huge_pages::start_with_huge_pages();
    let cli = quakecap_cli::Cli::parse();
    std::process::exit(quakecap_cli::run(cli));
}

#[path = "cli/mod.rs"]
mod quakecap_cli;

/// The heap on transparent huge pages (issue 16). With a thousand connections live, their
/// decode state (about 80 MB) is spread over some 20,000 small pages and most datagrams miss
/// the TLB on the way to their connection's state; on 2 MB pages the same decoding took 12 %
/// less CPU time (980 live connections, one thread: medians of three sets of 10–12 paired
/// runs; unchanged at 19 live and for `report`), for about 3 MB more peak RSS. glibc (2.35
/// and later) puts its heap on such pages when asked by the tunable `glibc.malloc.hugetlb=1`,
/// and reads tunables only when a process starts: so the process starts again, once, with it
/// set. An environment that sets `GLIBC_TUNABLES` itself is left as it is (that is also how
/// to opt out: `GLIBC_TUNABLES=` runs without), and if the new start fails the process goes
/// on as it is. Older glibc ignores the tunable; the kernel's THP setting `never` ignores the
/// advice.
///
/// The same start caps glibc's malloc arenas at half the cores (at least two; glibc's own cap
/// is eight per core, an arena per thread here). Each arena holds its own partly used huge
/// pages and free lists: at 980 live on two decode threads (three threads, three arenas) the
/// peak RSS was 94.8–98.0 MB (median 97.5) against the 100 MB goal, with two arenas
/// 93.2–96.1 MB (median 94.3), in the same CPU and wall time (nine alternated runs each;
/// 2 cores). The decode threads allocate little per datagram (message buffers go back to
/// the reader), so sharing an arena's lock costs them little. (glibc 2.36 applies the arena
/// cap but leaves it out of the `GLIBC_TUNABLES` the process then shows.)
mod huge_pages {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    pub fn start_with_huge_pages() {
        use std::os::unix::process::CommandExt;
        const VAR: &str = "GLIBC_TUNABLES";
        if std::env::var_os(VAR).is_some() {
            return;
        }
        let Ok(exe) = std::env::current_exe() else {
            return;
        };
        let mut args = std::env::args_os();
        let arg0 = args.next().unwrap_or_else(|| exe.clone().into_os_string());
        // Returns only when the new start failed: nothing was read or written yet, so this
        // process simply goes on.
        let _ = std::process::Command::new(exe)
            .arg0(arg0)
            .args(args)
            .env(VAR, tunables())
            .exec();
    }

    /// Huge pages, and the arenas capped (see above).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn tunables() -> String {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        format!(
            "glibc.malloc.hugetlb=1:glibc.malloc.arena_max={}",
            (cores / 2).max(2)
        )
    }

    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    pub fn start_with_huge_pages() {}
}
