//! What the kernel holds after a sync, counted from `iptables-save` run in
//! the benchmark's namespace with the backend under test (chains and rules
//! per table), or in nftables mode from one `nft list table ip kube-proxy`
//! (chains, rules, elements of named sets and maps).

use crate::namespace::BenchNetns;
use anyhow::Result;
use std::collections::BTreeMap;

/// Chains (built-in included) and rules of one table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableCount {
    /// `:CHAIN` lines.
    pub chains: u64,
    /// `-A` lines (nftables: rules).
    pub rules: u64,
    /// nftables: elements of named sets and maps.
    pub elements: u64,
}

/// What `--proxy-mode mode` wrote in `ns`, counted per table.
pub fn count_mode(
    ns: &BenchNetns,
    mode: &str,
    backend: &str,
) -> Result<BTreeMap<String, TableCount>> {
    if mode != "nftables" {
        return count_tables(ns, backend);
    }
    let text = ns.exec("nft", &["list", "table", "ip", "kube-proxy"])?;
    Ok(BTreeMap::from([(
        "ip kube-proxy".to_string(),
        count_nft_listing(&text),
    )]))
}

/// Counts an `nft list table` text: `chain` blocks, rules (the other
/// statement lines inside chains) and the elements of named sets and maps
/// (`elements = { a, b, … }`, maybe over several lines).
pub fn count_nft_listing(text: &str) -> TableCount {
    let mut count = TableCount::default();
    let (mut in_chain, mut in_elements) = (false, false);
    for line in text.lines().map(str::trim) {
        if in_elements || line.starts_with("elements = {") {
            let items = line.strip_prefix("elements = {").unwrap_or(line);
            in_elements = !items.ends_with('}');
            let items = items.trim_end_matches('}').trim();
            count.elements += items
                .split(',')
                .filter(|item| !item.trim().is_empty())
                .count() as u64;
        } else if line.starts_with("chain ") {
            (in_chain, count.chains) = (true, count.chains + 1);
        } else if line == "}" {
            in_chain = false;
        } else if in_chain
            && !line.is_empty()
            && !line.starts_with("type ")
            && !line.starts_with("comment ")
        {
            count.rules += 1;
        }
    }
    count
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
        assert_eq!(
            counts["nat"],
            TableCount {
                chains: 2,
                rules: 1,
                elements: 0
            }
        );
        assert_eq!(
            counts["filter"],
            TableCount {
                chains: 1,
                rules: 0,
                elements: 0
            }
        );
    }

    #[test]
    fn counts_chains_rules_and_elements_of_an_nft_listing() {
        let text = "table ip kube-proxy {\n\tcomment \"rules for kube-proxy\"\n\
                    \tmap service-ips {\n\t\ttype ipv4_addr . inet_proto . inet_service : verdict\n\
                    \t\tcomment \"ClusterIP\"\n\
                    \t\telements = { 10.96.0.10 . tcp . 80 : goto service-A,\n\
                    \t\t\t     10.96.0.11 . tcp . 80 : goto service-B }\n\t}\n\
                    \tset cluster-ips {\n\t\ttype ipv4_addr\n\t\telements = { 10.96.0.10 }\n\t}\n\
                    \tchain nat-prerouting {\n\t\ttype nat hook prerouting priority dstnat; policy accept;\n\
                    \t\tjump services\n\t}\n\
                    \tchain service-A {\n\t\tip daddr 10.96.0.10 jump mark-for-masquerade\n\
                    \t\tnumgen random mod 2 vmap { 0 : goto endpoint-X, 1 : goto endpoint-Y }\n\t}\n}\n";
        assert_eq!(
            count_nft_listing(text),
            TableCount {
                chains: 2,
                rules: 3,
                elements: 3
            }
        );
    }
}
