//! `quakecap annotate`: the capture as pcapng with a comment on every game datagram, for
//! Wireshark (`frame.comment`).
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::Args;
use quakecap::capture::comment::CommentCopier;
use quakecap::pipeline::{Detail, InputError, Options};
use quakecap::sink::annotate::AnnotateSink;

use super::demo::PartFile;
use super::input::{self, NothingDone, EXIT_OK};

#[derive(Debug, Args)]
pub struct AnnotateArgs {
    /// A pcap or pcapng capture (gzip/zstd are undone).
    pub capture: PathBuf,
    /// The pcapng file to write (replaced only once it is complete).
    #[arg(short = 'o', long = "out", visible_alias = "output", required = true)]
    pub output: PathBuf,
    /// Comment only these flow ids (the other packets are copied as they are).
    #[arg(long = "flow")]
    pub flows: Vec<u32>,
}

/// Run the command.
pub fn run(args: &AnnotateArgs) -> Result<i32> {
    let path = &args.capture;
    if path.as_os_str() == "-" {
        bail!("annotate reads the capture twice (its packets are copied as the decode goes): give a file, not `-`");
    }
    if path.is_dir() {
        bail!(input_error(
            path,
            "a folder: annotate takes one capture file"
        ));
    }
    if same_file(path, &args.output) {
        bail!(
            "{}: the output would overwrite the capture it copies",
            args.output.display()
        );
    }
    input::check_not_empty(path)?;
    let stream = input::open_stream(path)?;
    let copier = match CommentCopier::new(
        stream,
        PartFile::create_for(args.output.clone(), "annotated capture")?,
    ) {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            return Err(input_error(
                path,
                "not a pcap or pcapng capture (annotate writes packets: a demo file has none)",
            )
            .into())
        }
        Err(e) => return Err(e.into()),
    };
    let opts = Options {
        detail: Detail::Full,
        samples: true,
        flows: (!args.flows.is_empty()).then(|| args.flows.clone()),
        ..Options::default()
    };
    let mut sink = AnnotateSink::new(copier);
    let report = super::run_input(path, &opts, &mut sink)?;
    super::warn(&report);
    if !args.flows.is_empty() {
        let present: Vec<u32> = report.flows.iter().map(|f| f.id).collect();
        let name = report.file.clone();
        if let Some(m) = input::missing_flows(&args.flows, &present, &name) {
            // The part file goes with the sink.
            return Err(NothingDone(m).into());
        }
    }
    let (late, unplaced, commented, events) =
        (sink.late, sink.unplaced, sink.commented, sink.events_placed);
    let (out, stats) = sink.finish_copy()?;
    let dest = out.commit()?;
    eprintln!(
        "quakecap: wrote {}: {} packets, {} game datagrams commented, {} game events",
        dest.display(),
        stats.packets,
        commented,
        events
    );
    if stats.uncommented > 0 {
        eprintln!(
            "quakecap: {} game datagrams in Simple Packet Blocks (or with unreadable options) could not take a comment",
            stats.uncommented
        );
    }
    if unplaced > 0 || late > 0 {
        eprintln!(
            "quakecap: {unplaced} game events (given at a connection's end) and {late} comments came after their packet was written: not in the output"
        );
    }
    if let Some((offset, why)) = stats.stopped {
        eprintln!("quakecap: the copy stopped at byte {offset} of the input: {why}");
    }
    Ok(EXIT_OK)
}

fn input_error(path: &Path, message: &str) -> InputError {
    InputError::Unusable {
        file: path.display().to_string(),
        message: message.into(),
    }
}

/// `a` and `b` name one existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}
