//! What a full sync must write: the `iptables-save` it takes first shows
//! every chain of ours as the kernel has it, so a desired chain that
//! exists there with exactly the desired rules, in order, is left alone
//! (not declared, so not flushed). Anything else — a chain missing, a rule
//! someone added, changed or deleted — is declared and rewritten whole.
//! So a steady full sync is small (with legacy, no table copy at all when
//! nothing differs) and still repairs our chains. Pure.

use super::chains::chain_of;
use super::saved::SavedTable;
use crate::TableRules;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

/// The chains of `desired` (and their rules) that differ from `saved`;
/// borrowed as is when they all differ.
pub(crate) fn diff_written<'a>(desired: &'a TableRules, saved: Option<&SavedTable>) -> Cow<'a, TableRules> {
    let Some(saved) = saved else { return Cow::Borrowed(desired) };
    let unchanged = unchanged_chains(desired, saved);
    if unchanged.is_empty() {
        return Cow::Borrowed(desired);
    }
    let keep = |chain: &str| !unchanged.contains(chain);
    Cow::Owned(TableRules {
        chains: desired.chains.iter().filter(|c| keep(c)).cloned().collect(),
        rules: desired.rules.iter().filter(|r| keep(chain_of(r))).cloned().collect(),
    })
}

/// Desired chains that `saved` holds with exactly the desired rules.
fn unchanged_chains<'a>(desired: &'a TableRules, saved: &SavedTable) -> HashSet<&'a str> {
    let existing: HashSet<&str> = saved.chains.iter().map(String::as_str).collect();
    let mut was: HashMap<&str, Vec<&str>> = HashMap::new();
    for rule in saved.rules.iter().filter(|r| existing.contains(r.chain.as_str())) {
        was.entry(rule.chain.as_str()).or_default().push(rule.spec.as_str());
    }
    let mut wanted: HashMap<&str, Vec<&str>> = HashMap::new();
    for rule in &desired.rules {
        wanted.entry(chain_of(rule)).or_default().push(rule.as_str());
    }
    let same = |chain: &str| {
        existing.contains(chain) && was.get(chain).map_or(&[][..], Vec::as_slice) == wanted.get(chain).map_or(&[][..], Vec::as_slice)
    };
    desired.chains.iter().map(String::as_str).filter(|c| same(c)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Table;
    use crate::apply::saved::parse_saved;

    #[test]
    fn only_missing_or_different_chains_are_written() {
        let saved = parse_saved(
            "*nat\n:KUBE-SERVICES - [0:0]\n:KUBE-SVC-A - [0:0]\n:KUBE-SVC-B - [0:0]\n:KUBE-MARK-MASQ - [0:0]\n\
             -A KUBE-SERVICES -j KUBE-SVC-A\n-A KUBE-SVC-A -j RETURN\n-A KUBE-SVC-A -j DROP\n-A KUBE-SVC-B -j RETURN\nCOMMIT\n",
        );
        let desired = TableRules {
            chains: ["KUBE-SERVICES", "KUBE-SVC-A", "KUBE-SVC-B", "KUBE-SVC-C", "KUBE-MARK-MASQ"].map(String::from).into(),
            rules: ["KUBE-SERVICES -j KUBE-SVC-A", "KUBE-SVC-A -j RETURN", "KUBE-SVC-B -j RETURN", "KUBE-SVC-C -j RETURN"]
                .map(String::from)
                .into(),
        };
        let written = diff_written(&desired, saved.get(&Table::Nat));
        assert_eq!(written.chains, vec!["KUBE-SVC-A", "KUBE-SVC-C"]);
        assert_eq!(written.rules, vec!["KUBE-SVC-A -j RETURN", "KUBE-SVC-C -j RETURN"]);
        assert!(matches!(diff_written(&desired, None), Cow::Borrowed(_)));
    }
}
