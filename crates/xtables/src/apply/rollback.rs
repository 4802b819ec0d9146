//! Putting back a table that a failed restore had already committed (an
//! earlier `*table` block of the same input lands on its own). It compares
//! the `iptables-save` taken just before the sync with one taken after
//! the failure, so it neither trusts the error's line number nor touches
//! a table that did not change: every chain of the sync that differs gets
//! its saved rules again (an nft table split into several `COMMIT`s may
//! have landed only in part: only what changed is rewritten), chains the
//! sync created are deleted, removed built-in jumps return to their old
//! positions and added ones are deleted. Nothing else in the table is
//! touched.

use super::restore::TableInput;
use super::saved::SavedTable;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write;

/// Restore input that returns `applied.table` from `now` to `before`, or
/// `None` when the chains and jumps the sync touches are as they were.
pub(crate) fn render_rollback_input(before: &SavedTable, now: &SavedTable, applied: &TableInput) -> Option<String> {
    let touched: BTreeSet<&str> =
        applied.written.iter().copied().chain(applied.removals.chains.iter().map(String::as_str)).collect();
    let (was, is) = (Index::of(before), Index::of(now));
    if !changed(&was, &is, &touched, applied) {
        return None;
    }
    let differ: BTreeSet<&str> = touched.into_iter().filter(|c| was.chain_state(c) != is.chain_state(c)).collect();
    let mut out = format!("*{}\n", applied.table);
    for chain in &differ {
        let _ = writeln!(out, ":{chain} - [0:0]");
    }
    for rule in before.rules.iter().filter(|r| differ.contains(r.chain.as_str())) {
        let _ = writeln!(out, "-A {}", rule.spec);
    }
    write_jump_reinserts(&mut out, now, applied);
    write_jump_deletions(&mut out, &was, &is, applied);
    for chain in differ.iter().filter(|c| !was.chains.contains(*c) && is.chains.contains(*c)) {
        let _ = writeln!(out, "-X {chain}");
    }
    out.push_str("COMMIT\n");
    Some(out)
}

/// One saved table's chains and each chain's rules, looked up in constant
/// time (a big nat table has 100k chains).
struct Index<'a> {
    chains: HashSet<&'a str>,
    rules: HashMap<&'a str, Vec<&'a str>>,
    specs: HashMap<&'a str, usize>,
}

impl<'a> Index<'a> {
    fn of(table: &'a SavedTable) -> Self {
        let mut rules: HashMap<&str, Vec<&str>> = HashMap::new();
        let mut specs: HashMap<&str, usize> = HashMap::new();
        for rule in &table.rules {
            rules.entry(rule.chain.as_str()).or_default().push(rule.spec.as_str());
            *specs.entry(rule.spec.as_str()).or_default() += 1;
        }
        Self { chains: table.chains.iter().map(String::as_str).collect(), rules, specs }
    }

    /// How many rules are exactly `spec`.
    fn count(&self, spec: &str) -> usize {
        self.specs.get(spec).copied().unwrap_or(0)
    }

    /// Whether `chain` exists, and its rules.
    fn chain_state(&self, chain: &str) -> (bool, Option<&Vec<&'a str>>) {
        (self.chains.contains(chain), self.rules.get(chain))
    }
}

/// Whether a touched chain or a removed jump differs between the saves.
fn changed(before: &Index, now: &Index, touched: &BTreeSet<&str>, applied: &TableInput) -> bool {
    touched.iter().any(|c| before.chain_state(c) != now.chain_state(c))
        || applied.removals.jumps.iter().any(|j| before.count(&j.spec) != now.count(&j.spec))
        || applied.added.iter().any(|j| before.count(&j.rule_line()) != now.count(&j.rule_line()))
}

/// `-D spec` for each added jump that is there more often than before.
fn write_jump_deletions(out: &mut String, before: &Index, now: &Index, applied: &TableInput) {
    for line in applied.added.iter().map(|j| j.rule_line()) {
        for _ in before.count(&line)..now.count(&line) {
            let _ = writeln!(out, "-D {line}");
        }
    }
}

/// `-I CHAIN POS spec` for each removed jump that is gone now, at its old
/// position (ascending, so earlier re-inserts make room for later ones;
/// clamped to the chain's end in case others changed it meanwhile).
fn write_jump_reinserts(out: &mut String, now: &SavedTable, applied: &TableInput) {
    let mut inserted: Vec<&str> = Vec::new();
    for jump in &applied.removals.jumps {
        if now.rules.iter().any(|r| r.spec == jump.spec) {
            continue;
        }
        let length = now.rules_of(&jump.chain).count() + inserted.iter().filter(|c| **c == jump.chain).count();
        let position = jump.position.min(length + 1);
        let rest = jump.spec.strip_prefix(jump.chain.as_str()).unwrap_or(&jump.spec);
        let _ = writeln!(out, "-I {} {position}{rest}", jump.chain);
        inserted.push(&jump.chain);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::saved::parse_saved;
    use crate::apply::stale::Removals;
    use crate::Table;

    fn nat(text: &str) -> SavedTable {
        parse_saved(&format!("*nat\n:PREROUTING ACCEPT [0:0]\n{text}COMMIT\n")).remove(&Table::Nat).unwrap_or_default()
    }

    const BEFORE: &str = ":KUBE-SERVICES - [0:0]\n:KUBE-SVC-OLD - [0:0]\n:OTHER - [0:0]\n-A PREROUTING -j OTHER\n-A PREROUTING -m comment --comment \"old jump\" -j KUBE-SERVICES\n-A KUBE-SERVICES -j KUBE-SVC-OLD\n-A KUBE-SVC-OLD -j RETURN\n-A OTHER -j RETURN\n";
    const AFTER: &str = ":KUBE-SERVICES - [0:0]\n:KUBE-SVC-NEW - [0:0]\n:OTHER - [0:0]\n-A PREROUTING -j OTHER\n-A KUBE-SERVICES -j KUBE-SVC-NEW\n-A OTHER -j RETURN\n";

    fn applied(before: &SavedTable, written: &[&'static str]) -> TableInput<'static> {
        let removals =
            Removals { chains: vec!["KUBE-SVC-OLD".into()], jumps: vec![before.rules[1].clone()], kept: Vec::new() };
        TableInput { table: Table::Nat, written: written.to_vec(), removals, added: Vec::new() }
    }

    fn rules() -> [&'static str; 2] {
        ["KUBE-SERVICES", "KUBE-SVC-NEW"]
    }

    #[test]
    fn rewritten_chains_get_saved_rules_new_ones_go_removed_jumps_return() {
        let (before, now, rules) = (nat(BEFORE), nat(AFTER), rules());
        let expected = "*nat\n:KUBE-SERVICES - [0:0]\n:KUBE-SVC-NEW - [0:0]\n:KUBE-SVC-OLD - [0:0]\n-A KUBE-SERVICES -j KUBE-SVC-OLD\n-A KUBE-SVC-OLD -j RETURN\n-I PREROUTING 2 -m comment --comment \"old jump\" -j KUBE-SERVICES\n-X KUBE-SVC-NEW\nCOMMIT\n";
        assert_eq!(render_rollback_input(&before, &now, &applied(&before, &rules)).as_deref(), Some(expected));
    }

    #[test]
    fn an_unchanged_table_is_left_alone() {
        let (before, rules) = (nat(BEFORE), rules());
        assert_eq!(render_rollback_input(&before, &before, &applied(&before, &rules)), None);
    }
}
