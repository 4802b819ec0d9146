//! Which IP families the proxy serves, decided at start-up as upstream's
//! `newProxyServer` does: the primary family from `--bind-address` (when
//! not `0.0.0.0` / `::`) or else the Node's first host IP (IPv4 when
//! neither says); both families when the host supports both, else the
//! primary alone (an unsupported primary is fatal). Support as upstream's
//! `platformCheckSupported`: the kernel has IPv6 (`/proc/net/if_inet6`),
//! and in iptables and IPVS mode the family's iptables tools can list the
//! nat table; nftables mode serves both families whenever the kernel does.

use crate::config::{Config, DetectLocal, ProxyMode};
use anyhow::bail;
use ipnet::IpNet;
use model::IpFamily;
use std::net::IpAddr;
use xtables::apply::{Backend, Iptables};

/// The families served: the primary first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Families {
    /// The primary family (the Node's first IP, or `--bind-address`'s).
    pub primary: IpFamily,
    /// The other family, when the host supports both.
    pub secondary: Option<IpFamily>,
}

impl Families {
    /// Every family served, the primary first.
    pub fn all(&self) -> Vec<IpFamily> {
        std::iter::once(self.primary).chain(self.secondary).collect()
    }

    /// Both families are served.
    pub fn dual_stack(&self) -> bool {
        self.secondary.is_some()
    }
}

/// Which families the host can serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Supported {
    /// IPv4 can be served.
    pub ipv4: bool,
    /// IPv6 can be served.
    pub ipv6: bool,
}

impl Supported {
    fn has(self, family: IpFamily) -> bool {
        match family {
            IpFamily::V4 => self.ipv4,
            IpFamily::V6 => self.ipv6,
        }
    }
}

/// Decides the families for `config` on this host, for a node whose host
/// IPs are `node_ips` (upstream's `GetNodeHostIPs`; empty when unknown),
/// and checks the cluster CIDRs against them.
pub async fn decide(config: &Config, node_ips: &[IpAddr], backend: Option<Backend>) -> anyhow::Result<Families> {
    let primary = primary_family(config.bind_address, node_ips);
    let supported = detect_supported(config.mode, backend).await;
    let families = choose(primary, supported)?;
    match &families.secondary {
        Some(_) => tracing::info!(primary = %primary, "running in dual-stack mode"),
        None => tracing::info!(family = %primary, "running in single-stack mode"),
    }
    check_cluster_cidrs(config, &families)?;
    Ok(families)
}

/// Upstream's `detectNodeIPs`: a specific `--bind-address` names the
/// primary family; else the first of the Node's host IPs; else IPv4 (the
/// node IP is then unknown, as upstream's loopback guess).
pub fn primary_family(bind_address: IpAddr, node_ips: &[IpAddr]) -> IpFamily {
    if !bind_address.is_unspecified() {
        return IpFamily::of(bind_address);
    }
    match node_ips.first() {
        Some(ip) => IpFamily::of(*ip),
        None => {
            tracing::info!("cannot determine this node's IP, assuming IPv4; if this is incorrect, set --bind-address");
            IpFamily::V4
        }
    }
}

/// Both families when both are supported, else the primary alone; an
/// error when the primary is not supported.
pub fn choose(primary: IpFamily, supported: Supported) -> anyhow::Result<Families> {
    if !supported.has(primary) {
        bail!("no support for primary IP family {primary}");
    }
    let other = other_family(primary);
    Ok(Families { primary, secondary: supported.has(other).then_some(other) })
}

fn other_family(family: IpFamily) -> IpFamily {
    match family {
        IpFamily::V4 => IpFamily::V6,
        IpFamily::V6 => IpFamily::V4,
    }
}

/// Upstream's `platformCheckSupported` for `mode`; `backend` is the
/// iptables backend iptables and IPVS mode will use.
async fn detect_supported(mode: ProxyMode, backend: Option<Backend>) -> Supported {
    let kernel_ipv6 = std::path::Path::new("/proc/net/if_inet6").exists();
    if !kernel_ipv6 {
        tracing::info!(family = %IpFamily::V6, "no kernel support for the family");
    }
    let (ipv4, ipv6) = match (mode, backend) {
        (ProxyMode::Nftables, _) | (_, None) => (true, true),
        (_, Some(backend)) => (iptables_works(backend, IpFamily::V4).await, iptables_works(backend, IpFamily::V6).await),
    };
    Supported { ipv4, ipv6: ipv6 && kernel_ipv6 }
}

/// The family's iptables tools of `backend` can list the nat table
/// (upstream's `iptables.Present`).
async fn iptables_works(backend: Backend, family: IpFamily) -> bool {
    match Iptables::new(backend, family).saved_rules(xtables::Table::Nat).await {
        Ok(_) => true,
        Err(err) => {
            tracing::info!(%family, %err, "no iptables support for the family");
            false
        }
    }
}

/// Upstream's `checkBadIPConfig` for the cluster CIDRs: `--cluster-cidr`
/// holding only CIDRs of the family not served is an error, fatal when it
/// is what detects local traffic and only one family is served (as
/// upstream, where it has always been fatal); otherwise it is logged.
pub fn check_cluster_cidrs(config: &Config, families: &Families) -> anyhow::Result<()> {
    let DetectLocal::ClusterCidr(cidrs) = &config.detect_local else { return Ok(()) };
    let Some(problem) = cluster_cidr_problem(cidrs, families) else { return Ok(()) };
    if !families.dual_stack() {
        bail!("kube-proxy configuration is incorrect: {problem}");
    }
    tracing::error!("kube-proxy configuration may be incomplete or incorrect: {problem}");
    Ok(())
}

/// What is wrong with `cidrs` for `families`: `None` when at least one is
/// of the primary family (or none is given).
pub fn cluster_cidr_problem(cidrs: &[IpNet], families: &Families) -> Option<String> {
    let primary = families.primary;
    if cidrs.is_empty() || cidrs.iter().any(|c| primary.contains_net(c)) {
        return None;
    }
    let kind = if families.dual_stack() { "primary" } else { "only" };
    Some(format!("cluster is {primary}-{kind} but clusterCIDRs contains only {} addresses", other_family(primary)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    const BOTH: Supported = Supported { ipv4: true, ipv6: true };

    #[test]
    fn the_primary_family_is_the_bind_address_else_the_first_node_ip_else_ipv4() {
        let any = ip("0.0.0.0");
        assert_eq!(primary_family(any, &[ip("fd00::2"), ip("192.168.0.2")]), IpFamily::V6);
        assert_eq!(primary_family(any, &[ip("192.168.0.2"), ip("fd00::2")]), IpFamily::V4);
        assert_eq!(primary_family(ip("::"), &[ip("192.168.0.2")]), IpFamily::V4, "`::` is unspecified too");
        assert_eq!(primary_family(ip("fd00::2"), &[ip("192.168.0.2")]), IpFamily::V6, "a specific bind address wins");
        assert_eq!(primary_family(any, &[]), IpFamily::V4);
    }

    #[test]
    fn both_families_when_both_are_supported_else_the_primary_alone() {
        let dual = choose(IpFamily::V6, BOTH).unwrap();
        assert_eq!(dual.all(), [IpFamily::V6, IpFamily::V4]);
        let v4_only = choose(IpFamily::V4, Supported { ipv4: true, ipv6: false }).unwrap();
        assert_eq!(v4_only.all(), [IpFamily::V4]);
        let err = choose(IpFamily::V6, Supported { ipv4: true, ipv6: false }).unwrap_err();
        assert_eq!(err.to_string(), "no support for primary IP family IPv6");
    }

    #[test]
    fn cluster_cidrs_of_only_the_other_family_are_a_problem() {
        let v4 = |s: &str| -> IpNet { s.parse().unwrap() };
        let dual = choose(IpFamily::V4, BOTH).unwrap();
        let single = choose(IpFamily::V4, Supported { ipv4: true, ipv6: false }).unwrap();
        assert_eq!(cluster_cidr_problem(&[v4("10.0.0.0/8"), v4("fd00::/48")], &dual), None);
        assert_eq!(cluster_cidr_problem(&[], &single), None);
        assert_eq!(
            cluster_cidr_problem(&[v4("fd00::/48")], &dual).unwrap(),
            "cluster is IPv4-primary but clusterCIDRs contains only IPv6 addresses"
        );
        assert_eq!(
            cluster_cidr_problem(&[v4("fd00::/48")], &single).unwrap(),
            "cluster is IPv4-only but clusterCIDRs contains only IPv6 addresses"
        );
    }
}
