//! What the applier consumes: rules it can walk more than once, piece by
//! piece, in render order. A collected [`Ruleset`] is one piece; the
//! streaming renderer ([`crate::render::stream`]) hands out one piece per
//! service port, so a sync never holds every rule at once (10k services
//! are 320k rules): the applier hashes each chain in a first walk and
//! writes the chains that must change in a second one. Rendering is
//! deterministic, so both walks see the same rules.

use crate::render::NoLocalEndpoints;
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
        let piece = Piece { rules: Cow::Borrowed(self), open: false, no_local_endpoints: NoLocalEndpoints::default() };
        Box::new(std::iter::once(piece))
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
