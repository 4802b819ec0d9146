//! Which endpoints become real servers of a virtual server (upstream's
//! `syncEndpoint`): the cluster endpoints, or for a traffic-policy-Local
//! path the local ones — falling back to the cluster endpoints when there
//! is no local one, so pods on the node can still reach the service
//! (upstream PR 97081).

use super::builder::Builder;
use crate::RealServer;
use model::ServicePort;
use model::topology::CategorizedEndpoints;

impl Builder<'_> {
    /// NAT-mode real servers, weight 1, for `svc`'s path that is
    /// node-local when `only_local`.
    pub(super) fn real_servers(
        &mut self,
        svc: &ServicePort,
        cat: &CategorizedEndpoints<'_>,
        only_local: bool,
    ) -> Vec<RealServer> {
        let chosen = if !only_local {
            &cat.cluster
        } else if !cat.local.is_empty() {
            &cat.local
        } else {
            self.record_no_local_endpoints(svc, cat);
            &cat.cluster
        };
        let mut servers: Vec<RealServer> = chosen.iter().map(|ep| RealServer::masquerade(ep.ip, ep.port)).collect();
        servers.sort_by_key(RealServer::addr);
        servers.dedup_by_key(|rs| rs.addr());
        servers
    }

    fn record_no_local_endpoints(&mut self, svc: &ServicePort, cat: &CategorizedEndpoints<'_>) {
        if !cat.has_any {
            return;
        }
        if svc.internal_policy_local {
            self.no_local_endpoints.internal.insert(svc.name.service.clone());
        }
        if svc.external_policy_local {
            self.no_local_endpoints.external.insert(svc.name.service.clone());
        }
    }
}
