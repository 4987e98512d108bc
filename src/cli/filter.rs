//! `--from` / `--to` / `--player`: which messages of which flows a command looks at.
//! Times are capture time (epoch seconds, or `mm:ss` after the first game packet) or Quake 3
//! game time (`g` + seconds or `mm:ss`: Quake 3, the server time of the snapshots;
//! QuakeWorld, which sends no server time, the time since the level's `svc_serverdata`).
use std::collections::HashMap;
use std::io;

use anyhow::{bail, Result};
use quakecap::event::Event;
use quakecap::pipeline::{Report, Sink};
use quakecap::q3::svc::ServerOp;

/// One end of a time window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    /// Seconds since the Unix epoch.
    Epoch(f64),
    /// Seconds after the first game packet.
    Relative(f64),
    /// Game time, in ms: Quake 3 server time; QuakeWorld, time since the level's serverdata.
    Game(i64),
}

/// Parse `1795361230.5`, `0:12`, `1:02:03.5`, `+12`, `g30`, `g1:30`.
pub fn parse_bound(s: &str) -> Result<Bound> {
    let t = s.trim();
    if let Some(g) = t.strip_prefix('g') {
        return Ok(Bound::Game((clock(g, s)? * 1000.0).round() as i64));
    }
    let rel = t.strip_prefix('+').unwrap_or(t);
    let secs = clock(rel, s)?;
    // A bare number this large can only be an epoch time (1e9 s is 2001).
    if !t.contains(':') && !t.starts_with('+') && secs >= 1e9 {
        return Ok(Bound::Epoch(secs));
    }
    Ok(Bound::Relative(secs))
}

/// `[[h:]m:]s[.frac]` in seconds.
fn clock(t: &str, whole: &str) -> Result<f64> {
    let mut secs = 0.0;
    let parts: Vec<&str> = t.split(':').collect();
    if parts.len() > 3 || parts.iter().any(|p| p.is_empty()) {
        bail!("{whole:?}: not a time (use mm:ss, h:mm:ss, seconds, an epoch time, or g<time> for game time)");
    }
    for p in &parts {
        let v: f64 = p.parse().map_err(|_| {
            anyhow::anyhow!("{whole:?}: not a time (use mm:ss, h:mm:ss, seconds, an epoch time, or g<time> for game time)")
        })?;
        if !v.is_finite() || v < 0.0 {
            bail!("{whole:?}: not a time");
        }
        secs = secs * 60.0 + v;
    }
    Ok(secs)
}

/// The window and what passes through it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Window {
    pub from: Option<Bound>,
    pub to: Option<Bound>,
    /// Gamestate messages pass whatever their time (a demo cut needs its map's gamestate).
    pub keep_gamestates: bool,
}

impl Window {
    pub fn is_open(&self) -> bool {
        self.from.is_none() && self.to.is_none()
    }

    /// The same window for the QuakeWorld demo cutter.
    pub fn qw(&self) -> quakecap::qw::cut::Window {
        use quakecap::qw::cut::At;
        let at = |b: Bound| match b {
            Bound::Epoch(e) => At::Epoch(e),
            Bound::Relative(r) => At::Relative(r),
            Bound::Game(ms) => At::Game(ms as f64 / 1000.0),
        };
        quakecap::qw::cut::Window {
            from: self.from.map(at),
            to: self.to.map(at),
        }
    }
}

/// Passes the events inside the window to the inner sink.
pub struct Filter<'a> {
    inner: &'a mut dyn Sink,
    window: Window,
    first_time: Option<f64>,
    /// Per flow, the server time of the latest snapshot (messages without one share it).
    game_time: HashMap<u32, i64>,
    /// QuakeWorld: per flow, the time of the level's svc_serverdata.
    qw_level: HashMap<u32, f64>,
    /// Events passed on.
    pub passed: u64,
}

impl<'a> Filter<'a> {
    pub fn new(inner: &'a mut dyn Sink, window: Window) -> Self {
        Filter {
            inner,
            window,
            first_time: None,
            game_time: HashMap::new(),
            qw_level: HashMap::new(),
            passed: 0,
        }
    }

    fn inside(&self, b: Bound, time: f64, game: Option<i64>, after: bool) -> bool {
        let base = self.first_time.unwrap_or(time);
        let (v, bound) = match b {
            Bound::Epoch(e) => (time, e),
            Bound::Relative(r) => (time - base, r),
            // Before the first snapshot a flow has no game time: outside any game window.
            Bound::Game(g) => match game {
                Some(t) => (t as f64, g as f64),
                None => return false,
            },
        };
        if after {
            v >= bound
        } else {
            v <= bound
        }
    }

    fn keep(&self, time: f64, game: Option<i64>) -> bool {
        self.window
            .from
            .is_none_or(|b| self.inside(b, time, game, true))
            && self
                .window
                .to
                .is_none_or(|b| self.inside(b, time, game, false))
    }
}

impl Sink for Filter<'_> {
    fn event(&mut self, e: Event<'_>) -> io::Result<()> {
        let (flow, time) = match e {
            Event::Q3(m) => (m.flow, m.time),
            Event::Qw(m) => (m.flow, m.time),
            Event::QwRaw(p) => (p.flow, p.ts_ns as f64 / 1e9),
            _ => return self.inner.event(e),
        };
        self.first_time.get_or_insert(time);
        if let (Event::QwRaw(_), true) = (e, self.window.keep_gamestates) {
            // The QuakeWorld demo writer cuts on its own: it needs the packets before the
            // window to rebuild the client's state there (quakecap::qw::cut).
            self.passed += 1;
            return self.inner.event(e);
        }
        let mut gamestate = false;
        if let Event::Q3(m) = e {
            for op in m.server().map(|s| s.ops.as_slice()).unwrap_or(&[]) {
                match op {
                    ServerOp::Snapshot(s) => {
                        self.game_time.insert(flow, i64::from(s.server_time));
                    }
                    // Server time restarts with the map.
                    ServerOp::Gamestate(_) => {
                        self.game_time.remove(&flow);
                        gamestate = true;
                    }
                    _ => {}
                }
            }
        }
        if let Event::Qw(m) = e {
            // QuakeWorld packets carry no server time: game time is the time since the
            // level's svc_serverdata (a demo file's block times, a capture's packet times).
            let level = m.ops.iter().any(|op| {
                matches!(
                    op.kind,
                    quakecap::qw::OpKind::Server(quakecap::qw::svc::ServerOp::Serverdata(_))
                )
            });
            if level {
                self.qw_level.insert(flow, time);
            }
            if let Some(start) = self.qw_level.get(&flow) {
                let ms = ((time - start) * 1000.0).round() as i64;
                self.game_time.insert(flow, ms);
            }
        }
        let game = self.game_time.get(&flow).copied();
        if (gamestate && self.window.keep_gamestates) || self.keep(time, game) {
            self.passed += 1;
            return self.inner.event(e);
        }
        Ok(())
    }

    fn finish(&mut self, r: &Report) -> io::Result<()> {
        self.inner.finish(r)
    }
}

/// A name as players type it: colour codes and case ignored.
pub fn same_player(name: &str, wanted: &str) -> bool {
    let clean = |s: &str| {
        quakecap::sink::text::readable::q3_plain(&quakecap::sink::text::readable::qw_plain(s))
            .to_lowercase()
    };
    clean(name) == clean(wanted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds() {
        assert_eq!(parse_bound("1:30").ok(), Some(Bound::Relative(90.0)));
        assert_eq!(parse_bound("+12.5").ok(), Some(Bound::Relative(12.5)));
        assert_eq!(parse_bound("1:00:01").ok(), Some(Bound::Relative(3601.0)));
        assert_eq!(parse_bound("g1:30").ok(), Some(Bound::Game(90_000)));
        assert_eq!(
            parse_bound("1795361230.5").ok(),
            Some(Bound::Epoch(1_795_361_230.5))
        );
        assert!(parse_bound("soon").is_err());
        assert!(parse_bound("1::2").is_err());
        assert!(same_player("^1Lab^7Player1", "labplayer1"));
    }
}
