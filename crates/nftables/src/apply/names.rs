//! The names of anonymous sets in the kernel: the ones we give new sets
//! (`__kp<n>`), and carrying them from the state that was applied to the
//! state that replaces it, so that a full sync knows which anonymous sets
//! it wrote itself (their elements need not be read back: a bound
//! anonymous set is constant).

use super::digest::{Digest, anonymous_identity};
use super::fingerprint::is_fingerprint;
use super::state::TableState;
use crate::{Set, TableContents};
use std::collections::HashMap;

/// Prefix of the names we give new anonymous sets.
const ANONYMOUS_PREFIX: &str = "__kp";

/// Names for new anonymous sets: `__kp<n>`, `n` never used before in the
/// table.
///
/// When recording ([`AnonymousNames::recording`], a lean syncer), it also
/// keeps what identifies each `__kp<n>` set we wrote into our table (see
/// `digest.rs`), so that a full sync need not list the table's sets to
/// know them: a bound anonymous set is constant and we never reuse a name.
#[derive(Debug, Clone, Default)]
pub(crate) struct AnonymousNames {
    next: u64,
    record: bool,
    /// By `n`: the identities of the `__kp<n>` sets written or listed.
    pub(crate) known: HashMap<u64, Digest>,
}

/// `n` of a `__kp<n>` name.
pub(crate) fn number(name: &str) -> Option<u64> {
    name.strip_prefix(ANONYMOUS_PREFIX)?.parse().ok()
}

impl AnonymousNames {
    /// Continues past every `__kp<n>` name in `contents`.
    pub(crate) fn seed(&mut self, contents: &TableContents) {
        for set in &contents.sets {
            self.seed_name(&set.name);
        }
    }

    /// Continues past `name` if it is a `__kp<n>` name.
    pub(crate) fn seed_name(&mut self, name: &str) {
        if let Some(n) = number(name) {
            self.next = self.next.max(n + 1);
        }
    }

    /// Keeps the identities of the anonymous sets it names from now on.
    pub(crate) fn recording(&mut self) {
        self.record = true;
    }

    /// Notes the anonymous set `set`, just named and fingerprinted, as
    /// written (when recording).
    pub(crate) fn wrote(&mut self, set: &Set) {
        if !self.record {
            return;
        }
        let (Some(n), Some(print)) = (
            number(&set.name),
            set.comment.as_deref().filter(|c| is_fingerprint(c)),
        ) else {
            return;
        };
        let mut normal = set.clone();
        normal.name.clear();
        normal.id = None;
        normal.comment = None;
        self.known.insert(n, anonymous_identity(&normal, print));
    }

    /// Continues past every name `other` would give.
    pub(crate) fn merge(&mut self, other: &AnonymousNames) {
        self.next = self.next.max(other.next);
    }

    pub(crate) fn next(&mut self) -> String {
        let name = format!("{ANONYMOUS_PREFIX}{}", self.next);
        self.next += 1;
        name
    }
}

/// The names a transaction gave the anonymous sets of the chains it
/// wrote: chain → names, rule by rule, in order.
#[derive(Debug, Default)]
pub(crate) struct Assigned(HashMap<String, Vec<String>>);

impl Assigned {
    pub(crate) fn insert(&mut self, chain: String, names: Vec<String>) {
        self.0.insert(chain, names);
    }
}

/// Gives `applied` (the desired state, now in the kernel) the kernel names
/// of its anonymous sets: those `assigned` for the chains just written,
/// the ones of `before` (moved out of it) for chains left as they were.
pub(crate) fn carry_names(
    applied: &mut TableState,
    before: Option<&mut TableState>,
    assigned: Assigned,
) {
    let mut assigned = assigned.0;
    let mut before = before;
    for chain in &mut applied.chains {
        let sets = chain.rules.iter_mut().flat_map(|r| r.anonymous.iter_mut());
        if let Some(names) = assigned.remove(&chain.chain.name) {
            for (set, name) in sets.zip(names) {
                set.name = name;
            }
        } else if let Some(old) = before.as_mut().and_then(|b| b.chain_mut(&chain.chain.name)) {
            let old_sets = old.rules.iter_mut().flat_map(|r| r.anonymous.iter_mut());
            for (set, old) in sets.zip(old_sets) {
                set.name = std::mem::take(&mut old.name);
            }
        }
    }
}

/// The anonymous sets of `state` by kernel name.
pub(crate) fn by_name(state: &TableState) -> HashMap<&str, &super::state::AnonymousSet> {
    state
        .chains
        .iter()
        .flat_map(|c| &c.rules)
        .flat_map(|r| &r.anonymous)
        .filter(|a| !a.name.is_empty())
        .map(|a| (a.name.as_str(), a))
        .collect()
}

/// The anonymous sets of `state` by the fingerprint comment we would give
/// them (see [`super::fingerprint`]).
pub(crate) fn by_fingerprint(state: &TableState) -> HashMap<String, &super::state::AnonymousSet> {
    state
        .chains
        .iter()
        .flat_map(|c| &c.rules)
        .flat_map(|r| &r.anonymous)
        .filter(|a| a.set.comment.is_none())
        .map(|a| (super::fingerprint::comment(&a.set, &a.elements), a))
        .collect()
}
