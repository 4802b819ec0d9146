//! What the kernel holds after a sync, counted from `iptables-save` run in
//! the benchmark's namespace with the backend under test: chains and rules
//! per table.

use crate::namespace::BenchNetns;
use anyhow::Result;
use std::collections::BTreeMap;

/// Chains (built-in included) and rules of one table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableCount {
    /// `:CHAIN` lines.
    pub chains: u64,
    /// `-A` lines.
    pub rules: u64,
}

/// `iptables-<backend>-save` in `ns`, counted per table.
pub fn count_tables(ns: &BenchNetns, backend: &str) -> Result<BTreeMap<String, TableCount>> {
    let text = ns.exec(&format!("iptables-{backend}-save"), &[])?;
    Ok(count_saved(&text))
}

/// Counts an `iptables-save` text per table.
pub fn count_saved(text: &str) -> BTreeMap<String, TableCount> {
    let mut tables = BTreeMap::new();
    let mut current = String::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix('*') {
            current = name.to_string();
        }
        let count: &mut TableCount = tables.entry(current.clone()).or_default();
        if line.starts_with(':') {
            count.chains += 1;
        } else if line.starts_with("-A ") {
            count.rules += 1;
        }
    }
    tables.remove("");
    tables
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_chains_and_rules_per_table() {
        let text = "# Generated\n*nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-SVC-X - [0:0]\n-A KUBE-SVC-X -j KUBE-SEP-Y\n\
                    COMMIT\n*filter\n:INPUT ACCEPT [0:0]\nCOMMIT\n";
        let counts = count_saved(text);
        assert_eq!(counts["nat"], TableCount { chains: 2, rules: 1 });
        assert_eq!(counts["filter"], TableCount { chains: 1, rules: 0 });
    }
}
