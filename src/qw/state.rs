//! What the server-stream decoder remembers between messages (spec §6.4, §10): extensions,
//! baselines, the 64-frame entity ring used as delta bases, MVD player states.
use super::cursor::DecodeError;
use super::entity::{EntityState, MAX_EDICTS};
use super::ext::Ext;
use super::playerinfo::PlayerInfo;
use super::svc::ServerData;

const UPDATE_BACKUP: usize = 64;

/// What the decoder must remember between server messages of one connection or demo.
#[derive(Debug, Clone)]
pub struct ServerState {
    /// Extension sets in force: those of the last `svc_serverdata` (each one replaces them).
    pub ext: Ext,
    /// Decoding an .mvd stream (no netchan; DF_ playerinfo; float time in serverdata).
    pub mvd: bool,
    /// The last `svc_serverdata` of the stream, once one was seen.
    pub serverdata: Option<ServerData>,
    /// Sequence of the s2c packet being decoded (entity frames are stored under it).
    pub seq: u32,
    pub(super) baselines: Vec<EntityState>,
    /// (sequence, entities, exact): `exact` is false for a frame decoded against a stand-in
    /// base because its real base was in a packet the capture does not have.
    pub(super) frames: Vec<Option<(u32, Vec<EntityState>, bool)>>,
    /// MVD: the last frame (deltas always come from the previous frame there).
    pub(super) last_frame: Vec<EntityState>,
    pub(super) mvd_players: [PlayerInfo; 32],
    /// Netchan streams: the latest playerinfo per slot (for state comparisons).
    pub players: [Option<PlayerInfo>; 32],
    /// A problem that did not stop the message (reported after the message is read).
    pub(super) soft_error: Option<DecodeError>,
    /// False for a connection seen mid-session until its first `svc_serverdata`: baselines
    /// and entity frames are unknown, so packet entities are read but given no values.
    pub baselines_known: bool,
}

impl ServerState {
    /// Fresh state for a netchan stream (`mvd` false) or an .mvd file (`mvd` true).
    pub fn new(mvd: bool) -> Self {
        ServerState {
            ext: Ext::default(),
            mvd,
            serverdata: None,
            seq: 0,
            baselines: vec![EntityState::default(); MAX_EDICTS],
            frames: vec![None; UPDATE_BACKUP],
            last_frame: Vec::new(),
            mvd_players: [PlayerInfo::default(); 32],
            players: [None; 32],
            soft_error: None,
            baselines_known: true,
        }
    }

    /// The entity frame stored for s2c sequence `seq`, if still held.
    pub fn frame(&self, seq: u32) -> Option<&[EntityState]> {
        match self.frames.get(seq as usize % UPDATE_BACKUP) {
            Some(Some((s, ents, _))) if *s == seq => Some(ents),
            _ => None,
        }
    }

    /// Every serverdata starts a new level: forget baselines, frames and players.
    pub(super) fn new_level(&mut self, sd: &ServerData) {
        self.ext = sd.ext;
        self.baselines_known = true;
        self.baselines
            .iter_mut()
            .for_each(|b| *b = EntityState::default());
        self.frames.iter_mut().for_each(|f| *f = None);
        self.last_frame.clear();
        self.mvd_players = [PlayerInfo::default(); 32];
        self.players = [None; 32];
    }

    pub(super) fn store_frame(&mut self, ents: Vec<EntityState>, exact: bool) {
        if self.mvd {
            self.last_frame = ents;
        } else if let Some(slot) = self.frames.get_mut(self.seq as usize % UPDATE_BACKUP) {
            *slot = Some((self.seq, ents, exact));
        }
    }

    /// Find the delta base for `from` (spec §6.4): the held frame whose sequence has the low
    /// 8 bits `from`, older than the current packet and less than 63 behind it.
    /// Returns (sequence, entities, exact, found): when that frame is not held (the capture
    /// lacks its packet), the newest older frame stands in (`found` false) — what vanilla
    /// clients do on a mismatch — so one missing packet does not spoil every later delta.
    pub(super) fn delta_base(&self, from: u8) -> Option<(u32, Vec<EntityState>, bool, bool)> {
        if self.mvd {
            return Some((
                self.seq.wrapping_sub(1),
                self.last_frame.clone(),
                true,
                true,
            ));
        }
        let recent = |s: u32| s < self.seq && self.seq - s < (UPDATE_BACKUP as u32 - 1);
        if let Some(Some((s, ents, exact))) = self.frames.get(usize::from(from) % UPDATE_BACKUP) {
            if (*s & 0xff) as u8 == from && recent(*s) {
                return Some((*s, ents.clone(), *exact, true));
            }
        }
        self.frames
            .iter()
            .flatten()
            .filter(|(s, _, _)| recent(*s))
            .max_by_key(|(s, _, _)| *s)
            .map(|(s, ents, _)| (*s, ents.clone(), false, false))
    }
}
