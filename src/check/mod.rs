//! `quakecap check`: conformance of every connection and demo. Most conditions are already
//! found by the decoders and recorded as errors on their flows and messages; this maps them
//! to named rules (`rules`) and adds the checks no decoder makes (`state`: serverTime
//! going back within a gamestate, deltas from frames too old, reliable acknowledgements
//! outside the window, a demo without its end marker) and [`qw`]: QuakeWorld's netchan rules.
pub mod junit;
pub mod qw;
internal_mod!(rules, state);

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::io;
use std::path::Path;

use serde::Serialize;

use crate::error::ErrorKind;
use crate::flow::{Dir, FlowSummary};
use crate::pipeline::{self, Event, InputError, Options, Sink};

/// One violation, with where it is (taken from the decoder's [`crate::error::Error`] and its
/// [`Position`](crate::error::Position) when a decoder found it).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Finding {
    /// The input's name, as given to [`check_input`] (the path for [`check_file`]).
    pub file: String,
    /// Flow id (demo files: 1); none for the input's own framing.
    pub flow: Option<u32>,
    /// Capture frame number (captures).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frame: Option<u64>,
    /// Record number (demo files).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<u64>,
    /// Byte offset of the record in a demo file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// Bit position inside the message, when the rule names one (QuakeWorld: 8 × byte).
    pub bit: Option<u64>,
    /// Direction of the message, when the finding is about one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dir: Option<Dir>,
    /// The rule broken: `layer.name` (see `rules::rule` and `state`).
    pub rule: &'static str,
    /// The decoder's error kind, when a decoder found it (the check's own rules have none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<ErrorKind>,
    /// What is wrong, without the position (the decoder's error message, or the rule's own).
    pub message: String,
}

/// The result of checking one input.
#[derive(Debug, Clone, Default)]
pub struct FileCheck {
    /// The input's name, as in its findings' [`Finding::file`].
    pub file: String,
    /// The input is a demo file (its framing rules applied), not a capture.
    pub demo: bool,
    /// Connections and demos checked: (flow id, label).
    pub units: Vec<(u32, String)>,
    /// Every finding, in file order (by frame or record, then bit; those with neither last).
    pub findings: Vec<Finding>,
}

/// The sink that watches every decoded message.
struct Checker {
    demo: bool,
    state: state::Watch,
    qw: qw::Watch,
    findings: Vec<Finding>,
    /// Decode errors seen on messages, per flow (so flow errors are not reported twice).
    message_errors: HashMap<u32, HashSet<rules::ErrorKey>>,
}

impl Sink for Checker {
    /// Findings go straight to `findings` with no file name (the file is named once, at the
    /// end): this runs for every message, its cost counts against `flows`'.
    fn event(&mut self, e: Event<'_>) -> io::Result<()> {
        let found = &mut self.findings;
        match e {
            Event::Q3(m) => {
                if let Some(err) = &m.error {
                    self.message_errors
                        .entry(m.flow)
                        .or_default()
                        .insert(rules::key(err));
                    found.push(rules::q3_message(m, err));
                }
                self.state.q3(m, found);
            }
            Event::Qw(m) => {
                if let Some(err) = &m.error {
                    self.message_errors
                        .entry(m.flow)
                        .or_default()
                        .insert(rules::key(err));
                    found.push(rules::qw_message(m, err, self.demo));
                }
                self.qw.qw(m, found);
            }
            _ => {}
        }
        Ok(())
    }
}

/// Check one capture or demo file.
pub fn check_file(path: &Path) -> Result<FileCheck, InputError> {
    let demo = pipeline::is_demo(path);
    check_input(&path.display().to_string(), demo, |opts, sink| {
        if demo {
            pipeline::run_demo(path, opts, sink)
        } else {
            pipeline::run_capture(path, opts, sink, &mut |_| {})
        }
    })
}

/// Check one input that `run` feeds to the checker with the options it is given (how the
/// command line reads stdin, compressed files and the like); `demo` says whether it is a
/// demo file (its framing rules apply).
pub fn check_input(
    file: &str,
    demo: bool,
    run: impl FnOnce(&Options, &mut dyn pipeline::Sink) -> Result<pipeline::Report, InputError>,
) -> Result<FileCheck, InputError> {
    let file = file.to_string();
    let mut c = Checker {
        demo,
        state: state::Watch::default(),
        qw: qw::Watch::default(),
        findings: Vec::new(),
        message_errors: HashMap::new(),
    };
    // The checks read snapshot heads, not their entities: the cost stays near `flows`'.
    let opts = Options {
        detail: crate::pipeline::Detail::Headers,
        ..Default::default()
    };
    let report = run(&opts, &mut c)?;
    let mut out = FileCheck {
        file: file.clone(),
        demo,
        ..Default::default()
    };
    let mut findings = std::mem::take(&mut c.findings);
    for f in findings.iter_mut().filter(|f| f.file.is_empty()) {
        f.file = file.clone();
    }
    findings.extend(rules::report(&file, &report, demo));
    for f in report
        .flows
        .iter()
        .filter(|f| f.kind == "connection" || f.kind == "demo")
    {
        out.units.push((f.id, unit_label(f)));
        let seen = c.message_errors.get(&f.id);
        findings.extend(rules::flow(&file, f, seen, &report.warnings, demo));
    }
    // In file order: by frame or record, then bit; findings of no position last.
    findings.sort_by_key(|f| (f.frame.or(f.record).unwrap_or(u64::MAX), f.bit.unwrap_or(0)));
    out.findings = findings;
    Ok(out)
}

fn unit_label(f: &FlowSummary) -> String {
    let who = f.name.clone().unwrap_or_else(|| "?".into());
    if f.kind == "demo" {
        format!("demo {}", f.server)
    } else {
        format!("flow {} {} {} ({who})", f.id, f.game, f.server)
    }
}

/// One finding as a line: `file: flow N frame F (or record R @offset) bit B: rule: message`.
pub fn line(f: &Finding) -> String {
    let mut s = f.file.clone();
    if let Some(v) = f.flow {
        let _ = write!(s, ": flow {v}");
    }
    if let Some(v) = f.frame {
        let _ = write!(s, " frame {v}");
    }
    if let Some(v) = f.record {
        let _ = write!(s, " record {v}");
    }
    if let Some(v) = f.offset {
        let _ = write!(s, " offset {v}");
    }
    if let Some(v) = f.bit {
        let _ = write!(s, " bit {v}");
    }
    let _ = write!(s, ": {}: {}", f.rule, f.message);
    s
}
