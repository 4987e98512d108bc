//! `quakecap export`: every decoded message, user command, player state, server command, game
//! event and network sample of one input as Apache Parquet tables, one file per table, for
//! DuckDB, Spark or any Parquet reader.
//!
//! - [`schema`]: the tables and their columns (the one definition; README documents it).
//! - [`writer`]: one table's file, written a row group at a time (bounded memory).
//! - [`rows`]: what each event becomes in each table.
//! - [`partition`]: the Hive layout (`OUT/<table>/source=<name>/part-0.parquet`), the staging
//!   folder and the atomic replacement of a source's partitions.
//!
//! [`ExportSink`] streams the message tables as the pipeline decodes; `flows` (from the
//! input's report) and `events` (the game-events analyzer's merged timeline, which needs the
//! whole input) are written at [`Sink::finish`].
pub mod partition;
pub mod rows;
pub mod schema;
pub mod writer;

use std::io;
use std::path::Path;

use crate::pipeline::{Event, Options, Report, Sink};
use crate::sink::events::EventSink;
use partition::Staging;
use writer::TableWriter;

/// The pipeline options an export needs: every message, and the network samples.
pub fn options() -> Options {
    Options {
        detail: crate::pipeline::Detail::Full,
        keep_raw: false,
        flows: None,
        threads: Some(1),
        samples: true,
        follow: false,
    }
}

/// Rows written per table, in [`schema::TABLES`] order.
pub type Counts = [(&'static str, u64); 7];

/// Writes one input's tables into a staging folder; [`ExportSink::commit`] puts them in place.
pub struct ExportSink {
    staging: Option<Staging>,
    flows: TableWriter,
    messages: TableWriter,
    usercmds: TableWriter,
    player_states: TableWriter,
    server_commands: TableWriter,
    events: TableWriter,
    samples: TableWriter,
    analyzer: EventSink,
    finished: bool,
    /// The first write error: the output failed, not the input.
    write_error: Option<String>,
}

impl ExportSink {
    /// Start writing source `source` under `out`.
    pub fn new(out: &Path, source: &str) -> io::Result<Self> {
        let staging = Staging::new(out, source)?;
        let w = |t: &'static schema::Table| TableWriter::create(t, &staging.file(t.name));
        Ok(ExportSink {
            flows: w(&schema::FLOWS)?,
            messages: w(&schema::MESSAGES)?,
            usercmds: w(&schema::USERCMDS)?,
            player_states: w(&schema::PLAYER_STATES)?,
            server_commands: w(&schema::SERVER_COMMANDS)?,
            events: w(&schema::EVENTS)?,
            samples: w(&schema::SAMPLES)?,
            staging: Some(staging),
            analyzer: EventSink::new(),
            finished: false,
            write_error: None,
        })
    }

    fn streams(&mut self) -> rows::Streams<'_> {
        rows::Streams {
            messages: &mut self.messages,
            usercmds: &mut self.usercmds,
            player_states: &mut self.player_states,
            server_commands: &mut self.server_commands,
        }
    }

    /// Rows per table so far.
    pub fn counts(&self) -> Counts {
        [
            ("flows", self.flows.total),
            ("messages", self.messages.total),
            ("usercmds", self.usercmds.total),
            ("player_states", self.player_states.total),
            ("server_commands", self.server_commands.total),
            ("events", self.events.total),
            ("samples", self.samples.total),
        ]
    }

    /// Warnings of the game-events analyzer (malformed events, unknown mods): the first
    /// [`crate::pipeline::MAX_WARNINGS`].
    pub fn warnings(&self) -> &[crate::error::Error] {
        &self.analyzer.warnings
    }

    /// Every warning of the game-events analyzer, kept in [`Self::warnings`] or not.
    pub fn warnings_total(&self) -> u64 {
        self.analyzer.warnings_total
    }

    /// Replace the source's partitions with the files just written (after [`Sink::finish`]).
    pub fn commit(mut self) -> io::Result<Counts> {
        if !self.finished {
            return Err(io::Error::other("export not finished"));
        }
        let counts = self.counts();
        match self.staging.take() {
            Some(s) => s.commit()?,
            None => return Err(io::Error::other("export already committed")),
        }
        Ok(counts)
    }

    /// Why writing failed, when it did (the pipeline reports it as an error of the input).
    pub fn write_error(&self) -> Option<&str> {
        self.write_error.as_deref()
    }

    fn note(&mut self, r: io::Result<()>) -> io::Result<()> {
        if let Err(e) = &r {
            self.write_error.get_or_insert_with(|| e.to_string());
        }
        r
    }

    fn write_event(&mut self, e: Event<'_>) -> io::Result<()> {
        match e {
            Event::Q3(m) => rows::q3_message(m, &mut self.streams()),
            Event::Qw(m) => rows::qw_message(m, &mut self.streams()),
            Event::NetSample(s) => rows::sample(s, &mut self.samples),
            _ => Ok(()),
        }
    }

    fn write_finish(&mut self, report: &Report) -> io::Result<()> {
        self.analyzer.finish(report)?;
        for f in &report.flows {
            rows::flow(f, &mut self.flows)?;
        }
        for e in std::mem::take(&mut self.analyzer.events) {
            rows::event(&e, &mut self.events)?;
        }
        for t in [
            &mut self.flows,
            &mut self.messages,
            &mut self.usercmds,
            &mut self.player_states,
            &mut self.server_commands,
            &mut self.events,
            &mut self.samples,
        ] {
            t.close()?;
        }
        self.finished = true;
        Ok(())
    }
}

impl Sink for ExportSink {
    fn event(&mut self, e: Event<'_>) -> io::Result<()> {
        let r = self.write_event(e);
        self.note(r)?;
        self.analyzer.event(e)
    }

    fn finish(&mut self, report: &Report) -> io::Result<()> {
        let r = self.write_finish(report);
        self.note(r)
    }
}
