//! An explanation: a trace's [`Verdict`] turned into what an operator
//! asks — which Service port, which endpoints with what chance, whether
//! the source is masqueraded, or where and why the packet is dropped or
//! rejected — with every path for the curious. The same for every mode.

mod naming;
mod text;

use crate::query::{Query, Sender};
use crate::tracer::{Outcome, Path, Verdict};
use serde::Serialize;
use std::net::SocketAddr;

pub use naming::{comment_of, service_of_chain};

/// Why `explain packet` says what it says.
#[derive(Debug, Clone, Serialize)]
pub struct Explanation {
    /// The mode whose rules were walked (`iptables`, `nftables`).
    pub mode: String,
    /// The packet, in one line.
    pub packet: String,
    /// Who sent it.
    pub sender: Sender,
    /// The Service port the rules' comments or chain names name
    /// (`namespace/name:port`), if any rule of one matched.
    pub service: Option<String>,
    /// Every way a new connection can end, most likely first.
    pub outcomes: Vec<Reach>,
    /// A returning client sticks to the endpoint it reached before
    /// (session affinity); `outcomes` are for a first connection.
    pub affinity: bool,
    /// What the walk took for granted that may not hold (the node's
    /// addresses unknown, say), each with how to change it; empty when
    /// nothing was assumed.
    pub assumptions: Vec<String>,
    /// Every path the walk explored.
    pub paths: Vec<PathView>,
}

/// One way a new connection can end.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Reach {
    /// Sent to an endpoint.
    Dnat {
        /// The endpoint.
        to: SocketAddr,
        /// The source is rewritten to a node address.
        masquerade: bool,
        /// The chance a first connection goes there.
        probability: f64,
    },
    /// No rule of the proxy's rewrote it: routed on unchanged.
    Accept {
        /// Masqueraded anyway.
        masquerade: bool,
        /// The chance of this ending.
        probability: f64,
    },
    /// Not rewritten and delivered to a socket on the node itself.
    Local {
        /// The chance of this ending.
        probability: f64,
    },
    /// Silently dropped.
    Drop {
        /// Why, from the rule that dropped it.
        reason: String,
        /// The chance of this ending.
        probability: f64,
    },
    /// Rejected (ICMP error or TCP reset).
    Reject {
        /// Why, from the rule that rejected it.
        reason: String,
        /// The chance of this ending.
        probability: f64,
    },
}

impl Reach {
    /// The tracer outcome this ending is (for comparing with traffic).
    pub fn outcome(&self) -> Outcome {
        match self {
            Reach::Dnat { to, masquerade, .. } => Outcome::Dnat { to: *to, masquerade: *masquerade },
            Reach::Accept { masquerade, .. } => Outcome::Accept { masquerade: *masquerade },
            Reach::Local { .. } => Outcome::Local,
            Reach::Drop { .. } => Outcome::Drop,
            Reach::Reject { .. } => Outcome::Reject,
        }
    }

    fn probability(&self) -> f64 {
        match self {
            Reach::Dnat { probability, .. }
            | Reach::Accept { probability, .. }
            | Reach::Local { probability }
            | Reach::Drop { probability, .. }
            | Reach::Reject { probability, .. } => *probability,
        }
    }
}

/// One explored path, as text.
#[derive(Debug, Clone, Serialize)]
pub struct PathView {
    /// Where it ends.
    pub outcome: String,
    /// Its chance for a first connection.
    pub probability: f64,
    /// Only a returning client (session affinity) takes it.
    pub sticky: bool,
    /// The rules that matched and the lookups made, in order.
    pub steps: Vec<String>,
}

impl Explanation {
    /// Explains `verdict`, the trace of `query` through `mode`'s rules.
    pub fn new(mode: &str, query: &Query, verdict: &Verdict) -> Self {
        let mut outcomes: Vec<Reach> = verdict.outcomes.iter().map(|outcome| reach(verdict, outcome)).collect();
        outcomes.sort_by(|a, b| b.probability().total_cmp(&a.probability()));
        Self {
            mode: mode.to_string(),
            packet: query.to_string(),
            sender: query.sender,
            service: naming::service_of(verdict),
            outcomes,
            affinity: verdict.paths.iter().any(|path| path.sticky || path.steps.iter().any(is_persistent_ipvs)),
            assumptions: Vec::new(),
            paths: verdict.paths.iter().map(path_view).collect(),
        }
    }

    /// The same explanation, saying what it assumed.
    pub fn assuming(mut self, assumptions: impl IntoIterator<Item = String>) -> Self {
        self.assumptions.extend(assumptions);
        self
    }
}

/// The ending `outcome` with its chance (first connections only) and,
/// for a drop or reject, its reason.
fn reach(verdict: &Verdict, outcome: &Outcome) -> Reach {
    let probability = verdict.paths_to(outcome).filter(|path| !path.sticky).map(|path| path.probability).sum();
    let reason = || verdict.paths_to(outcome).next().map(naming::reason_of).unwrap_or_default();
    match *outcome {
        Outcome::Dnat { to, masquerade } => Reach::Dnat { to, masquerade, probability },
        Outcome::Accept { masquerade } => Reach::Accept { masquerade, probability },
        Outcome::Local => Reach::Local { probability },
        Outcome::Drop => Reach::Drop { reason: reason(), probability },
        Outcome::Reject => Reach::Reject { reason: reason(), probability },
    }
}

/// An IPVS virtual server with persistence: IPVS mode's session affinity.
fn is_persistent_ipvs(step: &crate::tracer::Step) -> bool {
    matches!(step, crate::tracer::Step::Note(text) if text.starts_with("IPVS ") && text.contains(" persistent "))
}

fn path_view(path: &Path) -> PathView {
    PathView {
        outcome: path.outcome.to_string(),
        probability: path.probability,
        sticky: path.sticky,
        steps: path.steps.iter().map(ToString::to_string).collect(),
    }
}
