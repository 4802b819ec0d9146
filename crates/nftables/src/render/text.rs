//! Text at the edge: the rendered table as `nft` text — what `nft list
//! table` prints for it, and valid `nft -f` input (for `--dry-run`).

use super::endpoint_slots::slot_key_number;
use super::ruleset::{ChainRules, NamedSet, RuleSpec, Ruleset};
use crate::value::concat_text;
use crate::{BaseChain, ChainType, DataType, Element, ElementData, Hook, Policy, SetFlags, TypeOf};
use std::fmt::Write;

/// Continuation indent of `elements = { …` lines, as `nft` writes it.
const ELEMENT_INDENT: &str = "\t\t\t     ";

impl Ruleset {
    /// The table as `nft` text: `table ip kube-proxy { … }`, sets and
    /// maps first, then chains, in creation order; each element on its own
    /// line.
    pub fn to_nft_text(&self) -> String {
        let mut out = format!(
            "table {} {} {{\n",
            self.table.family.name(),
            self.table.name
        );
        if let Some(comment) = &self.table.comment {
            let _ = writeln!(out, "\tcomment {}", quoted(comment));
        }
        let blocks: Vec<String> = self
            .sets
            .iter()
            .map(set_text)
            .chain(self.chains.iter().map(chain_text))
            .collect();
        out.push_str(&blocks.join("\n"));
        out.push_str("}\n");
        out
    }
}

fn quoted(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "'"))
}

fn set_text(named: &NamedSet) -> String {
    let set = &named.set;
    let kind = if set.data.is_some() { "map" } else { "set" };
    let mut out = format!("\t{kind} {} {{\n", set.name);
    match set.type_of {
        Some(t) => {
            let _ = writeln!(out, "\t\ttypeof {}", type_of_text(t));
        }
        None => {
            let mut ty = types_text(&set.key);
            if let Some(data) = &set.data {
                ty = format!("{ty} : {}", types_text(data));
            }
            let _ = writeln!(out, "\t\ttype {ty}");
        }
    }
    if let Some(size) = set.size {
        let _ = writeln!(out, "\t\tsize {size}");
    }
    let flags = flags_text(set.flags);
    if !flags.is_empty() {
        let _ = writeln!(out, "\t\tflags {flags}");
    }
    if let Some(ms) = set.timeout_ms {
        let _ = writeln!(out, "\t\ttimeout {}", duration_text(ms));
    }
    if let Some(comment) = &set.comment {
        let _ = writeln!(out, "\t\tcomment {}", quoted(comment));
    }
    if !named.elements.is_empty() {
        let items: Vec<String> = match set.type_of {
            Some(TypeOf::NumgenToDaddrDport { .. }) => slot_ranges_text(&named.elements),
            None => named.elements.iter().map(element_text).collect(),
        };
        let _ = writeln!(
            out,
            "\t\telements = {{ {} }}",
            items.join(&format!(",\n{ELEMENT_INDENT}"))
        );
    }
    out.push_str("\t}\n");
    out
}

/// A `typeof` declaration as `nft` lists it.
fn type_of_text(t: TypeOf) -> String {
    let TypeOf::NumgenToDaddrDport { modulus, v6 } = t;
    let ip = if v6 { "ip6" } else { "ip" };
    format!("numgen random mod {modulus} : {ip} daddr . th dport")
}

/// The elements of a shared endpoint map as `nft` lists ranges: each
/// range's first key with its end marker (the next end marker after it)
/// as `first-last : data` (`first : data` for a range of one key).
fn slot_ranges_text(elements: &[Element]) -> Vec<String> {
    let mut sorted: Vec<&Element> = elements.iter().collect();
    sorted.sort_by_key(|e| (slot_key_number(&e.key[0]), !e.is_interval_end()));
    // walked from the top: the end marker seen last closes each start
    let mut out = Vec::new();
    let mut next_end = None;
    for e in sorted.iter().rev() {
        let Some(key) = slot_key_number(&e.key[0]) else {
            continue;
        };
        if e.is_interval_end() {
            next_end = Some(key);
            continue;
        }
        let range = match next_end {
            Some(end) if end > key + 1 => format!("{key}-{}", end - 1),
            _ => key.to_string(),
        };
        let data = match &e.data {
            Some(ElementData::Values(values)) => concat_text(values),
            _ => String::new(),
        };
        out.push(format!("{range} : {data}"));
    }
    out.reverse();
    out
}

fn types_text(types: &[DataType]) -> String {
    types
        .iter()
        .map(|t| type_name(*t))
        .collect::<Vec<_>>()
        .join(" . ")
}

fn type_name(t: DataType) -> &'static str {
    match t {
        DataType::Verdict => "verdict",
        DataType::Integer => "integer",
        DataType::Ipv4Addr => "ipv4_addr",
        DataType::Ipv6Addr => "ipv6_addr",
        DataType::InetProto => "inet_proto",
        DataType::InetService => "inet_service",
        DataType::Mark => "mark",
    }
}

/// The flags `nft` prints (a map's own flag is implied by `map`).
fn flags_text(flags: SetFlags) -> String {
    [
        (SetFlags::CONSTANT, "constant"),
        (SetFlags::INTERVAL, "interval"),
        (SetFlags::DYNAMIC, "dynamic"),
        (SetFlags::TIMEOUT, "timeout"),
    ]
    .iter()
    .filter(|(f, _)| flags.contains(*f))
    .map(|(_, name)| *name)
    .collect::<Vec<_>>()
    .join(",")
}

/// `10m`, `1h30m`, `3d`, `500ms`, as `nft` prints durations.
pub(crate) fn duration_text(ms: u64) -> String {
    let units = [
        (86_400_000, "d"),
        (3_600_000, "h"),
        (60_000, "m"),
        (1000, "s"),
        (1, "ms"),
    ];
    let mut rest = ms;
    let mut out = String::new();
    for (size, unit) in units {
        if rest >= size {
            let _ = write!(out, "{}{unit}", rest / size);
            rest %= size;
        }
    }
    if out.is_empty() {
        "0s".to_string()
    } else {
        out
    }
}

pub(crate) fn element_text(e: &Element) -> String {
    let mut out = concat_text(&e.key);
    if let Some(comment) = e.comment() {
        let _ = write!(out, " comment {}", quoted(comment));
    }
    match &e.data {
        Some(ElementData::Verdict(v)) => {
            let _ = write!(out, " : {v}");
        }
        Some(ElementData::Values(values)) => {
            let _ = write!(out, " : {}", concat_text(values));
        }
        None => {}
    }
    out
}

fn chain_text(chain: &ChainRules) -> String {
    let mut out = format!("\tchain {} {{\n", chain.chain.name);
    if let Some(base) = &chain.chain.base {
        let _ = writeln!(out, "\t\t{}", base_text(base));
    }
    if let Some(comment) = &chain.chain.comment {
        let _ = writeln!(out, "\t\tcomment {}", quoted(comment));
    }
    for rule in &chain.rules {
        let _ = writeln!(out, "\t\t{}", rule_text(rule));
    }
    out.push_str("\t}\n");
    out
}

/// A rule as `nft` writes it.
pub(crate) fn rule_text(rule: &RuleSpec) -> String {
    let mut out = rule
        .stmts
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" ");
    if let Some(comment) = &rule.comment {
        let _ = write!(out, " comment {}", quoted(comment));
    }
    out
}

fn base_text(base: &BaseChain) -> String {
    let kind = match base.kind {
        ChainType::Filter => "filter",
        ChainType::Nat => "nat",
        ChainType::Route => "route",
    };
    let hook = match base.hook {
        Hook::Prerouting => "prerouting",
        Hook::Input => "input",
        Hook::Forward => "forward",
        Hook::Output => "output",
        Hook::Postrouting => "postrouting",
    };
    let policy = match base.policy {
        Policy::Accept => "accept",
        Policy::Drop => "drop",
    };
    format!(
        "type {kind} hook {hook} priority {}; policy {policy};",
        priority_text(base.hook, base.priority)
    )
}

/// A priority as `nft` lists it: a standard name of the hook, with an
/// offset of at most 10, else the number.
fn priority_text(hook: Hook, priority: i32) -> String {
    let mut names = vec![
        ("raw", -300),
        ("mangle", -150),
        ("filter", 0),
        ("security", 50),
    ];
    match hook {
        Hook::Prerouting => names.push(("dstnat", -100)),
        Hook::Postrouting => names.push(("srcnat", 100)),
        _ => {}
    }
    let Some((name, base)) = names.iter().find(|(_, base)| (priority - base).abs() <= 10) else {
        return priority.to_string();
    };
    match priority - base {
        0 => (*name).to_string(),
        d if d < 0 => format!("{name} - {}", -d),
        d => format!("{name} + {d}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_priorities_print_as_nft_does() {
        assert_eq!(duration_text(600_000), "10m");
        assert_eq!(duration_text(10_800_000 + 1000), "3h1s");
        assert_eq!(duration_text(86_400_000), "1d");
        assert_eq!(priority_text(Hook::Prerouting, -110), "dstnat - 10");
        assert_eq!(priority_text(Hook::Output, -110), "-110");
        assert_eq!(priority_text(Hook::Output, -100), "-100");
        assert_eq!(priority_text(Hook::Postrouting, 100), "srcnat");
        assert_eq!(priority_text(Hook::Forward, 0), "filter");
    }
}
