//! IPVS mode's proxier ([`proxier::Proxier`]): set up at construction
//! (IPVS socket, scheduler check, sysctls and timeouts), then per sync the
//! node's addresses read (host layer, without `kube-ipvs0`'s), the
//! snapshot rendered (pure) and the kernel brought there, sending only the
//! differences. IPVS mode always diffs the kernel whole, so every sync is
//! a full one whatever the policy decided; the report says so.

use crate::apply::{ApplyOptions, IpvsApplier, KernelSetup, apply_kernel_setup};
use crate::cleanup::{apply_cleanup, leftovers_present};
use crate::render::RenderOptions;
use crate::Error;
use xtables::apply::{BackendChoice, detect_backend};
use model::{ChangeSet, Snapshot};
use proxier::{Cleaned, Cleanup, Failure, LocalFuture, Mode, SyncError, SyncReport, TableRules};
use std::time::Instant;

/// What IPVS mode is configured with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxierOptions {
    /// `--iptables-backend`, for the companion rules.
    pub backend: BackendChoice,
    /// The applier's options (dummy interface, `--ipvs-exclude-cidrs`).
    pub apply: ApplyOptions,
    /// Strict ARP and the IPVS timeouts.
    pub setup: KernelSetup,
    /// The render options from the configuration (the family and the
    /// scheduler included); the local addresses are read every sync.
    pub render: RenderOptions,
}

/// The tables of companion rules the metrics expose.
const REPORTED_TABLES: [xtables::Table; 2] = [xtables::Table::Filter, xtables::Table::Nat];

/// The IPVS proxier of one IP family.
pub struct IpvsProxier {
    applier: IpvsApplier,
    opts: RenderOptions,
}

impl IpvsProxier {
    /// Connects to the kernel's IPVS, checks the scheduler and applies the
    /// sysctls and timeouts. An error for which [`Error::is_unavailable`]
    /// holds means the kernel has no IPVS: the caller falls back to
    /// iptables mode.
    pub async fn new(options: ProxierOptions) -> Result<Self, Error> {
        let backend = detect_backend(options.backend).await?;
        let applier = IpvsApplier::connect(backend, options.apply).await?;
        let scheduler = options.render.scheduler;
        applier.ipvs().check_scheduler(scheduler.name()).await?;
        apply_kernel_setup(applier.ipvs(), options.setup).await?;
        tracing::info!(%backend, %scheduler, "using IPVS mode");
        Ok(Self { applier, opts: RenderOptions { local_addresses: Vec::new(), ..options.render } })
    }

    async fn sync_snapshot(&mut self, snapshot: &Snapshot) -> Result<SyncReport, SyncError> {
        self.opts.local_addresses = self.applier.local_addresses().await.map_err(sync_error)?;
        let started = Instant::now();
        let state = crate::render::render(snapshot, &self.opts);
        let render = started.elapsed();
        self.applier.apply(&state).await.map_err(sync_error)?;
        let counts = state.ruleset.counts();
        let rule_tables = REPORTED_TABLES.map(|table| {
            let rules = counts.rules(table);
            TableRules { table: table.as_str(), rules, chains: counts.chains(table), written: rules }
        });
        Ok(SyncReport {
            render,
            apply: started.elapsed().saturating_sub(render),
            partial: false,
            rule_tables: rule_tables.into(),
            written_chains: None,
            virtual_servers: Some(state.services.len()),
            nftables: None,
            kernel: None,
            no_local_internal: state.no_local_endpoints.internal,
            no_local_external: state.no_local_endpoints.external,
        })
    }
}

impl proxier::Proxier for IpvsProxier {
    fn mode(&self) -> Mode {
        Mode::Ipvs
    }

    /// The applier reads the kernel's state every sync: never unknown.
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

/// `err` with the counter it counts in: a failed restore of the companion
/// iptables rules counts as one (as upstream's IPVS proxier counts it);
/// IPVS, ipset and link errors count in none.
fn sync_error(err: Error) -> SyncError {
    let failure = match err {
        Error::Iptables(_) => Failure::IptablesRestore { partial: false },
        _ => Failure::Other,
    };
    SyncError::new(failure, err)
}

/// Everything IPVS mode leaves: virtual servers (outside
/// `--ipvs-exclude-cidrs`), ipsets, `kube-ipvs0` and its iptables rules.
#[derive(Debug, Clone, Default)]
pub struct IpvsCleanup {
    /// The applier's options (the dummy interface, the excluded CIDRs).
    pub opts: ApplyOptions,
}

impl Cleanup for IpvsCleanup {
    fn mode(&self) -> Mode {
        Mode::Ipvs
    }

    fn clean_up(&self) -> LocalFuture<'_, Vec<Cleaned>> {
        Box::pin(async {
            let result = apply_cleanup(&self.opts).await.map_err(|e| e.to_string()).map(|report| {
                format!("{} virtual servers, dummy interface deleted: {}", report.services_deleted, report.dummy_deleted)
            });
            vec![Cleaned { what: "ipvs".to_string(), result }]
        })
    }

    /// IPVS mode's leftovers (its reject filter above all) would break
    /// iptables mode; they are removed only if present, so a node whose
    /// IPVS table someone else uses is left alone.
    fn remove_leftovers(&self) -> LocalFuture<'_, ()> {
        Box::pin(async {
            match leftovers_present(&self.opts).await {
                Ok(true) => match apply_cleanup(&self.opts).await {
                    Ok(_) => tracing::info!("removed what IPVS mode left behind"),
                    Err(err) => tracing::warn!(%err, "could not remove what IPVS mode left behind"),
                },
                Ok(false) => {}
                Err(err) => tracing::debug!(%err, "cannot check for IPVS leftovers"),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_companion_rule_failures_count_as_failed_restores() {
        let restore = Error::from(xtables::Error::UnknownBackend { value: "x".to_string() });
        assert_eq!(sync_error(restore).failure, Failure::IptablesRestore { partial: false });
        let netlink = Error::Incomplete { errors: vec!["add virtual server: EINVAL".to_string()] };
        let err = sync_error(netlink);
        assert_eq!(err.failure, Failure::Other);
        assert!(err.to_string().contains("add virtual server: EINVAL"), "{err}");
        let ipset = Error::Ipset { operation: "ipset restore".to_string(), detail: "exit 1".to_string() };
        assert_eq!(sync_error(ipset).failure, Failure::Other);
    }
}
