//! The parsed rule set: tables of chains of rules, as `iptables-save`
//! prints them (and as `iptables-restore` would leave them).

use super::matches::Match;
use super::target::Target;
pub use super::verdict::Policy;
use std::collections::BTreeMap;

/// Tables the tracer knows, with their built-in chains.
pub(crate) const BUILTIN_CHAINS: [(&str, &[&str]); 5] = [
    ("raw", &["PREROUTING", "OUTPUT"]),
    ("mangle", &["PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"]),
    ("nat", &["PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"]),
    ("filter", &["INPUT", "FORWARD", "OUTPUT"]),
    ("security", &["INPUT", "FORWARD", "OUTPUT"]),
];

/// The built-in chains of `table`, or `None` for a table the tracer does
/// not know.
pub(crate) fn builtin_chains(table: &str) -> Option<&'static [&'static str]> {
    BUILTIN_CHAINS.iter().find(|(name, _)| *name == table).map(|(_, chains)| *chains)
}

/// One rule: what it matches and what it does.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// 1-based line in the parsed text.
    pub line: usize,
    /// The rule after `-A CHAIN`, as written (for messages and for
    /// comparing with counters from a real kernel).
    pub spec: String,
    /// Its matches, all of which must hold.
    pub matches: Vec<Match>,
    /// Its target (`Target::None` for a rule without `-j`).
    pub target: Target,
}

/// A chain: a built-in one has a policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Chain {
    /// Chain name.
    pub name: String,
    /// `Some` for a built-in chain.
    pub policy: Option<Policy>,
    /// Rules in order.
    pub rules: Vec<Rule>,
}

/// One table's chains.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// Table name (`nat`, `filter`, ...).
    pub name: String,
    /// Chains by name.
    pub chains: BTreeMap<String, Chain>,
}

impl Table {
    /// A table with its built-in chains, empty, policy ACCEPT.
    pub(crate) fn with_builtins(name: &str, builtins: &[&str]) -> Self {
        let chains = builtins
            .iter()
            .map(|chain| {
                let chain = Chain { name: chain.to_string(), policy: Some(Policy::Accept), rules: Vec::new() };
                (chain.name.clone(), chain)
            })
            .collect();
        Self { name: name.to_string(), chains }
    }

    /// The chain called `name`.
    pub fn chain(&self, name: &str) -> Option<&Chain> {
        self.chains.get(name)
    }
}

/// Every table read from `iptables-save` / `iptables-restore` text.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rules {
    /// Tables by name; a table absent from the text is absent here and
    /// traversed as if empty.
    pub tables: BTreeMap<String, Table>,
}

impl Rules {
    /// The table called `name`.
    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables.get(name)
    }

    /// The chain `chain` of table `table`.
    pub fn chain(&self, table: &str, chain: &str) -> Option<&Chain> {
        self.table(table).and_then(|t| t.chain(chain))
    }

    /// Number of rules in `table` (all chains).
    pub fn rule_count(&self, table: &str) -> usize {
        self.table(table).map_or(0, |t| t.chains.values().map(|c| c.rules.len()).sum())
    }
}
