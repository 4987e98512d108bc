//! Game-agnostic flow bookkeeping: directions, per-direction counters and the summary row
//! every game fills in for `quakecap flows`.
use serde::Serialize;

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

/// A pair of counters, one per direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PerDir {
    pub c2s: u64,
    pub s2c: u64,
}

impl PerDir {
    pub fn get_mut(&mut self, d: Dir) -> &mut u64 {
        match d {
            Dir::C2s => &mut self.c2s,
            Dir::S2c => &mut self.s2c,
        }
    }
    pub fn get(&self, d: Dir) -> u64 {
        match d {
            Dir::C2s => self.c2s,
            Dir::S2c => self.s2c,
        }
    }
    pub fn total(&self) -> u64 {
        self.c2s + self.s2c
    }
}
