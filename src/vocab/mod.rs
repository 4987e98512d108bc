//! The small vocabulary every layer may use: the direction of a packet in a connection, the
//! game-neutral network sample each game's decoder fills, and the wall clock's date and time. It imports nothing of the
//! crate, so every layer can depend on it without closing a cycle.
#![warn(missing_docs)]
use serde::Serialize;

pub mod civil;
pub mod info;
pub mod sample;

/// Direction of a packet inside a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Dir {
    /// Client to server.
    #[serde(rename = "c2s")]
    C2s,
    /// Server to client.
    #[serde(rename = "s2c")]
    S2c,
}

impl Dir {
    /// `"c2s"` or `"s2c"`, as JSON writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Dir::C2s => "c2s",
            Dir::S2c => "s2c",
        }
    }
}

/// How much of each decoded message the consumers read, from nothing (the flow table's
/// counters and errors alone) to every op: chosen from what the sinks and analyses ask for,
/// so that the decoders do no work nobody reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Detail {
    /// No message handed out: the flows' counters and errors only (`flows`, `net`).
    #[default]
    None,
    /// Each message with its frame and, for Quake 3 snapshots, the head only (time, delta
    /// base, flags, validity), no usercmd list (`check`).
    Headers,
    /// What the game events read: commands, gamestates and the obituary entities of each
    /// Quake 3 snapshot, no usercmd list (`events`, `report`).
    Events,
    /// Every op, with each Quake 3 snapshot as its whole frame (playerstate and entities)
    /// but without its per-field delta records, and the usercmds (`cheats`).
    Frames,
    /// Every op of every message (`decode`, `diff`, `export`).
    Full,
}

impl Detail {
    /// Messages are handed out at all.
    pub fn emits(self) -> bool {
        self != Detail::None
    }
}
