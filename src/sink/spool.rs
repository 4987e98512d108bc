//! The report's spool: the bulky parts of each finished connection's network quality (its
//! per-interval series and its lagometer strip, about 40 KB) written to a scratch file as
//! the connection ends and read back one connection at a time when the HTML is written.
//! Without it `quakecap report` held every connection's series and strip to the end of
//! the input: 95 MB for the 1,913 connections of the benchmark capture, growing with every
//! connection a long capture holds. What stays in memory is each report's head (names,
//! summary figures, lag events).
//!
//! The encoding is this process's own (fixed-width little-endian fields; an option as a
//! presence bit and a value): the file lives only as long as the run. Values come back bit
//! for bit, so the report is the same as one rendered from memory.
use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::analysis::net::report::{Both, Interval, NetQuality};
use crate::analysis::net::strip::{Col, Strip};

/// Where a report's series and strip are in the spool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spilled {
    offset: u64,
    series: u32,
    /// Strip columns; `None`: the report had no strip.
    cols: Option<u32>,
    per_col: u32,
}

impl Spilled {
    fn len(&self) -> usize {
        self.series as usize * INTERVAL_BYTES + self.cols.unwrap_or(0) as usize * COL_BYTES
    }
}

/// Bytes of one encoded [`Interval`]: a presence mask, nine 8-byte and four 4-byte fields.
const INTERVAL_BYTES: usize = 2 + 8 * 9 + 4 * 4;
/// Bytes of one encoded [`Col`].
const COL_BYTES: usize = 8 * 4 + 4 * (4 + crate::analysis::net::acc::RTT_METHODS);

/// The scratch file, unlinked at once where the system allows (nothing is left behind
/// when the run is killed), else removed when dropped.
pub struct Spool {
    out: BufWriter<File>,
    /// The file's name while it still has one.
    path: Option<PathBuf>,
    /// Bytes written so far (where the next report goes).
    end: u64,
    buf: Vec<u8>,
}

impl Spool {
    /// A spool beside the report `dest` when that is a regular file or does not exist yet
    /// (the report's own file system has room for its data), else in the temporary
    /// directory.
    pub fn create_for(dest: &Path) -> io::Result<Spool> {
        let beside = std::fs::symlink_metadata(dest).map_or(true, |m| m.is_file());
        let dir = match dest.parent() {
            Some(p) if beside && !p.as_os_str().is_empty() => p.to_path_buf(),
            _ if beside => PathBuf::from("."),
            _ => std::env::temp_dir(),
        };
        Self::create_in(&dir).or_else(|_| Self::create_in(&std::env::temp_dir()))
    }

    fn create_in(dir: &Path) -> io::Result<Spool> {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = dir.join(format!(".quakecap-report.{}-{n}.spool", std::process::id()));
        let file = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        // On Unix the open file outlives its name.
        let path = if cfg!(unix) && std::fs::remove_file(&path).is_ok() {
            None
        } else {
            Some(path)
        };
        Ok(Spool {
            out: BufWriter::with_capacity(1 << 16, file),
            path,
            end: 0,
            buf: Vec::new(),
        })
    }

    /// Write `q`'s series and strip to the spool and take them out of `q`. On an error `q`
    /// keeps them (and the spool should not be used further: part of the record may have
    /// been written).
    pub fn put(&mut self, q: &mut NetQuality) -> io::Result<Spilled> {
        self.buf.clear();
        for i in &q.series {
            put_interval(&mut self.buf, i);
        }
        if let Some(s) = &q.strip {
            for c in &s.cols {
                put_col(&mut self.buf, c);
            }
        }
        let s = Spilled {
            offset: self.end,
            series: u32::try_from(q.series.len()).map_err(|_| too_long())?,
            cols: match &q.strip {
                Some(s) => Some(u32::try_from(s.cols.len()).map_err(|_| too_long())?),
                None => None,
            },
            per_col: q.strip.as_ref().map_or(0, |s| s.per_col),
        };
        self.out.write_all(&self.buf)?;
        self.end += self.buf.len() as u64;
        q.series = Vec::new();
        q.strip = None;
        Ok(s)
    }

    /// Put back into `q` the series and strip [`Spool::put`] took out.
    pub fn restore(&mut self, s: &Spilled, q: &mut NetQuality) -> io::Result<()> {
        self.out.flush()?;
        let f = self.out.get_mut();
        f.seek(SeekFrom::Start(s.offset))?;
        self.buf.resize(s.len(), 0);
        f.read_exact(&mut self.buf)?;
        // Back to the end for the next report.
        f.seek(SeekFrom::Start(self.end))?;
        let (series, cols) = self.buf.split_at(s.series as usize * INTERVAL_BYTES);
        q.series = series
            .chunks_exact(INTERVAL_BYTES)
            .map(get_interval)
            .collect();
        q.strip = s.cols.map(|_| {
            Box::new(Strip {
                cols: cols.chunks_exact(COL_BYTES).map(get_col).collect(),
                per_col: s.per_col,
            })
        });
        Ok(())
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        if let Some(p) = &self.path {
            // Best effort: a leftover hidden scratch file is harmless.
            let _ = std::fs::remove_file(p);
        }
    }
}

fn too_long() -> io::Error {
    io::Error::other("a series too long to spool")
}

/// Options of an interval in mask order.
fn interval_options(i: &Interval) -> [Option<f64>; 6] {
    [
        i.ping,
        i.ping_max,
        i.loss.c2s,
        i.loss.s2c,
        i.jitter.c2s,
        i.jitter.s2c,
    ]
}

fn put_interval(b: &mut Vec<u8>, i: &Interval) {
    let opts = interval_options(i);
    let ints = [i.packets.c2s, i.packets.s2c];
    let longs = [i.bytes.c2s, i.bytes.s2c];
    let mut mask = 0u16;
    for (k, o) in opts.iter().enumerate() {
        mask |= u16::from(o.is_some()) << k;
    }
    for (k, o) in ints.iter().enumerate() {
        mask |= u16::from(o.is_some()) << (6 + k);
    }
    for (k, o) in longs.iter().enumerate() {
        mask |= u16::from(o.is_some()) << (8 + k);
    }
    b.extend_from_slice(&mask.to_le_bytes());
    b.extend_from_slice(&i.start.to_le_bytes());
    for o in opts {
        b.extend_from_slice(&o.unwrap_or(0.0).to_le_bytes());
    }
    for o in longs {
        b.extend_from_slice(&o.unwrap_or(0).to_le_bytes());
    }
    for o in ints {
        b.extend_from_slice(&o.unwrap_or(0).to_le_bytes());
    }
    b.extend_from_slice(&i.snapshots.to_le_bytes());
    b.extend_from_slice(&i.rate_delayed.to_le_bytes());
}

/// Little-endian fields read in order from a record.
struct Fields<'a>(&'a [u8]);

impl Fields<'_> {
    /// The next `N` bytes (zeros past the record's end, which the fixed record sizes rule
    /// out: `record_sizes_are_what_is_written`).
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let Some((a, rest)) = self.0.split_at_checked(N) else {
            return [0; N];
        };
        self.0 = rest;
        a.try_into().unwrap_or([0; N])
    }
    fn f64(&mut self) -> f64 {
        f64::from_le_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
    fn i64(&mut self) -> i64 {
        i64::from_le_bytes(self.take())
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    fn f32(&mut self) -> f32 {
        f32::from_le_bytes(self.take())
    }
}

/// `chunks_exact` hands records of exactly [`INTERVAL_BYTES`].
fn get_interval(rec: &[u8]) -> Interval {
    let mut f = Fields(rec);
    let mask = u16::from_le_bytes(f.take());
    let has = |k: u32| mask & (1 << k) != 0;
    let start = f.f64();
    let mut opts = [None; 6];
    for (k, o) in opts.iter_mut().enumerate() {
        let v = f.f64();
        *o = has(k as u32).then_some(v);
    }
    let longs = [f.u64(), f.u64()];
    let ints = [f.u32(), f.u32()];
    let [ping, ping_max, loss_c2s, loss_s2c, jitter_c2s, jitter_s2c] = opts;
    Interval {
        start,
        ping,
        ping_max,
        loss: Both {
            c2s: loss_c2s,
            s2c: loss_s2c,
        },
        packets: Both {
            c2s: has(6).then_some(ints[0]),
            s2c: has(7).then_some(ints[1]),
        },
        bytes: Both {
            c2s: has(8).then_some(longs[0]),
            s2c: has(9).then_some(longs[1]),
        },
        snapshots: f.u32(),
        rate_delayed: f.u32(),
        jitter: Both {
            c2s: jitter_c2s,
            s2c: jitter_s2c,
        },
    }
}

fn put_col(b: &mut Vec<u8>, c: &Col) {
    b.extend_from_slice(&c.start.to_le_bytes());
    b.extend_from_slice(&c.end.to_le_bytes());
    b.extend_from_slice(&c.seq_first.to_le_bytes());
    b.extend_from_slice(&c.seq_last.to_le_bytes());
    b.extend_from_slice(&c.packets.to_le_bytes());
    for l in c.latency {
        b.extend_from_slice(&l.to_le_bytes());
    }
    b.extend_from_slice(&c.rate_delayed.to_le_bytes());
    b.extend_from_slice(&c.lost_gap.to_le_bytes());
    b.extend_from_slice(&c.lost_ack.to_le_bytes());
}

fn get_col(rec: &[u8]) -> Col {
    let mut f = Fields(rec);
    Col {
        start: f.f64(),
        end: f.f64(),
        seq_first: f.i64(),
        seq_last: f.i64(),
        packets: f.u32(),
        latency: std::array::from_fn(|_| f.f32()),
        rate_delayed: f.u32(),
        lost_gap: f.u32(),
        lost_ack: f.u32(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_sizes_are_what_is_written() {
        let mut b = Vec::new();
        put_interval(&mut b, &interval(0));
        assert_eq!(b.len(), INTERVAL_BYTES);
        b.clear();
        put_col(&mut b, &col(0));
        assert_eq!(b.len(), COL_BYTES);
    }

    /// An interval whose options are present or not by the bits of `k`.
    fn interval(k: u32) -> Interval {
        let on = |bit: u32| k & (1 << bit) != 0;
        let v = f64::from(k);
        Interval {
            start: 1.7e9 + v * 0.25,
            ping: on(0).then_some(v + 0.1),
            ping_max: on(1).then_some(-v - 0.2),
            loss: Both {
                c2s: on(2).then_some(1.0 / (v + 3.0)),
                s2c: on(3).then_some(f64::MIN_POSITIVE),
            },
            packets: Both {
                c2s: on(4).then_some(k * 7),
                s2c: on(5).then_some(u32::MAX - k),
            },
            bytes: Both {
                c2s: on(6).then_some(u64::MAX - u64::from(k)),
                s2c: on(7).then_some(u64::from(k) << 33),
            },
            snapshots: k ^ 0x55,
            rate_delayed: k / 3,
            jitter: Both {
                c2s: on(8).then_some(v * 1e-9),
                s2c: on(9).then_some(f64::INFINITY),
            },
        }
    }

    fn col(k: u32) -> Col {
        Col {
            start: 1.7e9 + f64::from(k) / 7.0,
            end: 1.7e9 + f64::from(k) / 3.0,
            seq_first: -i64::from(k),
            seq_last: i64::MAX - i64::from(k),
            packets: k + 1,
            latency: [-1.0, f32::from(k as u16) * 0.5, f32::MAX, 3.0],
            rate_delayed: k % 5,
            lost_gap: k * 3,
            lost_ack: u32::MAX,
        }
    }

    fn quality(series: Vec<Interval>, strip: Option<Box<Strip>>) -> NetQuality {
        let acc = crate::analysis::net::acc::FlowAcc::new(1.7e9);
        let f = crate::flow::FlowSummary {
            id: 9,
            game: "quake3",
            ..Default::default()
        };
        let mut q = crate::analysis::net::report::build(&acc, &f, 1.0);
        q.series = series;
        q.strip = strip;
        q
    }

    /// Every option present or absent in every combination, extreme values, reports with
    /// and without a strip, interleaved: each comes back equal to what was put.
    #[test]
    fn reports_come_back_as_they_were_put() {
        let dir = std::env::temp_dir();
        let mut sp = Spool::create_for(&dir.join("quakecap-spool-test.html")).unwrap();
        let mut want = Vec::new();
        let mut put = Vec::new();
        for r in 0..6u32 {
            let series: Vec<Interval> = (0..1024).map(|k| interval(k + r)).collect();
            let strip = (r % 3 != 2).then(|| {
                Box::new(Strip {
                    cols: (0..r * 100).map(col).collect(),
                    per_col: 1 << r,
                })
            });
            let mut q = quality(series, strip);
            want.push(q.clone());
            let s = sp.put(&mut q).unwrap();
            assert!(q.series.is_empty() && q.strip.is_none(), "taken out");
            put.push((s, q));
        }
        for ((s, mut q), w) in put.into_iter().rev().zip(want.iter().rev()) {
            sp.restore(&s, &mut q).unwrap();
            assert_eq!(&q, w);
        }
    }
}
