//! Server → client messages (spec §6): one [`ServerOp`] per svc, decoded with the connection's
//! [`ServerState`] (extensions, baselines, the 64-frame entity ring).
use super::cursor::{DecodeError, Reader, Result};
use super::entity::{self, EntityState, PacketEntities, MAX_EDICTS};
use super::ext::{self, Ext};
use super::playerinfo::{self, PlayerInfo};
pub use super::state::ServerState;
use serde::Serialize;

/// Decoded svc_serverdata.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerData {
    /// Extension sets the server uses from here on (the leading FTEX/FTE2/MVD1 pairs).
    pub ext: Ext,
    /// Protocol version: 28 (24..=28 accepted, as ezQuake does for demos).
    pub protocol: i32,
    /// Spawn count (`servercount`) the client echoes in its signon commands; new with each map.
    pub spawncount: i32,
    /// Game directory (`qw`, `fortress`, …).
    pub gamedir: String,
    /// Player slot (bit 7 = spectator) — netchan streams only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub playernum: Option<u8>,
    /// Demo time — .mvd only, in place of playernum.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub demotime: Option<f32>,
    /// The level's full title (worldspawn `message`).
    pub levelname: String,
    /// Movement variables: gravity, stopspeed, maxspeed, spectatormaxspeed, accelerate,
    /// airaccelerate, wateraccelerate, friction, waterfriction, entgravity.
    pub movevars: [f32; 10],
}

/// A name list (svc_modellist, svc_soundlist, svc_fte_modellistshort).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NameList {
    /// Names sent before this message; the first name here has index `start + 1`.
    pub start: u16,
    /// Model or sound paths, in index order.
    pub names: Vec<String>,
    /// 0 when the list is complete, else the `start` the client asks for next (its low 8 bits).
    pub next: u8,
}

impl NameList {
    /// The map: the model list's first entry, `maps/NAME.bsp`.
    pub fn map_name(&self) -> Option<&str> {
        if self.start != 0 {
            return None;
        }
        self.names
            .first()?
            .strip_prefix("maps/")?
            .strip_suffix(".bsp")
    }
}

/// One server message. The JSON `op` is ezQuake's svc name without `svc_`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum ServerOp {
    /// `svc_nop` (1): nothing.
    Nop,
    /// `svc_disconnect` (2): the server drops the client, or the demo ends.
    Disconnect {
        /// The string after it in .mvd / QTV streams (`EndOfDemo`).
        #[serde(skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
    /// `svc_updatestat` (3): a stat whose value fits a byte.
    Updatestat {
        /// `STAT_*` index below 32 (0 health, 2 weapon, 3 ammo, 4 armor, 6–9 shells, nails,
        /// rockets, cells, 10 activeweapon, 15 items, …).
        stat: u8,
        /// The new value, 0..=255.
        value: i32,
    },
    /// `svc_updatestatlong` (38): a stat with a 32-bit value.
    Updatestatlong {
        /// `STAT_*` index below 32.
        stat: u8,
        /// The new value.
        value: i32,
    },
    /// `svc_sound` (6): a sound starts on an entity's channel.
    Sound {
        /// Entity the sound comes from (10 bits).
        entity: u16,
        /// Channel 0..=7 (0 auto, 1 weapon, 2 voice, 3 item, 4 body).
        channel: u8,
        /// Volume 0..=255 (255 unless the `SND_VOLUME` bit sent one).
        volume: u8,
        /// Distance attenuation: the sent byte / 64 (`SND_ATTENUATION`), else 1.0.
        attenuation: f32,
        /// Index into the sound precache (`svc_soundlist`).
        sound: u8,
        /// Where the sound starts, in world units.
        origin: [f32; 3],
    },
    /// `svc_print` (8): console or chat text.
    Print {
        /// `PRINT_*` level: 0 low (pickups), 1 medium (obituaries), 2 high, 3 chat.
        level: u8,
        /// The text; Quake-charset bytes as chars U+0000–U+00FF (see `qw::charset`).
        text: String,
    },
    /// `svc_stufftext` (9): console text the client executes.
    Stufftext {
        /// Commands, usually `\n`-terminated; `//` lines are hints (`//vwep`, `//ktx`, …).
        text: String,
    },
    /// `svc_setangle` (10): forces the view angles (teleport, respawn, intermission).
    Setangle {
        /// Player slot whose view is set (.mvd only).
        #[serde(skip_serializing_if = "Option::is_none")]
        player: Option<u8>,
        /// Reason byte under MVD_PEXT1_HIGHLAGTELEPORT: 0 none, 1 teleport, 2 respawn.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<u8>,
        /// View angles in degrees (pitch, yaw, roll).
        angles: [f32; 3],
    },
    /// `svc_serverdata` (11): a level starts; resets the decoder's level state.
    Serverdata(ServerData),
    /// `svc_lightstyle` (12): a light style's brightness pattern.
    Lightstyle {
        /// Light style number, 0..=63.
        index: u8,
        /// Brightness letters, one per 0.1 s: `a` dark, `m` normal, `z` bright.
        style: String,
    },
    /// `svc_updatefrags` (14): a player's frag count.
    Updatefrags {
        /// Player slot, 0..=31.
        slot: u8,
        /// Frag count.
        frags: i16,
    },
    /// `svc_stopsound` (16): the sound on an entity's channel stops.
    Stopsound {
        /// Entity number (bits 3–15 of the short).
        entity: u16,
        /// Channel 0..=7.
        channel: u8,
    },
    /// `svc_damage` (19): damage the player took this frame.
    Damage {
        /// Damage absorbed by armour.
        armor: u8,
        /// Damage taken to health.
        blood: u8,
        /// Point the damage came from, in world units.
        from: [f32; 3],
    },
    /// `svc_spawnstatic` (20): a static (never updated) entity; its `num` is 0.
    Spawnstatic(EntityState),
    /// `svc_spawnbaseline` (22): an entity's baseline, the base of its full updates.
    Spawnbaseline(EntityState),
    /// `svc_fte_spawnstatic2` (21, FTE_PEXT_SPAWNSTATIC2): a static entity, as a delta from zero.
    FteSpawnstatic2(EntityState),
    /// `svc_fte_spawnbaseline2` (66, FTE_PEXT_SPAWNSTATIC2): a baseline, as a delta from zero.
    FteSpawnbaseline2(EntityState),
    /// `svc_temp_entity` (23): a short-lived effect (explosion, spike hit, lightning beam, …).
    TempEntity {
        /// `TE_*` type: 0 spike, 1 superspike, 2 gunshot, 3 explosion, 4 tarexplosion,
        /// 5/6/9 lightning1/2/3, 7 wizspike, 8 knightspike, 10 lavasplash, 11 teleport,
        /// 12 blood, 13 lightningblood.
        kind: u8,
        /// Entity the beam comes from (lightning types).
        #[serde(skip_serializing_if = "Option::is_none")]
        entity: Option<u16>,
        /// Count byte of `TE_GUNSHOT` and `TE_BLOOD` (amount of particles).
        #[serde(skip_serializing_if = "Option::is_none")]
        count: Option<u8>,
        /// Position in world units (a beam's start).
        origin: [f32; 3],
        /// A beam's end point (lightning types).
        #[serde(skip_serializing_if = "Option::is_none")]
        end: Option<[f32; 3]>,
    },
    /// `svc_setpause` (24): the game was paused or unpaused.
    Setpause {
        /// True when paused.
        paused: bool,
    },
    /// `svc_centerprint` (26): text shown in the middle of the screen.
    Centerprint {
        /// The text; Quake-charset bytes as chars U+0000–U+00FF (see `qw::charset`).
        text: String,
    },
    /// `svc_killedmonster` (27): a monster died (single player, coop).
    Killedmonster,
    /// `svc_foundsecret` (28): a secret was found.
    Foundsecret,
    /// `svc_spawnstaticsound` (29): a looping ambient sound at a fixed point.
    Spawnstaticsound {
        /// Position in world units.
        origin: [f32; 3],
        /// Index into the sound precache (`svc_soundlist`).
        sound: u8,
        /// Volume 0..=255.
        volume: u8,
        /// Attenuation × 64, as sent.
        attenuation: u8,
    },
    /// `svc_intermission` (30): the level ended; the camera moves to a fixed view.
    Intermission {
        /// Camera position in world units.
        origin: [f32; 3],
        /// Camera angles in degrees.
        angles: [f32; 3],
    },
    /// `svc_finale` (31): end-of-episode text.
    Finale {
        /// The text; Quake-charset bytes as chars U+0000–U+00FF (see `qw::charset`).
        text: String,
    },
    /// `svc_cdtrack` (32): the level's music track.
    Cdtrack {
        /// CD track number.
        track: u8,
    },
    /// `svc_sellscreen` (33): show the shareware sell screen.
    Sellscreen,
    /// `svc_smallkick` (34): a small view kick (weapon recoil).
    Smallkick,
    /// `svc_bigkick` (35): a big view kick (weapon recoil).
    Bigkick,
    /// `svc_updateping` (36): a player's ping.
    Updateping {
        /// Player slot, 0..=31.
        slot: u8,
        /// Ping in milliseconds.
        ping: i16,
    },
    /// `svc_updateentertime` (37): when a player entered the game.
    Updateentertime {
        /// Player slot, 0..=31.
        slot: u8,
        /// Seconds since the player entered, as of this message.
        seconds_ago: f32,
    },
    /// `svc_muzzleflash` (39): a muzzle flash on an entity.
    Muzzleflash {
        /// Entity number (player slot `i` is entity `i + 1`).
        entity: i16,
    },
    /// `svc_updateuserinfo` (40): a player's whole userinfo.
    Updateuserinfo {
        /// Player slot, 0..=31.
        slot: u8,
        /// Server-assigned user id (kept while the player stays connected).
        userid: i32,
        /// The `\key\value…` string (name, team, topcolor, bottomcolor, skin, `*spectator`, …).
        userinfo: String,
    },
    /// `svc_download` (41): one block of a file download (the data is skipped).
    Download {
        /// Chunked (FTE CHUNKEDDOWNLOADS) form: chunk number, or a negative status.
        #[serde(skip_serializing_if = "Option::is_none")]
        chunk: Option<i32>,
        /// Vanilla: block size (−1 not found); chunked status: total size / error code.
        size: i32,
        /// Vanilla form: download progress in percent.
        #[serde(skip_serializing_if = "Option::is_none")]
        percent: Option<u8>,
        /// Chunked status (negative `chunk`): the file name.
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// Bytes of file data carried (1024 per chunk).
        data_len: usize,
    },
    /// `svc_playerinfo` (42): one player's state this frame.
    Playerinfo(PlayerInfo),
    /// `svc_nails` (43): the nails and spikes in flight this frame.
    Nails {
        /// One entry per projectile.
        projectiles: Vec<Projectile>,
    },
    /// `svc_nails2` (54, .mvd only): nails, each with its number.
    Nails2 {
        /// One entry per projectile, `index` set.
        projectiles: Vec<Projectile>,
    },
    /// `svc_chokecount` (44): server frames not sent (rate limit) since the last packet.
    Choke {
        /// Number of choked frames.
        count: u8,
    },
    /// `svc_modellist` (45): a part of the model precache list.
    Modellist(NameList),
    /// `svc_soundlist` (46): a part of the sound precache list.
    Soundlist(NameList),
    /// `svc_fte_modellistshort` (60, FTE_PEXT_MODELDBL): a part of the model list, 16-bit start.
    FteModellistshort(NameList),
    /// `svc_packetentities` (47): a full entity update, each entity against its baseline.
    Packetentities(PacketEntities),
    /// `svc_deltapacketentities` (48): an entity update as a delta from the frame `from`.
    Deltapacketentities(PacketEntities),
    /// `svc_maxspeed` (49): the player's top speed changed.
    Maxspeed {
        /// Units per second.
        value: f32,
    },
    /// `svc_entgravity` (50): the player's gravity multiplier changed.
    Entgravity {
        /// Multiplier of `sv_gravity` (1.0 normal).
        value: f32,
    },
    /// `svc_setinfo` (51): one userinfo key of a player changed.
    Setinfo {
        /// Player slot, 0..=31.
        slot: u8,
        /// Userinfo key.
        key: String,
        /// Its new value.
        value: String,
    },
    /// `svc_serverinfo` (52): one serverinfo key changed.
    Serverinfo {
        /// Serverinfo key.
        key: String,
        /// Its new value.
        value: String,
    },
    /// `svc_updatepl` (53): a player's packet loss.
    Updatepl {
        /// Player slot, 0..=31.
        slot: u8,
        /// Packet loss in percent.
        pl: u8,
    },
    /// `svc_qizmovoice` (83): a Qizmo voice frame (sequence byte and 33-byte GSM frame, skipped).
    Qizmovoice {
        /// Bytes skipped (always 34).
        len: usize,
    },
    /// `svc_fte_voicechat` (84, FTE_PEXT2_VOICECHAT): a voice frame relayed from a player.
    FteVoicechat {
        /// Player slot of the speaker.
        sender: u8,
        /// Codec in the high nibble, decoder generation in the low nibble.
        gen: u8,
        /// Sequence number of the voice frame.
        seq: u8,
        /// Bytes of codec data (skipped).
        len: u16,
    },
}

/// One nail/spike (svc_nails, svc_nails2).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Projectile {
    /// `svc_nails2` only: the projectile's number, to follow it from frame to frame.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<u8>,
    /// Position in world units, 2-unit steps, −4096..=4094.
    pub origin: [f32; 3],
    /// Pitch (16 steps) and yaw (256 steps) in degrees.
    pub angles: [f32; 2],
}

impl ServerOp {
    /// The svc id byte.
    pub fn id(&self) -> u8 {
        use ServerOp::*;
        match self {
            Nop => 1,
            Disconnect { .. } => 2,
            Updatestat { .. } => 3,
            Sound { .. } => 6,
            Print { .. } => 8,
            Stufftext { .. } => 9,
            Setangle { .. } => 10,
            Serverdata(_) => 11,
            Lightstyle { .. } => 12,
            Updatefrags { .. } => 14,
            Stopsound { .. } => 16,
            Damage { .. } => 19,
            Spawnstatic(_) => 20,
            FteSpawnstatic2(_) => 21,
            Spawnbaseline(_) => 22,
            TempEntity { .. } => 23,
            Setpause { .. } => 24,
            Centerprint { .. } => 26,
            Killedmonster => 27,
            Foundsecret => 28,
            Spawnstaticsound { .. } => 29,
            Intermission { .. } => 30,
            Finale { .. } => 31,
            Cdtrack { .. } => 32,
            Sellscreen => 33,
            Smallkick => 34,
            Bigkick => 35,
            Updateping { .. } => 36,
            Updateentertime { .. } => 37,
            Updatestatlong { .. } => 38,
            Muzzleflash { .. } => 39,
            Updateuserinfo { .. } => 40,
            Download { .. } => 41,
            Playerinfo(_) => 42,
            Nails { .. } => 43,
            Choke { .. } => 44,
            Modellist(_) => 45,
            Soundlist(_) => 46,
            Packetentities(_) => 47,
            Deltapacketentities(_) => 48,
            Maxspeed { .. } => 49,
            Entgravity { .. } => 50,
            Setinfo { .. } => 51,
            Serverinfo { .. } => 52,
            Updatepl { .. } => 53,
            Nails2 { .. } => 54,
            FteModellistshort(_) => 60,
            FteSpawnbaseline2(_) => 66,
            Qizmovoice { .. } => 83,
            FteVoicechat { .. } => 84,
        }
    }

    /// The name ezQuake's `cl_shownet` prints for this message (its `svc_strings` table).
    pub fn shownet_name(&self) -> &'static str {
        svc_string(self.id())
    }
}

/// ezQuake's `svc_strings[id]` (src/cl_parse.c); ids past the table print "NEW PROTOCOL"
/// there or are not printed, we give "unknown".
pub fn svc_string(id: u8) -> &'static str {
    const T: [&str; 55] = [
        "svc_bad",
        "svc_nop",
        "svc_disconnect",
        "svc_updatestat",
        "svc_version",
        "svc_setview",
        "svc_sound",
        "svc_time",
        "svc_print",
        "svc_stufftext",
        "svc_setangle",
        "svc_serverdata",
        "svc_lightstyle",
        "svc_updatename",
        "svc_updatefrags",
        "svc_clientdata",
        "svc_stopsound",
        "svc_updatecolors",
        "svc_particle",
        "svc_damage",
        "svc_spawnstatic",
        "OBSOLETE svc_spawnbinary",
        "svc_spawnbaseline",
        "svc_temp_entity",
        "svc_setpause",
        "svc_signonnum",
        "svc_centerprint",
        "svc_killedmonster",
        "svc_foundsecret",
        "svc_spawnstaticsound",
        "svc_intermission",
        "svc_finale",
        "svc_cdtrack",
        "svc_sellscreen",
        "svc_smallkick",
        "svc_bigkick",
        "svc_updateping",
        "svc_updateentertime",
        "svc_updatestatlong",
        "svc_muzzleflash",
        "svc_updateuserinfo",
        "svc_download",
        "svc_playerinfo",
        "svc_nails",
        "svc_choke",
        "svc_modellist",
        "svc_soundlist",
        "svc_packetentities",
        "svc_deltapacketentities",
        "svc_maxspeed",
        "svc_entgravity",
        "svc_setinfo",
        "svc_serverinfo",
        "svc_updatepl",
        "svc_nails2",
    ];
    T.get(usize::from(id))
        .copied()
        .unwrap_or(if id < 67 { "NEW PROTOCOL" } else { "unknown" })
}

/// Decode every svc in `r` (one netchan payload or one demo block). Decoding stops at the first
/// error (the rest of the message cannot be framed); the ops before it are returned with it.
pub fn parse_message(
    st: &mut ServerState,
    r: &mut Reader<'_>,
) -> (Vec<(usize, ServerOp)>, Option<DecodeError>) {
    let mut ops = Vec::new();
    st.soft_error = None;
    while !r.is_empty() {
        let at = r.pos();
        match parse_op(st, r) {
            Ok(op) => ops.push((at, op)),
            Err(e) => {
                st.soft_error = None;
                return (ops, Some(e));
            }
        }
    }
    (ops, st.soft_error.take())
}

fn coords(r: &mut Reader<'_>, ext: &Ext) -> Result<[f32; 3]> {
    ext.read_coords(r)
}

fn name_list(r: &mut Reader<'_>, start: u16) -> Result<NameList> {
    let mut names = Vec::new();
    loop {
        let s = r.string()?;
        if s.is_empty() {
            break;
        }
        if names.len() > 4096 {
            return Err(r.err("name list longer than 4096"));
        }
        names.push(s);
    }
    Ok(NameList {
        start,
        names,
        next: r.u8()?,
    })
}

/// svc_spawnstatic / svc_spawnbaseline body: model, frame, colormap, skin, 3×(coord, angle).
fn baseline_body(r: &mut Reader<'_>, ext: &Ext, num: u16) -> Result<EntityState> {
    let mut e = EntityState {
        num,
        model: u16::from(r.u8()?),
        frame: r.u8()?,
        colormap: r.u8()?,
        skin: r.u8()?,
        ..Default::default()
    };
    for i in 0..3 {
        e.origin[i] = ext.read_coord(r)?;
        e.angles[i] = ext.read_angle(r)?;
    }
    Ok(e)
}

fn projectiles(r: &mut Reader<'_>, indexed: bool) -> Result<Vec<Projectile>> {
    let n = r.u8()?;
    let mut v = Vec::with_capacity(usize::from(n));
    for _ in 0..n {
        let index = if indexed { Some(r.u8()?) } else { None };
        let b = r.bytes(6)?;
        let g = |i: usize| u32::from(b.get(i).copied().unwrap_or(0));
        let x = (((g(0) | ((g(1) & 15) << 8)) << 1) as f32) - 4096.0;
        let y = ((((g(1) >> 4) | (g(2) << 4)) << 1) as f32) - 4096.0;
        let z = (((g(3) | ((g(4) & 15) << 8)) << 1) as f32) - 4096.0;
        let pitch = (g(4) >> 4) as f32 * (360.0 / 16.0);
        let yaw = g(5) as f32 * (360.0 / 256.0);
        v.push(Projectile {
            index,
            origin: [x, y, z],
            angles: [pitch, yaw],
        });
    }
    Ok(v)
}

fn parse_op(st: &mut ServerState, r: &mut Reader<'_>) -> Result<ServerOp> {
    let id_at = r.pos();
    let id = r.u8()?;
    let ext = st.ext;
    use ServerOp::*;
    Ok(match id {
        1 => Nop,
        2 => {
            // mvdsv ends its demos and QTV streams with svc_disconnect "EndOfDemo".
            let text = if st.mvd && !r.is_empty() {
                Some(r.string()?)
            } else {
                None
            };
            Disconnect { text }
        }
        3 => Updatestat {
            stat: r.u8()?,
            value: i32::from(r.u8()?),
        },
        6 => {
            let c = r.u16()?;
            let volume = if c & 0x8000 != 0 { r.u8()? } else { 255 };
            let attenuation = if c & 0x4000 != 0 {
                f32::from(r.u8()?) / 64.0
            } else {
                1.0
            };
            let sound = r.u8()?;
            Sound {
                entity: (c >> 3) & 1023,
                channel: (c & 7) as u8,
                volume,
                attenuation,
                sound,
                origin: coords(r, &ext)?,
            }
        }
        8 => Print {
            level: r.u8()?,
            text: r.string()?,
        },
        9 => Stufftext { text: r.string()? },
        10 => {
            let player = if st.mvd { Some(r.u8()?) } else { None };
            let reason = if !st.mvd && ext.mvd1_asked(r, ext::MVD1_HIGHLAGTELEPORT) {
                Some(r.u8()?)
            } else {
                None
            };
            Setangle {
                player,
                reason,
                angles: ext.read_angles(r)?,
            }
        }
        11 => {
            let mut e = Ext::default();
            loop {
                let mut peek = r.clone();
                match peek.u32() {
                    Ok(m) if matches!(m, ext::MAGIC_FTE | ext::MAGIC_FTE2 | ext::MAGIC_MVD1) => {
                        r.u32()?;
                        let flags = r.u32()?;
                        e.set(m, flags);
                    }
                    _ => break,
                }
            }
            let protocol = r.i32()?;
            if !(24..=28).contains(&protocol) {
                return Err(DecodeError {
                    what: format!("serverdata protocol {protocol}, want 28"),
                    at: id_at,
                });
            }
            let spawncount = r.i32()?;
            let gamedir = r.string()?;
            let (playernum, demotime) = if st.mvd {
                (None, Some(r.f32()?))
            } else {
                (Some(r.u8()?), None)
            };
            let levelname = r.string()?;
            let mut movevars = [0f32; 10];
            for m in &mut movevars {
                *m = r.f32()?;
            }
            let sd = ServerData {
                ext: e,
                protocol,
                spawncount,
                gamedir,
                playernum,
                demotime,
                levelname,
                movevars,
            };
            st.new_level(&sd);
            st.serverdata = Some(sd.clone());
            Serverdata(sd)
        }
        12 => Lightstyle {
            index: r.u8()?,
            style: r.string()?,
        },
        14 => Updatefrags {
            slot: r.u8()?,
            frags: r.i16()?,
        },
        16 => {
            let v = r.u16()?;
            Stopsound {
                entity: v >> 3,
                channel: (v & 7) as u8,
            }
        }
        19 => Damage {
            armor: r.u8()?,
            blood: r.u8()?,
            from: coords(r, &ext)?,
        },
        20 => Spawnstatic(baseline_body(r, &ext, 0)?),
        21 | 66 => {
            let word = r.u16()?;
            let e = entity::read_delta(r, &EntityState::default(), word, &ext)?;
            if id == 66 {
                if let Some(b) = st.baselines.get_mut(usize::from(e.num)) {
                    *b = e;
                }
                FteSpawnbaseline2(e)
            } else {
                FteSpawnstatic2(e)
            }
        }
        22 => {
            let num = r.u16()?;
            if usize::from(num) >= MAX_EDICTS {
                return Err(DecodeError {
                    what: format!("spawnbaseline entity {num} >= 2048"),
                    at: id_at,
                });
            }
            let e = baseline_body(r, &ext, num)?;
            if let Some(b) = st.baselines.get_mut(usize::from(num)) {
                *b = e;
            }
            Spawnbaseline(e)
        }
        23 => {
            let kind = r.u8()?;
            match kind {
                5 | 6 | 9 => {
                    let entity = Some(r.u16()?);
                    let origin = coords(r, &ext)?;
                    TempEntity {
                        kind,
                        entity,
                        count: None,
                        origin,
                        end: Some(coords(r, &ext)?),
                    }
                }
                2 | 12 => {
                    let count = Some(r.u8()?);
                    TempEntity {
                        kind,
                        entity: None,
                        count,
                        origin: coords(r, &ext)?,
                        end: None,
                    }
                }
                0 | 1 | 3 | 4 | 7 | 8 | 10 | 11 | 13 => TempEntity {
                    kind,
                    entity: None,
                    count: None,
                    origin: coords(r, &ext)?,
                    end: None,
                },
                k => {
                    return Err(DecodeError {
                        what: format!("unknown temp entity type {k}"),
                        at: id_at,
                    })
                }
            }
        }
        24 => Setpause {
            paused: r.u8()? != 0,
        },
        26 => Centerprint { text: r.string()? },
        27 => Killedmonster,
        28 => Foundsecret,
        29 => Spawnstaticsound {
            origin: coords(r, &ext)?,
            sound: r.u8()?,
            volume: r.u8()?,
            attenuation: r.u8()?,
        },
        30 => Intermission {
            origin: coords(r, &ext)?,
            angles: ext.read_angles(r)?,
        },
        31 => Finale { text: r.string()? },
        32 => Cdtrack { track: r.u8()? },
        33 => Sellscreen,
        34 => Smallkick,
        35 => Bigkick,
        36 => Updateping {
            slot: r.u8()?,
            ping: r.i16()?,
        },
        37 => Updateentertime {
            slot: r.u8()?,
            seconds_ago: r.f32()?,
        },
        38 => Updatestatlong {
            stat: r.u8()?,
            value: r.i32()?,
        },
        39 => Muzzleflash { entity: r.i16()? },
        40 => Updateuserinfo {
            slot: r.u8()?,
            userid: r.i32()?,
            userinfo: r.string()?,
        },
        41 => {
            if ext.fte_asked(r, ext::FTE_CHUNKEDDOWNLOADS) {
                let chunk = r.i32()?;
                if chunk < 0 {
                    let size = r.i32()?;
                    let name = r.string()?;
                    Download {
                        chunk: Some(chunk),
                        size,
                        percent: None,
                        name: Some(name),
                        data_len: 0,
                    }
                } else {
                    r.bytes(1024)?;
                    Download {
                        chunk: Some(chunk),
                        size: 1024,
                        percent: None,
                        name: None,
                        data_len: 1024,
                    }
                }
            } else {
                let size = i32::from(r.i16()?);
                let percent = Some(r.u8()?);
                let n = usize::try_from(size).unwrap_or(0);
                r.bytes(n)?;
                Download {
                    chunk: None,
                    size,
                    percent,
                    name: None,
                    data_len: n,
                }
            }
        }
        42 => {
            let p = if st.mvd {
                let p = playerinfo::read_mvd(r, &ext, &st.mvd_players)?;
                if let Some(slot) = st.mvd_players.get_mut(usize::from(p.num)) {
                    *slot = p;
                }
                p
            } else {
                playerinfo::read_netchan(r, &ext)?
            };
            if let Some(slot) = st.players.get_mut(usize::from(p.num)) {
                *slot = Some(p);
            }
            Playerinfo(p)
        }
        43 => Nails {
            projectiles: projectiles(r, false)?,
        },
        54 => Nails2 {
            projectiles: projectiles(r, true)?,
        },
        44 => Choke { count: r.u8()? },
        45 => {
            let start = u16::from(r.u8()?);
            Modellist(name_list(r, start)?)
        }
        46 => {
            let start = u16::from(r.u8()?);
            Soundlist(name_list(r, start)?)
        }
        60 => {
            let start = r.u16()?;
            FteModellistshort(name_list(r, start)?)
        }
        47 | 48 => {
            let delta = id == 48;
            let (from, base) = if delta {
                let from = r.u8()?;
                (Some(from), st.delta_base(from))
            } else {
                (None, None)
            };
            let old: Vec<EntityState> = base.as_ref().map(|b| b.1.clone()).unwrap_or_default();
            let (mut pe, ents) =
                entity::read_packet_entities(r, &old, &st.baselines, !delta, &ext)?;
            pe.from = from;
            pe.base_seq = base.as_ref().map(|b| b.0);
            if let Some((_, _, exact, found)) = &base {
                pe.approximate = !exact;
                if !found {
                    st.soft_error.get_or_insert(DecodeError {
                        what: format!(
                            "delta packetentities from {} but that frame is not in the capture; decoded against frame {}",
                            from.unwrap_or(0),
                            pe.base_seq.unwrap_or(0)
                        ),
                        at: id_at,
                    });
                }
            }
            if !st.baselines_known {
                // Mid-session, before any serverdata: neither the baselines nor the base
                // frames were captured. The bytes are read (their length does not depend on
                // the base); the values are unknown, never guessed.
                pe.entities.clear();
                pe.removed.clear();
                pe.count = 0;
                pe.approximate = false;
                pe.base_missing = true;
            } else if !delta || base.is_some() {
                st.store_frame(ents, !pe.approximate);
            } else {
                // Like ezQuake's FlushEntityPacket: the bytes are read (their length does not
                // depend on the base) but the frame is unusable; the message goes on.
                pe.entities.clear();
                pe.removed.clear();
                pe.count = 0;
                pe.base_missing = true;
                st.soft_error.get_or_insert(DecodeError {
                    what: format!(
                        "delta packetentities from {} but that frame is not held",
                        from.unwrap_or(0)
                    ),
                    at: id_at,
                });
            }
            if delta {
                Deltapacketentities(pe)
            } else {
                Packetentities(pe)
            }
        }
        49 => Maxspeed { value: r.f32()? },
        50 => Entgravity { value: r.f32()? },
        51 => Setinfo {
            slot: r.u8()?,
            key: r.string()?,
            value: r.string()?,
        },
        52 => Serverinfo {
            key: r.string()?,
            value: r.string()?,
        },
        53 => Updatepl {
            slot: r.u8()?,
            pl: r.u8()?,
        },
        83 => {
            r.bytes(34)?;
            Qizmovoice { len: 34 }
        }
        84 => {
            let sender = r.u8()?;
            let gen = r.u8()?;
            let seq = r.u8()?;
            let len = r.u16()?;
            r.bytes(usize::from(len))?;
            FteVoicechat {
                sender,
                gen,
                seq,
                len,
            }
        }
        other => {
            return Err(DecodeError {
                what: format!("unknown svc {other}"),
                at: id_at,
            })
        }
    })
}

#[cfg(test)]
#[path = "svc_tests.rs"]
mod tests;
