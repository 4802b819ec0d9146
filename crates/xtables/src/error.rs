//! Errors of the iptables tools: a failed restore mapped back to its
//! input, a bad backend name, and the host layer's errors (commands,
//! netlink, sysctls) as they are.

use crate::Table;
use std::fmt;

/// A failed iptables operation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An iptables tool could not be started or exited non-zero, or a
    /// netlink request or sysctl failed (the host layer's error, as it is).
    #[error(transparent)]
    Host(#[from] host::Error),
    /// `iptables-restore` rejected its input. The table that failed is
    /// unchanged; tables committed before it in the same input were put
    /// back as they were (see [`RestoreFailure::rollback`]).
    #[error("{0}")]
    Restore(Box<RestoreFailure>),
    /// A rendering carried a service port's chains over from a last sync
    /// that did not render that port (or into a full sync): nothing was
    /// written.
    #[error("the rendering carried the chains of {service_port} over from a sync that did not write them")]
    UnknownCarried {
        /// The service port (`ns/name:port`).
        service_port: String,
    },
    /// `--iptables-backend` had a value other than `auto`, `legacy`, `nft`.
    #[error("invalid iptables backend {value:?}: want auto, legacy or nft")]
    UnknownBackend {
        /// The value given.
        value: String,
    },
}

/// What a failed `iptables-restore` said, mapped back to its input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoreFailure {
    /// The command line.
    pub command: String,
    /// The 1-based line of the input the tool named, if it named one.
    pub line: Option<usize>,
    /// That line of the input (for a legacy commit failure this is the
    /// table's `COMMIT`: the kernel does not say which rule it refused).
    pub text: String,
    /// The table the line belongs to.
    pub table: Option<Table>,
    /// What the tool printed on stderr, trimmed.
    pub stderr: String,
    /// What happened to the tables committed before the failure.
    pub rollback: Rollback,
}

impl fmt::Display for RestoreFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed", self.command)?;
        if let Some(n) = self.line {
            write!(f, " at line {n} `{}`", self.text)?;
        }
        if let Some(table) = self.table {
            write!(f, " (table {table})")?;
        }
        write!(f, ": {}{}", self.stderr, self.rollback)
    }
}

/// What a failed restore did to the tables committed before the failing
/// one (`iptables-restore` commits each `*table ... COMMIT` block on its
/// own, with both backends).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rollback {
    /// No earlier table had been committed.
    NotNeeded,
    /// These tables had been committed and were restored to the chains of
    /// ours they held before.
    Done(Vec<Table>),
    /// Putting these tables back failed too; they hold the new rules.
    Failed {
        /// The tables that could not be put back.
        tables: Vec<Table>,
        /// The rollback's error.
        error: String,
    },
    /// A partial sync failed after these tables had been committed; it
    /// keeps no copy of the old rules, so they hold the new ones until the
    /// next sync, which is a full one.
    Skipped(Vec<Table>),
}

impl fmt::Display for Rollback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |tables: &[Table]| tables.iter().map(|t| t.as_str()).collect::<Vec<_>>().join(", ");
        match self {
            Rollback::NotNeeded => Ok(()),
            Rollback::Done(tables) => write!(f, " (already committed tables rolled back: {})", names(tables)),
            Rollback::Failed { tables, error } => {
                write!(f, " (rolling back already committed tables {} failed too: {error})", names(tables))
            }
            Rollback::Skipped(tables) => {
                write!(f, " (partial sync: already committed tables {} keep the new rules until the next, full, sync)", names(tables))
            }
        }
    }
}
