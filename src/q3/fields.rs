//! Delta-compression field tables (spec `q3-protocol.md` §6.6 `entityStateFields`, §6.7
//! `playerStateFields`), as const data in wire order. Names are exactly the strings the engine
//! prints in its `cl_shownet` trace (the C `#x` of each `NETF`/`PSF` entry).

/// One transmitted field: its engine name and width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetField {
    /// Name as printed by the engine, e.g. `"pos.trBase[0]"`.
    pub name: &'static str,
    /// 0 = float; positive = unsigned width; negative = signed width (playerstate only).
    pub bits: i32,
}

impl NetField {
    /// Table entry.
    pub const fn new(name: &'static str, bits: i32) -> Self {
        NetField { name, bits }
    }

    /// True for float fields (`bits == 0`).
    pub const fn is_float(&self) -> bool {
        self.bits == 0
    }
}

/// Bits of an entity number on the wire.
pub const GENTITYNUM_BITS: i32 = 10;
/// Number of entity slots; `MAX_GENTITIES - 1` (1023, `ENTITYNUM_NONE`) ends packet entities
/// and is the number a removal leaves in the state.
pub const MAX_GENTITIES: i32 = 1 << GENTITYNUM_BITS;
/// `ENTITYNUM_NONE`.
pub const ENTITYNUM_NONE: i32 = MAX_GENTITIES - 1;
/// `ENTITYNUM_WORLD`.
pub const ENTITYNUM_WORLD: i32 = MAX_GENTITIES - 2;
/// Width of the entity `powerups` field and size of `playerState_t.powerups`.
pub const MAX_POWERUPS: i32 = 16;
/// Index of `eType` in the entity field table (checked against the table by a test).
pub const ENTITY_ETYPE: usize = 11;
/// Indices of `pm_type` and `clientNum` in [`PLAYER_FIELDS`] (checked by a test).
pub const PS_PM_TYPE: usize = 34;
pub const PS_CLIENT_NUM: usize = 40;
/// `MAX_STATS`, `MAX_PERSISTANT`, `MAX_WEAPONS`: sizes of the other playerstate arrays.
pub const MAX_STATS: usize = 16;
/// See [`MAX_STATS`].
pub const MAX_PERSISTANT: usize = 16;
/// See [`MAX_STATS`].
pub const MAX_WEAPONS: usize = 16;
/// Integral floats in `-FLOAT_INT_BIAS..FLOAT_INT_BIAS` are sent in this many bits.
pub const FLOAT_INT_BITS: i32 = 13;
/// Bias added to an integral float before sending it in [`FLOAT_INT_BITS`] bits.
pub const FLOAT_INT_BIAS: i32 = 1 << (FLOAT_INT_BITS - 1);

/// Number of fields in [`ENTITY_FIELDS`]: protocol 68's 51, then the 7 Quake Live adds.
pub const NUM_ENTITY_FIELDS: usize = 58;
/// Number of fields in [`PLAYER_FIELDS`]: protocol 68's 48, then the 10 Quake Live adds.
pub const NUM_PLAYER_FIELDS: usize = 58;
/// Fields of protocol 68's `entityStateFields` (the first ones of [`ENTITY_FIELDS`]).
pub const Q3_ENTITY_FIELDS: usize = 51;
/// Fields of protocol 68's `playerStateFields` (the first ones of [`PLAYER_FIELDS`]).
pub const Q3_PLAYER_FIELDS: usize = 48;

/// Every entity field any supported protocol sends, each with a slot of its own in
/// [`EntityState::fields`](crate::q3::delta::EntityState): protocol 68's `entityStateFields`
/// in its wire order (so that for protocol 68 a field's slot is its wire index), then the
/// fields Quake Live added. A protocol's own wire order is its [`Protocol`]'s table.
/// (`number` is not a field; it precedes the delta.)
pub const ENTITY_FIELDS: [NetField; NUM_ENTITY_FIELDS] = [
    NetField::new("pos.trTime", 32),
    NetField::new("pos.trBase[0]", 0),
    NetField::new("pos.trBase[1]", 0),
    NetField::new("pos.trDelta[0]", 0),
    NetField::new("pos.trDelta[1]", 0),
    NetField::new("pos.trBase[2]", 0),
    NetField::new("apos.trBase[1]", 0),
    NetField::new("pos.trDelta[2]", 0),
    NetField::new("apos.trBase[0]", 0),
    NetField::new("event", 10),
    NetField::new("angles2[1]", 0),
    NetField::new("eType", 8),
    NetField::new("torsoAnim", 8),
    NetField::new("eventParm", 8),
    NetField::new("legsAnim", 8),
    NetField::new("groundEntityNum", GENTITYNUM_BITS),
    NetField::new("pos.trType", 8),
    NetField::new("eFlags", 19),
    NetField::new("otherEntityNum", GENTITYNUM_BITS),
    NetField::new("weapon", 8),
    NetField::new("clientNum", 8),
    NetField::new("angles[1]", 0),
    NetField::new("pos.trDuration", 32),
    NetField::new("apos.trType", 8),
    NetField::new("origin[0]", 0),
    NetField::new("origin[1]", 0),
    NetField::new("origin[2]", 0),
    NetField::new("solid", 24),
    NetField::new("powerups", MAX_POWERUPS),
    NetField::new("modelindex", 8),
    NetField::new("otherEntityNum2", GENTITYNUM_BITS),
    NetField::new("loopSound", 8),
    NetField::new("generic1", 8),
    NetField::new("origin2[2]", 0),
    NetField::new("origin2[0]", 0),
    NetField::new("origin2[1]", 0),
    NetField::new("modelindex2", 8),
    NetField::new("angles[0]", 0),
    NetField::new("time", 32),
    NetField::new("apos.trTime", 32),
    NetField::new("apos.trDuration", 32),
    NetField::new("apos.trBase[2]", 0),
    NetField::new("apos.trDelta[0]", 0),
    NetField::new("apos.trDelta[1]", 0),
    NetField::new("apos.trDelta[2]", 0),
    NetField::new("time2", 32),
    NetField::new("angles[2]", 0),
    NetField::new("angles2[0]", 0),
    NetField::new("angles2[2]", 0),
    NetField::new("constantLight", 32),
    NetField::new("frame", 16),
    // Quake Live (protocol 73 on).
    NetField::new("pos.gravity", 32),
    NetField::new("apos.gravity", 32),
    // Quake Live, protocol 90 on.
    NetField::new("jumpTime", 32),
    NetField::new("doubleJumped", 1),
    // Quake Live, protocol 91.
    NetField::new("health", 16),
    NetField::new("armor", 16),
    NetField::new("location", 8),
];

/// Every playerstate field any supported protocol sends: protocol 68's `playerStateFields`
/// in its wire order, then Quake Live's additions (as [`ENTITY_FIELDS`]).
pub const PLAYER_FIELDS: [NetField; NUM_PLAYER_FIELDS] = [
    NetField::new("commandTime", 32),
    NetField::new("origin[0]", 0),
    NetField::new("origin[1]", 0),
    NetField::new("bobCycle", 8),
    NetField::new("velocity[0]", 0),
    NetField::new("velocity[1]", 0),
    NetField::new("viewangles[1]", 0),
    NetField::new("viewangles[0]", 0),
    NetField::new("weaponTime", -16),
    NetField::new("origin[2]", 0),
    NetField::new("velocity[2]", 0),
    NetField::new("legsTimer", 8),
    NetField::new("pm_time", -16),
    NetField::new("eventSequence", 16),
    NetField::new("torsoAnim", 8),
    NetField::new("movementDir", 4),
    NetField::new("events[0]", 8),
    NetField::new("legsAnim", 8),
    NetField::new("events[1]", 8),
    NetField::new("pm_flags", 16),
    NetField::new("groundEntityNum", GENTITYNUM_BITS),
    NetField::new("weaponstate", 4),
    NetField::new("eFlags", 16),
    NetField::new("externalEvent", 10),
    NetField::new("gravity", 16),
    NetField::new("speed", 16),
    NetField::new("delta_angles[1]", 16),
    NetField::new("externalEventParm", 8),
    NetField::new("viewheight", -8),
    NetField::new("damageEvent", 8),
    NetField::new("damageYaw", 8),
    NetField::new("damagePitch", 8),
    NetField::new("damageCount", 8),
    NetField::new("generic1", 8),
    NetField::new("pm_type", 8),
    NetField::new("delta_angles[0]", 16),
    NetField::new("delta_angles[2]", 16),
    NetField::new("torsoTimer", 12),
    NetField::new("eventParms[0]", 8),
    NetField::new("eventParms[1]", 8),
    NetField::new("clientNum", 8),
    NetField::new("weapon", 5),
    NetField::new("viewangles[2]", 0),
    NetField::new("grapplePoint[0]", 0),
    NetField::new("grapplePoint[1]", 0),
    NetField::new("grapplePoint[2]", 0),
    NetField::new("jumppad_ent", GENTITYNUM_BITS),
    NetField::new("loopSound", 16),
    // Quake Live, protocol 90 on.
    NetField::new("jumpTime", 32),
    NetField::new("doubleJumped", 1),
    // Quake Live, protocol 91.
    NetField::new("weaponPrimary", 8),
    NetField::new("crouchTime", 32),
    NetField::new("crouchSlideTime", 32),
    NetField::new("location", 8),
    NetField::new("fov", 8),
    NetField::new("forwardmove", 8),
    NetField::new("rightmove", 8),
    NetField::new("upmove", 8),
];

/// Index of an entity field by engine name.
pub fn entity_field_index(name: &str) -> Option<usize> {
    ENTITY_FIELDS.iter().position(|f| f.name == name)
}

/// Index of a playerstate field by engine name.
pub fn player_field_index(name: &str) -> Option<usize> {
    PLAYER_FIELDS.iter().position(|f| f.name == name)
}

#[cfg(test)]
mod tests {
    #[test]
    fn playerstate_field_constants() {
        assert_eq!(
            super::player_field_index("pm_type"),
            Some(super::PS_PM_TYPE)
        );
        assert_eq!(
            super::player_field_index("clientNum"),
            Some(super::PS_CLIENT_NUM)
        );
    }

    use super::*;

    #[test]
    fn table_shapes() {
        let (q3_entity, q3_player) = (
            &ENTITY_FIELDS[..Q3_ENTITY_FIELDS],
            &PLAYER_FIELDS[..Q3_PLAYER_FIELDS],
        );
        let floats = q3_entity.iter().filter(|f| f.is_float()).count();
        assert_eq!(floats, 24);
        assert_eq!(q3_player.iter().filter(|f| f.is_float()).count(), 12);
        assert_eq!(PLAYER_FIELDS.iter().filter(|f| f.bits < 0).count(), 3);
        assert!(ENTITY_FIELDS.iter().all(|f| f.bits >= 0 && f.bits <= 32));
        assert_eq!(entity_field_index("pos.trDelta[2]"), Some(7));
        assert_eq!(entity_field_index("frame"), Some(50));
        assert_eq!(player_field_index("loopSound"), Some(47));
        assert_eq!(ENTITY_FIELDS[15], NetField::new("groundEntityNum", 10));
        assert_eq!(ENTITY_FIELDS[28], NetField::new("powerups", 16));
        assert_eq!(PLAYER_FIELDS[28], NetField::new("viewheight", -8));
        let mut names: Vec<_> = ENTITY_FIELDS.iter().map(|f| f.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), NUM_ENTITY_FIELDS);
    }
}
