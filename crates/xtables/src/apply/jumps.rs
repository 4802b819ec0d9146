//! Which jumps from the built-in chains into ours are missing: those the
//! `iptables-save` taken before a full sync does not list. The restore of
//! that sync adds them (`-I CHAIN 1`, at the top, or `-A`) after creating
//! our chains, in the same `COMMIT` as the `-D` of unwanted or duplicated
//! ones, so a sync never duplicates a jump, never rewrites the built-in
//! chains (which belong to everyone) and runs no `iptables -C`/`-I`
//! process (each copies the whole table from and to the kernel). This
//! relies on each jump being printed by `iptables-save` exactly as
//! [`BuiltinJump::rule_line`] renders it (checked in
//! `tests/apply_ruleset.rs`). Pure.

use super::saved::SavedTable;
use crate::{BuiltinJump, Table};
use std::collections::HashSet;

/// The jumps of `jumps` into `table` that `saved` (that table as saved,
/// if it exists) does not list, in order.
pub(crate) fn missing_jumps<'a>(jumps: &'a [BuiltinJump], table: Table, saved: Option<&SavedTable>) -> Vec<&'a BuiltinJump> {
    let listed: HashSet<&str> = saved
        .map(|t| t.rules.iter().filter(|r| t.is_builtin(&r.chain)).map(|r| r.spec.as_str()).collect())
        .unwrap_or_default();
    jumps.iter().filter(|j| j.table == table && !listed.contains(j.rule_line().as_str())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::saved::parse_saved;

    fn jump(chain: &'static str, comment: &str) -> BuiltinJump {
        let args = ["-m", "comment", "--comment", comment, "-j", "KUBE-SERVICES"].map(String::from).into();
        BuiltinJump { table: Table::Nat, chain, args, prepend: true }
    }

    #[test]
    fn only_jumps_not_saved_are_missing() {
        let saved = parse_saved("*nat\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\nCOMMIT\n");
        let jumps = [jump("PREROUTING", "kubernetes service portals"), jump("OUTPUT", "kubernetes service portals")];
        let missing = missing_jumps(&jumps, Table::Nat, saved.get(&Table::Nat));
        assert_eq!(missing.iter().map(|j| j.chain).collect::<Vec<_>>(), vec!["OUTPUT"]);
        assert_eq!(missing_jumps(&jumps, Table::Nat, None).len(), 2);
        assert!(missing_jumps(&jumps, Table::Filter, None).is_empty());
    }
}
