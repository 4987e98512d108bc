//! What a comparison of two messages reports, before the aligner adds where it was, and
//! the generic JSON comparison both games use for structured values.
use serde_json::Value;

use super::{Kind, Side};

/// One difference inside a matched pair of messages.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// Missing on one side, or changed.
    pub kind: Kind,
    /// For [`Kind::Missing`]: the side that lacks it.
    pub side: Option<Side>,
    /// What differs, as in [`Difference::what`](super::Difference::what).
    pub what: String,
    /// The value in input A, `None` where A lacks it.
    pub a: Option<Value>,
    /// The value in input B, `None` where B lacks it.
    pub b: Option<Value>,
}

/// Collects the differences of one message pair.
#[derive(Debug, Default)]
pub struct Finds {
    /// The differences, in the order they were found.
    pub list: Vec<Found>,
}

impl Finds {
    /// `what` is on both sides with different values: `a` and `b`.
    pub fn changed(&mut self, what: impl Into<String>, a: Value, b: Value) {
        self.list.push(Found {
            kind: Kind::Changed,
            side: None,
            what: what.into(),
            a: Some(a),
            b: Some(b),
        });
    }

    /// `what` is present on one side only: `a` or `b` holds its value.
    pub fn one_sided(&mut self, what: impl Into<String>, a: Option<Value>, b: Option<Value>) {
        let side = if a.is_none() { Side::A } else { Side::B };
        self.list.push(Found {
            kind: Kind::Missing,
            side: Some(side),
            what: what.into(),
            a,
            b,
        });
    }

    /// Compare when different: `changed` with both values.
    pub fn cmp<T: PartialEq + Into<Value> + Clone>(&mut self, what: &str, a: &T, b: &T) {
        if a != b {
            self.changed(what, a.clone().into(), b.clone().into());
        }
    }

    /// Compare two JSON values member by member: objects by key (`what key`), arrays by
    /// index (`what[i]`), anything else as a whole.
    pub fn json(&mut self, what: &str, a: &Value, b: &Value) {
        if a == b {
            return;
        }
        match (a, b) {
            (Value::Object(ma), Value::Object(mb)) => {
                for (k, va) in ma {
                    let w = join(what, k);
                    match mb.get(k) {
                        Some(vb) => self.json(&w, va, vb),
                        None => self.one_sided(w, Some(va.clone()), None),
                    }
                }
                for (k, vb) in mb {
                    if !ma.contains_key(k) {
                        self.one_sided(join(what, k), None, Some(vb.clone()));
                    }
                }
            }
            (Value::Array(va), Value::Array(vb)) if va.len() == vb.len() => {
                for (i, (x, y)) in va.iter().zip(vb).enumerate() {
                    self.json(&format!("{what}[{i}]"), x, y);
                }
            }
            _ => self.changed(what, a.clone(), b.clone()),
        }
    }
}

fn join(what: &str, k: &str) -> String {
    if what.is_empty() {
        k.to_string()
    } else {
        format!("{what} {k}")
    }
}

/// A float as JSON (NaN and infinities, which JSON lacks, as their text).
pub fn float(v: f32) -> Value {
    serde_json::Number::from_f64(f64::from(v))
        .map(Value::Number)
        .unwrap_or_else(|| Value::String(v.to_string()))
}
