//! Running the iptables tools with `tokio::process`: one invocation, its
//! stdin, and its exit turned into an [`Error`] naming the command.

use crate::Error;
use std::fmt;
use std::process::{Output, Stdio};
use tokio::io::AsyncWriteExt;

/// A program and its arguments, printable as the command line for errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Invocation {
    pub(crate) program: String,
    pub(crate) args: Vec<String>,
}

impl Invocation {
    pub(crate) fn new(program: String, args: Vec<String>) -> Self {
        Self { program, args }
    }
}

impl fmt::Display for Invocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.program)?;
        for arg in &self.args {
            if arg.is_empty() || arg.contains(char::is_whitespace) {
                write!(f, " {arg:?}")?;
            } else {
                write!(f, " {arg}")?;
            }
        }
        Ok(())
    }
}

/// Runs `inv` with `stdin` as its input and returns how it ended; a
/// non-zero exit is not an error here.
pub(crate) async fn run(inv: &Invocation, stdin: Option<&str>) -> Result<Output, Error> {
    let spawn_error = |source| Error::Spawn { command: inv.to_string(), source };
    let mut child = tokio::process::Command::new(&inv.program)
        .args(&inv.args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(spawn_error)?;
    let pipe = child.stdin.take();
    let feed = async {
        if let (Some(input), Some(mut pipe)) = (stdin, pipe) {
            pipe.write_all(input.as_bytes()).await?;
            pipe.shutdown().await?;
        }
        Ok::<(), std::io::Error>(())
    };
    // Feed stdin while collecting stdout/stderr so neither side can block.
    let (fed, output) = tokio::join!(feed, child.wait_with_output());
    let output = output.map_err(spawn_error)?;
    // A tool that exits early (bad input) closes its stdin: that is its
    // exit status's story, not a spawn failure.
    if let Err(err) = fed
        && output.status.success()
    {
        return Err(spawn_error(err));
    }
    Ok(output)
}

/// Runs `inv` and returns its stdout; a non-zero exit is
/// [`Error::Command`].
pub(crate) async fn output(inv: &Invocation) -> Result<String, Error> {
    let out = run(inv, None).await?;
    if !out.status.success() {
        return Err(failed(inv, &out));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// [`Error::Command`] for a finished invocation.
pub(crate) fn failed(inv: &Invocation, out: &Output) -> Error {
    Error::Command { command: inv.to_string(), status: out.status.to_string(), stderr: stderr_of(out) }
}

/// The trimmed stderr of `out`.
pub(crate) fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).trim().to_string()
}
