//! What the rendered text spells differently per IP family.

use super::{RejectWith, Target};
use model::IpFamily;

/// Family-specific spellings, as iptables-save prints them (also for
/// IPVS mode's companion rules).
pub trait FamilyText {
    /// `REJECT` with the family's port-unreachable (the default
    /// `--reject-with`).
    fn reject_target(self) -> Target<'static>;
    /// The `recent` match's default `--mask`.
    fn recent_mask(self) -> &'static str;
    /// The loopback network NodePorts must not match when localhost
    /// NodePorts are off.
    fn loopback_net(self) -> &'static str;
}

impl FamilyText for IpFamily {
    fn reject_target(self) -> Target<'static> {
        match self {
            IpFamily::V4 => Target::Reject(RejectWith::IcmpPortUnreachable),
            IpFamily::V6 => Target::Reject(RejectWith::Icmp6PortUnreachable),
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
