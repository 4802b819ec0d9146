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

/// Starts `inv` with its stdin, stdout and stderr piped (killed if
/// dropped).
pub(crate) fn spawn_piped(inv: &Invocation) -> Result<tokio::process::Child, Error> {
    tokio::process::Command::new(&inv.program)
        .args(&inv.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|source| Error::Spawn { command: inv.to_string(), source })
}

/// Runs `inv` and hands each line of its stdout (without the newline) to
/// `line` as it comes, never holding the whole output; a non-zero exit
/// is [`Error::Command`].
pub(crate) async fn stream_lines(inv: &Invocation, mut line: impl FnMut(&str)) -> Result<(), Error> {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
    let spawn_error = |source| Error::Spawn { command: inv.to_string(), source };
    let mut child = tokio::process::Command::new(&inv.program)
        .args(&inv.args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(spawn_error)?;
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let read_out = async {
        let Some(stdout) = stdout else { return Ok(()) };
        let mut reader = BufReader::with_capacity(64 * 1024, stdout);
        let mut buf = Vec::with_capacity(1024);
        while reader.read_until(b'\n', &mut buf).await? > 0 {
            let text = String::from_utf8_lossy(&buf);
            line(text.trim_end_matches(['\n', '\r']));
            buf.clear();
        }
        Ok::<(), std::io::Error>(())
    };
    let read_err = async {
        let mut err = Vec::new();
        if let Some(mut stderr) = stderr {
            let _ = stderr.read_to_end(&mut err).await;
        }
        err
    };
    let (read, err) = tokio::join!(read_out, read_err);
    if read.is_err() {
        // Nobody reads its output any more: it must not wait for us.
        let _ = child.start_kill();
    }
    let status = child.wait().await.map_err(spawn_error)?;
    let output = Output { status, stdout: Vec::new(), stderr: err };
    if !status.success() {
        return Err(failed(inv, &output));
    }
    read.map_err(spawn_error)
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
