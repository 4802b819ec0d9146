//! A pod: its own namespace behind one veth to its node, addresses as /32
//! (and /128) with a default route via the node's pod gateway of each
//! family, and an echo server on each of its primary addresses.

use super::node::Node;
use super::plan::PodPlan;
use crate::echo::EchoServer;
use crate::netns::Netns;
use anyhow::Result;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A pod of the simulated cluster. Its echo servers stop before its
/// namespace goes (field order).
#[derive(Debug)]
pub struct Pod {
    /// Held for its `Drop`: the servers stop with the pod.
    _echo: Vec<EchoServer>,
    plan: PodPlan,
    ns: Netns,
}

impl Pod {
    /// Creates the pod behind `node` and starts its echo server on its
    /// primary address (and on its IPv6 address, if it has one).
    pub fn new(plan: &PodPlan, node: &Node) -> Result<Self> {
        let ns = Netns::new(&plan.name)?;
        ns.skip_ipv6_dad()?;
        let mut ips: Vec<IpAddr> = std::iter::once(plan.ip).chain(plan.extra_ips.iter().copied()).map(IpAddr::V4).collect();
        ips.extend(plan.ip6.map(IpAddr::V6));
        node.attach(&ns, &ips)?;
        let mut commands: Vec<String> = ips
            .iter()
            .map(|ip| match ip {
                IpAddr::V4(_) => format!("addr add {ip}/32 dev eth0"),
                IpAddr::V6(_) => format!("addr add {ip}/128 dev eth0 nodad"),
            })
            .collect();
        commands.push("link set eth0 up".to_string());
        commands.extend(routes_via(IpAddr::V4(node.gateway()), IpAddr::V4(plan.ip)));
        if let Some(ip6) = plan.ip6 {
            commands.extend(routes_via(IpAddr::V6(node.gateway6()), IpAddr::V6(ip6)));
        }
        ns.ip_batch(&commands)?;
        let mut echo = vec![EchoServer::start(&ns, &plan.name, IpAddr::V4(plan.ip), &plan.tcp_ports, &plan.udp_ports)?];
        if let Some(ip6) = plan.ip6 {
            echo.push(EchoServer::start(&ns, &plan.name, IpAddr::V6(ip6), &plan.tcp_ports, &plan.udp_ports)?);
        }
        Ok(Self { _echo: echo, plan: plan.clone(), ns })
    }

    /// Pod name (what its echo servers answer with).
    pub fn name(&self) -> &str {
        &self.plan.name
    }

    /// The node it runs on.
    pub fn node(&self) -> &str {
        &self.plan.node
    }

    /// Its primary address.
    pub fn ip(&self) -> Ipv4Addr {
        self.plan.ip
    }

    /// Its IPv6 address, if it has one.
    pub fn ip6(&self) -> Option<Ipv6Addr> {
        self.plan.ip6
    }

    /// Its extra source addresses.
    pub fn extra_ips(&self) -> &[Ipv4Addr] {
        &self.plan.extra_ips
    }

    /// The pod's namespace (connect from the pod).
    pub fn ns(&self) -> &Netns {
        &self.ns
    }
}

/// Routes the pod's `gateway` on-link and everything else of its family
/// via it, from `src`.
fn routes_via(gateway: IpAddr, src: IpAddr) -> [String; 2] {
    [format!("route add {gateway} dev eth0 scope link"), format!("route add default via {gateway} dev eth0 src {src}")]
}
