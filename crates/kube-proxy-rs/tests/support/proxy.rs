//! A kube-proxy-rs process started by a test, with its log lines read on a
//! thread so a test can wait for one (blocking, or async while a fake
//! server runs on the same runtime).

#![allow(dead_code)] // each test binary uses its own part

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

/// The binary under test.
pub const BINARY: &str = env!("CARGO_BIN_EXE_kube-proxy-rs");
/// How long a log line the test waits for may take.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// A running proxy.
pub struct Proxy {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Proxy {
    /// Starts the binary under test with `args` inside `ns`.
    pub fn start_in(ns: &testkit::netns::Netns, args: &[String]) -> Self {
        let mut command = ns.command(BINARY);
        command.args(args);
        Self::start(command)
    }

    /// The process id (the binary's own: `ip netns exec` execs it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Starts `command` (the binary, maybe behind `ip netns exec`) with
    /// info logs on a pipe.
    pub fn start(mut command: Command) -> Self {
        let mut child = command.env("RUST_LOG", "info").stderr(Stdio::piped()).spawn().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self { child, lines, seen: Vec::new() }
    }

    /// Whether any line logged so far contains `needle`.
    pub fn logged(&mut self, needle: &str) -> bool {
        self.drain();
        self.seen.iter().any(|l| l.contains(needle))
    }

    /// The lines that arrived since the last call.
    pub fn drain(&mut self) -> Vec<String> {
        let new: Vec<String> = self.lines.try_iter().collect();
        self.seen.extend(new.iter().cloned());
        new
    }

    /// Every line logged so far.
    pub fn drain_all(&mut self) -> &[String] {
        self.drain();
        &self.seen
    }

    /// Blocks until a new line contains `needle`.
    pub fn wait_for(&mut self, needle: &str) -> String {
        self.wait_for_within(needle, PATIENCE)
    }

    /// [`Proxy::wait_for`] with another patience (an emulated VM's).
    pub fn wait_for_within(&mut self, needle: &str, patience: Duration) -> String {
        let deadline = Instant::now() + patience;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return line,
                Ok(line) => self.seen.push(line),
                Err(_) => break,
            }
        }
        self.give_up(needle, patience)
    }

    /// Waits until a new line contains `needle`, letting other tasks of
    /// the runtime run meanwhile.
    pub async fn wait_for_async(&mut self, needle: &str) -> String {
        let start = Instant::now();
        while start.elapsed() < PATIENCE {
            if let Some(line) = self.drain().into_iter().find(|l| l.contains(needle)) {
                return line;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.give_up(needle, PATIENCE)
    }

    fn give_up(&self, needle: &str, patience: Duration) -> ! {
        panic!("no log line with {needle:?} within {patience:?}; log so far:\n{}", self.seen.join("\n"))
    }

    /// Waits up to [`PATIENCE`] for the process to exit by itself; its
    /// status, or `None` when it is still running.
    pub fn wait_exit(&mut self) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + PATIENCE;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// SIGKILL, and the process reaped.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM; the proxy must exit 0.
    pub fn stop(mut self) {
        let _ = Command::new("kill").arg(self.child.id().to_string()).status();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "kube-proxy-rs exited {status} on SIGTERM");
    }
}

impl Drop for Proxy {
    /// A proxy a test did not stop (it panicked) is killed, not left running.
    fn drop(&mut self) {
        self.kill();
    }
}
