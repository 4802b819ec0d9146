//! The host layer's errors: one variant per kind of failed operation, each
//! naming the command, sysctl or netlink request involved.

/// A failed host operation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A tool could not be started, or its pipes failed.
    #[error("cannot run {command}: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A tool ran and exited non-zero.
    #[error("{command} failed ({status}): {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// How it exited.
        status: std::process::ExitStatus,
        /// What it printed on stderr, trimmed.
        stderr: String,
    },
    /// A netlink request (nfacct, address dump) failed.
    #[error("netlink {operation} failed: {source}")]
    Netlink {
        /// What was asked, e.g. `nfacct add ct_state_invalid_dropped_pkts`.
        operation: String,
        /// The OS error (or the kernel's errno).
        source: std::io::Error,
    },
    /// A sysctl under /proc/sys could not be read or written.
    #[error("sysctl {path}: {source}")]
    Sysctl {
        /// The /proc/sys path.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
}
