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
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
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
    fn run(&mut self, work: Self::Work) -> Option<Self::Spare>;
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
    make: impl Fn() -> D,
) -> Vec<(u32, D)> {
    let mut decoders: FlowMap<u32, D> = FlowMap::default();
    for batch in rx {
        let mut spares = Vec::with_capacity(batch.len());
        for (flow, w) in batch {
            spares.extend(decoders.entry(flow).or_insert_with(&make).run(w));
        }
        // When the router has not taken the earlier ones yet, these are simply dropped.
        let _ = back.try_send(spares);
    }
    decoders.into_iter().collect()
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
        for _ in 0..threads.max(1) {
            let (tx, rx) = sync_channel(IN_FLIGHT);
            let (back_tx, back_rx) = sync_channel(IN_FLIGHT);
            let make = make.clone();
            senders.push(tx);
            spares.push(back_rx);
            handles.push(std::thread::spawn(move || worker(rx, back_tx, make)));
        }
        Pool {
            batches: senders.iter().map(|_| Vec::with_capacity(BATCH)).collect(),
            senders,
            spares,
            handles,
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
