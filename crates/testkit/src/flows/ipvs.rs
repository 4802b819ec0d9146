//! The reference flows as IPVS mode answers them: upstream's iptables
//! verdicts, except the flows where IPVS mode works otherwise by design
//! ([`ipvs_differences`], one list read by `explain_ipvs`, which walks
//! IPVS mode's plan, and `flows_ipvs_vm`, which sends the flows for real
//! through a live IPVS node).

use super::case::FlowCase;
use super::expected::{Expected, Masquerade};
use super::load::load_flows;
use anyhow::{Result, bail};
use std::collections::BTreeSet;
use std::net::SocketAddr;

/// One flow whose IPVS-mode verdict is not iptables mode's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpvsDifference {
    /// The flow's id (`F05` …).
    pub id: &'static str,
    /// What IPVS mode does with it.
    pub expected: Expected,
    /// Why, in one line.
    pub why: &'static str,
}

/// Every flow of the reference whose IPVS-mode verdict differs from
/// upstream's iptables mode, with the verdict and why.
pub fn ipvs_differences() -> Vec<IpvsDifference> {
    let diff = |id, expected, why| IpvsDifference { id, expected, why };
    let unmasqueraded = |eps: &[&str]| dnat(eps, Masquerade::No);
    const LOCAL_NODE_PORTS: &str = "no virtual server on 127.0.0.1: localhost NodePorts are iptables mode's";
    const NO_REAL_SERVERS: &str = "a virtual server without real servers answers ICMP port unreachable";
    const NO_LOCAL_FALLBACK: &str = "upstream's IPVS proxier keeps the cluster endpoints when an ETP Local service has no \
        local one (syncEndpoint, kubernetes PR #97081), not masqueraded";
    vec![
        diff("F05", Expected::Reject, "ClusterIPs are bound to kube-ipvs0; KUBE-IPVS-FILTER rejects their other ports"),
        diff("F13", Expected::DeliveredLocally, LOCAL_NODE_PORTS),
        diff("F18", Expected::DeliveredLocally, LOCAL_NODE_PORTS),
        diff(
            "F16",
            unmasqueraded(&["10.244.0.14:8443"]),
            "one virtual server per NodePort: pods get only the local endpoints of an ETP Local service",
        ),
        diff(
            "F63",
            unmasqueraded(&["10.244.0.29:8080"]),
            "one virtual server per LB IP: pods get only the local endpoints of an ETP Local service",
        ),
        diff(
            "F38",
            unmasqueraded(&["10.244.0.18:8080", "10.244.0.19:8080"]),
            "one virtual server per LB IP: pods get only the local endpoints of an ETP Local service",
        ),
        diff(
            "F39",
            unmasqueraded(&["10.244.0.18:8080", "10.244.0.19:8080"]),
            "one virtual server per LB IP: the node gets only the local endpoints, unmasqueraded (KUBE-NODE-PORT / LB \
             -LOCAL sets return before KUBE-MARK-MASQ)",
        ),
        diff(
            "F17",
            unmasqueraded(&["10.244.0.14:8443"]),
            "one virtual server per NodePort: the node gets only the local endpoints of an ETP Local service, \
             unmasqueraded",
        ),
        diff(
            "F22",
            unmasqueraded(&["10.244.1.15:8080", "10.244.2.15:8080"]),
            "ETP Local NodePort from the node itself: not masqueraded in IPVS mode",
        ),
        diff(
            "F27",
            unmasqueraded(&["10.244.1.16:9200", "10.244.2.16:9200"]),
            "ETP Local LB IP from the node itself: not masqueraded in IPVS mode",
        ),
        diff("F50", Expected::Reject, NO_REAL_SERVERS),
        diff("F51", Expected::Reject, NO_REAL_SERVERS),
        diff("F20", unmasqueraded(&["10.244.1.15:8080", "10.244.2.15:8080"]), NO_LOCAL_FALLBACK),
        diff("F24", unmasqueraded(&["10.244.1.16:9200", "10.244.2.16:9200"]), NO_LOCAL_FALLBACK),
        diff("F25", unmasqueraded(&["10.244.1.16:9200", "10.244.2.16:9200"]), NO_LOCAL_FALLBACK),
    ]
}

/// The reference's iptables flows with IPVS mode's verdicts: each flow of
/// [`ipvs_differences`] gets its IPVS verdict, the others keep upstream's.
/// Fails if a listed flow is not in the reference.
pub fn ipvs_flows() -> Result<Vec<FlowCase>> {
    let mut flows = load_flows("iptables")?;
    for difference in ipvs_differences() {
        let Some(flow) = flows.iter_mut().find(|f| f.id == difference.id) else {
            bail!("IPVS difference {}: no such flow in the reference", difference.id);
        };
        flow.expected = difference.expected;
    }
    Ok(flows)
}

/// Why flow `id` differs in IPVS mode, if it does.
pub fn ipvs_difference(id: &str) -> Option<&'static str> {
    ipvs_differences().into_iter().find(|d| d.id == id).map(|d| d.why)
}

fn dnat(endpoints: &[&str], masquerade: Masquerade) -> Expected {
    let endpoints: BTreeSet<SocketAddr> =
        endpoints.iter().map(|ep| ep.parse().unwrap_or_else(|e| panic!("endpoint {ep}: {e}"))).collect();
    Expected::Dnat { endpoints, masquerade, sticky: false }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_difference_is_a_reference_flow_and_differs() {
        let upstream = load_flows("iptables").unwrap();
        let ipvs = ipvs_flows().unwrap();
        assert_eq!(ipvs.len(), upstream.len());
        let differences = ipvs_differences();
        let ids: BTreeSet<&str> = differences.iter().map(|d| d.id).collect();
        assert_eq!(ids.len(), differences.len(), "one entry per flow");
        for (theirs, ours) in upstream.iter().zip(&ipvs) {
            assert_eq!(theirs.id, ours.id);
            assert_eq!(ids.contains(theirs.id.as_str()), theirs.expected != ours.expected, "{}", theirs.id);
        }
        assert!(ipvs_difference("F20").unwrap().contains("97081"));
        assert_eq!(ipvs_difference("F01"), None);
    }
}
