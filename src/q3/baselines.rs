//! The entity baselines of a gamestate (`cl.entityBaselines`): what an entity entering a
//! snapshot is delta-coded from. The engine keeps all 1,024 (221 KB per connection); a map
//! sets one or two hundred, so only those are stored, behind a 2 KB index. That is most of
//! what a connection costs when a capture holds a thousand of them at once.
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
    /// Per entity number: 0 when unset, else 1 + the index in `states`. Empty until the
    /// first baseline is set.
    index: Vec<u16>,
    states: Vec<EntityState>,
}

impl Baselines {
    /// The baseline of entity `num`; numbers past the table read baseline 0, as the
    /// parser's bounded reads never produce them.
    #[inline]
    pub fn get(&self, num: usize) -> &EntityState {
        let slot = match self.index.get(num) {
            Some(&k) => k,
            None => self.index.first().copied().unwrap_or(0),
        };
        match slot {
            0 => &ZERO,
            k => &self.states[usize::from(k) - 1],
        }
    }

    /// Set baseline `num`; numbers outside the table are ignored (as the engine's range
    /// check rejects them before).
    pub fn set(&mut self, num: usize, state: &EntityState) {
        if num >= MAX_GENTITIES as usize {
            return;
        }
        if self.index.is_empty() {
            self.index = vec![0; MAX_GENTITIES as usize];
        }
        match self.index[num] {
            0 => {
                self.states.push(state.clone());
                // At most MAX_GENTITIES states, so the index fits in u16.
                self.index[num] = self.states.len() as u16;
            }
            k => self.states[usize::from(k) - 1].clone_from(state),
        }
    }

    /// Forget every baseline (a new gamestate).
    pub fn clear(&mut self) {
        for n in self.states.drain(..).map(|s| s.number) {
            if let Some(k) = usize::try_from(n).ok().and_then(|n| self.index.get_mut(n)) {
                *k = 0;
            }
        }
        // A state's number may not be its slot (a hostile baseline): clear the rest too.
        if self.index.iter().any(|&k| k != 0) {
            self.index.fill(0);
        }
    }

    /// How many baselines are set.
    pub fn len(&self) -> usize {
        self.states.len()
    }

    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
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
    fn clear_forgets_a_baseline_whose_number_is_not_its_slot() {
        let mut b = Baselines::default();
        b.set(9, &state(3, 1));
        b.clear();
        assert_eq!(b.get(9), &ZERO);
    }
}
