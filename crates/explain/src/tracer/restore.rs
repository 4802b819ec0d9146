//! Reads `iptables-save` / `iptables-restore` text (`*table`,
//! `:CHAIN POLICY [p:b]`, `-A`/`-I`/`-N`/`-X`/`-F`/`-P`, `COMMIT`,
//! comments) into [`Rules`]. Several blocks of the same table merge the way
//! `iptables-restore --noflush` applies them: declaring a user chain
//! flushes it, built-in chains keep their rules. Built-in chains exist
//! without being declared, with policy ACCEPT.

use super::error::TraceError;
use super::rule::parse_spec;
use super::rules::{Chain, Policy, Rule, Rules, Table, builtin_chains};

/// Parses restore-format text; any line, match or target the tracer does
/// not understand is an error naming it.
pub fn parse_rules(text: &str) -> Result<Rules, TraceError> {
    let mut reader = Reader::default();
    for (index, raw) in text.lines().enumerate() {
        reader.line(index + 1, raw)?;
    }
    validate(&reader.rules)?;
    Ok(reader.rules)
}

#[derive(Default)]
struct Reader {
    rules: Rules,
    table: Option<String>,
}

impl Reader {
    fn line(&mut self, line: usize, raw: &str) -> Result<(), TraceError> {
        let syntax = |reason: &str| TraceError::Syntax { line, text: raw.to_string(), reason: reason.to_string() };
        let text = strip_counters(raw.trim());
        if text.is_empty() || text.starts_with('#') {
            return Ok(());
        }
        if let Some(name) = text.strip_prefix('*') {
            let builtins = builtin_chains(name).ok_or_else(|| syntax("unknown table"))?;
            self.rules.tables.entry(name.to_string()).or_insert_with(|| Table::with_builtins(name, builtins));
            self.table = Some(name.to_string());
            return Ok(());
        }
        if text == "COMMIT" {
            return self.table.take().map(|_| ()).ok_or_else(|| syntax("COMMIT outside a table"));
        }
        let table_name = self.table.clone().ok_or_else(|| syntax("outside a `*table` block"))?;
        let Some(table) = self.rules.tables.get_mut(&table_name) else {
            return Err(syntax("outside a `*table` block"));
        };
        if let Some(declaration) = text.strip_prefix(':') {
            return declare(table, declaration).map_err(|reason| syntax(&reason));
        }
        command(table, line, raw, text).map_err(|reason| match reason {
            Failure::Syntax(reason) => syntax(&reason),
            Failure::Error(error) => error,
        })
    }
}

/// `[packets:bytes] -A ...` (from `iptables-save -c`) -> `-A ...`.
fn strip_counters(text: &str) -> &str {
    match text.strip_prefix('[').and_then(|rest| rest.split_once(']')) {
        Some((counters, rest)) if counters.contains(':') => rest.trim_start(),
        _ => text,
    }
}

/// `:NAME POLICY [p:b]`
fn declare(table: &mut Table, declaration: &str) -> Result<(), String> {
    let mut words = declaration.split_whitespace();
    let name = words.next().ok_or("chain declaration without a name")?;
    let policy = words.next().ok_or("chain declaration without a policy (`-` for user chains)")?;
    let builtin = table.chains.get(name).is_some_and(|c| c.policy.is_some());
    match (policy, builtin) {
        ("-", true) => Err(format!("built-in chain {name} needs a policy")),
        ("-", false) => {
            table.chains.insert(name.to_string(), Chain { name: name.to_string(), policy: None, rules: Vec::new() });
            Ok(())
        }
        (policy, true) => set_policy(table, name, policy),
        (_, false) => Err(format!("user chain {name} cannot have a policy")),
    }
}

fn set_policy(table: &mut Table, chain: &str, policy: &str) -> Result<(), String> {
    let policy = match policy {
        "ACCEPT" => Policy::Accept,
        "DROP" => Policy::Drop,
        other => return Err(format!("unknown policy {other}")),
    };
    match table.chains.get_mut(chain) {
        Some(Chain { policy: slot @ Some(_), .. }) => {
            *slot = Some(policy);
            Ok(())
        }
        _ => Err(format!("{chain} is not a built-in chain of {}", table.name)),
    }
}

enum Failure {
    Syntax(String),
    Error(TraceError),
}

impl From<String> for Failure {
    fn from(reason: String) -> Self {
        Failure::Syntax(reason)
    }
}

/// `-A CHAIN spec`, `-I CHAIN [n] spec`, `-N CHAIN`, `-X [CHAIN]`,
/// `-F [CHAIN]`, `-P CHAIN POLICY`.
fn command(table: &mut Table, line: usize, raw: &str, text: &str) -> Result<(), Failure> {
    let (cmd, rest) = split_word(text);
    let (chain, rest) = split_word(rest);
    match cmd {
        "-A" | "--append" | "-I" | "--insert" => {
            let (position, spec) = insert_position(cmd, rest);
            let rule = parse_rule(table, line, raw, chain, spec)?;
            let rules = &mut table
                .chains
                .get_mut(chain)
                .ok_or_else(|| undeclared(table.name.as_str(), chain, line, raw))?
                .rules;
            let at = position.map_or(rules.len(), |p| p.saturating_sub(1).min(rules.len()));
            rules.insert(at, rule);
            Ok(())
        }
        "-N" | "--new-chain" if !chain.is_empty() => {
            table.chains.insert(chain.to_string(), Chain { name: chain.to_string(), policy: None, rules: Vec::new() });
            Ok(())
        }
        "-X" | "--delete-chain" => {
            table.chains.retain(|name, c| c.policy.is_some() || !(chain.is_empty() || name == chain));
            Ok(())
        }
        "-F" | "--flush" => {
            table.chains.values_mut().filter(|c| chain.is_empty() || c.name == chain).for_each(|c| c.rules.clear());
            Ok(())
        }
        "-P" | "--policy" => Ok(set_policy(table, chain, rest.trim())?),
        _ => Err(Failure::Syntax(format!("unsupported command `{cmd}`"))),
    }
}

fn undeclared(table: &str, chain: &str, line: usize, raw: &str) -> Failure {
    Failure::Error(TraceError::UndeclaredChain {
        line,
        table: table.to_string(),
        chain: chain.to_string(),
        rule: raw.to_string(),
    })
}

/// `-I CHAIN 3 spec` -> (Some(3), spec); `-A` never has a position.
fn insert_position<'a>(cmd: &str, rest: &'a str) -> (Option<usize>, &'a str) {
    if matches!(cmd, "-I" | "--insert") {
        let (first, after) = split_word(rest);
        if let Ok(n) = first.parse::<usize>() {
            return (Some(n), after);
        }
        return (Some(1), rest);
    }
    (None, rest)
}

fn parse_rule(table: &Table, line: usize, raw: &str, chain: &str, spec: &str) -> Result<Rule, Failure> {
    if chain.is_empty() {
        return Err(Failure::Syntax("missing chain name".to_string()));
    }
    let (matches, target) = parse_spec(spec).map_err(|p| Failure::Error(p.at(line, raw)))?;
    if target.is_nat() && table.name != "nat" {
        return Err(Failure::Syntax("DNAT/SNAT/MASQUERADE are only valid in the nat table".to_string()));
    }
    Ok(Rule { line, spec: spec.to_string(), matches, target })
}

fn split_word(text: &str) -> (&str, &str) {
    let text = text.trim_start();
    match text.find(char::is_whitespace) {
        Some(end) => (&text[..end], text[end..].trim_start()),
        None => (text, ""),
    }
}

/// Every jump and goto names a user chain of the same table.
fn validate(rules: &Rules) -> Result<(), TraceError> {
    for table in rules.tables.values() {
        for chain in table.chains.values() {
            for rule in &chain.rules {
                let Some(target) = rule.target.chain() else { continue };
                let is_user_chain = table.chain(target).is_some_and(|c| c.policy.is_none());
                if !is_user_chain {
                    return Err(TraceError::UnknownTarget {
                        line: rule.line,
                        table: table.name.clone(),
                        rule: format!("-A {} {}", chain.name, rule.spec),
                        target: target.to_string(),
                    });
                }
            }
        }
    }
    Ok(())
}
