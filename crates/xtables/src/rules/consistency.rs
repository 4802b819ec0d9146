//! A check every rendered ruleset must pass: rules only in chains it
//! declares, no jump to a chain it does not declare, and no chain of ours
//! that nothing jumps to. Used by the golden tests; cheap enough for a
//! debug assertion.

use crate::chains::{KUBE_MARK_MASQ, KUBE_PROXY_CANARY};
use super::{Ruleset, Table, TableRules};
use std::collections::{BTreeMap, BTreeSet};

/// Chains that may legitimately have no jump from our rules: the canary
/// (only watched), and `KUBE-MARK-MASQ`, which upstream always provides
/// because other components (CNI plugins, older kubelets) jump to it.
const MAY_BE_UNREFERENCED: &[&str] = &[KUBE_PROXY_CANARY, KUBE_MARK_MASQ];

/// Everything wrong with `ruleset`, one line each; empty when consistent.
pub fn consistency_problems(ruleset: &Ruleset) -> Vec<String> {
    let mut problems = Vec::new();
    for (table, rules) in ruleset.tables() {
        let entries: Vec<&str> = ruleset
            .builtin_jumps
            .iter()
            .filter(|j| j.table == table)
            .filter_map(|j| target_of(&j.args))
            .collect();
        check_table(table, rules, &entries, &mut problems);
    }
    problems
}

/// Checks one table; `entries` are the chains built-in jumps lead to.
fn check_table(table: Table, rules: &TableRules, entries: &[&str], problems: &mut Vec<String>) {
    let mut declared: BTreeMap<&str, usize> = BTreeMap::new();
    for chain in &rules.chains {
        *declared.entry(chain.as_str()).or_default() += 1;
    }
    problems.extend(declared.iter().filter(|(_, n)| **n > 1).map(|(c, _)| format!("{table}: {c} declared twice")));
    let mut used: BTreeSet<&str> = entries.iter().copied().collect();
    for target in entries.iter().filter(|t| !declared.contains_key(*t)) {
        problems.push(format!("{table}: built-in jump to undeclared chain {target}"));
    }
    for rule in &rules.rules {
        if !declared.contains_key(rule.chain()) {
            problems.push(format!("{table}: rule in undeclared chain: {rule}"));
        }
        let Some(target) = rule.target().chain() else { continue };
        if !declared.contains_key(target) {
            problems.push(format!("{table}: jump to undeclared chain: {rule}"));
        }
        used.insert(declared.get_key_value(target).map_or("", |(k, _)| *k));
    }
    for chain in declared.keys().filter(|c| !used.contains(*c) && !MAY_BE_UNREFERENCED.contains(*c)) {
        problems.push(format!("{table}: chain {chain} is declared but nothing jumps to it"));
    }
}

/// The word after `-j` or `-g` of a built-in jump's arguments.
fn target_of(words: &[String]) -> Option<&str> {
    let at = words.iter().position(|w| w == "-j" || w == "-g")?;
    words.get(at + 1).map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Rule, Target};

    #[test]
    fn reports_dangling_jumps_and_orphans() {
        let mut ruleset = Ruleset::default();
        ruleset.nat.chains = ["KUBE-A", "KUBE-B", "KUBE-A", "KUBE-MARK-MASQ", "KUBE-PROXY-CANARY"].map(String::from).to_vec();
        ruleset.nat.rules =
            vec![Rule::new("KUBE-A").jump("KUBE-MISSING").build(), Rule::new("KUBE-C").target(Target::Drop).build()];
        let problems = consistency_problems(&ruleset);
        assert!(problems.iter().any(|p| p.contains("KUBE-A declared twice")), "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("jump to undeclared chain: KUBE-A -j KUBE-MISSING")));
        assert!(problems.iter().any(|p| p.contains("rule in undeclared chain: KUBE-C")));
        assert!(problems.iter().any(|p| p.contains("chain KUBE-B is declared but nothing jumps")));
        assert!(problems.iter().any(|p| p.contains("chain KUBE-A is declared but nothing jumps")));
        assert!(!problems.iter().any(|p| p.contains("KUBE-MARK-MASQ") || p.contains("KUBE-PROXY-CANARY")));
    }
}
