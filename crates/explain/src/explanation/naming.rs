//! Names and reasons read from the rules themselves: the Service port a
//! comment (`"storefront/web:http cluster IP"`) or an nftables chain name
//! (`service-Q2NDXW5G-storefront/web/tcp/http`) names, and why a path
//! ends in a drop or reject.

use crate::tracer::{Path, Step, Verdict};

/// The first Service port named on any path, in path order.
pub(super) fn service_of(verdict: &Verdict) -> Option<String> {
    verdict.paths.iter().flat_map(|path| &path.steps).find_map(service_of_step)
}

fn service_of_step(step: &Step) -> Option<String> {
    match step {
        Step::Rule { rule, .. } => service_of_chain(&rule.chain).or_else(|| comment_of(&rule.spec).and_then(service_of_comment)),
        Step::Note(text) => text.split_whitespace().find_map(service_of_chain),
        _ => None,
    }
}

/// `namespace/name:port` from upstream's nftables chain names
/// (`service-HASH-ns/name/proto/port`, also `external-`, `local-`,
/// `firewall-`, `endpoint-…__ip/port`; the `affinity-…` sets too).
pub fn service_of_chain(chain: &str) -> Option<String> {
    let (kind, rest) = chain.split_once('-')?;
    if !matches!(kind, "service" | "external" | "local" | "firewall" | "endpoint" | "affinity") {
        return None;
    }
    let (_hash, rest) = rest.split_once('-')?;
    let rest = rest.split("__").next()?;
    let parts: Vec<&str> = rest.split('/').collect();
    match parts.as_slice() {
        [namespace, name, _proto, port] => Some(format!("{namespace}/{name}:{port}")),
        _ => None,
    }
}

/// `namespace/name[:port]` when a comment starts with one (upstream's
/// iptables comments do).
fn service_of_comment(comment: &str) -> Option<String> {
    let first = comment.split_whitespace().next()?;
    let (namespace, name) = first.split_once('/')?;
    let plain = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-.:_".contains(c));
    (plain(namespace) && plain(name)).then(|| first.to_string())
}

/// The text of `-m comment --comment "…"` in an iptables rule, or of
/// `comment "…"` in an nftables rule summary.
pub fn comment_of(spec: &str) -> Option<&str> {
    let (_, rest) = spec.split_once("--comment ").or_else(|| spec.split_once("comment "))?;
    match rest.strip_prefix('"') {
        Some(quoted) => quoted.split('"').next(),
        None => rest.split_whitespace().next(),
    }
}

/// Why a path ends in a drop or reject: the reason its last explaining
/// step gives, in the words of upstream's comments and map names.
pub(super) fn reason_of(path: &Path) -> String {
    let texts: Vec<String> = path.steps.iter().filter_map(step_text).collect();
    let Some(last) = texts.last() else { return "no rule explains it".to_string() };
    if let Some(known) = texts.iter().rev().find_map(|text| known_reason(text)) {
        return format!("{known} ({last})");
    }
    last.clone()
}

fn step_text(step: &Step) -> Option<String> {
    match step {
        Step::Rule { rule, .. } => Some(match comment_of(&rule.spec) {
            Some(comment) => format!("{} {}: {comment}", rule.table, rule.chain),
            None => format!("{} {}: {}", rule.table, rule.chain, rule.spec),
        }),
        Step::Policy { table, chain, policy } => Some(format!("{table} {chain}: policy {policy}")),
        Step::Note(text) => Some(text.clone()),
        Step::NotTaken { .. } | Step::Route { .. } => None,
    }
}

/// The reasons upstream's rules state, in plain words.
fn known_reason(text: &str) -> Option<&'static str> {
    const REASONS: [(&str, &str); 9] = [
        ("has no local endpoints", "no local endpoints (traffic policy Local)"),
        ("has no endpoints", "the service has no endpoints"),
        ("no-endpoint-services", "no endpoints for this traffic (none at all: reject; none local with traffic policy Local: drop)"),
        ("no-endpoint-nodeports", "no endpoints for this NodePort (none at all: reject; none local with traffic policy Local: drop)"),
        ("firewall-ips", "source not in loadBalancerSourceRanges"),
        ("traffic not accepted by", "source not in loadBalancerSourceRanges"),
        ("will be dropped", "source not in loadBalancerSourceRanges"),
        ("Reject traffic to invalid ports of ClusterIPs", "no Service port on this ClusterIP"),
        ("Drop traffic to unallocated ClusterIPs", "ClusterIP not allocated to any Service"),
    ];
    REASONS.iter().find(|(marker, _)| text.contains(marker)).map(|(_, reason)| *reason)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn names_from_chains_and_comments() {
        assert_eq!(service_of_chain("service-Q2NDXW5G-storefront/web/tcp/http").as_deref(), Some("storefront/web:http"));
        assert_eq!(
            service_of_chain("endpoint-34X2MHTE-storefront/cart/tcp/grpc__10.244.0.12/7000").as_deref(),
            Some("storefront/cart:grpc")
        );
        assert_eq!(service_of_chain("services"), None);
        assert_eq!(service_of_chain("KUBE-SVC-ABC"), None);
        let spec = r#"-d 10.96.10.10/32 -p tcp -m comment --comment "storefront/web:http cluster IP" -m tcp --dport 80 -j KUBE-SVC-X"#;
        assert_eq!(comment_of(spec), Some("storefront/web:http cluster IP"));
        assert_eq!(service_of_comment("storefront/web:http cluster IP").as_deref(), Some("storefront/web:http"));
        assert_eq!(service_of_comment("kubernetes service portals"), None);
    }
}
