//! The IP family being rendered and what differs between the two.

use ipnet::IpNet;
use std::net::IpAddr;

/// IPv4 (`iptables`) or IPv6 (`ip6tables`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum IpFamily {
    /// IPv4.
    #[default]
    V4,
    /// IPv6.
    V6,
}

impl IpFamily {
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

    /// `REJECT` with the family's port-unreachable, as iptables-save
    /// prints the default `--reject-with`.
    pub(crate) fn reject_target(self) -> &'static str {
        match self {
            IpFamily::V4 => "REJECT --reject-with icmp-port-unreachable",
            IpFamily::V6 => "REJECT --reject-with icmp6-port-unreachable",
        }
    }

    /// The `recent` match's default `--mask`, as iptables-save prints it.
    pub(crate) fn recent_mask(self) -> &'static str {
        match self {
            IpFamily::V4 => "255.255.255.255",
            IpFamily::V6 => "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
        }
    }

    /// The loopback network NodePorts must not match when localhost
    /// NodePorts are off.
    pub(crate) fn loopback_net(self) -> &'static str {
        match self {
            IpFamily::V4 => "127.0.0.0/8",
            IpFamily::V6 => "::1/128",
        }
    }
}
