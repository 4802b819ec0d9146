//! Network namespaces for kernel-facing tests: created with a unique name,
//! removed on drop (also when the test panics), and swept at the next run
//! if the process that made them died without cleaning up.

use anyhow::{Context, Result, bail};
use std::fs::File;
use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Prefix of every namespace the tests make: `kprs-<pid>-<n>-<label>`.
const PREFIX: &str = "kprs-";

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// Why kernel tests cannot run here, or `None` if they can (root, `ip`
/// present). Tests call [`require_kernel`]; tools that are not tests
/// (benchmarks) may report this reason their own way.
pub fn unavailable() -> Option<String> {
    if !nix::unistd::geteuid().is_root() {
        return Some("kernel tests need root (network namespaces)".to_string());
    }
    if Command::new("ip").arg("-V").output().is_err() {
        return Some("kernel tests need `ip` from iproute2".to_string());
    }
    None
}

/// The guard of every kernel-facing test: panics with the reason when
/// the test cannot run here (no root, no `ip`), so a run without kernel
/// access fails instead of counting the test as passed.
#[track_caller]
pub fn require_kernel() {
    if let Some(why) = unavailable() {
        panic!("{why}: this kernel test cannot run here (run it as root, as scripts/test.sh does)");
    }
}

/// A network namespace owned by the test that created it.
#[derive(Debug)]
pub struct Netns {
    name: String,
}

impl Netns {
    /// Creates `kprs-<pid>-<n>-<label>` (label ≤ 8 characters keeps it short)
    /// with loopback up, after sweeping namespaces left by dead test
    /// processes.
    pub fn new(label: &str) -> Result<Self> {
        sweep_stale();
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let name = format!("{PREFIX}{}-{n}-{label}", std::process::id());
        run(Command::new("ip").args(["netns", "add", &name]))?;
        let ns = Self { name };
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// The namespace's name, for `ip netns exec`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A command that runs `program` inside the namespace.
    pub fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.name, program]);
        cmd
    }

    /// Runs `program args` inside the namespace; fails with its stderr if it
    /// exits non-zero.
    pub fn exec(&self, program: &str, args: &[&str]) -> Result<String> {
        let out = run(self.command(program).args(args))?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Makes IPv6 addresses usable as soon as they are added: duplicate
    /// address detection off on every link of the namespace, present and
    /// future (a tentative address can be neither bound nor a source).
    pub fn skip_ipv6_dad(&self) -> Result<()> {
        self.exec("sysctl", &["-qw", "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0"]).map(drop)
    }

    /// Sets the namespace up to route as a Kubernetes node does: IPv4 and
    /// IPv6 forwarding on, reverse-path filtering and redirects off.
    pub fn route_like_a_node(&self) -> Result<()> {
        let sysctls = [
            "net.ipv4.ip_forward=1",
            "net.ipv6.conf.all.forwarding=1",
            "net.ipv4.conf.all.rp_filter=0",
            "net.ipv4.conf.default.rp_filter=0",
            "net.ipv4.conf.all.send_redirects=0",
            "net.ipv4.conf.default.send_redirects=0",
        ];
        self.exec("sysctl", &[&["-qw"][..], &sysctls[..]].concat()).map(drop)
    }

    /// `ip args` inside the namespace (`ip -n`: one process, where `ip
    /// netns exec` would start two).
    pub fn ip(&self, args: &[&str]) -> Result<String> {
        let out = run(Command::new("ip").args(["-n", &self.name]).args(args))?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Runs every line of `commands` (the arguments of one `ip` command
    /// each) inside the namespace with one `ip -batch` process: a process
    /// costs about 0.3 s in an emulated VM, where the e2e cluster is also
    /// built. Stops at the first failing line; the error names it.
    pub fn ip_batch(&self, commands: &[String]) -> Result<()> {
        let mut cmd = Command::new("ip");
        cmd.args(["-n", &self.name, "-batch", "-"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().with_context(|| format!("spawn {cmd:?}"))?;
        let input = commands.join("\n") + "\n";
        child.stdin.take().context("ip -batch stdin")?.write_all(input.as_bytes()).context("write ip -batch input")?;
        let out = child.wait_with_output().with_context(|| format!("wait for {cmd:?}"))?;
        if !out.status.success() {
            bail!("ip -batch in {} failed ({}): {}\ninput:\n{input}", self.name, out.status, String::from_utf8_lossy(&out.stderr).trim());
        }
        Ok(())
    }

    /// Runs `f` on a new thread that has entered the namespace, so anything
    /// it spawns or binds lives there. The caller's thread is untouched.
    pub fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> Result<T> {
        let path = format!("/run/netns/{}", self.name);
        let handle = std::thread::spawn(move || -> Result<T> {
            let file = File::open(&path).with_context(|| format!("open {path}"))?;
            nix::sched::setns(file, nix::sched::CloneFlags::CLONE_NEWNET).context("setns")?;
            Ok(f())
        });
        match handle.join() {
            Ok(result) => result,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.name]).output();
    }
}

/// Runs a command, turning a non-zero exit into an error naming it.
pub fn run(cmd: &mut Command) -> Result<Output> {
    let out = cmd.output().with_context(|| format!("spawn {cmd:?}"))?;
    if !out.status.success() {
        bail!("{cmd:?} failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(out)
}

/// Deletes `kprs-<pid>-…` namespaces whose process no longer exists.
fn sweep_stale() {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else { return };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let name = line.split_whitespace().next().unwrap_or_default();
        let Some(pid) = name.strip_prefix(PREFIX).and_then(|rest| rest.split('-').next()) else { continue };
        if pid.parse::<u32>().is_ok() && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = Command::new("ip").args(["netns", "del", name]).output();
        }
    }
}
