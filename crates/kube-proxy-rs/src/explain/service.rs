//! `explain service`: what is programmed for one Service (from the
//! kernel or a dump) and, given the proxy's flags after `--`, the drift
//! from what the proxy renders for that cluster state.

use super::args::{Output, ServiceArgs};
use super::packet::{Rules, node};
use crate::config::ProxyMode;
use anyhow::{Context, bail};
use explain::Node;
use explain::service::{Drift, ServiceReport, iptables, nftables as nft};
use model::IpFamily;

/// The report for the Service `args` names, formatted.
pub fn run(args: &ServiceArgs) -> anyhow::Result<String> {
    let service = checked_name(&args.service)?;
    let rules = Rules::read(&args.source_of_rules)?;
    let node = node(&args.source_of_rules)?;
    let (mode, programmed, live) = match &rules {
        Rules::Iptables(save) => ("iptables", iptables::programmed(save, service), iptables::rule_lines(save, service)),
        Rules::Nftables(tables) => {
            let table = our_table(tables)?;
            ("nftables", nft::programmed(table, service), nft::rule_lines(table, service))
        }
        Rules::Ipvs(_) => bail!("explain service reads iptables and nftables modes' rules; for IPVS mode use explain packet"),
    };
    let drift = match args.proxy_flags.is_empty() {
        true => None,
        false => Some(Drift::between(&desired_lines(&args.proxy_flags, &rules, &node, service)?, &live)),
    };
    let report = ServiceReport { service: service.to_string(), mode: mode.to_string(), programmed, drift };
    Ok(match args.source_of_rules.output {
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

fn our_table(tables: &[nftables::TableContents]) -> anyhow::Result<&nftables::TableContents> {
    tables
        .iter()
        .find(|t| t.table.family == nftables::Family::Ip && t.table.name == "kube-proxy")
        .context("no table ip kube-proxy")
}

/// The Service's lines in what the proxy, started with `proxy_flags`,
/// renders in the mode of `live` for the node.
fn desired_lines(proxy_flags: &[String], live: &Rules, node: &Node, service: &str) -> anyhow::Result<Vec<String>> {
    let (config, snapshot) = super::proxy_state(proxy_flags, "explain service's drift")?;
    Ok(match live {
        Rules::Iptables(save) => {
            let opts = ::iptables::render::RenderOptions {
                local_addresses: node.addresses.clone(),
                nfacct: save.contains("-m nfacct"),
                ..crate::proxy::mode_options::iptables_render_options(&config, IpFamily::V4)
            };
            let restore = ::iptables::render::render(&snapshot, &opts).ruleset.to_restore();
            iptables::rule_lines(&restore, service)
        }
        Rules::Ipvs(_) => bail!("no drift check for IPVS mode"),
        Rules::Nftables(_) => {
            if config.mode != ProxyMode::Nftables {
                bail!("the kernel holds nftables mode's table but the proxy flags say {:?} mode", config.mode);
            }
            let facts = plan::NodeFacts { local_addresses: node.addresses.clone() };
            let opts = ::nftables::render::RenderOptions {
                service_cidrs: snapshot.service_cidrs.clone(),
                ..crate::proxy::mode_options::nftables_render_options(&config, IpFamily::V4)
            };
            let table = ::nftables::render::render(&snapshot, &opts, &facts).ruleset.contents();
            nft::rule_lines(&table, service)
        }
    })
}
