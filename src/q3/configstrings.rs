//! The configstring table a client holds (`cl.gameState`): up to 1,024 strings, of which a
//! game sets a few hundred. Only the set ones are stored, behind a 2 KB index, instead of
//! 1,024 empty `String`s (24 KB per connection before any text). The texts are shared:
//! every client of one server holds the same gamestate (15 KB of text), so a capture of a
//! busy server would otherwise keep one copy per connection.
use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::Arc;

use super::state::MAX_CONFIGSTRINGS;

/// Texts held by the configstring tables of this thread's connections. A text no table
/// holds any more is dropped when the set has doubled since the last sweep, so the set
/// stays within twice what is held.
#[derive(Default)]
struct Interner {
    texts: HashSet<Arc<str>>,
    sweep_at: usize,
}

/// Fewest texts before the first sweep.
const MIN_SWEEP: usize = 4096;

impl Interner {
    fn intern(&mut self, v: String) -> Arc<str> {
        if let Some(t) = self.texts.get(v.as_str()) {
            return Arc::clone(t);
        }
        if self.texts.len() >= self.sweep_at.max(MIN_SWEEP) {
            self.texts.retain(|t| Arc::strong_count(t) > 1);
            self.sweep_at = 2 * self.texts.len();
        }
        let t: Arc<str> = Arc::from(v);
        self.texts.insert(Arc::clone(&t));
        t
    }
}

thread_local! {
    // Per thread, so no lock: a connection decodes on one thread at a time (Arc, as it may
    // move between threads).
    static TEXTS: RefCell<Interner> = RefCell::default();
}

/// The shared copy of `v`.
fn intern(v: String) -> Arc<str> {
    // Short strings are cheaper copied than looked up.
    if v.len() < 16 {
        return Arc::from(v);
    }
    TEXTS.with(|t| t.borrow_mut().intern(v))
}

/// Configstrings by index; unset ones read as "".
#[derive(Debug, Clone, Default)]
pub struct Configstrings {
    /// Per index: 0 when never set since the last clear, else 1 + the index in `values`.
    /// Empty until the first set.
    index: Vec<u16>,
    values: Vec<Arc<str>>,
}

impl Configstrings {
    /// Configstring `i` ("" when unset or out of range).
    #[inline]
    pub fn get(&self, i: usize) -> &str {
        match self.index.get(i) {
            Some(&k) if k != 0 => &self.values[usize::from(k) - 1],
            _ => "",
        }
    }

    /// Set configstring `i`; indexes outside the table are ignored, as the engine's range
    /// check rejects them before.
    pub fn set(&mut self, i: usize, v: String) {
        if i >= MAX_CONFIGSTRINGS {
            return;
        }
        if self.index.is_empty() {
            self.index = vec![0; MAX_CONFIGSTRINGS];
        }
        let v = intern(v);
        match self.index[i] {
            0 => {
                self.values.push(v);
                // At most MAX_CONFIGSTRINGS values, so the index fits in u16.
                self.index[i] = self.values.len() as u16;
            }
            k => self.values[usize::from(k) - 1] = v,
        }
    }

    /// Forget every configstring (a new gamestate).
    pub fn clear(&mut self) {
        self.index.fill(0);
        self.values.clear();
    }

    /// Configstrings `from..from + n`, in index order ("" for unset ones).
    pub fn range(&self, from: usize, n: usize) -> impl Iterator<Item = &str> + '_ {
        (from..from.saturating_add(n)).map(|i| self.get(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unset_read_empty_and_set_read_back() {
        let mut c = Configstrings::default();
        assert_eq!(c.get(0), "");
        c.set(5, "five".into());
        c.set(1023, "last".into());
        c.set(1024, "outside".into());
        assert_eq!(
            (c.get(5), c.get(1023), c.get(1024), c.get(6)),
            ("five", "last", "", "")
        );
        c.set(5, "again".into());
        assert_eq!(c.get(5), "again");
        assert_eq!(c.range(4, 3).collect::<Vec<_>>(), vec!["", "again", ""]);
        c.clear();
        assert_eq!(c.get(5), "");
        c.set(7, "seven".into());
        assert_eq!((c.get(5), c.get(7)), ("", "seven"));
    }
}
