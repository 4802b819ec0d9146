//! The one runner of external tools (`iptables-restore`, `ipset`,
//! `conntrack`, ...) with `tokio::process`: an [`Invocation`] (program and
//! arguments, printable as the command line), optionally fed on stdin, and
//! its exit turned into an [`Error`] naming the command and carrying its
//! stderr. A tool's own lock waiting (`iptables --wait=5`) is one of its
//! arguments. Children are killed when their future is dropped.

use crate::Error;
use std::fmt;
use std::process::{Output, Stdio};
use tokio::io::AsyncWriteExt;

/// A program and its arguments, printable as the command line for errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// The program (looked up in `PATH`).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables set in its environment (beside the inherited ones).
    pub env: Vec<(String, String)>,
}

impl Invocation {
    /// `program` with `args`.
    pub fn new(program: impl Into<String>, args: Vec<String>) -> Self {
        Self {
            program: program.into(),
            args,
            env: Vec::new(),
        }
    }

    /// The same command with `key=value` in its environment.
    pub fn with_env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// `program` with borrowed `args`.
    pub fn with_args(program: impl Into<String>, args: &[&str]) -> Self {
        Self::new(program, args.iter().map(|a| a.to_string()).collect())
    }

    /// [`Error::Spawn`] for this command.
    pub fn spawn_error(&self, source: std::io::Error) -> Error {
        Error::Spawn {
            command: self.to_string(),
            source,
        }
    }

    /// [`Error::Command`] for this command's finished `out`.
    pub fn failed(&self, out: &Output) -> Error {
        Error::Command {
            command: self.to_string(),
            status: out.status,
            stderr: stderr_of(out),
        }
    }

    fn command(&self, stdin: Stdio) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        command
    }
}

impl fmt::Display for Invocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (key, value) in &self.env {
            write!(f, "{key}={value} ")?;
        }
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
pub async fn run(inv: &Invocation, stdin: Option<&str>) -> Result<Output, Error> {
    let mut child = inv
        .command(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .spawn()
        .map_err(|e| inv.spawn_error(e))?;
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
    let output = output.map_err(|e| inv.spawn_error(e))?;
    // A tool that exits early (bad input) closes its stdin: that is its
    // exit status's story, not a spawn failure.
    if let Err(err) = fed
        && output.status.success()
    {
        return Err(inv.spawn_error(err));
    }
    Ok(output)
}

/// Runs `inv` (fed `stdin`) and returns its stdout; a non-zero exit is
/// [`Error::Command`].
pub async fn output_with(inv: &Invocation, stdin: Option<&str>) -> Result<String, Error> {
    let out = run(inv, stdin).await?;
    if !out.status.success() {
        return Err(inv.failed(&out));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs `inv` and returns its stdout; a non-zero exit is
/// [`Error::Command`].
pub async fn output(inv: &Invocation) -> Result<String, Error> {
    output_with(inv, None).await
}

/// Starts `inv` with its stdin, stdout and stderr piped (killed if
/// dropped), for callers that stream their input.
pub fn spawn_piped(inv: &Invocation) -> Result<tokio::process::Child, Error> {
    inv.command(Stdio::piped())
        .spawn()
        .map_err(|e| inv.spawn_error(e))
}

/// Runs `inv` and hands each line of its stdout (without the newline) to
/// `line` as it comes, never holding the whole output; a non-zero exit
/// is [`Error::Command`].
pub async fn stream_lines(inv: &Invocation, mut line: impl FnMut(&str)) -> Result<(), Error> {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
    let mut child = inv
        .command(Stdio::null())
        .spawn()
        .map_err(|e| inv.spawn_error(e))?;
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
    let status = child.wait().await.map_err(|e| inv.spawn_error(e))?;
    let output = Output {
        status,
        stdout: Vec::new(),
        stderr: err,
    };
    if !status.success() {
        return Err(inv.failed(&output));
    }
    read.map_err(|e| inv.spawn_error(e))
}

/// The stderr of `out` on one line: its non-blank lines, trimmed, joined
/// with `; ` (a tool's several lines would otherwise split the one log
/// line of a failed sync, losing the fields after the error).
pub fn stderr_of(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stderr);
    text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_quote_empty_and_spaced_arguments() {
        let inv = Invocation::with_args("iptables", &["-m", "comment", "--comment", "a b", ""]);
        assert_eq!(inv.to_string(), r#"iptables -m comment --comment "a b" """#);
    }

    #[tokio::test]
    async fn variables_reach_the_tool_and_its_command_line() {
        let inv = Invocation::with_args("sh", &["-c", "printf %s \"$KPRS_PROBE\""]).with_env("KPRS_PROBE", "/tmp/x.lock");
        assert_eq!(output(&inv).await.unwrap(), "/tmp/x.lock");
        assert!(inv.to_string().starts_with("KPRS_PROBE=/tmp/x.lock sh -c"), "{inv}");
    }

    #[tokio::test]
    async fn stdin_is_fed_and_stdout_returned() {
        let inv = Invocation::with_args("cat", &[]);
        assert_eq!(output_with(&inv, Some("line\n")).await.unwrap(), "line\n");
    }

    #[tokio::test]
    async fn a_tool_printing_several_lines_fails_with_them_on_one_line() {
        let inv = Invocation::with_args("sh", &["-c", "printf 'bad target\\n\\nError occurred at line: 2\\n' >&2; exit 2"]);
        let err = output(&inv).await.unwrap_err();
        assert!(
            matches!(&err, Error::Command { stderr, .. } if stderr == "bad target; Error occurred at line: 2"),
            "{err}"
        );
        assert!(!err.to_string().contains('\n'), "{err}");
    }

    #[tokio::test]
    async fn a_failure_names_the_command_and_carries_its_stderr() {
        let inv = Invocation::with_args("sh", &["-c", "echo nope >&2; exit 3"]);
        let err = output(&inv).await.unwrap_err();
        assert!(
            matches!(&err, Error::Command { stderr, .. } if stderr == "nope"),
            "{err}"
        );
        assert!(
            err.to_string()
                .starts_with("sh -c \"echo nope >&2; exit 3\" failed (exit status: 3)"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_missing_program_is_a_spawn_error() {
        let inv = Invocation::with_args("no-such-tool-kprs", &[]);
        let err = output(&inv).await.unwrap_err();
        assert!(
            matches!(&err, Error::Spawn { source, .. } if source.kind() == std::io::ErrorKind::NotFound),
            "{err}"
        );
    }

    #[tokio::test]
    async fn lines_are_streamed_without_newlines() {
        let mut lines = Vec::new();
        stream_lines(&Invocation::with_args("printf", &["a\\nb\\r\\n"]), |l| {
            lines.push(l.to_string())
        })
        .await
        .unwrap();
        assert_eq!(lines, ["a", "b"]);
    }
}
