//! Running the userspace tools IPVS mode still needs (`ipset`, and
//! `iptables-restore` until the iptables applier is shared), with their
//! input on stdin and their stderr in the error.

use std::process::Stdio;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

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

/// Runs `program args`, feeding `stdin`, and returns its stdout.
pub(crate) async fn run(program: &str, args: &[&str], stdin: Option<&str>) -> Result<String, CommandFailure> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(CommandFailure::Spawn)?;
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A write error means the tool exited early; its status says why.
        let _ = pipe.write_all(input.as_bytes()).await;
        drop(pipe);
    }
    let out = child.wait_with_output().await.map_err(CommandFailure::Spawn)?;
    if !out.status.success() {
        return Err(CommandFailure::Failed(format!("{}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim())));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
