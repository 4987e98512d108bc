//! The tables `quakecap export` writes and their columns: the one place the schema is
//! defined (README, "Export to Parquet", documents it column by column).
use parquet::schema::types::Type;

/// A column's logical type (Parquet physical type in brackets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColType {
    /// `int32`
    I32,
    /// `int64`
    I64,
    /// `double`
    F64,
    /// `boolean`
    Bool,
    /// `binary (STRING)`, UTF-8
    Str,
}

/// One column of a table.
#[derive(Debug)]
pub struct Column {
    /// The column's name, as `docs/reference.md` lists it.
    pub name: &'static str,
    /// Its type.
    pub ty: ColType,
    /// It may hold nulls (`optional` in Parquet, marked `?` in the reference).
    pub nullable: bool,
}

/// One table `quakecap export` writes.
#[derive(Debug)]
pub struct Table {
    /// The table's name, also its folder: `OUT/<name>/source=<input>/part-0.parquet`.
    pub name: &'static str,
    /// Its columns, in the order of every row.
    pub columns: &'static [Column],
}

impl Table {
    /// The Parquet message type of the table.
    pub fn parquet_schema(&self) -> parquet::errors::Result<Type> {
        let mut s = format!("message {} {{\n", self.name);
        for c in self.columns {
            let rep = if c.nullable { "optional" } else { "required" };
            let ty = match c.ty {
                ColType::I32 => "int32",
                ColType::I64 => "int64",
                ColType::F64 => "double",
                ColType::Bool => "boolean",
                ColType::Str => "binary",
            };
            let ann = if c.ty == ColType::Str {
                " (STRING)"
            } else {
                ""
            };
            s.push_str(&format!("  {rep} {ty} {}{ann};\n", c.name));
        }
        s.push('}');
        parquet::schema::parser::parse_message_type(&s)
    }

    /// Index of a column by name.
    pub fn index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }
}

const fn req(name: &'static str, ty: ColType) -> Column {
    Column {
        name,
        ty,
        nullable: false,
    }
}
const fn opt(name: &'static str, ty: ColType) -> Column {
    Column {
        name,
        ty,
        nullable: true,
    }
}

use ColType::*;

/// One row per flow of the input (`quakecap flows --json`).
pub const FLOWS: Table = Table {
    name: "flows",
    columns: &[
        req("flow", I64),
        req("game", Str),
        req("kind", Str),
        opt("protocol", I64),
        req("server", Str),
        req("client_ip", Str),
        req("client_ports", Str),
        opt("qport", I32),
        opt("name", Str),
        opt("map", Str),
        req("packets_c2s", I64),
        req("packets_s2c", I64),
        req("bytes_c2s", I64),
        req("bytes_s2c", I64),
        req("dropped_c2s", I64),
        req("dropped_s2c", I64),
        req("errors", I64),
        req("first_time", F64),
        req("last_time", F64),
    ],
};

/// One row per decoded message (`quakecap decode --json` line).
pub const MESSAGES: Table = Table {
    name: "messages",
    columns: &[
        req("flow", I64),
        req("game", Str),
        req("dir", Str),
        req("frame", I64),
        req("time", F64),
        opt("seq", I64),
        req("kind", Str),
        req("size", I64),
        req("ops", I32),
        req("fragmented", Bool),
        opt("error", Str),
    ],
};

/// One row per user command a client message carries.
pub const USERCMDS: Table = Table {
    name: "usercmds",
    columns: &[
        req("flow", I64),
        req("game", Str),
        req("frame", I64),
        req("time", F64),
        req("slot", I32),
        opt("server_time", I32),
        opt("msec", I32),
        req("pitch", F64),
        req("yaw", F64),
        req("roll", F64),
        req("forward", I32),
        req("right", I32),
        req("up", I32),
        req("buttons", I32),
        opt("weapon", I32),
        opt("impulse", I32),
    ],
};

/// One row per player state: a Quake 3 snapshot's playerstate, a QuakeWorld playerinfo.
pub const PLAYER_STATES: Table = Table {
    name: "player_states",
    columns: &[
        req("flow", I64),
        req("game", Str),
        req("frame", I64),
        req("time", F64),
        opt("server_time", I32),
        opt("valid", Bool),
        req("client_num", I32),
        req("origin_x", F64),
        req("origin_y", F64),
        req("origin_z", F64),
        req("velocity_x", F64),
        req("velocity_y", F64),
        req("velocity_z", F64),
        opt("pitch", F64),
        opt("yaw", F64),
        opt("roll", F64),
        opt("health", I32),
        opt("weapon", I32),
    ],
};

/// One row per command the server sent (Quake 3 `svc_serverCommand`; QuakeWorld
/// `svc_print`, `svc_stufftext`, `svc_centerprint`).
pub const SERVER_COMMANDS: Table = Table {
    name: "server_commands",
    columns: &[
        req("flow", I64),
        req("game", Str),
        req("frame", I64),
        req("time", F64),
        req("op", Str),
        opt("seq", I64),
        opt("new", Bool),
        opt("level", I32),
        req("text", Str),
    ],
};

/// One row per game event (`quakecap events --json`).
pub const EVENTS: Table = Table {
    name: "events",
    columns: &[
        req("time", F64),
        opt("game_time", I64),
        opt("session_time", F64),
        req("kind", Str),
        opt("flow", I64),
        opt("server", Str),
        opt("killer", Str),
        opt("victim", Str),
        opt("mod", Str),
        opt("suicide", Bool),
        opt("team_kill", Bool),
        opt("name", Str),
        opt("text", Str),
        req("detail", Str),
    ],
};

/// One row per netchan datagram of a connection (the `net` analysis' input).
pub const SAMPLES: Table = Table {
    name: "samples",
    columns: &[
        req("flow", I64),
        req("dir", Str),
        req("time", F64),
        req("bytes", I64),
        req("seq", I64),
        req("arrival", Str),
        req("gap", I64),
        opt("ack", I64),
        req("reliable", Bool),
        req("fragmented", Bool),
        opt("server_time", I32),
        opt("rate_delayed", Bool),
        opt("command_time", I32),
        opt("cmds_new", I32),
        opt("cmds_last_time", I32),
    ],
};

/// Every table, in the order they are written.
pub const TABLES: [&Table; 7] = [
    &FLOWS,
    &MESSAGES,
    &USERCMDS,
    &PLAYER_STATES,
    &SERVER_COMMANDS,
    &EVENTS,
    &SAMPLES,
];
