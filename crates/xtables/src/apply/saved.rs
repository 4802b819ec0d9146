//! Reading `iptables-save` output back, line by line as the tool prints
//! it (a 10k-service nat table is 32 MiB of text: never held whole).
//!
//! Per table it keeps what the sync needs and no more: for each chain the
//! sync renders, only whether it exists and whether its saved rules hash
//! as the rendered ones (flags on the rendered [`ChainTable`], hashed as
//! [`super::chain_table::hash_rule`] hashes rendered rules); and the
//! chains and rules that are not rendered ([`Keep::Others`]): built-in
//! chains with all their rules, other chains by name, and the rules that
//! jump to a chain of ours that is not rendered (what decides which stale
//! chains can go). A table the sync may have to roll back keeps every
//! chain and rule ([`Keep::Everything`]).

use super::chain_table::{
    ChainTable, ContentHasher, SAVED, SAVED_RULES, SAVED_SAME, SAVED_SCATTERED, content_hasher, hash_rule,
};
use super::ownership::is_owned_chain;
use crate::Table;
use std::collections::{BTreeMap, HashMap};
use std::hash::Hasher;

/// One table as `iptables-save` printed it (or the part of it kept).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SavedTable {
    /// Built-in chains (those with a policy).
    pub(crate) builtin: Vec<String>,
    /// User-defined chains, in the order printed (with [`Keep::Others`],
    /// only those not rendered).
    pub(crate) chains: Vec<String>,
    /// Rules, in order (with [`Keep::Others`], only those of built-in
    /// chains and those jumping to a chain of ours not rendered).
    pub(crate) rules: Vec<SavedRule>,
    /// Every chain and rule was kept.
    pub(crate) complete: bool,
}

/// One `-A` line of a saved table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SavedRule {
    /// The chain the rule is in.
    pub(crate) chain: String,
    /// The line without the leading `-A `: `CHAIN ... -j TARGET`.
    pub(crate) spec: String,
    /// The `-j`/`-g` target, if any.
    pub(crate) target: Option<String>,
    /// 1-based position in its chain (exact for kept chains).
    pub(crate) position: usize,
}

impl SavedTable {
    /// Whether `chain` is one of the table's built-in chains.
    pub(crate) fn is_builtin(&self, chain: &str) -> bool {
        self.builtin.iter().any(|c| c == chain)
    }

    /// The rules of `chain`, in order.
    pub(crate) fn rules_of<'a>(&'a self, chain: &'a str) -> impl Iterator<Item = &'a SavedRule> + 'a {
        self.rules.iter().filter(move |r| r.chain == chain)
    }
}

/// How much of a table [`SaveParser`] keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Keep {
    /// Every chain and rule.
    Everything,
    /// What is not rendered (see the module doc); rendered chains are
    /// only compared.
    Others,
    /// Nothing: the table is skipped.
    Nothing,
}

/// Splits `iptables-save` output (one or more tables) by table, keeping
/// everything; tables kube-proxy does not write (raw, security) are skipped.
pub(crate) fn parse_saved(text: &str) -> BTreeMap<Table, SavedTable> {
    let mut parser = SaveParser::new(|_| Keep::Everything, None);
    text.lines().for_each(|line| parser.line(line));
    parser.finish()
}

/// Reads `iptables-save` output one line at a time.
pub(crate) struct SaveParser<'a> {
    keep: fn(Table) -> Keep,
    rendered: Option<&'a mut BTreeMap<Table, ChainTable>>,
    tables: BTreeMap<Table, SavedTable>,
    current: Option<Parsing>,
}

impl<'a> SaveParser<'a> {
    /// A parser keeping `keep(table)` of each table and marking on
    /// `rendered` (when given) which rendered chains the kernel holds and
    /// whether their rules are the same.
    pub(crate) fn new(keep: fn(Table) -> Keep, rendered: Option<&'a mut BTreeMap<Table, ChainTable>>) -> Self {
        Self { keep, rendered, tables: BTreeMap::new(), current: None }
    }

    /// Reads one line (without its newline).
    pub(crate) fn line(&mut self, line: &str) {
        if let Some(name) = line.strip_prefix('*') {
            self.end_table();
            let table = table_named(name.trim());
            self.current = table.filter(|t| (self.keep)(*t) != Keep::Nothing).map(|t| Parsing::new(t, (self.keep)(t)));
        } else if line.starts_with("COMMIT") {
            self.end_table();
        } else if let Some(parsing) = self.current.as_mut() {
            let rendered = self.rendered.as_deref_mut().and_then(|r| r.get_mut(&parsing.table));
            parsing.line(line, rendered);
        }
    }

    /// The tables read.
    pub(crate) fn finish(mut self) -> BTreeMap<Table, SavedTable> {
        self.end_table();
        self.tables
    }

    fn end_table(&mut self) {
        if let Some(mut parsing) = self.current.take() {
            let rendered = self.rendered.as_deref_mut().and_then(|r| r.get_mut(&parsing.table));
            if let Some(chains) = rendered {
                parsing.end_run(chains);
            }
            self.tables.insert(parsing.table, parsing.saved);
        }
    }
}

/// One table being read, with each kept chain's rule count so far (rules
/// of a chain are numbered in linear time) and the saved rules of the
/// rendered chain being hashed.
struct Parsing {
    table: Table,
    keep: Keep,
    saved: SavedTable,
    counts: HashMap<String, usize>,
    run: Option<(u32, ContentHasher)>,
}

impl Parsing {
    fn new(table: Table, keep: Keep) -> Self {
        let saved = SavedTable { complete: keep == Keep::Everything, ..SavedTable::default() };
        Self { table, keep, saved, counts: HashMap::new(), run: None }
    }

    fn line(&mut self, line: &str, mut rendered: Option<&mut ChainTable>) {
        if let Some(decl) = line.strip_prefix(':') {
            let mut words = decl.split_whitespace();
            let (Some(chain), Some(policy)) = (words.next(), words.next()) else { return };
            if policy != "-" {
                self.saved.builtin.push(chain.to_string());
                return;
            }
            let at = rendered.as_deref().and_then(|r| r.find(chain));
            if let (Some(i), Some(chains)) = (at, rendered.as_deref_mut()) {
                chains.set(i, SAVED);
            }
            if at.is_none() || self.keep == Keep::Everything {
                self.saved.chains.push(chain.to_string());
            }
        } else if let Some(spec) = line.strip_prefix("-A ") {
            self.rule(spec, rendered);
        }
    }

    fn rule(&mut self, spec: &str, rendered: Option<&mut ChainTable>) {
        let chain = spec.split_whitespace().next().unwrap_or_default();
        let at = rendered.as_deref().and_then(|r| r.find(chain));
        if let (Some(i), Some(chains)) = (at, rendered) {
            self.hash_rendered(chains, i, spec);
            if self.keep != Keep::Everything {
                return;
            }
        }
        let target = jump_target(spec);
        if self.keep == Keep::Everything || self.saved.is_builtin(chain) || target.as_deref().is_some_and(is_owned_chain) {
            let count = self.counts.entry(chain.to_string()).or_default();
            *count += 1;
            let rule = SavedRule { target, chain: chain.to_string(), spec: spec.to_string(), position: *count };
            self.saved.rules.push(rule);
        }
    }

    /// Adds a rule of rendered chain `i` to the run being hashed.
    fn hash_rendered(&mut self, chains: &mut ChainTable, i: u32, spec: &str) {
        if self.run.as_ref().is_none_or(|(at, _)| *at != i) {
            self.end_run(chains);
            if chains.has(i, SAVED_RULES) {
                chains.set(i, SAVED_SCATTERED);
            }
            self.run = Some((i, content_hasher()));
        }
        if let Some((_, hasher)) = self.run.as_mut() {
            hash_rule(hasher, spec);
        }
    }

    /// Compares the run just read with the rendered chain.
    fn end_run(&mut self, chains: &mut ChainTable) {
        if let Some((i, hasher)) = self.run.take() {
            chains.set(i, SAVED_RULES);
            if hasher.finish() == chains.hash(i) {
                chains.set(i, SAVED_SAME);
            }
        }
    }
}

fn table_named(name: &str) -> Option<Table> {
    [Table::Filter, Table::Nat, Table::Mangle].into_iter().find(|t| t.as_str() == name)
}

/// The chain or target after `-j`/`--jump`/`-g`/`--goto`.
pub(crate) fn jump_target(spec: &str) -> Option<String> {
    let words = split_words(spec);
    let at = words.iter().position(|w| matches!(w.as_str(), "-j" | "--jump" | "-g" | "--goto"))?;
    words.get(at + 1).cloned()
}

/// Splits a saved rule into words as iptables-restore does: whitespace
/// separates, double quotes group (with `\"` inside), so a comment that
/// mentions `-j` is one word.
pub(crate) fn split_words(spec: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let (mut quoted, mut in_word, mut chars) = (false, false, spec.chars());
    while let Some(c) = chars.next() {
        match c {
            '\\' if quoted => word.extend(chars.next()),
            '"' => (quoted, in_word) = (!quoted, true),
            c if c.is_whitespace() && !quoted => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                }
                in_word = false;
            }
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAVED: &str = "# Generated by iptables-save v1.8.9\n*mangle\n:PREROUTING ACCEPT [0:0]\n:KUBE-PROXY-CANARY - [0:0]\nCOMMIT\n*raw\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -j CT --notrack\nCOMMIT\n*nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n:KUBE-SVC-X - [0:0]\n-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n-A KUBE-SERVICES -m comment --comment \"a -j FAKE \\\"q\\\"\" -j KUBE-SVC-X\n-A KUBE-SERVICES -j RETURN\nCOMMIT\n";

    #[test]
    fn tables_chains_and_targets_are_read() {
        let tables = parse_saved(SAVED);
        assert_eq!(tables.keys().copied().collect::<Vec<_>>(), vec![Table::Nat, Table::Mangle]);
        let nat = &tables[&Table::Nat];
        assert!(nat.complete);
        assert_eq!(nat.builtin, vec!["PREROUTING"]);
        assert_eq!(nat.chains, vec!["KUBE-SERVICES", "KUBE-SVC-X"]);
        let targets: Vec<_> = nat.rules.iter().map(|r| (r.chain.as_str(), r.target.as_deref(), r.position)).collect();
        assert_eq!(
            targets,
            vec![
                ("PREROUTING", Some("KUBE-SERVICES"), 1),
                ("KUBE-SERVICES", Some("KUBE-SVC-X"), 1),
                ("KUBE-SERVICES", Some("RETURN"), 2)
            ]
        );
        assert_eq!(tables[&Table::Mangle].chains, vec!["KUBE-PROXY-CANARY"]);
    }

    /// Reads `text` as a sync does, against the chains `ruleset` renders;
    /// returns the rendered chains that the kernel holds unchanged, and
    /// what was kept of nat.
    fn unchanged_after(ruleset: &crate::Ruleset, text: &str) -> (Vec<String>, SavedTable) {
        let mut hashed = crate::apply::hashed::hash_rendering(ruleset);
        let mut parser = SaveParser::new(|t| if t == Table::Nat { Keep::Others } else { Keep::Everything }, Some(&mut hashed.tables));
        text.lines().for_each(|line| parser.line(line));
        let nat = parser.finish().remove(&Table::Nat).unwrap_or_default();
        let chains = &hashed.tables[&Table::Nat];
        (chains.ids().filter(|i| chains.saved_unchanged(*i)).map(|i| chains.name(i).to_string()).collect(), nat)
    }

    /// `ruleset` as `iptables-save` prints it: rules grouped by chain.
    fn as_saved(ruleset: &crate::Ruleset) -> String {
        let mut out = String::new();
        for (table, rules) in ruleset.tables() {
            out.push_str(&format!("*{table}\n"));
            if table == Table::Nat {
                out.push_str(":PREROUTING ACCEPT [0:0]\n");
            }
            rules.chains.iter().for_each(|c| out.push_str(&format!(":{c} - [0:0]\n")));
            for chain in &rules.chains {
                let own = rules.rules.iter().filter(|r| r.chain() == chain);
                own.for_each(|r| out.push_str(&format!("-A {r}\n")));
            }
            out.push_str("COMMIT\n");
        }
        out
    }

    #[test]
    fn saved_chains_hash_as_rendered_ones() {
        let ruleset = crate::rendering::tests::sample().collected();
        let text = as_saved(&ruleset);
        let (unchanged, nat) = unchanged_after(&ruleset, &text);
        assert_eq!(unchanged, ruleset.nat.chains, "the kernel holds every chain as rendered");
        assert!(!nat.complete && nat.chains.is_empty() && nat.rules.is_empty(), "{nat:?}");
        // A rule changed, a chain missing, a rule of a foreign chain.
        let svc = ruleset.nat.chains.iter().find(|c| c.starts_with("KUBE-SVC-")).cloned().unwrap_or_default();
        let sep = ruleset.nat.chains.iter().find(|c| c.starts_with("KUBE-SEP-")).cloned().unwrap_or_default();
        let mut text = text
            .replacen(&format!("-A {svc} "), &format!("-A {svc} -m comment --comment changed "), 1)
            .replace(&format!(":{sep} - [0:0]\n"), "")
            .replacen("*nat\n", "*nat\n:OTHER - [0:0]\n", 1);
        // nat is printed last.
        text.insert_str(text.rfind("COMMIT").unwrap_or_default(), "-A OTHER -j KUBE-SVC-GONE\n-A OTHER -j RETURN\n");
        let (unchanged, nat) = unchanged_after(&ruleset, &text);
        let expected: Vec<&String> = ruleset.nat.chains.iter().filter(|c| **c != svc && **c != sep).collect();
        assert_eq!(unchanged.iter().collect::<Vec<_>>(), expected);
        assert_eq!(nat.builtin, vec!["PREROUTING"]);
        assert_eq!(nat.chains, vec!["OTHER"]);
        let kept: Vec<&str> = nat.rules.iter().map(|r| r.spec.as_str()).collect();
        assert_eq!(kept, vec!["OTHER -j KUBE-SVC-GONE"], "only rules jumping to chains of ours not rendered");
    }

    #[test]
    fn a_chain_whose_rules_come_apart_is_never_unchanged() {
        let ruleset = crate::Ruleset {
            nat: crate::TableRules { chains: vec!["KUBE-SERVICES".into()], rules: vec![crate::rules::tests::rule("KUBE-SERVICES -j RETURN")] },
            ..crate::Ruleset::default()
        };
        let text = "*nat\n:KUBE-SERVICES - [0:0]\n:X - [0:0]\n-A KUBE-SERVICES -j RETURN\n-A X -j RETURN\nCOMMIT\n";
        assert_eq!(unchanged_after(&ruleset, text).0, vec!["KUBE-SERVICES"]);
        let apart = "*nat\n:KUBE-SERVICES - [0:0]\n:X - [0:0]\n-A KUBE-SERVICES -j RETURN\n-A X -j RETURN\n-A KUBE-SERVICES -j RETURN\nCOMMIT\n";
        assert!(unchanged_after(&ruleset, apart).0.is_empty());
    }

    #[test]
    fn quoted_words_stay_whole() {
        let words = split_words(r#"X -m comment --comment "a \"b\" c" -j Y"#);
        assert_eq!(words, vec!["X", "-m", "comment", "--comment", r#"a "b" c"#, "-j", "Y"]);
        assert_eq!(split_words(r#"--comment """#), vec!["--comment", ""]);
    }
}
