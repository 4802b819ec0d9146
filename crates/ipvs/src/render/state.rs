//! What a render produces: the desired IPVS-mode state of one IP family.

use crate::ipset::IpSets;
use crate::{RealServer, ServiceKey, VirtualServer};
use xtables::Ruleset;
use model::IpFamily;
use model::ServicePortName;
use plan::NoLocalEndpoints;
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

/// One virtual server with the real servers it should have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredService {
    /// The virtual server (scheduler, persistence).
    pub virtual_server: VirtualServer,
    /// Its real servers, sorted by address.
    pub real_servers: Vec<RealServer>,
    /// The service port it belongs to, for logs.
    pub service: ServicePortName,
}

/// The desired IPVS-mode state of one IP family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpvsState {
    /// The family rendered.
    pub family: IpFamily,
    /// Every virtual server, by key.
    pub services: BTreeMap<ServiceKey, DesiredService>,
    /// Addresses that must be on the dummy interface.
    pub bind_addresses: BTreeSet<IpAddr>,
    /// Members of every ipset.
    pub ipsets: IpSets,
    /// The companion iptables rules, for the xtables applier.
    pub ruleset: Ruleset,
    /// Traffic-policy-Local services without local endpoints (services,
    /// not ports, as upstream's IPVS proxier counts them).
    pub no_local_endpoints: NoLocalEndpoints,
}

impl IpvsState {
    /// Total number of real servers, for logs and metrics.
    pub fn real_server_count(&self) -> usize {
        self.services.values().map(|s| s.real_servers.len()).sum()
    }
}

/// A readable dump for golden files and logs: the virtual servers in the
/// shape of `ipvsadm -Ln` (sorted), the bound addresses, the set members
/// as `ipset save` lines, then the iptables rules as restore input.
impl std::fmt::Display for IpvsState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "# virtual servers ({} with {} real servers)", self.services.len(), self.real_server_count())?;
        for desired in self.services.values() {
            writeln!(f, "{}", crate::render::ipvsadm_line(&desired.virtual_server))?;
            for rs in &desired.real_servers {
                writeln!(f, "  -> {} {} {}", rs.addr(), rs.forward, rs.weight)?;
            }
        }
        writeln!(f, "# addresses on the dummy interface")?;
        for addr in &self.bind_addresses {
            writeln!(f, "{addr}")?;
        }
        writeln!(f, "# ipsets")?;
        for set in crate::ipset::KubeSet::ALL {
            for entry in self.ipsets.members(set) {
                writeln!(f, "add {} {entry}", set.name(self.family))?;
            }
        }
        writeln!(f, "# iptables")?;
        f.write_str(&self.ruleset.to_restore())
    }
}
