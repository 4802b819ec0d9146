//! The applier: the only part of IPVS mode that changes the kernel. One
//! [`IpvsApplier::apply`] brings one IP family's kernel state to a rendered
//! [`IpvsState`], sending only the differences:
//!
//! 1. the dummy interface exists ([`Links::ensure_dummy`]);
//! 2. the ipsets hold the rendered members (one `ipset restore` batch);
//! 3. virtual servers are added or updated, their addresses bound;
//! 4. real servers are added, updated, drained (weight 0) or deleted
//!    ([`diff::diff_real_servers`]; a drained TCP real server is deleted
//!    once it has no connections or after [`ApplyOptions::graceful_limit`]);
//! 5. the companion iptables rules go through the iptables applier;
//! 6. addresses no longer wanted are unbound, and virtual servers no
//!    longer wanted deleted (not those in `--ipvs-exclude-cidrs`).
//!
//! Failures of single virtual or real servers do not stop the sync; they
//! are collected and returned together as [`Error::Incomplete`], so the
//! runner retries.

pub mod diff;
mod kernel_setup;

pub use kernel_setup::{KernelSetup, apply_kernel_setup};

use crate::ipset::apply::sync_ipsets;
use crate::render::{DesiredService, IpvsState};
use crate::{Error, IpProtocol, IpvsSocket, Links, ServiceKey, VirtualServer};
use diff::{Graceful, RealServerChange, diff_addresses, diff_real_servers, diff_virtual_servers, is_excluded};
use ipnet::IpNet;
use iptables::apply::{Applied, Backend, Iptables};
use iptables::render::IpFamily;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

/// The dummy interface upstream uses.
pub const DEFAULT_DUMMY_INTERFACE: &str = "kube-ipvs0";

/// How the applier behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyOptions {
    /// The dummy interface holding service addresses.
    pub dummy_interface: String,
    /// `--ipvs-exclude-cidrs`: virtual servers in these are never deleted.
    pub exclude_cidrs: Vec<IpNet>,
    /// A drained real server is deleted after this long even if it still
    /// has connections.
    pub graceful_limit: Duration,
}

impl Default for ApplyOptions {
    fn default() -> Self {
        Self {
            dummy_interface: DEFAULT_DUMMY_INTERFACE.to_string(),
            exclude_cidrs: Vec::new(),
            graceful_limit: Duration::from_secs(15 * 60),
        }
    }
}

/// What one apply changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApplyReport {
    /// Virtual servers added.
    pub services_added: usize,
    /// Virtual servers updated.
    pub services_updated: usize,
    /// Virtual servers deleted.
    pub services_deleted: usize,
    /// Real servers added.
    pub real_servers_added: usize,
    /// Real servers updated (weight back to 1 included).
    pub real_servers_updated: usize,
    /// Real servers set to weight 0 to drain.
    pub real_servers_drained: usize,
    /// Real servers deleted.
    pub real_servers_deleted: usize,
    /// Real servers still draining after this apply.
    pub real_servers_draining: usize,
    /// Addresses bound to the dummy interface.
    pub addresses_bound: usize,
    /// Addresses removed from it.
    pub addresses_unbound: usize,
    /// ipset members added or deleted.
    pub ipset_changes: usize,
    /// What the iptables applier did.
    pub iptables: Applied,
}

/// Applies rendered IPVS states; keeps which real servers are draining
/// between syncs.
#[derive(Debug)]
pub struct IpvsApplier {
    ipvs: IpvsSocket,
    links: Links,
    backend: Backend,
    opts: ApplyOptions,
    draining: BTreeMap<(ServiceKey, SocketAddr), Instant>,
}

impl IpvsApplier {
    /// Connects to IPVS and rtnetlink (in the calling thread's network
    /// namespace). [`Error::IpvsUnavailable`] means the kernel lacks IPVS.
    /// `backend` is the iptables backend for the companion rules.
    pub async fn connect(backend: Backend, opts: ApplyOptions) -> Result<Self, Error> {
        Ok(Self { ipvs: IpvsSocket::connect().await?, links: Links::connect()?, backend, opts, draining: BTreeMap::new() })
    }

    /// The IPVS socket, for queries.
    pub fn ipvs(&self) -> &IpvsSocket {
        &self.ipvs
    }

    /// The node's addresses outside the dummy interface: the renderer's
    /// [`crate::render::RenderOptions::local_addresses`].
    pub async fn local_addresses(&self) -> Result<Vec<IpAddr>, Error> {
        self.links.local_addresses_except(&self.opts.dummy_interface).await
    }

    /// Brings the kernel to `state` (see the module doc).
    pub async fn apply(&mut self, state: &IpvsState) -> Result<ApplyReport, Error> {
        let mut report = ApplyReport::default();
        let mut errors = Vec::new();
        let dummy = self.links.ensure_dummy(&self.opts.dummy_interface).await?;
        report.ipset_changes = sync_ipsets(&state.ipsets).await?;

        let current = self.ipvs.services().await?;
        let family = state.family;
        let exclude = self.opts.exclude_cidrs.clone();
        let ours = |vs: &VirtualServer| family.contains(vs.key.address) && !is_excluded(vs.key.address, &exclude);
        let vs_diff = diff_virtual_servers(state.services.values().map(|d| &d.virtual_server), &current, ours);
        for vs in &vs_diff.add {
            record(&mut errors, self.ipvs.add_service(vs).await, &mut report.services_added);
        }
        for vs in &vs_diff.update {
            record(&mut errors, self.ipvs.update_service(vs).await, &mut report.services_updated);
        }
        let bound = self.links.addresses(dummy).await?;
        let addr_diff = diff_addresses(&state.bind_addresses, &bound, |a| family.contains(*a));
        for addr in &addr_diff.bind {
            record(&mut errors, self.links.bind(dummy, *addr).await, &mut report.addresses_bound);
        }
        for desired in state.services.values() {
            if let Err(e) = self.sync_real_servers(desired, &mut report).await {
                errors.push(e);
            }
        }

        report.iptables = Iptables::new(self.backend, family).apply_ruleset(&state.ruleset).await?;

        for addr in &addr_diff.unbind {
            record(&mut errors, self.links.unbind(dummy, *addr).await, &mut report.addresses_unbound);
        }
        for vs in &vs_diff.delete {
            record(&mut errors, self.ipvs.delete_service(&vs.key).await, &mut report.services_deleted);
        }
        self.forget_draining(state, family);
        report.real_servers_draining = self.draining.keys().filter(|(k, _)| family.contains(k.address)).count();
        if errors.is_empty() { Ok(report) } else { Err(Error::Incomplete { errors: errors.iter().map(ToString::to_string).collect() }) }
    }

    /// Diffs and applies the real servers of one virtual server.
    async fn sync_real_servers(&mut self, desired: &DesiredService, report: &mut ApplyReport) -> Result<(), Error> {
        let key = desired.virtual_server.key;
        let current = self.ipvs.destinations(&key).await?;
        let since: BTreeMap<SocketAddr, Instant> =
            self.draining.iter().filter(|((k, _), _)| *k == key).map(|((_, addr), t)| (*addr, *t)).collect();
        let graceful = Graceful { enabled: key.protocol == IpProtocol::Tcp, limit: self.opts.graceful_limit };
        let now = Instant::now();
        let mut first_error = None;
        for change in diff_real_servers(&desired.real_servers, &current, &since, now, graceful) {
            let result = match &change {
                RealServerChange::Add(rs) => self.ipvs.add_destination(&key, rs).await.map(|()| &mut report.real_servers_added),
                RealServerChange::Update(rs) => {
                    self.draining.remove(&(key, rs.addr()));
                    self.ipvs.update_destination(&key, rs).await.map(|()| &mut report.real_servers_updated)
                }
                RealServerChange::Drain(rs) => {
                    self.draining.entry((key, rs.addr())).or_insert(now);
                    self.ipvs.update_destination(&key, rs).await.map(|()| &mut report.real_servers_drained)
                }
                RealServerChange::Delete(rs) => {
                    self.draining.remove(&(key, rs.addr()));
                    self.ipvs.delete_destination(&key, rs).await.map(|()| &mut report.real_servers_deleted)
                }
            };
            match result {
                Ok(counter) => *counter += 1,
                Err(e) if first_error.is_none() => first_error = Some(e),
                Err(_) => {}
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Drops draining entries of virtual servers that are gone, and of real
    /// servers wanted again.
    fn forget_draining(&mut self, state: &IpvsState, family: IpFamily) {
        self.draining.retain(|(key, addr), _| {
            if !family.contains(key.address) {
                return true;
            }
            state.services.get(key).is_some_and(|d| !d.real_servers.iter().any(|rs| rs.addr() == *addr))
        });
    }
}

/// Counts a success or keeps the error.
fn record(errors: &mut Vec<Error>, result: Result<(), Error>, counter: &mut usize) {
    match result {
        Ok(()) => *counter += 1,
        Err(e) => errors.push(e),
    }
}
