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
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, Hasher};

/// Hash maps keyed by chain names: a fast non-cryptographic hasher (chain
/// names are themselves hashes or fixed names, so nothing to attack).
type Map<K, V> = HashMap<K, V, foldhash::fast::FixedState>;

/// The hasher of chain contents: fixed seed (the same text always hashes
/// the same within the process), well mixed, about 10 GB/s.
type ContentHasher = <foldhash::quality::FixedState as BuildHasher>::Hasher;

/// The chains of ours one sync left in the kernel, per table: name and
/// hash of its rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AppliedChains {
    tables: BTreeMap<Table, Map<Box<str>, u64>>,
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
            let hashes = hash_chains(rules).hashes.into_iter().map(|(chain, hash)| (Box::from(chain), hash)).collect();
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
    let empty = Map::default();
    let diffs = ruleset.tables().map(|(table, rules)| diff_table(table, last.tables.get(&table).unwrap_or(&empty), rules));
    diffs.into()
}

fn diff_table<'a>(table: Table, last: &Map<Box<str>, u64>, rules: &'a TableRules) -> ChainDiff<'a> {
    let now = hash_chains(rules);
    let written = now.hashes.iter().copied().filter(|(chain, hash)| last.get(*chain) != Some(hash)).collect();
    let mut deleted: Vec<String> =
        last.keys().filter(|chain| !now.index.contains_key(&***chain)).map(|chain| chain.to_string()).collect();
    deleted.sort();
    ChainDiff { table, written, deleted }
}

/// The declared chains of one table with the hash of their rules.
struct ChainHashes<'a> {
    /// Each declared chain once, in declaration order, with its hash.
    hashes: Vec<(&'a str, u64)>,
    /// Where each chain is in `hashes`.
    index: Map<&'a str, usize>,
}

/// Hashes every declared chain's rules, in order (a chain without rules
/// hashes as empty). Rules of a chain that is not declared are ignored:
/// the restore would refuse them anyway. One map lookup per run of rules
/// of the same chain (a rendered chain's rules mostly come together).
fn hash_chains(rules: &TableRules) -> ChainHashes<'_> {
    let mut index = Map::with_capacity_and_hasher(rules.chains.len(), Default::default());
    let mut names = Vec::with_capacity(rules.chains.len());
    for chain in &rules.chains {
        index.entry(chain.as_str()).or_insert_with(|| {
            names.push(chain.as_str());
            names.len() - 1
        });
    }
    let mut hashers: Vec<ContentHasher> = names.iter().map(|_| foldhash::quality::FixedState::default().build_hasher()).collect();
    let mut run: Option<(&str, usize)> = None;
    for rule in &rules.rules {
        let chain = chain_of(rule);
        let slot = match run {
            Some((name, at)) if name == chain => Some(at),
            _ => index.get(chain).copied(),
        };
        if let Some(at) = slot {
            hashers[at].write(rule.as_bytes());
            hashers[at].write_u8(b'\n');
            run = Some((chain, at));
        }
    }
    let hashes = names.into_iter().zip(hashers).map(|(chain, hasher)| (chain, hasher.finish())).collect();
    ChainHashes { hashes, index }
}

/// The chain a rule line (`CHAIN args...`) is in.
pub(crate) fn chain_of(rule: &str) -> &str {
    rule.split_once(' ').map_or(rule, |(chain, _)| chain)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
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

#[cfg(test)]
mod scale {
    use super::*;

    /// Prints how long hashing and diffing 10k services × 10 endpoints
    /// takes (`cargo test --release -p iptables --lib -- --ignored --nocapture`).
    #[test]
    #[ignore = "prints figures, asserts nothing"]
    fn diff_figures_at_10k_services() {
        let mut nat = TableRules::default();
        for s in 0..10_000 {
            let svc = format!("KUBE-SVC-{s:016}");
            nat.chains.push(svc.clone());
            nat.rules.push(format!("KUBE-SERVICES -d 172.30.{}.{}/32 -p tcp -m comment --comment \"ns/svc{s}:http cluster IP\" -m tcp --dport 80 -j {svc}", s / 256, s % 256));
            for e in 0..10 {
                let sep = format!("KUBE-SEP-{s:012}{e:04}");
                nat.chains.push(sep.clone());
                nat.rules.push(format!("{svc} -m comment --comment \"ns/svc{s}:http -> 10.64.{}.{e}:8080\" -m statistic --mode random --probability 0.10000000000 -j {sep}", s % 256));
                nat.rules.push(format!("{sep} -s 10.64.{}.{e}/32 -j KUBE-MARK-MASQ", s % 256));
                nat.rules.push(format!("{sep} -p tcp -m tcp -j DNAT --to-destination 10.64.{}.{e}:8080", s % 256));
            }
        }
        let ruleset = Ruleset { nat, ..Ruleset::default() };
        let started = std::time::Instant::now();
        let last = AppliedChains::of(&ruleset);
        let of = started.elapsed();
        let started = std::time::Instant::now();
        let diffs = diff_chains(&last, &ruleset);
        println!("AppliedChains::of {of:?}, diff_chains {:?} ({} written)", started.elapsed(), diffs.iter().map(|d| d.written.len()).sum::<usize>());
    }
}
