//! Why a probe ends otherwise after the switch: the cause when it is one
//! of the known differences between the modes, with both modes' endings
//! in words.

use super::Migration;
use super::probes::{Probe, Target};
use crate::explanation::Explanation;
use crate::query::Sender;
use crate::tracer::Outcome;
use model::{Endpoint, ServicePort};
use std::collections::BTreeSet;

/// One line: the cause, then what happens now and after.
pub fn why(m: &Migration<'_>, probe: &Probe, port: &ServicePort, endpoints: &[Endpoint], before: &Explanation, after: &Explanation) -> String {
    let now = ending_set(before);
    let then = ending_set(after);
    let summary = format!("now {}; after: {}", describe(&now, endpoints), describe(&then, endpoints));
    match cause(m, probe, port, endpoints, &now, &then) {
        Some(cause) => format!("{cause} — {summary}"),
        None => summary,
    }
}

fn ending_set(explanation: &Explanation) -> BTreeSet<Outcome> {
    explanation.outcomes.iter().map(|r| r.outcome()).collect()
}

fn dnats(set: &BTreeSet<Outcome>) -> BTreeSet<std::net::SocketAddr> {
    set.iter().filter_map(|o| if let Outcome::Dnat { to, .. } = o { Some(*to) } else { None }).collect()
}

fn masquerades(set: &BTreeSet<Outcome>) -> BTreeSet<bool> {
    set.iter().filter_map(|o| if let Outcome::Dnat { masquerade, .. } = o { Some(*masquerade) } else { None }).collect()
}

/// The known cause, if any.
fn cause(m: &Migration<'_>, probe: &Probe, port: &ServicePort, endpoints: &[Endpoint], now: &BTreeSet<Outcome>, then: &BTreeSet<Outcome>) -> Option<String> {
    let (from, to) = (m.from, m.to);
    let (now_eps, then_eps) = (dnats(now), dnats(then));
    let external = matches!(probe.target, Target::NodePort | Target::LoadBalancerIp | Target::ExternalIp);
    let no_local = !endpoints.iter().any(|e| e.is_local && e.ready);
    let unserved = |set: &BTreeSet<Outcome>| set.iter().all(|o| matches!(o, Outcome::Local | Outcome::Accept { .. }));
    match probe.target {
        Target::LocalhostNodePort if unserved(now) && !unserved(then) => {
            return Some(format!("{to} mode serves NodePorts on 127.0.0.1 (localhost NodePorts, route_localnet); {from} mode does not"));
        }
        Target::LocalhostNodePort if !unserved(now) && unserved(then) => {
            return Some(format!(
                "{to} mode serves no NodePort on 127.0.0.1 (upstream's nftables mode never does; iptables mode only with localhost NodePorts on)"
            ));
        }
        Target::ClusterIpOtherPort if from == "ipvs" => {
            return Some("IPVS mode binds ClusterIPs to kube-ipvs0 (a local address) and KUBE-IPVS-FILTER rejects the ports no virtual server has".into());
        }
        Target::ClusterIpOtherPort if to == "ipvs" || to == "nftables" => {
            return Some(format!("{to} mode rejects connections to a ClusterIP's other ports"));
        }
        Target::ClusterIpOtherPort => return Some(format!("{from} mode rejects connections to a ClusterIP's other ports, {to} mode has no rule for them")),
        _ => {}
    }
    let refused = |set: &BTreeSet<Outcome>| set.iter().all(|o| matches!(o, Outcome::Reject | Outcome::Drop));
    if external && port.external_policy_local && from == "ipvs" && no_local && !now_eps.is_empty() && refused(then) {
        return Some(
            "externalTrafficPolicy: Local without a local endpoint: upstream's IPVS proxier keeps the cluster endpoints \
             (kubernetes PR #97081); iptables and nftables mode drop"
                .into(),
        );
    }
    if external && port.external_policy_local && probe.sender != Sender::Outside && now_eps != then_eps && !now_eps.is_empty() && !then_eps.is_empty() {
        return Some(format!(
            "externalTrafficPolicy: Local from {}: {from} mode gives {} endpoints, {to} mode {} (the policy is for outside clients; \
             iptables and nftables mode send the node's and pods' connections to every endpoint)",
            if probe.sender == Sender::Pod { "a pod" } else { "the node" },
            locality(&now_eps, endpoints),
            locality(&then_eps, endpoints),
        ));
    }
    if probe.target == Target::NodePort && (unserved(now) != unserved(then)) && m.settings.node_ports_before != m.settings.node_ports_after {
        return Some(format!(
            "nodePortAddresses: {from} mode serves NodePorts on {}, {to} mode on {}",
            m.settings.node_ports_before, m.settings.node_ports_after
        ));
    }
    if now_eps == then_eps && !now_eps.is_empty() && masquerades(now) != masquerades(then) {
        let masq = |set| if masquerades(set).contains(&true) { "masqueraded (the endpoint sees a node address)" } else { "not masqueraded (the endpoint sees the client)" };
        return Some(format!("same endpoints, but {from} mode: {}, {to} mode: {}", masq(now), masq(then)));
    }
    let internal = matches!(probe.target, Target::ClusterIp);
    if internal && port.internal_policy_local && no_local && refused(now) && refused(then) {
        return Some(format!(
            "internalTrafficPolicy: Local without a local endpoint: {from} mode {}, {to} mode {}",
            refusal(from, now),
            refusal(to, then)
        ));
    }
    if endpoints.iter().all(|e| !e.ready) {
        return Some("no ready endpoint: the modes answer a Service without endpoints differently".into());
    }
    None
}

fn refusal(mode: &str, set: &BTreeSet<Outcome>) -> &'static str {
    match (mode, set.contains(&Outcome::Reject)) {
        ("ipvs", true) => "rejects (a virtual server without real servers answers ICMP port unreachable)",
        (_, true) => "rejects",
        (_, false) => "drops (no local endpoints)",
    }
}

fn locality(eps: &BTreeSet<std::net::SocketAddr>, endpoints: &[Endpoint]) -> &'static str {
    let local = |to: &std::net::SocketAddr| endpoints.iter().any(|e| e.ip == to.ip() && e.is_local);
    if eps.iter().all(local) { "only the local" } else { "all" }
}

/// The endings in words.
fn describe(set: &BTreeSet<Outcome>, endpoints: &[Endpoint]) -> String {
    let eps = dnats(set);
    let mut parts = Vec::new();
    if !eps.is_empty() {
        let masq = match masquerades(set).into_iter().collect::<Vec<_>>().as_slice() {
            [true] => "masqueraded",
            [false] => "not masqueraded",
            _ => "masqueraded for some",
        };
        let list: Vec<String> = eps.iter().map(ToString::to_string).collect();
        parts.push(format!("DNAT to {} ({} endpoints, {masq})", list.join(", "), locality(&eps, endpoints)));
    }
    for outcome in set {
        match outcome {
            Outcome::Dnat { .. } => {}
            Outcome::Accept { .. } => parts.push("no rule: routed on unchanged".into()),
            Outcome::Local => parts.push("delivered to the node itself".into()),
            Outcome::Drop => parts.push("dropped".into()),
            Outcome::Reject => parts.push("rejected".into()),
        }
    }
    parts.join(" or ")
}
