//! Splitting one table's restore into several `COMMIT`s, for the nft
//! backend: `iptables-nft-restore` spends time growing with (commands ×
//! chains) of one transaction, so a 10k-service nat table in one `COMMIT`
//! takes minutes, and in blocks of ~100 services seconds. Pure.
//!
//! The order keeps every jump target existing when a rule names it and
//! switches each service at once:
//! 1. the chains of ours that jump to no service chain (`KUBE-MARK-MASQ`,
//!    `KUBE-POSTROUTING`, ...), which the others jump to;
//! 2. the service chains, grouped per service (a `KUBE-SVC-`/`SVL-`/`EXT-`/
//!    `FW-` chain with the `KUBE-SEP-` chains it jumps to: connected by
//!    jumps), `services_per_commit` services per block;
//! 3. last, the chains that jump to service chains (`KUBE-SERVICES`,
//!    `KUBE-NODEPORTS`, ...); the restore adds the built-in jumps and the
//!    removal of stale chains to this block.
//!
//! A table of at most `services_per_commit` services, or one whose service
//! chains jump to a last-block chain, stays one block.

use crate::{Rule, TableRules};
use crate::chains::is_service_chain;
use std::collections::HashMap;

/// One `COMMIT`'s share of a table: chains to declare and their rules, in
/// the ruleset's order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Block<'a> {
    pub(crate) chains: Vec<&'a str>,
    pub(crate) rules: Vec<&'a Rule>,
}

/// The blocks of `rules` (see the module doc); never empty, and the last
/// one is the block of the top chains.
pub(crate) fn split_blocks(rules: &TableRules, services_per_commit: usize) -> Vec<Block<'_>> {
    let graph = Graph::of(rules);
    let groups = graph.service_groups();
    let late = graph.late_chains();
    let count = groups.iter().copied().filter(|g| *g != usize::MAX).max().map_or(0, |g| g + 1);
    if count <= services_per_commit.max(1) || graph.service_jumps_to(&late) {
        return vec![whole(rules)];
    }
    let per = services_per_commit.max(1);
    let last = 1 + count.div_ceil(per);
    let block_of = |c: usize| match (groups[c], late[c]) {
        (usize::MAX, true) => last,
        (usize::MAX, false) => 0,
        (group, _) => 1 + group / per,
    };
    let mut blocks = vec![Block::default(); last + 1];
    for (c, chain) in graph.chains.iter().enumerate() {
        blocks[block_of(c)].chains.push(chain);
    }
    for (rule, (chain, _)) in rules.rules.iter().zip(&graph.edges) {
        blocks[chain.map_or(last, block_of)].rules.push(rule);
    }
    let (top, rest) = blocks.split_last().map_or((Block::default(), Vec::new()), |(t, r)| (t.clone(), r.to_vec()));
    let mut out: Vec<Block> = rest.into_iter().filter(|b| !b.chains.is_empty() || !b.rules.is_empty()).collect();
    out.push(top);
    out
}

/// All of `rules` in one block.
pub(crate) fn whole(rules: &TableRules) -> Block<'_> {
    Block { chains: rules.chains.iter().map(String::as_str).collect(), rules: rules.rules.iter().collect() }
}

/// The declared chains and, per rule, its chain's and its target's index
/// among them (`None` for anything not declared).
struct Graph<'a> {
    chains: Vec<&'a str>,
    edges: Vec<(Option<usize>, Target)>,
}

/// What a rule jumps to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    None,
    Declared(usize),
    /// A service chain not declared (a stale one, deleted last).
    OtherService,
}

impl<'a> Graph<'a> {
    fn of(rules: &'a TableRules) -> Self {
        let chains: Vec<&str> = rules.chains.iter().map(String::as_str).collect();
        let index: HashMap<&str, usize> = chains.iter().enumerate().map(|(i, c)| (*c, i)).collect();
        let edges = rules.rules.iter().map(|rule| {
            let target = match rule.target().chain() {
                Some(t) => index.get(t).map_or(
                    if is_service_chain(t) { Target::OtherService } else { Target::None },
                    |i| Target::Declared(*i),
                ),
                None => Target::None,
            };
            (index.get(rule.chain()).copied(), target)
        });
        Self { edges: edges.collect(), chains }
    }

    fn is_service(&self, c: usize) -> bool {
        is_service_chain(self.chains[c])
    }

    /// Per chain, its service group (numbered in declaration order), or
    /// `usize::MAX` for a chain that is not a service chain.
    fn service_groups(&self) -> Vec<usize> {
        let mut parent: Vec<usize> = (0..self.chains.len()).collect();
        for (chain, target) in &self.edges {
            if let (Some(a), Target::Declared(b)) = (*chain, *target)
                && self.is_service(a)
                && self.is_service(b)
            {
                let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
                parent[ra] = rb;
            }
        }
        let mut numbers: HashMap<usize, usize> = HashMap::new();
        let mut groups = vec![usize::MAX; self.chains.len()];
        for (c, group) in groups.iter_mut().enumerate().filter(|(c, _)| is_service_chain(self.chains[*c])) {
            let next = numbers.len();
            *group = *numbers.entry(root(&mut parent, c)).or_insert(next);
        }
        groups
    }

    /// Per chain, whether it is a non-service chain that jumps (maybe
    /// through others) to a service chain.
    fn late_chains(&self) -> Vec<bool> {
        let mut late = vec![false; self.chains.len()];
        loop {
            let mut changed = false;
            for (chain, target) in &self.edges {
                let Some(c) = *chain else { continue };
                let into = match *target {
                    Target::Declared(t) => self.is_service(t) || late[t],
                    Target::OtherService => true,
                    Target::None => false,
                };
                if into && !late[c] && !self.is_service(c) {
                    late[c] = true;
                    changed = true;
                }
            }
            if !changed {
                return late;
            }
        }
    }

    /// Whether a service chain jumps to a chain of the last block.
    fn service_jumps_to(&self, late: &[bool]) -> bool {
        self.edges.iter().any(|(chain, target)| {
            matches!((*chain, *target), (Some(c), Target::Declared(t)) if self.is_service(c) && late[t])
        })
    }
}

/// Union-find root, with path halving.
fn root(parent: &mut [usize], mut i: usize) -> usize {
    while parent[i] != i {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::tests::rule;

    fn rules() -> TableRules {
        let rules = [
            "KUBE-SERVICES -d 10.0.0.1/32 -j KUBE-SVC-A",
            "KUBE-SERVICES -d 10.0.0.2/32 -j KUBE-SVC-B",
            "KUBE-SERVICES -j KUBE-NODEPORTS",
            "KUBE-NODEPORTS -p tcp -j KUBE-EXT-B",
            "KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000",
            "KUBE-SVC-A -j KUBE-SEP-A1",
            "KUBE-SEP-A1 -j KUBE-MARK-MASQ",
            "KUBE-SEP-A1 -j DNAT --to-destination 10.1.0.1:80",
            "KUBE-EXT-B -j KUBE-SVC-B",
            "KUBE-SVC-B -j KUBE-SEP-B1",
            "KUBE-SEP-B1 -j DNAT --to-destination 10.1.0.2:80",
        ];
        let chains = ["KUBE-SERVICES", "KUBE-NODEPORTS", "KUBE-MARK-MASQ", "KUBE-SVC-A", "KUBE-SEP-A1", "KUBE-EXT-B", "KUBE-SVC-B", "KUBE-SEP-B1"];
        TableRules { chains: chains.map(String::from).into(), rules: rules.map(rule).into() }
    }

    #[test]
    fn static_chains_first_one_service_per_block_top_chains_last() {
        let rules = rules();
        let blocks = split_blocks(&rules, 1);
        let chains: Vec<_> = blocks.iter().map(|b| b.chains.clone()).collect();
        assert_eq!(
            chains,
            vec![
                vec!["KUBE-MARK-MASQ"],
                vec!["KUBE-SVC-A", "KUBE-SEP-A1"],
                vec!["KUBE-EXT-B", "KUBE-SVC-B", "KUBE-SEP-B1"],
                vec!["KUBE-SERVICES", "KUBE-NODEPORTS"]
            ]
        );
        assert_eq!(blocks[3].rules, vec![&rules.rules[0], &rules.rules[1], &rules.rules[2], &rules.rules[3]]);
        assert_eq!(blocks.iter().map(|b| b.rules.len()).sum::<usize>(), rules.rules.len());
    }

    #[test]
    fn few_services_stay_one_block() {
        let rules = rules();
        assert_eq!(split_blocks(&rules, 2), vec![whole(&rules)]);
    }
}
