//! The kube-proxy-rs process under test: started with `ip netns exec` (which
//! execs, so the child's PID is the proxy's own), its log lines read on a
//! thread and stamped with the time they arrived, its peak RSS read from
//! `/proc`, and stopped with SIGTERM (SIGKILL if it does not go).

use crate::interrupt;
use crate::namespace::BenchNetns;
use anyhow::{Context, Result, bail};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

/// One line of the proxy's log and when the benchmark read it.
#[derive(Debug, Clone)]
pub struct Line {
    /// When the line arrived.
    pub at: Instant,
    /// The line.
    pub text: String,
}

/// A running proxy.
pub struct ProxyProcess {
    child: Child,
    lines: Receiver<Line>,
    tail: VecDeque<String>,
    echo: bool,
    /// What `/proc/PID/comm` shows for the proxy: its file name, cut to 15 bytes.
    comm: String,
}

/// How many of the last log lines an error shows.
const TAIL: usize = 15;

impl ProxyProcess {
    /// Starts `binary args` inside `ns`; `echo` copies its log to stderr.
    pub fn start(ns: &BenchNetns, binary: &Path, args: &[String], echo: bool) -> Result<Self> {
        let mut command = ns.command(&binary.display().to_string());
        command
            .args(args)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = command
            .spawn()
            .with_context(|| format!("start {}", binary.display()))?;
        interrupt::track_child(Some(child.id()));
        let stderr = child.stderr.take().context("proxy stderr not piped")?;
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for text in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx
                    .send(Line {
                        at: Instant::now(),
                        text,
                    })
                    .is_err()
                {
                    return;
                }
            }
        });
        let comm = binary
            .file_name()
            .map(|n| n.to_string_lossy().chars().take(15).collect())
            .unwrap_or_default();
        Ok(Self {
            child,
            lines,
            tail: VecDeque::new(),
            echo,
            comm,
        })
    }

    /// The proxy's PID.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Reads log lines until one contains `needle` (returned) or `deadline`
    /// passes (`None`). Fails if the proxy exits first.
    pub fn wait_for(&mut self, needle: &str, deadline: Instant) -> Result<Option<Line>> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.text.contains(needle) => return Ok(Some(self.keep(line))),
                Ok(line) => drop(self.keep(line)),
                Err(RecvTimeoutError::Timeout) => return Ok(None),
                Err(RecvTimeoutError::Disconnected) => bail!("{}", self.exit_report()),
            }
        }
    }

    /// Remembers `line` for error reports and echoes it if asked.
    fn keep(&mut self, line: Line) -> Line {
        if self.echo {
            eprintln!("  proxy| {}", line.text);
        }
        if self.tail.len() == TAIL {
            self.tail.pop_front();
        }
        self.tail.push_back(line.text.clone());
        line
    }

    fn exit_report(&mut self) -> String {
        let status = self
            .child
            .wait()
            .map(|s| s.to_string())
            .unwrap_or_else(|e| e.to_string());
        interrupt::track_child(None);
        let tail: Vec<&str> = self.tail.iter().map(String::as_str).collect();
        format!(
            "the proxy exited ({status}); its last log lines:\n{}",
            tail.join("\n")
        )
    }

    /// Peak resident set size (`VmHWM`) of the proxy in KiB, after checking
    /// that the PID is the proxy and not the `ip` wrapper.
    pub fn peak_rss_kib(&self) -> Result<u64> {
        let pid = self.pid();
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .context("read the proxy's comm")?;
        if comm.trim() != self.comm {
            bail!(
                "PID {pid} is {:?}, not the proxy ({:?})",
                comm.trim(),
                self.comm
            );
        }
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .context("read the proxy's status")?;
        status_kib(&status, "VmHWM:").context("no VmHWM in /proc/PID/status")
    }

    /// CPU time the proxy has used so far, all its threads, user and
    /// system (`/proc/PID/stat`, in clock ticks): the work, where the wall
    /// time also counts what the machine's other load took from it.
    pub fn cpu_time(&self) -> Result<Duration> {
        let pid = self.pid();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .context("read the proxy's stat")?;
        // the fields after the command name, which ends at the last ')'
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        let ticks = |i: usize| -> Result<u64> {
            let field = fields.get(i).context("short /proc/PID/stat")?;
            Ok(field.parse()?)
        };
        // utime and stime: fields 14 and 15, 12 and 13 after the name
        let used = ticks(11)? + ticks(12)?;
        let per_second = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
            .ok()
            .flatten()
            .and_then(|t| u64::try_from(t).ok())
            .filter(|t| *t > 0)
            .unwrap_or(100);
        Ok(Duration::from_secs_f64(used as f64 / per_second as f64))
    }

    /// SIGTERM, then SIGKILL after `grace`; waits for the exit.
    pub fn stop(mut self, grace: Duration) -> Result<()> {
        let pid = nix::unistd::Pid::from_raw(i32::try_from(self.pid())?);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let deadline = Instant::now() + grace;
        while self.child.try_wait()?.is_none() {
            if Instant::now() > deadline {
                self.child.kill()?;
                self.child.wait()?;
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        interrupt::track_child(None);
        Ok(())
    }
}

impl Drop for ProxyProcess {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        interrupt::track_child(None);
    }
}

/// A `Field:   123 kB` value of a `/proc/PID/status` text, in KiB.
pub fn status_kib(status: &str, field: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
