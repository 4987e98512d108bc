//! Server → client messages (spec §6): one [`ServerOp`] per svc, decoded with the connection's
//! [`ServerState`] (extensions, baselines, the 64-frame entity ring).
use super::cursor::{DecodeError, Reader, Result};
use super::entity::{self, EntityState, PacketEntities, MAX_EDICTS};
use super::ext::{self, Ext};
use super::playerinfo::{self, PlayerInfo};
use serde::Serialize;

/// Decoded svc_serverdata.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerData {
    pub ext: Ext,
    pub protocol: i32,
    pub spawncount: i32,
    pub gamedir: String,
    /// Player slot (bit 7 = spectator) — netchan streams only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub playernum: Option<u8>,
    /// Demo time — .mvd only, in place of playernum.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub demotime: Option<f32>,
    pub levelname: String,
    pub movevars: [f32; 10],
}

/// A name list (svc_modellist, svc_soundlist, svc_fte_modellistshort).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NameList {
    pub start: u16,
    pub names: Vec<String>,
    pub next: u8,
}

/// One server message. The JSON `op` is ezQuake's svc name without `svc_`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum ServerOp {
    Nop,
    Disconnect {
        #[serde(skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
    Updatestat {
        stat: u8,
        value: i32,
    },
    Updatestatlong {
        stat: u8,
        value: i32,
    },
    Sound {
        entity: u16,
        channel: u8,
        volume: u8,
        attenuation: f32,
        sound: u8,
        origin: [f32; 3],
    },
    Print {
        level: u8,
        text: String,
    },
    Stufftext {
        text: String,
    },
    Setangle {
        #[serde(skip_serializing_if = "Option::is_none")]
        player: Option<u8>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<u8>,
        angles: [f32; 3],
    },
    Serverdata(ServerData),
    Lightstyle {
        index: u8,
        style: String,
    },
    Updatefrags {
        slot: u8,
        frags: i16,
    },
    Stopsound {
        entity: u16,
        channel: u8,
    },
    Damage {
        armor: u8,
        blood: u8,
        from: [f32; 3],
    },
    Spawnstatic(EntityState),
    Spawnbaseline(EntityState),
    FteSpawnstatic2(EntityState),
    FteSpawnbaseline2(EntityState),
    TempEntity {
        kind: u8,
        #[serde(skip_serializing_if = "Option::is_none")]
        entity: Option<u16>,
        #[serde(skip_serializing_if = "Option::is_none")]
        count: Option<u8>,
        origin: [f32; 3],
        #[serde(skip_serializing_if = "Option::is_none")]
        end: Option<[f32; 3]>,
    },
    Setpause {
        paused: bool,
    },
    Centerprint {
        text: String,
    },
    Killedmonster,
    Foundsecret,
    Spawnstaticsound {
        origin: [f32; 3],
        sound: u8,
        volume: u8,
        attenuation: u8,
    },
    Intermission {
        origin: [f32; 3],
        angles: [f32; 3],
    },
    Finale {
        text: String,
    },
    Cdtrack {
        track: u8,
    },
    Sellscreen,
    Smallkick,
    Bigkick,
    Updateping {
        slot: u8,
        ping: i16,
    },
    Updateentertime {
        slot: u8,
        seconds_ago: f32,
    },
    Muzzleflash {
        entity: i16,
    },
    Updateuserinfo {
        slot: u8,
        userid: i32,
        userinfo: String,
    },
    Download {
        /// Chunked (FTE CHUNKEDDOWNLOADS) form: chunk number, or a negative status.
        #[serde(skip_serializing_if = "Option::is_none")]
        chunk: Option<i32>,
        /// Vanilla: block size (−1 not found); chunked status: total size / error code.
        size: i32,
        #[serde(skip_serializing_if = "Option::is_none")]
        percent: Option<u8>,
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        data_len: usize,
    },
    Playerinfo(PlayerInfo),
    Nails {
        projectiles: Vec<Projectile>,
    },
    Nails2 {
        projectiles: Vec<Projectile>,
    },
    Choke {
        count: u8,
    },
    Modellist(NameList),
    Soundlist(NameList),
    FteModellistshort(NameList),
    Packetentities(PacketEntities),
    Deltapacketentities(PacketEntities),
    Maxspeed {
        value: f32,
    },
    Entgravity {
        value: f32,
    },
    Setinfo {
        slot: u8,
        key: String,
        value: String,
    },
    Serverinfo {
        key: String,
        value: String,
    },
    Updatepl {
        slot: u8,
        pl: u8,
    },
    Qizmovoice {
        len: usize,
    },
    FteVoicechat {
        sender: u8,
        gen: u8,
        seq: u8,
        len: u16,
    },
}

/// One nail/spike (svc_nails, svc_nails2).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Projectile {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<u8>,
    pub origin: [f32; 3],
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

const UPDATE_BACKUP: usize = 64;

/// What the decoder must remember between server messages of one connection or demo.
#[derive(Debug, Clone)]
pub struct ServerState {
    pub ext: Ext,
    /// Decoding an .mvd stream (no netchan; DF_ playerinfo; float time in serverdata).
    pub mvd: bool,
    pub serverdata: Option<ServerData>,
    /// Sequence of the s2c packet being decoded (entity frames are stored under it).
    pub seq: u32,
    baselines: Vec<EntityState>,
    /// (sequence, entities, exact): `exact` is false for a frame decoded against a stand-in
    /// base because its real base was in a packet the capture does not have.
    frames: Vec<Option<(u32, Vec<EntityState>, bool)>>,
    /// MVD: the last frame (deltas always come from the previous frame there).
    last_frame: Vec<EntityState>,
    mvd_players: [PlayerInfo; 32],
    /// Netchan streams: the latest playerinfo per slot (for state comparisons).
    pub players: [Option<PlayerInfo>; 32],
    /// A problem that did not stop the message (reported after the message is read).
    soft_error: Option<DecodeError>,
}

impl ServerState {
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
    fn new_level(&mut self, sd: &ServerData) {
        self.ext = sd.ext;
        self.baselines
            .iter_mut()
            .for_each(|b| *b = EntityState::default());
        self.frames.iter_mut().for_each(|f| *f = None);
        self.last_frame.clear();
        self.mvd_players = [PlayerInfo::default(); 32];
        self.players = [None; 32];
    }

    fn store_frame(&mut self, ents: Vec<EntityState>, exact: bool) {
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
    fn delta_base(&self, from: u8) -> Option<(u32, Vec<EntityState>, bool, bool)> {
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
            let reason = if !st.mvd && ext.mvd1 & ext::MVD1_HIGHLAGTELEPORT != 0 {
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
            if ext.fte(ext::FTE_CHUNKEDDOWNLOADS) {
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
            if !delta || base.is_some() {
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
mod tests {
    use super::*;

    fn parse(st: &mut ServerState, bytes: &[u8]) -> Vec<ServerOp> {
        let (ops, err) = parse_message(st, &mut Reader::new(bytes));
        assert_eq!(err, None);
        ops.into_iter().map(|(_, o)| o).collect()
    }

    /// svc_serverdata with the given extension pairs, protocol 28, spawncount 7, "qw", player 0.
    fn serverdata(pairs: &[(u32, u32)]) -> Vec<u8> {
        let mut b = vec![11];
        for (m, f) in pairs {
            b.extend_from_slice(&m.to_le_bytes());
            b.extend_from_slice(&f.to_le_bytes());
        }
        b.extend_from_slice(&28i32.to_le_bytes());
        b.extend_from_slice(&7i32.to_le_bytes());
        b.extend_from_slice(b"qw\0");
        b.push(0);
        b.extend_from_slice(b"Map\0");
        b.extend_from_slice(&[0u8; 40]);
        b
    }

    #[test]
    fn serverdata_sets_extensions_and_bigcoords_change_coords() {
        let mut st = ServerState::new(false);
        let mut b = serverdata(&[(ext::MAGIC_FTE, ext::FTE_FLOATCOORDS)]);
        // svc_damage: armor, blood, 3 float coords (FTE_PEXT_FLOATCOORDS).
        b.extend_from_slice(&[19, 5, 6]);
        for v in [1.5f32, -2.0, 1000.25] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        let ops = parse(&mut st, &b);
        assert!(
            matches!(&ops[0], ServerOp::Serverdata(sd) if sd.ext.fte == ext::FTE_FLOATCOORDS && sd.spawncount == 7)
        );
        assert_eq!(
            ops[1],
            ServerOp::Damage {
                armor: 5,
                blood: 6,
                from: [1.5, -2.0, 1000.25]
            }
        );
    }

    #[test]
    fn trans_playerinfo_reads_the_extra_flag_byte_and_alpha() {
        let mut st = ServerState::new(false);
        let mut b = serverdata(&[(ext::MAGIC_FTE, ext::FTE_TRANS)]);
        // player 3, flags PF_EXTRA_PFS with extra byte 0x02 (PF_TRANS_Z), origin 3 coords,
        // frame 9, alpha 128.
        b.extend_from_slice(&[42, 3, 0x00, 0x80, 0x02, 8, 0, 16, 0, 0xf8, 0xff, 9, 128]);
        let ops = parse(&mut st, &b);
        match &ops[1] {
            ServerOp::Playerinfo(p) => {
                assert_eq!(p.num, 3);
                assert_eq!(p.origin, [1.0, 2.0, -1.0]);
                assert_eq!(p.frame, 9);
                assert_eq!(p.alpha, Some(128));
            }
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn entitydbl_numbers_and_removal_flags() {
        let mut st = ServerState::new(false);
        let mut b = serverdata(&[(ext::MAGIC_FTE, ext::FTE_ENTITYDBL | ext::FTE_ENTITYDBL2)]);
        // Full update: entity 5+512+1024 with U_MOREBITS, morebits EVENMORE|MODEL, evenmore
        // ENTITYDBL|ENTITYDBL2, model 7; end.
        b.extend_from_slice(&[47, 5, 0x80, 0x84, 0x60, 7, 0, 0]);
        let ops = parse(&mut st, &b);
        match &ops[1] {
            ServerOp::Packetentities(pe) => {
                assert_eq!(pe.entities.len(), 1);
                assert_eq!(pe.entities[0].num, 5 + 512 + 1024);
                assert_eq!(pe.entities[0].model, 7);
            }
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn delta_needs_its_base_frame() {
        let mut st = ServerState::new(false);
        parse(&mut st, &serverdata(&[]));
        st.seq = 10;
        // Full update with entity 1 (model byte 4).
        parse(&mut st, &[47, 1, 0x80, 0x04, 4, 0, 0]);
        st.seq = 11;
        // Delta from 10: entity 1 frame 3.
        let ops = parse(&mut st, &[48, 10, 1, 0x20, 3, 0, 0]);
        match &ops[0] {
            ServerOp::Deltapacketentities(pe) => {
                assert_eq!(pe.base_seq, Some(10));
                assert_eq!(pe.entities[0].model, 4);
                assert_eq!(pe.entities[0].frame, 3);
                assert_eq!(pe.count, 1);
            }
            o => panic!("{o:?}"),
        }
        // Delta from a frame never seen: reported, decoded against the newest frame held
        // (flagged approximate), and the message goes on (here with an svc_nop after it).
        st.seq = 12;
        let (ops, err) = parse_message(&mut st, &mut Reader::new(&[48, 200, 1, 0x20, 3, 0, 0, 1]));
        assert!(err.is_some_and(|e| e.what.contains("not in the capture")));
        assert!(
            matches!(&ops[0].1, ServerOp::Deltapacketentities(pe) if pe.approximate && pe.base_seq == Some(11))
        );
        assert_eq!(ops[1].1, ServerOp::Nop);
    }

    #[test]
    fn downloads_vanilla_and_chunked() {
        let mut st = ServerState::new(false);
        parse(&mut st, &serverdata(&[]));
        let ops = parse(
            &mut st,
            &[41, 3, 0, 50, b'a', b'b', b'c', 41, 0xff, 0xff, 0],
        );
        assert_eq!(ops.len(), 2);
        assert!(matches!(
            ops[0],
            ServerOp::Download {
                size: 3,
                data_len: 3,
                percent: Some(50),
                ..
            }
        ));
        assert!(matches!(
            ops[1],
            ServerOp::Download {
                size: -1,
                data_len: 0,
                ..
            }
        ));
        parse(
            &mut st,
            &serverdata(&[(ext::MAGIC_FTE, ext::FTE_CHUNKEDDOWNLOADS)]),
        );
        let mut b = vec![41];
        b.extend_from_slice(&(-1i32).to_le_bytes());
        b.extend_from_slice(&(-1i32).to_le_bytes());
        b.extend_from_slice(b"skins/base.pcx\0");
        b.push(41);
        b.extend_from_slice(&2i32.to_le_bytes());
        b.extend_from_slice(&[0u8; 1024]);
        let ops = parse(&mut st, &b);
        assert!(
            matches!(&ops[0], ServerOp::Download { chunk: Some(-1), size: -1, name: Some(n), .. } if n == "skins/base.pcx")
        );
        assert!(matches!(
            ops[1],
            ServerOp::Download {
                chunk: Some(2),
                data_len: 1024,
                ..
            }
        ));
    }

    #[test]
    fn nails_unpack() {
        let mut st = ServerState::new(false);
        // x = (0x800 << 1) - 4096 = 0, y = (0x800 << 1) - 4096 = 0 -> bytes 00 08 80 .., z 0
        let ops = parse(&mut st, &[43, 1, 0x00, 0x08, 0x80, 0x00, 0x48, 64]);
        match &ops[0] {
            ServerOp::Nails { projectiles } => {
                assert_eq!(projectiles[0].origin, [0.0, 0.0, 0.0]);
                assert_eq!(projectiles[0].angles, [4.0 * 22.5, 90.0]);
            }
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn setangle_with_highlagteleport_reason() {
        let mut st = ServerState::new(false);
        parse(
            &mut st,
            &serverdata(&[(ext::MAGIC_MVD1, ext::MVD1_HIGHLAGTELEPORT)]),
        );
        let ops = parse(&mut st, &[10, 1, 0, 64, 0]);
        assert_eq!(
            ops[0],
            ServerOp::Setangle {
                player: None,
                reason: Some(1),
                angles: [0.0, 90.0, 0.0]
            }
        );
    }

    #[test]
    fn unknown_svc_is_an_error_with_position() {
        let mut st = ServerState::new(false);
        let (ops, err) = parse_message(&mut st, &mut Reader::with_base(&[1, 0x7f], 8));
        assert_eq!(ops.len(), 1);
        assert_eq!(
            err,
            Some(DecodeError {
                what: "unknown svc 127".into(),
                at: 9
            })
        );
    }
}
