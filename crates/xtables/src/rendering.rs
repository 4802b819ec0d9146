//! What the applier consumes: rules it can walk more than once, piece by
//! piece, in render order. A collected [`Ruleset`] is one piece; the
//! streaming renderer (iptables mode's `render::stream`) hands out one piece per
//! service port, so a sync never holds every rule at once (10k services
//! are 320k rules): the applier hashes each chain in a first walk and
//! writes the chains that must change in a second one. Rendering is
//! deterministic, so both walks see the same rules.

use model::ServicePortName;
use plan::NoLocalEndpoints;
use crate::{BuiltinJump, Ruleset, Table};
use std::borrow::Cow;

/// Rules that can be walked more than once, in pieces.
pub trait Rendering {
    /// The pieces in render order; their chains and rules, appended table
    /// by table, are the whole ruleset.
    fn pieces(&self) -> Box<dyn Iterator<Item = Piece<'_>> + Send + '_>;

    /// The jumps from the built-in chains into ours.
    fn builtin_jumps(&self) -> Cow<'_, [BuiltinJump]>;
}

/// One piece of a rendering: chains declared and rules appended (its
/// `builtin_jumps` are not used).
#[derive(Debug, Clone)]
pub struct Piece<'a> {
    /// The chains and rules of this piece.
    pub rules: Cow<'a, Ruleset>,
    /// Chains declared here get rules from later pieces too (the shared
    /// chains, `KUBE-SERVICES`, ...). Otherwise this piece holds every rule
    /// of the chains it declares (a service port's own chains).
    pub open: bool,
    /// Services of this piece lacking the local endpoints their policy needs.
    pub no_local_endpoints: NoLocalEndpoints,
    /// The service port a closed piece renders: the chains it declares
    /// belong to it, and a later partial sync can carry them over.
    pub key: Option<ServicePortName>,
    /// A partial sync's piece of a service port that did not change since
    /// the last sync: the chains of `key` keep the rules that sync gave
    /// them, and `rules` holds only the port's rules in open chains (it
    /// declares no chains). The applier refuses it when the last sync did
    /// not render `key`, and in a full sync.
    pub carried: bool,
}

impl Piece<'_> {
    /// A piece of `rules` without key.
    pub fn new(rules: Cow<'_, Ruleset>, open: bool) -> Piece<'_> {
        Piece { rules, open, no_local_endpoints: NoLocalEndpoints::default(), key: None, carried: false }
    }
}

/// Rule and chain counts of one rendering, per table, with the figures
/// the metrics need.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleCounts {
    /// Rules per table, in `Table` order: filter, nat, mangle.
    rules: [usize; 3],
    /// Chains declared per table.
    chains: [usize; 3],
    /// Services without the local endpoints their policy needs.
    pub no_local_endpoints: NoLocalEndpoints,
}

impl RuleCounts {
    /// Rules in `table` (`kubeproxy_sync_proxy_rules_iptables_total`).
    pub fn rules(&self, table: Table) -> usize {
        self.rules[slot(table)]
    }

    /// Chains of ours in `table`.
    pub fn chains(&self, table: Table) -> usize {
        self.chains[slot(table)]
    }

    /// Adds `chains` chains holding `rules` rules of `table` (a carried
    /// piece's, which its rules do not show).
    pub(crate) fn add_carried(&mut self, table: Table, chains: usize, rules: usize) {
        self.rules[slot(table)] += rules;
        self.chains[slot(table)] += chains;
    }

    /// Adds the rules and chains of `piece`.
    pub fn add(&mut self, piece: &Piece) {
        for (table, rules) in piece.rules.tables() {
            self.rules[slot(table)] += rules.rules.len();
            self.chains[slot(table)] += rules.chains.len();
        }
        self.no_local_endpoints.internal += piece.no_local_endpoints.internal;
        self.no_local_endpoints.external += piece.no_local_endpoints.external;
    }
}

fn slot(table: Table) -> usize {
    match table {
        Table::Filter => 0,
        Table::Nat => 1,
        Table::Mangle => 2,
    }
}

impl Rendering for Ruleset {
    fn pieces(&self) -> Box<dyn Iterator<Item = Piece<'_>> + Send + '_> {
        Box::new(std::iter::once(Piece::new(Cow::Borrowed(self), false)))
    }

    fn builtin_jumps(&self) -> Cow<'_, [BuiltinJump]> {
        Cow::Borrowed(&self.builtin_jumps)
    }
}

impl Ruleset {
    /// The rule and chain counts of this ruleset.
    pub fn counts(&self) -> RuleCounts {
        let mut counts = RuleCounts::default();
        self.pieces().for_each(|piece| counts.add(&piece));
        counts
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::TableRules;
    use crate::rules::tests::rule;

    /// A rendering in pieces, as a streaming renderer hands them out: a
    /// first open piece with the shared chains, then one piece per service.
    pub(crate) struct Pieces(Vec<TestPiece>);

    /// One piece of [`Pieces`].
    struct TestPiece {
        rules: Ruleset,
        open: bool,
        key: Option<ServicePortName>,
        carried: bool,
    }

    /// The key of service `name`'s port (namespace `ns`, port `p`).
    pub(crate) fn key(name: &str) -> ServicePortName {
        ServicePortName::new("ns", name, "p", model::Protocol::Tcp)
    }

    fn table(chains: &[&str], rules: &[&str]) -> TableRules {
        TableRules { chains: chains.iter().map(|c| c.to_string()).collect(), rules: rules.iter().map(|r| rule(r)).collect() }
    }

    /// Shared chains, two services with endpoints, one without.
    pub(crate) fn sample() -> Pieces {
        let shared = Ruleset {
            filter: table(&["KUBE-FORWARD", "KUBE-SERVICES"], &["KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP"]),
            mangle: table(&["KUBE-PROXY-CANARY"], &[]),
            nat: table(
                &["KUBE-SERVICES", "KUBE-MARK-MASQ", "KUBE-POSTROUTING", "KUBE-NODEPORTS"],
                &[
                    "KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000",
                    "KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN",
                    "KUBE-POSTROUTING -j MASQUERADE --random-fully",
                ],
            ),
            builtin_jumps: vec![BuiltinJump { table: Table::Nat, chain: "PREROUTING", args: vec!["-j".into(), "KUBE-SERVICES".into()], prepend: true }],
        };
        let service = |name: &str, ip: u8| Ruleset {
            nat: table(
                &[&format!("KUBE-SVC-{name}"), &format!("KUBE-SEP-{name}1")],
                &[
                    &format!("KUBE-SERVICES -d 10.0.0.{ip}/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-{name}"),
                    &format!("KUBE-SVC-{name} -j KUBE-SEP-{name}1"),
                    &format!("KUBE-SEP-{name}1 -s 10.1.0.{ip}/32 -j KUBE-MARK-MASQ"),
                    &format!("KUBE-SEP-{name}1 -p tcp -m tcp -j DNAT --to-destination 10.1.0.{ip}:8080"),
                ],
            ),
            ..Ruleset::default()
        };
        let dead = Ruleset {
            filter: table(&[], &["KUBE-SERVICES -d 10.0.0.9/32 -p tcp -m tcp --dport 80 -j REJECT --reject-with icmp-port-unreachable"]),
            ..Ruleset::default()
        };
        let piece = |rules: Ruleset, open: bool, key: Option<&str>| TestPiece { rules, open, key: key.map(self::key), carried: false };
        Pieces(vec![
            piece(shared, true, None),
            piece(service("A", 1), false, Some("a")),
            piece(service("B", 2), false, Some("b")),
            piece(dead, false, Some("dead")),
        ])
    }

    impl Pieces {
        /// The same rules collected in one ruleset.
        pub(crate) fn collected(&self) -> Ruleset {
            let mut out = Ruleset::default();
            for piece in self.0.iter().map(|p| &p.rules) {
                for (into, from) in [(&mut out.filter, &piece.filter), (&mut out.mangle, &piece.mangle), (&mut out.nat, &piece.nat)] {
                    into.chains.extend(from.chains.iter().cloned());
                    into.rules.extend(from.rules.iter().cloned());
                }
                out.builtin_jumps.extend(piece.builtin_jumps.iter().cloned());
            }
            out
        }

        /// The same rendering as a partial sync's renderer hands it out
        /// when only the services `changed` changed: every other keyed
        /// piece carried (its own chains and their rules left out).
        pub(crate) fn carrying(&self, changed: &[&str]) -> Pieces {
            let pieces = self.0.iter().map(|p| {
                let carried = p.key.as_ref().is_some_and(|k| !changed.contains(&k.service.name.as_str()));
                let mut rules = p.rules.clone();
                if carried {
                    for table in [&mut rules.filter, &mut rules.mangle, &mut rules.nat] {
                        let own = std::mem::take(&mut table.chains);
                        table.rules.retain(|r| !own.iter().any(|c| c == r.chain()));
                    }
                }
                TestPiece { rules, open: p.open, key: p.key.clone(), carried }
            });
            Pieces(pieces.collect())
        }

        /// Declares `chain` in the nat table of service `name`'s piece.
        pub(crate) fn declare_in(&mut self, name: &str, chain: &str) {
            for p in self.0.iter_mut().filter(|p| p.key == Some(key(name))) {
                p.rules.nat.chains.push(chain.to_string());
            }
        }

        /// Without service `name`'s piece.
        pub(crate) fn remove(&mut self, name: &str) {
            self.0.retain(|p| p.key != Some(key(name)));
        }

        /// With `edit` applied to every piece's nat rules.
        pub(crate) fn edited(&self, edit: impl Fn(&mut Vec<crate::Rule>)) -> Pieces {
            let pieces = self.0.iter().map(|p| {
                let mut rules = p.rules.clone();
                edit(&mut rules.nat.rules);
                TestPiece { rules, open: p.open, key: p.key.clone(), carried: p.carried }
            });
            Pieces(pieces.collect())
        }
    }

    impl Rendering for Pieces {
        fn pieces(&self) -> Box<dyn Iterator<Item = Piece<'_>> + Send + '_> {
            Box::new(self.0.iter().map(|p| Piece { key: p.key.clone(), carried: p.carried, ..Piece::new(Cow::Borrowed(&p.rules), p.open) }))
        }

        fn builtin_jumps(&self) -> Cow<'_, [BuiltinJump]> {
            Cow::Owned(self.0.iter().flat_map(|p| p.rules.builtin_jumps.iter().cloned()).collect())
        }
    }

    #[test]
    fn counts_add_up_over_pieces() {
        let sample = sample();
        let counts = sample.collected().counts();
        assert_eq!((counts.rules(Table::Nat), counts.chains(Table::Nat)), (11, 8));
        assert_eq!((counts.rules(Table::Filter), counts.chains(Table::Filter)), (2, 2));
        let mut streamed = RuleCounts::default();
        sample.pieces().for_each(|p| streamed.add(&p));
        assert_eq!(streamed, counts);
    }
}
