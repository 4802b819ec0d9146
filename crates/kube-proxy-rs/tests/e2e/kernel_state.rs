//! What IPVS mode leaves in a node's kernel besides iptables rules —
//! virtual servers, ipsets, the `kube-ipvs0` dummy interface — read with
//! `ipvsadm`, `ipset` and `ip`: proof that a proxy asked for IPVS mode
//! really runs it (it falls back to iptables on a kernel without IPVS),
//! leftovers after `--cleanup`, and dumps for failure messages.

use super::scenario::Mode;
use testkit::cluster::Cluster;
use testkit::netns::Netns;

/// The dummy interface IPVS mode binds service addresses to.
const DUMMY: &str = "kube-ipvs0";
/// Virtual servers both proxies must have once ready (service
/// `local-remap`, and `ds-a1` over IPv6).
const READY_SERVICES: [&str; 2] = ["10.96.10.11:80", "[fd00:10:96::20:11]:80"];

/// In IPVS mode, fails unless every node has the virtual servers
/// [`READY_SERVICES`] (a proxy that fell back to iptables mode has none);
/// in nftables mode, unless every node has tables `ip kube-proxy` and
/// `ip6 kube-proxy` and no `KUBE-SERVICES` iptables chain.
pub fn check_mode(cluster: &Cluster, mode: Mode) -> Result<(), String> {
    match mode {
        Mode::Iptables => return Ok(()),
        Mode::Nftables => return check_nftables(cluster),
        Mode::Userspace => return check_userspace(cluster),
        Mode::Ipvs => {}
    }
    for node in cluster.nodes() {
        for service in READY_SERVICES {
            node.ns().exec("ipvsadm", &["-Ln", "-t", service]).map_err(|e| {
                format!("{}: no IPVS virtual server {service}: is the proxy running IPVS mode? ({e:#})", node.name())
            })?;
        }
    }
    Ok(())
}

/// Every node runs nftables mode for both families: our tables are there,
/// iptables mode's chains are not.
fn check_nftables(cluster: &Cluster) -> Result<(), String> {
    for node in cluster.nodes() {
        for (family, save) in [("ip", "iptables-legacy-save"), ("ip6", "ip6tables-legacy-save")] {
            let table = node.ns().exec("nft", &["list", "table", family, "kube-proxy"]).map_err(|e| {
                format!("{}: no table {family} kube-proxy: is the proxy running nftables mode? ({e:#})", node.name())
            })?;
            if !table.contains("chain services") {
                return Err(format!("{}: table {family} kube-proxy has no services chain:\n{table}", node.name()));
            }
            let saved = run(node.ns(), save, &[]);
            if saved.contains(":KUBE-SERVICES") {
                return Err(format!("{}: iptables mode's chains in nftables mode:\n{saved}", node.name()));
            }
        }
    }
    Ok(())
}

/// Every node runs userspace mode for both families: its portal chains
/// are there, iptables mode's are not, and `route_localnet` is 0 (the
/// localhost-nodeport case needs none).
fn check_userspace(cluster: &Cluster) -> Result<(), String> {
    for node in cluster.nodes() {
        let localnet = run(node.ns(), "sysctl", &["-n", "net.ipv4.conf.all.route_localnet"]);
        if localnet.trim() != "0" {
            return Err(format!("{}: net.ipv4.conf.all.route_localnet is {localnet:?}, not 0", node.name()));
        }
        for save in ["iptables-legacy-save", "ip6tables-legacy-save"] {
            let saved = run(node.ns(), save, &[]);
            if !saved.contains(":KUBE-PORTALS-CONTAINER") || !saved.contains("-j REDIRECT --to-ports") {
                return Err(format!("{}: no userspace portal rules in {save}: is the proxy running userspace mode?\n{saved}", node.name()));
            }
            if saved.contains(":KUBE-SERVICES") {
                return Err(format!("{}: iptables mode's chains in userspace mode:\n{saved}", node.name()));
            }
        }
    }
    Ok(())
}

/// What IPVS mode left in `ns`: virtual servers, `KUBE-` ipsets, the dummy
/// interface (one text each; empty when clean).
pub fn ipvs_leftovers(ns: &Netns) -> Vec<String> {
    let mut left = Vec::new();
    let servers: Vec<String> = run(ns, "ipvsadm", &["-Ln"]).lines().filter(|l| l.starts_with("TCP") || l.starts_with("UDP")).map(String::from).collect();
    if !servers.is_empty() {
        left.push(format!("IPVS virtual servers: {}", servers.join("; ")));
    }
    let sets: Vec<String> = run(ns, "ipset", &["list", "-n"]).lines().filter(|l| l.starts_with("KUBE-")).map(String::from).collect();
    if !sets.is_empty() {
        left.push(format!("ipsets: {}", sets.join(", ")));
    }
    if ns.ip(&["link", "show", DUMMY]).is_ok() {
        left.push(format!("interface {DUMMY}"));
    }
    left
}

/// The persistence timeout (seconds) of the TCP virtual server `addr`
/// (`ip:port`) in `ns`, or `None` if it is not persistent or missing.
pub fn persistence_timeout(ns: &Netns, addr: &str) -> Option<u64> {
    let text = ns.exec("ipvsadm", &["-Ln", "-t", addr]).ok()?;
    let line = text.lines().find(|l| l.starts_with("TCP"))?;
    let mut words = line.split_whitespace().skip_while(|w| *w != "persistent");
    words.nth(1)?.parse().ok()
}

/// Per node: `ipvsadm -Ln`, `ipset list` and the dummy interface's
/// addresses.
pub fn ipvs_dumps(cluster: &Cluster) -> String {
    let mut text = String::new();
    for node in cluster.nodes() {
        let ns = node.ns();
        text.push_str(&format!("=== {} IPVS ===\n# ipvsadm -Ln\n{}", node.name(), run(ns, "ipvsadm", &["-Ln"])));
        text.push_str(&format!("# ip -br addr show {DUMMY}\n{}", run(ns, "ip", &["-br", "addr", "show", DUMMY])));
        text.push_str(&format!("# ipset list\n{}", run(ns, "ipset", &["list"])));
    }
    text
}

/// The output of `program args` in `ns`, or a line saying why there is none.
fn run(ns: &Netns, program: &str, args: &[&str]) -> String {
    ns.exec(program, args).unwrap_or_else(|e| format!("({program} failed: {e:#})\n"))
}
