//! A Service in `iptables-save` text: every rule whose comment names it,
//! plus every rule of the chains those rules lead to (`KUBE-SVC-`,
//! `KUBE-SEP-`, `KUBE-EXT-`, `KUBE-FW-`, `KUBE-SVL-`), and what they say.
//! Userspace mode's portal rules name their Service the same way; what
//! they say is read apart ([`read_portal`]): addresses, NodePorts and the
//! proxy ports they send to.

use super::{Programmed, names_service, port_in};
use crate::explanation::comment_of;
use crate::tracer::words::split_words;
use std::collections::BTreeSet;

/// Chains that belong to one Service port.
const SERVICE_CHAINS: [&str; 5] = ["KUBE-SVC-", "KUBE-SEP-", "KUBE-EXT-", "KUBE-FW-", "KUBE-SVL-"];

/// One `-A` line: its table, chain and the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Line {
    table: String,
    chain: String,
    spec: String,
}

impl Line {
    fn text(&self) -> String {
        format!("-t {} -A {} {}", self.table, self.chain, self.spec)
    }

    fn words(&self) -> Vec<String> {
        split_words(&self.spec).map(|w| w.into_iter().map(|w| w.text).collect()).unwrap_or_default()
    }

    fn option(&self, name: &str) -> Option<String> {
        let words = self.words();
        words.iter().position(|w| w == name).and_then(|at| words.get(at + 1)).cloned()
    }
}

/// What `save` (iptables-save output) holds for `service` (`ns/name`).
pub fn programmed(save: &str, service: &str) -> Programmed {
    let lines = service_lines(save, service);
    let mut out = Programmed { rules: lines.iter().map(Line::text).collect(), ..Programmed::default() };
    for line in &lines {
        read_line(line, service, &mut out);
    }
    out
}

/// The Service's rules, in the order of the text.
fn service_lines(save: &str, service: &str) -> Vec<Line> {
    let all = lines(save);
    let named = |l: &Line| comment_of(&l.spec).is_some_and(|c| names_service(c, service));
    let mut chains: BTreeSet<String> = BTreeSet::new();
    let mut frontier: Vec<String> = all.iter().filter(|l| named(l)).filter_map(target).collect();
    while let Some(chain) = frontier.pop() {
        if SERVICE_CHAINS.iter().any(|p| chain.starts_with(p)) && chains.insert(chain.clone()) {
            frontier.extend(all.iter().filter(|l| l.chain == chain).filter_map(target));
        }
    }
    all.into_iter().filter(|l| named(l) || chains.contains(&l.chain)).collect()
}

fn target(line: &Line) -> Option<String> {
    line.option("-j").or_else(|| line.option("-g"))
}

/// Every `-A` line of the text, with its table.
fn lines(save: &str) -> Vec<Line> {
    let mut table = String::new();
    let mut out = Vec::new();
    for raw in save.lines() {
        let text = raw.trim();
        let text = match text.strip_prefix('[').and_then(|rest| rest.split_once(']')) {
            Some((_, rest)) => rest.trim_start(),
            None => text,
        };
        if let Some(name) = text.strip_prefix('*') {
            table = name.to_string();
        } else if let Some(rest) = text.strip_prefix("-A ") {
            let (chain, spec) = rest.split_once(' ').unwrap_or((rest, ""));
            out.push(Line { table: table.clone(), chain: chain.to_string(), spec: spec.to_string() });
        }
    }
    out
}

/// Userspace mode's chains (upstream v1.25's userspace proxier).
const PORTAL_CHAINS: [&str; 5] =
    ["KUBE-PORTALS-CONTAINER", "KUBE-PORTALS-HOST", "KUBE-NODEPORT-CONTAINER", "KUBE-NODEPORT-HOST", "KUBE-NODEPORT-NON-LOCAL"];

/// What one rule says about its port.
fn read_line(line: &Line, service: &str, out: &mut Programmed) {
    let Some(comment) = comment_of(&line.spec) else { return };
    let port_name = port_in(comment, service).unwrap_or_default();
    let port = out.ports.entry(port_name).or_default();
    if PORTAL_CHAINS.contains(&line.chain.as_str()) {
        read_portal(line, port);
        return;
    }
    let dport = line.option("--dport").and_then(|p| p.parse::<u16>().ok());
    let proto = line.option("-p").unwrap_or_default();
    let destination = line.option("-d");
    match (line.table.as_str(), line.chain.as_str(), destination, dport) {
        ("filter", "KUBE-NODEPORTS", _, Some(_)) if comment.contains("health check node port") => {
            port.health_check_node_port = dport;
        }
        (_, "KUBE-SERVICES" | "KUBE-EXTERNAL-SERVICES", Some(dest), Some(dport)) => {
            let kind = comment.split_once(' ').map(|(_, kind)| kind).unwrap_or("");
            port.addresses.insert(format!("{} {proto}/{dport} ({kind})", dest.trim_end_matches("/32")));
        }
        (_, "KUBE-NODEPORTS" | "KUBE-EXTERNAL-SERVICES", None, Some(dport)) => {
            port.node_ports.insert(dport);
        }
        _ => {}
    }
    if let Some(to) = line.option("--to-destination") {
        port.endpoints.insert(to);
    }
    if let Some(seconds) = line.option("--seconds").and_then(|s| s.parse().ok()) {
        port.affinity_seconds = Some(seconds);
    }
}

/// A userspace-mode portal rule: the address (portal chains) or NodePort
/// it catches and the proxy port it sends to (`REDIRECT --to-ports`, the
/// port of `DNAT --to-destination`; the filter chain's `--dport`).
fn read_portal(line: &Line, port: &mut super::PortProgrammed) {
    let dport = line.option("--dport").and_then(|p| p.parse::<u16>().ok());
    let proto = line.option("-p").unwrap_or_default();
    let to = line.option("--to-ports").or_else(|| line.option("--to-destination").and_then(|d| d.rsplit_once(':').map(|(_, p)| p.to_string())));
    match (line.chain.as_str(), line.option("-d"), dport) {
        ("KUBE-NODEPORT-NON-LOCAL", _, Some(proxy_port)) => {
            port.proxy_ports.insert(proxy_port);
        }
        ("KUBE-NODEPORT-CONTAINER" | "KUBE-NODEPORT-HOST", _, Some(node_port)) => {
            port.node_ports.insert(node_port);
        }
        (_, Some(dest), Some(dport)) => {
            let dest = dest.trim_end_matches("/32").trim_end_matches("/128");
            port.addresses.insert(format!("{dest} {proto}/{dport} (portal)"));
        }
        _ => {}
    }
    port.proxy_ports.extend(to.and_then(|p| p.parse::<u16>().ok()));
}

/// The Service's rules in `save`, one per line, for comparing with
/// another rendering.
pub fn rule_lines(save: &str, service: &str) -> Vec<String> {
    service_lines(save, service).iter().map(Line::text).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userspace_portal_rules_name_the_addresses_node_port_and_proxy_ports() {
        let save = "*filter\n:KUBE-NODEPORT-NON-LOCAL - [0:0]\n\
            -A KUBE-NODEPORT-NON-LOCAL -p tcp -m comment --comment \"e2e/web:http\" -m tcp --dport 40002 -m state --state NEW -j ACCEPT\nCOMMIT\n\
            *nat\n:KUBE-PORTALS-CONTAINER - [0:0]\n\
            -A KUBE-PORTALS-CONTAINER -d 10.96.10.10/32 -p tcp -m comment --comment \"e2e/web:http\" -m tcp --dport 80 -j REDIRECT --to-ports 40001\n\
            -A KUBE-PORTALS-HOST -d 10.96.10.10/32 -p tcp -m comment --comment \"e2e/web:http\" -m tcp --dport 80 -j DNAT --to-destination 192.168.86.2:40001\n\
            -A KUBE-NODEPORT-CONTAINER -p tcp -m comment --comment \"e2e/web:http\" -m tcp --dport 30080 -j REDIRECT --to-ports 40002\n\
            -A KUBE-PORTALS-CONTAINER -d 10.96.10.99/32 -p tcp -m comment --comment \"e2e/other:http\" -m tcp --dport 80 -j REDIRECT --to-ports 40009\nCOMMIT\n";
        let programmed = programmed(save, "e2e/web");
        assert_eq!(programmed.rules.len(), 4);
        let port = &programmed.ports["http"];
        assert_eq!(port.addresses.iter().collect::<Vec<_>>(), ["10.96.10.10 tcp/80 (portal)"]);
        assert_eq!(port.node_ports.iter().collect::<Vec<_>>(), [&30080]);
        assert_eq!(port.proxy_ports.iter().collect::<Vec<_>>(), [&40001, &40002]);
        assert!(port.endpoints.is_empty(), "the endpoints are the proxy's, not the kernel's");
    }
}
