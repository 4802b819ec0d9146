//! Removing what a mode left in the kernel: everything on `--cleanup`, or
//! another mode's leftovers when a mode starts (before its first sync) or
//! once it has synced a family (after that family's first sync).

use crate::{LocalFuture, Mode};
use model::IpFamily;

/// One part of a cleanup (a backend and family, a kind of kernel object)
/// and how it went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cleaned {
    /// What was cleaned, e.g. `iptables legacy IPv4`.
    pub what: String,
    /// What was removed, for the log; or why it could not be.
    pub result: Result<String, String>,
}

/// What a mode leaves in the kernel, and its removal.
pub trait Cleanup {
    /// The mode whose objects these are.
    fn mode(&self) -> Mode;

    /// Removes everything of the mode; one entry per part cleaned.
    fn clean_up(&self) -> LocalFuture<'_, Vec<Cleaned>>;

    /// Removes the mode's leftovers when a different mode starts, only if
    /// some are present (so objects others use are left alone); failures
    /// are logged, not fatal.
    fn remove_leftovers(&self) -> LocalFuture<'_, ()>;

    /// Removes the mode's leftovers of one IP family, once a different
    /// mode has synced that family (so the node always has one mode's
    /// service rules). Removes everything unless the mode overrides it;
    /// failures are logged, not fatal.
    fn remove_family_leftovers(&self, family: IpFamily) -> LocalFuture<'_, ()> {
        let _ = family;
        self.remove_leftovers()
    }
}
