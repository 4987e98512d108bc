//! Analyses computed over the decoded stream, written once for both games.
pub(crate) mod burst;
pub mod cheats;
pub mod net;
