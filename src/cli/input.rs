//! Input checks and exit statuses shared by the commands: a run that did nothing must say so
//! and exit non-zero, never print nothing and exit 0.
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use quakecap::capture::CaptureReader;
use quakecap::pipeline::{self, InputError, Options, Report, Sink};

/// Everything asked for was done.
pub const EXIT_OK: i32 = 0;
/// Usage, environment or output problem (bad option value, output not writable).
pub const EXIT_FAILURE: i32 = 1;
/// An input could not be used (missing, empty, not a capture or demo).
pub const EXIT_INPUT: i32 = 2;
/// The inputs were read but the selection matched nothing (no such flow, no demo possible).
pub const EXIT_NOTHING: i32 = 3;

/// The run was valid but produced nothing of what was asked; exits [`EXIT_NOTHING`].
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NothingDone(pub String);

/// `QUAKECAP_THREADS` must be a positive integer when set: the library silently falls back to
/// the core count on anything else, which would hide a typo.
pub fn check_env() -> anyhow::Result<()> {
    match std::env::var("QUAKECAP_THREADS") {
        Ok(v) if v.trim().parse::<usize>().map_or(true, |n| n == 0) => anyhow::bail!(
            "QUAKECAP_THREADS={v:?}: not a positive number of threads (unset it to use every core)"
        ),
        _ => Ok(()),
    }
}

/// Refuse an empty file before a decoder turns it into an empty flow row.
pub fn check_not_empty(path: &Path) -> Result<(), InputError> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() && m.len() == 0 => Err(InputError::Unusable {
            file: path.display().to_string(),
            message: "empty file (0 bytes): not a capture or demo".into(),
        }),
        _ => Ok(()),
    }
}

/// Flows asked for with `--flow` that the input does not hold, as a message.
pub fn missing_flows(asked: &[u32], present: &[u32], file: &str) -> Option<String> {
    let missing: Vec<String> = asked
        .iter()
        .filter(|id| !present.contains(id))
        .map(ToString::to_string)
        .collect();
    if missing.is_empty() {
        return None;
    }
    let range = match (present.iter().min(), present.iter().max()) {
        (Some(a), Some(b)) => format!("its flows are {a}..{b}"),
        _ => "it holds no flow".into(),
    };
    Some(format!(
        "{file}: no flow {} ({range}; `quakecap flows {file}` lists them)",
        missing.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_flow_message_names_the_range() {
        let m = missing_flows(&[99], &[1, 2, 3], "c.pcap");
        assert_eq!(
            m.as_deref(),
            Some("c.pcap: no flow 99 (its flows are 1..3; `quakecap flows c.pcap` lists them)")
        );
        assert_eq!(missing_flows(&[2], &[1, 2], "c"), None);
    }
}

/// How an input is read, decided from its content (magic numbers), the name only breaking
/// the ties content cannot (a demo's protocol, `.mvd` against `.qwd`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Capture,
    Q3Demo,
    QwDemo,
    /// Not a capture, and no demo name: [`sniff_demo`] decides on the whole content.
    Unknown,
}

pub(crate) const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
pub(crate) const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// The name of an input as the pipeline sees it: compression suffixes dropped (the demo
/// decoders read the protocol and `.mvd` from the name), `-` shown as `<stdin>`.
pub fn logical_name(path: &Path) -> String {
    if path.as_os_str() == "-" {
        return "<stdin>".into();
    }
    let s = path.display().to_string();
    for suffix in [".gz", ".zst", ".zstd"] {
        if let Some(stem) = s.strip_suffix(suffix) {
            return stem.to_string();
        }
    }
    s
}

/// The input's bytes as a stream, gzip or zstd undone when the first bytes say so.
pub fn open_stream(path: &Path) -> Result<Box<dyn BufRead>, InputError> {
    let file = path.display().to_string();
    let io_err = |source| InputError::Io {
        file: file.clone(),
        source,
    };
    let raw: Box<dyn Read> = if path.as_os_str() == "-" {
        Box::new(io::stdin().lock())
    } else {
        Box::new(File::open(path).map_err(io_err)?)
    };
    let mut raw = BufReader::with_capacity(1 << 16, raw);
    let head = peek(&mut raw, 4).map_err(io_err)?;
    if head.starts_with(&GZIP_MAGIC) {
        // Multi-member: `cat a.gz b.gz` is one valid gzip stream.
        let gz = flate2::bufread::MultiGzDecoder::new(raw);
        return Ok(Box::new(BufReader::with_capacity(1 << 16, gz)));
    }
    if head.starts_with(&ZSTD_MAGIC) {
        let z = zstd::stream::read::Decoder::with_buffer(raw).map_err(io_err)?;
        return Ok(Box::new(BufReader::with_capacity(1 << 16, z)));
    }
    Ok(Box::new(raw))
}

/// Up to `n` bytes from the front of the stream, without consuming them (a pipe may hand
/// them over in several reads, so fill until there are enough or the stream ends).
fn peek(r: &mut BufReader<Box<dyn Read>>, n: usize) -> io::Result<Vec<u8>> {
    let buf = r.fill_buf()?;
    if buf.len() >= n {
        return Ok(buf[..n].to_vec());
    }
    // The buffer holds less than `n`: read the rest into a copy and chain it back.
    let mut head = buf.to_vec();
    let have = head.len();
    r.consume(have);
    let mut more = vec![0u8; n - have];
    let mut got = 0;
    while got < more.len() {
        match r.read(&mut more[got..])? {
            0 => break,
            k => got += k,
        }
    }
    head.extend_from_slice(&more[..got]);
    let rest = std::mem::replace(r.get_mut(), Box::new(io::empty()));
    *r = BufReader::with_capacity(1 << 16, Box::new(io::Cursor::new(head.clone()).chain(rest)));
    Ok(head)
}

/// What the first bytes (already decompressed) and the name say the input is.
pub fn detect(head: &[u8], name: &str) -> Format {
    let pcap = [
        [0xd4, 0xc3, 0xb2, 0xa1],
        [0xa1, 0xb2, 0xc3, 0xd4],
        [0x4d, 0x3c, 0xb2, 0xa1],
        [0xa1, 0xb2, 0x3c, 0x4d],
        [0x0a, 0x0d, 0x0d, 0x0a],
    ];
    if pcap.iter().any(|m| head.starts_with(m)) {
        return Format::Capture;
    }
    let lower = name.to_ascii_lowercase();
    if lower.ends_with(".qwd") || lower.ends_with(".mvd") {
        return Format::QwDemo;
    }
    if quakecap::pipeline::demo_protocol(Path::new(name)).is_some() {
        return Format::Q3Demo;
    }
    Format::Unknown
}

/// A demo of no telling name: a Quake 3 demo is a chain of records (sequence, length,
/// message) ending in `-1, -1`; when the first records chain up it is one, else a .qwd.
pub fn sniff_demo(data: &[u8]) -> Format {
    let word = |at: usize| {
        data.get(at..at + 4)
            .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let mut at = 0usize;
    for _ in 0..3 {
        match (word(at), word(at + 4)) {
            (Some(-1), Some(-1)) => return Format::Q3Demo,
            (Some(_), Some(len)) if (1..=16_384).contains(&len) => {
                at += 8 + len as usize;
                if at > data.len() {
                    return Format::QwDemo;
                }
                if at == data.len() {
                    return Format::Q3Demo;
                }
            }
            _ => {
                return if looks_like_qwd(data) {
                    Format::QwDemo
                } else {
                    Format::Unknown
                }
            }
        }
    }
    Format::Q3Demo
}

/// A .qwd starts with a block: a little-endian float time (non-negative, small), then a
/// command byte (0 user command, 1 server message, 2 set sequences).
fn looks_like_qwd(data: &[u8]) -> bool {
    let (Some(t), Some(&cmd)) = (data.get(..4), data.get(4)) else {
        return false;
    };
    let time = f32::from_le_bytes([t[0], t[1], t[2], t[3]]);
    time.is_finite() && (0.0..1_000_000.0).contains(&time) && cmd <= 2
}

/// Run any input: a capture (pcap/pcapng) or a demo, from a file or `-` (stdin), gzip or
/// zstd compressed or not. `progress` is told the bytes read (plain capture files only).
pub fn run(
    path: &Path,
    opts: &Options,
    sink: &mut dyn Sink,
    progress: &mut dyn FnMut(u64),
) -> Result<Report, InputError> {
    check_not_empty(path)?;
    let name = logical_name(path);
    let mut stream = open_stream(path)?;
    let io_err = |source| InputError::Io {
        file: name.clone(),
        source,
    };
    let head = stream.fill_buf().map_err(io_err)?.to_vec();
    let compressed = name != path.display().to_string();
    match detect(&head, &name) {
        // A plain file keeps the seekable path (and its progress bar).
        Format::Capture if !compressed && path.as_os_str() != "-" => {
            pipeline::run_capture(path, opts, sink, progress)
        }
        Format::Capture => {
            let reader = CaptureReader::new(stream).map_err(|source| InputError::Capture {
                file: name.clone(),
                source,
            })?;
            pipeline::run_reader(reader, name.clone(), opts, sink, progress)
        }
        format => {
            let mut data = Vec::new();
            stream.read_to_end(&mut data).map_err(io_err)?;
            run_demo_data(&data, format, name, opts, sink)
        }
    }
}

/// The Quake 3 demo protocols the decoders implement (Quake 3 1.29–1.32, ioquake3, and
/// Quake Live's 73, 90 and 91).
const SUPPORTED_Q3_DEMOS: [u32; 7] = [66, 67, 68, 71, 73, 90, 91];

/// A demo held in memory, of the format the name or the content gives.
fn run_demo_data(
    data: &[u8],
    format: Format,
    name: String,
    opts: &Options,
    sink: &mut dyn Sink,
) -> Result<Report, InputError> {
    if data.is_empty() {
        return Err(InputError::Unusable {
            file: name,
            message: "empty input (0 bytes): not a capture or demo".into(),
        });
    }
    let format = match format {
        Format::Unknown => sniff_demo(data),
        f => f,
    };
    match format {
        Format::QwDemo => pipeline::run_qw_demo_bytes(data, name, opts, sink),
        Format::Q3Demo => {
            let protocol = pipeline::demo_protocol_of(Path::new(&name), data);
            if let Some(p) = protocol.filter(|p| !SUPPORTED_Q3_DEMOS.contains(p)) {
                // Decoding another protocol's messages with these tables only yields thousands
                // of bit errors: say what it is instead.
                return Err(InputError::Unusable {
                    file: name,
                    message: format!(
                        "Quake 3 demo protocol {p} is not supported (quakecap reads protocols 66, 67, 68 and 71, and Quake Live's 73, 90 and 91)"
                    ),
                });
            }
            pipeline::run_q3_demo_bytes(data, name, protocol, opts, sink)
        }
        Format::Capture | Format::Unknown => Err(InputError::Unusable {
            file: name,
            message: format!(
                "not a capture (pcap, pcapng) or demo (.dm_NN, .qwd, .mvd); it starts with {}",
                data.iter()
                    .take(8)
                    .map(|b| format!("{b:02x}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        }),
    }
}

/// Files a directory holds that quakecap reads, by name (captures and demos, compressed or
/// not), in a stable order; anything else there (notes, logs, traces) is skipped.
pub fn expand(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let before = out.len();
            walk(p, &mut out).map_err(|source| InputError::Io {
                file: p.display().to_string(),
                source,
            })?;
            // A folder with nothing to read is a run that did nothing: said, and exit 3.
            if out.len() == before {
                return Err(NothingDone(format!(
                    "{}: no capture or demo file in this folder (.pcap, .pcapng, .cap, .dm_NN, \
                     .qwd, .mvd, or those names with .gz/.zst)",
                    p.display()
                ))
                .into());
            }
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<io::Result<_>>()?;
    entries.sort();
    for e in entries {
        if e.is_dir() {
            walk(&e, out)?;
        } else if is_input_name(&logical_name(&e)) {
            out.push(e);
        }
    }
    Ok(())
}

fn is_input_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    [".pcap", ".pcapng", ".cap", ".qwd", ".mvd"]
        .iter()
        .any(|e| lower.ends_with(e))
        || quakecap::pipeline::demo_protocol(Path::new(name)).is_some()
}
