//! IPVS in the datapath: a virtual server catches a packet to its
//! address, protocol and port after the filter INPUT chains (locally sent
//! packets after OUTPUT) and sends it to one of its real servers — the
//! scheduler picks one, here each with the chance of its share of the
//! weights — or, with none, answers ICMP port unreachable.

use super::packet::Protocol;
use std::fmt;
use std::net::SocketAddr;

/// One IPVS virtual server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VirtualService {
    /// L4 protocol.
    pub protocol: Protocol,
    /// Virtual address and port.
    pub address: SocketAddr,
    /// Scheduler name (`rr`, `wrr`, `lc`, …).
    pub scheduler: String,
    /// Persistence timeout in seconds (session affinity).
    pub persistent: Option<u32>,
    /// Real servers with their weights.
    pub real_servers: Vec<(SocketAddr, u32)>,
}

impl VirtualService {
    /// The real servers a new connection may reach, with its chance of
    /// each: weight over the total (0-weight servers take none).
    pub fn shares(&self) -> Vec<(SocketAddr, f64)> {
        let total: u32 = self.real_servers.iter().map(|(_, w)| *w).sum();
        self.real_servers
            .iter()
            .filter(|(_, w)| *w > 0)
            .map(|(rs, w)| (*rs, f64::from(*w) / f64::from(total.max(1))))
            .collect()
    }
}

impl fmt::Display for VirtualService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IPVS {} {} {}", self.protocol.to_string().to_uppercase(), self.address, self.scheduler)?;
        if let Some(timeout) = self.persistent {
            write!(f, " persistent {timeout}")?;
        }
        Ok(())
    }
}
