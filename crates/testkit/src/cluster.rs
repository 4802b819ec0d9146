//! A simulated cluster of network namespaces for end-to-end tests: two (or
//! more) nodes on a shared wire, pods behind each node, an outside client,
//! and kube-proxy-rs running in each node namespace.
//!
//! ```text
//!                 wire netns: bridge br0 + 192.168.86.1/24 (the nodes'
//!                 default gateway; does not forward, so it swallows
//!                 whatever nobody claims)
//!        ┌──────────────────────────┼─────────────────────────────┐
//!   eth0 192.168.86.2        eth0 192.168.86.3          eth0 172.20.0.10, .66
//!  ┌─────┴─────────┐        ┌─────┴─────────┐          ┌─────┴──────┐
//!  │ node-a        │        │ node-b        │          │ client     │
//!  │ kube-proxy-rs │        │ kube-proxy-rs │          │ (outside)  │
//!  │ 10.244.1.0/24 │        │ 10.244.0.0/24 │          └────────────┘
//!  │  via node-b   │        │  via node-a   │      192.168.86.0/24 on-link;
//!  └──┬────────┬───┘        └──┬────────┬───┘      plan routes (LB IPs,
//!     p0       p1              p0       p1         externalIPs) via a node
//!     │        │               │        │
//!    pod      pod             pod      pod         one veth per pod:
//!  10.244.0.x/32             10.244.1.x/32         node side 10.244.N.1/32,
//!  default via 10.244.0.1    default via 10.244.1.1   pod side its /32s
//! ```
//!
//! * Nodes: `ip_forward=1`, `rp_filter=0`, no redirects; the client subnet
//!   on-link on `eth0`; the other nodes' pod CIDRs via those nodes (no
//!   overlay); default route to the wire's address, which drops silently what
//!   nobody claims (so an unmatched service address times out, as behind a
//!   real default route).
//! * Pods (the reference corpus' layout, like a routed CNI): one namespace
//!   per pod, one veth to its node; the pod holds its address as /32 with a
//!   default route via the node's pod gateway (`10.244.<n>.1`), the node holds
//!   that gateway as /32 on every pod veth and a /32 route per pod address.
//!   Each pod runs an [`crate::echo::EchoServer`] named after it.
//! * Client: on the wire, outside the cluster CIDR; reaches node IPs on-link
//!   and sends the plan's extra networks (LoadBalancer ingress IPs,
//!   externalIPs) to the node the plan names.
//! * Dual-stack: the same again in IPv6 (see [`Plan::two_nodes`]): nodes
//!   on fd00:86::/64 (the wire's fd00:86::1 their default gateway), pod
//!   CIDRs fd00:10:244:<n>::/64 routed between nodes, pod gateways
//!   `fd00:10:244:<n>::1` as /128, client on fd00:172:20::/64; IPv6
//!   forwarding on in nodes and off in the wire, duplicate address detection
//!   off everywhere (addresses usable at once). A pod gets an IPv6 address,
//!   with its echo server answering there too, when its plan gives one.
//!
//! Every namespace is a [`crate::netns::Netns`]: unique per run, deleted on
//! drop (also when a test panics) and swept at the next run if the test
//! process was killed. Proxies are killed (and echo servers stopped) before
//! the namespaces go; a proxy whose test process dies without cleaning up
//! gets SIGKILL from the kernel (`setpriv --pdeathsig`). Nothing outside the namespaces is touched, except a
//! temporary directory for the manifests file and the proxies' logs.

mod client;
mod node;
mod plan;
mod pod;
mod proxy;
mod rules;
#[cfg(test)]
mod tests;
mod wire;

pub use client::Client;
pub use node::Node;
pub use plan::{
    CLIENT_NET, CLIENT_NET6, CLUSTER_CIDR, CLUSTER_CIDR6, ClientPlan, NodePlan, Plan, PodPlan, WIRE_GATEWAY, WIRE_GATEWAY6, WIRE_NET, WIRE_NET6,
};
pub use pod::Pod;
pub use proxy::Proxy;
pub use rules::dump_rules;

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::{Mutex, MutexGuard};
use wire::Wire;

/// How many lines of a proxy's log a failure message shows.
const LOG_TAIL: usize = 40;

/// The running cluster. Fields drop in order: proxies first, then pods,
/// client, nodes and the wire, then the temporary directory.
#[derive(Debug)]
pub struct Cluster {
    proxies: Mutex<Vec<Proxy>>,
    pods: Vec<Pod>,
    client: Client,
    nodes: Vec<Node>,
    wire: Wire,
    dir: tempfile::TempDir,
}

impl Cluster {
    /// Builds everything in `plan`: wire, nodes (routing each other's pod
    /// CIDRs), client, pods with their echo servers. No proxy runs yet.
    pub fn build(plan: &Plan) -> Result<Self> {
        let dir = tempfile::Builder::new().prefix("kprs-e2e-").tempdir().context("temporary directory")?;
        let wire = Wire::new()?;
        let nodes = plan.nodes.iter().map(|n| Node::new(n, &wire)).collect::<Result<Vec<_>>>()?;
        for node in &nodes {
            for other in nodes.iter().filter(|o| o.name() != node.name()) {
                node.route_pods_of(other)?;
            }
        }
        let client = Client::new(&plan.client, &wire, &nodes)?;
        let pods = plan
            .pods
            .iter()
            .map(|p| {
                let node = nodes.iter().find(|n| n.name() == p.node).with_context(|| format!("pod {} on unknown node {}", p.name, p.node))?;
                Pod::new(p, node).with_context(|| format!("pod {}", p.name))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { proxies: Mutex::new(Vec::new()), pods, client, nodes, wire, dir })
    }

    /// The node called `name`.
    pub fn node(&self, name: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.name() == name)
    }

    /// Every node, in plan order.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The pod called `name`.
    pub fn pod(&self, name: &str) -> Option<&Pod> {
        self.pods.iter().find(|p| p.name() == name)
    }

    /// Every pod, in plan order.
    pub fn pods(&self) -> &[Pod] {
        &self.pods
    }

    /// The outside client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The wire's namespace (for debugging).
    pub fn wire(&self) -> &crate::netns::Netns {
        self.wire.ns()
    }

    /// The manifests file every proxy reads.
    pub fn manifests_path(&self) -> PathBuf {
        self.dir.path().join("manifests.yaml")
    }

    /// Replaces the manifests file atomically (write aside, then rename), so
    /// a proxy polling it never reads half a file.
    pub fn write_manifests(&self, yaml: &str) -> Result<()> {
        let path = self.manifests_path();
        let aside = self.dir.path().join("manifests.yaml.new");
        std::fs::write(&aside, yaml).with_context(|| format!("write {}", aside.display()))?;
        std::fs::rename(&aside, &path).with_context(|| format!("rename to {}", path.display()))?;
        Ok(())
    }

    /// Starts `binary` on every node with the shared manifests file and
    /// `args` (see [`Proxy::start`]).
    pub fn start_proxies(&self, binary: &Path, args: &[String]) -> Result<()> {
        for node in &self.nodes {
            self.start_proxy(node.name(), binary, args)?;
        }
        Ok(())
    }

    /// Starts `binary` on the node called `node` (see [`Proxy::start`]).
    pub fn start_proxy(&self, node: &str, binary: &Path, args: &[String]) -> Result<()> {
        let node = self.node(node).with_context(|| format!("no node {node}"))?;
        let log = self.dir.path().join(format!("{}.log", node.name()));
        let proxy = Proxy::start(node, binary, &self.manifests_path(), args, log)?;
        self.lock_proxies().push(proxy);
        Ok(())
    }

    /// Kills the proxy of `node` (its rules stay in the kernel). Its log is
    /// kept for [`Cluster::diagnostics`].
    pub fn stop_proxy(&self, node: &str) {
        let mut proxies = self.lock_proxies();
        proxies.retain(|p| p.node() != node);
    }

    /// The process id of `node`'s proxy, if one runs there.
    pub fn proxy_pid(&self, node: &str) -> Option<u32> {
        self.lock_proxies().iter().find(|p| p.node() == node).map(Proxy::pid)
    }

    /// The first proxy that has exited, with how it ended.
    pub fn exited_proxy(&self) -> Option<(String, ExitStatus)> {
        self.lock_proxies().iter_mut().find_map(|p| p.exit_status().map(|s| (p.node().to_string(), s)))
    }

    /// Everything needed to understand a failure from a CI log: per node,
    /// its rules ([`dump_rules`]) and the tail of its proxy's log.
    pub fn diagnostics(&self) -> String {
        let mut text = String::new();
        for node in &self.nodes {
            text.push_str(&format!("=== {} ({}) rules ===\n{}", node.name(), node.ip(), dump_rules(node.ns())));
            text.push_str(&format!("=== {} proxy log (last {LOG_TAIL} lines) ===\n{}\n", node.name(), self.log_tail(node.name())));
        }
        text
    }

    /// The last lines of `node`'s proxy log (also after it stopped).
    pub fn log_tail(&self, node: &str) -> String {
        let log = self.dir.path().join(format!("{node}.log"));
        match std::fs::read_to_string(&log) {
            Ok(text) => {
                let lines: Vec<&str> = text.lines().collect();
                lines[lines.len().saturating_sub(LOG_TAIL)..].join("\n")
            }
            Err(e) => format!("(no log: {e})"),
        }
    }

    fn lock_proxies(&self) -> MutexGuard<'_, Vec<Proxy>> {
        self.proxies.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
