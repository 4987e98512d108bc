//! The router of one stream of datagrams: each datagram goes to the first game's tracker that
//! takes it, else to the flow table as other UDP, and what the trackers queued goes to the
//! sink in the order it was decoded. Nothing here names a game: every game plugs in through
//! [`GameTracker`] ([`super::games`] lists them).
use std::io;

use super::{warn_first, Event, Options, Report, Sink, MAX_OTHER_FLOWS};
use crate::flow::table::{QueryAggregate, MAX_CONNECTIONS, MAX_FLOW_ROWS, MAX_QUERY_FLOWS};
use crate::flow::{AggregateCounts, FlowSummary, FlowTable};
use crate::net::Datagram;
use crate::parallel::worker_threads;

/// What one offer of a datagram did.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Offered {
    /// The datagram was this game's (no other tracker sees it).
    pub taken: bool,
    /// Output is queued: [`GameTracker::flush`] hands it to the sink now.
    pub output: bool,
    /// Flows were released for idleness: [`GameTracker::take_ended`] has their summaries.
    pub ended: bool,
    /// The game wants the datagrams ahead from now on ([`GameTracker::look_ahead`]).
    pub looks_ahead: bool,
}

/// How the pass runs, for every game alike.
#[derive(Debug, Clone)]
pub(crate) struct Setup {
    pub opts: Options,
    /// Decode threads (at least one).
    pub threads: usize,
    /// The run is order-insensitive (nothing reaches the sink but the flow table), so
    /// decoding may go to worker threads; flow ends are then not told.
    pub detached: bool,
    /// Active connections from which a game's state is prefetched ahead
    /// ([`super::lookahead`]; tests lower it).
    pub prefetch_min_active: usize,
}

/// One game's side of the pass: its flows, decoders, queued output and any worker threads or
/// prefetching of its own. The router offers every datagram to each game in turn until one
/// takes it, and calls the rest as the stream goes on.
pub(crate) trait GameTracker {
    /// The game's name as the flow rows give it (`"q3"`, `"qw"`).
    fn game(&self) -> &'static str;
    /// Offer one datagram (the game also scans for idle flows here). A new flow takes its id
    /// from `table`, which also holds the limits every game shares.
    fn offer(&mut self, d: &Datagram<'_>, table: &mut FlowTable) -> Offered;
    /// Hand to the sink the output held back from earlier datagrams (network samples
    /// batched), which came before anything the current datagram decoded.
    fn flush_held(&mut self, sink: &mut dyn Sink) -> io::Result<()>;
    /// Hand to the sink everything queued, in decode order.
    fn flush(&mut self, sink: &mut dyn Sink) -> io::Result<()>;
    /// The summaries of the flows released since the last call, in the order released.
    fn take_ended(&mut self, into: &mut Vec<FlowSummary>);
    /// End of the stream: wait for any workers; every flow's summary. What this leaves
    /// queued is handed out by the next flushes.
    fn finish(&mut self) -> Vec<FlowSummary>;
    /// Before each record is read, while the game's last offer said it
    /// [`Offered::looks_ahead`]: the datagram
    /// [`super::lookahead::DISTANCE`] records after it, when the reader can tell.
    fn look_ahead(&mut self, _later: Option<&Datagram<'_>>) {}
    /// Datagrams routed with a lookup made ahead (the prefetch test's count).
    fn hints_taken(&self) -> u64 {
        0
    }
}

/// Every game's tracker for one stream of datagrams.
pub struct Trackers {
    /// Flow ids, limits, other UDP and the aggregates: shared by every game.
    table: FlowTable,
    games: Vec<Box<dyn GameTracker>>,
    /// Bit `i`: game `i`'s last offer said it wants the datagrams ahead.
    ahead: u32,
    filter: Option<Vec<u32>>,
    /// Summaries of the flows just released, for [`Event::FlowEnd`].
    ended: Vec<FlowSummary>,
    /// Following a live input: flow starts and the clock are told ([`Options::follow`]).
    follow: bool,
}

impl Trackers {
    /// Decoding goes to worker threads when nothing is emitted (the flow table) and more
    /// than one thread is available; otherwise it runs inline, in capture order.
    pub fn new(opts: &Options) -> Self {
        Self::with_prefetch_from(opts, super::lookahead::PREFETCH_MIN_ACTIVE)
    }

    /// [`Self::new`], prefetching from `prefetch_min_active` active connections on.
    pub(crate) fn with_prefetch_from(opts: &Options, prefetch_min_active: usize) -> Self {
        let threads = opts.threads.unwrap_or_else(worker_threads).max(1);
        // Samples carry what the decoder read: it must run inline, in capture order.
        let detached = threads > 1 && !opts.detail.emits() && !opts.keep_raw && !opts.samples;
        let setup = Setup {
            opts: opts.clone(),
            threads,
            detached,
            prefetch_min_active,
        };
        let mut table = FlowTable::default();
        if opts.follow {
            table.watch_claims();
        }
        Trackers {
            table,
            games: super::games::trackers(&setup),
            ahead: 0,
            filter: opts.flows.clone(),
            ended: Vec::new(),
            follow: opts.follow,
        }
    }

    /// Route one datagram to exactly one flow and push what it decoded to the sink.
    /// (Always inlined into the pass's loop: with the follow's branch LLVM stopped inlining
    /// it, 1.2 % more instructions for `flows`.)
    #[inline(always)]
    pub fn datagram(&mut self, d: &Datagram<'_>, sink: &mut dyn Sink) -> io::Result<()> {
        let mut seen = Offered::default();
        let mut taker = 0;
        for (i, game) in self.games.iter_mut().enumerate() {
            let o = game.offer(d, &mut self.table);
            seen.output |= o.output;
            seen.ended |= o.ended;
            let bit = 1 << i;
            if o.looks_ahead != (self.ahead & bit != 0) {
                self.ahead ^= bit;
            }
            if o.taken {
                seen.taken = true;
                taker = i;
                break;
            }
        }
        if !seen.taken {
            self.table.offer_other(d);
        }
        if seen.ended {
            self.end_flows(sink)?;
        }
        if self.follow {
            self.tell_starts(taker, d, sink)?;
        }
        // The flow table emits nothing: most datagrams end here.
        if seen.output {
            for game in &mut self.games {
                game.flush(sink)?;
            }
        }
        Ok(())
    }

    /// Following: the flows this datagram started (by game `taker`, which took it), before
    /// what it decoded.
    #[cold]
    #[inline(never)]
    fn tell_starts(
        &mut self,
        taker: usize,
        d: &Datagram<'_>,
        sink: &mut dyn Sink,
    ) -> io::Result<()> {
        let game = self.games.get(taker).map_or("udp", |g| g.game());
        for (id, server, client) in self.table.take_claims() {
            if super::wanted(&self.filter, id) {
                let start = super::FlowStart {
                    id,
                    game,
                    server,
                    client,
                    time: d.ts_ns as f64 / 1e9,
                };
                sink.event(Event::FlowStart(&start))?;
            }
        }
        Ok(())
    }

    /// Following, while the input is silent or at a tick of the wall clock: hand out what
    /// the games hold back, then tell the sink that capture time reached `t`.
    pub(crate) fn idle(&mut self, t: f64, sink: &mut dyn Sink) -> io::Result<()> {
        for game in &mut self.games {
            game.flush_held(sink)?;
        }
        for game in &mut self.games {
            game.flush(sink)?;
        }
        sink.event(Event::Clock(t))
    }

    /// True while some game wants the datagrams ahead ([`super::lookahead`]).
    #[inline]
    pub(crate) fn looks_ahead(&self) -> bool {
        self.ahead != 0
    }

    /// Give the games that want it the datagram ahead ([`GameTracker::look_ahead`]).
    #[inline]
    pub(crate) fn look_ahead(&mut self, later: Option<&Datagram<'_>>) {
        for (i, game) in self.games.iter_mut().enumerate() {
            if self.ahead & 1 << i != 0 {
                game.look_ahead(later);
            }
        }
    }

    /// Datagrams routed with the lookup made for them ahead.
    pub(crate) fn hints_taken(&self) -> u64 {
        self.games.iter().map(|g| g.hints_taken()).sum()
    }

    /// Tell the sink of the flows the trackers released while offering the current datagram
    /// (they scan for idle flows before routing it): after the output held from earlier
    /// datagrams, before what this one decoded (it may be a released flow's, come back).
    #[cold]
    #[inline(never)]
    fn end_flows(&mut self, sink: &mut dyn Sink) -> io::Result<()> {
        for game in &mut self.games {
            game.flush_held(sink)?;
        }
        let mut ended = std::mem::take(&mut self.ended);
        for game in &mut self.games {
            game.take_ended(&mut ended);
        }
        let filter = &self.filter;
        let told = ended
            .iter()
            .filter(|f| super::wanted(filter, f.id))
            .try_for_each(|f| sink.event(Event::FlowEnd(f)));
        ended.clear();
        self.ended = ended;
        told
    }

    /// End of the stream ([`Trackers::finish`]): the flows, and what the flow tables could
    /// not hold, into the report.
    pub fn fill_report(&mut self, report: &mut Report, sink: &mut dyn Sink) -> io::Result<()> {
        report.flows = self.finish(sink)?;
        report.aggregates = self.table.aggregates().iter().map(aggregate_row).collect();
        // Table-full warnings go first, so they are shown however many others there are.
        let (refused, first_refused) = self.table.rows_refused();
        if refused > 0 {
            let text = format!(
                "flow rows full: {refused} datagrams that would have started flows, from frame \
                 {first_refused} on, were summed in the aggregate rows (at most {MAX_FLOW_ROWS} \
                 flows per game in one input)"
            );
            warn_first(report, text, first_refused);
        }
        let (count, first_frame) = self.table.untracked();
        report.untracked_datagrams = count;
        if count > 0 {
            let text = format!(
                "flow table full: {count} datagrams of new endpoints from frame {first_frame} on \
                 were counted but not tracked (at most {MAX_QUERY_FLOWS} query and \
                 {MAX_CONNECTIONS} connection flows at a time, {MAX_FLOW_ROWS} flows in all per \
                 game, and {MAX_OTHER_FLOWS} other flows)"
            );
            warn_first(report, text, first_frame);
        }
        Ok(())
    }

    /// End of the stream: wait for the workers, flush what the trackers still hold, then
    /// every flow's summary, by id.
    pub fn finish(&mut self, sink: &mut dyn Sink) -> io::Result<Vec<FlowSummary>> {
        let mut v = Vec::new();
        for game in &mut self.games {
            v.extend(game.finish());
        }
        // What was held came before what the end of the stream decoded.
        for game in &mut self.games {
            game.flush_held(sink)?;
        }
        for game in &mut self.games {
            game.flush(sink)?;
        }
        v.extend(self.table.other_summaries().cloned());
        v.sort_by_key(|f| f.id);
        Ok(v)
    }
}

/// An aggregate as a row of the flows report (no id: it is not a flow).
fn aggregate_row(a: &QueryAggregate) -> FlowSummary {
    FlowSummary {
        game: a.game,
        kind: a.kind,
        server: a.server.clone(),
        bytes: crate::flow::PerDir {
            c2s: a.bytes,
            s2c: 0,
        },
        packets: crate::flow::PerDir {
            c2s: a.requests,
            s2c: a.answered,
        },
        first_time: a.first_time,
        last_time: a.last_time,
        aggregate: Some(AggregateCounts {
            command: a.command.clone(),
            requests: a.requests,
            sources: a.sources.estimate(),
            answered: a.answered,
        }),
        ..Default::default()
    }
}
