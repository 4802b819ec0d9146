//! The state one render accumulates while walking the service ports.

use super::rules::{LbNoNodeAccess, render_rules};
use super::{DesiredService, IpvsState, RenderOptions};
use crate::ipset::{IpSets, KubeSet, members};
use crate::{IpProtocol, RealServer, Scheduler, ServiceFlags, ServiceKey, VirtualServer};
use model::{ServiceName, ServicePort, Snapshot};
use plan::{NoLocalEndpoints, NodeFacts, PortPlan, SyncContext};
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

/// Accumulates virtual servers, bound addresses and set members.
pub(super) struct Builder<'a> {
    pub(super) opts: &'a RenderOptions,
    /// The per-sync decisions every mode shares.
    pub(super) ctx: SyncContext,
    /// Where NodePort virtual servers go.
    pub(super) node_port_ips: Vec<IpAddr>,
    services: BTreeMap<ServiceKey, DesiredService>,
    bind_addresses: BTreeSet<IpAddr>,
    pub(super) ipsets: IpSets,
    pub(super) lb_no_node_access: Vec<LbNoNodeAccess>,
    /// Services (not ports, as upstream's IPVS proxier counts) whose Local
    /// policy has no local endpoint: internal, external.
    no_local: [BTreeSet<ServiceName>; 2],
}

impl<'a> Builder<'a> {
    pub(super) fn new(snapshot: &Snapshot, opts: &'a RenderOptions) -> Self {
        let facts = NodeFacts { local_addresses: opts.local_addresses.clone() };
        let ctx = SyncContext::new(snapshot, &opts.common, &facts);
        Self {
            opts,
            node_port_ips: ctx.node_port_addresses(),
            ipsets: IpSets::new(ctx.family),
            ctx,
            services: BTreeMap::new(),
            bind_addresses: BTreeSet::new(),
            lb_no_node_access: Vec::new(),
            no_local: Default::default(),
        }
    }

    /// The virtual server for `svc` at `address:port`: the configured
    /// scheduler, persistence for ClientIP affinity, `mh-port` for `mh`.
    pub(super) fn virtual_server(&self, plan: &PortPlan<'_>, address: IpAddr, port: u16) -> VirtualServer {
        let key = ServiceKey::new(address, IpProtocol::from(plan.svc.name.protocol), port);
        let mut vs = VirtualServer::new(key, self.opts.scheduler.name());
        if let Some(seconds) = plan.affinity_seconds {
            vs.flags = vs.flags | ServiceFlags::PERSISTENT;
            vs.timeout = seconds;
        }
        if self.opts.scheduler == Scheduler::MaglevHashing {
            vs.flags = vs.flags | ServiceFlags::SCHED_MH_PORT;
        }
        vs
    }

    /// Adds a virtual server with its real servers (the first service port
    /// to claim an address:port keeps it).
    pub(super) fn add_service(&mut self, svc: &ServicePort, vs: VirtualServer, real_servers: Vec<RealServer>) {
        self.services.entry(vs.key).or_insert_with(|| DesiredService {
            virtual_server: vs,
            real_servers,
            service: svc.name.clone(),
        });
    }

    /// Binds `address` to the dummy interface.
    pub(super) fn bind(&mut self, address: IpAddr) {
        self.bind_addresses.insert(address);
    }

    /// Adds a set member.
    pub(super) fn add_member(&mut self, set: KubeSet, entry: String) {
        self.ipsets.insert(set, entry);
    }

    /// Counts `plan`'s service when a Local policy of it has no local
    /// endpoint.
    pub(super) fn record_no_local_endpoints(&mut self, plan: &PortPlan<'_>) {
        let counts = plan.no_local_endpoints();
        for (set, missing) in self.no_local.iter_mut().zip([counts.internal, counts.external]) {
            if missing > 0 && !set.contains(&plan.svc.name.service) {
                set.insert(plan.svc.name.service.clone());
            }
        }
    }

    /// The finished state: `KUBE-IPVS-IPS` gets the bound addresses, and
    /// the iptables rules are written from the sets.
    pub(super) fn finish(mut self) -> IpvsState {
        for addr in self.bind_addresses.clone() {
            self.ipsets.insert(KubeSet::IpvsIps, members::ip(addr));
        }
        let ruleset = render_rules(&self.ipsets, &self.lb_no_node_access, &self.ctx, self.opts);
        let [internal, external] = &self.no_local;
        IpvsState {
            family: self.ctx.family,
            services: self.services,
            bind_addresses: self.bind_addresses,
            ipsets: self.ipsets,
            ruleset,
            no_local_endpoints: NoLocalEndpoints { internal: internal.len(), external: external.len() },
        }
    }
}
