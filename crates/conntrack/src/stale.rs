//! Which UDP flows are stale (pure): a flow to a UDP service address
//! (cluster IP, external IP, load-balancer IP, or a node address on the
//! service's node port) is stale when its NAT target is not a serving
//! endpoint of that service any more — or, for a service that has serving
//! endpoints, when it was never NATed (it met the service while it had
//! none). Flows to anything else are not ours to judge.

use crate::flow::{Flow, UdpFlow};
use model::topology::{NodeTopology, categorize_endpoints};
use model::{Protocol, Snapshot};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::net::IpAddr;

/// The serving endpoints behind every UDP service address and node port.
#[derive(Debug, Default)]
pub struct ServiceTargets {
    by_address: HashMap<(IpAddr, u16), HashSet<IpAddr>>,
    by_node_port: HashMap<u16, HashSet<IpAddr>>,
    node_ips: HashSet<IpAddr>,
}

/// Flows to delete: every UDP flow to `dst:dport` answered from `reply_src`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Deletion {
    /// The service address (or node address) the flows were sent to.
    pub dst: IpAddr,
    /// Its port.
    pub dport: u16,
    /// The stale NAT target (`dst` itself for flows never NATed).
    pub reply_src: IpAddr,
}

impl ServiceTargets {
    /// The UDP services of `snapshot`; `node_ips` are the node's own
    /// addresses, where node ports answer.
    pub fn new(snapshot: &Snapshot, node_ips: &[IpAddr]) -> Self {
        let mut targets = Self { node_ips: node_ips.iter().copied().collect(), ..Self::default() };
        for (name, svc) in snapshot.services.iter().filter(|(n, _)| n.protocol == Protocol::Udp) {
            let endpoints = snapshot.endpoints_of(name);
            // Without topology (as upstream: a change of hints does not
            // cut existing flows; the endpoint still serves).
            let serving: HashSet<IpAddr> = categorize_endpoints(svc, endpoints, NodeTopology::default())
                .all_reachable
                .iter()
                .map(|ep| ep.ip)
                .collect();
            let addresses = std::iter::once(&svc.cluster_ip).chain(&svc.external_ips).chain(&svc.load_balancer_ips);
            for ip in addresses {
                targets.by_address.entry((*ip, svc.port)).or_default().extend(&serving);
            }
            if let Some(node_port) = svc.node_port {
                targets.by_node_port.entry(node_port).or_default().extend(&serving);
            }
        }
        targets
    }

    /// Whether there is any UDP service at all (else nothing to list).
    pub fn is_empty(&self) -> bool {
        self.by_address.is_empty() && self.by_node_port.is_empty()
    }

    /// The serving endpoints of the service `flow` was sent to, if it was
    /// sent to a UDP service.
    fn serving_for(&self, flow: &UdpFlow) -> Option<&HashSet<IpAddr>> {
        self.by_address.get(&(flow.orig_dst, flow.orig_dport)).or_else(|| {
            let to_node = self.node_ips.contains(&flow.orig_dst) || flow.orig_dst.is_loopback();
            to_node.then(|| self.by_node_port.get(&flow.orig_dport)).flatten()
        })
    }
}

/// The deletions that remove every stale flow of `flows`, each once.
pub fn find_stale(flows: &[UdpFlow], targets: &ServiceTargets) -> Vec<Deletion> {
    let stale: BTreeSet<Deletion> =
        flows.iter().filter(|flow| is_stale_flow(flow, targets)).map(Deletion::of).collect();
    stale.into_iter().collect()
}

/// The conntrack entries of `flows` to delete: the stale UDP ones.
pub fn find_stale_entries(flows: &[Flow], targets: &ServiceTargets) -> Vec<Flow> {
    flows.iter().filter(|flow| flow.udp().is_some_and(|udp| is_stale_flow(&udp, targets))).copied().collect()
}

/// Whether `flow` was sent to a UDP service and is stale for it.
pub fn is_stale_flow(flow: &UdpFlow, targets: &ServiceTargets) -> bool {
    targets.serving_for(flow).is_some_and(|serving| is_stale(flow, serving))
}

impl Deletion {
    /// The deletion `flow` falls under.
    pub fn of(flow: &UdpFlow) -> Self {
        Self { dst: flow.orig_dst, dport: flow.orig_dport, reply_src: flow.reply_src }
    }
}

fn is_stale(flow: &UdpFlow, serving: &HashSet<IpAddr>) -> bool {
    let natted = flow.reply_src != flow.orig_dst;
    if serving.is_empty() { natted } else { !serving.contains(&flow.reply_src) }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
