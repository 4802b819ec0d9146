//! Userspace mode's proxier ([`proxier::Proxier`]) and its cleanup
//! ([`proxier::Cleanup`]). Each sync: the node's addresses read, the
//! snapshot planned (pure), the listeners made exactly those wanted
//! ([`forward::Forwarder::apply`]: kept ones keep their port), the portal
//! rules rendered with the bound ports and written by `iptables-restore`.
//! Every sync is full (the rules are few); the report says so.

use crate::render::{self, Planned, ProxyPorts};
use crate::Error;
use forward::{Applied, Forwarder};
use model::{ChangeSet, IpFamily, Snapshot};
use plan::{NodeFacts, SyncContext};
use proxier::{Cleaned, Cleanup, Failure, LocalFuture, Mode, SyncError, SyncReport, TableRules};
use std::time::Instant;
use xtables::apply::{BackendChoice, Iptables, NativeScope, detect_backend};
use xtables::Table;

/// What userspace mode is configured with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxierOptions {
    /// `--iptables-backend`, for the portal rules.
    pub backend: BackendChoice,
    /// The options every mode shares (the family among them).
    pub plan: plan::Options,
}

/// The userspace proxier of one IP family.
pub struct UserspaceProxier {
    forwarder: Forwarder,
    iptables: Iptables,
    opts: plan::Options,
}

impl UserspaceProxier {
    /// Picks the iptables backend; `forwarder` (the family's own) serves
    /// the proxy ports.
    pub async fn new(options: ProxierOptions, forwarder: Forwarder) -> Result<Self, Error> {
        let backend = detect_backend(options.backend).await?;
        let iptables = Iptables::new(backend, options.plan.family).with_native_scope(NativeScope::Off);
        tracing::info!(%backend, family = %options.plan.family, "using userspace mode");
        Ok(Self { forwarder, iptables, opts: options.plan })
    }

    /// The IP family served.
    pub fn family(&self) -> IpFamily {
        self.opts.family
    }

    async fn sync_snapshot(&mut self, snapshot: &Snapshot) -> Result<SyncReport, SyncError> {
        let local_addresses = host::read_local_addresses().await.map_err(|e| other(Error::Addresses(e.to_string())))?;
        let ctx = SyncContext::new(snapshot, &self.opts, &NodeFacts { local_addresses });
        let started = Instant::now();
        let planned = render::planned(snapshot, &ctx);
        let wanted = render::listeners(&planned, ctx.family);
        let applied = self.forwarder.apply(&wanted);
        let ruleset = render::portal_rules(&planned, &ctx, &bound_ports(&applied));
        let render = started.elapsed();
        self.iptables.apply_ruleset(&ruleset).await.map_err(|e| restore_failure(e.into()))?;
        listener_failures(&applied, wanted.len())?;
        let rule_tables = [Table::Filter, Table::Nat].map(|table| {
            let rules = ruleset.rule_count(table);
            TableRules { table: table.as_str(), rules, chains: ruleset.table(table).chains.len(), written: rules }
        });
        let (no_local_internal, no_local_external) = no_local_counts(&planned);
        Ok(SyncReport {
            render,
            apply: started.elapsed().saturating_sub(render),
            partial: false,
            rule_tables: rule_tables.into(),
            written_chains: None,
            virtual_servers: None,
            nftables: None,
            kernel: None,
            no_local_internal,
            no_local_external,
        })
    }
}

/// The port of every listener open after `applied`.
fn bound_ports(applied: &Applied) -> ProxyPorts {
    applied.bound.iter().map(|b| (b.key.clone(), b.addr.port())).collect()
}

/// Listeners that could not be opened fail the sync (after the others'
/// rules are in), so it is retried.
fn listener_failures(applied: &Applied, wanted: usize) -> Result<(), SyncError> {
    let Some((key, first)) = applied.failed.first() else { return Ok(()) };
    let first = format!("{} ({:?}): {first}", key.service_port, key.role);
    Err(other(Error::Listeners { failed: applied.failed.len(), wanted, first }))
}

fn no_local_counts(planned: &[Planned<'_>]) -> (usize, usize) {
    planned.iter().map(|p| p.plan.no_local_endpoints()).fold((0, 0), |(i, e), n| (i + n.internal, e + n.external))
}

fn other(err: Error) -> SyncError {
    SyncError::new(Failure::Other, err)
}

/// A failed `iptables-restore` counts as upstream counts it.
fn restore_failure(err: Error) -> SyncError {
    SyncError::new(Failure::IptablesRestore { partial: false }, err)
}

impl proxier::Proxier for UserspaceProxier {
    fn mode(&self) -> Mode {
        Mode::Userspace
    }

    /// Every sync writes everything: never unknown.
    fn state_unknown(&mut self) -> LocalFuture<'_, Result<bool, SyncError>> {
        Box::pin(async { Ok(false) })
    }

    fn sync<'a>(
        &'a mut self,
        snapshot: &'a Snapshot,
        _changes: &'a ChangeSet,
        _full: bool,
    ) -> LocalFuture<'a, Result<SyncReport, SyncError>> {
        Box::pin(self.sync_snapshot(snapshot))
    }
}

/// Userspace mode's chains and the jumps into them, in both iptables
/// backends and families (its listeners die with the process). The
/// chains are also among those `xtables` owns, so the other modes' syncs
/// and their cleanups remove them as stale; this one removes only them.
#[derive(Debug, Clone, Copy, Default)]
pub struct UserspaceCleanup;

impl Cleanup for UserspaceCleanup {
    fn mode(&self) -> Mode {
        Mode::Userspace
    }

    fn clean_up(&self) -> LocalFuture<'_, Vec<Cleaned>> {
        Box::pin(crate::cleanup::remove_everywhere())
    }

    fn remove_leftovers(&self) -> LocalFuture<'_, ()> {
        Box::pin(async {
            for cleaned in crate::cleanup::remove_everywhere().await {
                match cleaned.result {
                    Ok(removed) if !removed.is_empty() => tracing::info!(what = %cleaned.what, %removed, "removed userspace mode's leftovers"),
                    Ok(_) => {}
                    Err(err) => tracing::warn!(what = %cleaned.what, %err, "could not remove userspace mode's leftovers"),
                }
            }
        })
    }
}
