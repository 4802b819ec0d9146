//! A pod: its own namespace behind one veth to its node, addresses as /32
//! with a default route via the node's pod gateway, and an echo server.

use super::node::Node;
use super::plan::PodPlan;
use crate::echo::EchoServer;
use crate::netns::Netns;
use anyhow::Result;
use std::net::{IpAddr, Ipv4Addr};

/// A pod of the simulated cluster. Its echo server stops before its
/// namespace goes (field order).
#[derive(Debug)]
pub struct Pod {
    echo: EchoServer,
    plan: PodPlan,
    ns: Netns,
}

impl Pod {
    /// Creates the pod behind `node` and starts its echo server on its
    /// primary address.
    pub fn new(plan: &PodPlan, node: &Node) -> Result<Self> {
        let ns = Netns::new(&plan.name)?;
        let ips: Vec<Ipv4Addr> = std::iter::once(plan.ip).chain(plan.extra_ips.iter().copied()).collect();
        node.attach(&ns, &ips)?;
        for ip in &ips {
            ns.ip(&["addr", "add", &format!("{ip}/32"), "dev", "eth0"])?;
        }
        let gateway = node.gateway().to_string();
        ns.ip(&["link", "set", "eth0", "up"])?;
        ns.ip(&["route", "add", &gateway, "dev", "eth0", "scope", "link"])?;
        ns.ip(&["route", "add", "default", "via", &gateway, "dev", "eth0", "src", &plan.ip.to_string()])?;
        let echo = EchoServer::start(&ns, &plan.name, IpAddr::V4(plan.ip), &plan.tcp_ports, &plan.udp_ports)?;
        Ok(Self { echo, plan: plan.clone(), ns })
    }

    /// Pod name (what its echo server answers with).
    pub fn name(&self) -> &str {
        self.echo.name()
    }

    /// The node it runs on.
    pub fn node(&self) -> &str {
        &self.plan.node
    }

    /// Its primary address.
    pub fn ip(&self) -> Ipv4Addr {
        self.plan.ip
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
