//! A service port's plan with the names iptables mode gives it: the
//! `ns/name:port` text of every comment, the protocol as matched, its
//! chains (hashed once) and the comments of its refusals.

use crate::chain_name::{ServiceChains, endpoint_chain};
use model::{Endpoint, ServicePortName};
use plan::{PortPlan, Refusal};
use std::cell::OnceCell;
use std::collections::HashMap;

/// What the filter table does with traffic that has no endpoint to go to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Verdict {
    /// REJECT or DROP.
    pub refusal: Refusal,
    /// `"<port> has no endpoints"` or `"<port> has no local endpoints"`.
    pub comment: String,
}

/// One service port's plan and names.
#[derive(Debug)]
pub(crate) struct NamedPlan<'a> {
    /// The decisions shared with every mode.
    pub port: PortPlan<'a>,
    /// `ns/name:port`, as in every comment.
    pub name: String,
    pub proto: &'static str,
    pub chains: ServiceChains,
    /// `KUBE-SEP-<hash>` of each reachable endpoint, by address in memory
    /// (hashed when first asked for: a carried port's entries need none).
    sep_chains: OnceCell<HashMap<*const Endpoint, String>>,
    pub internal_verdict: Option<Verdict>,
    pub external_verdict: Option<Verdict>,
}

impl<'a> NamedPlan<'a> {
    /// Names the chains and refusals of `port`.
    pub(crate) fn new(port: PortPlan<'a>) -> Self {
        let svc = port.svc;
        let name = svc.name.to_string();
        Self {
            internal_verdict: port.internal_refusal.map(|r| verdict(&name, r)),
            external_verdict: port.external_refusal.map(|r| verdict(&name, r)),
            proto: svc.name.protocol.as_lower(),
            chains: ServiceChains::new(&svc.name),
            sep_chains: OnceCell::new(),
            name,
            port,
        }
    }

    /// The `KUBE-SEP` chain of `ep`, one of this port's reachable endpoints.
    pub(crate) fn sep_chain(&self, ep: &Endpoint) -> &str {
        let chains = self.sep_chains.get_or_init(|| sep_chains(&self.port.svc.name, &self.port.reachable));
        chains.get(&std::ptr::from_ref(ep)).map_or("", String::as_str)
    }

    /// Where ClusterIP traffic goes: `KUBE-SVL` for internalTrafficPolicy
    /// Local, else `KUBE-SVC`.
    pub(crate) fn internal_chain(&self) -> &str {
        if self.port.svc.internal_policy_local { &self.chains.svl } else { &self.chains.svc }
    }

    /// Where external traffic that is not short-circuited goes.
    pub(crate) fn external_policy_chain(&self) -> &str {
        if self.port.external_local { &self.chains.svl } else { &self.chains.svc }
    }

    /// Where LoadBalancer IP traffic enters: the firewall chain when
    /// source ranges apply, else the EXT chain.
    pub(crate) fn load_balancer_chain(&self) -> &str {
        if self.port.uses_firewall { &self.chains.fw } else { &self.chains.ext }
    }
}

/// The refusal with its comment.
fn verdict(name: &str, refusal: Refusal) -> Verdict {
    let comment = match refusal {
        Refusal::Reject => format!("{name} has no endpoints"),
        Refusal::Drop => format!("{name} has no local endpoints"),
    };
    Verdict { refusal, comment }
}

/// The SEP chain names of the reachable endpoints (hashed once each).
fn sep_chains(name: &ServicePortName, reachable: &[&Endpoint]) -> HashMap<*const Endpoint, String> {
    reachable.iter().map(|ep| (std::ptr::from_ref(*ep), endpoint_chain(name, ep))).collect()
}
