//! The table of flow cases: each a name, what it checks, and its flows.
//! Addresses and pods are those of `cluster.yaml` / `scenario.rs`.

use super::flow::{Expect::Dropped, Expect::Known, Expect::Refused, Expect::Reset, Flow, From, Source, reach, tcp, udp};
use super::scenario::Mode;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;
use super::scenario::addr::{CLIENT_IN, CLIENT_OUT, CLIENT6, GW_A, GW_A6, NODE_A, NODE_A6, NODE_B, NODE_B6, at, at6, on};

/// A named group of flows.
pub struct FlowCase {
    /// Short name, printed on every line of its output.
    pub name: &'static str,
    /// What it checks (one line, for the README table).
    pub checks: &'static str,
    /// Its flows.
    pub flows: Vec<Flow>,
}

/// Known issue (IPVS mode): the very first hairpin connection on a node is
/// never answered (its SYN retransmissions neither); every later one is.
/// Root cause open (kernel IPVS + conntrack on the first hairpin flow, or
/// our rules); seen in the VM on every run.
const FIRST_HAIRPIN: &str = "IPVS mode: the first hairpin connection on a node gets no answer";

/// a1 -> its own service at `dst`, landing on itself with the source
/// `gateway` (node-a's pod gateway of the family); in IPVS mode a first
/// connection, only reported (see [`FIRST_HAIRPIN`]), goes before the
/// judged attempts.
fn hairpin(mode: Mode, dst: SocketAddr, gateway: IpAddr) -> Vec<Flow> {
    use From::Pod;
    let flow = tcp(Pod("a1"), dst, reach(&["a1"], 8080, Source::Is(gateway)));
    match mode {
        Mode::Iptables | Mode::Nftables | Mode::Userspace => vec![flow],
        Mode::Ipvs => vec![tcp(Pod("a1"), dst, Known(FIRST_HAIRPIN)).waiting(Duration::from_millis(2500)), flow],
    }
}

fn case(name: &'static str, checks: &'static str, flows: Vec<Flow>) -> FlowCase {
    FlowCase { name, checks, flows }
}

/// Every flow case, in the order they run, with `mode`'s expectations.
pub fn flow_cases(mode: Mode) -> Vec<FlowCase> {
    use From::{Client, Node, Pod};
    use Source::{Kept, MasqBy};
    // Attempts that make "only the local endpoint is used" meaningful: with
    // the policy ignored (2 endpoints), all 25 on the local one has chance
    // 2^-25 = 3e-8.
    const ONLY_LOCAL: usize = 25;
    // Two endpoints out of three: with the hints ignored, all 45 on those
    // two has chance (2/3)^45 = 1.2e-8; missing one of them, 2^-44.
    const TWO_OF_THREE: usize = 45;
    // internalTrafficPolicy Local without a local endpoint: iptables and
    // nftables mode DROP; upstream's IPVS mode keeps the virtual server with no real
    // server, and the kernel's IPVS answers ICMP port-unreachable;
    // userspace mode's proxy port without endpoints resets the connection.
    let no_local_internal = match mode {
        Mode::Iptables | Mode::Nftables => Dropped,
        Mode::Ipvs => Refused,
        Mode::Userspace => Reset,
    };
    let mut cases = vec![
        case(
            "clusterip",
            "pod -> ClusterIP: endpoint on the same / other node, with and without port remap; the endpoint sees the client pod's IP",
            vec![
                tcp(Pod("ca"), at([10, 96, 10, 11], 80), reach(&["a1"], 8080, Kept)),
                tcp(Pod("ca"), at([10, 96, 10, 12], 8080), reach(&["a1"], 8080, Kept)),
                tcp(Pod("ca"), at([10, 96, 10, 13], 80), reach(&["b1"], 8080, Kept)),
                tcp(Pod("ca"), at([10, 96, 10, 14], 8080), reach(&["b1"], 8080, Kept)),
                tcp(Pod("cb"), at([10, 96, 10, 11], 80), reach(&["a1"], 8080, Kept)),
                tcp(Pod("cb"), at([10, 96, 10, 13], 80), reach(&["b1"], 8080, Kept)),
            ],
        ),
        case(
            "hairpin",
            "a pod reaching its own service lands on itself, masqueraded to its node's pod gateway",
            hairpin(mode, at([10, 96, 10, 11], 80), GW_A),
        ),
        case(
            "clusterip-from-node",
            "node -> ClusterIP reaches every endpoint on both nodes, masqueraded",
            vec![tcp(Node("node-a"), at([10, 96, 10, 10], 80), reach(&["a1", "a2", "b1", "b2"], 8080, MasqBy("node-a")))],
        ),
        case(
            "nodeport-cluster",
            "NodePort, externalTrafficPolicy Cluster: client, pod and node -> own and other node reach every endpoint, masqueraded by the node hit",
            vec![
                tcp(Client(CLIENT_IN), on(NODE_A, 30080), reach(&["a1", "b1"], 8080, MasqBy("node-a"))),
                tcp(Client(CLIENT_IN), on(NODE_B, 30080), reach(&["a1", "b1"], 8080, MasqBy("node-b"))),
                tcp(Pod("ca"), on(NODE_A, 30080), reach(&["a1", "b1"], 8080, MasqBy("node-a"))),
                tcp(Pod("ca"), on(NODE_B, 30080), reach(&["a1", "b1"], 8080, MasqBy("node-b"))),
                tcp(Node("node-a"), on(NODE_A, 30080), reach(&["a1", "b1"], 8080, MasqBy("node-a"))),
                tcp(Node("node-a"), on(NODE_B, 30080), reach(&["a1", "b1"], 8080, MasqBy("node-b"))),
            ],
        ),
        case(
            "nodeport-local",
            "NodePort, externalTrafficPolicy Local (endpoint on node-a only): client IP preserved; node-b drops outside traffic; pods and nodes still reach it",
            vec![
                tcp(Client(CLIENT_IN), on(NODE_A, 30040), reach(&["a2"], 8080, Kept)),
                tcp(Client(CLIENT_IN), on(NODE_B, 30040), Dropped),
                tcp(Pod("ca"), on(NODE_A, 30040), reach(&["a2"], 8080, Kept)),
                tcp(Pod("cb"), on(NODE_A, 30040), reach(&["a2"], 8080, Kept)),
                tcp(Pod("cb"), on(NODE_B, 30040), reach(&["a2"], 8080, Kept)),
                tcp(Node("node-a"), on(NODE_A, 30040), reach(&["a2"], 8080, MasqBy("node-a"))),
                tcp(Node("node-b"), on(NODE_B, 30040), reach(&["a2"], 8080, MasqBy("node-b"))),
            ],
        ),
        case(
            "loadbalancer",
            "LB ingress IP from the client; loadBalancerSourceRanges admit 172.20.0.10 and drop 172.20.0.66 (its NodePort stays open); ETP Local LB keeps the client IP",
            vec![
                tcp(Client(CLIENT_IN), at([192, 0, 2, 10], 443), reach(&["a1", "b1"], 8443, MasqBy("node-a"))),
                tcp(Client(CLIENT_OUT), at([192, 0, 2, 10], 443), Dropped),
                tcp(Client(CLIENT_OUT), on(NODE_A, 30443), reach(&["a1", "b1"], 8443, MasqBy("node-a"))),
                tcp(Client(CLIENT_IN), at([192, 0, 2, 20], 80), reach(&["a2"], 8080, Kept)),
            ],
        ),
        case(
            "external-ip",
            "externalIPs: the client reaches the service on 192.0.2.50:8000 (endpoint on node-b), masqueraded",
            vec![tcp(Client(CLIENT_IN), at([192, 0, 2, 50], 8000), reach(&["b1"], 8080, MasqBy("node-a")))],
        ),
        case(
            "no-endpoints",
            "a service without endpoints is refused at once (REJECT), on its ClusterIP and its NodePort, from pod, node and client",
            vec![
                tcp(Pod("ca"), at([10, 96, 10, 90], 80), Refused),
                tcp(Node("node-a"), at([10, 96, 10, 90], 80), Refused),
                tcp(Client(CLIENT_IN), on(NODE_A, 30090), Refused),
                tcp(Client(CLIENT_IN), on(NODE_B, 30090), Refused),
            ],
        ),
        case(
            "internal-local",
            "internalTrafficPolicy Local: a pod only reaches endpoints on its own node; none there -> dropped (IPVS: refused)",
            vec![
                tcp(Pod("ca"), at([10, 96, 10, 110], 80), reach(&["a1"], 8080, Kept)).times(ONLY_LOCAL),
                tcp(Pod("cb"), at([10, 96, 10, 110], 80), reach(&["b1"], 8080, Kept)).times(ONLY_LOCAL),
                tcp(Pod("ca"), at([10, 96, 10, 111], 80), no_local_internal),
                tcp(Pod("cb"), at([10, 96, 10, 111], 80), reach(&["b1"], 8080, Kept)),
            ],
        ),
        case(
            "udp-dns",
            "DNS-like service: 53/UDP and 53/TCP -> 5353 on both nodes, from pods (source kept) and a node",
            vec![
                udp(Pod("ca"), at([10, 96, 10, 120], 53), reach(&["a1", "b2"], 5353, Kept)),
                udp(Pod("cb"), at([10, 96, 10, 120], 53), reach(&["a1", "b2"], 5353, Kept)),
                tcp(Pod("ca"), at([10, 96, 10, 120], 53), reach(&["a1", "b2"], 5353, Kept)),
                udp(Node("node-a"), at([10, 96, 10, 120], 53), reach(&["a1", "b2"], 5353, MasqBy("node-a"))),
            ],
        ),
        case(
            "topology-zone",
            "zone hints: a pod (and a node) reaches only the endpoints hinted for its node's zone, on either node; internalTrafficPolicy Local wins over hints",
            vec![
                tcp(Pod("ca"), at([10, 96, 10, 130], 80), reach(&["a1", "b1"], 8080, Kept)),
                tcp(Pod("cb"), at([10, 96, 10, 130], 80), reach(&["a2", "b2"], 8080, Kept)),
                tcp(Node("node-a"), at([10, 96, 10, 130], 80), reach(&["a1", "b1"], 8080, MasqBy("node-a"))),
                tcp(Pod("ca"), at([10, 96, 10, 134], 80), reach(&["a1"], 8080, Kept)).times(ONLY_LOCAL),
                tcp(Pod("cb"), at([10, 96, 10, 134], 80), reach(&["b1"], 8080, Kept)).times(ONLY_LOCAL),
            ],
        ),
        case(
            "topology-node",
            "PreferSameNode (node hints): a pod reaches only the endpoints hinted for its own node",
            vec![
                tcp(Pod("ca"), at([10, 96, 10, 131], 80), reach(&["a1"], 8080, Kept)).times(ONLY_LOCAL),
                tcp(Pod("cb"), at([10, 96, 10, 131], 80), reach(&["b1", "b2"], 8080, Kept)).times(TWO_OF_THREE),
            ],
        ),
        case(
            "topology-fallback",
            "no endpoint hinted for the node's zone, or one ready endpoint without hints: every endpoint is used",
            vec![
                tcp(Pod("ca"), at([10, 96, 10, 132], 80), reach(&["a1", "a2", "b1"], 8080, Kept)),
                tcp(Pod("cb"), at([10, 96, 10, 132], 80), reach(&["a1", "b1"], 8080, Kept)).times(TWO_OF_THREE),
                tcp(Pod("ca"), at([10, 96, 10, 133], 80), reach(&["a1", "b1", "b2"], 8080, Kept)),
                tcp(Pod("cb"), at([10, 96, 10, 133], 80), reach(&["a1", "b1", "b2"], 8080, Kept)),
            ],
        ),
        case(
            "multi-port",
            "one service, two ports: 80 -> 8080 and 443 -> 8443, each to both endpoints",
            vec![
                tcp(Pod("ca"), at([10, 96, 10, 121], 80), reach(&["a2", "b2"], 8080, Kept)),
                tcp(Pod("ca"), at([10, 96, 10, 121], 443), reach(&["a2", "b2"], 8443, Kept)),
            ],
        ),
    ];
    cases.extend(dual_stack_cases(mode));
    if mode == Mode::Userspace {
        cases.iter_mut().flat_map(|c| c.flows.iter_mut()).for_each(userspace_refusal);
        cases.push(localhost_node_port());
    }
    cases
}

/// Userspace mode only: the node itself reaches `127.0.0.1:<nodePort>`
/// (the DNAT to the proxy port happens in OUTPUT, on `lo`), with the
/// namespace's `route_localnet` at its default 0.
fn localhost_node_port() -> FlowCase {
    use From::Node;
    case(
        "localhost-nodeport",
        "userspace mode: node -> 127.0.0.1:<nodePort> reaches both endpoints without route_localnet",
        vec![tcp(Node("node-a"), at([127, 0, 0, 1], 30080), reach(&["a1", "b1"], 8080, Source::MasqBy("node-a")))],
    )
}

/// Userspace mode: a service port without endpoints (for the traffic at
/// hand) is a proxy port without endpoints, which accepts the connection
/// and resets it at once: where the other modes REJECT, and for a NodePort
/// with externalTrafficPolicy Local on a node without a local endpoint,
/// which they drop. The endpoint's view of the source is the proxying node
/// in every flow (see `flow::set_proxy_is_client`): client IP
/// preservation cannot be had.
fn userspace_refusal(flow: &mut Flow) {
    if matches!(flow.expect, Refused) || (matches!(flow.expect, Dropped) && flow.dst.port() >= 30000) {
        flow.expect = Reset;
    }
}

/// The dual-stack cases (`dualstack.yaml`): IPv6 ClusterIP, NodePort with
/// both external traffic policies and hairpin, and the IPv4 side of the
/// dual-stack services beside them.
fn dual_stack_cases(mode: Mode) -> Vec<FlowCase> {
    use From::{Client, Node, Pod};
    use Source::{Kept, MasqBy};
    vec![
        case(
            "dualstack-clusterip",
            "IPv6: pod -> ClusterIP of a dual-stack and of a single-stack IPv6 service, endpoint on the same / other node; the endpoint sees the pod's IPv6 address; the dual-stack service's IPv4 ClusterIP works beside it",
            vec![
                tcp(Pod("ca"), at6("fd00:10:96::20:11", 80), reach(&["a1"], 8080, Kept)),
                tcp(Pod("cb"), at6("fd00:10:96::20:11", 80), reach(&["a1"], 8080, Kept)),
                tcp(Pod("ca"), at6("fd00:10:96::20:13", 8080), reach(&["b1"], 8080, Kept)),
                tcp(Pod("cb"), at6("fd00:10:96::20:13", 8080), reach(&["b1"], 8080, Kept)),
                tcp(Pod("ca"), at([10, 96, 20, 11], 80), reach(&["a1"], 8080, Kept)),
            ],
        ),
        case(
            "dualstack-hairpin",
            "IPv6: a pod reaching its own service lands on itself, masqueraded to its node's IPv6 pod gateway",
            hairpin(mode, at6("fd00:10:96::20:11", 80), GW_A6),
        ),
        case(
            "dualstack-nodeport-cluster",
            "IPv6 NodePort, externalTrafficPolicy Cluster: client, pod and node -> own and other node's IPv6 reach both endpoints, masqueraded by the node hit; the same NodePort on IPv4",
            vec![
                tcp(Client(CLIENT6), on(NODE_A6, 30280), reach(&["a1", "b1"], 8080, MasqBy("node-a"))),
                tcp(Client(CLIENT6), on(NODE_B6, 30280), reach(&["a1", "b1"], 8080, MasqBy("node-b"))),
                tcp(Pod("ca"), on(NODE_B6, 30280), reach(&["a1", "b1"], 8080, MasqBy("node-b"))),
                tcp(Node("node-a"), on(NODE_A6, 30280), reach(&["a1", "b1"], 8080, MasqBy("node-a"))),
                tcp(Client(CLIENT_IN), on(NODE_B, 30280), reach(&["a1", "b1"], 8080, MasqBy("node-b"))),
            ],
        ),
        case(
            "dualstack-nodeport-local",
            "IPv6 NodePort, externalTrafficPolicy Local (endpoint on node-a only): the client's IPv6 address kept; node-b drops outside traffic; pods and nodes still reach it",
            vec![
                tcp(Client(CLIENT6), on(NODE_A6, 30240), reach(&["a2"], 8080, Kept)),
                tcp(Client(CLIENT6), on(NODE_B6, 30240), Dropped),
                tcp(Pod("cb"), on(NODE_B6, 30240), reach(&["a2"], 8080, Kept)),
                tcp(Node("node-b"), on(NODE_B6, 30240), reach(&["a2"], 8080, MasqBy("node-b"))),
                tcp(Client(CLIENT_IN), on(NODE_A, 30240), reach(&["a2"], 8080, Kept)),
            ],
        ),
    ]
}
