//! The small vocabulary every layer may use: the direction of a packet in a connection and
//! the game-neutral network sample each game's decoder fills. It imports nothing of the
//! crate, so every layer can depend on it without closing a cycle.
use serde::Serialize;

pub mod sample;

/// Direction of a packet inside a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Dir {
    #[serde(rename = "c2s")]
    C2s,
    #[serde(rename = "s2c")]
    S2c,
}

impl Dir {
    pub fn as_str(self) -> &'static str {
        match self {
            Dir::C2s => "c2s",
            Dir::S2c => "s2c",
        }
    }
}
