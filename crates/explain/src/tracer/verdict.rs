//! What a trace reports, independent of the datapath that produced it:
//! the set of outcomes a packet can have and, for failure messages, the
//! path (rules that matched, branches assumed) that leads to each.

use std::collections::BTreeSet;
use std::fmt;
use std::net::{IpAddr, SocketAddr};

/// One way a new connection can end up. Backend-neutral: iptables,
/// nftables and IPVS traces all report these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Outcome {
    /// Destination rewritten to `to`; `masquerade`: the source is
    /// rewritten on the way out (MASQUERADE or SNAT).
    Dnat {
        /// The new destination.
        to: SocketAddr,
        /// The source address is rewritten too.
        masquerade: bool,
    },
    /// Not DNATed and forwarded on (or sent out) unchanged — "no rule
    /// matched" for a service proxy; `masquerade` if it was SNATed anyway.
    Accept {
        /// The source address is rewritten.
        masquerade: bool,
    },
    /// Not DNATed and delivered to a socket on the node itself.
    Local,
    /// Silently dropped.
    Drop,
    /// Rejected (ICMP error / TCP reset sent back).
    Reject,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Dnat { to, masquerade: false } => write!(f, "DNAT {to}"),
            Outcome::Dnat { to, masquerade: true } => write!(f, "DNAT {to} +masq"),
            Outcome::Accept { masquerade: false } => f.write_str("ACCEPT (no DNAT)"),
            Outcome::Accept { masquerade: true } => f.write_str("ACCEPT (no DNAT) +masq"),
            Outcome::Local => f.write_str("LOCAL (no DNAT, delivered to the node)"),
            Outcome::Drop => f.write_str("DROP"),
            Outcome::Reject => f.write_str("REJECT"),
        }
    }
}

/// `{a, b, c}` for a set of outcomes, for assertion messages.
pub fn describe_outcomes(outcomes: &BTreeSet<Outcome>) -> String {
    let parts: Vec<String> = outcomes.iter().map(Outcome::to_string).collect();
    format!("{{{}}}", parts.join(", "))
}

/// Built-in chain policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Policy {
    /// `ACCEPT`
    Accept,
    /// `DROP`
    Drop,
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Policy::Accept => "ACCEPT",
            Policy::Drop => "DROP",
        })
    }
}

/// Where a step happened: a rule of a chain of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleRef {
    /// Table name (`nat`, `filter`, ...).
    pub table: String,
    /// Chain name.
    pub chain: String,
    /// 1-based position in the chain (as `iptables -L --line-numbers`).
    pub index: usize,
    /// 1-based line in the parsed text (0: the rules were not text, an
    /// nftables table).
    pub line: usize,
    /// The rule after `-A CHAIN`, as written.
    pub spec: String,
}

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A rule whose matches held; `assumed` lists the branch choices this
    /// path made (a `statistic` match taken, a `recent` hit, ...).
    Rule {
        /// The rule.
        rule: RuleRef,
        /// Branch choices assumed to match.
        assumed: Vec<String>,
    },
    /// A branching rule this path assumed did not match.
    NotTaken {
        /// The rule.
        rule: RuleRef,
        /// The branch choices that were possible.
        assumed: Vec<String>,
    },
    /// A built-in chain ended and its policy applied.
    Policy {
        /// Table.
        table: String,
        /// Built-in chain.
        chain: String,
        /// The policy.
        policy: Policy,
    },
    /// The routing decision on the (post-DNAT) destination.
    Route {
        /// Destination routed.
        destination: IpAddr,
        /// It is a local address (INPUT) rather than forwarded.
        local: bool,
    },
    /// A step of a datapath that is not a rule (an IPVS lookup, an nft
    /// map); free text, for other backends.
    Note(String),
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Rule { rule, assumed } if rule.line == 0 => {
                write!(f, "{} {} #{}: {}", rule.table, rule.chain, rule.index, rule.spec)?;
                if !assumed.is_empty() {
                    write!(f, "   [assumed matching: {}]", assumed.join(", "))?;
                }
                Ok(())
            }
            Step::Rule { rule, assumed } => {
                write!(f, "{} {} #{} (line {}): {}", rule.table, rule.chain, rule.index, rule.line, rule.spec)?;
                if !assumed.is_empty() {
                    write!(f, "   [assumed matching: {}]", assumed.join(", "))?;
                }
                Ok(())
            }
            Step::NotTaken { rule, assumed } => write!(
                f,
                "{} {} #{} (line {}): not taken   [assumed not matching: {}]",
                rule.table,
                rule.chain,
                rule.index,
                rule.line,
                assumed.join(", ")
            ),
            Step::Policy { table, chain, policy } => write!(f, "{table} {chain}: policy {policy}"),
            Step::Route { destination, local: true } => write!(f, "route {destination}: local (INPUT)"),
            Step::Route { destination, local: false } => write!(f, "route {destination}: not local (FORWARD)"),
            Step::Note(text) => f.write_str(text),
        }
    }
}

/// One way through the datapath and where it ends.
#[derive(Debug, Clone, PartialEq)]
pub struct Path {
    /// Where this path ends.
    pub outcome: Outcome,
    /// The chance a new connection takes it: the product of the random
    /// choices on the way (`statistic`, `numgen`); 1 when there are none.
    pub probability: f64,
    /// It assumed the client was seen before (a session-affinity hit):
    /// only returning clients take it, a first connection never does.
    pub sticky: bool,
    /// What happened on the way, in order.
    pub steps: Vec<Step>,
}

impl Path {
    /// The rules that matched on this path (not the branches not taken).
    pub fn matched_rules(&self) -> impl Iterator<Item = &RuleRef> {
        self.steps.iter().filter_map(|step| match step {
            Step::Rule { rule, .. } => Some(rule),
            _ => None,
        })
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "-> {}", self.outcome)?;
        for step in &self.steps {
            writeln!(f, "     {step}")?;
        }
        Ok(())
    }
}

/// Every outcome a packet can have, with the paths that lead there.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// The reachable outcomes.
    pub outcomes: BTreeSet<Outcome>,
    /// Every explored path (several may share an outcome).
    pub paths: Vec<Path>,
}

impl Verdict {
    /// Collects the outcomes of `paths`.
    pub fn from_paths(paths: Vec<Path>) -> Self {
        let outcomes = paths.iter().map(|path| path.outcome).collect();
        Self { outcomes, paths }
    }

    /// The paths that end in `outcome`.
    pub fn paths_to<'a>(&'a self, outcome: &'a Outcome) -> impl Iterator<Item = &'a Path> + 'a {
        self.paths.iter().filter(move |path| path.outcome == *outcome)
    }

    /// The DNAT destinations reachable.
    pub fn dnat_targets(&self) -> BTreeSet<SocketAddr> {
        self.outcomes
            .iter()
            .filter_map(|outcome| match outcome {
                Outcome::Dnat { to, .. } => Some(*to),
                _ => None,
            })
            .collect()
    }

    /// Every rule that matched on some path, as (table, chain, spec).
    pub fn matched_rules(&self) -> BTreeSet<(String, String, String)> {
        self.paths
            .iter()
            .flat_map(Path::matched_rules)
            .map(|rule| (rule.table.clone(), rule.chain.clone(), rule.spec.clone()))
            .collect()
    }

    /// The outcomes and every path, one step per line, for failure
    /// messages.
    pub fn describe(&self) -> String {
        let mut text = format!("outcomes {}\n", describe_outcomes(&self.outcomes));
        for (n, path) in self.paths.iter().enumerate() {
            text.push_str(&format!("  path {} {path}", n + 1));
        }
        text
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}
