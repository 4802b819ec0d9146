//! The per-service health-check servers, shared by every family's sync.
//! Each family's sync reports its services' health-check node ports and
//! ready local endpoints; the servers run for the union. A dual-stack
//! service has one port: it answers with the primary family's endpoint
//! count (upstream's two single-stack proxiers both claim the port and
//! whichever binds it first answers; here it is always the primary).

use health::ServiceHealthServers;
use model::{IpFamily, ServiceName, Snapshot};
use std::collections::BTreeMap;

/// What one family's last sync said about health-check services.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FamilyHealthChecks {
    /// Service → health-check node port.
    pub ports: BTreeMap<ServiceName, u16>,
    /// Service → ready local endpoints.
    pub local_ready: BTreeMap<ServiceName, usize>,
}

impl FamilyHealthChecks {
    /// What `snapshot` (one family's) asks of the health-check servers.
    pub fn of(snapshot: &Snapshot) -> Self {
        Self { ports: health::health_check_ports(snapshot), local_ready: health::local_ready_endpoints(snapshot) }
    }
}

/// The servers and the latest report of each family.
pub struct SharedServiceHealth {
    servers: ServiceHealthServers,
    /// In family order, the primary first.
    families: Vec<(IpFamily, FamilyHealthChecks)>,
}

impl SharedServiceHealth {
    /// Servers for `families` (the primary first), none running yet.
    pub fn new(servers: ServiceHealthServers, families: &[IpFamily]) -> Self {
        Self { servers, families: families.iter().map(|&f| (f, FamilyHealthChecks::default())).collect() }
    }

    /// Records `family`'s report and brings the servers to the union of
    /// every family's.
    pub async fn sync(&mut self, family: IpFamily, checks: FamilyHealthChecks) {
        if let Some((_, held)) = self.families.iter_mut().find(|(f, _)| *f == family) {
            *held = checks;
        }
        let merged = merge(self.families.iter().map(|(_, checks)| checks));
        // Port problems are logged by the health crate; the other servers keep working.
        let _ = self.servers.sync_services(merged.ports).await;
        self.servers.sync_endpoints(merged.local_ready);
    }
}

/// The union of the families' reports, in order: a service takes its port
/// and its endpoint count from the first family that has it.
pub fn merge<'a>(families: impl Iterator<Item = &'a FamilyHealthChecks>) -> FamilyHealthChecks {
    let mut merged = FamilyHealthChecks::default();
    for checks in families {
        for (name, port) in &checks.ports {
            if merged.ports.contains_key(name) {
                continue;
            }
            merged.ports.insert(name.clone(), *port);
            if let Some(count) = checks.local_ready.get(name) {
                merged.local_ready.insert(name.clone(), *count);
            }
        }
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checks(entries: &[(&str, u16, usize)]) -> FamilyHealthChecks {
        let name = |n: &str| ServiceName::new("ns", n);
        FamilyHealthChecks {
            ports: entries.iter().map(|(n, port, _)| (name(n), *port)).collect(),
            local_ready: entries.iter().filter(|(_, _, c)| *c > 0).map(|(n, _, c)| (name(n), *c)).collect(),
        }
    }

    #[test]
    fn every_familys_services_are_served_and_a_dual_stack_one_answers_for_the_primary() {
        let v4 = checks(&[("dual", 32000, 2), ("v4-only", 32001, 1)]);
        let v6 = checks(&[("dual", 32000, 5), ("v6-only", 32002, 3), ("v6-none", 32003, 0)]);
        let merged = merge([&v4, &v6].into_iter());
        assert_eq!(merged, checks(&[("dual", 32000, 2), ("v4-only", 32001, 1), ("v6-only", 32002, 3), ("v6-none", 32003, 0)]));
    }

    #[test]
    fn a_service_without_local_endpoints_in_the_primary_keeps_zero() {
        let v4 = checks(&[("dual", 32000, 0)]);
        let v6 = checks(&[("dual", 32000, 4)]);
        let merged = merge([&v4, &v6].into_iter());
        assert_eq!(merged.local_ready.get(&ServiceName::new("ns", "dual")), None, "the primary's answer (0) is kept");
    }
}
