//! `explain migrate --to nftables|iptables`: what behaves otherwise after
//! restarting the proxy in another mode. The current mode's rules are read
//! as `explain packet` reads them (the kernel, or `--from-file`); the new
//! mode's are what the proxy, started with the flags after `--` in that
//! mode, would program for the same cluster state; the `explain` crate
//! probes every Service port through both (`explain::migrate`).

use super::args::{MigrateArgs, Output, Target};
use super::packet::{Rules, node};
use crate::config::{Config, DetectLocal, NodePortAddresses, ProxyMode};
use anyhow::{Context, bail};
use explain::migrate::probes::Clients;
use explain::migrate::{Migration, Settings};
use explain::{ExplainError, Explanation, Node, Query};
use model::IpFamily;
use std::net::IpAddr;

/// The report `args` asks for, formatted.
pub fn run(args: &MigrateArgs) -> anyhow::Result<String> {
    if args.proxy_flags.is_empty() {
        bail!("give the proxy's flags after `--` (`--config`, `--manifests` or `--kubeconfig` …): the cluster state to probe and the configuration of both modes");
    }
    let source = &args.source_of_rules;
    if source.from_file.is_some() && source.node_ips.is_empty() {
        bail!("with --from-file, give the node's addresses (--node-ip, repeatable): NodePorts are probed on them");
    }
    let family = args.family.ip_family();
    let rules = Rules::read(source, family)?;
    let from = mode_of(&rules);
    let to = args.to.mode_name();
    if from == to {
        bail!("the node already runs {to} mode");
    }
    let (config, state) = super::proxy_state(&args.proxy_flags, "explain migrate")?;
    let before_config = in_mode(&config, from);
    let after_config = in_mode(&config, to);
    let snapshot = state.of(family);
    let node = match (&rules, source.node_ips.is_empty() && source.from_file.is_none()) {
        (Rules::Ipvs(_), true) => Node::new(super::local_addresses(Some("kube-ipvs0"))?),
        _ => node(source)?,
    };
    let after = Plan::render(args.to, &after_config, &snapshot, &node, family)?;
    let ipvs_dump = match &rules {
        Rules::Ipvs(dump) => Some(dump.only(family)),
        _ => None,
    };
    let settings = Settings {
        node_ports_before: node_ports(&before_config),
        node_ports_after: node_ports(&after_config),
        drops_invalid_before: drops_invalid(&rules),
        drops_invalid_after: after.drops_invalid(),
    };
    let clients = Clients {
        pod: match args.pod_ip {
            Some(ip) => ip,
            None => pod_address(&before_config, family)?,
        },
        outside: args.client_ip.unwrap_or(default_client(family)),
        outside_interface: args.client_interface.clone(),
        pod_cidrs: match &before_config.detect_local {
            DetectLocal::ClusterCidr(cidrs) => cidrs.clone(),
            _ => snapshot.node.pod_cidrs.clone(),
        },
    };
    let before_walk = |q: &Query| walk(&rules, &node, q);
    let after_walk = |q: &Query| after.walk(&node, q);
    let migration = Migration {
        from,
        to,
        snapshot: &snapshot,
        node: &node,
        clients: &clients,
        ipvs: ipvs_dump.as_ref(),
        settings: &settings,
        before: &before_walk,
        after: &after_walk,
    };
    let report = explain::migrate::compare(&migration)?;
    Ok(match source.output {
        Output::Text => report.to_string(),
        Output::Json => format!("{}\n", serde_json::to_string_pretty(&report)?),
    })
}

fn mode_of(rules: &Rules) -> &'static str {
    match rules {
        Rules::Iptables(_) => "iptables",
        Rules::Nftables(_) => "nftables",
        Rules::Ipvs(_) => "ipvs",
    }
}

/// `config` as the proxy would run with it in `mode`: upstream's only
/// mode-dependent default, `nodePortAddresses` unset meaning `primary` in
/// nftables mode, applied (a config file's mode wins over `--proxy-mode`,
/// so the flags cannot say it). Unset reads back as every address outside
/// nftables mode; from nftables mode, `primary` is kept (unset and
/// `primary` read back alike there).
fn in_mode(config: &Config, mode: &str) -> Config {
    let mut config = config.clone();
    config.mode = match mode {
        "nftables" => ProxyMode::Nftables,
        "ipvs" => ProxyMode::Ipvs,
        _ => ProxyMode::Iptables,
    };
    if config.mode == ProxyMode::Nftables && config.node_port_addresses == NodePortAddresses::All {
        config.node_port_addresses = NodePortAddresses::Primary;
    }
    config
}

/// Walks `q` through the current rules (the explain crate's walkers).
fn walk(rules: &Rules, node: &Node, q: &Query) -> Result<Explanation, ExplainError> {
    match rules {
        Rules::Iptables(save) => explain::iptables::explain_packet(save, None, node, q),
        Rules::Nftables(tables) => explain::nft::explain_packet(tables, node, q),
        Rules::Ipvs(dump) => explain::ipvs::explain_packet(&dump.only(IpFamily::of(q.destination.ip())), node, q),
    }
}

/// The new mode's rules, as the proxy would program them.
enum Plan {
    /// `iptables-restore` text with the jumps from the built-in chains.
    Iptables(String),
    /// Our table.
    Nftables(nftables::TableContents),
}

impl Plan {
    fn render(to: Target, config: &Config, snapshot: &model::Snapshot, node: &Node, family: IpFamily) -> anyhow::Result<Self> {
        Ok(match to {
            Target::Iptables => {
                let opts = ::iptables::render::RenderOptions {
                    local_addresses: node.addresses.clone(),
                    ..crate::proxy::mode_options::iptables_render_options(config, family)
                };
                let ruleset = ::iptables::render::render(snapshot, &opts).ruleset;
                Plan::Iptables(format!("{}{}", ruleset.to_restore(), super::dump::builtin_jumps(&ruleset)))
            }
            Target::Nftables => {
                let facts = plan::NodeFacts { local_addresses: node.addresses.clone() };
                let opts = ::nftables::render::RenderOptions {
                    service_cidrs: snapshot.service_cidrs.clone(),
                    ..crate::proxy::mode_options::nftables_render_options(config, family)
                };
                Plan::Nftables(::nftables::render::render(snapshot, &opts, &facts).ruleset.contents())
            }
        })
    }

    fn walk(&self, node: &Node, q: &Query) -> Result<Explanation, ExplainError> {
        match self {
            Plan::Iptables(save) => explain::iptables::explain_packet(save, None, node, q),
            Plan::Nftables(table) => explain::nft::explain_packet(std::slice::from_ref(table), node, q),
        }
    }

    fn drops_invalid(&self) -> bool {
        match self {
            Plan::Iptables(save) => drops_invalid_text(save),
            Plan::Nftables(_) => false, // upstream's nftables mode has no such rule
        }
    }
}

fn drops_invalid(rules: &Rules) -> bool {
    match rules {
        Rules::Iptables(save) => drops_invalid_text(save),
        Rules::Ipvs(dump) => drops_invalid_text(&dump.iptables),
        Rules::Nftables(_) => false,
    }
}

fn drops_invalid_text(save: &str) -> bool {
    save.lines().any(|l| l.contains("--ctstate INVALID") && l.contains("-j DROP"))
}

/// Where a mode started with `config` serves NodePorts, in words.
fn node_ports(config: &Config) -> String {
    match &config.node_port_addresses {
        NodePortAddresses::All => "every local address".to_string(),
        NodePortAddresses::Primary => "the node's primary addresses only".to_string(),
        NodePortAddresses::Cidrs(cidrs) => {
            format!("addresses in {}", cidrs.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))
        }
    }
}

/// A pod address for the probes: the 200th address of the cluster CIDR
/// of `family` (the reference's client pod, 10.244.0.200).
fn pod_address(config: &Config, family: IpFamily) -> anyhow::Result<IpAddr> {
    let DetectLocal::ClusterCidr(cidrs) = &config.detect_local else {
        bail!("give a pod address for the probes (--pod-ip): the proxy does not detect local traffic by cluster CIDR");
    };
    let cidr = cidrs.iter().find(|c| IpFamily::of(c.addr()) == family).context("no cluster CIDR of that family: give --pod-ip")?;
    cidr.hosts().nth(199).or_else(|| cidr.hosts().next()).context("the cluster CIDR has no host address: give --pod-ip")
}

/// An outside client: TEST-NET-3 (`203.0.113.10`) or the IPv6
/// documentation prefix.
fn default_client(family: IpFamily) -> IpAddr {
    match family {
        IpFamily::V4 => IpAddr::V4(std::net::Ipv4Addr::new(203, 0, 113, 10)),
        IpFamily::V6 => IpAddr::V6(std::net::Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 10)),
    }
}
