//! What the tracer must know about the node beyond the rules: its own
//! addresses (for `-m addrtype` and the routing decision), the pod ranges,
//! routes (for `-o`) and the content of ipsets (for `-m set`).

use super::ipset::IpSets;
use super::ipvs::VirtualService;
use ipnet::IpNet;
use std::net::IpAddr;

/// A route: packets to `destination` leave through `interface`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// Destination prefix.
    pub destination: IpNet,
    /// Output interface name.
    pub interface: String,
}

/// The node a packet is traced through.
#[derive(Debug, Clone, Default)]
pub struct TraceContext {
    /// The node's local addresses and ranges (`--src-type/--dst-type
    /// LOCAL`, and whether a packet is delivered to the node or forwarded).
    pub local: Vec<IpNet>,
    /// Pod address ranges. The iptables tracer itself does not need them
    /// (the rules carry the cluster CIDR); they describe the topology for
    /// flow tables and for backends that classify sources themselves.
    pub pod_cidrs: Vec<IpNet>,
    /// Routes, longest prefix wins, for `-o`. Local destinations leave
    /// through `lo`; a destination no route covers has an unknown output
    /// interface and both answers of every `-o` match are explored.
    pub routes: Vec<Route>,
    /// ipset contents for `-m set --match-set` (IPVS mode).
    pub ipsets: IpSets,
    /// IPVS virtual servers (IPVS mode; empty otherwise).
    pub virtual_servers: Vec<VirtualService>,
}

impl TraceContext {
    /// A node with these addresses; 127.0.0.0/8 and ::1 are always local.
    pub fn new(addresses: impl IntoIterator<Item = IpAddr>) -> Self {
        let mut local: Vec<IpNet> = addresses.into_iter().map(IpNet::from).collect();
        for loopback in ["127.0.0.0/8", "::1/128"] {
            if let Ok(net) = loopback.parse::<IpNet>()
                && !local.contains(&net)
            {
                local.push(net);
            }
        }
        Self { local, ..Self::default() }
    }

    /// Adds a pod range.
    pub fn with_pod_cidr(mut self, cidr: IpNet) -> Self {
        self.pod_cidrs.push(cidr);
        self
    }

    /// Adds a route for `-o` matches.
    pub fn with_route(mut self, destination: IpNet, interface: &str) -> Self {
        self.routes.push(Route { destination, interface: interface.to_string() });
        self
    }

    /// Replaces the ipset contents.
    pub fn with_ipsets(mut self, ipsets: IpSets) -> Self {
        self.ipsets = ipsets;
        self
    }

    /// Adds IPVS virtual servers.
    pub fn with_virtual_servers(mut self, servers: Vec<VirtualService>) -> Self {
        self.virtual_servers = servers;
        self
    }

    /// The virtual server a packet to `destination` over `protocol` hits.
    pub fn virtual_server(&self, protocol: super::Protocol, destination: std::net::SocketAddr) -> Option<&VirtualService> {
        self.virtual_servers.iter().find(|vs| vs.protocol == protocol && vs.address == destination)
    }

    /// Is `ip` one of the node's own addresses (`addrtype LOCAL`)?
    pub fn is_local(&self, ip: IpAddr) -> bool {
        self.local.iter().any(|net| net.contains(&ip))
    }

    /// Is `ip` in a pod range?
    pub fn is_pod(&self, ip: IpAddr) -> bool {
        self.pod_cidrs.iter().any(|net| net.contains(&ip))
    }

    /// The interface a packet to `ip` leaves through: `lo` for local
    /// addresses, else the longest matching route, else `None` (unknown).
    pub fn output_interface(&self, ip: IpAddr) -> Option<&str> {
        if self.is_local(ip) {
            return Some("lo");
        }
        self.routes
            .iter()
            .filter(|route| route.destination.contains(&ip))
            .max_by_key(|route| route.destination.prefix_len())
            .map(|route| route.interface.as_str())
    }
}
