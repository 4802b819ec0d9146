//! The userspace tools IPVS mode still needs (`ipset`, and
//! `iptables-restore` for the companion rules' cleanup), run through the
//! host layer's one tool runner; failures keep the shape IPVS mode's
//! errors report.

/// Why a command failed: it could not start, or it exited non-zero.
#[derive(Debug)]
pub(crate) enum CommandFailure {
    /// The program could not be started (not installed?).
    Spawn(std::io::Error),
    /// It ran and failed; its exit status and stderr.
    Failed(String),
}

impl std::fmt::Display for CommandFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CommandFailure::Spawn(e) => write!(f, "cannot start: {e}"),
            CommandFailure::Failed(s) => f.write_str(s),
        }
    }
}

impl From<host::Error> for CommandFailure {
    fn from(err: host::Error) -> Self {
        match err {
            host::Error::Spawn { source, .. } => CommandFailure::Spawn(source),
            host::Error::Command { status, stderr, .. } => CommandFailure::Failed(format!("{status}: {stderr}")),
            other => CommandFailure::Failed(other.to_string()),
        }
    }
}

/// Runs `program args`, feeding `stdin`, and returns its stdout.
pub(crate) async fn run(program: &str, args: &[&str], stdin: Option<&str>) -> Result<String, CommandFailure> {
    Ok(host::command::output_with(&host::Invocation::with_args(program, args), stdin).await?)
}
