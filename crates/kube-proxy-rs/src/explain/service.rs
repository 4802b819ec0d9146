//! `explain service`: what is programmed for one Service (from the
//! kernel or a dump) and, given the proxy's flags after `--`, the drift
//! from what the proxy renders for that cluster state — per IP family: a
//! dual-stack Service has rules in both (live, each family's rules are
//! read: `iptables-save` and `ip6tables-save`, tables `ip` and `ip6
//! kube-proxy`, IPVS's IPv4 and IPv6 virtual servers).

use super::ClusterState;
use super::args::{Output, ServiceArgs, Source};
use super::packet::{Rules, node};
use crate::config::{Config, ProxyMode};
use anyhow::{Context, bail};
use explain::Node;
use explain::service::ipvs::Footprint;
use explain::service::{Drift, FamilyReport, Programmed, ServiceReport, iptables, ipvs as ipvs_service, nftables as nft};
use model::IpFamily;

/// The report for the Service `args` names, formatted.
pub fn run(args: &ServiceArgs) -> anyhow::Result<String> {
    let service = checked_name(&args.service)?;
    let source = &args.source_of_rules;
    let state = match args.proxy_flags.is_empty() {
        true => None,
        false => Some(super::proxy_state(&args.proxy_flags, "explain service's drift")?),
    };
    let read = read_families(source)?;
    let node = service_node(source, read.iter().any(|(_, rules)| matches!(rules, Rules::Ipvs(_))))?;
    let mut mode = "";
    let mut families = Vec::new();
    for (family, rules) in &read {
        mode = mode_name(rules);
        let (programmed, live) = programmed(rules, *family, service, state.as_ref().map(|(_, s)| s))?;
        let desired = match &state {
            // Its rules name the proxy ports bound at run time.
            Some(_) if mode == "userspace" => None,
            Some((config, cluster)) => Some(desired_lines(config, &cluster.of(*family), rules, *family, &node, service)?),
            None => None,
        };
        if programmed.rules.is_empty() && desired.as_ref().is_none_or(Vec::is_empty) && read.len() > 1 {
            continue; // nothing of the Service in this family, and nothing should be
        }
        let drift = desired.map(|desired| Drift::between(&desired, &live));
        families.push(FamilyReport { family: family.to_string(), programmed, drift });
    }
    let report = ServiceReport { service: service.to_string(), mode: mode.to_string(), families };
    Ok(match source.output {
        Output::Text => report.to_string(),
        Output::Json => format!("{}\n", serde_json::to_string_pretty(&report)?),
    })
}

fn checked_name(name: &str) -> anyhow::Result<&str> {
    match name.split_once('/') {
        Some((ns, svc)) if !ns.is_empty() && !svc.is_empty() && !svc.contains('/') => Ok(name),
        _ => bail!("service `{name}`: expected NAMESPACE/NAME"),
    }
}

fn mode_name(rules: &Rules) -> &'static str {
    match rules {
        Rules::Iptables(save) if save.contains(":KUBE-PORTALS-CONTAINER") => "userspace",
        Rules::Iptables(_) => "iptables",
        Rules::Nftables(_) => "nftables",
        Rules::Ipvs(_) => "ipvs",
    }
}

/// The node for rendering: `--node-ip`s, else the kernel's addresses (in
/// IPVS mode without `kube-ipvs0`'s, as the proxy reads them).
fn service_node(source: &Source, ipvs: bool) -> anyhow::Result<Node> {
    match ipvs && source.node_ips.is_empty() && source.from_file.is_none() {
        true => Ok(Node::new(super::local_addresses(Some("kube-ipvs0"))?)),
        false => node(source),
    }
}

/// The rules of every family there are: a file's (an nft JSON dump may
/// hold both tables, an IPVS dump both families' virtual servers), else
/// the kernel's of each family it can read (an error only when it can
/// read neither).
fn read_families(source: &Source) -> anyhow::Result<Vec<(IpFamily, Rules)>> {
    if source.from_file.is_some() {
        let rules = Rules::read(source, IpFamily::V4)?;
        let families = match &rules {
            Rules::Iptables(save) => vec![save_family(save)],
            Rules::Nftables(tables) => IpFamily::ALL.into_iter().filter(|f| our_table(tables, *f).is_ok()).collect(),
            Rules::Ipvs(dump) => dump.families(),
        };
        if families.is_empty() {
            bail!("the dump holds neither table ip nor ip6 kube-proxy");
        }
        return Ok(families.into_iter().map(|f| (f, rules.clone())).collect());
    }
    let mut read = Vec::new();
    let mut first_error = None;
    for family in IpFamily::ALL {
        match Rules::read(source, family) {
            Ok(rules) => read.push((family, rules)),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    match (read.is_empty(), first_error) {
        (true, Some(e)) => Err(e),
        _ => Ok(read),
    }
}

/// The family of `iptables-save` text: IPv6 when an address in it is.
fn save_family(save: &str) -> IpFamily {
    let v6 = save.split_whitespace().any(|word| {
        let word = word.trim_start_matches('[');
        let address = word.split(['/', ']']).next().unwrap_or_default();
        address.contains(':') && address.parse::<std::net::Ipv6Addr>().is_ok()
    });
    if v6 { IpFamily::V6 } else { IpFamily::V4 }
}

fn our_table(tables: &[nftables::TableContents], family: IpFamily) -> anyhow::Result<&nftables::TableContents> {
    let want = explain::live::nft_family(family);
    tables
        .iter()
        .find(|t| t.table.family == want && t.table.name == "kube-proxy")
        .with_context(|| format!("no table {} kube-proxy", want.name()))
}

/// What `rules` hold for the Service in `family`, and its lines for the
/// drift check.
fn programmed(rules: &Rules, family: IpFamily, service: &str, cluster: Option<&ClusterState>) -> anyhow::Result<(Programmed, Vec<String>)> {
    Ok(match rules {
        Rules::Iptables(save) => (iptables::programmed(save, service), iptables::rule_lines(save, service)),
        Rules::Nftables(tables) => {
            let table = our_table(tables, family)?;
            (nft::programmed(table, service), nft::rule_lines(table, service))
        }
        Rules::Ipvs(dump) => {
            let Some(cluster) = cluster else {
                bail!(
                    "IPVS virtual servers and ipset members do not name their Service: give the proxy's flags after `--` \
                     (`--config`, `--manifests` or `--kubeconfig` …) so the cluster state says which are {service}'s"
                );
            };
            let footprint = Footprint::of(&cluster.of(family), service);
            let dump = dump.only(family);
            (ipvs_service::programmed(&dump, service, &footprint), ipvs_service::rule_lines(&dump, service, &footprint))
        }
    })
}

/// The Service's lines in what the proxy, started with `config`, renders
/// for `snapshot` (one family's cluster state) in the mode of `live` for
/// the node.
fn desired_lines(config: &Config, snapshot: &model::Snapshot, live: &Rules, family: IpFamily, node: &Node, service: &str) -> anyhow::Result<Vec<String>> {
    Ok(match live {
        Rules::Iptables(save) => {
            let opts = ::iptables::render::RenderOptions {
                local_addresses: node.addresses.clone(),
                nfacct: save.contains("-m nfacct"),
                ..crate::proxy::mode_options::iptables_render_options(config, family)
            };
            let restore = ::iptables::render::render(snapshot, &opts).ruleset.to_restore();
            iptables::rule_lines(&restore, service)
        }
        Rules::Ipvs(_) => {
            if config.mode != ProxyMode::Ipvs {
                bail!("the rules read are IPVS mode's but the proxy flags say {:?} mode", config.mode);
            }
            let opts = ::ipvs::render::RenderOptions {
                local_addresses: node.addresses.clone(),
                ..crate::proxy::mode_options::ipvs(config, family).render
            };
            let rendered = ::ipvs::render::render(snapshot, &opts).to_string();
            let dump = explain::ipvs::IpvsDump::parse(&rendered).context("reading back the proxy's IPVS rendering")?;
            ipvs_service::rule_lines(&dump, service, &Footprint::of(snapshot, service))
        }
        Rules::Nftables(_) => {
            if config.mode != ProxyMode::Nftables {
                bail!("the kernel holds nftables mode's table but the proxy flags say {:?} mode", config.mode);
            }
            let facts = plan::NodeFacts { local_addresses: node.addresses.clone() };
            let opts = ::nftables::render::RenderOptions {
                service_cidrs: snapshot.service_cidrs.clone(),
                ..crate::proxy::mode_options::nftables_render_options(config, family)
            };
            let table = ::nftables::render::render(snapshot, &opts, &facts).ruleset.contents();
            nft::rule_lines(&table, service)
        }
    })
}
