//! Input checks and exit statuses shared by the commands: a run that did nothing must say so
//! and exit non-zero, never print nothing and exit 0.
use std::path::Path;

use quakecap::pipeline::InputError;

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
