//! nftables mode's proxier ([`proxier::Proxier`]) and cleanup
//! ([`proxier::Cleanup`]).
//!
//! Per sync: the node's addresses read (host layer) into [`NodeFacts`],
//! the service CIDRs taken from the snapshot (ServiceCIDR objects: the
//! rule dropping traffic to unallocated ClusterIPs), then one of:
//!
//! * full (the runner's policy asks for it, nothing was applied yet, the
//!   last sync failed or the syncer saw our table changed by someone
//!   else): every service rendered (pure, [`render::render_lean`]: the
//!   shared sets whole, each port's chains rendered again as the syncer
//!   takes them), our table read back and diffed, one transaction; when
//!   there is no table yet, it is created in parts typed and sent chain
//!   by chain ([`Syncer::sync_full_in_pieces`]);
//! * partial: only the services the change set names are rendered, from
//!   the snapshot the last sync applied and from this one, and the
//!   [`Syncer`] applies the difference between the two renderings
//!   (nothing read back; unchanged services are not rendered, normalized
//!   or compared). If the settings or the node changed, every service is
//!   rendered both ways. Shared-set elements also given by an unchanged
//!   service stay as they are; if such an element differs by who gives
//!   it (two services naming one external IP and port), the sync is full.
//!
//! Between syncs the proxier keeps the last snapshot (shared with the
//! tracker's), how many services hold each shared-set key, and the
//! table's counts; the syncer keeps no copy of the table. The report
//! carries the table's counts, what the transaction changed and the
//! kernel's own share of the time.
//!
//! A failed sync counts as [`Failure::NftablesSync`]. Chains and sets no
//! longer wanted are deleted in the sync's own transaction (upstream
//! deletes them later, in a transaction of their own whose failure it
//! counts as a cleanup failure), so this proxier never reports
//! [`Failure::NftablesCleanup`].

mod applied;

use crate::apply::{self, Syncer};
use crate::render::{
    self, EndpointSlots, RenderContext, RenderOptions, Services, Slots, table_family,
};
use crate::{Error, Family, NftSocket};
use applied::{Applied, Counts, Owners, drop_held_elsewhere, replaced_no_local};
use model::{ChangeSet, Snapshot};
use plan::NodeFacts;
use proxier::{
    Cleaned, Cleanup, Failure, LocalFuture, Mode, NftablesFigures, SyncError, SyncReport,
};
use std::time::{Duration, Instant};

/// The binary's choice for [`ProxierOptions::max_anonymous_sets_per_transaction`]:
/// 10,000 services' cold start measured 4.1–5.5 s in parts of 250 to
/// 4,000 anonymous sets alike (the kernel's walks of the table's sets
/// remain), 40–50 s as one transaction.
pub const MAX_ANONYMOUS_SETS_PER_TRANSACTION: usize = 1000;

/// What nftables mode is configured with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxierOptions {
    /// The render options from the configuration (the family included;
    /// `service_cidrs` is replaced on every sync by the snapshot's).
    pub render: RenderOptions,
    /// Sends a transaction creating more anonymous sets than this as
    /// staging transactions and a final one (see
    /// [`Syncer::with_max_anonymous_sets_per_transaction`]); `None`: every
    /// sync is one transaction.
    pub max_anonymous_sets_per_transaction: Option<usize>,
}

/// One IP family's nftables proxier: the socket, the syncer, the options
/// it renders with and what its last successful sync rendered.
pub struct NftablesProxier {
    socket: NftSocket,
    syncer: Syncer,
    opts: RenderOptions,
    applied: Option<Applied>,
    /// The balancing chains' slots of the shared endpoint maps, kept
    /// while their service ports exist.
    slots: EndpointSlots,
}

impl std::fmt::Debug for NftablesProxier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NftablesProxier")
            .field("family", &self.opts.common.family)
            .finish_non_exhaustive()
    }
}

/// A sync's rendering time and the applier's report.
struct Synced {
    render: Duration,
    applied: apply::SyncReport,
    counts: Counts,
    no_local: plan::NoLocalEndpoints,
}

impl NftablesProxier {
    /// Opens the nf_tables socket (in the network namespace of the calling
    /// thread); the first sync is full.
    pub fn new(options: ProxierOptions) -> Result<Self, Error> {
        let family = table_family(options.render.common.family);
        let mut syncer = Syncer::new(family).without_applied_state();
        if let Some(max) = options.max_anonymous_sets_per_transaction {
            syncer = syncer.with_max_anonymous_sets_per_transaction(max);
        }
        Ok(Self {
            socket: NftSocket::connect()?,
            syncer,
            opts: options.render,
            applied: None,
            slots: EndpointSlots::default(),
        })
    }

    /// The balancing chains' slots it holds (each port keeps its own
    /// while it exists; a fresh [`render::slots_in_order`] may differ).
    pub fn endpoint_slots(&self) -> &EndpointSlots {
        &self.slots
    }

    /// The table family it programs.
    pub fn family(&self) -> Family {
        table_family(self.opts.common.family)
    }

    async fn sync_snapshot(
        &mut self,
        snapshot: &Snapshot,
        changes: &ChangeSet,
        full: bool,
    ) -> Result<SyncReport, SyncError> {
        let facts = NodeFacts {
            local_addresses: host::read_local_addresses().await.map_err(|e| {
                // this snapshot's changes are not rendered: the next sync
                // cannot be partial
                self.applied = None;
                SyncError::new(Failure::Other, e)
            })?,
        };
        let started = Instant::now();
        self.opts.service_cidrs.clone_from(&snapshot.service_cidrs);
        let ctx = RenderContext::new(snapshot, &self.opts, &facts);
        let synced = self.sync_rendering(snapshot, changes, full, ctx, started);
        let synced = synced.map_err(|e| {
            self.applied = None;
            SyncError::new(Failure::NftablesSync, e)
        })?;
        Ok(report(synced, started.elapsed()))
    }

    /// A partial sync of the changed services when allowed and possible,
    /// else a full one.
    fn sync_rendering(
        &mut self,
        snapshot: &Snapshot,
        changes: &ChangeSet,
        full: bool,
        ctx: RenderContext,
        started: Instant,
    ) -> Result<Synced, Error> {
        let partial =
            !full && self.applied.is_some() && self.syncer.can_sync_partially(&mut self.socket)?;
        if partial && let Some(synced) = self.sync_changed(snapshot, changes, &ctx, started)? {
            return Ok(synced);
        }
        self.sync_everything(snapshot, ctx, started)
    }

    /// Renders every service and syncs fully (our table read back and
    /// compared).
    fn sync_everything(
        &mut self,
        snapshot: &Snapshot,
        ctx: RenderContext,
        started: Instant,
    ) -> Result<Synced, Error> {
        self.applied = None;
        let holding = match self.opts.shared_endpoint_maps {
            true => render::allocate_slots(&mut self.slots, snapshot, &ctx, Services::All),
            false => Default::default(),
        };
        let maps = self.slots.maps();
        let mut lean = render::render_lean(snapshot, &ctx, Slots::of(&self.slots));
        let no_local = lean.selected.rendered.no_local_endpoints;
        let shared_keys = std::mem::take(&mut lean.selected.shared_keys);
        // each port's chains rendered again and typed as the syncer takes
        // them: neither every chain's statements nor the table typed whole
        // are ever held
        let in_parts = lean.sets_in_parts();
        let (skeleton, pieces) = lean.into_pieces();
        let render = started.elapsed();
        let counted = std::cell::Cell::new(Counts::of(&skeleton));
        let pieces = pieces.inspect(|piece| counted.set(counted.get().with_piece(piece)));
        let applied =
            self.syncer
                .sync_full_in_pieces(&mut self.socket, skeleton, &in_parts, pieces)?;
        let counts = counted.get();
        self.slots.retain(|name| holding.contains(name));
        // built once the sync's own peak is over
        let owners = Owners::of(&shared_keys);
        drop(shared_keys);
        self.applied = Some(Applied {
            snapshot: snapshot.clone(),
            ctx,
            owners,
            counts,
            no_local,
            maps,
        });
        Ok(Synced {
            render,
            applied,
            counts,
            no_local,
        })
    }

    /// Renders only the services `changes` names (every service if the
    /// settings or the node changed), from the last snapshot and from
    /// this one, and applies the difference. `None` when a shared-set
    /// element the changed services give is also given, otherwise, by an
    /// unchanged service: a full sync must settle it.
    fn sync_changed(
        &mut self,
        snapshot: &Snapshot,
        changes: &ChangeSet,
        ctx: &RenderContext,
        started: Instant,
    ) -> Result<Option<Synced>, Error> {
        let Some(last) = self.applied.as_mut() else {
            return Ok(None);
        };
        let services = match *ctx != last.ctx || changes.node_changed {
            true => Services::All,
            false => Services::Only(&changes.services),
        };
        let last_slots = Slots {
            pairs: &self.slots,
            maps: last.maps,
        };
        let old = render::render_services(&last.snapshot, &last.ctx, services, last_slots);
        if self.opts.shared_endpoint_maps {
            render::allocate_slots(&mut self.slots, snapshot, ctx, services);
        }
        let new = render::render_services(snapshot, ctx, services, Slots::of(&self.slots));
        let (mut old_table, mut new_table) = (old.rendered.ruleset, new.rendered.ruleset);
        if drop_held_elsewhere(
            &mut old_table,
            &mut new_table,
            &last.owners,
            &old.shared_keys,
        )
        .is_err()
        {
            return Ok(None);
        }
        let (old_contents, new_contents) = (old_table.into_contents(), new_table.into_contents());
        let render = started.elapsed();
        let counts = last
            .counts
            .replaced(Counts::of(&old_contents), Counts::of(&new_contents));
        let no_local = replaced_no_local(
            last.no_local,
            old.rendered.no_local_endpoints,
            new.rendered.no_local_endpoints,
        );
        let applied = self
            .syncer
            .sync_difference(&mut self.socket, new_contents, old_contents)?;
        last.owners.remove(&old.shared_keys);
        last.owners.add(&new.shared_keys);
        last.release_slots_gone(&mut self.slots, snapshot, ctx, services);
        last.maps = self.slots.maps();
        // shares the tracker's maps (the services `changes` does not name
        // were the same already)
        last.snapshot = snapshot.clone();
        last.ctx = ctx.clone();
        last.counts = counts;
        last.no_local = no_local;
        Ok(Some(Synced {
            render,
            applied,
            counts,
            no_local,
        }))
    }
}

/// The mode-neutral report of `synced`, which took `total`.
fn report(synced: Synced, total: Duration) -> SyncReport {
    let Synced {
        render,
        applied,
        counts,
        no_local,
    } = synced;
    let figures = NftablesFigures {
        chains: counts.chains,
        rules: counts.rules,
        sets: counts.sets,
        elements: counts.elements,
        changes: applied.changes,
        chains_written: applied.counts.chains_written,
        rules_written: applied.counts.rules_written,
        elements_written: applied.counts.elements_written
            + applied.counts.anonymous_elements_written,
        objects_deleted: applied.counts.objects_deleted(),
        read_back: applied.read_back,
        read_back_kernel: applied.read_back_kernel,
    };
    SyncReport {
        render,
        apply: total.saturating_sub(render),
        partial: !applied.full,
        rule_tables: Vec::new(),
        written_chains: Some(applied.counts.chains_written),
        virtual_servers: None,
        nftables: Some(figures),
        kernel: Some(applied.kernel),
        no_local_internal: no_local.internal,
        no_local_external: no_local.external,
    }
}

impl proxier::Proxier for NftablesProxier {
    fn mode(&self) -> Mode {
        Mode::Nftables
    }

    /// Unknown until a sync succeeded, after a failed one, or when the
    /// syncer found our table changed by someone else.
    fn state_unknown(&mut self) -> LocalFuture<'_, Result<bool, SyncError>> {
        let unknown = self.applied.is_none() || self.syncer.needs_full_sync();
        Box::pin(async move { Ok(unknown) })
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

/// Everything nftables mode leaves: our `ip kube-proxy` and
/// `ip6 kube-proxy` tables (nothing else is read or touched).
#[derive(Debug, Clone, Copy, Default)]
pub struct NftablesCleanup;

/// The families whose `kube-proxy` table is ours.
const FAMILIES: [Family; 2] = [Family::Ip, Family::Ip6];

impl NftablesCleanup {
    /// Deletes our table of each family; per family whether it existed. A
    /// kernel without nf_tables has none (as upstream, which skips a family
    /// whose nftables it cannot use).
    fn delete_tables(&self) -> Vec<(Family, Result<bool, String>)> {
        self.delete_tables_of(&FAMILIES)
    }

    /// Deletes our table of each of `families`; per family whether it
    /// existed.
    fn delete_tables_of(&self, families: &[Family]) -> Vec<(Family, Result<bool, String>)> {
        let mut socket = match NftSocket::connect() {
            Ok(socket) => socket,
            Err(err) if nf_tables_unavailable(&err) => {
                return families.iter().map(|&f| (f, Ok(false))).collect();
            }
            Err(err) => {
                return families
                    .iter()
                    .map(|&f| (f, Err(err.to_string())))
                    .collect();
            }
        };
        families
            .iter()
            .map(|&family| {
                let result = match apply::cleanup(&mut socket, family) {
                    Err(err) if nf_tables_unavailable(&err) => Ok(false),
                    other => other.map_err(|e| e.to_string()),
                };
                (family, result)
            })
            .collect()
    }

    /// Logs what deleting our tables did.
    fn log_removed(removed: Vec<(Family, Result<bool, String>)>) {
        for (family, result) in removed {
            let family = family_name(family);
            match result {
                Ok(true) => tracing::info!(family, "removed what nftables mode left behind"),
                Ok(false) => {}
                Err(err) => {
                    tracing::debug!(family, %err, "cannot check for nftables leftovers")
                }
            }
        }
    }
}

/// Whether `err` says the kernel has no nf_tables: no `NETLINK_NETFILTER`
/// (the socket cannot be made), or no nf_tables subsystem or family
/// behind it (the kernel answers a request for our table with
/// `EINVAL`/`EOPNOTSUPP`/`EAFNOSUPPORT`).
fn nf_tables_unavailable(err: &Error) -> bool {
    let errno = match err {
        Error::Socket(e) => return e.raw_os_error() == Some(nix::libc::EPROTONOSUPPORT),
        Error::Kernel { source, .. } => source.raw_os_error(),
        _ => None,
    };
    matches!(
        errno,
        Some(nix::libc::EINVAL | nix::libc::EOPNOTSUPP | nix::libc::EAFNOSUPPORT)
    )
}

impl Cleanup for NftablesCleanup {
    fn mode(&self) -> Mode {
        Mode::Nftables
    }

    fn clean_up(&self) -> LocalFuture<'_, Vec<Cleaned>> {
        Box::pin(async {
            self.delete_tables()
                .into_iter()
                .map(|(family, result)| Cleaned {
                    what: format!(
                        "nftables {} {}",
                        family_name(family),
                        apply::KUBE_PROXY_TABLE
                    ),
                    result: result
                        .map_err(|e| e.to_string())
                        .map(|existed| match existed {
                            true => "table deleted".to_string(),
                            false => "no table".to_string(),
                        }),
                })
                .collect()
        })
    }

    /// Our tables are deleted when present (asking for them by name only);
    /// a failure (e.g. a kernel without nf_tables) is logged.
    fn remove_leftovers(&self) -> LocalFuture<'_, ()> {
        Box::pin(async { Self::log_removed(self.delete_tables()) })
    }

    /// Our table of `family` (`ip` or `ip6 kube-proxy`), as
    /// [`Cleanup::remove_leftovers`] does for both.
    fn remove_family_leftovers(&self, family: plan::IpFamily) -> LocalFuture<'_, ()> {
        let family = table_family(family);
        Box::pin(async move { Self::log_removed(self.delete_tables_of(&[family])) })
    }
}

/// The family as `nft` spells it.
fn family_name(family: Family) -> &'static str {
    match family {
        Family::Ip => "ip",
        Family::Ip6 => "ip6",
        Family::Inet => "inet",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_without_nf_tables_has_nothing_to_clean() {
        let errno = |n| std::io::Error::from_raw_os_error(n);
        let kernel = |n| Error::Kernel {
            operation: "get table ip kube-proxy".into(),
            source: errno(n),
        };
        assert!(nf_tables_unavailable(&Error::Socket(errno(
            nix::libc::EPROTONOSUPPORT
        ))));
        assert!(nf_tables_unavailable(&kernel(nix::libc::EINVAL)));
        assert!(nf_tables_unavailable(&kernel(nix::libc::EOPNOTSUPP)));
        assert!(
            !nf_tables_unavailable(&kernel(nix::libc::EPERM)),
            "no permission is a failure"
        );
        assert!(!nf_tables_unavailable(&Error::Socket(errno(
            nix::libc::EPERM
        ))));
    }

    #[test]
    fn figures_count_named_sets_and_their_elements_only() {
        let snapshot = model::Snapshot::default();
        let rendered = render::render(&snapshot, &RenderOptions::default(), &NodeFacts::default());
        let contents = rendered.ruleset.contents();
        let counts = Counts::of(&contents);
        assert_eq!(counts.chains, contents.chains.len());
        assert_eq!(counts.rules, contents.rules.len());
        assert!(counts.sets > 0 && counts.sets <= contents.sets.len());
    }
}
