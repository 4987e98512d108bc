//! Flow-sharded decoding on worker threads. Flows are independent once routed: the router
//! (capture, net, per-game trackers, netchan) stays on the calling thread and hands each
//! flow's decoding work, in capture order, to the worker that owns the flow (`flow id %
//! workers`). Each flow's work therefore runs in its original order on one thread, so every
//! decoder ends in exactly the state the sequential pass leaves. Only order-insensitive runs
//! use this (the flow table): messages for a sink are decoded inline, in capture order.
//!
//! A game plugs in by implementing [`Detached`] for its per-flow decoder. std threads and
//! bounded channels are all it takes, so no thread-pool crate: the bound keeps memory flat
//! when the router outruns the workers.
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::flow::FlowMap;

/// A per-flow decoder that can run on a worker thread.
pub trait Detached: Send + 'static {
    /// One piece of work, in capture order.
    type Work: Send + 'static;
    /// What a finished piece of work leaves for reuse (a message buffer), handed back to
    /// the router so it need not allocate one per message on one thread and free it on
    /// another.
    type Spare: Send + 'static;
    /// Run one piece of work of this decoder's flow; what it leaves for reuse, if anything.
    fn run(&mut self, work: Self::Work) -> Option<Self::Spare>;
    /// Prefetch, `level` pointers deep, what running `work` will touch; the worker calls
    /// levels 0 to [`Self::PREFETCH_LEVELS`]` - 1` on the items after the current one,
    /// deepest for the next (see `crate::pipeline::lookahead`). A hint: the default does
    /// nothing.
    fn prefetch(&self, _work: &Self::Work, _level: u8) {}
    /// How many levels [`Self::prefetch`] knows; 0 (the default): the workers prefetch none.
    const PREFETCH_LEVELS: usize = 0;
}

/// Work items per message sent to a worker (one channel operation per batch, not per item).
const BATCH: usize = 256;
/// Batches in flight per worker before the router waits.
const IN_FLIGHT: usize = 4;

type Batch<W> = Vec<(u32, W)>;

/// Worker threads, each owning the decoders of its flows.
pub struct Pool<D: Detached> {
    senders: Vec<SyncSender<Batch<D::Work>>>,
    batches: Vec<Batch<D::Work>>,
    /// Spares coming back from each worker, a batch's worth at a time.
    spares: Vec<Receiver<Vec<D::Spare>>>,
    handles: Vec<JoinHandle<Vec<(u32, D)>>>,
    /// Whether the workers prefetch ([`Detached::prefetch`]); `prefetching` is the value
    /// last stored, so an unchanged setting costs no store.
    prefetch: Arc<AtomicBool>,
    prefetching: bool,
}

/// Threads to decode with: `QUAKECAP_THREADS`, else the cores available.
pub fn worker_threads() -> usize {
    std::env::var("QUAKECAP_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1)
}

fn worker<D: Detached>(
    rx: Receiver<Batch<D::Work>>,
    back: SyncSender<Vec<D::Spare>>,
    prefetch: Arc<AtomicBool>,
    make: impl Fn() -> D,
) -> Vec<(u32, D)> {
    // The decoders by slot, and each flow's slot: a batch's items are given their slots
    // first (one lookup each, as before), so the prefetch of the items ahead of the current
    // one needs no lookup of its own.
    let mut decoders: Vec<(u32, D)> = Vec::new();
    let mut slots: FlowMap<u32, usize> = FlowMap::default();
    let mut items: Vec<(usize, Option<D::Work>)> = Vec::new();
    for batch in rx {
        // Level 0 is the decoder's own first line, then the decoder's levels.
        let depth = match D::PREFETCH_LEVELS {
            n if n > 0 && prefetch.load(Ordering::Relaxed) => n + 1,
            _ => 0,
        };
        items.clear();
        items.extend(batch.into_iter().map(|(flow, w)| {
            let slot = *slots.entry(flow).or_insert_with(|| {
                decoders.push((flow, make()));
                decoders.len() - 1
            });
            (slot, Some(w))
        }));
        let mut spares = Vec::with_capacity(items.len());
        for i in 0..items.len() {
            // Item i + j gets level depth - j: the farthest its first, the next its last.
            for j in 1..=depth {
                if let Some((slot, Some(w))) = items.get(i + j) {
                    let dec = &decoders[*slot].1;
                    match depth - j {
                        0 => crate::prefetch::read(dec),
                        level => dec.prefetch(w, level as u8 - 1),
                    }
                }
            }
            let (slot, w) = &mut items[i];
            if let Some(w) = w.take() {
                spares.extend(decoders[*slot].1.run(w));
            }
        }
        // When the router has not taken the earlier ones yet, these are simply dropped.
        let _ = back.try_send(spares);
    }
    decoders
}

impl<D: Detached> Pool<D> {
    /// Start `threads` workers; `make` builds the decoder of a flow on its first work.
    pub fn new<F>(threads: usize, make: F) -> Self
    where
        F: Fn() -> D + Send + Clone + 'static,
    {
        let mut senders = Vec::new();
        let mut spares = Vec::new();
        let mut handles = Vec::new();
        let prefetch = Arc::new(AtomicBool::new(false));
        for _ in 0..threads.max(1) {
            let (tx, rx) = sync_channel(IN_FLIGHT);
            let (back_tx, back_rx) = sync_channel(IN_FLIGHT);
            let make = make.clone();
            let prefetch = Arc::clone(&prefetch);
            senders.push(tx);
            spares.push(back_rx);
            handles.push(std::thread::spawn(move || {
                worker(rx, back_tx, prefetch, make)
            }));
        }
        Pool {
            batches: senders.iter().map(|_| Vec::with_capacity(BATCH)).collect(),
            senders,
            spares,
            handles,
            prefetch,
            prefetching: false,
        }
    }

    /// Have the workers prefetch the state of the items ahead of the current one, or not
    /// (from their next batch on): it pays only when the decoders' state outgrows the
    /// caches.
    pub fn set_prefetch(&mut self, on: bool) {
        if on != self.prefetching {
            self.prefetching = on;
            self.prefetch.store(on, Ordering::Relaxed);
        }
    }

    /// Queue work for a flow's decoder.
    pub fn push(&mut self, flow: u32, work: D::Work) {
        let k = flow as usize % self.senders.len();
        self.batches[k].push((flow, work));
        if self.batches[k].len() >= BATCH {
            self.send(k);
        }
    }

    /// Move the spares the workers have handed back into `into`, up to `max` in all.
    pub fn reclaim(&mut self, into: &mut Vec<D::Spare>, max: usize) {
        for rx in &self.spares {
            while let Ok(v) = rx.try_recv() {
                let room = max.saturating_sub(into.len());
                into.extend(v.into_iter().take(room));
            }
        }
    }

    fn send(&mut self, k: usize) {
        let batch = std::mem::replace(&mut self.batches[k], Vec::with_capacity(BATCH));
        // A worker that is gone panicked; finish() reports it.
        let _ = self.senders[k].send(batch);
    }

    /// Run all queued work and hand back every flow's decoder.
    pub fn finish(mut self) -> Vec<(u32, D)> {
        for k in 0..self.senders.len() {
            self.send(k);
        }
        self.senders.clear();
        let mut all = Vec::new();
        for h in self.handles {
            match h.join() {
                Ok(v) => all.extend(v),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Adds its work to a running sum per flow and hands each item back as a spare.
    struct Sum(u64);

    impl Detached for Sum {
        type Work = u64;
        type Spare = u64;
        fn run(&mut self, work: u64) -> Option<u64> {
            self.0 += work;
            Some(work)
        }
    }

    #[test]
    fn work_runs_per_flow_and_spares_come_back() {
        let mut pool = Pool::new(2, || Sum(0));
        for i in 0..(3 * BATCH as u64) {
            pool.push((i % 5) as u32, i);
        }
        // Wait for the first batches' spares (the workers run concurrently).
        let mut spares = Vec::new();
        for _ in 0..1000 {
            pool.reclaim(&mut spares, 10_000);
            if !spares.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        assert!(!spares.is_empty(), "spares are handed back");
        assert!(spares.iter().all(|&s| s < 3 * BATCH as u64));
        let mut sums = pool.finish();
        sums.sort_by_key(|(flow, _)| *flow);
        let expect: Vec<(u32, u64)> = (0..5u32)
            .map(|f| {
                (
                    f,
                    (0..3 * BATCH as u64)
                        .filter(|i| i % 5 == u64::from(f))
                        .sum(),
                )
            })
            .collect();
        assert_eq!(
            sums.iter().map(|(f, s)| (*f, s.0)).collect::<Vec<_>>(),
            expect
        );
    }
}
