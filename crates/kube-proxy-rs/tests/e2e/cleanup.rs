//! `--cleanup`: with node-b's proxy stopped, `kube-proxy-rs --cleanup` in
//! node-b removes what it programmed: service traffic through node-b is no
//! longer translated (it follows the default route and is lost), no
//! kube-proxy chain or table is left (in IPVS mode also no virtual server,
//! `KUBE-` ipset or `kube-ipvs0`), and node-a is unaffected. Runs last:
//! node-b serves no more services afterwards.

use super::Env;
use super::kernel_state::ipvs_leftovers;
use super::scenario::Mode;
use super::flow::{Expect, From, Source, reach, tcp};
use super::scenario::addr::{at, at6};
use super::scenario::proxy_args;
use testkit::cluster::dump_rules;

/// Markers of kube-proxy state in `iptables-save` / `ip6tables-save` /
/// `nft list ruleset` (IPVS mode's own chains included).
const LEFTOVERS: [&str; 17] = [
    ":KUBE-SERVICES",
    ":KUBE-SVC-",
    ":KUBE-SEP-",
    ":KUBE-NODEPORTS",
    ":KUBE-NODE-PORT",
    ":KUBE-LOAD-BALANCER",
    ":KUBE-POSTROUTING",
    ":KUBE-MARK-MASQ",
    ":KUBE-PROXY-FIREWALL",
    ":KUBE-IPVS-FILTER",
    ":KUBE-PORTALS-CONTAINER",
    ":KUBE-PORTALS-HOST",
    ":KUBE-NODEPORT-CONTAINER",
    ":KUBE-NODEPORT-HOST",
    ":KUBE-NODEPORT-NON-LOCAL",
    "table ip kube-proxy",
    "table ip6 kube-proxy",
];

/// Runs the case; `Ok(summary)` or `Err(failure text)`.
pub fn run(env: &Env) -> Result<String, String> {
    env.cluster.stop_proxy("node-b");
    let node = env.cluster.node("node-b").ok_or("no node-b")?;
    let out = node
        .ns()
        .command("timeout")
        .arg("30")
        .arg(env.binary)
        .arg("--cleanup")
        .args(proxy_args(env.mode))
        .output()
        .map_err(|e| format!("run {} --cleanup: {e}", env.binary.display()))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!("kube-proxy-rs --cleanup in node-b exited {}\n    stderr:   {}", out.status, stderr.trim()));
    }
    let rules = dump_rules(node.ns());
    let mut left: Vec<String> = LEFTOVERS.iter().filter(|m| rules.contains(*m)).map(|m| m.to_string()).collect();
    if env.mode == Mode::Ipvs {
        left.extend(ipvs_leftovers(node.ns()));
    }
    if !left.is_empty() {
        return Err(format!("after --cleanup node-b still has {}\n{rules}", left.join(", ")));
    }
    for dst in [at([10, 96, 10, 10], 80), at6("fd00:10:96::20:13", 8080)] {
        tcp(From::Pod("cb"), dst, Expect::Dropped).run(env.cluster).map_err(|e| format!("after --cleanup in node-b: {e}\n{rules}"))?;
    }
    tcp(From::Pod("ca"), at([10, 96, 10, 11], 80), reach(&["a1"], 8080, Source::Kept))
        .run(env.cluster)
        .map_err(|e| format!("node-a after --cleanup in node-b: {e}"))?;
    let ipvs = if env.mode == Mode::Ipvs { ", no virtual servers, KUBE- ipsets or kube-ipvs0" } else { "" };
    Ok(format!("node-b: --cleanup exited 0, no kube-proxy chains left{ipvs}, pod cb -> 10.96.10.10:80 and [fd00:10:96::20:13]:8080 no longer answered; node-a still serves"))
}
