//! What differs between the Quake 3 engine protocols quakecap reads, as data: each protocol's
//! delta field tables in its wire order, and how its strings are read. Quake 3 (66, 67, 68,
//! ioquake3's 71) share one set; Quake Live's demos (73, 90, 91) send more fields and UTF-8
//! text. The message framing, the Huffman code and the ops are the same for all of them.
//!
//! Quake Live's tables, from its demos as decoded here and checked against Uber Demo Tools'
//! published tables: protocol 73 adds `pos.gravity` and `apos.gravity` to the entity table
//! (each right after the trajectory it belongs to); 90 widens `pm_flags` to 24 bits and adds
//! `jumpTime` and `doubleJumped` to both tables; 91 adds the entity's `health`, `armor` and
//! `location`, and to the playerstate `weaponPrimary` (after `weapon`), the crouch timers,
//! `location`, `fov` and the move values.
//!
//! A field's value lives in its slot of the union tables (`ENTITY_FIELDS`,
//! `PLAYER_FIELDS`), whatever its wire position: code that reads a field by name or index
//! reads the same slot on every protocol.
use std::sync::LazyLock;

use crate::q3::fields::{
    NetField, ENTITY_FIELDS, NUM_ENTITY_FIELDS, NUM_PLAYER_FIELDS, PLAYER_FIELDS, Q3_ENTITY_FIELDS,
    Q3_PLAYER_FIELDS,
};

/// One protocol's delta tables and string rules.
#[derive(Debug)]
pub struct Protocol {
    /// The demo protocol number this describes (68 for the Quake 3 family).
    pub number: u32,
    /// The entity fields in wire order, each with this protocol's width.
    pub entity: Vec<NetField>,
    /// Slot in the union entity table (`ENTITY_FIELDS`) of each field of [`entity`](Self::entity).
    pub entity_slots: Vec<u8>,
    /// The playerstate fields in wire order, each with this protocol's width.
    pub player: Vec<NetField>,
    /// Slot in the union playerstate table (`PLAYER_FIELDS`) of each field of [`player`](Self::player).
    pub player_slots: Vec<u8>,
    /// Strings keep bytes above 127 (Quake Live's UTF-8); Quake 3 reads them as `.`.
    pub utf8: bool,
    /// Wire index and slot are the same for every field (the Quake 3 tables): the readers
    /// then take the union tables directly.
    pub identity: bool,
    /// Where the game keeps what the game events read among the configstrings.
    pub cs: CsLayout,
    /// The game's `EV_OBITUARY`, the event entity of a kill (baseq3's 60; Quake Live's 58).
    pub ev_obituary: i32,
    /// The readers' copy of the tables: fixed-size arrays (padded after the protocol's own
    /// fields), so that indexing them below a count checked against their size needs no
    /// bounds check in the field loop.
    pub(crate) wire: WireArrays,
}

/// [`Protocol`]'s tables as fixed-size arrays, see [`Protocol::wire`].
#[derive(Debug)]
pub(crate) struct WireArrays {
    pub entity: [NetField; NUM_ENTITY_FIELDS],
    pub entity_slots: [u8; NUM_ENTITY_FIELDS],
    pub player: [NetField; NUM_PLAYER_FIELDS],
    pub player_slots: [u8; NUM_PLAYER_FIELDS],
}

impl WireArrays {
    fn new(
        entity: &[NetField],
        entity_slots: &[u8],
        player: &[NetField],
        player_slots: &[u8],
    ) -> Self {
        let mut w = WireArrays {
            entity: [NetField::new("", 0); NUM_ENTITY_FIELDS],
            entity_slots: [0; NUM_ENTITY_FIELDS],
            player: [NetField::new("", 0); NUM_PLAYER_FIELDS],
            player_slots: [0; NUM_PLAYER_FIELDS],
        };
        w.entity[..entity.len()].copy_from_slice(entity);
        w.entity_slots[..entity_slots.len()].copy_from_slice(entity_slots);
        w.player[..player.len()].copy_from_slice(player);
        w.player_slots[..player_slots.len()].copy_from_slice(player_slots);
        w
    }
}

/// Configstring indices of a game (`bg_public.h`'s `CS_*`; Quake Live renumbered them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CsLayout {
    /// `CS_WARMUP`: when the warmup ends.
    pub warmup: usize,
    /// `CS_LEVEL_START_TIME`: when the match started.
    pub level_start_time: usize,
    /// `CS_INTERMISSION`: the intermission flag.
    pub intermission: usize,
    /// `CS_FLAGSTATUS`: the CTF flags' status.
    pub flag_status: usize,
    /// `CS_PLAYERS`: the first player slot's configstring.
    pub players: usize,
    /// Quake Live's round status (`\\time\\T\\round\\N` while round N counts down to
    /// `T`, `\\round\\N` once it is on) in its round-based game types; Quake 3 has none.
    pub round: Option<usize>,
    /// `CS_SCORES1`, `CS_SCORES2`: red's and blue's scores, or the first and second place's.
    pub scores: [usize; 2],
    /// Quake Live's `CS_FIRST_PLACE` and `CS_SECOND_PLACE`: the names of the first and
    /// second place (`TEAM_RED` and `TEAM_BLUE` in team games); Quake 3 has none.
    pub places: Option<[usize; 2]>,
}

/// Quake 3's (baseq3, OpenArena, OSP, CPMA).
const Q3_CS: CsLayout = CsLayout {
    warmup: 5,
    level_start_time: 21,
    intermission: 22,
    flag_status: 23,
    players: 544,
    round: None,
    scores: [6, 7],
    places: None,
};

/// Quake Live's (protocols 73 to 91).
const QL_CS: CsLayout = CsLayout {
    warmup: 5,
    level_start_time: 13,
    intermission: 14,
    flag_status: 658,
    players: 529,
    round: Some(661),
    scores: [6, 7],
    places: Some([659, 660]),
};

/// A change to a table, from the protocol it derives from.
enum Edit {
    /// Insert a field after the named one.
    After(&'static str, &'static str),
    /// Add a field at the end.
    Append(&'static str),
    /// Send the named field in another width.
    Width(&'static str, i32),
}

impl Protocol {
    /// The tables of demo protocol `n`: Quake Live's for 73, 90 and 91, Quake 3's otherwise.
    pub fn of(n: u32) -> &'static Protocol {
        match n {
            73 => &QL73,
            90 => &QL90,
            91 => &QL91,
            _ => &Q3,
        }
    }

    /// The Quake 3 tables (protocols 66 to 71).
    pub fn q3() -> &'static Protocol {
        &Q3
    }

    /// True for a Quake Live protocol.
    pub fn is_quake_live(&self) -> bool {
        self.number >= 73
    }

    /// Build a protocol from the Quake 3 tables and edits of each.
    fn derive(number: u32, utf8: bool, entity: &[Edit], player: &[Edit]) -> Protocol {
        let (entity, entity_slots) = table(&ENTITY_FIELDS, Q3_ENTITY_FIELDS, entity);
        let (player, player_slots) = table(&PLAYER_FIELDS, Q3_PLAYER_FIELDS, player);
        let identity = is_identity(&entity, &entity_slots, &ENTITY_FIELDS)
            && is_identity(&player, &player_slots, &PLAYER_FIELDS);
        let wire = WireArrays::new(&entity, &entity_slots, &player, &player_slots);
        Protocol {
            wire,
            number,
            entity,
            entity_slots,
            player,
            player_slots,
            utf8,
            identity,
            cs: if utf8 { QL_CS } else { Q3_CS },
            ev_obituary: if utf8 {
                crate::q3::gamemod::EV_OBITUARY_QUAKE_LIVE
            } else {
                crate::q3::gamemod::EV_OBITUARY
            },
        }
    }
}

/// True when field `i` sits in slot `i` with the union's width.
fn is_identity(fields: &[NetField], slots: &[u8], union: &[NetField]) -> bool {
    slots.iter().enumerate().all(|(i, &s)| usize::from(s) == i) && fields == &union[..fields.len()]
}

/// The first `base` fields of `union`, edited: fields in wire order and their slots.
fn table(union: &[NetField], base: usize, edits: &[Edit]) -> (Vec<NetField>, Vec<u8>) {
    let slot = |name: &str| {
        union
            .iter()
            .position(|f| f.name == name)
            .unwrap_or_else(|| panic!("no field {name} in the union table"))
    };
    let mut slots: Vec<usize> = (0..base).collect();
    let mut widths: Vec<i32> = union[..base].iter().map(|f| f.bits).collect();
    for e in edits {
        match *e {
            Edit::After(before, name) => {
                let at = slots
                    .iter()
                    .position(|&s| s == slot(before))
                    .expect("the field to insert after")
                    + 1;
                slots.insert(at, slot(name));
                widths.insert(at, union[slot(name)].bits);
            }
            Edit::Append(name) => {
                slots.push(slot(name));
                widths.push(union[slot(name)].bits);
            }
            Edit::Width(name, bits) => {
                let at = slots
                    .iter()
                    .position(|&s| s == slot(name))
                    .expect("the field to widen");
                widths[at] = bits;
            }
        }
    }
    let fields = slots
        .iter()
        .zip(&widths)
        .map(|(&s, &bits)| NetField::new(union[s].name, bits))
        .collect();
    (fields, slots.iter().map(|&s| s as u8).collect())
}

const QL73_ENTITY: [Edit; 2] = [
    Edit::After("apos.trBase[0]", "pos.gravity"),
    Edit::After("apos.trDelta[2]", "apos.gravity"),
];
const QL90_ENTITY: [Edit; 4] = [
    Edit::After("apos.trBase[0]", "pos.gravity"),
    Edit::After("apos.trDelta[2]", "apos.gravity"),
    Edit::Append("jumpTime"),
    Edit::Append("doubleJumped"),
];
const QL91_ENTITY: [Edit; 7] = [
    Edit::After("apos.trBase[0]", "pos.gravity"),
    Edit::After("apos.trDelta[2]", "apos.gravity"),
    Edit::Append("jumpTime"),
    Edit::Append("doubleJumped"),
    Edit::Append("health"),
    Edit::Append("armor"),
    Edit::Append("location"),
];
const QL90_PLAYER: [Edit; 3] = [
    Edit::Width("pm_flags", 24),
    Edit::Append("jumpTime"),
    Edit::Append("doubleJumped"),
];
const QL91_PLAYER: [Edit; 11] = [
    Edit::Width("pm_flags", 24),
    Edit::After("weapon", "weaponPrimary"),
    Edit::Append("jumpTime"),
    Edit::Append("doubleJumped"),
    Edit::Append("crouchTime"),
    Edit::Append("crouchSlideTime"),
    Edit::Append("location"),
    Edit::Append("fov"),
    Edit::Append("forwardmove"),
    Edit::Append("rightmove"),
    Edit::Append("upmove"),
];

static Q3: LazyLock<Protocol> = LazyLock::new(|| Protocol::derive(68, false, &[], &[]));
static QL73: LazyLock<Protocol> = LazyLock::new(|| Protocol::derive(73, true, &QL73_ENTITY, &[]));
static QL90: LazyLock<Protocol> =
    LazyLock::new(|| Protocol::derive(90, true, &QL90_ENTITY, &QL90_PLAYER));
static QL91: LazyLock<Protocol> =
    LazyLock::new(|| Protocol::derive(91, true, &QL91_ENTITY, &QL91_PLAYER));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quake3_is_the_union_prefix() {
        let p = Protocol::of(68);
        assert!(p.identity);
        assert_eq!(p.entity.len(), 51);
        assert_eq!(p.player.len(), 48);
        assert_eq!(&p.entity[..], &ENTITY_FIELDS[..51]);
        assert_eq!(&p.player[..], &PLAYER_FIELDS[..48]);
    }

    #[test]
    fn quake_live_tables() {
        let names = |t: &[NetField]| t.iter().map(|f| f.name).collect::<Vec<_>>();
        let p73 = Protocol::of(73);
        assert!(!p73.identity && p73.utf8);
        assert_eq!((p73.entity.len(), p73.player.len()), (53, 48));
        assert_eq!(p73.entity[9], NetField::new("pos.gravity", 32));
        assert_eq!(p73.entity[10].name, "event");
        assert_eq!(
            names(&p73.entity[45..48]),
            ["apos.trDelta[2]", "apos.gravity", "time2"]
        );
        let p90 = Protocol::of(90);
        assert_eq!((p90.entity.len(), p90.player.len()), (55, 50));
        assert_eq!(p90.player[19], NetField::new("pm_flags", 24));
        assert_eq!(p90.entity[54], NetField::new("doubleJumped", 1));
        let p91 = Protocol::of(91);
        assert_eq!((p91.entity.len(), p91.player.len()), (58, 58));
        assert_eq!(
            names(&p91.player[41..44]),
            ["weapon", "weaponPrimary", "viewangles[2]"]
        );
        assert_eq!(p91.player[57], NetField::new("upmove", 8));
        // Every slot names the same field as the wire entry.
        for p in [p73, p90, p91] {
            for (f, &s) in p.entity.iter().zip(&p.entity_slots) {
                assert_eq!(ENTITY_FIELDS[usize::from(s)].name, f.name);
            }
            for (f, &s) in p.player.iter().zip(&p.player_slots) {
                assert_eq!(PLAYER_FIELDS[usize::from(s)].name, f.name);
            }
        }
    }
}
