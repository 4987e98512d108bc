//! What a Quake 3 client knows while parsing server messages (q3-protocol.md §6): the
//! configstring table, baselines, snapshot history (32 frames by message number) and the
//! reliable server-command ring. The same state serves captures and demo files.
use std::sync::Arc;

use super::delta::{EntityState, PlayerState};

pub const MAX_CONFIGSTRINGS: usize = 1024;
pub const PACKET_BACKUP: usize = 32;
pub const MAX_RELIABLE_COMMANDS: usize = 64;
/// ioquake3's limit on parse entities between a delta base and its snapshot.
pub const MAX_PARSE_ENTITIES: u64 = 32 * 256;
pub const MAX_SNAPSHOT_ENTITIES: u64 = 256;
/// Client-side limit on the total configstring text of a gamestate.
pub const MAX_GAMESTATE_CHARS: usize = 16000;
pub const CS_SYSTEMINFO: usize = 1;
/// First player configstring (`CS_PLAYERS`).
pub const CS_PLAYERS: usize = 544;

/// One parsed snapshot: the absolute game state the client holds after it.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapFrame {
    pub message_num: i32,
    pub server_time: i32,
    pub delta_num: i32,
    pub flags: u8,
    pub areamask: Vec<u8>,
    pub ps: PlayerState,
    /// Sorted by entity number.
    pub entities: Vec<EntityState>,
    /// Running count of entities parsed before this frame (the engine's ring position).
    pub parse_entities_num: u64,
}

/// A history slot: the frame and whether the client still holds it as valid.
#[derive(Debug, Clone)]
pub struct Slot {
    pub frame: Arc<SnapFrame>,
    pub valid: bool,
}

/// The client's parse state for one connection (or one demo file).
#[derive(Debug, Clone)]
pub struct ClientState {
    pub configstrings: Vec<String>,
    pub baselines: Vec<EntityState>,
    pub snapshots: Vec<Option<Slot>>,
    /// Message number of the last valid snapshot (the engine's `cl.snap.messageNum`).
    pub last_snap_num: i32,
    pub last_snap_time: Option<i32>,
    pub parse_entities_num: u64,
    /// Highest server command received (`clc.serverCommandSequence`).
    pub server_command_seq: i32,
    pub server_commands: Vec<String>,
    pub client_num: i32,
    pub checksum_feed: i32,
    pub server_id: i32,
    pub gamestates: u32,
    /// Next expected download block (`clc.downloadBlock`).
    pub download_block: i32,
    /// A big configstring being assembled from `bcs0/1/2`.
    pub big_cs: Option<(usize, String)>,
    /// Entity lists of frames that left the history, kept for the next snapshots: a frame's
    /// list is several KB, too large for the allocator's fast path, and one is built per
    /// snapshot.
    spare_entities: Vec<Vec<EntityState>>,
}

/// How many spare entity lists a [`ClientState`] keeps.
const MAX_SPARE_ENTITY_LISTS: usize = 4;

impl Default for ClientState {
    fn default() -> Self {
        ClientState {
            configstrings: vec![String::new(); MAX_CONFIGSTRINGS],
            baselines: vec![EntityState::default(); super::fields::MAX_GENTITIES as usize],
            snapshots: vec![None; PACKET_BACKUP],
            last_snap_num: 0,
            last_snap_time: None,
            parse_entities_num: 0,
            server_command_seq: 0,
            server_commands: vec![String::new(); MAX_RELIABLE_COMMANDS],
            client_num: 0,
            checksum_feed: 0,
            server_id: 0,
            gamestates: 0,
            download_block: 0,
            big_cs: None,
            spare_entities: Vec::new(),
        }
    }
}

/// Append as the engine's `Q_strcat(bigConfigString, BIG_INFO_STRING, s)` does: silently
/// cut at `BIG_INFO_STRING - 1` bytes, so endless `bcs1` commands cannot grow memory.
fn push_bounded(s: &mut String, more: &str) {
    let room = (super::bits::BIG_INFO_STRING - 1).saturating_sub(s.len());
    let mut cut = more.len().min(room);
    while !more.is_char_boundary(cut) {
        cut -= 1;
    }
    s.push_str(&more[..cut]);
}

impl ClientState {
    /// `CL_ClearState` on a new gamestate: snapshots, configstrings and baselines go; the
    /// command ring stays (q3-protocol.md §3.4).
    pub fn clear_for_gamestate(&mut self) {
        self.configstrings.iter_mut().for_each(String::clear);
        self.baselines
            .iter_mut()
            .for_each(|b| *b = EntityState::default());
        self.snapshots.iter_mut().for_each(|s| *s = None);
        self.last_snap_num = 0;
        self.last_snap_time = None;
        self.big_cs = None;
    }

    /// The server command stored for `seq` (what the client keeps in its ring).
    pub fn server_command(&self, seq: i32) -> &str {
        &self.server_commands[(seq as usize) & (MAX_RELIABLE_COMMANDS - 1)]
    }

    /// Store a received server command with the client's rule (only newer sequences) and
    /// apply engine-level ones (`cs`, `bcs0/1/2`) to the configstring table.
    /// Returns true when the command was new.
    pub fn receive_server_command(&mut self, seq: i32, text: &str) -> bool {
        if seq <= self.server_command_seq {
            return false;
        }
        self.server_command_seq = seq;
        self.server_commands[(seq as usize) & (MAX_RELIABLE_COMMANDS - 1)] = text.to_string();
        self.apply_command(text);
        true
    }

    fn apply_command(&mut self, text: &str) {
        let toks = super::oob::tokenize(text);
        let Some(cmd) = toks.first() else { return };
        let index = toks
            .get(1)
            .and_then(|s| s.parse::<usize>().ok())
            .filter(|&i| i < MAX_CONFIGSTRINGS);
        let value = || toks.get(2).cloned().unwrap_or_default();
        match (cmd.as_str(), index) {
            ("cs", Some(i)) => self.set_configstring(i, value()),
            ("bcs0", Some(i)) => self.big_cs = Some((i, value())),
            ("bcs1", Some(i)) => {
                if let Some((j, s)) = &mut self.big_cs {
                    if *j == i {
                        push_bounded(s, &value());
                    }
                }
            }
            ("bcs2", Some(i)) => {
                if let Some((j, mut s)) = self.big_cs.take() {
                    if j == i {
                        push_bounded(&mut s, &value());
                        self.set_configstring(i, s);
                    }
                }
            }
            _ => {}
        }
    }

    /// Set a configstring; the systeminfo string carries the serverId.
    pub fn set_configstring(&mut self, i: usize, v: String) {
        if i == CS_SYSTEMINFO {
            if let Some(id) = super::oob::info_value(&v, "sv_serverid").and_then(|s| s.parse().ok())
            {
                self.server_id = id;
            }
        }
        if let Some(slot) = self.configstrings.get_mut(i) {
            *slot = v;
        }
    }

    /// The history slot for a message number, if it holds that very message.
    pub fn slot(&self, message_num: i32) -> Option<&Slot> {
        self.snapshots[(message_num as usize) & (PACKET_BACKUP - 1)].as_ref()
    }

    /// Store a valid snapshot as `CL_ParseSnapshot` does: slots of skipped message numbers
    /// are invalidated first.
    pub fn store_snapshot(&mut self, frame: Arc<SnapFrame>) {
        let num = frame.message_num;
        // The engine invalidates old..num with old clamped to num - 31; wrapping arithmetic
        // keeps hostile message numbers (a demo's sequences are any i32) from overflowing.
        let gap = num.wrapping_sub(self.last_snap_num.wrapping_add(1));
        for k in 1..=gap.clamp(0, PACKET_BACKUP as i32 - 1) {
            let old = num.wrapping_sub(k);
            if let Some(s) = &mut self.snapshots[(old as usize) & (PACKET_BACKUP - 1)] {
                s.valid = false;
            }
        }
        self.last_snap_num = num;
        self.last_snap_time = Some(frame.server_time);
        let old = self.snapshots[(num as usize) & (PACKET_BACKUP - 1)]
            .replace(Slot { frame, valid: true });
        if let Some(old) = old {
            self.recycle(old.frame);
        }
    }

    /// Keep the entity list of a frame nobody else holds for [`Self::entity_list`].
    pub fn recycle(&mut self, frame: Arc<SnapFrame>) {
        if self.spare_entities.len() >= MAX_SPARE_ENTITY_LISTS {
            return;
        }
        if let Ok(f) = Arc::try_unwrap(frame) {
            let mut list = f.entities;
            list.clear();
            self.spare_entities.push(list);
        }
    }

    /// An empty entity list with room for `n` entities, recycled when one is spare.
    pub fn entity_list(&mut self, n: usize) -> Vec<EntityState> {
        let mut list = self.spare_entities.pop().unwrap_or_default();
        list.reserve(n);
        list
    }

    /// Player name from CS_PLAYERS for the recording client.
    pub fn player_name(&self, client: i32) -> Option<String> {
        // clientNum comes from the message: any i32.
        let i = usize::try_from(client).ok()?.checked_add(CS_PLAYERS)?;
        let cs = self.configstrings.get(i)?;
        super::oob::info_value(cs, "n")
    }

    /// Map name from the serverinfo configstring.
    pub fn map_name(&self) -> Option<String> {
        super::oob::info_value(&self.configstrings[0], "mapname")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn player_name_of_a_hostile_client_number_is_none() {
        let mut st = ClientState::default();
        st.set_configstring(CS_PLAYERS, "n\\bob".into());
        assert_eq!(st.player_name(0).as_deref(), Some("bob"));
        for c in [-1, i32::MIN, i32::MAX, MAX_CONFIGSTRINGS as i32] {
            assert_eq!(st.player_name(c), None);
        }
    }

    #[test]
    fn snapshots_at_extreme_message_numbers_do_not_overflow() {
        let mut st = ClientState::default();
        for num in [i32::MIN, i32::MIN + 3, 5, i32::MAX, i32::MIN] {
            let frame = SnapFrame {
                message_num: num,
                server_time: 0,
                delta_num: -1,
                flags: 0,
                areamask: Vec::new(),
                ps: Default::default(),
                entities: Vec::new(),
                parse_entities_num: 0,
            };
            st.store_snapshot(Arc::new(frame));
            assert_eq!(st.last_snap_num, num);
        }
    }

    #[test]
    fn big_configstring_is_bounded_like_the_engine() {
        let mut st = ClientState::default();
        let chunk = "x".repeat(1000);
        assert!(st.receive_server_command(1, &format!("bcs0 5 \"{chunk}\"")));
        for seq in 2..200 {
            st.receive_server_command(seq, &format!("bcs1 5 \"{chunk}\""));
        }
        st.receive_server_command(200, &format!("bcs2 5 \"{chunk}\""));
        assert_eq!(
            st.configstrings[5].len(),
            super::super::bits::BIG_INFO_STRING - 1
        );
    }
}
