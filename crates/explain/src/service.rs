//! `explain service`: what the kernel holds for one Service (addresses,
//! ports, node ports, endpoints, affinity, health-check node port, and
//! every rule or map element of it), and the drift from what the proxy
//! would program — the same reading applied to the proxy's own rendering
//! of the cluster state, compared line by line. A dual-stack Service is
//! reported once per IP family (each family has its own rules).

pub mod iptables;
pub mod ipvs;
pub mod nftables;

use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// One Service as programmed, and its drift, per IP family.
#[derive(Debug, Clone, Serialize)]
pub struct ServiceReport {
    /// `namespace/name`.
    pub service: String,
    /// The mode whose rules were read.
    pub mode: String,
    /// One report per IP family that holds (or should hold) something of
    /// the Service, IPv4 first.
    pub families: Vec<FamilyReport>,
}

/// One IP family's part of a [`ServiceReport`].
#[derive(Debug, Clone, Serialize)]
pub struct FamilyReport {
    /// `IPv4` or `IPv6`.
    pub family: String,
    /// What the kernel (or the dump) holds for it.
    pub programmed: Programmed,
    /// What differs from the proxy's rendering; `None` when no cluster
    /// state was given to compare with.
    pub drift: Option<Drift>,
}

/// What is programmed for one Service.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Programmed {
    /// Per port name (`http`, or empty for an unnamed port).
    pub ports: BTreeMap<String, PortProgrammed>,
    /// Every rule and map element of the Service, one per line.
    pub rules: Vec<String>,
}

/// What is programmed for one Service port.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PortProgrammed {
    /// `address proto/port (cluster IP | external IP | loadbalancer IP)`.
    pub addresses: BTreeSet<String>,
    /// NodePorts.
    pub node_ports: BTreeSet<u16>,
    /// Endpoints DNATed to.
    pub endpoints: BTreeSet<String>,
    /// Session affinity timeout, in seconds.
    pub affinity_seconds: Option<u64>,
    /// The health-check node port opened for it.
    pub health_check_node_port: Option<u16>,
    /// IPVS mode: each virtual server with its scheduler, persistence and
    /// real servers with their weights.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub virtual_servers: Vec<String>,
    /// Userspace mode: the proxy ports its portal rules send the port's
    /// traffic to (two with externalTrafficPolicy Local: the second
    /// serves outside traffic).
    #[serde(skip_serializing_if = "BTreeSet::is_empty")]
    pub proxy_ports: BTreeSet<u16>,
}

/// The difference between the kernel and the proxy's rendering.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Drift {
    /// Rules the proxy would program that the kernel lacks (deleted by
    /// someone, or not synced yet).
    pub missing: Vec<String>,
    /// Rules the kernel holds that the proxy would not program (added by
    /// someone, or left from an older state).
    pub extra: Vec<String>,
}

impl Drift {
    /// The lines of `desired` not in `live` and those of `live` not in
    /// `desired` (as multisets: a duplicated rule counts).
    pub fn between(desired: &[String], live: &[String]) -> Self {
        Self { missing: minus(desired, live), extra: minus(live, desired) }
    }

    /// No difference.
    pub fn is_empty(&self) -> bool {
        self.missing.is_empty() && self.extra.is_empty()
    }
}

fn minus(a: &[String], b: &[String]) -> Vec<String> {
    let mut left: Vec<&String> = b.iter().collect();
    let mut out = Vec::new();
    for line in a {
        match left.iter().position(|l| *l == line) {
            Some(at) => {
                left.swap_remove(at);
            }
            None => out.push(line.clone()),
        }
    }
    out
}

impl fmt::Display for ServiceReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.families.is_empty() {
            return writeln!(f, "service: {} ({} mode)\nprogrammed: nothing", self.service, self.mode);
        }
        for family in &self.families {
            writeln!(f, "service: {} ({} mode, {})", self.service, self.mode, family.family)?;
            write!(f, "{family}")?;
        }
        Ok(())
    }
}

impl fmt::Display for FamilyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.programmed.rules.is_empty() {
            writeln!(f, "programmed: nothing")?;
        }
        for (name, port) in &self.programmed.ports {
            writeln!(f, "port {}:", if name.is_empty() { "(unnamed)" } else { name })?;
            let list = |items: Vec<String>| if items.is_empty() { "none".to_string() } else { items.join(", ") };
            writeln!(f, "  addresses:   {}", list(port.addresses.iter().cloned().collect()))?;
            writeln!(f, "  node ports:  {}", list(port.node_ports.iter().map(u16::to_string).collect()))?;
            writeln!(f, "  endpoints:   {}", list(port.endpoints.iter().cloned().collect()))?;
            if let Some(seconds) = port.affinity_seconds {
                writeln!(f, "  affinity:    ClientIP, {seconds}s")?;
            }
            if let Some(hc) = port.health_check_node_port {
                writeln!(f, "  health-check node port: {hc}")?;
            }
            if !port.proxy_ports.is_empty() {
                writeln!(f, "  proxy ports: {}", list(port.proxy_ports.iter().map(u16::to_string).collect()))?;
            }
            if !port.virtual_servers.is_empty() {
                writeln!(f, "  virtual servers:")?;
                for vs in &port.virtual_servers {
                    writeln!(f, "    {vs}")?;
                }
            }
        }
        writeln!(f, "rules ({}):", self.programmed.rules.len())?;
        for rule in &self.programmed.rules {
            writeln!(f, "  {rule}")?;
        }
        match &self.drift {
            None => writeln!(f, "drift: not checked (give the proxy's flags after `--`)"),
            Some(drift) if drift.is_empty() => writeln!(f, "drift: none (the kernel holds what the proxy would program)"),
            Some(drift) => {
                writeln!(f, "drift: {} missing, {} extra", drift.missing.len(), drift.extra.len())?;
                for line in &drift.missing {
                    writeln!(f, "  missing: {line}")?;
                }
                for line in &drift.extra {
                    writeln!(f, "  extra:   {line}")?;
                }
                Ok(())
            }
        }
    }
}

/// Whether a comment names `service` (`ns/name`): `ns/name:port …`,
/// `… for ns/name:port …`, or `ns/name` alone.
pub(crate) fn names_service(comment: &str, service: &str) -> bool {
    comment.split_whitespace().any(|word| word == service || word.strip_prefix(service).is_some_and(|rest| rest.starts_with(':')))
}

/// The port name in a comment's `ns/name:port`.
pub(crate) fn port_in(comment: &str, service: &str) -> Option<String> {
    comment
        .split_whitespace()
        .find_map(|word| word.strip_prefix(service).and_then(|rest| rest.strip_prefix(':')).map(str::to_string))
        .or_else(|| comment.split_whitespace().any(|w| w == service).then(String::new))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drift_counts_lines_both_ways() {
        let desired = ["a".to_string(), "b".to_string(), "b".to_string()];
        let live = ["b".to_string(), "c".to_string()];
        let drift = Drift::between(&desired, &live);
        assert_eq!(drift.missing, ["a", "b"]);
        assert_eq!(drift.extra, ["c"]);
        assert!(Drift::between(&live, &live).is_empty());
    }

    #[test]
    fn comments_name_services() {
        assert!(names_service("storefront/web:http cluster IP", "storefront/web"));
        assert!(names_service("masquerade traffic for storefront/web:http external destinations", "storefront/web"));
        assert!(!names_service("storefront/webshop:http cluster IP", "storefront/web"));
        assert_eq!(port_in("storefront/web:http -> 10.244.0.11:8080", "storefront/web").as_deref(), Some("http"));
    }
}
