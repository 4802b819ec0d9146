//! The state one render accumulates while walking the service ports.

use super::rules::{LbNoNodeAccess, render_rules};
use super::{DesiredService, IpvsState, NoLocalEndpoints, RenderOptions};
use crate::ipset::{IpSets, KubeSet, members};
use crate::{IpProtocol, RealServer, Scheduler, ServiceFlags, ServiceKey, VirtualServer};
use model::{ServicePort, Snapshot};
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

/// Accumulates virtual servers, bound addresses and set members.
pub(super) struct Builder<'a> {
    pub(super) opts: &'a RenderOptions,
    /// The node's primary IP of this family (for loadBalancerSourceRanges).
    pub(super) node_ip: Option<IpAddr>,
    /// Where NodePort virtual servers go.
    pub(super) node_port_ips: Vec<IpAddr>,
    local_addresses: BTreeSet<IpAddr>,
    services: BTreeMap<ServiceKey, DesiredService>,
    bind_addresses: BTreeSet<IpAddr>,
    pub(super) ipsets: IpSets,
    pub(super) lb_no_node_access: Vec<LbNoNodeAccess>,
    pub(super) no_local_endpoints: NoLocalEndpoints,
}

impl<'a> Builder<'a> {
    pub(super) fn new(snapshot: &Snapshot, opts: &'a RenderOptions) -> Self {
        Self {
            opts,
            node_ip: snapshot.node.addresses.iter().copied().find(|ip| opts.family.contains(*ip)),
            node_port_ips: opts.node_port_ips(),
            local_addresses: opts.local_addresses.iter().copied().collect(),
            services: BTreeMap::new(),
            bind_addresses: BTreeSet::new(),
            ipsets: IpSets::new(opts.family),
            lb_no_node_access: Vec::new(),
            no_local_endpoints: NoLocalEndpoints::default(),
        }
    }

    /// The virtual server for `svc` at `address:port`: the configured
    /// scheduler, persistence for ClientIP affinity, `mh-port` for `mh`.
    pub(super) fn virtual_server(&self, svc: &ServicePort, address: IpAddr, port: u16) -> VirtualServer {
        let key = ServiceKey::new(address, IpProtocol::from(svc.name.protocol), port);
        let mut vs = VirtualServer::new(key, self.opts.scheduler.name());
        if let Some(seconds) = svc.session_affinity_seconds {
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

    /// Whether `address` is one of the node's own (then it is not bound).
    pub(super) fn is_local_address(&self, address: IpAddr) -> bool {
        self.local_addresses.contains(&address)
    }

    /// Adds a set member.
    pub(super) fn add_member(&mut self, set: KubeSet, entry: String) {
        self.ipsets.insert(set, entry);
    }

    /// The finished state: `KUBE-IPVS-IPS` gets the bound addresses, and
    /// the iptables rules are written from the sets.
    pub(super) fn finish(mut self) -> IpvsState {
        for addr in self.bind_addresses.clone() {
            self.ipsets.insert(KubeSet::IpvsIps, members::ip(addr));
        }
        let ruleset = render_rules(&self.ipsets, &self.lb_no_node_access, self.opts);
        IpvsState {
            family: self.opts.family,
            services: self.services,
            bind_addresses: self.bind_addresses,
            ipsets: self.ipsets,
            ruleset,
            no_local_endpoints: self.no_local_endpoints,
        }
    }
}
