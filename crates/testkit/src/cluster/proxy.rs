//! A kube-proxy-rs process running inside a node's namespace: started with
//! the node's name and the shared manifests file, its output kept in a log
//! file for failure messages, killed when dropped.

use super::node::Node;
use anyhow::{Context, Result};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};

/// A running proxy; dropping it kills the process.
#[derive(Debug)]
pub struct Proxy {
    node: String,
    child: Child,
}

impl Proxy {
    /// Starts `binary --manifests <manifests> --hostname-override <node>
    /// <args>` in `node`'s namespace, stdout and stderr to `log`. The process
    /// gets SIGKILL if the test thread that started it dies first
    /// (`setpriv --pdeathsig`), so an interrupted test leaves no proxy behind.
    pub fn start(node: &Node, binary: &Path, manifests: &Path, args: &[String], log: PathBuf) -> Result<Self> {
        let out = File::create(&log).with_context(|| format!("create {}", log.display()))?;
        let err = out.try_clone().context("clone log file")?;
        let mut cmd = node.ns().command("setpriv");
        cmd.args(["--pdeathsig", "KILL", "--"])
            .arg(binary)
            .arg("--manifests")
            .arg(manifests)
            .args(["--hostname-override", node.name()])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err));
        let child = cmd.spawn().with_context(|| format!("start {} in {}", binary.display(), node.name()))?;
        Ok(Self { node: node.name().to_string(), child })
    }

    /// The node it runs on.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// How the process ended, or `None` while it runs.
    pub fn exit_status(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
