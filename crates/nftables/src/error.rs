//! Errors of the nf_tables codec and transport.

use std::io;

/// A failed nf_tables operation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The netlink socket could not be opened or configured.
    #[error("cannot open an nf_tables netlink socket: {0}")]
    Socket(#[source] io::Error),
    /// A batch or request could not be sent.
    #[error("{operation}: send: {source}")]
    Send {
        /// What was being sent.
        operation: String,
        /// The errno.
        source: io::Error,
    },
    /// Replies could not be read (e.g. `ENOBUFS`: they overflowed the
    /// socket; the batch is then treated as failed).
    #[error("{operation}: receive: {source}")]
    Receive {
        /// What was being done.
        operation: String,
        /// The errno.
        source: io::Error,
    },
    /// The kernel refused a transaction; nothing of it was applied. The
    /// first refusal names the object; all are kept.
    #[error("nf_tables transaction refused: {}", refusals_summary(.0))]
    Refused(Vec<Refusal>),
    /// The kernel refused a request (a listing).
    #[error("{operation}: {source}")]
    Kernel {
        /// What was being done.
        operation: String,
        /// The errno.
        source: io::Error,
    },
    /// A reply could not be decoded.
    #[error("{operation}: cannot decode the kernel's reply: {reason}")]
    Decode {
        /// What was being read.
        operation: String,
        /// Why.
        reason: String,
    },
}

/// One message of a batch the kernel refused.
#[derive(Debug)]
pub struct Refusal {
    /// The change and object, e.g. `add rule ip kube-proxy services`.
    pub object: String,
    /// The errno.
    pub source: io::Error,
    /// The kernel's extended-ack message, if it gave one.
    pub detail: Option<String>,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.object, self.source)?;
        if let Some(d) = &self.detail {
            write!(f, " ({d})")?;
        }
        Ok(())
    }
}

/// The first refusal, and how many more there were.
fn refusals_summary(refusals: &[Refusal]) -> String {
    match refusals {
        [] => "no reason given".to_string(),
        [one] => one.to_string(),
        [first, rest @ ..] => format!("{first} (and {} more)", rest.len()),
    }
}
