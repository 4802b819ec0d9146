//! The first walk of a sync over a [`Rendering`]: every chain of every
//! table with the hash of its rules ([`ChainTable`]), the rule counts, and
//! the rules of the small tables (filter, mangle), kept so the restore can
//! write them before the nat table, which a full sync's second walk
//! streams. A partial sync normally has no second walk
//! ([`hash_rendering_since`]): its one walk also keeps the nat rules of the
//! service chains that changed since the last sync (a few); only when a
//! shared chain changed (a service added or removed) does the restore walk
//! again. Pure.

use super::chain_table::{ChainTable, ContentHasher, OPEN, WRITE, content_hasher, hash_rule};
use super::chains::AppliedChains;
use crate::rendering::{Rendering, RuleCounts};
use crate::{BuiltinJump, Table, TableRules};
use std::collections::{BTreeMap, HashMap, HashSet};
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

    /// After the diff flagged [`WRITE`] the chains to write: in each table
    /// a partial walk kept in part, drops the rules of chains not written,
    /// or all of them when a shared (open) chain is written, whose rules
    /// the walk did not keep: the restore then walks the rendering again.
    pub(crate) fn keep_written(&mut self) {
        let tables = &self.tables;
        self.kept.retain(|table, kept| {
            let Some(chains) = tables.get(table) else { return false };
            if KEPT_TABLES.contains(table) {
                return true;
            }
            if chains.with(WRITE | OPEN).next().is_some() {
                return false;
            }
            kept.rules.retain(|r| chains.find(r.chain()).is_some_and(|i| chains.has(i, WRITE)));
            kept.rules.shrink_to_fit();
            true
        });
    }
}

/// Walks `rendering` once (see the module doc).
pub(crate) fn hash_rendering<R: Rendering + ?Sized>(rendering: &R) -> Hashed {
    walk(rendering, None)
}

/// Walks `rendering` once as [`hash_rendering`] does, and keeps the rules
/// of the big table (nat) a partial sync since `last` may write: those of
/// the closed pieces' chains whose hash differs from `last`'s (known at the
/// end of the piece declaring them). The restore then writes these instead
/// of rendering every service again. The open (shared) chains' rules are
/// not kept (`KUBE-SERVICES` alone is 10k rules at 10k services): when one
/// of them changed, [`Hashed::keep_written`] drops what was kept and the
/// restore walks the rendering again.
pub(crate) fn hash_rendering_since<R: Rendering + ?Sized>(rendering: &R, last: &AppliedChains) -> Hashed {
    walk(rendering, Some(last))
}

fn walk<R: Rendering + ?Sized>(rendering: &R, last: Option<&AppliedChains>) -> Hashed {
    let started = Instant::now();
    let mut out = Hashed { jumps: rendering.builtin_jumps().into_owned(), ..Hashed::default() };
    let mut pending: BTreeMap<Table, HashMap<u32, ContentHasher>> = BTreeMap::new();
    let empty = ChainTable::default();
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
            } else if let Some(last) = last {
                let was = last.table(table).unwrap_or(&empty);
                keep_changed(out.kept.entry(table).or_default(), chains, open, rules, was);
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

/// Keeps the rules of one piece's table that a partial sync may write:
/// those of the chains this piece declared and closed whose hash differs
/// from `was` (or that `was` lacks).
fn keep_changed(kept: &mut TableRules, chains: &ChainTable, pending: &HashMap<u32, ContentHasher>, rules: &TableRules, was: &ChainTable) {
    let changed: HashSet<u32> = rules
        .chains
        .iter()
        .filter_map(|c| chains.find(c))
        .filter(|i| !pending.contains_key(i))
        .filter(|i| was.find(chains.name(*i)).is_none_or(|j| was.hash(j) != chains.hash(*i)))
        .collect();
    if changed.is_empty() {
        return;
    }
    let mut run: Option<(&str, bool)> = None;
    for rule in &rules.rules {
        let chain = rule.chain();
        let keep = match run {
            Some((name, keep)) if name == chain => keep,
            _ => chains.find(chain).is_some_and(|i| changed.contains(&i)),
        };
        run = Some((chain, keep));
        if keep {
            kept.rules.push(rule.clone());
        }
    }
}

/// Hashes one piece's chains and rules of one table. `pending` holds the
/// hashers of chains still open (declared by an open piece, or by this
/// piece until its end); rules of chains not declared are ignored (the
/// restore would refuse them). Each rule is hashed as the line it is
/// written as (`iptables-save` prints the same).
fn hash_piece(chains: &mut ChainTable, pending: &mut HashMap<u32, ContentHasher>, rules: &TableRules, open: bool) {
    for chain in &rules.chains {
        let i = chains.declare(chain);
        if open {
            chains.set(i, OPEN);
        }
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
    use crate::rules::tests::rule;

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

    /// The nat rules a partial walk of the sample keeps, after the diff
    /// against `last` (the sample with `edit` applied to its nat rules).
    fn kept_since(edit: impl Fn(&mut Vec<crate::Rule>)) -> Option<Vec<String>> {
        let mut before = sample().collected();
        edit(&mut before.nat.rules);
        let last = AppliedChains::of(hash_rendering(&before).tables);
        let mut now = hash_rendering_since(&sample(), &last);
        let plain = hash_rendering(&sample());
        assert_eq!((&now.tables, &now.counts), (&plain.tables, &plain.counts), "hashes as a full walk's");
        crate::apply::chains::diff_chains(&last, &mut now.tables);
        now.keep_written();
        assert!(now.kept.contains_key(&Table::Filter), "filter kept whole");
        now.kept.get(&Table::Nat).map(|k| k.rules.iter().map(|r| r.line().to_string()).collect())
    }

    #[test]
    fn a_partial_walk_keeps_the_rules_of_the_changed_chains_only_in_order() {
        assert_eq!(kept_since(|_| {}), Some(Vec::new()), "nothing changed");
        let sep_b = |rules: &mut Vec<crate::Rule>| {
            // (No DNAT of B: nothing differs, and the assertion below fails.)
            if let Some(at) = rules.iter().position(|r| r.line().contains("10.1.0.2:8080")) {
                rules[at] = rule("KUBE-SEP-B1 -p tcp -m tcp -j DNAT --to-destination 10.1.0.3:8080");
            }
        };
        assert_eq!(kept_since(sep_b).unwrap_or_default(), ["KUBE-SEP-B1 -s 10.1.0.2/32 -j KUBE-MARK-MASQ", "KUBE-SEP-B1 -p tcp -m tcp -j DNAT --to-destination 10.1.0.2:8080"]);
        // A shared (open) chain that changed: nothing kept, the restore walks again.
        let services = |rules: &mut Vec<crate::Rule>| rules.retain(|r| !r.line().contains("-j KUBE-SVC-A"));
        assert_eq!(kept_since(services), None);
    }
}
