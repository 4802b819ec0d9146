//! nftables tracing of the replayed flows, as upstream's run traced them:
//! a trace-only table of the test's own in node-a sets `nftrace` on each
//! flow's packets in conntrack state new (before kube-proxy's chains, after
//! conntrack), and `nft monitor trace` records the path each such packet
//! takes through table `kube-proxy`: lines `<table> <chain> <rule or
//! policy> (verdict)`, one path per hook entry, grouped by flow.

use crate::flows::FlowCase;
use crate::netns::Netns;
use anyhow::{Context, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The trace-only table (`ip` family).
pub const TABLE: &str = "kprs-flow-trace";

/// The distinct paths of one flow's traced packets.
pub type Paths = BTreeSet<Vec<String>>;

/// `nft monitor trace` running in node-a; stopped on drop.
#[derive(Debug)]
pub struct Tracer {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Tracer {
    /// Loads the trace-only table for `flows` in `node`, then starts the
    /// monitor (which prints rules it did not see loaded as `unknown
    /// rule`: kube-proxy's table must be in place already).
    pub(super) fn start(node: &Netns, flows: &[FlowCase]) -> Result<Self> {
        install(node, flows)?;
        // Line-buffered: a pipe would otherwise keep the last events in
        // nft's stdio buffer until it exits, and it is killed.
        let mut child = node
            .command("stdbuf")
            .args(["-oL", "-eL", "nft", "monitor", "trace"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("start nft monitor trace")?;
        let stdout = child.stdout.take().context("nft monitor's stdout")?;
        let stderr = child.stderr.take().context("nft monitor's stderr")?;
        let lines = Arc::new(Mutex::new(Vec::new()));
        collect(stdout, Arc::clone(&lines), "");
        collect(stderr, Arc::clone(&lines), STDERR_PREFIX);
        let tracer = Self { child, lines };
        // The monitor reads the ruleset, then subscribes: give it a moment
        // before the first traced packet.
        std::thread::sleep(Duration::from_millis(500));
        Ok(tracer)
    }

    /// Waits until the monitor has been quiet for a moment, stops it and
    /// returns each flow's paths through table `kube-proxy`, and what the
    /// monitor said on stderr (e.g. that it lost events: then some paths
    /// may be cut short).
    pub fn finish(mut self) -> (BTreeMap<String, Paths>, Vec<String>) {
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut seen = self.count();
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(300));
            let now = self.count();
            if now == seen {
                break;
            }
            seen = now;
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        let complaints = lines.iter().filter_map(|l| l.strip_prefix(STDERR_PREFIX)).map(str::to_string).collect();
        (paths(&lines), complaints)
    }

    fn count(&self) -> usize {
        self.lines.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Marks the monitor's stderr lines among its output.
const STDERR_PREFIX: &str = "nft stderr: ";

/// Appends every line of `from` to `lines`, prefixed.
fn collect(from: impl std::io::Read + Send + 'static, lines: Arc<Mutex<Vec<String>>>, prefix: &'static str) {
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines().map_while(Result::ok) {
            lines.lock().unwrap_or_else(|p| p.into_inner()).push(format!("{prefix}{line}"));
        }
    });
}

/// Loads the trace-only table: `nftrace` on each flow's new packets, in
/// prerouting and output, after conntrack and before kube-proxy's chains.
fn install(node: &Netns, flows: &[FlowCase]) -> Result<()> {
    let mut text = format!("table ip {TABLE} {{\n");
    for (name, hook) in [("trace-prerouting", "prerouting"), ("trace-output", "output")] {
        let _ = writeln!(text, "  chain {name} {{\n    type filter hook {hook} priority -150; policy accept;");
        for flow in flows {
            let _ = writeln!(
                text,
                "    ct state new meta l4proto {} ip saddr {} ip daddr {} th dport {} meta nftrace set 1 comment \"{}\"",
                flow.protocol,
                flow.source(),
                flow.destination.ip(),
                flow.destination.port(),
                flow.id
            );
        }
        text.push_str("  }\n");
    }
    text.push_str("}\n");
    let dir = tempfile::tempdir().context("temporary directory")?;
    let path = dir.path().join("trace.nft");
    std::fs::write(&path, &text).with_context(|| format!("write {}", path.display()))?;
    node.exec("nft", &["-f", &path.to_string_lossy()]).context("load the trace table")?;
    Ok(())
}

/// Groups `trace id <id> ip <table> <chain> …` lines by trace id, names
/// each trace by the flow id in the comment of the trace table's rule it
/// hit, and keeps the `kube-proxy` rule and policy lines as its path.
fn paths(lines: &[String]) -> BTreeMap<String, Paths> {
    let mut flow_of: BTreeMap<&str, String> = BTreeMap::new();
    let mut steps: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    for line in lines {
        let Some(rest) = line.strip_prefix("trace id ") else { continue };
        let Some((id, event)) = rest.split_once(' ') else { continue };
        let Some(event) = event.strip_prefix("ip ") else { continue };
        if event.starts_with(TABLE) {
            if let Some(flow) = event.split("comment \"").nth(1).and_then(|c| c.split('"').next()) {
                flow_of.insert(id, flow.to_string());
            }
            continue;
        }
        let Some(step) = kube_proxy_step(event) else { continue };
        if !steps.contains_key(id) {
            order.push(id);
        }
        steps.entry(id).or_default().push(step);
    }
    let mut by_flow: BTreeMap<String, Paths> = BTreeMap::new();
    for id in order {
        let (Some(flow), Some(path)) = (flow_of.get(id), steps.remove(id)) else { continue };
        by_flow.entry(flow.clone()).or_default().insert(path);
    }
    by_flow
}

/// `kube-proxy <chain> rule … (verdict …)` or `kube-proxy <chain> policy
/// …`; packet dumps and plain `verdict` lines are left out.
fn kube_proxy_step(event: &str) -> Option<String> {
    let rest = event.strip_prefix("kube-proxy ")?;
    let (_chain, what) = rest.split_once(' ')?;
    (what.starts_with("rule ") || what.starts_with("policy ")).then(|| event.trim_end().to_string())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn groups_kube_proxy_steps_by_flow() {
        let lines: Vec<String> = [
            "trace id 1a ip kprs-flow-trace trace-prerouting packet: iif \"ext0\" ip saddr 172.20.0.10",
            "trace id 1a ip kprs-flow-trace trace-prerouting rule ct state new meta nftrace set 1 comment \"F20\" (verdict continue)",
            "trace id 1a ip kube-proxy filter-prerouting-pre-dnat rule ct state new jump firewall-check (verdict jump firewall-check)",
            "trace id 1a ip kube-proxy firewall-check verdict continue ",
            "trace id 1a ip kube-proxy filter-prerouting-pre-dnat policy accept ",
            "trace id 2b ip kube-proxy services packet: whatever",
        ]
        .map(String::from)
        .to_vec();
        let paths = paths(&lines);
        let f20: Vec<Vec<String>> = paths["F20"].iter().cloned().collect();
        assert_eq!(
            f20,
            vec![vec![
                "kube-proxy filter-prerouting-pre-dnat rule ct state new jump firewall-check (verdict jump firewall-check)".to_string(),
                "kube-proxy filter-prerouting-pre-dnat policy accept".to_string(),
            ]]
        );
        assert_eq!(paths.len(), 1);
    }
}
