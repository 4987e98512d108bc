//! `quakecap diff`: semantic comparison of two captures and/or demos of the same session.
//!
//! Each input is decoded on its own thread into [`item::Item`]s (one per accepted netchan
//! message or demo record, reduced to what the game means: commands, gamestate, absolute
//! snapshot state, usercmds) and sent over a bounded channel. `align::Aligner` pairs the
//! items of both sides by connection (player name and occurrence), direction and netchan
//! sequence, compares pairs as they arrive and decides that a message is missing once the
//! other side has passed its sequence. Memory is bounded by the alignment window, not by the
//! inputs' sizes.
//!
//! What is noise (ignored unless `strict`): capture timestamps, packet boundaries and
//! fragmentation, netchan headers, Huffman and delta encoding (snapshots are compared as the
//! absolute state they produce), the order of ops within a message.
pub mod found;
pub mod item;
pub mod q3;
pub mod qw;
internal_mod!(align, digest);

use std::path::Path;
use std::sync::mpsc;

use serde::Serialize;

use crate::flow::Dir;
use crate::pipeline::InputError;

/// A decode error as `diff` compares it: its kind, text and bit, without the position in
/// the input (frame, record, flow), which differs between the sides by nature.
pub fn error_text(e: &crate::error::Error) -> String {
    let kind = serde_json::to_value(e.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    match (e.pos.bit, e.pos.byte) {
        (Some(bit), _) => format!("{kind}: {} at bit {bit}", e.message),
        (None, Some(byte)) => format!("{kind}: {} at byte {byte}", e.message),
        _ => format!("{kind}: {}", e.message),
    }
}

/// What `diff` compares and how much it keeps.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Also compare encoding details: op order, delta bases, acknowledgements, downloads.
    pub strict: bool,
    /// Unmatched messages held per side before the oldest are decided on.
    pub window: usize,
    /// Differences kept in the outcome (all are counted).
    pub keep: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            strict: false,
            window: 4096,
            keep: 10_000,
        }
    }
}

/// Which input something belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The first input (`quakecap diff A B`).
    A,
    /// The second input.
    B,
}

impl Side {
    /// The other input: B for A, A for B.
    pub fn other(self) -> Side {
        match self {
            Side::A => Side::B,
            Side::B => Side::A,
        }
    }
}

/// "missing": present on one side only (`side` is the side that lacks it); "changed":
/// present on both with different values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Present on one side only; [`Difference::side`] is the side that lacks it.
    Missing,
    /// Present on both sides with different values.
    Changed,
}

/// One difference between the inputs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    /// Whether something is missing on one side or changed between the two.
    pub kind: Kind,
    /// For `missing`: the side that lacks it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub side: Option<Side>,
    /// The connection (player name and occurrence, e.g. `UnnamedPlayer#1`).
    pub conn: String,
    /// Direction of the message: client to server or server to client.
    pub dir: Dir,
    /// Netchan sequence (server message number for s2c).
    pub seq: i64,
    /// Quake 3: snapshot serverTime (ms) at that message; QuakeWorld: none.
    pub game_time: Option<i64>,
    /// What differs: "message", "snapshot", "configstring 5", "entity 12 pos.trBase\[0\]", ...
    pub what: String,
    /// The value in input A (a whole message: its ops' names); `None` where A lacks it.
    pub a: Option<serde_json::Value>,
    /// The value in input B; `None` where B lacks it.
    pub b: Option<serde_json::Value>,
}

/// The result of a comparison.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Outcome {
    /// No difference was found (`total` is 0).
    pub same: bool,
    /// The first differences ([`Options::keep`] at most), in the order they were found.
    pub differences: Vec<Difference>,
    /// Every difference found.
    pub total: u64,
    /// Message pairs compared.
    pub compared: u64,
    /// Messages of one side outside the span the other covers (not compared).
    pub uncovered: u64,
    /// Connections found on each side.
    pub connections: [Vec<String>; 2],
}

impl Outcome {
    pub(crate) fn push(&mut self, d: Difference, keep: usize) {
        self.total += 1;
        if self.differences.len() < keep {
            self.differences.push(d);
        }
    }
}

/// Why a comparison could not be made.
#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    /// An input cannot be read or decoded at all.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The comparison cannot be made: the inputs have no message in common, or a decoding
    /// thread failed; the text says why.
    #[error("{0}")]
    Unusable(String),
}

/// Items in flight per input between its decoding thread and the aligner.
const CHANNEL_DEPTH: usize = 1024;

/// Compare two inputs (captures or demo files of either game).
pub fn diff_files(a: &Path, b: &Path, opts: &Options) -> Result<Outcome, DiffError> {
    let (tx_a, rx_a) = mpsc::sync_channel(CHANNEL_DEPTH);
    let (tx_b, rx_b) = mpsc::sync_channel(CHANNEL_DEPTH);
    let strict = opts.strict;
    std::thread::scope(|s| {
        let ha = s.spawn(move || digest::run(a, strict, tx_a));
        let hb = s.spawn(move || digest::run(b, strict, tx_b));
        let mut aligner = align::Aligner::new(*opts);
        aligner.run(rx_a, rx_b);
        let ra = ha
            .join()
            .map_err(|_| DiffError::Unusable("decoder thread of A failed".into()))?;
        let rb = hb
            .join()
            .map_err(|_| DiffError::Unusable("decoder thread of B failed".into()))?;
        let (info_a, info_b) = (ra?, rb?);
        aligner.finish(info_a, info_b)
    })
}
