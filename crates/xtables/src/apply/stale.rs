//! What a sync (or a cleanup) must remove from one table: chains of ours
//! that exist but are no longer rendered, and jumps of ours from built-in
//! chains that are no longer wanted or are duplicates. Pure: it compares
//! the saved table with the desired rules.
//!
//! A stale chain that something outside our chains still jumps to (a rule
//! of another program, or a chain of ours we leave alone) is kept: `-X`
//! would fail on it and abort the whole table.

use super::ownership::{is_entry_chain, is_owned_chain};
use super::saved::{SavedRule, SavedTable};
use std::collections::BTreeSet;

/// The removals for one table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Removals {
    /// Chains of ours to flush and delete (`:C` + `-X C`).
    pub(crate) chains: Vec<String>,
    /// Rules in built-in chains to delete (`-D`): our jumps that are not
    /// wanted, or repeat a wanted one.
    pub(crate) jumps: Vec<SavedRule>,
    /// Stale chains of ours kept because a rule we do not own uses them.
    pub(crate) kept: Vec<String>,
}

impl Removals {
    /// Nothing to remove.
    pub(crate) fn is_empty(&self) -> bool {
        self.chains.is_empty() && self.jumps.is_empty()
    }
}

/// Compares `saved` with what will be there after the restore: the chains
/// `rendered` says are rendered (with their rules) and the built-in jumps
/// whose rule lines (as `BuiltinJump::rule_line` prints them) are
/// `wanted_jumps`.
pub(crate) fn diff_stale(saved: &SavedTable, rendered: &dyn Fn(&str) -> bool, wanted_jumps: &[String]) -> Removals {
    let jumps = unwanted_jumps(saved, wanted_jumps);
    let candidates: BTreeSet<&str> =
        saved.chains.iter().map(String::as_str).filter(|c| is_owned_chain(c) && !rendered(c)).collect();
    let kept = still_referenced(saved, rendered, &candidates, &jumps);
    Removals {
        chains: saved
            .chains
            .iter()
            .filter(|c| candidates.contains(c.as_str()) && !kept.contains(c.as_str()))
            .cloned()
            .collect(),
        jumps,
        kept: kept.into_iter().map(str::to_string).collect(),
    }
}

/// Built-in-chain rules jumping to our entry chains that are not wanted,
/// and second copies of wanted ones.
fn unwanted_jumps(saved: &SavedTable, wanted: &[String]) -> Vec<SavedRule> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for rule in saved.rules.iter().filter(|r| saved.is_builtin(&r.chain)) {
        let wanted_here = wanted.contains(&rule.spec);
        let ours = rule.target.as_deref().is_some_and(is_entry_chain) || wanted_here;
        if ours && (!wanted_here || !seen.insert(rule.spec.as_str())) {
            out.push(rule.clone());
        }
    }
    out
}

/// The candidates that rules surviving the restore still jump to: rules of
/// chains that are neither rewritten (declared) nor deleted, except the
/// jumps being removed. Repeated until no more are found, since a kept
/// chain's own rules keep their targets too.
fn still_referenced<'a>(
    saved: &'a SavedTable,
    declared: &dyn Fn(&str) -> bool,
    candidates: &BTreeSet<&'a str>,
    removed: &[SavedRule],
) -> BTreeSet<&'a str> {
    let mut kept = BTreeSet::new();
    loop {
        let survives = |r: &&SavedRule| {
            let chain = r.chain.as_str();
            !declared(chain) && (!candidates.contains(chain) || kept.contains(chain)) && !removed.contains(r)
        };
        let found: Vec<&str> = saved
            .rules
            .iter()
            .filter(survives)
            .filter_map(|r| r.target.as_deref())
            .filter(|t| candidates.contains(t) && !kept.contains(t))
            .collect();
        if found.is_empty() {
            return kept;
        }
        kept.extend(found);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::saved::parse_saved;
    use crate::Table;

    const PORTALS: &str = "PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES";

    fn nat(body: &str) -> SavedTable {
        let text = format!(
            "*nat\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n:KUBE-SVC-OLD - [0:0]\n:KUBE-SEP-OLD - [0:0]\n:KUBE-SVC-NEW - [0:0]\n:FOREIGN - [0:0]\n{body}COMMIT\n"
        );
        parse_saved(&text).remove(&Table::Nat).unwrap_or_default()
    }

    fn desired(chain: &str) -> bool {
        ["KUBE-SERVICES", "KUBE-SVC-NEW"].contains(&chain)
    }

    #[test]
    fn unrendered_chains_of_ours_are_deleted_and_foreign_ones_left() {
        let saved = nat("-A KUBE-SERVICES -j KUBE-SVC-OLD\n-A KUBE-SVC-OLD -j KUBE-SEP-OLD\n");
        let removals = diff_stale(&saved, &desired, &[]);
        assert_eq!(removals.chains, vec!["KUBE-SVC-OLD", "KUBE-SEP-OLD"]);
        assert!(removals.kept.is_empty() && removals.jumps.is_empty());
    }

    #[test]
    fn chains_used_by_foreign_rules_are_kept_with_what_they_use() {
        let saved = nat("-A FOREIGN -j KUBE-SVC-OLD\n-A KUBE-SVC-OLD -j KUBE-SEP-OLD\n");
        let removals = diff_stale(&saved, &desired, &[]);
        assert!(removals.chains.is_empty(), "{removals:?}");
        assert_eq!(removals.kept, vec!["KUBE-SEP-OLD", "KUBE-SVC-OLD"]);
    }

    #[test]
    fn unwanted_and_duplicate_jumps_are_removed_foreign_builtin_rules_stay() {
        let saved = nat(&format!(
            "-A PREROUTING -j ACCEPT\n-A {PORTALS}\n-A {PORTALS}\n-A OUTPUT -m comment --comment old -j KUBE-SERVICES\n-A OUTPUT -j KUBE-SVC-OLD\n"
        ));
        let removals = diff_stale(&saved, &desired, &[PORTALS.to_string()]);
        let removed: Vec<_> = removals.jumps.iter().map(|r| (r.chain.as_str(), r.position)).collect();
        assert_eq!(removed, vec![("PREROUTING", 3), ("OUTPUT", 1)]);
        // A built-in chain's jump to a service chain is not ours: keep both.
        assert_eq!(removals.kept, vec!["KUBE-SVC-OLD"]);
        assert_eq!(removals.chains, vec!["KUBE-SEP-OLD"]);
    }

    #[test]
    fn cleanup_removes_every_jump_into_our_entry_chains() {
        let saved = nat(&format!("-A {PORTALS}\n-A KUBE-SERVICES -j KUBE-SVC-OLD\n"));
        let removals = diff_stale(&saved, &|_| false, &[]);
        assert_eq!(removals.jumps.len(), 1);
        assert_eq!(removals.chains, vec!["KUBE-SERVICES", "KUBE-SVC-OLD", "KUBE-SEP-OLD", "KUBE-SVC-NEW"]);
    }
}
