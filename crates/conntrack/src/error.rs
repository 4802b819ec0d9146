//! The conntrack crate's errors.

/// A failed `conntrack` invocation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The tool could not be started (not installed?).
    #[error("cannot run `{command}`: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// Why.
        source: std::io::Error,
    },
    /// The tool ran and failed.
    #[error("`{command}` failed ({status}): {stderr}")]
    Failed {
        /// The command line.
        command: String,
        /// Its exit status.
        status: std::process::ExitStatus,
        /// What it printed on stderr.
        stderr: String,
    },
    /// Anything else the host layer reported.
    #[error(transparent)]
    Host(host::Error),
}

impl From<host::Error> for Error {
    fn from(err: host::Error) -> Self {
        match err {
            host::Error::Spawn { command, source } => Error::Spawn { command, source },
            host::Error::Command { command, status, stderr } => Error::Failed { command, status, stderr },
            other => Error::Host(other),
        }
    }
}
