//! Errors of the iptables backend.

/// A failed iptables operation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An iptables tool could not be started.
    #[error("cannot run {command}: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// The OS error.
        source: std::io::Error,
    },
}
