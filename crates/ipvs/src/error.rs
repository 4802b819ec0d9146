//! Errors of the IPVS backend.

use std::io;

/// A failed IPVS-mode operation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The kernel has no IPVS (the `IPVS` generic-netlink family is not
    /// registered): the proxy should fall back to iptables mode.
    #[error("the kernel does not support IPVS (generic netlink family \"IPVS\" not found: {0})")]
    IpvsUnavailable(String),
    /// The kernel has IPVS but not the configured scheduler.
    #[error("the kernel has no IPVS scheduler {scheduler:?} (module ip_vs_{scheduler}): {source}")]
    SchedulerUnavailable {
        /// The scheduler name.
        scheduler: String,
        /// The kernel's errno.
        source: io::Error,
    },
    /// A generic-netlink socket could not be opened.
    #[error("cannot open a generic netlink socket: {0}")]
    NetlinkSocket(#[source] io::Error),
    /// The netlink connection went away mid-request.
    #[error("{operation}: netlink connection closed: {reason}")]
    ConnectionClosed {
        /// What was being done.
        operation: String,
        /// Why the request could not be sent.
        reason: String,
    },
    /// The kernel refused a request.
    #[error("{operation}: {source}")]
    Kernel {
        /// What was being done, with the service / real server involved.
        operation: String,
        /// The kernel's errno.
        source: io::Error,
    },
    /// An `ipset` command failed.
    #[error("{operation}: {detail}")]
    Ipset {
        /// The command.
        operation: String,
        /// Its exit status and stderr.
        detail: String,
    },
    /// An rtnetlink operation on the dummy link or its addresses failed.
    #[error("{operation}: {detail}")]
    Link {
        /// What was being done.
        operation: String,
        /// The kernel's answer.
        detail: String,
    },
    /// The companion iptables rules could not be applied or removed.
    #[error("iptables: {0}")]
    Iptables(Box<xtables::Error>),
    /// Removing our iptables chains failed.
    #[error("{command}: {detail}")]
    IptablesCleanup {
        /// The restore program.
        command: String,
        /// Its exit status and stderr.
        detail: String,
    },
    /// A sysctl could not be read or written.
    #[error("cannot set sysctl {key}={value}: {source}")]
    Sysctl {
        /// The sysctl, dotted.
        key: String,
        /// The value wanted.
        value: String,
        /// The OS error.
        source: io::Error,
    },
    /// Some virtual or real servers could not be synced (the rest were).
    #[error("IPVS sync incomplete ({} failures): {}", errors.len(), errors.join("; "))]
    Incomplete {
        /// Each failure.
        errors: Vec<String>,
    },
    /// IPVS's connection table could not be read.
    #[error("cannot read {path}: {source}")]
    ConnectionTable {
        /// The procfs file.
        path: String,
        /// The OS error.
        source: io::Error,
    },
    /// A kernel reply could not be decoded.
    #[error("{operation}: cannot decode the kernel's reply: {reason}")]
    Decode {
        /// What was being done.
        operation: String,
        /// The decoder's complaint.
        reason: String,
    },
}

impl Error {
    /// The kernel has no IPVS: the proxy falls back to iptables mode.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Error::IpvsUnavailable(_))
    }

    /// The kernel said the service or real server does not exist
    /// (`ESRCH` / `ENOENT`).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::Kernel { source, .. } if matches!(source.raw_os_error(), Some(2 | 3)))
    }

    /// The kernel said the service or real server already exists (`EEXIST`).
    pub fn is_already_exists(&self) -> bool {
        matches!(self, Error::Kernel { source, .. } if source.raw_os_error() == Some(17))
    }
}

impl From<xtables::Error> for Error {
    fn from(e: xtables::Error) -> Self {
        Error::Iptables(Box::new(e))
    }
}
