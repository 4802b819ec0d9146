//! The first walk of a sync over a [`Rendering`]: every chain of every
//! table with the hash of its rules ([`ChainTable`]), the rule counts, and
//! the rules of the small tables (filter, mangle), kept so the restore can
//! write them before the nat table, which the second walk streams. Pure.

use super::chain_table::{ChainTable, ContentHasher, content_hasher, hash_rule};
use crate::rendering::{Rendering, RuleCounts};
use crate::{BuiltinJump, Table, TableRules};
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// The tables kept whole in memory by the first walk: small (a few
/// hundred rules, ~10k at most with 10k services without endpoints).
const KEPT_TABLES: [Table; 2] = [Table::Filter, Table::Mangle];

/// What the first walk found.
#[derive(Debug, Clone, Default)]
pub(crate) struct Hashed {
    /// Per table (all three), its chains and their hashes.
    pub(crate) tables: BTreeMap<Table, ChainTable>,
    /// The rules of filter and mangle, whole.
    pub(crate) kept: BTreeMap<Table, TableRules>,
    /// Rule and chain counts.
    pub(crate) counts: RuleCounts,
    /// The jumps from the built-in chains.
    pub(crate) jumps: Vec<BuiltinJump>,
    /// How long the walk took (render and hash).
    pub(crate) took: Duration,
}

impl Hashed {
    /// The chains of `table`.
    pub(crate) fn table(&self, table: Table) -> Option<&ChainTable> {
        self.tables.get(&table)
    }
}

/// Walks `rendering` once (see the module doc).
pub(crate) fn hash_rendering<R: Rendering + ?Sized>(rendering: &R) -> Hashed {
    let started = Instant::now();
    let mut out = Hashed { jumps: rendering.builtin_jumps().into_owned(), ..Hashed::default() };
    let mut pending: BTreeMap<Table, HashMap<u32, ContentHasher>> = BTreeMap::new();
    for piece in rendering.pieces() {
        out.counts.add(&piece);
        for (table, rules) in piece.rules.tables() {
            let chains = out.tables.entry(table).or_default();
            let open = pending.entry(table).or_default();
            hash_piece(chains, open, rules, piece.open);
            if KEPT_TABLES.contains(&table) {
                let kept = out.kept.entry(table).or_default();
                kept.chains.extend_from_slice(&rules.chains);
                kept.rules.extend(rules.rules.iter().cloned());
            }
        }
    }
    for (table, open) in pending {
        let chains = out.tables.entry(table).or_default();
        open.into_iter().for_each(|(i, hasher)| chains.set_hash(i, std::hash::Hasher::finish(&hasher)));
    }
    for table in [Table::Filter, Table::Mangle, Table::Nat] {
        out.tables.entry(table).or_default().shrink_to_fit();
    }
    out.took = started.elapsed();
    out
}

/// Hashes one piece's chains and rules of one table. `pending` holds the
/// hashers of chains still open (declared by an open piece, or by this
/// piece until its end); rules of chains not declared are ignored (the
/// restore would refuse them). Each rule is hashed as the line it is
/// written as (`iptables-save` prints the same).
fn hash_piece(chains: &mut ChainTable, pending: &mut HashMap<u32, ContentHasher>, rules: &TableRules, open: bool) {
    for chain in &rules.chains {
        let i = chains.declare(chain);
        pending.insert(i, content_hasher());
    }
    let mut run: Option<(&str, u32)> = None;
    for rule in &rules.rules {
        let chain = rule.chain();
        let at = match run {
            Some((name, at)) if name == chain => Some(at),
            _ => chains.find(chain),
        };
        let Some(at) = at else { continue };
        run = Some((chain, at));
        if let Some(hasher) = pending.get_mut(&at) {
            hash_rule(hasher, rule.line());
        }
    }
    if !open {
        for chain in &rules.chains {
            if let Some(i) = chains.find(chain)
                && let Some(hasher) = pending.remove(&i)
            {
                chains.set_hash(i, std::hash::Hasher::finish(&hasher));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Ruleset;
    use crate::rendering::tests::sample;

    #[test]
    fn streamed_and_collected_renderings_hash_alike() {
        let streamed = sample();
        let collected = streamed.collected();
        let (a, b) = (hash_rendering(&collected), hash_rendering(&streamed));
        assert_eq!(a.tables, b.tables);
        assert_eq!(a.counts, b.counts);
        assert!(a.took > Duration::ZERO);
        assert_eq!(a.kept, b.kept);
        assert_eq!(a.kept[&Table::Filter], collected.filter, "filter kept whole");
        assert_eq!(a.tables[&Table::Nat].len(), 8, "{:?}", collected.nat.chains);
        let order = |h: &Hashed| h.tables[&Table::Nat].ids().map(|i| h.tables[&Table::Nat].name(i).to_string()).collect::<Vec<_>>();
        assert_eq!(order(&a), order(&b), "declaration order");
        assert_eq!(order(&a), collected.nat.chains);
        let empty = hash_rendering(&Ruleset::default());
        assert_eq!(empty.tables.len(), 3);
    }
}
