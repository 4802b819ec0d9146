//! What a partial sync writes, found by comparing chain contents: every
//! chain of a rendered table gets a 64-bit hash of its rules (in order),
//! the hashes of the last successful sync are kept in memory
//! ([`AppliedChains`], about 50 bytes per chain, never the rules), and a
//! partial sync rewrites exactly the chains whose hash differs or that are
//! new, and deletes the chains the last sync wrote that are not rendered
//! any more ([`diff_chains`]). Pure: no kernel, no I/O.
//!
//! Comparing contents rather than trusting a list of changed services
//! also catches changes no service made: a node address, large-cluster
//! mode dropping every endpoint comment, an option.

use super::carried::PieceChains;
use super::chain_table::{ChainTable, WRITE};
use crate::Table;
use std::collections::BTreeMap;

/// The chains of ours one sync left in the kernel, per table: name and
/// hash of its rules, and which service port's piece declared them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AppliedChains {
    tables: BTreeMap<Table, ChainTable>,
    pieces: PieceChains,
}

impl AppliedChains {
    /// The chains of `tables` (as a sync's first walk hashed them) and the
    /// pieces that declared them, as the sync leaves them.
    pub(crate) fn of(mut tables: BTreeMap<Table, ChainTable>, mut pieces: PieceChains) -> Self {
        tables.values_mut().for_each(ChainTable::clear_flags);
        pieces.shrink_to_fit();
        Self { tables, pieces }
    }

    /// Which service port's piece declared which chains.
    pub(crate) fn pieces(&self) -> &PieceChains {
        &self.pieces
    }

    /// The chains of `table` the last sync left.
    pub(crate) fn table(&self, table: Table) -> Option<&ChainTable> {
        self.tables.get(&table)
    }
}

/// Flags [`WRITE`] the chains of `now` that are new or whose rules changed
/// since `last`, and returns per table the chains `last` holds that are
/// not rendered now (sorted): to flush and delete.
pub(crate) fn diff_chains(last: &AppliedChains, now: &mut BTreeMap<Table, ChainTable>) -> BTreeMap<Table, Vec<String>> {
    let empty = ChainTable::default();
    let mut deleted = BTreeMap::new();
    for (table, chains) in now.iter_mut() {
        let was = last.tables.get(table).unwrap_or(&empty);
        let changed: Vec<u32> = chains.ids().filter(|i| was.find(chains.name(*i)).is_none_or(|j| was.hash(j) != chains.hash(*i))).collect();
        changed.into_iter().for_each(|i| chains.set(i, WRITE));
        let mut gone: Vec<String> = was.ids().map(|j| was.name(j)).filter(|c| chains.find(c).is_none()).map(String::from).collect();
        gone.sort();
        deleted.insert(*table, gone);
    }
    for (table, was) in &last.tables {
        if !now.contains_key(table) {
            deleted.insert(*table, was.ids().map(|j| was.name(j).to_string()).collect());
        }
    }
    deleted
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::hashed::hash_rendering;
    use crate::rules::tests::rule;
    use crate::{Ruleset, TableRules};

    fn table(chains: &[&str], rules: &[&str]) -> TableRules {
        TableRules { chains: chains.iter().map(|c| c.to_string()).collect(), rules: rules.iter().map(|r| rule(r)).collect() }
    }

    fn nat(chains: &[&str], rules: &[&str]) -> Ruleset {
        Ruleset { nat: table(chains, rules), ..Ruleset::default() }
    }

    fn applied(ruleset: &Ruleset) -> AppliedChains {
        AppliedChains::of(hash_rendering(ruleset).tables, PieceChains::default())
    }

    /// Chains written (table and name) and chains deleted per table.
    type Diff = (Vec<(Table, String)>, BTreeMap<Table, Vec<String>>);

    /// The chains written and deleted going from `last` to `now`.
    fn diff(last: &AppliedChains, now: &Ruleset) -> Diff {
        let mut tables = hash_rendering(now).tables;
        let deleted = diff_chains(last, &mut tables);
        let written = tables.iter().flat_map(|(t, c)| c.with(WRITE).map(|i| (*t, c.name(i).to_string())).collect::<Vec<_>>()).collect();
        (written, deleted)
    }

    fn written(last: &AppliedChains, now: &Ruleset) -> Vec<(Table, String)> {
        diff(last, now).0
    }

    fn nat_chain(chain: &str) -> (Table, String) {
        (Table::Nat, chain.to_string())
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
        let (written, deleted) = diff(&applied(&ruleset), &ruleset);
        assert!(written.is_empty() && deleted.values().all(Vec::is_empty), "{written:?} {deleted:?}");
    }

    #[test]
    fn only_chains_whose_rules_changed_are_written_gone_ones_deleted() {
        let last = applied(&nat(CHAINS, BEFORE));
        // B's endpoint moves: new SEP chain, SVC-B rewritten, SEP-B1 goes.
        let mut rules = BEFORE.to_vec();
        rules[4] = "KUBE-SVC-B -j KUBE-SEP-B2";
        rules[5] = "KUBE-SEP-B2 -j DNAT --to-destination 10.180.0.3:80";
        let chains = ["KUBE-SERVICES", "KUBE-SVC-A", "KUBE-SEP-A1", "KUBE-SVC-B", "KUBE-SEP-B2"];
        let (written, deleted) = diff(&last, &nat(&chains, &rules));
        assert_eq!(written, vec![nat_chain("KUBE-SVC-B"), nat_chain("KUBE-SEP-B2")]);
        assert_eq!(deleted[&Table::Nat], vec!["KUBE-SEP-B1"]);
    }

    #[test]
    fn rule_order_within_a_chain_counts_and_rules_of_other_chains_do_not_mix() {
        let last = applied(&nat(CHAINS, BEFORE));
        // Swapping the two KUBE-SERVICES entries reorders that chain only.
        let mut rules = BEFORE.to_vec();
        rules.swap(0, 3);
        assert_eq!(written(&last, &nat(CHAINS, &rules)), vec![nat_chain("KUBE-SERVICES")]);
        // A rule moving from one chain's end to the next chain's start
        // changes both, even though the concatenation is the same.
        let split = nat(&["X", "Y"], &["X -j A", "Y -j B"]);
        let moved = nat(&["X", "Y"], &["X -j A", "X -j B"]);
        assert_eq!(written(&applied(&split), &moved), vec![nat_chain("X"), nat_chain("Y")]);
    }

    #[test]
    fn a_chain_emptied_is_rewritten_and_a_chain_moved_between_tables_counts_in_each() {
        let last = applied(&nat(CHAINS, BEFORE));
        let emptied: Vec<&str> = BEFORE.iter().copied().filter(|r| !r.starts_with("KUBE-SVC-A ")).collect();
        assert_eq!(written(&last, &nat(CHAINS, &emptied)), vec![nat_chain("KUBE-SVC-A")]);
        let mut ruleset = nat(CHAINS, BEFORE);
        ruleset.filter = table(&["KUBE-SVC-A"], &[]);
        assert_eq!(written(&last, &ruleset), vec![(Table::Filter, "KUBE-SVC-A".to_string())]);
    }

    #[test]
    fn the_applied_chains_of_a_diff_are_those_rendered() {
        let last = applied(&nat(CHAINS, BEFORE));
        let now = nat(&CHAINS[..3], &BEFORE[..3]);
        let mut tables = hash_rendering(&now).tables;
        let deleted = diff_chains(&last, &mut tables);
        assert_eq!(deleted[&Table::Nat], vec!["KUBE-SEP-B1", "KUBE-SVC-B"]);
        assert_eq!(AppliedChains::of(tables, PieceChains::default()), applied(&now));
    }
}
