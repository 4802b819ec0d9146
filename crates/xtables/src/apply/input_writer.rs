//! Where a restore input goes, line by line: into the tool's stdin
//! through a bounded buffer (the input of a first sync at 10k services is
//! 32 MiB, never held whole), counted per table, optionally recorded
//! (tests), or only counted to find the text of a line the tool named in
//! its error (the input is written a second time for that).

use crate::native::restore::{Problem, Restore};
use crate::{Rule, Table};
use std::collections::BTreeMap;
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;

/// Bytes buffered before they are written to the pipe. A `*table` line
/// is sent at once: the legacy tool reads that whole table from the kernel
/// when it sees the line (0.6 s for nat at 10k services), which then
/// overlaps the walk rendering the rules that follow, instead of waiting
/// for the first 64 KiB of them (a partial sync writes a few rules after
/// a walk of every service, 0.3–0.6 s at 10k services, which otherwise
/// all comes before the tool starts its read).
const FLUSH_AT: usize = 64 * 1024;

/// Writes restore input lines (see the module doc).
#[derive(Debug, Default)]
pub(crate) struct InputWriter {
    pipe: Option<ChildStdin>,
    buf: String,
    written: Written,
    find: Option<usize>,
    record: bool,
    error: Option<std::io::Error>,
    /// The native writer taking the lines instead of a tool (legacy).
    native: Option<Native>,
}

/// The native writer's side: the restore it builds, or why it stopped.
#[derive(Debug)]
enum Native {
    Taking(Box<Restore>),
    Declined(Problem),
}

/// What was written.
#[derive(Debug, Default)]
pub(crate) struct Written {
    /// Lines written.
    pub(crate) lines: usize,
    /// `-A` lines per table.
    pub(crate) rules: BTreeMap<Table, usize>,
    /// The table of the last `*table` line.
    table: Option<Table>,
    /// The line looked for and the table it is in.
    pub(crate) found: Option<(String, Option<Table>)>,
    /// The whole input, when recorded.
    pub(crate) recorded: Option<String>,
    /// Whether the native writer wrote it.
    pub(crate) native: bool,
}

impl InputWriter {
    /// Writes into `pipe`; with `record`, also keeps the whole input.
    pub(crate) fn to_pipe(pipe: Option<ChildStdin>, record: bool) -> Self {
        Self { pipe, record, written: Written { recorded: record.then(String::new), ..Written::default() }, ..Self::default() }
    }

    /// Keeps the whole input (no pipe).
    #[cfg(test)]
    pub(crate) fn recording() -> Self {
        Self::to_pipe(None, true)
    }

    /// Feeds the native writer's `restore` (no pipe); with `record`, also
    /// keeps the whole input.
    pub(crate) fn to_native(restore: Restore, record: bool) -> Self {
        Self { native: Some(Native::Taking(Box::new(restore))), ..Self::to_pipe(None, record) }
    }

    /// Only looks for line `n` (1-based).
    pub(crate) fn finding(n: usize) -> Self {
        Self { find: Some(n), ..Self::default() }
    }

    /// Writes one line made of `parts`.
    pub(crate) async fn line(&mut self, parts: &[&str]) {
        let start = self.buf.len();
        parts.iter().for_each(|p| self.buf.push_str(p));
        self.end_line(start).await;
    }

    /// Writes `-A <rule>`: the rule spelled as `iptables-save` prints it.
    pub(crate) async fn rule(&mut self, rule: &Rule) {
        let start = self.buf.len();
        self.buf.push_str("-A ");
        rule.write_line(&mut self.buf);
        self.end_line(start).await;
    }

    /// Counts the line starting at `start` of the buffer and ends it.
    async fn end_line(&mut self, start: usize) {
        let header = self.note(start);
        if let Some(Native::Taking(restore)) = self.native.as_mut()
            && let Err(problem) = restore.line(self.buf.get(start..).unwrap_or_default())
        {
            self.native = Some(Native::Declined(problem));
        }
        self.buf.push('\n');
        if self.pipe.is_none() && !self.record {
            self.buf.clear();
        } else if header || self.buf.len() >= FLUSH_AT {
            self.flush().await;
        }
    }

    /// Counts the line starting at `start` of the buffer; whether it
    /// starts a table.
    fn note(&mut self, start: usize) -> bool {
        let line = self.buf.get(start..).unwrap_or_default();
        let written = &mut self.written;
        written.lines += 1;
        let header = line.starts_with('*');
        if let Some(name) = line.strip_prefix('*') {
            written.table = table_named(name);
        } else if line.starts_with("-A ")
            && let Some(table) = written.table
        {
            *written.rules.entry(table).or_default() += 1;
        }
        if self.find == Some(written.lines) {
            written.found = Some((line.to_string(), written.table));
        }
        header
    }

    async fn flush(&mut self) {
        if let Some(recorded) = self.written.recorded.as_mut() {
            recorded.push_str(&self.buf);
        }
        if let Some(pipe) = self.pipe.as_mut()
            && let Err(err) = pipe.write_all(self.buf.as_bytes()).await
        {
            // The tool exited early (bad input): its exit status tells.
            self.error = Some(err);
            self.pipe = None;
        }
        self.buf.clear();
    }

    /// Ends a native write: what was written and the restore to commit,
    /// or why the native writer declined the input.
    pub(crate) async fn finish_native(mut self) -> (Written, Result<Restore, Problem>) {
        let native = self.native.take();
        let written = self.finish().await.0;
        let restore = match native {
            Some(Native::Taking(restore)) => Ok(*restore),
            Some(Native::Declined(problem)) => Err(problem),
            None => Err(Problem { line: 0, problem: "no native writer".into() }),
        };
        (written, restore)
    }

    /// Flushes and closes the pipe; returns what was written, or the
    /// error writing to the pipe.
    pub(crate) async fn finish(mut self) -> (Written, Option<std::io::Error>) {
        self.flush().await;
        if let Some(mut pipe) = self.pipe.take()
            && let Err(err) = pipe.shutdown().await
        {
            self.error.get_or_insert(err);
        }
        (self.written, self.error)
    }
}

fn table_named(name: &str) -> Option<Table> {
    [Table::Filter, Table::Nat, Table::Mangle].into_iter().find(|t| t.as_str() == name.trim())
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_counted_per_table_and_found() {
        let input = ["*filter", ":A - [0:0]", "-A A -j DROP", "COMMIT", "*nat", "-A B -j RETURN", "-A B -j RETURN", "COMMIT"];
        let mut out = InputWriter::recording();
        let mut find = InputWriter::finding(6);
        for line in input {
            out.line(&[line]).await;
            find.line(&[line]).await;
        }
        let (written, error) = out.finish().await;
        assert!(error.is_none());
        assert_eq!(written.rules, [(Table::Filter, 1), (Table::Nat, 2)].into());
        assert_eq!(written.recorded.as_deref(), Some(input.join("\n") + "\n").as_deref());
        assert_eq!(find.finish().await.0.found, Some(("-A B -j RETURN".to_string(), Some(Table::Nat))));
    }

    #[tokio::test]
    async fn a_table_line_reaches_the_tool_before_the_rules_that_follow() {
        use tokio::io::AsyncBufReadExt;
        let mut child = tokio::process::Command::new("cat")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn cat");
        let mut out = InputWriter::to_pipe(child.stdin.take(), false);
        let mut lines = tokio::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
        out.line(&["*nat"]).await;
        out.line(&[":KUBE-SVC-A - [0:0]"]).await;
        let first = tokio::time::timeout(std::time::Duration::from_secs(5), lines.next_line()).await;
        assert_eq!(first.ok().and_then(|l| l.ok()).flatten().as_deref(), Some("*nat"), "the header waited in the buffer");
        drop(out.finish().await);
    }
}
