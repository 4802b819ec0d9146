//! Chain names every kube-proxy mode that writes iptables rules shares:
//! upstream's fixed chain names and the prefixes of its per-service
//! chains, which tell the applier which chains are ours.

/// nat and filter: entry point for service traffic.
pub const KUBE_SERVICES: &str = "KUBE-SERVICES";
/// filter: drops/rejects for external destinations without endpoints.
pub const KUBE_EXTERNAL_SERVICES: &str = "KUBE-EXTERNAL-SERVICES";
/// nat: NodePort entries; filter: health-check node port ACCEPTs.
pub const KUBE_NODEPORTS: &str = "KUBE-NODEPORTS";
/// nat: masquerades marked traffic.
pub const KUBE_POSTROUTING: &str = "KUBE-POSTROUTING";
/// nat: sets the masquerade mark.
pub const KUBE_MARK_MASQ: &str = "KUBE-MARK-MASQ";
/// filter: accepts marked and established forwarded traffic.
pub const KUBE_FORWARD: &str = "KUBE-FORWARD";
/// filter: drops LoadBalancer traffic outside `loadBalancerSourceRanges`.
pub const KUBE_PROXY_FIREWALL: &str = "KUBE-PROXY-FIREWALL";
/// filter: kubelet's "block incoming localnet connections" chain.
pub const KUBE_FIREWALL: &str = "KUBE-FIREWALL";
/// Empty chain in mangle, nat and filter whose disappearance tells the
/// proxy that someone flushed the tables.
pub const KUBE_PROXY_CANARY: &str = "KUBE-PROXY-CANARY";

/// nat, userspace mode (from PREROUTING): service addresses redirected
/// to their proxy ports.
pub const KUBE_PORTALS_CONTAINER: &str = "KUBE-PORTALS-CONTAINER";
/// nat, userspace mode (from OUTPUT): the node's own traffic to service
/// addresses, DNATed to the node's IP and the proxy port.
pub const KUBE_PORTALS_HOST: &str = "KUBE-PORTALS-HOST";
/// nat, userspace mode (from PREROUTING, local destinations): NodePorts.
pub const KUBE_NODEPORT_CONTAINER: &str = "KUBE-NODEPORT-CONTAINER";
/// nat, userspace mode (from OUTPUT, local destinations): the node's own
/// traffic to NodePorts.
pub const KUBE_NODEPORT_HOST: &str = "KUBE-NODEPORT-HOST";
/// filter, userspace mode (from INPUT): accepts new connections to the
/// proxy ports of NodePorts (default-deny firewalls).
pub const KUBE_NODEPORT_NON_LOCAL: &str = "KUBE-NODEPORT-NON-LOCAL";
/// Userspace mode's chains (upstream v1.25's userspace proxier).
pub const USERSPACE_CHAINS: [&str; 5] =
    [KUBE_PORTALS_CONTAINER, KUBE_PORTALS_HOST, KUBE_NODEPORT_CONTAINER, KUBE_NODEPORT_HOST, KUBE_NODEPORT_NON_LOCAL];

/// Prefix of `KUBE-SVC-<hash>`: balances over cluster-wide endpoints.
pub const SVC_PREFIX: &str = "KUBE-SVC-";
/// Prefix of `KUBE-SVL-<hash>`: balances over this node's endpoints.
pub const SVL_PREFIX: &str = "KUBE-SVL-";
/// Prefix of `KUBE-EXT-<hash>`: entry for NodePort, externalIP and LB traffic.
pub const EXT_PREFIX: &str = "KUBE-EXT-";
/// Prefix of `KUBE-FW-<hash>`: `loadBalancerSourceRanges` filter.
pub const FW_PREFIX: &str = "KUBE-FW-";
/// Prefix of `KUBE-SEP-<hash>`: one endpoint.
pub const SEP_PREFIX: &str = "KUBE-SEP-";

/// Whether `chain` is a per-service chain of ours (upstream's
/// `isServiceChainName`): the applier deletes such chains when no longer
/// rendered.
pub fn is_service_chain(chain: &str) -> bool {
    [SVC_PREFIX, SVL_PREFIX, EXT_PREFIX, FW_PREFIX, SEP_PREFIX].iter().any(|p| chain.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_service_chains_only() {
        assert!(is_service_chain("KUBE-SEP-5DB5Q4MAEB5CN3YE"));
        assert!(is_service_chain("KUBE-FW-FTXS5K5EWXMOMKR3"));
        assert!(!is_service_chain(KUBE_SERVICES));
        assert!(!is_service_chain(KUBE_MARK_MASQ));
    }
}
