//! What the rendered text spells differently per IP family.

use model::IpFamily;

/// Family-specific spellings, as iptables-save prints them (also for
/// IPVS mode's companion rules).
pub trait FamilyText {
    /// `REJECT` with the family's port-unreachable (the default
    /// `--reject-with`).
    fn reject_target(self) -> &'static str;
    /// The `recent` match's default `--mask`.
    fn recent_mask(self) -> &'static str;
    /// The loopback network NodePorts must not match when localhost
    /// NodePorts are off.
    fn loopback_net(self) -> &'static str;
}

impl FamilyText for IpFamily {
    fn reject_target(self) -> &'static str {
        match self {
            IpFamily::V4 => "REJECT --reject-with icmp-port-unreachable",
            IpFamily::V6 => "REJECT --reject-with icmp6-port-unreachable",
        }
    }

    fn recent_mask(self) -> &'static str {
        match self {
            IpFamily::V4 => "255.255.255.255",
            IpFamily::V6 => "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
        }
    }

    fn loopback_net(self) -> &'static str {
        match self {
            IpFamily::V4 => "127.0.0.0/8",
            IpFamily::V6 => "::1/128",
        }
    }
}
