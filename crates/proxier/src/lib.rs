//! The proxier seam: what every mode (iptables, IPVS, nftables, userspace)
//! offers the binary, so the binary only picks a mode and wires source →
//! tracker → runner → proxier → health and metrics.
//!
//! A mode's proxier is built by its own crate (the constructor sets up the
//! kernel) and then driven through [`Proxier`]: the runner's full-sync
//! policy (`runner::FullSyncPolicy`) asks [`Proxier::state_unknown`] when
//! nothing else decided, and [`Proxier::sync`] does what was decided and
//! returns a mode-neutral [`SyncReport`] for the metrics and the sync log,
//! or a [`SyncError`] whose [`Failure`] says which per-mode failure counter
//! it counts in. [`Cleanup`] removes what a mode leaves in the kernel
//! (`--cleanup`, or another mode's leftovers at start-up).
//!
//! The futures are not `Send` (IPVS mode's netlink futures are not): the
//! sync loop runs on one task, so the trait returns boxed local futures and
//! the binary holds one `Box<dyn Proxier>`.

mod cleanup;
mod error;
mod report;

pub use cleanup::{Cleaned, Cleanup};
pub use error::{Failure, SyncError};
pub use report::{NftablesFigures, SyncReport, TableRules};

use model::{ChangeSet, Snapshot};
use std::future::Future;
use std::pin::Pin;

/// A boxed future that may hold non-`Send` state (netlink handles).
pub type LocalFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// The mode a proxier programs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// iptables mode.
    Iptables,
    /// IPVS mode.
    Ipvs,
    /// nftables mode.
    Nftables,
    /// Userspace mode (proxy ports and portal rules).
    Userspace,
}

impl Mode {
    /// The mode as `--proxy-mode` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Iptables => "iptables",
            Mode::Ipvs => "ipvs",
            Mode::Nftables => "nftables",
            Mode::Userspace => "userspace",
        }
    }
}

/// One IP family's datapath programmer, set up by its constructor.
pub trait Proxier {
    /// The mode it programs.
    fn mode(&self) -> Mode;

    /// Whether it does not know what the kernel holds (nothing synced yet,
    /// the last sync failed, or someone flushed its rules: iptables mode's
    /// canary chain is gone), so the next sync must be a full one. Asked
    /// by the full-sync policy only when nothing else decided.
    fn state_unknown(&mut self) -> LocalFuture<'_, Result<bool, SyncError>>;

    /// Renders every service of `snapshot` and applies it: everything when
    /// `full`, else only what changed since the last sync (a mode that
    /// always diffs the kernel may sync everything either way; the report
    /// says which it did). `changes` says which services changed since the
    /// snapshot of the previous call (the tracker's change set, merged
    /// over calls that did not reach the proxier): a mode may render only
    /// those in a partial sync; iptables and IPVS modes ignore it.
    fn sync<'a>(
        &'a mut self,
        snapshot: &'a Snapshot,
        changes: &'a ChangeSet,
        full: bool,
    ) -> LocalFuture<'a, Result<SyncReport, SyncError>>;
}
