//! Chain names: upstream's fixed chain names and its hashes of service port
//! names and endpoints, so our dumps can be diffed against upstream's name
//! for name.

use data_encoding::BASE32;
use model::{Endpoint, ServicePortName};
use sha2::{Digest, Sha256};

pub use xtables::chains::*;

/// The per-service chains of one service port. All four share one hash of
/// `servicePortName.String() + protocol`; a chain exists only when the
/// renderer needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceChains {
    /// `KUBE-SVC-<hash>`: balances over cluster-wide endpoints.
    pub svc: String,
    /// `KUBE-SVL-<hash>`: balances over this node's endpoints.
    pub svl: String,
    /// `KUBE-EXT-<hash>`: entry for NodePort, externalIP and LB traffic.
    pub ext: String,
    /// `KUBE-FW-<hash>`: `loadBalancerSourceRanges` filter.
    pub fw: String,
}

impl ServiceChains {
    /// The chain names of `name`.
    pub fn new(name: &ServicePortName) -> Self {
        let hash = port_proto_hash(name);
        Self {
            svc: format!("{SVC_PREFIX}{hash}"),
            svl: format!("{SVL_PREFIX}{hash}"),
            ext: format!("{EXT_PREFIX}{hash}"),
            fw: format!("{FW_PREFIX}{hash}"),
        }
    }
}

/// Upstream's `portProtoHash`: the first 16 characters of the base32
/// encoding of sha256(`ns/name:port` + lower-case protocol).
pub fn port_proto_hash(name: &ServicePortName) -> String {
    hash16(&format!("{name}{}", name.protocol.as_lower()))
}

/// `KUBE-SEP-<hash>` of one endpoint of `name`: the hash also covers the
/// endpoint's `ip:port` (`[ip]:port` for IPv6).
pub fn endpoint_chain(name: &ServicePortName, endpoint: &Endpoint) -> String {
    let hash = hash16(&format!("{name}{}{endpoint}", name.protocol.as_lower()));
    format!("{SEP_PREFIX}{hash}")
}

fn hash16(input: &str) -> String {
    let digest = Sha256::digest(input.as_bytes());
    let mut encoded = BASE32.encode(&digest);
    encoded.truncate(16);
    encoded
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use model::Protocol;

    fn web() -> ServicePortName {
        ServicePortName::new("storefront", "web", "http", Protocol::Tcp)
    }

    #[test]
    fn service_chains_match_upstream_reference() {
        let chains = ServiceChains::new(&web());
        assert_eq!(chains.svc, "KUBE-SVC-4EICBWO4A2XU3KYK");
        assert_eq!(chains.svl, "KUBE-SVL-4EICBWO4A2XU3KYK");
        assert_eq!(chains.ext, "KUBE-EXT-4EICBWO4A2XU3KYK");
        assert_eq!(chains.fw, "KUBE-FW-4EICBWO4A2XU3KYK");
    }

    #[test]
    fn protocol_is_part_of_the_hash() {
        // kube-system/cluster-dns:dns is UDP in the reference dump.
        let dns = ServicePortName::new("kube-system", "cluster-dns", "dns", Protocol::Udp);
        assert_eq!(ServiceChains::new(&dns).svc, "KUBE-SVC-GSINWVGKZZKTEDTD");
    }

    #[test]
    fn endpoint_chain_matches_upstream_reference() {
        let ep = Endpoint::ready("10.244.0.11".parse().unwrap(), 8080, Some("node-a"), true);
        assert_eq!(endpoint_chain(&web(), &ep), "KUBE-SEP-5DB5Q4MAEB5CN3YE");
    }
}
