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
use crate::{Error, IpProtocol, IpvsSocket, Links, RealServer, ServiceKey, VirtualServer};
use futures::StreamExt;
use diff::{Graceful, RealServerChange, diff_addresses, diff_real_servers, diff_virtual_servers, is_excluded};
use ipnet::IpNet;
use xtables::apply::{Applied, Backend, Iptables, NativeScope};
use model::IpFamily;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

/// Netlink requests in flight at once on the IPVS socket.
const CONCURRENT_REQUESTS: usize = 32;

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
        host::read_local_addresses_except(&self.opts.dummy_interface)
            .await
            .map_err(|e| Error::Link { operation: "list addresses".to_string(), detail: e.to_string() })
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
        report.services_added = self.run_all(vs_diff.add.iter().map(|vs| self.ipvs.add_service(vs)), &mut errors).await;
        report.services_updated = self.run_all(vs_diff.update.iter().map(|vs| self.ipvs.update_service(vs)), &mut errors).await;
        let bound = self.links.addresses(dummy).await?;
        let addr_diff = diff_addresses(&state.bind_addresses, &bound, |a| family.contains(*a));
        for addr in &addr_diff.bind {
            record(&mut errors, self.links.bind(dummy, *addr).await, &mut report.addresses_bound);
        }
        let changes = self.plan_real_servers(state, &mut errors).await;
        self.apply_real_server_changes(&changes, &mut report, &mut errors).await;

        // The native legacy writer encodes no `set` match, which every
        // IPVS-mode ruleset has: straight to `iptables-restore`.
        let iptables = Iptables::new(self.backend, family).with_native_scope(NativeScope::Off);
        report.iptables = iptables.apply_ruleset(&state.ruleset).await?;

        for addr in &addr_diff.unbind {
            record(&mut errors, self.links.unbind(dummy, *addr).await, &mut report.addresses_unbound);
        }
        report.services_deleted = self.run_all(vs_diff.delete.iter().map(|vs| self.ipvs.delete_service(&vs.key)), &mut errors).await;
        self.forget_draining(state, family);
        report.real_servers_draining = self.draining.keys().filter(|(k, _)| family.contains(k.address)).count();
        tracing::debug!(?report, "IPVS apply");
        if errors.is_empty() { Ok(report) } else { Err(Error::Incomplete { errors: errors.iter().map(ToString::to_string).collect() }) }
    }

    /// The real-server changes of every desired virtual server, from the
    /// kernel's current ones (dumped one after the other: the socket runs
    /// one dump at a time); records which real servers start or stop
    /// draining.
    async fn plan_real_servers(&mut self, state: &IpvsState, errors: &mut Vec<Error>) -> Vec<(ServiceKey, RealServerChange)> {
        let dumps = state.services.keys().map(|key| self.ipvs.destinations(key));
        let current: Vec<Result<Vec<RealServer>, Error>> = futures::stream::iter(dumps).buffered(CONCURRENT_REQUESTS).collect().await;
        let now = Instant::now();
        let mut planned = Vec::new();
        for (desired, current) in state.services.values().zip(current) {
            match current {
                Ok(current) => planned.extend(self.plan_one(desired, &current, now).into_iter().map(|c| (desired.virtual_server.key, c))),
                Err(e) => errors.push(e),
            }
        }
        planned
    }

    /// The changes for one virtual server, with the draining bookkeeping.
    fn plan_one(&mut self, desired: &DesiredService, current: &[RealServer], now: Instant) -> Vec<RealServerChange> {
        let key = desired.virtual_server.key;
        let since: BTreeMap<SocketAddr, Instant> =
            self.draining.iter().filter(|((k, _), _)| *k == key).map(|((_, addr), t)| (*addr, *t)).collect();
        let graceful = Graceful { enabled: key.protocol == IpProtocol::Tcp, limit: self.opts.graceful_limit };
        let changes = diff_real_servers(&desired.real_servers, current, &since, now, graceful);
        for change in &changes {
            match change {
                RealServerChange::Drain(rs) => {
                    self.draining.entry((key, rs.addr())).or_insert(now);
                }
                RealServerChange::Update(rs) | RealServerChange::Delete(rs) => {
                    self.draining.remove(&(key, rs.addr()));
                }
                RealServerChange::Add(_) => {}
            }
        }
        changes
    }

    /// Sends the planned real-server changes, a few at a time.
    async fn apply_real_server_changes(
        &self,
        changes: &[(ServiceKey, RealServerChange)],
        report: &mut ApplyReport,
        errors: &mut Vec<Error>,
    ) {
        let requests = changes.iter().map(|(key, change)| async move {
            let result = match change {
                RealServerChange::Add(rs) => self.ipvs.add_destination(key, rs).await,
                RealServerChange::Update(rs) | RealServerChange::Drain(rs) => self.ipvs.update_destination(key, rs).await,
                RealServerChange::Delete(rs) => self.ipvs.delete_destination(key, rs).await,
            };
            (change, result)
        });
        let mut results = futures::stream::iter(requests).buffer_unordered(CONCURRENT_REQUESTS);
        while let Some((change, result)) = results.next().await {
            let counter = match change {
                RealServerChange::Add(_) => &mut report.real_servers_added,
                RealServerChange::Update(_) => &mut report.real_servers_updated,
                RealServerChange::Drain(_) => &mut report.real_servers_drained,
                RealServerChange::Delete(_) => &mut report.real_servers_deleted,
            };
            record(errors, result, counter);
        }
    }

    /// Runs `requests` a few at a time; returns how many succeeded.
    async fn run_all<F>(&self, requests: impl Iterator<Item = F>, errors: &mut Vec<Error>) -> usize
    where
        F: std::future::Future<Output = Result<(), Error>>,
    {
        let mut ok = 0;
        let mut results = futures::stream::iter(requests).buffer_unordered(CONCURRENT_REQUESTS);
        while let Some(result) = results.next().await {
            record(errors, result, &mut ok);
        }
        ok
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
