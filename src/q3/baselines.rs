//! The entity baselines of a gamestate (`cl.entityBaselines`): what an entity entering a
//! snapshot is delta-coded from. The engine keeps all 1,024 (221 KB per connection); a map
//! sets one or two hundred, so only those are stored, behind a 2 KB index, and every
//! client of one server gets the same gamestate, so connections share equal tables
//! ([`Baselines::share`]). Per-connection state is what a capture of a thousand
//! connections at once costs.
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use super::delta::EntityState;
use super::fields::{MAX_GENTITIES, NUM_ENTITY_FIELDS};

/// What an unset baseline holds (the engine's zeroed table).
static ZERO: EntityState = EntityState {
    number: 0,
    fields: [0; NUM_ENTITY_FIELDS],
};

/// Baselines by entity number; unset ones read as the zero state.
#[derive(Debug, Clone, Default)]
pub struct Baselines {
    table: Arc<Table>,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct Table {
    /// Per entity number: 0 when unset, else 1 + the index in `states`. Empty until the
    /// first baseline is set.
    index: Vec<u16>,
    states: Vec<EntityState>,
}

impl Table {
    fn digest(&self) -> u64 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for s in &self.states {
            s.number.hash(&mut h);
            s.fields.hash(&mut h);
        }
        self.index.hash(&mut h);
        h.finish()
    }
}

/// The tables shared by this thread's connections, by digest. A table no connection
/// holds any more is dropped when the map has doubled since the last sweep.
#[derive(Default)]
struct Shared {
    tables: HashMap<u64, Arc<Table>>,
    sweep_at: usize,
}

/// Fewest tables before the first sweep.
const MIN_SWEEP: usize = 64;

thread_local! {
    // Per thread, so no lock; Arc, as a connection may move between threads.
    static SHARED: RefCell<Shared> = RefCell::default();
}

impl Baselines {
    /// A complete gamestate's baselines: take an equal table another connection holds
    /// instead of keeping a copy (or offer this one to the next).
    pub fn share(&mut self) {
        if self.table.states.is_empty() {
            return;
        }
        let digest = self.table.digest();
        SHARED.with(|s| {
            let mut s = s.borrow_mut();
            if let Some(t) = s.tables.get(&digest) {
                if **t == *self.table {
                    self.table = Arc::clone(t);
                }
                // A different table with the same digest stays unshared.
                return;
            }
            if s.tables.len() >= s.sweep_at.max(MIN_SWEEP) {
                s.tables.retain(|_, t| Arc::strong_count(t) > 1);
                s.sweep_at = 2 * s.tables.len();
            }
            s.tables.insert(digest, Arc::clone(&self.table));
        });
    }

    /// The baseline of entity `num`; numbers past the table read baseline 0, as the
    /// parser's bounded reads never produce them.
    #[inline]
    pub fn get(&self, num: usize) -> &EntityState {
        let t = &*self.table;
        let slot = match t.index.get(num) {
            Some(&k) => k,
            None => t.index.first().copied().unwrap_or(0),
        };
        match slot {
            0 => &ZERO,
            k => &t.states[usize::from(k) - 1],
        }
    }

    /// Set baseline `num`; numbers outside the table are ignored (as the engine's range
    /// check rejects them before).
    pub fn set(&mut self, num: usize, state: &EntityState) {
        if num >= MAX_GENTITIES as usize {
            return;
        }
        // A shared table is copied first (a gamestate sets baselines after a clear, so
        // this copies nothing in practice).
        let t = Arc::make_mut(&mut self.table);
        if t.index.is_empty() {
            t.index = vec![0; MAX_GENTITIES as usize];
        }
        match t.index[num] {
            0 => {
                t.states.push(state.clone());
                // At most MAX_GENTITIES states, so the index fits in u16.
                t.index[num] = t.states.len() as u16;
            }
            k => t.states[usize::from(k) - 1].clone_from(state),
        }
    }

    /// Forget every baseline (a new gamestate).
    pub fn clear(&mut self) {
        let Some(t) = Arc::get_mut(&mut self.table) else {
            // Shared: let go of it.
            self.table = Arc::default();
            return;
        };
        for n in t.states.drain(..).map(|s| s.number) {
            if let Some(k) = usize::try_from(n).ok().and_then(|n| t.index.get_mut(n)) {
                *k = 0;
            }
        }
        // A state's number may not be its slot (a hostile baseline): clear the rest too.
        if t.index.iter().any(|&k| k != 0) {
            t.index.fill(0);
        }
    }

    /// How many baselines are set.
    pub fn len(&self) -> usize {
        self.table.states.len()
    }

    /// True when no baseline is set (before a gamestate, or one without baselines).
    pub fn is_empty(&self) -> bool {
        self.table.states.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(number: i32, v: i32) -> EntityState {
        EntityState {
            number,
            fields: [v; NUM_ENTITY_FIELDS],
        }
    }

    #[test]
    fn unset_baselines_read_zero_and_set_ones_read_back() {
        let mut b = Baselines::default();
        assert_eq!(b.get(5), &ZERO);
        b.set(5, &state(5, 7));
        b.set(1023, &state(1023, 9));
        b.set(1024, &state(1024, 1));
        assert_eq!(b.get(5), &state(5, 7));
        assert_eq!(b.get(1023), &state(1023, 9));
        assert_eq!(b.get(6), &ZERO);
        assert_eq!(b.len(), 2);
        b.set(5, &state(5, 8));
        assert_eq!((b.get(5), b.len()), (&state(5, 8), 2));
        // Past the table: baseline 0, as before.
        assert_eq!(b.get(4000), &ZERO);
        b.set(0, &state(0, 3));
        assert_eq!(b.get(4000), &state(0, 3));
        b.clear();
        assert!(b.is_empty());
        assert_eq!(b.get(5), &ZERO);
        assert_eq!(b.get(0), &ZERO);
    }

    #[test]
    fn equal_tables_are_shared_and_copied_on_write() {
        let mut a = Baselines::default();
        let mut b = Baselines::default();
        for t in [&mut a, &mut b] {
            t.set(3, &state(3, 1));
            t.set(9, &state(9, 2));
            t.share();
        }
        assert!(Arc::ptr_eq(&a.table, &b.table));
        b.set(9, &state(9, 5));
        assert!(!Arc::ptr_eq(&a.table, &b.table));
        assert_eq!((a.get(9), b.get(9)), (&state(9, 2), &state(9, 5)));
        let mut c = a.clone();
        c.clear();
        assert!(c.is_empty());
        assert_eq!(a.get(3), &state(3, 1));
    }

    #[test]
    fn clear_forgets_a_baseline_whose_number_is_not_its_slot() {
        let mut b = Baselines::default();
        b.set(9, &state(3, 1));
        b.clear();
        assert_eq!(b.get(9), &ZERO);
    }
}
