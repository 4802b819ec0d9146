//! The rules of one IP family, typed: what a renderer returns and the
//! applier consumes. Pure: no kernel, no I/O. A rule knows its chain, its
//! matches and its target ([`Rule`], [`Target`]); its line, spelled when it
//! is built, goes out whole into `iptables-restore` input
//! ([`Ruleset::to_restore`], [`write_table`], the applier's restore input).

mod builder;
mod consistency;
mod family;
mod rule;

pub use builder::{RuleBuilder, host, net, quote_arg};
pub use consistency::consistency_problems;
pub use family::FamilyText;
pub use rule::{RejectWith, Rule, Target};

use std::fmt;

/// An iptables table kube-proxy writes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Table {
    /// `filter`
    Filter,
    /// `nat`
    Nat,
    /// `mangle` (only the canary chain)
    Mangle,
}

impl Table {
    /// The table's name as iptables spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Table::Filter => "filter",
            Table::Nat => "nat",
            Table::Mangle => "mangle",
        }
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Our chains and rules in one table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableRules {
    /// Every chain of ours that must exist after the sync, in the order
    /// they are declared (`:NAME - [0:0]`). Declaring a chain in
    /// `--noflush` mode flushes it, so each declared chain is rewritten
    /// whole by its `rules`.
    pub chains: Vec<String>,
    /// The rules, in order; each is written as a line without the leading
    /// `-A `, e.g. `KUBE-SERVICES -d 172.30.0.41/32 -p tcp ... -j KUBE-SVC-XXX`.
    pub rules: Vec<Rule>,
}

/// A jump from a built-in chain into one of ours (`-A INPUT -j KUBE-...`),
/// ensured once with `iptables -C` / `-I` (or `-A`) rather than rewritten
/// by the restore, so a sync never duplicates it and never touches rules
/// that are not ours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltinJump {
    /// Table of the built-in chain.
    pub table: Table,
    /// The built-in chain (`PREROUTING`, `INPUT`, ...).
    pub chain: &'static str,
    /// Rule arguments after the chain name, e.g.
    /// `-m comment --comment "kubernetes service portals" -j KUBE-SERVICES`,
    /// split into argv words (no shell quoting).
    pub args: Vec<String>,
    /// Insert at the top (`-I`) rather than append (`-A`).
    pub prepend: bool,
}

impl BuiltinJump {
    /// The jump as `iptables-save` prints it, without the leading `-A `:
    /// `INPUT -m conntrack --ctstate NEW -m comment --comment "..." -j KUBE-...`.
    pub fn rule_line(&self) -> String {
        let mut line = self.chain.to_string();
        self.push_args(&mut line);
        line
    }

    /// Appends the rule arguments, each with a leading space and quoted as
    /// `iptables-save` quotes them.
    pub fn push_args(&self, out: &mut String) {
        for arg in &self.args {
            out.push(' ');
            out.push_str(&quote_arg(arg));
        }
    }
}

/// Everything one sync writes for one IP family.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ruleset {
    /// Rules of the filter table.
    pub filter: TableRules,
    /// Rules of the nat table.
    pub nat: TableRules,
    /// Rules of the mangle table (the canary chain only).
    pub mangle: TableRules,
    /// Jumps from built-in chains into ours.
    pub builtin_jumps: Vec<BuiltinJump>,
}

impl Ruleset {
    /// The tables in the order they are restored, with their rules.
    pub fn tables(&self) -> [(Table, &TableRules); 3] {
        [(Table::Filter, &self.filter), (Table::Mangle, &self.mangle), (Table::Nat, &self.nat)]
    }

    /// The rules of `table`, taken out of the ruleset.
    pub fn into_table(self, table: Table) -> TableRules {
        match table {
            Table::Filter => self.filter,
            Table::Nat => self.nat,
            Table::Mangle => self.mangle,
        }
    }

    /// Frees the spare capacity of every table (a collected ruleset of
    /// 320k rules otherwise keeps up to as many again in its vectors).
    pub fn shrink_to_fit(&mut self) {
        for rules in [&mut self.filter, &mut self.nat, &mut self.mangle] {
            rules.chains.shrink_to_fit();
            rules.rules.shrink_to_fit();
        }
    }

    /// The rules of `table`.
    pub fn table(&self, table: Table) -> &TableRules {
        match table {
            Table::Filter => &self.filter,
            Table::Nat => &self.nat,
            Table::Mangle => &self.mangle,
        }
    }

    /// `iptables-restore` input for our chains: one `*table` block per
    /// table with its chain declarations, `-A` rules and `COMMIT`. It
    /// neither flushes nor deletes anything that is not declared here.
    pub fn to_restore(&self) -> String {
        let mut out = String::new();
        for (table, rules) in self.tables() {
            write_table(&mut out, table, rules, &[]);
        }
        out
    }

    /// Number of rules per table, for the `kubeproxy_sync_proxy_rules_iptables_total` metric.
    pub fn rule_count(&self, table: Table) -> usize {
        match table {
            Table::Filter => self.filter.rules.len(),
            Table::Nat => self.nat.rules.len(),
            Table::Mangle => self.mangle.rules.len(),
        }
    }
}

/// Appends one `*table ... COMMIT` block; `delete` names stale chains of
/// ours to flush and remove (`-X`) after the new rules are in.
pub fn write_table(out: &mut String, table: Table, rules: &TableRules, delete: &[String]) {
    use std::fmt::Write;
    let _ = writeln!(out, "*{table}");
    for chain in rules.chains.iter().chain(delete) {
        let _ = writeln!(out, ":{chain} - [0:0]");
    }
    for rule in &rules.rules {
        out.push_str("-A ");
        rule.write_line(out);
        out.push('\n');
    }
    for chain in delete {
        let _ = writeln!(out, "-X {chain}");
    }
    out.push_str("COMMIT\n");
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::net::SocketAddr;

    /// A rule written by hand as `iptables-save` prints it (tests only:
    /// the applier never reads rules back from text). The target is the
    /// word after the last ` -j ` (or ` -g `) and its options.
    pub(crate) fn rule(line: &str) -> Rule {
        let (chain, rest) = line.split_once(' ').unwrap_or((line, ""));
        let rest = format!(" {rest}");
        let cut = rest.rfind(" -j ").or_else(|| rest.rfind(" -g ")).filter(|_| !rest.trim().is_empty());
        let (matches, target) = cut.map_or((rest.as_str(), ""), |at| rest.split_at(at));
        let words: Vec<&str> = target.split_whitespace().collect();
        let target = match words.as_slice() {
            [] => Target::None,
            ["-g", chain] => Target::Goto(chain),
            ["-j", "ACCEPT"] => Target::Accept,
            ["-j", "DROP"] => Target::Drop,
            ["-j", "RETURN"] => Target::Return,
            ["-j", "MASQUERADE"] => Target::Masquerade { random_fully: false },
            ["-j", "MASQUERADE", "--random-fully"] => Target::Masquerade { random_fully: true },
            ["-j", "REJECT", "--reject-with", "icmp-port-unreachable"] => Target::Reject(RejectWith::IcmpPortUnreachable),
            ["-j", "DNAT", "--to-destination", to] => {
                Target::Dnat(to.parse().unwrap_or_else(|_| SocketAddr::from(([0; 4], 0))))
            }
            ["-j", "MARK", "--set-xmark", mark] => {
                let (value, mask) = mark.split_once('/').unwrap_or((mark, "0xffffffff"));
                let hex = |s: &str| u32::from_str_radix(s.trim_start_matches("0x"), 16).unwrap_or_default();
                Target::SetXmark { value: hex(value), mask: hex(mask) }
            }
            ["-j", chain] => Target::Jump(chain),
            _ => panic!("test rule with an unknown target: {line}"),
        };
        let matches = if matches.trim().is_empty() { "" } else { matches };
        Rule::from_parts(format!("{chain}{matches}"), chain.len(), target)
    }

    #[test]
    fn hand_written_rules_print_back_as_written() {
        for line in [
            "KUBE-SERVICES -d 10.0.0.1/32 -j KUBE-SVC-A",
            "KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000",
            "KUBE-SEP-A1 -p tcp -m tcp -j DNAT --to-destination 10.1.0.1:80",
            "KUBE-FW-X -m comment --comment \"other traffic\"",
            "X -j RETURN",
        ] {
            assert_eq!(rule(line).to_string(), line);
        }
        assert_eq!(rule("X -m comment --comment \"a -j B\" -j C").target(), Target::Jump("C"));
    }

    #[test]
    fn restore_text_declares_then_appends() {
        let nat = TableRules { chains: vec!["A".into()], rules: vec![rule("A -j RETURN")] };
        let ruleset = Ruleset { nat, ..Ruleset::default() };
        assert_eq!(ruleset.to_restore(), "*filter\nCOMMIT\n*mangle\nCOMMIT\n*nat\n:A - [0:0]\n-A A -j RETURN\nCOMMIT\n");
    }
}
