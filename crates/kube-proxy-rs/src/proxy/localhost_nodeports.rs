//! `--userspace-localhost-nodeports`: NodePorts on `127.0.0.1` (IPv4) and
//! `[::1]` (IPv6) in every mode without `route_localnet`, served by a
//! listener of ours per NodePort service port (TCP and UDP) that forwards
//! to the port's endpoints (the `forward` crate's data path). Upstream's
//! iptables mode DNATs such traffic after setting `route_localnet=1` (the
//! CVE-2020-8558 class); its nftables and IPVS modes do not serve it. With
//! the flag, iptables mode runs as with `--iptables-localhost-nodeports=false`
//! (its NodePort jump skips 127.0.0.0/8, `route_localnet` stays 0), and
//! no mode's rules match loopback destinations, so the connection reaches
//! the listener's socket.
//!
//! Traffic from the node itself goes cluster-wide, as upstream's
//! short-circuit for local sources sends it (externalTrafficPolicy Local
//! included): the backends are the port's cluster-traffic endpoints, or
//! its local ones when no cluster-wide balancing is used.

use crate::config::Config;
use forward::{Forwarder, ForwarderOptions, Listener, ListenerKey, Role};
use model::{IpFamily, Protocol, Snapshot};
use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

/// One family's localhost NodePort listeners (UDP sessions closed after
/// `--udp-timeout`, as userspace mode's).
pub struct LocalhostNodePorts {
    family: IpFamily,
    forwarder: Forwarder,
    /// Listeners whose bind failed, warned about once each.
    failing: BTreeSet<ListenerKey>,
}

impl LocalhostNodePorts {
    /// The family's listeners when the flag is on (none open before the
    /// first sync). Must be called inside the runtime.
    pub fn new(config: &Config, family: IpFamily) -> Option<Self> {
        config.userspace_localhost_nodeports.then(|| Self {
            family,
            forwarder: Forwarder::new(ForwarderOptions { port_range: None, udp_idle_timeout: config.udp_idle_timeout }),
            failing: BTreeSet::new(),
        })
    }

    /// Makes the listeners those of `snapshot`'s NodePorts.
    pub fn sync(&mut self, snapshot: &Snapshot) {
        let applied = self.forwarder.apply(&listeners(snapshot, self.family));
        let mut failing = BTreeSet::new();
        for (key, err) in applied.failed {
            if !self.failing.contains(&key) {
                tracing::warn!(service_port = %key.service_port, %err, "cannot serve the localhost NodePort");
            }
            failing.insert(key);
        }
        self.failing = failing;
    }
}

/// The loopback address of `family`.
fn loopback(family: IpFamily) -> IpAddr {
    match family {
        IpFamily::V4 => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpFamily::V6 => IpAddr::V6(Ipv6Addr::LOCALHOST),
    }
}

/// One listener per TCP or UDP NodePort of `snapshot` (of one family).
pub fn listeners(snapshot: &Snapshot, family: IpFamily) -> Vec<Listener> {
    let opts = plan::Options { family, ..plan::Options::default() };
    let ctx = plan::SyncContext::new(snapshot, &opts, &plan::NodeFacts::default());
    let served = |svc: &&std::sync::Arc<model::ServicePort>| matches!(svc.name.protocol, Protocol::Tcp | Protocol::Udp);
    let of = |svc: &std::sync::Arc<model::ServicePort>| {
        let node_port = svc.node_port?;
        let plan = plan::PortPlan::new(&ctx, svc, snapshot.endpoints_of(&svc.name));
        let endpoints = if plan.uses_cluster_endpoints { &plan.cluster } else { &plan.local };
        Some(Listener {
            key: ListenerKey { service_port: svc.name.clone(), role: Role::LocalhostNodePort },
            bind: SocketAddr::new(loopback(family), node_port),
            backends: endpoints.iter().map(|ep| SocketAddr::new(ep.ip, ep.port)).collect(),
            affinity: plan.affinity_seconds.map(|secs| Duration::from_secs(secs.into())),
        })
    };
    snapshot.services.values().filter(served).filter_map(of).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::{Endpoint, ServicePort, ServicePortName};
    use std::sync::Arc;

    fn port(name: &str, protocol: Protocol, node_port: Option<u16>) -> ServicePort {
        let name = ServicePortName::new("ns", name, "p", protocol);
        ServicePort { node_port, ..ServicePort::cluster_ip(name, IpAddr::from([10, 96, 0, 1]), 80) }
    }

    fn snapshot(ports: Vec<ServicePort>) -> Snapshot {
        let mut snapshot = Snapshot::default();
        for svc in ports {
            let elsewhere = Endpoint::ready(IpAddr::from([10, 244, 1, 5]), 8080, Some("node-b"), false);
            snapshot.endpoints.insert(svc.name.clone(), Arc::new(vec![elsewhere]));
            snapshot.services.insert(svc.name.clone(), Arc::new(svc));
        }
        snapshot
    }

    #[test]
    fn one_loopback_listener_per_tcp_or_udp_node_port_with_cluster_wide_endpoints() {
        let ports = vec![
            port("web", Protocol::Tcp, Some(30080)),
            port("dns", Protocol::Udp, Some(30053)),
            port("internal", Protocol::Tcp, None),
            port("sctp", Protocol::Sctp, Some(30132)),
            // externalTrafficPolicy Local and no local endpoint: the node's
            // own traffic still goes cluster-wide.
            ServicePort { external_policy_local: true, ..port("local", Protocol::Tcp, Some(30443)) },
        ];
        let wanted = listeners(&snapshot(ports), IpFamily::V4);
        let got: Vec<(String, SocketAddr, Vec<SocketAddr>)> =
            wanted.iter().map(|l| (l.key.service_port.service.name.to_string(), l.bind, l.backends.clone())).collect();
        let endpoint = vec![SocketAddr::from(([10, 244, 1, 5], 8080))];
        assert_eq!(
            got,
            [
                ("dns".to_string(), SocketAddr::from(([127, 0, 0, 1], 30053)), endpoint.clone()),
                ("local".to_string(), SocketAddr::from(([127, 0, 0, 1], 30443)), endpoint.clone()),
                ("web".to_string(), SocketAddr::from(([127, 0, 0, 1], 30080)), endpoint),
            ]
        );
        assert!(wanted.iter().all(|l| l.key.role == Role::LocalhostNodePort && l.affinity.is_none()));
    }

    fn config(args: &[&str]) -> Config {
        let all: Vec<&str> = std::iter::once("kube-proxy-rs").chain(args.iter().copied()).collect();
        let flags = crate::flags::Flags::parse_from_args(all).unwrap_or_else(|e| panic!("{e}"));
        crate::config::load(&flags).unwrap_or_else(|e| panic!("{e}")).config
    }

    #[test]
    fn the_flag_turns_iptables_localhost_nodeports_and_route_localnet_off() {
        use crate::proxy::mode_options::{iptables_render_options, wants_route_localnet};
        let default = config(&[]);
        assert!(!default.userspace_localhost_nodeports && wants_route_localnet(&default, IpFamily::V4));
        for args in [&["--userspace-localhost-nodeports"][..], &["--userspace-localhost-nodeports=true", "--iptables-localhost-nodeports=true"]] {
            let with = config(args);
            assert!(with.userspace_localhost_nodeports, "{args:?}");
            assert!(!wants_route_localnet(&with, IpFamily::V4), "{args:?}");
            assert!(!iptables_render_options(&with, IpFamily::V4).common.localhost_nodeports, "{args:?}");
        }
        assert!(!config(&["--userspace-localhost-nodeports=false"]).userspace_localhost_nodeports);
    }

    #[test]
    fn ipv6_listens_on_its_loopback_address() {
        let wanted = listeners(&snapshot(vec![port("web", Protocol::Tcp, Some(30080))]), IpFamily::V6);
        assert_eq!(wanted[0].bind, SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), 30080));
    }
}
