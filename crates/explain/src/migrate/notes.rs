//! What no first packet shows: the node-wide settings whose defaults
//! differ between the modes, and per Service port what IPVS mode's state
//! says (scheduler and weights, persistence). Not a difference in v1.36:
//! ping to a ClusterIP — IPVS mode binds it to `kube-ipvs0`, but
//! KUBE-IPVS-FILTER rejects every new connection to it no virtual server
//! takes, ICMP echo included, as nftables mode rejects it.

use super::{Migration, Note};
use crate::tracer::VirtualService;
use model::{ServicePort, ServicePortName};
use std::collections::BTreeSet;
use std::net::IpAddr;

/// The node-wide settings of both modes, from the proxy's configuration
/// (each mode's defaults applied) and the rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// Where the current mode serves NodePorts (`every local address`,
    /// `the node's primary addresses`, `addresses in 10.0.0.0/8`).
    pub node_ports_before: String,
    /// Where the new mode will.
    pub node_ports_after: String,
    /// The current rules drop packets conntrack calls INVALID.
    pub drops_invalid_before: bool,
    /// The new mode's rules will.
    pub drops_invalid_after: bool,
}

/// The node-wide differences.
pub fn of_node(m: &Migration<'_>) -> Vec<Note> {
    let s = m.settings;
    let mut out = Vec::new();
    if s.node_ports_before != s.node_ports_after {
        out.push(Note {
            topic: "nodePortAddresses".into(),
            why: format!(
                "{} mode serves NodePorts on {}, {} mode on {} (nodePortAddresses unset means `primary` in nftables mode); \
                 set nodePortAddresses to keep them where they are",
                m.from, s.node_ports_before, m.to, s.node_ports_after
            ),
        });
    }
    if s.drops_invalid_before && !s.drops_invalid_after {
        out.push(Note {
            topic: "conntrack INVALID".into(),
            why: format!(
                "{} mode drops forwarded packets conntrack marks INVALID (a workaround for kernels before 6.1 that reset \
                 long-lived connections); {} mode does not: if the metric kubeproxy_iptables_ct_state_invalid_dropped_packets_total \
                 grows, set conntrack.tcpBeLiberal (--conntrack-tcp-be-liberal)",
                m.from, m.to
            ),
        });
    }
    if !s.drops_invalid_before && s.drops_invalid_after {
        out.push(Note {
            topic: "conntrack INVALID".into(),
            why: format!("{} mode drops forwarded packets conntrack marks INVALID; {} mode does not", m.to, m.from),
        });
    }
    if m.from == "ipvs" {
        out.push(Note {
            topic: "IPVS timeouts".into(),
            why: "ipvs.tcpTimeout, tcpFinTimeout and udpTimeout no longer apply: connections time out by conntrack's \
                  timeouts (conntrack.tcpEstablishedTimeout …); kube-ipvs0 and the ipsets go"
                .into(),
        });
    }
    out
}

/// What IPVS mode's state says about one Service port.
pub fn of_port(m: &Migration<'_>, _name: &ServicePortName, port: &ServicePort) -> Vec<Note> {
    let Some(dump) = m.ipvs else { return Vec::new() };
    let servers = virtual_servers(dump, port, &m.node.addresses);
    let mut out = Vec::new();
    let schedulers: BTreeSet<&str> = servers.iter().map(|vs| vs.scheduler.as_str()).collect();
    let unlike_random: Vec<&str> = schedulers.iter().copied().filter(|s| !matches!(*s, "rr" | "wrr" | "")).collect();
    if !unlike_random.is_empty() {
        out.push(Note {
            topic: "scheduler".into(),
            why: format!(
                "IPVS scheduler {} ({}); {} mode picks an endpoint at random, each equally likely",
                unlike_random.join(", "),
                unlike_random.iter().map(|s| meaning(s)).collect::<Vec<_>>().join("; "),
                m.to
            ),
        });
    }
    let weighted = servers.iter().any(|vs| vs.real_servers.iter().map(|(_, w)| *w).collect::<BTreeSet<u32>>().len() > 1);
    if weighted {
        out.push(Note {
            topic: "weights".into(),
            why: format!("the real servers' weights differ (set by hand?); {} mode gives each endpoint the same chance", m.to),
        });
    }
    if let Some(seconds) = port.session_affinity_seconds {
        out.push(Note {
            topic: "session affinity".into(),
            why: format!(
                "ClientIP for {seconds}s in both, but IPVS mode remembers a client per virtual server (the ClusterIP, each \
                 NodePort address and each load-balancer IP apart); {} mode per Service port, whichever address it came through",
                m.to
            ),
        });
    }
    out
}

/// The port's virtual servers: at its ClusterIP, external and
/// load-balancer IPs on its port, and at its NodePort.
fn virtual_servers<'a>(dump: &'a crate::ipvs::IpvsDump, port: &ServicePort, node: &[IpAddr]) -> Vec<&'a VirtualService> {
    let addresses: BTreeSet<IpAddr> =
        std::iter::once(port.cluster_ip).chain(port.external_ips.iter().copied()).chain(port.load_balancer_ips.iter().copied()).collect();
    dump.virtual_servers
        .iter()
        .filter(|vs| vs.protocol == port.name.protocol)
        .filter(|vs| {
            (addresses.contains(&vs.address.ip()) && vs.address.port() == port.port)
                || (port.node_port == Some(vs.address.port()) && (node.contains(&vs.address.ip()) || !addresses.contains(&vs.address.ip())))
        })
        .collect()
}

/// What an IPVS scheduler does, in a few words.
fn meaning(scheduler: &str) -> &'static str {
    match scheduler {
        "lc" => "least connections: the endpoint with the fewest active connections",
        "wlc" => "weighted least connections",
        "sh" => "source hashing: each client address always to the same endpoint",
        "dh" => "destination hashing",
        "sed" => "shortest expected delay",
        "nq" => "never queue: an idle endpoint first",
        "lblc" | "lblcr" => "locality-based least connections",
        "mh" => "maglev hashing: each client to the same endpoint",
        "fo" => "weighted failover",
        "ovf" => "weighted overflow",
        "twos" => "weighted random twos choice",
        _ => "not random",
    }
}
