//! Digests that stand for what a full sync compares, so that the table
//! read back need not be held: a chain's rules (normalized as
//! [`super::state::RuleShape`], each anonymous set by its definition and
//! fingerprint) and a named set's elements (in any order). SHA-256, cut to
//! 128 bits, of the values' `Hash` feed: equal digests mean equal values
//! (the derived `Hash` agrees with the derived `PartialEq`).

use super::fingerprint;
use super::state::{AnonymousSet, ChainState, RuleShape};
use crate::{Element, Rule, Set};
use sha2::{Digest as _, Sha256};
use std::hash::{Hash, Hasher};

/// 128 bits of a SHA-256.
pub(crate) type Digest = [u8; 16];

/// A [`Hasher`] feeding SHA-256 (its `finish` is not used).
struct Sha(Sha256);

impl Hasher for Sha {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    fn finish(&self) -> u64 {
        0
    }
}

impl Sha {
    fn new() -> Self {
        Self(Sha256::new())
    }

    fn digest(self) -> Digest {
        let full = self.0.finalize();
        let mut out = [0; 16];
        out.copy_from_slice(&full[..16]);
        out
    }
}

/// What identifies an anonymous set bound to a rule: its definition
/// (name, id and a fingerprint comment cleared, as normalized) and its
/// fingerprint (listed, or computed from its sorted elements).
pub(crate) fn anonymous_identity(set: &Set, print: &str) -> Digest {
    let mut h = Sha::new();
    set.hash(&mut h);
    print.hash(&mut h);
    h.digest()
}

/// [`anonymous_identity`] of a normalized anonymous set.
pub(crate) fn identity_of(anon: &AnonymousSet) -> Digest {
    match &anon.elided {
        Some(print) => anonymous_identity(&anon.set, print),
        None => anonymous_identity(&anon.set, &fingerprint::comment(&anon.set, &anon.elements)),
    }
}

/// The digest of a chain's rules, fed rule by rule in order.
pub(crate) struct RulesDigest {
    h: Sha,
    rules: usize,
}

impl RulesDigest {
    pub(crate) fn new() -> Self {
        Self {
            h: Sha::new(),
            rules: 0,
        }
    }

    /// Adds a normalized rule (handle cleared, counters zero, anonymous
    /// set references by index) and the identities of its anonymous sets.
    pub(crate) fn push(&mut self, rule: &Rule, anonymous: &[Digest]) {
        self.rules += 1;
        rule.hash(&mut self.h);
        anonymous.hash(&mut self.h);
    }

    pub(crate) fn finish(self) -> (usize, Digest) {
        let mut h = self.h;
        self.rules.hash(&mut h);
        (self.rules, h.digest())
    }
}

/// [`RulesDigest`] of a normalized chain: equal for two chains whose rules
/// compare equal.
pub(crate) fn chain_rules(chain: &ChainState) -> Digest {
    let mut d = RulesDigest::new();
    let mut ids = Vec::new();
    for RuleShape { rule, anonymous } in &chain.rules {
        ids.clear();
        ids.extend(anonymous.iter().map(identity_of));
        d.push(rule, &ids);
    }
    d.finish().1
}

/// The digest of a set's elements in any order: the sum of each one's
/// digest, and their count. Equal for the same elements (a set holds
/// each key once).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct ElementsDigest {
    sum: u128,
    count: usize,
}

impl ElementsDigest {
    pub(crate) fn add(&mut self, e: &Element) {
        let mut h = Sha::new();
        e.hash(&mut h);
        self.sum = self.sum.wrapping_add(u128::from_be_bytes(h.digest()));
        self.count += 1;
    }

    pub(crate) fn of(elements: &[Element]) -> Self {
        let mut d = Self::default();
        for e in elements {
            d.add(e);
        }
        d
    }
}
