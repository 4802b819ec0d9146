//! The address plan of a simulated cluster: which nodes, which pods on
//! which node, and the outside client. All addresses live only inside the
//! test's namespaces; they follow the reference corpus (node IPs on
//! 192.168.86.0/24, pods in 10.244.<node>.0/24, client on 172.20.0.0/24).
//! The cluster is dual-stack: every node and the client also have an IPv6
//! address (the same plan under `fd00:`: nodes on fd00:86::/64, pods in
//! fd00:10:244:<node>::/64, client on fd00:172:20::/64); a pod has one when
//! its plan gives it one.

use ipnet::{Ipv4Net, Ipv6Net};
use std::net::{Ipv4Addr, Ipv6Addr};

/// The shared L2 segment the nodes and the client sit on.
pub const WIRE_NET: Ipv4Net = net(Ipv4Addr::new(192, 168, 86, 0), 24);
/// The wire namespace's own address: every node's default gateway. It does
/// not forward, so anything the nodes route there unanswered is lost silently
/// (like a real default route to the internet that nobody answers).
pub const WIRE_GATEWAY: Ipv4Addr = Ipv4Addr::new(192, 168, 86, 1);
/// The client's subnet, on the same wire; nodes reach it on-link.
pub const CLIENT_NET: Ipv4Net = net(Ipv4Addr::new(172, 20, 0, 0), 24);
/// The cluster CIDR (`--cluster-cidr`): every pod CIDR lies inside it.
pub const CLUSTER_CIDR: Ipv4Net = net(Ipv4Addr::new(10, 244, 0, 0), 16);

/// The IPv6 wire, beside [`WIRE_NET`].
pub const WIRE_NET6: Ipv6Net = net6(Ipv6Addr::new(0xfd00, 0x86, 0, 0, 0, 0, 0, 0), 64);
/// The wire namespace's IPv6 address: every node's IPv6 default gateway
/// (not forwarding either).
pub const WIRE_GATEWAY6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x86, 0, 0, 0, 0, 0, 1);
/// The client's IPv6 subnet, on-link for the nodes.
pub const CLIENT_NET6: Ipv6Net = net6(Ipv6Addr::new(0xfd00, 0x172, 0x20, 0, 0, 0, 0, 0), 64);
/// The IPv6 cluster CIDR: every IPv6 pod CIDR lies inside it.
pub const CLUSTER_CIDR6: Ipv6Net = net6(Ipv6Addr::new(0xfd00, 0x10, 0x244, 0, 0, 0, 0, 0), 56);

const fn net(addr: Ipv4Addr, len: u8) -> Ipv4Net {
    Ipv4Net::new_assert(addr, len)
}

const fn net6(addr: Ipv6Addr, len: u8) -> Ipv6Net {
    Ipv6Net::new_assert(addr, len)
}

/// Everything [`super::Cluster::build`] makes.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The nodes, each with its wire IP and pod CIDR.
    pub nodes: Vec<NodePlan>,
    /// The pods, each behind one of the nodes.
    pub pods: Vec<PodPlan>,
    /// The outside client.
    pub client: ClientPlan,
}

impl Plan {
    /// node-a (192.168.86.2 and fd00:86::2, pods 10.244.0.0/24 and
    /// fd00:10:244::/64) and node-b (192.168.86.3 and fd00:86::3, pods
    /// 10.244.1.0/24 and fd00:10:244:1::/64), a client with 172.20.0.10,
    /// 172.20.0.66, fd00:172:20::10 and fd00:172:20::66, and no pods yet.
    pub fn two_nodes() -> Self {
        Self {
            nodes: vec![node_plan("node-a", 2, 0), node_plan("node-b", 3, 1)],
            pods: Vec::new(),
            client: ClientPlan {
                ips: vec![Ipv4Addr::new(172, 20, 0, 10), Ipv4Addr::new(172, 20, 0, 66)],
                ips6: vec![client_ip6(0x10), client_ip6(0x66)],
                routes: Vec::new(),
            },
        }
    }
}

/// Node `name` with wire address `.host` (both families) and pod CIDRs
/// number `pods` (10.244.<pods>.0/24, fd00:10:244:<pods>::/64).
fn node_plan(name: &str, host: u8, pods: u8) -> NodePlan {
    NodePlan {
        name: name.into(),
        ip: Ipv4Addr::new(192, 168, 86, host),
        pod_cidr: net(Ipv4Addr::new(10, 244, pods, 0), 24),
        ip6: Ipv6Addr::new(0xfd00, 0x86, 0, 0, 0, 0, 0, host.into()),
        pod_cidr6: net6(Ipv6Addr::new(0xfd00, 0x10, 0x244, pods.into(), 0, 0, 0, 0), 64),
    }
}

/// The client's IPv6 address ending in `host` (written as hex: `0x10` is
/// `fd00:172:20::10`).
fn client_ip6(host: u16) -> Ipv6Addr {
    Ipv6Addr::new(0xfd00, 0x172, 0x20, 0, 0, 0, 0, host)
}

/// One node: a namespace on the wire, forwarding for its pods.
#[derive(Clone, Debug)]
pub struct NodePlan {
    /// Node name, as in the Node object and `--hostname-override`.
    pub name: String,
    /// InternalIP, on the wire.
    pub ip: Ipv4Addr,
    /// The node's pod CIDR; its first address is the pods' gateway.
    pub pod_cidr: Ipv4Net,
    /// IPv6 InternalIP, on the wire.
    pub ip6: Ipv6Addr,
    /// The node's IPv6 pod CIDR; its first address is the pods' IPv6 gateway.
    pub pod_cidr6: Ipv6Net,
}

impl NodePlan {
    /// The pods' gateway: the first address of the pod CIDR, put (as /32) on
    /// every pod-facing veth of the node. Also the source the node's own
    /// pods see when the node masquerades towards them.
    pub fn gateway(&self) -> Ipv4Addr {
        let base = u32::from(self.pod_cidr.network());
        Ipv4Addr::from(base + 1)
    }

    /// The pods' IPv6 gateway: the first address of the IPv6 pod CIDR
    /// (what the node's own pods see when it masquerades IPv6 towards them).
    pub fn gateway6(&self) -> Ipv6Addr {
        let base = u128::from(self.pod_cidr6.network());
        Ipv6Addr::from(base + 1)
    }
}

/// One pod: its own namespace, one veth to its node, an echo server.
#[derive(Clone, Debug)]
pub struct PodPlan {
    /// Pod name; also the name its echo server answers with.
    pub name: String,
    /// The node it runs on.
    pub node: String,
    /// Its address (inside its node's pod CIDR).
    pub ip: Ipv4Addr,
    /// Its IPv6 address (inside its node's IPv6 pod CIDR), if it has one;
    /// its echo server answers there too.
    pub ip6: Option<Ipv6Addr>,
    /// More source addresses for the pod (e.g. to be many clients at once);
    /// routed to it by its node, not served by its echo server.
    pub extra_ips: Vec<Ipv4Addr>,
    /// TCP ports its echo server listens on.
    pub tcp_ports: Vec<u16>,
    /// UDP ports its echo server listens on.
    pub udp_ports: Vec<u16>,
}

/// The outside client: on the wire, not part of the cluster.
#[derive(Clone, Debug)]
pub struct ClientPlan {
    /// Its addresses in [`CLIENT_NET`]; the first is the default source.
    pub ips: Vec<Ipv4Addr>,
    /// Its addresses in [`CLIENT_NET6`]; the first is the default source.
    pub ips6: Vec<Ipv6Addr>,
    /// Extra routes: destination network -> the node (by name) to send it to
    /// (LoadBalancer ingress IPs, externalIPs).
    pub routes: Vec<(Ipv4Net, String)>,
}
