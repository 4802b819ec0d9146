//! nftables mode's proxier ([`proxier::Proxier`]) and cleanup
//! ([`proxier::Cleanup`]).
//!
//! Per sync: the node's addresses read (host layer) into [`NodeFacts`],
//! the service CIDRs taken from the snapshot (ServiceCIDR objects: the
//! rule dropping traffic to unallocated ClusterIPs), the snapshot rendered (pure, [`render::render`]) into the table's typed
//! objects, and the [`Syncer`] brings `ip kube-proxy` (or `ip6`) there in
//! one transaction — full (our table read back and diffed) when the runner's
//! policy asks for it or the syncer does not trust what it applied last,
//! else partial (diffed against the last applied state, no read-back). The
//! report carries the table's counts, what the transaction changed and the
//! kernel's own share of the time.
//!
//! A failed sync counts as [`Failure::NftablesSync`]. Chains and sets no
//! longer wanted are deleted in the sync's own transaction (upstream
//! deletes them later, in a transaction of their own whose failure it
//! counts as a cleanup failure), so this proxier never reports
//! [`Failure::NftablesCleanup`].

use crate::apply::{self, Syncer};
use crate::render::{self, RenderOptions, table_family};
use crate::{Error, Family, NftSocket, TableContents};
use model::Snapshot;
use plan::NodeFacts;
use proxier::{
    Cleaned, Cleanup, Failure, LocalFuture, Mode, NftablesFigures, SyncError, SyncReport,
};
use std::time::Instant;

/// What nftables mode is configured with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxierOptions {
    /// The render options from the configuration (the family included;
    /// `service_cidrs` is replaced on every sync by the snapshot's).
    pub render: RenderOptions,
    /// Sends a transaction creating more anonymous sets than this as
    /// several transactions (see
    /// [`Syncer::with_max_anonymous_sets_per_transaction`]); `None`: every
    /// sync is one transaction.
    pub max_anonymous_sets_per_transaction: Option<usize>,
}

/// One IP family's nftables proxier: the socket, the syncer (with what it
/// applied last) and the options it renders with.
pub struct NftablesProxier {
    socket: NftSocket,
    syncer: Syncer,
    opts: RenderOptions,
}

impl std::fmt::Debug for NftablesProxier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NftablesProxier")
            .field("family", &self.opts.common.family)
            .finish_non_exhaustive()
    }
}

impl NftablesProxier {
    /// Opens the nf_tables socket (in the network namespace of the calling
    /// thread); the first sync is full.
    pub fn new(options: ProxierOptions) -> Result<Self, Error> {
        let family = table_family(options.render.common.family);
        let mut syncer = Syncer::new(family);
        if let Some(max) = options.max_anonymous_sets_per_transaction {
            syncer = syncer.with_max_anonymous_sets_per_transaction(max);
        }
        Ok(Self {
            socket: NftSocket::connect()?,
            syncer,
            opts: options.render,
        })
    }

    /// The table family it programs.
    pub fn family(&self) -> Family {
        table_family(self.opts.common.family)
    }

    async fn sync_snapshot(
        &mut self,
        snapshot: &Snapshot,
        full: bool,
    ) -> Result<SyncReport, SyncError> {
        let facts = NodeFacts {
            local_addresses: host::read_local_addresses()
                .await
                .map_err(|e| SyncError::new(Failure::Other, e))?,
        };
        let started = Instant::now();
        self.opts.service_cidrs.clone_from(&snapshot.service_cidrs);
        let rendered = render::render(snapshot, &self.opts, &facts);
        let contents = rendered.ruleset.contents();
        let rendered_at = started.elapsed();
        let mut figures = table_figures(&contents);
        let applied = match full {
            true => self.syncer.sync_full(&mut self.socket, contents),
            false => self.syncer.sync_partial(&mut self.socket, contents),
        }
        .map_err(|e| SyncError::new(Failure::NftablesSync, e))?;
        figures.changes = applied.changes;
        figures.chains_written = applied.counts.chains_written;
        figures.rules_written = applied.counts.rules_written;
        figures.elements_written =
            applied.counts.elements_written + applied.counts.anonymous_elements_written;
        figures.objects_deleted = applied.counts.objects_deleted();
        figures.read_back = applied.read_back;
        Ok(SyncReport {
            render: rendered_at,
            apply: started.elapsed().saturating_sub(rendered_at),
            partial: !applied.full,
            rule_tables: Vec::new(),
            written_chains: Some(applied.counts.chains_written),
            virtual_servers: None,
            nftables: Some(figures),
            kernel: Some(applied.kernel),
            no_local_internal: rendered.no_local_endpoints.internal,
            no_local_external: rendered.no_local_endpoints.external,
        })
    }
}

impl proxier::Proxier for NftablesProxier {
    fn mode(&self) -> Mode {
        Mode::Nftables
    }

    /// Unknown until a sync succeeded, after a failed one, or when the
    /// syncer found our table changed by someone else.
    fn state_unknown(&mut self) -> LocalFuture<'_, Result<bool, SyncError>> {
        let unknown = self.syncer.needs_full_sync();
        Box::pin(async move { Ok(unknown) })
    }

    fn sync<'a>(
        &'a mut self,
        snapshot: &'a Snapshot,
        full: bool,
    ) -> LocalFuture<'a, Result<SyncReport, SyncError>> {
        Box::pin(self.sync_snapshot(snapshot, full))
    }
}

/// The counts of the table as rendered.
fn table_figures(contents: &TableContents) -> NftablesFigures {
    let named = |s: &&crate::Set| !apply_is_anonymous(s);
    NftablesFigures {
        chains: contents.chains.len(),
        rules: contents.rules.len(),
        sets: contents.sets.iter().filter(named).count(),
        elements: contents
            .sets
            .iter()
            .filter(named)
            .filter_map(|s| contents.elements.get(&TableContents::set_key(s)))
            .map(Vec::len)
            .sum(),
        ..NftablesFigures::default()
    }
}

fn apply_is_anonymous(set: &crate::Set) -> bool {
    set.flags.contains(crate::SetFlags::ANONYMOUS)
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
        let mut socket = match NftSocket::connect() {
            Ok(socket) => socket,
            Err(err) if nf_tables_unavailable(&err) => {
                return FAMILIES.map(|f| (f, Ok(false))).into();
            }
            Err(err) => return FAMILIES.map(|f| (f, Err(err.to_string()))).into(),
        };
        FAMILIES
            .map(|family| {
                let result = match apply::cleanup(&mut socket, family) {
                    Err(err) if nf_tables_unavailable(&err) => Ok(false),
                    other => other.map_err(|e| e.to_string()),
                };
                (family, result)
            })
            .into()
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
        Box::pin(async {
            for (family, result) in self.delete_tables() {
                let family = family_name(family);
                match result {
                    Ok(true) => tracing::info!(family, "removed what nftables mode left behind"),
                    Ok(false) => {}
                    Err(err) => {
                        tracing::debug!(family, %err, "cannot check for nftables leftovers")
                    }
                }
            }
        })
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
        let figures = table_figures(&contents);
        assert_eq!(figures.chains, contents.chains.len());
        assert_eq!(figures.rules, contents.rules.len());
        assert!(figures.sets > 0 && figures.sets <= contents.sets.len());
        assert_eq!(figures.changes, 0);
    }
}
