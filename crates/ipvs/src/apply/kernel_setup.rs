//! The kernel settings IPVS mode needs, set once at start-up as upstream
//! does: IPVS conntrack, expiry of connections to removed real servers,
//! forwarding, strict ARP, and the IPVS timeouts.

use crate::{Error, IpvsSocket, Timeouts};

/// What to set besides the fixed sysctls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelSetup {
    /// `--ipvs-strict-arp`: `arp_ignore=1`, `arp_announce=2`, so the node
    /// does not answer ARP for the addresses on the dummy interface.
    pub strict_arp: bool,
    /// `ipvs.tcpTimeout`, `tcpFinTimeout`, `udpTimeout` in seconds; all 0
    /// leaves the kernel's timeouts alone.
    pub timeouts: Timeouts,
}

/// Sysctls upstream sets (each written only if different).
const FIXED: [(&str, &str); 4] = [
    ("net/ipv4/vs/conntrack", "1"),
    ("net/ipv4/vs/expire_nodest_conn", "1"),
    ("net/ipv4/vs/expire_quiescent_template", "1"),
    ("net/ipv4/ip_forward", "1"),
];

/// Applies the settings in the calling thread's network namespace.
pub async fn apply_kernel_setup(ipvs: &IpvsSocket, setup: KernelSetup) -> Result<(), Error> {
    for (key, value) in FIXED {
        ensure_sysctl(key, value)?;
    }
    if needs_conn_reuse_mode_zero(&std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default()) {
        ensure_sysctl("net/ipv4/vs/conn_reuse_mode", "0")?;
    }
    if setup.strict_arp {
        ensure_sysctl("net/ipv4/conf/all/arp_ignore", "1")?;
        ensure_sysctl("net/ipv4/conf/all/arp_announce", "2")?;
    }
    let t = setup.timeouts;
    if t.tcp > 0 || t.tcp_fin > 0 || t.udp > 0 {
        ipvs.set_timeouts(t).await?;
    }
    Ok(())
}

/// Writes `value` to `/proc/sys/<key>` unless it already holds it.
fn ensure_sysctl(key: &str, value: &str) -> Result<(), Error> {
    let fail = |source| Error::Sysctl { key: key.replace('/', "."), value: value.to_string(), source };
    match host::sysctl::ensure(key, value) {
        Ok(_) => Ok(()),
        Err(host::Error::Sysctl { source, .. }) => Err(fail(source)),
        Err(other) => Err(fail(std::io::Error::other(other.to_string()))),
    }
}

/// Upstream sets `conn_reuse_mode=0` on kernels 4.1 to 5.8: before 4.1 the
/// sysctl does not exist, from 5.9 the default behaves (kubernetes#93297).
fn needs_conn_reuse_mode_zero(osrelease: &str) -> bool {
    let mut parts = osrelease.trim().split(['.', '-']).map(|p| p.parse::<u32>().unwrap_or(0));
    let version = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    ((4, 1)..(5, 9)).contains(&version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conn_reuse_mode_only_on_affected_kernels() {
        assert!(!needs_conn_reuse_mode_zero("3.10.0-1160.el7.x86_64"));
        assert!(needs_conn_reuse_mode_zero("4.19.0-26-amd64"));
        assert!(needs_conn_reuse_mode_zero("5.4.0"));
        assert!(!needs_conn_reuse_mode_zero("5.9.0"));
        assert!(!needs_conn_reuse_mode_zero("6.1.0-56-amd64"));
    }
}
