//! Analyses computed over the decoded stream, written once for both games.
pub mod cheats;
pub mod net;
