//! One side of a comparison: decode an input and send each accepted message's digest to the
//! aligner, labelled with its connection. Connections are named by their player (Quake 3:
//! the gamestate's clientNum and its player configstring; QuakeWorld: the serverdata's slot
//! and its userinfo), so the same player's connection pairs up across inputs whatever its
//! flow id; messages that come before the name is known wait here.
use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::sync::mpsc::SyncSender;
use std::sync::Arc;

use super::item::{Content, Feed, InputInfo, Item};
use super::{q3 as dq3, qw as dqw, DiffError};
use crate::flow::Dir;
use crate::pipeline::{self, Event, Options, Sink};
use crate::q3::oob::info_value;
use crate::q3::state::CS_PLAYERS;
use crate::qw::svc::ServerOp as QwOp;
use crate::qw::{NetchanStatus, OpKind};

/// Messages held per connection while its player is unknown; past it the connection is
/// named by its flow id.
const HOLD_MAX: usize = 2048;

#[derive(Default)]
struct FlowState {
    key: Option<Arc<str>>,
    held: Vec<Item>,
    game_time: Option<i64>,
    emitted_s2c: u64,
    qw_frames: dqw::Frames,
    qw_slot: Option<u8>,
    /// A .qwd's blocks after its dem_set, or all of them when it has none.
    qw_live: bool,
    /// A .qwd's blocks before its dem_set: the recorder's own copy of the signon when a
    /// dem_set follows (recorder-made, fake sequences), real ones when none comes.
    qw_preset: Vec<Item>,
    /// A .qwd's latest block, held back: ezQuake's `stop` ends the file with a print block
    /// of its own under the last sequence.
    qw_last: Option<Item>,
}

/// The sink that turns one input's events into [`Item`]s.
pub struct Digester {
    tx: SyncSender<Feed>,
    strict: bool,
    info: InputInfo,
    mvd: bool,
    flows: HashMap<u32, FlowState>,
    names: HashMap<String, usize>,
}

impl Digester {
    fn new(tx: SyncSender<Feed>, strict: bool, demo: bool, mvd: bool) -> Self {
        Digester {
            tx,
            strict,
            info: InputInfo {
                demo,
                ..Default::default()
            },
            mvd,
            flows: HashMap::new(),
            names: HashMap::new(),
        }
    }

    /// Give `flow` its connection name (`name#n`, n counting that player's connections).
    fn name(&mut self, flow: u32, name: &str) -> io::Result<()> {
        let st = self.flows.entry(flow).or_default();
        if st.key.is_some() {
            return Ok(());
        }
        let n = self.names.entry(name.to_string()).or_default();
        *n += 1;
        let key: Arc<str> = format!("{name}#{n}").into();
        self.info.connections.push(key.to_string());
        st.key = Some(key.clone());
        let held = std::mem::take(&mut st.held);
        for mut it in held {
            it.conn = key.clone();
            send(&self.tx, it)?;
        }
        Ok(())
    }

    /// Send `it` now when its connection is named, else hold it.
    fn put(&mut self, flow: u32, mut it: Item) -> io::Result<()> {
        let st = self.flows.entry(flow).or_default();
        if let Some(k) = &st.key {
            it.conn = k.clone();
            return send(&self.tx, it);
        }
        st.held.push(it);
        if st.held.len() > HOLD_MAX {
            self.name(flow, &format!("flow {flow}"))?;
        }
        Ok(())
    }

    /// Name every connection still unnamed by its flow id (end of input).
    fn flush(&mut self) -> io::Result<()> {
        self.qwd_end()?;
        let mut unnamed: Vec<u32> = self
            .flows
            .iter()
            .filter(|(_, s)| s.key.is_none() && !s.held.is_empty())
            .map(|(f, _)| *f)
            .collect();
        unnamed.sort_unstable();
        for f in unnamed {
            self.name(f, &format!("flow {f}"))?;
        }
        Ok(())
    }

    fn q3(&mut self, m: &crate::q3::message::Message) -> io::Result<()> {
        let st = self.flows.entry(m.flow).or_default();
        let content = match m.dir {
            Dir::S2c => {
                let Some(s) = dq3::server(m) else {
                    return Ok(());
                };
                if let Some(n) = &s.snapshot {
                    st.game_time = Some(i64::from(n.server_time));
                }
                Content::Q3Server(Box::new(s))
            }
            Dir::C2s => {
                let Some(c) = dq3::client(m) else {
                    return Ok(());
                };
                if let Some(u) = c.usercmds.last() {
                    st.game_time = Some(i64::from(u.server_time));
                }
                Content::Q3Client(Box::new(c))
            }
        };
        let synthetic = self.info.demo && m.dir == Dir::S2c && st.emitted_s2c == 0;
        if m.dir == Dir::S2c {
            st.emitted_s2c += 1;
        }
        let name = match &content {
            Content::Q3Server(s) => s.gamestate.as_ref().map(|g| {
                let cs = usize::try_from(g.client_num).ok().map(|c| c + CS_PLAYERS);
                g.configstrings
                    .iter()
                    .find(|c| Some(usize::from(c.index)) == cs)
                    .and_then(|c| info_value(&c.value, "n"))
                    .unwrap_or_else(|| format!("client {}", g.client_num))
            }),
            _ => None,
        };
        let it = Item {
            conn: Arc::from(""),
            dir: m.dir,
            seq: i64::from(m.seq.unwrap_or(0)),
            game_time: st.game_time,
            synthetic,
            content,
        };
        if let Some(n) = name {
            self.name(m.flow, &n)?;
        }
        self.put(m.flow, it)
    }

    fn qw(&mut self, m: &crate::qw::Message) -> io::Result<()> {
        if m.connectionless {
            return Ok(());
        }
        if self.mvd {
            self.name(m.flow, "mvd")?;
        }
        let st = self.flows.entry(m.flow).or_default();
        let name = qw_player(st, m);
        let qwd = self.info.demo && !self.mvd;
        if qwd && m.block == Some("set") {
            return self.qwd_set(m.flow);
        }
        let emit = if self.info.demo {
            m.dir == Dir::S2c && m.block == Some("read")
        } else {
            m.netchan == Some(NetchanStatus::Accepted)
        };
        if let Some(n) = name {
            self.name(m.flow, &n)?;
        }
        if !(emit || self.mvd && m.dir == Dir::S2c) {
            return Ok(());
        }
        let st = self.flows.entry(m.flow).or_default();
        let msg = match m.dir {
            Dir::S2c => dqw::server(m, &mut st.qw_frames, self.strict),
            Dir::C2s => dqw::client(m),
        };
        // ezQuake records a packet only when it had a message to parse: one with nothing
        // left to compare is not one.
        if msg.ops.is_empty() && msg.error.is_none() && !self.strict {
            return Ok(());
        }
        let seq = if self.mvd {
            m.frame as i64
        } else {
            m.seq.unwrap_or(0)
        };
        let it = Item {
            conn: Arc::from(""),
            dir: m.dir,
            seq,
            game_time: None,
            synthetic: false,
            content: Content::Qw(Box::new(msg)),
        };
        if !qwd {
            return self.put(m.flow, it);
        }
        if !st.qw_live {
            st.qw_preset.push(it);
            if st.qw_preset.len() > HOLD_MAX {
                st.qw_live = true;
                let pre = std::mem::take(&mut st.qw_preset);
                for x in pre {
                    self.put(m.flow, x)?;
                }
            }
            return Ok(());
        }
        match st.qw_last.replace(it) {
            Some(prev) => self.put(m.flow, prev),
            None => Ok(()),
        }
    }

    /// A .qwd's dem_set: what came before it was the recorder's signon copy.
    fn qwd_set(&mut self, flow: u32) -> io::Result<()> {
        let st = self.flows.entry(flow).or_default();
        st.qw_live = true;
        let pre = std::mem::take(&mut st.qw_preset);
        for mut x in pre {
            x.synthetic = true;
            self.put(flow, x)?;
        }
        Ok(())
    }

    /// End of a .qwd: its held blocks; a last block holding only a print is ezQuake's own.
    fn qwd_end(&mut self) -> io::Result<()> {
        let mut flows: Vec<u32> = self.flows.keys().copied().collect();
        flows.sort_unstable();
        for f in flows {
            let st = self.flows.entry(f).or_default();
            let pre = std::mem::take(&mut st.qw_preset);
            let last = st.qw_last.take();
            for x in pre {
                self.put(f, x)?;
            }
            if let Some(mut x) = last {
                if let Content::Qw(q) = &x.content {
                    x.synthetic = q.ops.len() == 1 && q.ops[0].0 == "svc_print";
                }
                self.put(f, x)?;
            }
        }
        Ok(())
    }
}

/// The player's name once a message makes it known (serverdata gives the slot, userinfo or
/// setinfo of that slot the name).
fn qw_player(st: &mut FlowState, m: &crate::qw::Message) -> Option<String> {
    if st.key.is_some() || m.dir != Dir::S2c {
        return None;
    }
    let mut found = None;
    for op in &m.ops {
        match &op.kind {
            OpKind::Server(QwOp::Serverdata(sd)) => {
                if let Some(p) = sd.playernum {
                    st.qw_slot = Some(p & 0x7f);
                }
            }
            OpKind::Server(QwOp::Updateuserinfo { slot, userinfo, .. })
                if Some(*slot) == st.qw_slot =>
            {
                found = info_value(userinfo, "name").or(found);
            }
            OpKind::Server(QwOp::Setinfo { slot, key, value })
                if Some(*slot) == st.qw_slot && key == "name" =>
            {
                found = Some(value.clone());
            }
            _ => {}
        }
    }
    found
}

fn send(tx: &SyncSender<Feed>, it: Item) -> io::Result<()> {
    tx.send(Feed::Item(it))
        .map_err(|_| io::Error::other("diff: the comparison stopped"))
}

impl Sink for Digester {
    fn event(&mut self, e: Event<'_>) -> io::Result<()> {
        match e {
            Event::Q3(m) => self.q3(m),
            Event::Qw(m) => self.qw(m),
            _ => Ok(()),
        }
    }
}

/// Decode `path` and feed its digests to `tx`; `Feed::End` is always sent last.
pub fn run(path: &Path, strict: bool, tx: SyncSender<Feed>) -> Result<InputInfo, DiffError> {
    let demo = pipeline::is_demo(path);
    let mvd = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("mvd"));
    let mut d = Digester::new(tx.clone(), strict, demo, mvd);
    let opts = Options {
        detail: crate::pipeline::Detail::Full,
        ..Default::default()
    };
    let r = if demo {
        pipeline::run_demo(path, &opts, &mut d)
    } else {
        pipeline::run_capture(path, &opts, &mut d, &mut |_| {})
    };
    let flushed = d.flush();
    let _ = tx.send(Feed::End);
    r?;
    flushed.map_err(|e| DiffError::Unusable(format!("{}: {e}", path.display())))?;
    Ok(d.info)
}
