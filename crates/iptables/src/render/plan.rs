//! The traffic plan of one service port: which endpoints serve which
//! traffic, which of its chains exist, and what the filter table does when
//! there is nowhere to send the traffic. Decided once, read by every
//! traffic-kind renderer.

use super::{IpFamily, RenderContext};
use crate::chain_name::{ServiceChains, endpoint_chain};
use ipnet::IpNet;
use model::topology::categorize_endpoints;
use model::{Endpoint, ServicePort, ServicePortName};
use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::io::Write;
use std::net::IpAddr;

/// How the filter table refuses traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// No endpoints anywhere: ICMP port unreachable.
    Reject,
    /// Policy Local and none on this node: silently dropped.
    Drop,
}

/// What the filter table does with traffic that has no endpoint to go to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Verdict {
    /// REJECT or DROP.
    pub refusal: Refusal,
    /// `"<port> has no endpoints"` or `"<port> has no local endpoints"`.
    pub comment: String,
}

/// One service port's decisions (upstream's per-service locals in
/// `syncProxyRules`).
#[derive(Debug)]
pub(crate) struct PortPlan<'a> {
    pub svc: &'a ServicePort,
    /// `ns/name:port`, as in every comment.
    pub name: String,
    pub proto: &'static str,
    pub chains: ServiceChains,
    pub cluster: Vec<&'a Endpoint>,
    pub local: Vec<&'a Endpoint>,
    pub reachable: Vec<&'a Endpoint>,
    /// `KUBE-SEP-<hash>` of each reachable endpoint, by address in memory.
    sep_chains: HashMap<*const Endpoint, String>,
    pub has_endpoints: bool,
    pub has_internal: bool,
    pub has_external: bool,
    pub external_local: bool,
    pub uses_cluster_chain: bool,
    pub uses_local_chain: bool,
    pub uses_ext_chain: bool,
    pub uses_fw_chain: bool,
    pub internal_verdict: Option<Verdict>,
    pub external_verdict: Option<Verdict>,
    pub external_ips: Vec<IpAddr>,
    pub lb_ips: Vec<IpAddr>,
    pub source_ranges: Vec<IpNet>,
}

impl<'a> PortPlan<'a> {
    /// Plans `svc` with `endpoints` (already in upstream's order, see
    /// [`upstream_order`]).
    pub(crate) fn new(ctx: &RenderContext, svc: &'a ServicePort, endpoints: &'a [Endpoint]) -> Self {
        let eps = categorize_endpoints(svc, endpoints);
        let external_local = svc.external_policy_local && svc.externally_accessible();
        let has_internal = eps.has_any && (!svc.internal_policy_local || !eps.local.is_empty());
        let has_external = eps.has_any && (!external_local || !eps.local.is_empty());
        let lb_ips = of_family(&svc.load_balancer_ips, ctx.family);
        let source_ranges: Vec<IpNet> =
            svc.load_balancer_source_ranges.iter().filter(|n| ctx.family.contains_net(n)).copied().collect();
        let name = svc.name.to_string();
        Self {
            internal_verdict: verdict(&name, eps.has_any, has_internal),
            external_verdict: verdict(&name, eps.has_any, has_external),
            proto: svc.name.protocol.as_lower(),
            chains: ServiceChains::new(&svc.name),
            uses_cluster_chain: !eps.cluster.is_empty() && svc.uses_cluster_endpoints(),
            uses_local_chain: !eps.local.is_empty() && svc.uses_local_endpoints(),
            uses_ext_chain: eps.has_any && svc.externally_accessible(),
            uses_fw_chain: eps.has_any && !lb_ips.is_empty() && !source_ranges.is_empty(),
            external_ips: of_family(&svc.external_ips, ctx.family),
            has_endpoints: eps.has_any,
            sep_chains: sep_chains(&svc.name, &eps.all_reachable),
            cluster: eps.cluster,
            local: eps.local,
            reachable: eps.all_reachable,
            svc,
            name,
            has_internal,
            has_external,
            external_local,
            lb_ips,
            source_ranges,
        }
    }

    /// The `KUBE-SEP` chain of `ep`, one of this port's reachable endpoints.
    pub(crate) fn sep_chain(&self, ep: &Endpoint) -> &str {
        self.sep_chains.get(&std::ptr::from_ref(ep)).map_or("", String::as_str)
    }

    /// Where ClusterIP traffic goes: `KUBE-SVL` for internalTrafficPolicy
    /// Local, else `KUBE-SVC`.
    pub(crate) fn internal_chain(&self) -> &str {
        if self.svc.internal_policy_local { &self.chains.svl } else { &self.chains.svc }
    }

    /// Where external traffic that is not short-circuited goes.
    pub(crate) fn external_policy_chain(&self) -> &str {
        if self.external_local { &self.chains.svl } else { &self.chains.svc }
    }

    /// Where LoadBalancer IP traffic enters: the firewall chain when
    /// source ranges apply, else the EXT chain.
    pub(crate) fn load_balancer_chain(&self) -> &str {
        if self.uses_fw_chain { &self.chains.fw } else { &self.chains.ext }
    }
}

/// The filter verdict for traffic of one kind, if it cannot be served.
fn verdict(name: &str, has_endpoints: bool, has_for_kind: bool) -> Option<Verdict> {
    if !has_endpoints {
        return Some(Verdict { refusal: Refusal::Reject, comment: format!("{name} has no endpoints") });
    }
    (!has_for_kind).then(|| Verdict { refusal: Refusal::Drop, comment: format!("{name} has no local endpoints") })
}

/// The SEP chain names of the reachable endpoints (hashed once each).
fn sep_chains(name: &ServicePortName, reachable: &[&Endpoint]) -> HashMap<*const Endpoint, String> {
    reachable.iter().map(|ep| (std::ptr::from_ref(*ep), endpoint_chain(name, ep))).collect()
}

fn of_family(ips: &[IpAddr], family: IpFamily) -> Vec<IpAddr> {
    ips.iter().copied().filter(|ip| family.contains(*ip)).collect()
}

/// The endpoints of `family` in upstream's order: sorted by their
/// `ip:port` text (so `10.0.0.10` sorts before `10.0.0.2`), which fixes the
/// balancing probabilities each endpoint gets. Borrows when already so.
pub(crate) fn upstream_order(endpoints: &[Endpoint], family: IpFamily) -> Cow<'_, [Endpoint]> {
    let in_order = endpoints.iter().all(|ep| family.contains(ep.ip))
        && endpoints.windows(2).all(|w| text_cmp(&w[0], &w[1]) != Ordering::Greater);
    if in_order {
        return Cow::Borrowed(endpoints);
    }
    let mut owned: Vec<Endpoint> = endpoints.iter().filter(|ep| family.contains(ep.ip)).cloned().collect();
    owned.sort_by(text_cmp);
    Cow::Owned(owned)
}

/// Compares two endpoints by their `ip:port` text without allocating.
fn text_cmp(a: &Endpoint, b: &Endpoint) -> Ordering {
    let (mut buf_a, mut buf_b) = ([0u8; 64], [0u8; 64]);
    text(a, &mut buf_a).cmp(text(b, &mut buf_b))
}

fn text<'b>(ep: &Endpoint, buf: &'b mut [u8; 64]) -> &'b [u8] {
    let mut cursor = std::io::Cursor::new(&mut buf[..]);
    // An `ip:port` is at most 47 bytes, so the write always fits.
    let _ = write!(cursor, "{}", ep.addr());
    let len = usize::try_from(cursor.position()).unwrap_or(0);
    &buf[..len]
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ep(ip: &str, port: u16) -> Endpoint {
        Endpoint::ready(ip.parse().unwrap(), port, None, false)
    }

    #[test]
    fn endpoints_sort_as_text_like_upstream() {
        let eps = [ep("10.0.0.2", 80), ep("10.0.0.10", 80), ep("fd00::1", 80)];
        let sorted = upstream_order(&eps, IpFamily::V4);
        let got: Vec<String> = sorted.iter().map(|e| e.to_string()).collect();
        assert_eq!(got, ["10.0.0.10:80", "10.0.0.2:80"]);
    }

    #[test]
    fn already_ordered_endpoints_are_borrowed() {
        let eps = [ep("10.0.0.10", 80), ep("10.0.0.2", 80)];
        assert!(matches!(upstream_order(&eps, IpFamily::V4), Cow::Borrowed(_)));
    }
}
