//! The conntrack crate's errors.

use crate::netlink::codec::DecodeError;

/// A failed conntrack operation over netlink.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The ctnetlink socket could not be opened.
    #[error("cannot open a ctnetlink socket: {0}")]
    Socket(std::io::Error),
    /// Sending, receiving, or the kernel refused a request.
    #[error("{operation}: {source}")]
    Netlink {
        /// What was asked.
        operation: String,
        /// Why it failed (the kernel's errno for a refusal).
        source: std::io::Error,
    },
    /// A reply could not be decoded.
    #[error("{operation}: {source}")]
    Decode {
        /// What was asked.
        operation: String,
        /// What was wrong with the reply.
        source: DecodeError,
    },
    /// The blocking task running the netlink exchange failed.
    #[error("conntrack task failed: {0}")]
    Task(String),
}
