//! Errors of the IPVS backend.

/// A failed IPVS-mode operation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The kernel has no IPVS (the `IPVS` generic-netlink family is not
    /// registered): the proxy should fall back to iptables mode.
    #[error("the kernel does not support IPVS (generic netlink family \"IPVS\" not found: {0})")]
    IpvsUnavailable(String),
}
