//! The wire: a namespace holding one bridge that every node's uplink and the
//! client's link plug into. Its own bridge addresses (IPv4 and IPv6) are
//! the nodes' default gateways; it does not forward, so it swallows whatever
//! reaches it.

use super::plan::{WIRE_GATEWAY, WIRE_GATEWAY6, WIRE_NET, WIRE_NET6};
use crate::netns::Netns;
use anyhow::Result;

/// The wire namespace and the name of its bridge.
#[derive(Debug)]
pub struct Wire {
    ns: Netns,
    ports: std::sync::atomic::AtomicUsize,
}

const BRIDGE: &str = "br0";

impl Wire {
    /// Creates the wire namespace with its bridge up, holding
    /// [`WIRE_GATEWAY`] and [`WIRE_GATEWAY6`] and not forwarding. The
    /// bridge floods multicast (no snooping), so IPv6 neighbour discovery
    /// never depends on which MLD reports it has seen.
    pub fn new() -> Result<Self> {
        let ns = Netns::new("wire")?;
        ns.skip_ipv6_dad()?;
        ns.exec("sysctl", &["-qw", "net.ipv4.ip_forward=0", "net.ipv6.conf.all.forwarding=0"])?;
        ns.ip_batch(&[
            format!("link add {BRIDGE} type bridge forward_delay 0 mcast_snooping 0"),
            format!("addr add {WIRE_GATEWAY}/{} dev {BRIDGE}", WIRE_NET.prefix_len()),
            format!("addr add {WIRE_GATEWAY6}/{} dev {BRIDGE} nodad", WIRE_NET6.prefix_len()),
            format!("link set {BRIDGE} up"),
        ])?;
        Ok(Self { ns, ports: std::sync::atomic::AtomicUsize::new(0) })
    }

    /// Plugs `other` into the bridge: a veth whose far end is `eth0` in
    /// `other`, left down there for the caller to address and bring up.
    pub fn plug(&self, other: &Netns) -> Result<()> {
        let port = format!("w{}", self.ports.fetch_add(1, std::sync::atomic::Ordering::SeqCst));
        self.ns.ip_batch(&[
            format!("link add {port} type veth peer name eth0 netns {}", other.name()),
            format!("link set {port} master {BRIDGE} up"),
        ])
    }

    /// The wire's namespace.
    pub fn ns(&self) -> &Netns {
        &self.ns
    }
}
