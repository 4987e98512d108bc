//! Writes a real capture with a flood of spoofed datagrams merged in (see `quakecap::flood`).
//!
//! `cargo run --release --example mkflood -- BASE.pcapng KIND COUNT OUT.pcapng`
//! KIND: q3-getinfo, q3-connect, qw-status, qw-connect, client-netchan, server-netchan, ip-fragments,
//! random-udp.
use anyhow::{bail, Context, Result};
use quakecap::flood::{merge_flood, FloodKind};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [base, kind, count, out] = args.as_slice() else {
        bail!("usage: mkflood BASE.pcapng KIND COUNT OUT.pcapng");
    };
    let kind = FloodKind::from_name(kind).context("unknown flood kind")?;
    let bytes = std::fs::read(base).with_context(|| format!("reading {base}"))?;
    let flood = merge_flood(&bytes, kind, count.parse()?, 0x5eed)?;
    std::fs::write(out, flood).with_context(|| format!("writing {out}"))?;
    Ok(())
}
