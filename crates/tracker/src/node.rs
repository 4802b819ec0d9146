//! This proxy's v1 Node → [`NodeInfo`].

use crate::IpFamily;
use crate::warning::{ObjectKind, Problem, Warning, Warnings};
use ipnet::IpNet;
use k8s_openapi::api::core::v1::Node;
use model::NodeInfo;
use std::net::IpAddr;

/// The label naming the node's zone (`v1.LabelTopologyZone`).
pub const LABEL_TOPOLOGY_ZONE: &str = "topology.kubernetes.io/zone";

/// Taint the cluster autoscaler puts on nodes it is about to remove.
pub const TAINT_TO_BE_DELETED: &str = "ToBeDeletedByClusterAutoscaler";

/// What the proxy needs of its Node: InternalIP then ExternalIP addresses
/// and podCIDRs of `family` (bad ones dropped with a warning, other-family
/// ones silently), whether the node is going away, and its zone.
pub(crate) fn node_info(node: &Node, name: &str, family: IpFamily) -> (NodeInfo, Vec<Warning>) {
    let mut warnings = Warnings::new(ObjectKind::Node, "", name);
    let info = NodeInfo {
        name: name.to_string(),
        addresses: addresses(node, family, &mut warnings),
        pod_cidrs: pod_cidrs(node, family, &mut warnings),
        deleting: deleting(node),
        zone: zone(node),
    };
    (info, warnings.into_vec())
}

/// The Node's host IPs as upstream's `GetNodeHostIPs` picks them: the
/// first InternalIP (else ExternalIP) address, then the first one of the
/// other family, if any. Addresses that do not parse are skipped (the
/// tracker warns about them). The first one's family is the node's
/// primary family.
pub fn node_host_ips(node: &Node) -> Vec<IpAddr> {
    let all = node.status.as_ref().and_then(|s| s.addresses.as_deref()).unwrap_or(&[]);
    let ordered = ["InternalIP", "ExternalIP"]
        .into_iter()
        .flat_map(|wanted| all.iter().filter(move |a| a.type_ == wanted))
        .filter_map(|a| a.address.parse::<IpAddr>().ok());
    let mut ips: Vec<IpAddr> = Vec::new();
    for ip in ordered {
        match ips.first() {
            None => ips.push(ip),
            Some(first) if first.is_ipv4() != ip.is_ipv4() => {
                ips.push(ip);
                break;
            }
            Some(_) => {}
        }
    }
    ips
}

fn addresses(node: &Node, family: IpFamily, warnings: &mut Warnings<'_>) -> Vec<IpAddr> {
    let all = node
        .status
        .as_ref()
        .and_then(|s| s.addresses.as_deref())
        .unwrap_or(&[]);
    let mut out = Vec::new();
    for wanted in ["InternalIP", "ExternalIP"] {
        for addr in all.iter().filter(|a| a.type_ == wanted) {
            match addr.address.parse::<IpAddr>() {
                Ok(ip) if family.contains(ip) && !out.contains(&ip) => out.push(ip),
                Ok(_) => {}
                Err(_) => warnings.push(Problem::BadNodeAddress(addr.address.clone())),
            }
        }
    }
    out
}

/// `spec.podCIDRs`, or the older single `spec.podCIDR` when the list is
/// empty.
fn pod_cidrs(node: &Node, family: IpFamily, warnings: &mut Warnings<'_>) -> Vec<IpNet> {
    let Some(spec) = node.spec.as_ref() else {
        return Vec::new();
    };
    let listed: Vec<&String> = match spec.pod_cidrs.as_deref() {
        Some(list) if !list.is_empty() => list.iter().collect(),
        _ => spec.pod_cidr.iter().collect(),
    };
    let mut out = Vec::new();
    for text in listed {
        match text.parse::<IpNet>() {
            Ok(net) if family.contains_net(&net) => out.push(net),
            Ok(_) => {}
            Err(_) => warnings.push(Problem::BadPodCidr(text.clone())),
        }
    }
    out
}

fn deleting(node: &Node) -> bool {
    let tainted = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|taints| taints.iter().any(|t| t.key == TAINT_TO_BE_DELETED));
    node.metadata.deletion_timestamp.is_some() || tainted
}

/// The `topology.kubernetes.io/zone` label; an empty value is no zone.
fn zone(node: &Node) -> Option<String> {
    let labels = node.metadata.labels.as_ref()?;
    labels.get(LABEL_TOPOLOGY_ZONE).filter(|z| !z.is_empty()).cloned()
}
