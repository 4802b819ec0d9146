//! Kernel facts the pure renderer takes as input (kept out of it): the
//! node's local addresses, whether nfacct counters are usable, whether
//! conntrack is TCP-liberal; and the one sysctl the iptables mode sets,
//! `route_localnet` for NodePorts on 127.0.0.1. Everything acts in the
//! calling thread's network namespace (sysctls under /proc/sys/net are
//! per namespace).

use super::nfacct::apply_nfacct_counters;
use crate::Error;
use std::net::IpAddr;

/// `net.ipv4.conf.all.route_localnet`: lets packets to 127.0.0.0/8 be
/// routed (DNATed) off the node; needed for localhost NodePorts.
pub const ROUTE_LOCALNET: &str = "/proc/sys/net/ipv4/conf/all/route_localnet";
/// `net.netfilter.nf_conntrack_tcp_be_liberal`: when set, out-of-window TCP
/// packets are not INVALID, and upstream drops no INVALID packets.
pub const CONNTRACK_TCP_BE_LIBERAL: &str = "/proc/sys/net/netfilter/nf_conntrack_tcp_be_liberal";

/// What the renderer needs to know about this node's kernel.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelFacts {
    /// Every address on every interface, both families (upstream's
    /// `GetNodeIPs` for `nodePortAddresses`).
    pub local_addresses: Vec<IpAddr>,
    /// The nfacct counters exist (or were just created): render
    /// `-m nfacct` matches.
    pub nfacct: bool,
    /// `nf_conntrack_tcp_be_liberal` is set.
    pub conntrack_tcp_be_liberal: bool,
}

/// Prepares the kernel for the iptables mode and reads what the renderer
/// needs: creates the nfacct counters (failure only turns `nfacct` off,
/// with a warning, as upstream), sets `route_localnet` when asked
/// (upstream: localhost NodePorts on and `nodePortAddresses` covering
/// 127.0.0.1), reads `nf_conntrack_tcp_be_liberal` and the addresses.
pub async fn apply_kernel_setup(route_localnet: bool) -> Result<KernelFacts, Error> {
    let nfacct = match apply_nfacct_counters() {
        Ok(()) => true,
        Err(err) => {
            tracing::warn!(%err, "nfacct counters unavailable; rules will not count packets");
            false
        }
    };
    if route_localnet {
        apply_route_localnet()?;
    }
    Ok(KernelFacts {
        local_addresses: read_local_addresses().await?,
        nfacct,
        conntrack_tcp_be_liberal: read_conntrack_tcp_be_liberal(),
    })
}

/// Every address on every interface, both families (see
/// [`host::read_local_addresses`]).
pub async fn read_local_addresses() -> Result<Vec<IpAddr>, Error> {
    Ok(host::read_local_addresses().await?)
}

/// Sets `route_localnet` to 1 unless it already is (upstream's
/// `EnsureSysctl`).
pub fn apply_route_localnet() -> Result<(), Error> {
    host::sysctl::ensure(ROUTE_LOCALNET, "1")?;
    Ok(())
}

/// Whether `nf_conntrack_tcp_be_liberal` is set; unreadable (conntrack not
/// loaded) counts as not set, as upstream.
pub fn read_conntrack_tcp_be_liberal() -> bool {
    host::sysctl::is_set(CONNTRACK_TCP_BE_LIBERAL)
}
