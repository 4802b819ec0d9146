//! The reference corpus' node-a built for real in network namespaces, as
//! the header of `flows.txt` describes it, so its flows can be replayed
//! against a proxy running in node-a:
//!
//! ```text
//!   external netns                     node-a netns (the proxy runs here)
//!   eth0 172.20.0.10/24, .66/24  ──── ext0 172.20.0.1/24
//!   routes: 192.168.86.2/32,           eth0 192.168.86.2/24 (InternalIP)
//!   10.96.0.0/12, 192.0.2.0/24         default via 172.20.0.10 src 192.168.86.2
//!   via 172.20.0.1; no forwarding      ip_forward=1, rp_filter=0; eth0 is a veth
//!                                      to a namespace that only swallows packets
//!                                        │ p0, p1 … one veth per pod: 10.244.0.1/32,
//!                                        │ a /32 route to the pod's address
//!   pod netns: <ip>/32, default via 10.244.0.1; one per endpoint address
//!   (node-b's and node-c's too: no overlay) and the client pod 10.244.0.200
//! ```
//!
//! Every endpoint pod runs an [`EchoServer`] named after its address on the
//! ports it serves, so an answer says which endpoint:port a connection
//! reached and which source it saw. The external namespace does not
//! forward: what node-a routes to it unanswered is lost (a time-out).
//! A witness table in node-a ([`ReferenceNode::watch`]) counts each
//! flow's packets entering node-a and getting through it, so a DROP is
//! known to happen in node-a, not somewhere beyond it.
//! Every namespace is a [`Netns`]: unique, deleted on drop (also when a
//! test panics), echo servers stopped first.

mod pod;
mod trace;
mod witness;

pub use trace::{Paths, TABLE as TRACE_TABLE, Tracer};
pub use witness::{Passage, TABLE as WITNESS_TABLE};

use crate::echo::EchoServer;
use crate::flows::{CLIENT_POD, EXTERNAL_CLIENTS, EXTERNAL_ROUTES, FlowCase, FlowSource, NODE_A_EXT0, NODE_A_IP};
use crate::netns::Netns;
use anyhow::{Context, Result, bail};
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr};

/// An endpoint address and the ports it answers on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Responder {
    /// The endpoint's address (a pod, or the kube-apiserver's).
    pub ip: Ipv4Addr,
    /// TCP ports.
    pub tcp_ports: BTreeSet<u16>,
    /// UDP ports.
    pub udp_ports: BTreeSet<u16>,
}

/// An endpoint pod: its namespace and the echo server in it (stopped
/// first).
#[derive(Debug)]
struct EndpointPod {
    _echo: EchoServer,
    ip: Ipv4Addr,
    ns: Netns,
}

/// The reference node and everything around it. Fields drop in order:
/// endpoint pods, the client pod, the external clients, node-a, its LAN.
#[derive(Debug)]
pub struct ReferenceNode {
    bind_node_source: bool,
    endpoints: Vec<EndpointPod>,
    client_pod: Netns,
    external: Netns,
    node: Netns,
    _lan: Netns,
}

impl ReferenceNode {
    /// Builds node-a, the external clients, the client pod and one pod
    /// per responder, each answering on its ports.
    pub fn build(responders: &[Responder]) -> Result<Self> {
        let (node, lan) = node_a().context("node-a")?;
        let external = external(&node).context("external clients")?;
        let mut veths = 0..;
        let mut next_veth = || format!("p{}", veths.next().unwrap_or_default());
        let client_pod = Netns::new("fa-cpod")?;
        pod::attach(&node, &client_pod, CLIENT_POD, &next_veth()).context("client pod")?;
        let mut endpoints = Vec::new();
        for r in responders {
            let ns = Netns::new("fa-ep")?;
            pod::attach(&node, &ns, r.ip, &next_veth()).with_context(|| format!("endpoint pod {}", r.ip))?;
            let tcp: Vec<u16> = r.tcp_ports.iter().copied().collect();
            let udp: Vec<u16> = r.udp_ports.iter().copied().collect();
            let echo = EchoServer::start(&ns, &r.ip.to_string(), IpAddr::V4(r.ip), &tcp, &udp)?;
            endpoints.push(EndpointPod { _echo: echo, ip: r.ip, ns });
        }
        Ok(Self { bind_node_source: false, endpoints, client_pod, external, node, _lan: lan })
    }

    /// From now on node-a's own flows bind the source a flow names
    /// ([`FlowCase::source`]: the InternalIP, 127.0.0.1 to a loopback
    /// address) instead of letting the kernel pick one by route. In IPVS
    /// mode the route to a service address bound on `kube-ipvs0` picks
    /// that address itself as the source.
    pub fn bind_node_source(&mut self) {
        self.bind_node_source = true;
    }

    /// node-a's namespace, where the proxy runs.
    pub fn node(&self) -> &Netns {
        &self.node
    }

    /// The external clients' namespace.
    pub fn external(&self) -> &Netns {
        &self.external
    }

    /// The client pod's namespace.
    pub fn client_pod(&self) -> &Netns {
        &self.client_pod
    }

    /// The namespace of the endpoint pod with address `ip`.
    pub fn endpoint(&self, ip: Ipv4Addr) -> Option<&Netns> {
        self.endpoints.iter().find(|e| e.ip == ip).map(|e| &e.ns)
    }

    /// Starts counting, in a table of the test's own in node-a, the
    /// packets of each of `flows` entering node-a and getting through it
    /// (see [`Passage`]).
    pub fn watch(&self, flows: &[FlowCase]) -> Result<()> {
        witness::install(&self.node, flows)
    }

    /// What [`ReferenceNode::watch`] counted so far, by flow id.
    pub fn passages(&self) -> Result<BTreeMap<String, Passage>> {
        witness::read(&self.node)
    }

    /// Starts tracing `flows` through table `kube-proxy` in node-a, as
    /// upstream's run did (see [`Tracer`]).
    pub fn trace(&self, flows: &[FlowCase]) -> Result<Tracer> {
        Tracer::start(&self.node, flows)
    }

    /// Where a flow from `from` is sent: the namespace, and the source
    /// address to bind (`None` for node-a itself, which picks its source
    /// by route as a local process does).
    pub fn client(&self, from: FlowSource) -> Result<(&Netns, Option<IpAddr>)> {
        match from {
            FlowSource::Node => Ok((&self.node, None)),
            FlowSource::Pod(ip) if ip == IpAddr::V4(CLIENT_POD) => Ok((&self.client_pod, Some(ip))),
            FlowSource::External(ip) if EXTERNAL_CLIENTS.iter().any(|c| IpAddr::V4(*c) == ip) => {
                Ok((&self.external, Some(ip)))
            }
            FlowSource::Endpoint(IpAddr::V4(ip)) => {
                let ns = self.endpoint(ip).with_context(|| format!("no endpoint pod {ip}"))?;
                Ok((ns, Some(IpAddr::V4(ip))))
            }
            other => bail!("no client {other:?} in the reference topology"),
        }
    }

    /// Where `flow` is sent from: [`ReferenceNode::client`], with node-a's
    /// source bound when [`ReferenceNode::bind_node_source`] asked so.
    pub fn client_for(&self, flow: &FlowCase) -> Result<(&Netns, Option<IpAddr>)> {
        match flow.from {
            FlowSource::Node if self.bind_node_source => Ok((&self.node, Some(flow.source()))),
            from => self.client(from),
        }
    }
}

/// node-a: forwarding, its InternalIP on `eth0`, a veth to a namespace
/// without addresses that swallows whatever node-a sends to its LAN (the
/// kernel here may lack the dummy link type).
fn node_a() -> Result<(Netns, Netns)> {
    let node = Netns::new("fa-node")?;
    let lan = Netns::new("fa-lan")?;
    node.route_like_a_node()?;
    node.ip(&["link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", lan.name()])?;
    node.ip(&["addr", "add", &format!("{NODE_A_IP}/24"), "dev", "eth0"])?;
    node.ip(&["link", "set", "eth0", "up"])?;
    lan.ip(&["link", "set", "eth0", "up"])?;
    Ok((node, lan))
}

/// The external clients behind node-a's `ext0`, and node-a's default
/// route through them.
fn external(node: &Netns) -> Result<Netns> {
    let ext = Netns::new("fa-ext")?;
    ext.exec("sysctl", &["-qw", "net.ipv4.ip_forward=0"])?;
    node.ip(&["link", "add", "ext0", "type", "veth", "peer", "name", "eth0", "netns", ext.name()])?;
    node.ip(&["addr", "add", &format!("{NODE_A_EXT0}/24"), "dev", "ext0"])?;
    node.ip(&["link", "set", "ext0", "up"])?;
    for ip in EXTERNAL_CLIENTS {
        ext.ip(&["addr", "add", &format!("{ip}/24"), "dev", "eth0"])?;
    }
    ext.ip(&["link", "set", "eth0", "up"])?;
    let primary = EXTERNAL_CLIENTS[0].to_string();
    for net in EXTERNAL_ROUTES {
        ext.ip(&["route", "add", &net.to_string(), "via", &NODE_A_EXT0.to_string(), "src", &primary])?;
    }
    node.ip(&["route", "add", "default", "via", &primary, "dev", "ext0", "src", &NODE_A_IP.to_string()])?;
    Ok(ext)
}
