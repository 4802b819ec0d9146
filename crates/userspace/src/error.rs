//! Errors of userspace mode.

/// A failed userspace-mode operation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Writing the portal rules failed.
    #[error(transparent)]
    Iptables(#[from] xtables::Error),
    /// Reading the node's addresses failed.
    #[error("cannot read the node's addresses: {0}")]
    Addresses(String),
    /// Some listeners could not be opened (the others serve, their portal
    /// rules are in).
    #[error("{failed} of {wanted} proxy ports could not be opened: {first}")]
    Listeners {
        /// Listeners that failed.
        failed: usize,
        /// Listeners wanted.
        wanted: usize,
        /// The first failure.
        first: String,
    },
}
