//! IP families. Upstream runs one single-family proxier per family; every
//! stage says which family it serves with this one type.

use ipnet::IpNet;
use std::fmt;
use std::net::IpAddr;

/// IPv4 or IPv6.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IpFamily {
    /// IPv4 (the default).
    #[default]
    V4,
    /// IPv6.
    V6,
}

impl IpFamily {
    /// Both families, IPv4 first.
    pub const ALL: [IpFamily; 2] = [IpFamily::V4, IpFamily::V6];

    /// The family of `ip`.
    pub fn of(ip: IpAddr) -> Self {
        if ip.is_ipv4() { IpFamily::V4 } else { IpFamily::V6 }
    }

    /// `ip` belongs to this family.
    pub fn contains(self, ip: IpAddr) -> bool {
        Self::of(ip) == self
    }

    /// `net` belongs to this family.
    pub fn contains_net(self, net: &IpNet) -> bool {
        self.contains(net.addr())
    }

    /// Upstream's spelling (`v1.IPFamily`, metric labels, EndpointSlice
    /// `addressType`): `IPv4` or `IPv6`.
    pub fn as_str(self) -> &'static str {
        match self {
            IpFamily::V4 => "IPv4",
            IpFamily::V6 => "IPv6",
        }
    }
}

impl fmt::Display for IpFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
