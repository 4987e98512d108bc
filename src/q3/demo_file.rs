//! Decoding a whole Quake 3 demo file (.dm_66/67/68/71) through the same decoders as
//! captures: the Quake 3 twin of `qw::decode_demo_file`. A demo holds only what the client
//! received, so every record becomes one server [`Message`] of flow 1.
//!
//! [`Decoder`] streams the messages (an iterator, so a caller can hand each one on and drop
//! it); [`decode_demo_file`] collects them, with the same shape as QuakeWorld's.
use super::bits::BitReader;
use super::conn;
use super::demo::Reader;
use super::message::{Body, Message};
use super::state::ClientState;
use super::svc::{self, Detail};
use crate::error::Error;
use crate::flow::{Dir, FlowSummary};

/// The protocol a demo file's name gives by its extension (`x.dm_68` → 68).
pub fn protocol_of(name: &str) -> Option<u32> {
    let (_, ext) = name.rsplit_once('.')?;
    ext.strip_prefix("dm_")?.parse().ok()
}

/// The protocol a demo's content names: `protocol` in the serverinfo (configstring 0) of its
/// first gamestate, which every engine writes (`\\protocol\\68`, Quake Live's `\\protocol\\90`).
/// The gamestate's configstrings come before its baselines, so this reads no field table:
/// only the first few records are looked at, and `None` when none of them tells.
pub fn protocol_in(data: &[u8]) -> Option<u32> {
    Reader::new(data)
        .take(4)
        .map_while(Result::ok)
        .find_map(|rec| serverinfo_protocol(rec.body))
}

/// `protocol` of configstring 0 in a message that opens with a gamestate.
fn serverinfo_protocol(body: &[u8]) -> Option<u32> {
    let mut r = BitReader::new(body);
    r.read_long().ok()?; // reliableAcknowledge
    if r.read_byte().ok()? != svc::SVC_GAMESTATE {
        return None;
    }
    // The server command sequence; then the configstrings in index order, 0 the first.
    r.read_long().ok()?;
    if r.read_byte().ok()? != svc::SVC_CONFIGSTRING || r.read_short().ok()? != 0 {
        return None;
    }
    let info = r.read_big_string().ok()?;
    crate::vocab::info::value_any_case(&info, "protocol")?
        .trim()
        .parse()
        .ok()
}

/// The protocol to read a demo with: the one its name gives (`x.dm_68`), unless its content
/// names one of other tables (a Quake Live demo renamed `.dm_68`, or read from standard
/// input with no name): `protocol_in` decides then. An ioquake3 server of protocol 71
/// writes 71 in the serverinfo of a legacy client's `.dm_68`; the name's number is kept
/// where both read the same.
pub fn protocol_for(named: Option<u32>, data: &[u8]) -> Option<u32> {
    use super::protocol::Protocol;
    match (named, protocol_in(data)) {
        (Some(n), Some(c)) if Protocol::of(n).number == Protocol::of(c).number => Some(n),
        (_, Some(c)) => Some(c),
        (n, None) => n,
    }
}

/// The game time a demo covers: forward steps between consecutive snapshots, a gamestate
/// (map change, where server time restarts) breaking the chain.
#[derive(Debug, Default)]
struct GameClock {
    /// The gamestate count and snapshot number last seen (a new snapshot changes the number).
    gamestates: u32,
    snap_num: Option<i32>,
    last: Option<i32>,
    ms: u64,
}

impl GameClock {
    /// Look at the client state after a record (it is kept in every detail mode; the ops
    /// are not).
    fn observe(&mut self, st: &ClientState) {
        if st.gamestates != self.gamestates {
            self.gamestates = st.gamestates;
            self.last = None;
        }
        let Some(t) = st.last_snap_time else { return };
        if self.snap_num == Some(st.last_snap_num) {
            return;
        }
        self.snap_num = Some(st.last_snap_num);
        if let Some(prev) = self.last {
            self.ms += u64::try_from(i64::from(t) - i64::from(prev)).unwrap_or(0);
        }
        self.last = Some(t);
    }

    fn seconds(&self) -> Option<f64> {
        self.snap_num.map(|_| self.ms as f64 / 1000.0)
    }
}

/// Decodes the records of one demo held in memory, yielding a [`Message`] per record when
/// the options ask for messages (`emit` or `keep_raw`); otherwise it only fills the summary.
pub struct Decoder<'a> {
    records: Reader<'a>,
    state: ClientState,
    detail: Detail,
    emit: bool,
    keep_raw: bool,
    summary: FlowSummary,
    clock: GameClock,
    /// Records read (those the framing could not read are only in the warnings).
    records_read: u64,
    /// Record framing problems (truncation, bad lengths), in file order.
    warnings: Vec<Error>,
    /// Gamestates whose map the summary has.
    gamestates_seen: u32,
}

impl<'a> Decoder<'a> {
    /// The decoder of demo `data`, its messages decoded at `detail` ([`Detail::Full`]: all
    /// of them); `name` names the file in the summary, its extension gives the protocol
    /// unless the content names another ([`protocol_for`]).
    ///
    /// [`Detail::Full`]: crate::vocab::Detail::Full
    pub fn open(name: &str, data: &'a [u8], detail: crate::vocab::Detail) -> Self {
        let opts = conn::Options {
            detail,
            ..Default::default()
        };
        Self::new(name, data, protocol_of(name), opts)
    }

    /// `name` names the file in the summary; `protocol` is the one the name gives, read as
    /// [`protocol_for`] says with the content (messages carry 68 when neither tells).
    pub(crate) fn new(
        name: &str,
        data: &'a [u8],
        protocol: Option<u32>,
        opts: conn::Options,
    ) -> Self {
        let protocol = protocol_for(protocol, data);
        let mut state = ClientState::default();
        state.proto = crate::q3::protocol::Protocol::of(protocol.unwrap_or(68));
        state.pool.roomy();
        Decoder {
            records: Reader::new(data),
            state,
            detail: opts.detail(),
            emit: opts.emit(),
            keep_raw: opts.keep_raw,
            gamestates_seen: 0,
            summary: FlowSummary {
                id: 1,
                game: "q3",
                kind: "demo",
                server: name.to_string(),
                protocol,
                ..Default::default()
            },
            records_read: 0,
            warnings: Vec::new(),
            clock: GameClock::default(),
        }
    }

    /// Records read so far.
    pub fn records(&self) -> u64 {
        self.records_read
    }

    /// Take the framing problems found so far (each also counted as an error of the flow).
    pub fn take_warnings(&mut self) -> Vec<Error> {
        std::mem::take(&mut self.warnings)
    }

    /// The demo's one flow (call after the iterator ended).
    pub fn finish(mut self) -> Vec<FlowSummary> {
        self.summary.game_seconds = self.clock.seconds();
        self.note_players();
        vec![self.summary]
    }

    /// List who plays now: at each gamestate and at the end (one who came and went between
    /// the two is not listed; a scan per record would cost more than the list is worth).
    fn note_players(&mut self) {
        for p in self.state.players() {
            self.summary.add_player(&p);
        }
    }

    /// Decode one record body; the message is built only when someone takes it.
    fn record(&mut self, index: u64, offset: u64, seq: i32, body: &[u8]) -> Option<Message> {
        self.records_read += 1;
        self.summary.count_packet(Dir::S2c, body.len(), 0);
        let mut r = BitReader::new(body);
        let parsed =
            svc::parse_server_message_with(&mut r, None, seq, &mut self.state, self.detail);
        // The bit is in the record's body, the byte is where the record starts in the file.
        let error = parsed
            .error
            .as_ref()
            .map(|e| Box::new(Error::from(e).record(index).byte(offset).dir(Dir::S2c)));
        if let Some(e) = &error {
            self.summary.push_error(Error::clone(e));
        }
        if self.summary.name.is_none() && self.state.gamestates > 0 {
            self.summary.name = self.state.player_name(self.state.client_num);
        }
        if self.state.gamestates != self.gamestates_seen {
            self.gamestates_seen = self.state.gamestates;
            if let Some(map) = self.state.map_name() {
                self.summary.add_map(&map);
            }
            if self.summary.game_type.is_none() {
                self.summary.game_type = self.state.game_type().map(str::to_string);
            }
            self.note_players();
        }
        self.clock.observe(&self.state);
        (self.emit || self.keep_raw).then(|| Message {
            flow: 1,
            game: "q3",
            dir: Dir::S2c,
            frame: index,
            time: 0.0,
            seq: Some(seq),
            fragmented: false,
            kind: "server",
            body: Body::Server(parsed),
            error,
            raw: self.keep_raw.then(|| body.to_vec()),
            protocol: self.summary.protocol.unwrap_or(68),
            client_gone: false,
            size: body.len(),
            file_offset: Some(offset),
        })
    }
}

impl Iterator for Decoder<'_> {
    type Item = Message;

    fn next(&mut self) -> Option<Message> {
        loop {
            let rec = match self.records.next()? {
                Ok(r) => r,
                Err(e) => {
                    // Framing errors have no record number of their own: frame 0.
                    let err = Error::from(&e).dir(Dir::S2c);
                    self.summary.push_error(err.clone());
                    self.warnings.push(err);
                    continue;
                }
            };
            if let Some(m) = self.record(rec.index, rec.offset, rec.seq, rec.body) {
                return Some(m);
            }
        }
    }
}

/// Decode a whole demo, every message in full (protocol from the name's extension). Every
/// record becomes one message of flow 1 in `out`; the summary counts records and errors. A
/// damaged file ends with errors, never a panic. The same shape as
/// [`crate::qw::decode_demo_file`]; [`Decoder::open`] decodes at another detail, record by
/// record.
pub fn decode_demo_file(name: &str, data: &[u8], out: &mut Vec<Message>) -> Vec<FlowSummary> {
    let mut dec = Decoder::open(name, data, crate::vocab::Detail::Full);
    out.extend(&mut dec);
    dec.finish()
}
