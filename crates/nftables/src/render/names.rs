//! Names: upstream's fixed chain, set and map names, and its hashed
//! per-service and per-endpoint chain names
//! (`service-<HASH8>-<ns>/<name>/<proto>/<port>`), so our table can be
//! compared with upstream's name for name.

use data_encoding::BASE32;
use model::{Endpoint, ServicePortName};
use sha2::{Digest, Sha256};

/// The table's name (in both families).
pub const TABLE: &str = "kube-proxy";
/// The table's comment.
pub const TABLE_COMMENT: &str = "rules for kube-proxy";

/// Dispatch of service traffic (nat).
pub const SERVICES: &str = "services";
/// Masquerades marked and hairpin traffic (nat).
pub const MASQUERADING: &str = "masquerading";
/// Drops or rejects traffic to NodePorts without endpoints.
pub const NODEPORT_ENDPOINTS_CHECK: &str = "nodeport-endpoints-check";
/// Drops or rejects traffic to service IPs without endpoints.
pub const SERVICE_ENDPOINTS_CHECK: &str = "service-endpoints-check";
/// `loadBalancerSourceRanges` dispatch.
pub const FIREWALL_CHECK: &str = "firewall-check";
/// Rejects invalid ports of ClusterIPs, drops unallocated ClusterIPs.
pub const CLUSTER_IPS_CHECK: &str = "cluster-ips-check";
/// `reject`, for the no-endpoint maps.
pub const REJECT_CHAIN: &str = "reject-chain";

/// Set: local endpoint connections DNATed back to themselves.
pub const HAIRPIN_CONNECTIONS: &str = "hairpin-connections";
/// Set: every ClusterIP.
pub const CLUSTER_IPS: &str = "cluster-ips";
/// Set: the addresses NodePorts answer on (absent when they answer on all).
pub const NODEPORT_IPS: &str = "nodeport-ips";
/// Verdict map: service IPs with no endpoints.
pub const NO_ENDPOINT_SERVICES: &str = "no-endpoint-services";
/// Verdict map: NodePorts with no endpoints.
pub const NO_ENDPOINT_NODEPORTS: &str = "no-endpoint-nodeports";
/// Verdict map: LB IPs subject to `loadBalancerSourceRanges`.
pub const FIREWALL_IPS: &str = "firewall-ips";
/// Verdict map: ClusterIP, externalIP and LB IP dispatch.
pub const SERVICE_IPS: &str = "service-ips";
/// Verdict map: NodePort dispatch.
pub const SERVICE_NODEPORTS: &str = "service-nodeports";
/// Data map (ours, not upstream's): ClusterIP ports DNATed straight from
/// `services` to their one endpoint ([`super::direct`]).
pub const SERVICE_IPS_DIRECT: &str = "service-ips-direct";

/// Longest name base upstream keeps (`knftables.NameLengthMax` 256 minus
/// the longest prefix, 16).
const NAME_BASE_MAX: usize = 240;

/// The per-service chains of one service port; all share one hash of
/// `ns/name/proto/port`. A chain exists only when the renderer needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceChains {
    /// `service-…`: balances over cluster-wide endpoints.
    pub service: String,
    /// `local-…`: balances over this node's endpoints.
    pub local: String,
    /// `external-…`: entry for NodePort, externalIP and LB traffic.
    pub external: String,
    /// `firewall-…`: `loadBalancerSourceRanges` filter.
    pub firewall: String,
}

impl ServiceChains {
    /// The chain names of `name`.
    pub fn new(name: &ServicePortName) -> Self {
        let base = service_port_base(name);
        Self {
            service: format!("service-{base}"),
            local: format!("local-{base}"),
            external: format!("external-{base}"),
            firewall: format!("firewall-{base}"),
        }
    }
}

/// The per-endpoint chain and affinity set (session affinity only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointNames {
    /// `endpoint-…`: records affinity and DNATs.
    pub chain: String,
    /// `affinity-…`: the sources recently sent to this endpoint.
    pub affinity_set: String,
}

impl EndpointNames {
    /// The names for `endpoint` of `name`.
    pub fn new(name: &ServicePortName, endpoint: &Endpoint) -> Self {
        let ip = endpoint.ip.to_string().replace(':', ".");
        let base = hash_and_truncate(&format!(
            "{}__{ip}/{}",
            service_port_path(name),
            endpoint.port
        ));
        Self {
            chain: format!("endpoint-{base}"),
            affinity_set: format!("affinity-{base}"),
        }
    }
}

/// The longest comment `nft` reads back (knftables' `CommentLengthMax`):
/// a table holding a longer one is refused by `nft -f` and cannot be listed.
pub const COMMENT_MAX: usize = 128;

/// `ns/name:port` as upstream writes it in comments, cut to [`COMMENT_MAX`]
/// bytes as upstream does (kubernetes#139515): a namespace, name and port
/// name at the API's length limits make 191.
pub fn service_port_comment(name: &ServicePortName) -> String {
    let mut comment = name.to_string();
    if comment.len() > COMMENT_MAX {
        let cut = (0..=COMMENT_MAX)
            .rev()
            .find(|i| comment.is_char_boundary(*i))
            .unwrap_or(0);
        comment.truncate(cut);
    }
    comment
}

/// `ns/name/proto/port`.
fn service_port_path(name: &ServicePortName) -> String {
    format!(
        "{}/{}/{}/{}",
        name.service.namespace,
        name.service.name,
        name.protocol.as_lower(),
        name.port
    )
}

/// Upstream's `servicePortChainNameBase`.
fn service_port_base(name: &ServicePortName) -> String {
    hash_and_truncate(&service_port_path(name))
}

/// Upstream's `hashAndTruncate`: 8 base32 characters of sha256(`name`),
/// `-`, `name`, cut to 240 characters ending in `...`.
fn hash_and_truncate(name: &str) -> String {
    let digest = Sha256::digest(name.as_bytes());
    // 8 base32 characters are the first 5 bytes' exactly
    let encoded = BASE32.encode(&digest[..5]);
    let mut out = format!("{encoded}-{name}");
    if out.len() > NAME_BASE_MAX {
        let mut cut = NAME_BASE_MAX - 3;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        out.push_str("...");
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use model::Protocol;

    #[test]
    fn service_chains_match_upstream_reference() {
        let catalog = ServicePortName::new("storefront", "catalog", "http", Protocol::Tcp);
        let chains = ServiceChains::new(&catalog);
        assert_eq!(
            chains.service,
            "service-QCNCQR2N-storefront/catalog/tcp/http"
        );
        assert_eq!(
            chains.external,
            "external-QCNCQR2N-storefront/catalog/tcp/http"
        );
        let dns = ServicePortName::new("kube-system", "cluster-dns", "dns", Protocol::Udp);
        assert_eq!(
            ServiceChains::new(&dns).service,
            "service-A3DO2MMW-kube-system/cluster-dns/udp/dns"
        );
    }

    /// Found by `tests/odd_states.rs`: names at the API's limits (63, 63,
    /// 63) made a 191-byte element comment, which `nft -f` refuses.
    #[test]
    fn comments_of_names_at_the_length_limits_are_cut_to_what_nft_reads() {
        let label = "a".repeat(63);
        let long = ServicePortName::new(&label, &label, &label, Protocol::Tcp);
        let comment = service_port_comment(&long);
        assert_eq!(comment.len(), COMMENT_MAX);
        assert!(long.to_string().starts_with(&comment));
        let short = ServicePortName::new("ns", "svc", "http", Protocol::Tcp);
        assert_eq!(service_port_comment(&short), "ns/svc:http");
        let wide = ServicePortName::new(&"é".repeat(100), "svc", "p", Protocol::Tcp);
        let cut = service_port_comment(&wide);
        assert!(
            cut.len() <= COMMENT_MAX && cut.len() >= COMMENT_MAX - 1,
            "cut on a character boundary: {}",
            cut.len()
        );
    }

    #[test]
    fn endpoint_names_match_upstream_reference() {
        let cart = ServicePortName::new("storefront", "cart", "grpc", Protocol::Tcp);
        let ep = Endpoint::ready("10.244.0.12".parse().unwrap(), 7000, Some("node-a"), true);
        let names = EndpointNames::new(&cart, &ep);
        assert_eq!(
            names.chain,
            "endpoint-34X2MHTE-storefront/cart/tcp/grpc__10.244.0.12/7000"
        );
        assert_eq!(
            names.affinity_set,
            "affinity-34X2MHTE-storefront/cart/tcp/grpc__10.244.0.12/7000"
        );
    }

    #[test]
    fn ipv6_endpoints_use_dots_and_long_names_are_cut() {
        let svc = ServicePortName::new("ns", "svc", "p", Protocol::Tcp);
        let ep = Endpoint::ready("fd00::1".parse().unwrap(), 80, None, false);
        assert!(
            EndpointNames::new(&svc, &ep)
                .chain
                .ends_with("-ns/svc/tcp/p__fd00..1/80")
        );
        let long = "x".repeat(63);
        let svc = ServicePortName::new(&long, &long, &long, Protocol::Sctp);
        let ep = Endpoint::ready(
            "fd00:1111:2222:3333:4444:5555:6666:7777".parse().unwrap(),
            65535,
            None,
            false,
        );
        let base = EndpointNames::new(&svc, &ep).chain;
        assert_eq!(base.len(), "endpoint-".len() + NAME_BASE_MAX);
        assert!(base.ends_with("..."));
    }
}
