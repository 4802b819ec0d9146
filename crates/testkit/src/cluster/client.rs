//! The outside client: a namespace on the wire with addresses in the client
//! subnets (IPv4 and IPv6), not part of the cluster. It reaches node IPs
//! on-link and sends the networks of its plan's routes (LoadBalancer IPs,
//! externalIPs) to the node named there.

use super::node::Node;
use super::plan::{CLIENT_NET, CLIENT_NET6, ClientPlan, WIRE_NET, WIRE_NET6};
use super::wire::Wire;
use crate::netns::Netns;
use anyhow::{Context, Result};
use std::net::{Ipv4Addr, Ipv6Addr};

/// The outside client.
#[derive(Debug)]
pub struct Client {
    ips: Vec<Ipv4Addr>,
    ips6: Vec<Ipv6Addr>,
    ns: Netns,
}

impl Client {
    /// Creates the client on the wire with the plan's addresses and routes.
    pub fn new(plan: &ClientPlan, wire: &Wire, nodes: &[Node]) -> Result<Self> {
        let primary = *plan.ips.first().context("the client plan needs at least one address")?;
        let ns = Netns::new("client")?;
        ns.skip_ipv6_dad()?;
        wire.plug(&ns)?;
        let mut commands: Vec<String> = plan.ips.iter().map(|ip| format!("addr add {ip}/{} dev eth0", CLIENT_NET.prefix_len())).collect();
        commands.extend(plan.ips6.iter().map(|ip| format!("addr add {ip}/{} dev eth0 nodad", CLIENT_NET6.prefix_len())));
        commands.push("link set eth0 up".to_string());
        commands.push(format!("route add {WIRE_NET} dev eth0 src {primary}"));
        if let Some(primary6) = plan.ips6.first() {
            commands.push(format!("route add {WIRE_NET6} dev eth0 src {primary6}"));
        }
        for (net, node_name) in &plan.routes {
            let node = nodes
                .iter()
                .find(|n| n.name() == node_name)
                .with_context(|| format!("client route {net} via unknown node {node_name}"))?;
            commands.push(format!("route add {net} via {} dev eth0 src {primary}", node.ip()));
        }
        ns.ip_batch(&commands)?;
        Ok(Self { ips: plan.ips.clone(), ips6: plan.ips6.clone(), ns })
    }

    /// Its addresses; the first is the default source.
    pub fn ips(&self) -> &[Ipv4Addr] {
        &self.ips
    }

    /// Its IPv6 addresses; the first is the default source.
    pub fn ips6(&self) -> &[Ipv6Addr] {
        &self.ips6
    }

    /// The client's namespace.
    pub fn ns(&self) -> &Netns {
        &self.ns
    }
}
