//! What a partial sync writes, found by comparing chain contents: every
//! chain of a rendered table gets a 64-bit hash of its rules (in order),
//! the hashes of the last successful sync are kept in memory
//! ([`AppliedChains`], about 60 bytes per chain, never the rules), and a
//! partial sync rewrites exactly the chains whose hash differs or that are
//! new, and deletes the chains the last sync wrote that are not rendered
//! any more ([`diff_chains`]). Pure: no kernel, no I/O.
//!
//! Comparing contents rather than trusting a list of changed services
//! also catches changes no service made: a node address, large-cluster
//! mode dropping every endpoint comment, an option.

use crate::{Ruleset, Table, TableRules};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{DefaultHasher, Hasher};

/// The chains of ours one sync left in the kernel, per table: name and
/// hash of its rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AppliedChains {
    tables: BTreeMap<Table, HashMap<Box<str>, u64>>,
}

/// One table's changes since the last sync.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChainDiff<'a> {
    /// The table.
    pub(crate) table: Table,
    /// Chains that are new or whose rules changed, in declaration order,
    /// with their new hash: each is declared (so flushed) and rewritten.
    pub(crate) written: Vec<(&'a str, u64)>,
    /// Chains the last sync wrote that are not rendered now: flushed and
    /// deleted (sorted).
    pub(crate) deleted: Vec<String>,
}

impl ChainDiff<'_> {
    /// Nothing to write or delete in this table.
    pub(crate) fn is_empty(&self) -> bool {
        self.written.is_empty() && self.deleted.is_empty()
    }
}

impl AppliedChains {
    /// The chains `ruleset` writes, as a full sync leaves them.
    pub(crate) fn of(ruleset: &Ruleset) -> Self {
        let tables = ruleset.tables().map(|(table, rules)| {
            let hashes = hash_chains(rules).into_iter().map(|(chain, hash)| (Box::from(chain), hash)).collect();
            (table, hashes)
        });
        Self { tables: tables.into_iter().collect() }
    }

    /// Records that `diffs` were applied on top of what is recorded.
    pub(crate) fn update(&mut self, diffs: &[ChainDiff]) {
        for diff in diffs {
            let table = self.tables.entry(diff.table).or_default();
            for chain in &diff.deleted {
                table.remove(chain.as_str());
            }
            for &(chain, hash) in &diff.written {
                match table.get_mut(chain) {
                    Some(slot) => *slot = hash,
                    None => {
                        table.insert(Box::from(chain), hash);
                    }
                }
            }
        }
    }
}

/// Per table of `ruleset`, what differs from `last` (tables in restore
/// order, unchanged ones included as empty diffs).
pub(crate) fn diff_chains<'a>(last: &AppliedChains, ruleset: &'a Ruleset) -> Vec<ChainDiff<'a>> {
    let empty = HashMap::new();
    let diffs = ruleset.tables().map(|(table, rules)| diff_table(table, last.tables.get(&table).unwrap_or(&empty), rules));
    diffs.into()
}

fn diff_table<'a>(table: Table, last: &HashMap<Box<str>, u64>, rules: &'a TableRules) -> ChainDiff<'a> {
    let now = hash_chains(rules);
    let written = rules
        .chains
        .iter()
        .filter_map(|chain| now.get_key_value(chain.as_str()).map(|(c, h)| (*c, *h)))
        .filter(|(chain, hash)| last.get(*chain) != Some(hash))
        .collect::<Vec<_>>();
    let mut deleted: Vec<String> =
        last.keys().filter(|chain| !now.contains_key(&***chain)).map(|chain| chain.to_string()).collect();
    deleted.sort();
    ChainDiff { table, written: dedup(written), deleted }
}

/// Drops repeated declarations of a chain (a render would never make
/// them, but one must not be written twice).
fn dedup(written: Vec<(&str, u64)>) -> Vec<(&str, u64)> {
    let mut seen = HashSet::with_capacity(written.len());
    written.into_iter().filter(|(chain, _)| seen.insert(*chain)).collect()
}

/// The hash of every declared chain's rules, in order (a chain without
/// rules hashes as empty). Rules of a chain that is not declared are
/// ignored: the restore would refuse them anyway.
fn hash_chains(rules: &TableRules) -> HashMap<&str, u64> {
    let mut hashers: HashMap<&str, DefaultHasher> =
        rules.chains.iter().map(|chain| (chain.as_str(), DefaultHasher::new())).collect();
    for rule in &rules.rules {
        if let Some(hasher) = hashers.get_mut(chain_of(rule)) {
            hasher.write(rule.as_bytes());
            hasher.write_u8(b'\n');
        }
    }
    hashers.into_iter().map(|(chain, hasher)| (chain, hasher.finish())).collect()
}

/// The chain a rule line (`CHAIN args...`) is in.
pub(crate) fn chain_of(rule: &str) -> &str {
    rule.split_once(' ').map_or(rule, |(chain, _)| chain)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(chains: &[&str], rules: &[&str]) -> TableRules {
        TableRules { chains: chains.iter().map(|c| c.to_string()).collect(), rules: rules.iter().map(|r| r.to_string()).collect() }
    }

    fn nat(chains: &[&str], rules: &[&str]) -> Ruleset {
        Ruleset { nat: table(chains, rules), ..Ruleset::default() }
    }

    fn written<'a>(diffs: &'a [ChainDiff]) -> Vec<(Table, &'a str)> {
        diffs.iter().flat_map(|d| d.written.iter().map(move |(c, _)| (d.table, *c))).collect()
    }

    const BEFORE: &[&str] = &[
        "KUBE-SERVICES -d 172.30.0.1/32 -j KUBE-SVC-A",
        "KUBE-SVC-A -j KUBE-SEP-A1",
        "KUBE-SEP-A1 -j DNAT --to-destination 10.180.0.1:80",
        "KUBE-SERVICES -d 172.30.0.2/32 -j KUBE-SVC-B",
        "KUBE-SVC-B -j KUBE-SEP-B1",
        "KUBE-SEP-B1 -j DNAT --to-destination 10.180.0.2:80",
    ];
    const CHAINS: &[&str] = &["KUBE-SERVICES", "KUBE-SVC-A", "KUBE-SEP-A1", "KUBE-SVC-B", "KUBE-SEP-B1"];

    #[test]
    fn the_same_ruleset_changes_nothing() {
        let ruleset = nat(CHAINS, BEFORE);
        let diffs = diff_chains(&AppliedChains::of(&ruleset), &ruleset);
        assert!(diffs.iter().all(ChainDiff::is_empty), "{diffs:?}");
    }

    #[test]
    fn only_chains_whose_rules_changed_are_written_gone_ones_deleted() {
        let last = AppliedChains::of(&nat(CHAINS, BEFORE));
        // B's endpoint moves: new SEP chain, SVC-B rewritten, SEP-B1 goes.
        let mut rules = BEFORE.to_vec();
        rules[4] = "KUBE-SVC-B -j KUBE-SEP-B2";
        rules[5] = "KUBE-SEP-B2 -j DNAT --to-destination 10.180.0.3:80";
        let chains = ["KUBE-SERVICES", "KUBE-SVC-A", "KUBE-SEP-A1", "KUBE-SVC-B", "KUBE-SEP-B2"];
        let now = nat(&chains, &rules);
        let diffs = diff_chains(&last, &now);
        assert_eq!(written(&diffs), vec![(Table::Nat, "KUBE-SVC-B"), (Table::Nat, "KUBE-SEP-B2")]);
        let nat_diff = diffs.iter().find(|d| d.table == Table::Nat).unwrap();
        assert_eq!(nat_diff.deleted, vec!["KUBE-SEP-B1"]);
    }

    #[test]
    fn rule_order_within_a_chain_counts_and_rules_of_other_chains_do_not_mix() {
        let last = AppliedChains::of(&nat(CHAINS, BEFORE));
        // Swapping the two KUBE-SERVICES entries reorders that chain only.
        let mut rules = BEFORE.to_vec();
        rules.swap(0, 3);
        let swapped = nat(CHAINS, &rules);
        assert_eq!(written(&diff_chains(&last, &swapped)), vec![(Table::Nat, "KUBE-SERVICES")]);
        // A rule moving from one chain's end to the next chain's start
        // changes both, even though the concatenation is the same.
        let split = nat(&["X", "Y"], &["X -j A", "Y -j B"]);
        let moved = nat(&["X", "Y"], &["X -j A", "X -j B"]);
        assert_eq!(written(&diff_chains(&AppliedChains::of(&split), &moved)), vec![(Table::Nat, "X"), (Table::Nat, "Y")]);
    }

    #[test]
    fn a_chain_emptied_is_rewritten_and_a_chain_moved_between_tables_counts_in_each() {
        let last = AppliedChains::of(&nat(CHAINS, BEFORE));
        let emptied: Vec<&str> = BEFORE.iter().copied().filter(|r| !r.starts_with("KUBE-SVC-A ")).collect();
        assert_eq!(written(&diff_chains(&last, &nat(CHAINS, &emptied))), vec![(Table::Nat, "KUBE-SVC-A")]);
        let mut ruleset = nat(CHAINS, BEFORE);
        ruleset.filter = table(&["KUBE-SVC-A"], &[]);
        assert_eq!(written(&diff_chains(&last, &ruleset)), vec![(Table::Filter, "KUBE-SVC-A")]);
    }

    #[test]
    fn update_records_what_a_diff_applied() {
        let mut last = AppliedChains::of(&nat(CHAINS, BEFORE));
        let now = nat(&CHAINS[..3], &BEFORE[..3]);
        let diffs = diff_chains(&last, &now);
        last.update(&diffs);
        assert_eq!(last, AppliedChains::of(&now));
    }
}
