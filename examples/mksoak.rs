//! Builds a long capture for the follow soak (`scripts/soak_follow.sh` runs it): one stored
//! session replayed back to back until the capture spans `SECONDS` of capture time.
//!
//! `cargo run --release --example mksoak -- IN.pcapng OUT.pcapng SECONDS`
//!
//! Each replay keeps the addresses (every replay opens with the client's handshake, so it
//! is a new connection, and the one before has ended: its client left) and moves the times
//! on by the session's span plus a 10 s pause. Written with the project's own
//! [`PcapNgWriter`].
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use anyhow::{bail, Context, Result};
use quakecap::capture::{CaptureReader, PcapNgWriter};

/// Pause between two replays.
const GAP_NS: i64 = 10_000_000_000;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, out, seconds] = args.as_slice() else {
        bail!("usage: mksoak IN.pcapng OUT.pcapng SECONDS");
    };
    let seconds: f64 = seconds.parse().context("SECONDS")?;
    let mut frames = Vec::new();
    let mut r = CaptureReader::open(Path::new(input))?;
    while let Some(f) = r.next_frame()? {
        frames.push((f.link, f.ts_ns, f.data.to_vec(), f.orig_len));
    }
    let (Some(first), Some(last)) = (frames.first(), frames.last()) else {
        bail!("{input}: no packet");
    };
    let (t0, span) = (first.1, last.1 - first.1 + GAP_NS);
    let mut w = PcapNgWriter::new(BufWriter::new(File::create(out)?))?;
    let mut k = 0i64;
    while (k * span) as f64 / 1e9 < seconds {
        for (link, ts, data, orig) in &frames {
            w.write_packet(*link, ts + k * span - t0 + first.1, data, *orig)?;
        }
        k += 1;
    }
    w.finish()?;
    eprintln!("{out}: {k} replays, {:.0} s", (k * span) as f64 / 1e9);
    Ok(())
}
