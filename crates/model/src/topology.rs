//! Endpoint selection shared by every backend (upstream's
//! `CategorizeEndpoints`): which endpoints serve cluster traffic and which
//! serve traffic that must stay on this node.

use crate::{Endpoint, ServicePort};

/// The endpoints of one service port, sorted by role.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CategorizedEndpoints<'a> {
    /// Endpoints for cluster-wide traffic: the ready ones, or, when no
    /// endpoint is ready anywhere, the serving and terminating ones. Empty
    /// when the port never uses cluster endpoints (ITP Local without an
    /// ETP Cluster external path).
    pub cluster: Vec<&'a Endpoint>,
    /// Endpoints for traffic that must stay on this node (ITP or ETP Local):
    /// the local ready ones, or else the local serving and terminating ones.
    pub local: Vec<&'a Endpoint>,
    /// Every endpoint some traffic can reach (`cluster` ∪ `local`), in input
    /// order: backends create per-endpoint state for these.
    pub all_reachable: Vec<&'a Endpoint>,
    /// At least one usable endpoint exists anywhere. When false the service
    /// rejects traffic ("has no endpoints") instead of dropping it.
    pub has_any: bool,
}

/// Sorts `endpoints` of `svc` into the traffic roles above.
pub fn categorize_endpoints<'a>(svc: &ServicePort, endpoints: &'a [Endpoint]) -> CategorizedEndpoints<'a> {
    let mut out = CategorizedEndpoints::default();
    if svc.uses_cluster_endpoints() {
        out.cluster = ready_or_serving_terminating(endpoints, |_| true);
        out.has_any = !out.cluster.is_empty();
    }
    if !svc.uses_local_endpoints() {
        out.all_reachable = out.cluster.clone();
        return out;
    }
    out.has_any |= endpoints.iter().any(usable);
    out.local = ready_or_serving_terminating(endpoints, |ep| ep.is_local);
    out.all_reachable = union_in_order(endpoints, &out.cluster, &out.local);
    out
}

/// Ready endpoints passing `keep`; if there are none, the serving and
/// terminating ones passing `keep`.
fn ready_or_serving_terminating(endpoints: &[Endpoint], keep: impl Fn(&Endpoint) -> bool) -> Vec<&Endpoint> {
    let ready: Vec<_> = endpoints.iter().filter(|ep| ep.ready && keep(ep)).collect();
    if !ready.is_empty() {
        return ready;
    }
    endpoints.iter().filter(|ep| ep.serving && ep.terminating && keep(ep)).collect()
}

/// Whether an endpoint could receive traffic under some policy.
fn usable(ep: &Endpoint) -> bool {
    ep.ready || (ep.serving && ep.terminating)
}

fn union_in_order<'a>(all: &'a [Endpoint], a: &[&'a Endpoint], b: &[&'a Endpoint]) -> Vec<&'a Endpoint> {
    all.iter()
        .filter(|ep| a.iter().chain(b).any(|chosen| std::ptr::eq(*chosen, *ep)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Protocol, ServicePortName};
    use std::net::{IpAddr, Ipv4Addr};

    fn ip(last: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(10, 180, 0, last))
    }

    fn svc() -> ServicePort {
        let name = ServicePortName::new("ns", "svc", "p", Protocol::Tcp);
        ServicePort::cluster_ip(name, IpAddr::V4(Ipv4Addr::new(172, 30, 0, 41)), 80)
    }

    fn ep(last: u8, local: bool, ready: bool, serving: bool, terminating: bool) -> Endpoint {
        Endpoint { ready, serving, terminating, ..Endpoint::ready(ip(last), 80, None, local) }
    }

    fn ips(eps: &[&Endpoint]) -> Vec<u8> {
        eps.iter()
            .map(|e| match e.ip {
                IpAddr::V4(v4) => v4.octets()[3],
                IpAddr::V6(_) => 0,
            })
            .collect()
    }

    #[test]
    fn cluster_policy_uses_ready_endpoints_only() {
        let eps = [ep(1, true, true, true, false), ep(2, false, false, true, true), ep(3, false, true, true, false)];
        let c = categorize_endpoints(&svc(), &eps);
        assert_eq!(ips(&c.cluster), [1, 3]);
        assert!(c.local.is_empty());
        assert_eq!(ips(&c.all_reachable), [1, 3]);
        assert!(c.has_any);
    }

    #[test]
    fn falls_back_to_serving_terminating_when_none_ready() {
        let eps = [ep(1, true, false, true, true), ep(2, false, false, true, true), ep(3, false, false, false, true)];
        let c = categorize_endpoints(&svc(), &eps);
        assert_eq!(ips(&c.cluster), [1, 2]);
        assert!(c.has_any);
    }

    #[test]
    fn no_usable_endpoints_means_no_endpoints() {
        let eps = [ep(1, true, false, false, true), ep(2, false, false, false, false)];
        let c = categorize_endpoints(&svc(), &eps);
        assert!(c.cluster.is_empty());
        assert!(!c.has_any);
    }

    #[test]
    fn internal_local_uses_only_local_endpoints() {
        let mut s = svc();
        s.internal_policy_local = true;
        let eps = [ep(1, true, true, true, false), ep(2, false, true, true, false)];
        let c = categorize_endpoints(&s, &eps);
        assert!(c.cluster.is_empty());
        assert_eq!(ips(&c.local), [1]);
        assert_eq!(ips(&c.all_reachable), [1]);
        assert!(c.has_any);
    }

    #[test]
    fn internal_local_without_local_endpoints_still_has_some() {
        let mut s = svc();
        s.internal_policy_local = true;
        let eps = [ep(2, false, true, true, false)];
        let c = categorize_endpoints(&s, &eps);
        assert!(c.local.is_empty());
        assert!(c.has_any, "remote endpoints exist: drop, not reject");
    }

    #[test]
    fn external_local_prefers_local_ready_then_local_terminating() {
        let mut s = svc();
        s.node_port = Some(30080);
        s.external_policy_local = true;
        // Scenario 17: the only local endpoint is terminating but serving.
        let eps = [ep(1, true, false, true, true), ep(2, false, true, true, false)];
        let c = categorize_endpoints(&s, &eps);
        assert_eq!(ips(&c.cluster), [2]);
        assert_eq!(ips(&c.local), [1]);
        assert_eq!(ips(&c.all_reachable), [1, 2]);
    }

    #[test]
    fn both_policies_local_still_keep_cluster_endpoints_for_short_circuits() {
        let mut s = svc();
        s.node_port = Some(30080);
        s.internal_policy_local = true;
        s.external_policy_local = true;
        let eps = [ep(1, true, true, true, false), ep(2, false, true, true, false)];
        let c = categorize_endpoints(&s, &eps);
        assert_eq!(ips(&c.cluster), [1, 2], "pod traffic to the NodePort short-circuits to KUBE-SVC");
        assert_eq!(ips(&c.local), [1]);
        assert_eq!(ips(&c.all_reachable), [1, 2]);
    }

    #[test]
    fn external_local_on_cluster_ip_only_service_is_ignored() {
        let mut s = svc();
        s.external_policy_local = true; // not externally accessible
        assert!(!s.uses_local_endpoints());
    }
}
