//! IP family, spelled as upstream spells it in metric labels and JSON.

use prometheus_client::encoding::{EncodeLabelValue, LabelValueEncoder};
use std::fmt::{self, Write};
use std::net::IpAddr;

/// The IP family a proxier (one per family in dual-stack) works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IpFamily {
    /// `IPv4`
    V4,
    /// `IPv6`
    V6,
}

impl IpFamily {
    /// Upstream's `v1.IPFamily` string: `IPv4` or `IPv6`.
    pub fn as_str(self) -> &'static str {
        match self {
            IpFamily::V4 => "IPv4",
            IpFamily::V6 => "IPv6",
        }
    }

    /// The family of an address.
    pub fn of(addr: IpAddr) -> Self {
        if addr.is_ipv4() { IpFamily::V4 } else { IpFamily::V6 }
    }
}

impl fmt::Display for IpFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl EncodeLabelValue for IpFamily {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), fmt::Error> {
        encoder.write_str(self.as_str())
    }
}
