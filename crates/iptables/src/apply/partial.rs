//! The `iptables-restore --noflush` input of a partial sync: per table
//! with changes, the chains [`super::chains::diff_chains`] found new or
//! changed are declared (which flushes them) and written whole, and the
//! chains no longer rendered are flushed and deleted (`-X`, after the
//! rewritten chains stopped jumping to them). Tables without changes are
//! left out, so a change in one table is one atomic commit. Pure.

use super::chains::{ChainDiff, chain_of};
use crate::Ruleset;
use std::collections::HashSet;
use std::fmt::Write;

/// The restore input for `diffs` (computed against `ruleset`); empty when
/// nothing changed.
pub(crate) fn render_partial_input(ruleset: &Ruleset, diffs: &[ChainDiff]) -> String {
    let mut out = String::new();
    for diff in diffs.iter().filter(|d| !d.is_empty()) {
        let Some((_, rules)) = ruleset.tables().into_iter().find(|(table, _)| *table == diff.table) else { continue };
        let written: HashSet<&str> = diff.written.iter().map(|(chain, _)| *chain).collect();
        let _ = writeln!(out, "*{}", diff.table);
        for chain in written_names(diff).chain(diff.deleted.iter().map(String::as_str)) {
            let _ = writeln!(out, ":{chain} - [0:0]");
        }
        for rule in rules.rules.iter().filter(|rule| written.contains(chain_of(rule))) {
            let _ = writeln!(out, "-A {rule}");
        }
        for chain in &diff.deleted {
            let _ = writeln!(out, "-X {chain}");
        }
        out.push_str("COMMIT\n");
    }
    out
}

fn written_names<'a>(diff: &'a ChainDiff) -> impl Iterator<Item = &'a str> + 'a {
    diff.written.iter().map(|(chain, _)| *chain)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::chains::{AppliedChains, diff_chains};
    use crate::TableRules;

    fn rules(chains: &[&str], rules: &[&str]) -> TableRules {
        TableRules { chains: chains.iter().map(|c| c.to_string()).collect(), rules: rules.iter().map(|r| r.to_string()).collect() }
    }

    #[test]
    fn changed_chains_are_written_whole_gone_ones_deleted_unchanged_tables_left_out() {
        let before = Ruleset {
            filter: rules(&["KUBE-SERVICES"], &["KUBE-SERVICES -d 172.30.0.2/32 -j REJECT"]),
            nat: rules(
                &["KUBE-SERVICES", "KUBE-SVC-A", "KUBE-SEP-A1"],
                &["KUBE-SERVICES -j KUBE-SVC-A", "KUBE-SVC-A -j KUBE-SEP-A1", "KUBE-SEP-A1 -j DNAT --to-destination 10.180.0.1:80"],
            ),
            ..Ruleset::default()
        };
        let mut after = before.clone();
        after.nat = rules(
            &["KUBE-SERVICES", "KUBE-SVC-A", "KUBE-SEP-A2"],
            &[
                "KUBE-SERVICES -j KUBE-SVC-A",
                "KUBE-SVC-A -m statistic --mode random --probability 0.5 -j KUBE-SEP-A2",
                "KUBE-SEP-A2 -j DNAT --to-destination 10.180.0.2:80",
                "KUBE-SVC-A -j KUBE-SEP-A2",
            ],
        );
        let diffs = diff_chains(&AppliedChains::of(&before), &after);
        let expected = "*nat\n:KUBE-SVC-A - [0:0]\n:KUBE-SEP-A2 - [0:0]\n:KUBE-SEP-A1 - [0:0]\n\
            -A KUBE-SVC-A -m statistic --mode random --probability 0.5 -j KUBE-SEP-A2\n\
            -A KUBE-SEP-A2 -j DNAT --to-destination 10.180.0.2:80\n-A KUBE-SVC-A -j KUBE-SEP-A2\n-X KUBE-SEP-A1\nCOMMIT\n";
        assert_eq!(render_partial_input(&after, &diffs), expected);
        assert_eq!(render_partial_input(&before, &diff_chains(&AppliedChains::of(&before), &before)), "");
    }
}
