//! iptables mode's proxier ([`proxier::Proxier`]): set up at construction
//! (backend detected, nfacct counters, `route_localnet`), then per sync the
//! node's addresses read (host layer), the snapshot rendered (pure,
//! streamed) and applied with `iptables-restore` in full or partially, as
//! the runner's full-sync policy decided; the report is mode-neutral. A
//! partial sync renders only the services the change set names (when the
//! settings and the node are as the last sync's): the others' chains are
//! carried over as that sync left them, as upstream's partial sync leaves
//! unchanged services' chains out of its restore.

use xtables::apply::{BackendChoice, Iptables, KernelFacts, Synced, Syncer, apply_cleanup_all, apply_cleanup_family, apply_kernel_setup, detect_backend};
use crate::render::{RenderContext, RenderOptions};
use xtables::{Error, Table};
use model::{ChangeSet, IpFamily, Snapshot};
use proxier::{Cleaned, Cleanup, Failure, LocalFuture, Mode, SyncError, SyncReport, TableRules};
use std::time::Instant;

/// What iptables mode is configured with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxierOptions {
    /// `--iptables-backend`.
    pub backend: BackendChoice,
    /// The render options from the configuration (the family included);
    /// the kernel facts in them (node addresses, nfacct,
    /// `tcp_be_liberal`) are filled in by the proxier.
    pub render: RenderOptions,
    /// Set `route_localnet` (localhost NodePorts on, IPv4).
    pub route_localnet: bool,
}

/// The tables whose rules the metrics expose, as upstream labels them.
const REPORTED_TABLES: [Table; 2] = [Table::Filter, Table::Nat];

/// One IP family's iptables proxier: the applier (with what it applied
/// last) and the options it renders with.
pub struct IptablesProxier {
    syncer: Syncer,
    opts: RenderOptions,
    /// The settings of the last successful sync, which rendered every
    /// service it did not carry over: unchanged services can be carried
    /// over while they stay equal. `None` after a failure.
    last_ctx: Option<RenderContext>,
}

impl IptablesProxier {
    /// Picks the backend and prepares the kernel ([`Self::setup`]).
    pub async fn new(options: ProxierOptions) -> Result<Self, Error> {
        let family = options.render.common.family;
        let backend = detect_backend(options.backend).await?;
        tracing::info!(%backend, ?family, "using iptables backend");
        let facts = Self::setup(options.route_localnet).await?;
        let opts = RenderOptions {
            local_addresses: facts.local_addresses,
            nfacct: facts.nfacct,
            conntrack_tcp_be_liberal: facts.conntrack_tcp_be_liberal,
            ..options.render
        };
        Ok(Self { syncer: Syncer::new(Iptables::new(backend, family)), opts, last_ctx: None })
    }

    /// The kernel set-up iptables mode needs (also `--init-only`'s):
    /// nfacct counters, `route_localnet` when asked; returns the facts
    /// read.
    pub async fn setup(route_localnet: bool) -> Result<KernelFacts, Error> {
        apply_kernel_setup(route_localnet).await
    }

    async fn sync_snapshot(&mut self, snapshot: &Snapshot, changes: &ChangeSet, full: bool) -> Result<SyncReport, SyncError> {
        // Whatever fails below, this snapshot's changes are not all applied.
        let last_ctx = self.last_ctx.take();
        self.opts.local_addresses = host::read_local_addresses().await.map_err(|e| SyncError::new(Failure::Other, e))?;
        let started = Instant::now();
        let ctx = RenderContext::new(snapshot, &self.opts);
        let partial = !full && !self.syncer.needs_full_sync();
        let carry = partial && !changes.node_changed && last_ctx.is_some_and(|last| last == ctx);
        // Rendered piece by piece while applied: never every rule at once.
        let rendering = crate::render::stream_with(snapshot, ctx, carry.then_some(&changes.services));
        let synced = self.syncer.sync(&rendering, full).await.map_err(|e| self.restore_failure(e))?;
        self.last_ctx = Some(rendering.into_context());
        Ok(report(&synced, started.elapsed().saturating_sub(synced.render)))
    }

    /// `err` counted as a failed restore (a partial one when the sync
    /// attempted was).
    fn restore_failure(&self, err: Error) -> SyncError {
        SyncError::new(Failure::IptablesRestore { partial: self.syncer.last_sync_partial() }, err)
    }
}

impl proxier::Proxier for IptablesProxier {
    fn mode(&self) -> Mode {
        Mode::Iptables
    }

    fn state_unknown(&mut self) -> LocalFuture<'_, Result<bool, SyncError>> {
        Box::pin(async move {
            self.syncer.state_unknown().await.map_err(|e| SyncError::new(Failure::IptablesRestore { partial: false }, e))
        })
    }

    fn sync<'a>(
        &'a mut self,
        snapshot: &'a Snapshot,
        changes: &'a ChangeSet,
        full: bool,
    ) -> LocalFuture<'a, Result<SyncReport, SyncError>> {
        Box::pin(self.sync_snapshot(snapshot, changes, full))
    }
}

/// The mode-neutral report of `synced`.
fn report(synced: &Synced, apply: std::time::Duration) -> SyncReport {
    let counts = &synced.counts;
    let rule_tables = REPORTED_TABLES.map(|table| {
        let rules = counts.rules(table);
        let written = synced.written_rules.get(&table).copied().unwrap_or(rules);
        TableRules { table: table.as_str(), rules, chains: counts.chains(table), written }
    });
    SyncReport {
        render: synced.render,
        apply,
        partial: synced.partial,
        rule_tables: rule_tables.into(),
        written_chains: Some(synced.written_chains),
        virtual_servers: None,
        nftables: None,
        kernel: None,
        no_local_internal: counts.no_local_endpoints.internal,
        no_local_external: counts.no_local_endpoints.external,
    }
}

/// Everything iptables mode leaves: our chains and jumps, both backends,
/// both families.
#[derive(Debug, Clone, Copy, Default)]
pub struct IptablesCleanup;

impl Cleanup for IptablesCleanup {
    fn mode(&self) -> Mode {
        Mode::Iptables
    }

    fn clean_up(&self) -> LocalFuture<'_, Vec<Cleaned>> {
        Box::pin(async {
            let outcomes = apply_cleanup_all().await;
            let cleaned = outcomes.into_iter().map(|outcome| Cleaned {
                what: format!("iptables {} {}", outcome.backend, outcome.family),
                result: outcome.result.map_err(|e| e.to_string()).map(|changes| {
                    let chains: usize = changes.iter().map(|c| c.deleted_chains.len()).sum();
                    let jumps: usize = changes.iter().map(|c| c.deleted_jumps.len()).sum();
                    format!("{chains} chains, {jumps} jumps")
                }),
            });
            cleaned.collect()
        })
    }

    /// iptables mode's chains do not break another mode: nothing is
    /// removed at start-up (as today).
    fn remove_leftovers(&self) -> LocalFuture<'_, ()> {
        Box::pin(async {})
    }

    /// Our chains and jumps of `family` (both backends), once another mode
    /// has synced it; what was removed is logged, a failure too.
    fn remove_family_leftovers(&self, family: IpFamily) -> LocalFuture<'_, ()> {
        Box::pin(async move {
            for outcome in apply_cleanup_family(family).await {
                let backend = outcome.backend.to_string();
                match outcome.result {
                    Ok(changes) if changes.is_empty() => {}
                    Ok(changes) => {
                        let chains: usize = changes.iter().map(|c| c.deleted_chains.len()).sum();
                        tracing::info!(%backend, %family, chains, "removed what iptables mode left behind");
                    }
                    Err(err) => tracing::warn!(%backend, %family, %err, "could not remove what iptables mode left behind"),
                }
            }
        })
    }
}
