//! A Service in IPVS mode's state (an [`IpvsDump`]): its virtual servers
//! (ClusterIP, externalIPs, load-balancer IPs, NodePorts on the node's
//! addresses) with their scheduler, persistence and real servers, its
//! addresses on `kube-ipvs0`, its ipset entries and the companion rules
//! whose comment names it.
//!
//! Virtual servers and set members do not name their Service, so which
//! ones are its comes from the cluster state (a [`Footprint`]: its
//! addresses, ports, NodePorts, health-check node port and endpoints):
//! anything at one of its addresses is its (a virtual server on a port it
//! does not have included, so someone's addition shows as drift), and so
//! is a virtual server or set member at one of its NodePorts outside
//! `kube-ipvs0`.

use super::Programmed;
use crate::ipvs::IpvsDump;
use crate::tracer::VirtualService;
use model::{Protocol, Snapshot};
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

/// A Service port's protocol, port and NodePort.
type PortKey = (Protocol, u16, Option<u16>);

/// What the cluster state says a Service owns, for finding its part of
/// IPVS mode's state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Footprint {
    /// Per port name: its protocol, port and NodePort.
    ports: BTreeMap<String, PortKey>,
    /// The Service's addresses with their kind (`cluster IP`, ...).
    addresses: BTreeMap<IpAddr, &'static str>,
    /// Its health-check node port.
    health_check_node_port: Option<u16>,
    /// Its endpoints: address, protocol, port.
    endpoints: BTreeSet<(IpAddr, Protocol, u16)>,
}

impl Footprint {
    /// The footprint of `service` (`ns/name`) in `snapshot` (one family's).
    pub fn of(snapshot: &Snapshot, service: &str) -> Self {
        let mut out = Footprint::default();
        for (name, port) in snapshot.services.iter().filter(|(name, _)| name.service.to_string() == service) {
            out.ports.insert(name.port.clone(), (name.protocol, port.port, port.node_port));
            out.addresses.insert(port.cluster_ip, "cluster IP");
            out.addresses.extend(port.external_ips.iter().map(|ip| (*ip, "external IP")));
            out.addresses.extend(port.load_balancer_ips.iter().map(|ip| (*ip, "load-balancer IP")));
            out.health_check_node_port = out.health_check_node_port.or(port.health_check_node_port);
            for endpoint in snapshot.endpoints_of(name) {
                out.endpoints.insert((endpoint.ip, name.protocol, endpoint.port));
            }
        }
        out
    }

    /// Whether the cluster state has the Service at all (in this family).
    pub fn is_empty(&self) -> bool {
        self.ports.is_empty()
    }

    /// The port name of the virtual server `vs` and what kind of address
    /// it is, when it is the Service's (`bound`: `kube-ipvs0`'s addresses).
    fn port_of(&self, vs: &VirtualService, bound: &[IpAddr]) -> Option<(String, String)> {
        let (ip, port) = (vs.address.ip(), vs.address.port());
        let named = |want: &dyn Fn(&PortKey) -> bool| {
            self.ports.iter().find(|(_, p)| p.0 == vs.protocol && want(p)).map(|(name, _)| name.clone())
        };
        if let Some(kind) = self.addresses.get(&ip) {
            let name = named(&|p| p.1 == port).unwrap_or_else(|| format!("{}/{port} (not the Service's)", vs.protocol));
            return Some((name, kind.to_string()));
        }
        if bound.contains(&ip) {
            return None;
        }
        named(&|p| p.2 == Some(port)).map(|name| (name, "node port".to_string()))
    }

    /// Whether `entry` of set `set` (`ipset save`'s `add SET ENTRY`) is
    /// the Service's.
    fn owns_entry(&self, set: &str, entry: &str) -> bool {
        let fields: Vec<&str> = entry.split(',').collect();
        let node_port = |proto: Protocol, port: u16| self.ports.values().any(|p| p.0 == proto && p.2 == Some(port));
        match fields.as_slice() {
            [port] => {
                let Ok(port) = port.parse::<u16>() else { return false };
                if set.contains("HEALTH-CHECK") {
                    return self.health_check_node_port == Some(port);
                }
                [Protocol::Tcp, Protocol::Udp, Protocol::Sctp]
                    .into_iter()
                    .any(|proto| set.contains(&proto.to_string().to_uppercase()) && node_port(proto, port))
            }
            [ip, proto_port, rest @ ..] => {
                let Ok(ip) = ip.parse::<IpAddr>() else { return false };
                let Some((proto, port)) = proto_port_of(proto_port) else { return false };
                if self.addresses.contains_key(&ip) {
                    return true;
                }
                match rest {
                    [] => set.contains("NODE-PORT") && node_port(proto, port),
                    [other] => other.parse::<IpAddr>() == Ok(ip) && self.endpoints.contains(&(ip, proto, port)),
                    _ => false,
                }
            }
            [] => false,
        }
    }
}

/// `tcp:80` → (TCP, 80).
fn proto_port_of(text: &str) -> Option<(Protocol, u16)> {
    let (proto, port) = text.split_once(':')?;
    Some((Protocol::from_api(&proto.to_uppercase())?, port.parse().ok()?))
}

fn virtual_server_text(vs: &VirtualService) -> String {
    let mut text = format!("{} {} {}", vs.protocol.to_string().to_uppercase(), vs.address, vs.scheduler);
    if let Some(seconds) = vs.persistent {
        text.push_str(&format!(" persistent {seconds}"));
    }
    text
}

/// The Service's virtual servers in `dump`, with their port name and kind.
fn virtual_servers<'a>(dump: &'a IpvsDump, footprint: &Footprint) -> Vec<(&'a VirtualService, String, String)> {
    let mut out: Vec<_> = dump
        .virtual_servers
        .iter()
        .filter_map(|vs| footprint.port_of(vs, &dump.bound).map(|(name, kind)| (vs, name, kind)))
        .collect();
    out.sort_by_key(|(vs, _, _)| (vs.address, vs.protocol.to_string()));
    out
}

/// The Service's ipset members (`SET ENTRY`), sorted.
fn ipset_entries(dump: &IpvsDump, footprint: &Footprint) -> Vec<String> {
    let mut out: Vec<String> = dump
        .ipsets
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            (words.next()? == "add").then_some(())?;
            let (set, entry) = (words.next()?, words.next()?);
            footprint.owns_entry(set, entry).then(|| format!("{set} {entry}"))
        })
        .collect();
    out.sort();
    out
}

/// The Service's part of `dump`, one line per virtual server, real
/// server, bound address, set member and rule naming it (for comparing
/// with the proxy's rendering).
pub fn rule_lines(dump: &IpvsDump, service: &str, footprint: &Footprint) -> Vec<String> {
    let mut lines = Vec::new();
    for (vs, _, _) in virtual_servers(dump, footprint) {
        let text = virtual_server_text(vs);
        lines.push(format!("virtual server {text}"));
        let mut reals = vs.real_servers.clone();
        reals.sort();
        for (real, weight) in reals {
            lines.push(format!("real server {text} -> {real} weight {weight}"));
        }
    }
    let mut bound: Vec<&IpAddr> = dump.bound.iter().filter(|a| footprint.addresses.contains_key(a)).collect();
    bound.sort();
    lines.extend(bound.into_iter().map(|a| format!("kube-ipvs0 address {a}")));
    lines.extend(ipset_entries(dump, footprint).into_iter().map(|e| format!("ipset {e}")));
    lines.extend(super::iptables::rule_lines(&dump.iptables, service));
    lines
}

/// What `dump` holds for `service` (`ns/name`), whose `footprint` the
/// cluster state gives.
pub fn programmed(dump: &IpvsDump, service: &str, footprint: &Footprint) -> Programmed {
    let mut out = Programmed { rules: rule_lines(dump, service, footprint), ..Programmed::default() };
    for (vs, name, kind) in virtual_servers(dump, footprint) {
        let port = out.ports.entry(name).or_default();
        match kind.as_str() {
            "node port" => {
                port.node_ports.insert(vs.address.port());
            }
            _ => {
                port.addresses.insert(format!("{} {}/{} ({kind})", vs.address.ip(), vs.protocol, vs.address.port()));
            }
        }
        port.endpoints.extend(vs.real_servers.iter().map(|(real, _)| real.to_string()));
        port.affinity_seconds = vs.persistent.map(u64::from).or(port.affinity_seconds);
        port.virtual_servers.push(virtual_server_view(vs, &kind));
    }
    let health_check = ipset_entries(dump, footprint).iter().any(|e| e.contains("HEALTH-CHECK"));
    if health_check {
        for port in out.ports.values_mut() {
            port.health_check_node_port = footprint.health_check_node_port;
        }
    }
    out
}

/// `TCP 10.96.10.10:80 rr (cluster IP) -> 10.244.0.11:8080 weight 1, …`.
fn virtual_server_view(vs: &VirtualService, kind: &str) -> String {
    let mut reals = vs.real_servers.clone();
    reals.sort();
    let reals: Vec<String> = reals.iter().map(|(real, weight)| format!("{real} weight {weight}")).collect();
    let reals = if reals.is_empty() { "no real server".to_string() } else { reals.join(", ") };
    format!("{} ({kind}) -> {reals}", virtual_server_text(vs))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use model::{Endpoint, ServicePort, ServicePortName};
    use std::sync::Arc;

    /// shop/web: ClusterIP 10.96.0.10:80, NodePort 30080, LB IP 192.0.2.10,
    /// health-check node port 32000, endpoints 10.244.0.5 (local) and
    /// 10.244.1.5, port 8080; shop/db: ClusterIP 10.96.0.20:5432.
    fn snapshot() -> Snapshot {
        let mut snapshot = Snapshot::default();
        let web = ServicePortName::new("shop", "web", "http", Protocol::Tcp);
        let mut port = ServicePort::cluster_ip(web.clone(), "10.96.0.10".parse().unwrap(), 80);
        port.node_port = Some(30080);
        port.load_balancer_ips = vec!["192.0.2.10".parse().unwrap()];
        port.health_check_node_port = Some(32000);
        snapshot.services.insert(web.clone(), Arc::new(port));
        let endpoints = vec![
            Endpoint::ready("10.244.0.5".parse().unwrap(), 8080, Some("node-a"), true),
            Endpoint::ready("10.244.1.5".parse().unwrap(), 8080, Some("node-b"), false),
        ];
        snapshot.endpoints.insert(web, Arc::new(endpoints));
        let db = ServicePortName::new("shop", "db", "pg", Protocol::Tcp);
        snapshot.services.insert(db.clone(), Arc::new(ServicePort::cluster_ip(db, "10.96.0.20".parse().unwrap(), 5432)));
        snapshot
    }

    const DUMP: &str = "# virtual servers
TCP  10.96.0.10:80 rr persistent 600
  -> 10.244.0.5:8080 Masq 1
  -> 10.244.1.5:8080 Masq 2
TCP  10.96.0.10:81 rr
TCP  10.96.0.20:5432 rr
  -> 10.244.0.9:5432 Masq 1
TCP  192.0.2.10:80 rr
  -> 10.244.0.5:8080 Masq 1
TCP  192.168.0.2:30080 rr
  -> 10.244.0.5:8080 Masq 1
TCP  10.96.0.20:30080 rr
UDP  192.168.0.2:30080 rr
# addresses on the dummy interface
10.96.0.10
10.96.0.20
192.0.2.10
# ipsets
add KUBE-CLUSTER-IP 10.96.0.10,tcp:80
add KUBE-CLUSTER-IP 10.96.0.20,tcp:5432
add KUBE-LOAD-BALANCER 192.0.2.10,tcp:80
add KUBE-LOOP-BACK 10.244.0.5,tcp:8080,10.244.0.5
add KUBE-LOOP-BACK 10.244.0.9,tcp:5432,10.244.0.9
add KUBE-NODE-PORT-TCP 30080
add KUBE-NODE-PORT-UDP 30080
add KUBE-HEALTH-CHECK-NODE-PORT 32000
add KUBE-HEALTH-CHECK-NODE-PORT 32001
# iptables
*nat
:KUBE-SERVICES - [0:0]
COMMIT
";

    #[test]
    fn a_services_part_of_an_ipvs_dump() {
        let dump = IpvsDump::parse(DUMP).unwrap();
        let footprint = Footprint::of(&snapshot(), "shop/web");
        let lines = rule_lines(&dump, "shop/web", &footprint);
        assert_eq!(
            lines,
            [
                "virtual server TCP 10.96.0.10:80 rr persistent 600",
                "real server TCP 10.96.0.10:80 rr persistent 600 -> 10.244.0.5:8080 weight 1",
                "real server TCP 10.96.0.10:80 rr persistent 600 -> 10.244.1.5:8080 weight 2",
                // a port the Service does not have, at its address: someone's
                "virtual server TCP 10.96.0.10:81 rr",
                "virtual server TCP 192.0.2.10:80 rr",
                "real server TCP 192.0.2.10:80 rr -> 10.244.0.5:8080 weight 1",
                "virtual server TCP 192.168.0.2:30080 rr",
                "real server TCP 192.168.0.2:30080 rr -> 10.244.0.5:8080 weight 1",
                "kube-ipvs0 address 10.96.0.10",
                "kube-ipvs0 address 192.0.2.10",
                "ipset KUBE-CLUSTER-IP 10.96.0.10,tcp:80",
                "ipset KUBE-HEALTH-CHECK-NODE-PORT 32000",
                "ipset KUBE-LOAD-BALANCER 192.0.2.10,tcp:80",
                "ipset KUBE-LOOP-BACK 10.244.0.5,tcp:8080,10.244.0.5",
                "ipset KUBE-NODE-PORT-TCP 30080",
            ],
            "not shop/db's virtual servers or members, not a UDP NodePort, not a bound address's port 30080"
        );
        let programmed = programmed(&dump, "shop/web", &footprint);
        let http = &programmed.ports["http"];
        assert_eq!(http.affinity_seconds, Some(600));
        assert_eq!(http.health_check_node_port, Some(32000));
        assert_eq!(http.node_ports, [30080].into());
        assert_eq!(http.endpoints, ["10.244.0.5:8080".to_string(), "10.244.1.5:8080".to_string()].into());
        assert_eq!(
            http.virtual_servers[0],
            "TCP 10.96.0.10:80 rr persistent 600 (cluster IP) -> 10.244.0.5:8080 weight 1, 10.244.1.5:8080 weight 2"
        );
        assert!(programmed.ports.contains_key("tcp/81 (not the Service's)"), "{:?}", programmed.ports.keys());
    }

    #[test]
    fn a_service_the_cluster_state_lacks_owns_nothing() {
        let dump = IpvsDump::parse(DUMP).unwrap();
        let footprint = Footprint::of(&snapshot(), "shop/gone");
        assert!(footprint.is_empty());
        assert_eq!(rule_lines(&dump, "shop/gone", &footprint), Vec::<String>::new());
    }
}
