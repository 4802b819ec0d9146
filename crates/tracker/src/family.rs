//! The IP family one tracker serves.

use ipnet::IpNet;
use std::net::IpAddr;

/// Which IP family a tracker (and the proxier it feeds) handles.
///
/// Upstream runs one single-family proxier per family; objects and
/// addresses of the other family are ignored silently, as upstream does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum IpFamily {
    /// IPv4 (the default).
    #[default]
    V4,
    /// IPv6.
    V6,
}

impl IpFamily {
    /// The address belongs to this family.
    pub fn matches(self, ip: &IpAddr) -> bool {
        matches!(
            (self, ip),
            (IpFamily::V4, IpAddr::V4(_)) | (IpFamily::V6, IpAddr::V6(_))
        )
    }

    /// The network belongs to this family.
    pub fn matches_net(self, net: &IpNet) -> bool {
        self.matches(&net.addr())
    }

    /// EndpointSlice `addressType` of this family (`IPv4` / `IPv6`).
    pub fn address_type(self) -> &'static str {
        match self {
            IpFamily::V4 => "IPv4",
            IpFamily::V6 => "IPv6",
        }
    }
}
