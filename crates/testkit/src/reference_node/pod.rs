//! A pod behind node-a: one veth, the pod's address as /32 with a default
//! route via the pod gateway, node-a holding the gateway as /32 on its side
//! and a /32 route to the pod (a routed CNI, no bridge).

use crate::flows::POD_GATEWAY;
use crate::netns::Netns;
use anyhow::Result;
use std::net::Ipv4Addr;

/// Plugs `pod` (address `ip`) into `node` with a veth called `veth` on the
/// node's side and `eth0` in the pod: one `ip -batch` per side (a process
/// costs a lot in the IPVS VM, where the reference node is built too).
pub(super) fn attach(node: &Netns, pod: &Netns, ip: Ipv4Addr, veth: &str) -> Result<()> {
    let gateway = POD_GATEWAY.to_string();
    node.ip_batch(&[
        format!("link add {veth} type veth peer name eth0 netns {}", pod.name()),
        format!("addr add {gateway}/32 dev {veth}"),
        format!("link set {veth} up"),
        format!("route add {ip}/32 dev {veth} src {gateway}"),
    ])?;
    pod.ip_batch(&[
        format!("addr add {ip}/32 dev eth0"),
        "link set eth0 up".to_string(),
        format!("route add {gateway} dev eth0 scope link"),
        format!("route add default via {gateway} dev eth0 src {ip}"),
    ])?;
    Ok(())
}
