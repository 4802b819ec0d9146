//! The address plan of a simulated cluster: which nodes, which pods on
//! which node, and the outside client. All addresses live only inside the
//! test's namespaces; they follow the reference corpus (node IPs on
//! 192.168.86.0/24, pods in 10.244.<node>.0/24, client on 172.20.0.0/24).

use ipnet::Ipv4Net;
use std::net::Ipv4Addr;

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

const fn net(addr: Ipv4Addr, len: u8) -> Ipv4Net {
    Ipv4Net::new_assert(addr, len)
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
    /// node-a (192.168.86.2, pods 10.244.0.0/24) and node-b (192.168.86.3,
    /// pods 10.244.1.0/24), a client with 172.20.0.10 and 172.20.0.66, and
    /// no pods yet.
    pub fn two_nodes() -> Self {
        Self {
            nodes: vec![
                NodePlan { name: "node-a".into(), ip: Ipv4Addr::new(192, 168, 86, 2), pod_cidr: net(Ipv4Addr::new(10, 244, 0, 0), 24) },
                NodePlan { name: "node-b".into(), ip: Ipv4Addr::new(192, 168, 86, 3), pod_cidr: net(Ipv4Addr::new(10, 244, 1, 0), 24) },
            ],
            pods: Vec::new(),
            client: ClientPlan { ips: vec![Ipv4Addr::new(172, 20, 0, 10), Ipv4Addr::new(172, 20, 0, 66)], routes: Vec::new() },
        }
    }
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
}

impl NodePlan {
    /// The pods' gateway: the first address of the pod CIDR, put (as /32) on
    /// every pod-facing veth of the node. Also the source the node's own
    /// pods see when the node masquerades towards them.
    pub fn gateway(&self) -> Ipv4Addr {
        let base = u32::from(self.pod_cidr.network());
        Ipv4Addr::from(base + 1)
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
    /// Extra routes: destination network -> the node (by name) to send it to
    /// (LoadBalancer ingress IPs, externalIPs).
    pub routes: Vec<(Ipv4Net, String)>,
}
