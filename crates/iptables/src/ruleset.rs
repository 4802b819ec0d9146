//! The rendered rules of one IP family: what the renderer returns and the
//! applier consumes.

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
    /// Rule lines without the leading `-A `, e.g.
    /// `KUBE-SERVICES -d 172.30.0.41/32 -p tcp ... -j KUBE-SVC-XXX`.
    pub rules: Vec<String>,
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
        for arg in &self.args {
            line.push(' ');
            line.push_str(&crate::render::rule::quote_arg(arg));
        }
        line
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
        let _ = writeln!(out, "-A {rule}");
    }
    for chain in delete {
        let _ = writeln!(out, "-X {chain}");
    }
    out.push_str("COMMIT\n");
}
