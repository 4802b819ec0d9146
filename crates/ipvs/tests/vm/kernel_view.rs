//! What the VM's kernel holds, read back with the standard tools and put in
//! the same shape as a rendered [`IpvsState`], so the two can be compared.

use super::checks::sh;
use ipvs::ipset::{IpSets, KubeSet};
use ipvs::render::{IpvsState, ipvsadm_line};
use model::IpFamily;
use std::collections::BTreeMap;

/// `ipvsadm -Ln` as sorted blocks: each service line followed by its
/// sorted real servers as `  -> addr:port Masq weight`.
pub fn ipvsadm_blocks() -> Vec<String> {
    let text = sh("ipvsadm -Ln");
    let mut blocks: Vec<(String, Vec<String>)> = Vec::new();
    for line in text.lines() {
        if line.starts_with("TCP ") || line.starts_with("UDP ") || line.starts_with("SCTP ") || line.starts_with("FWM ") {
            blocks.push((line.trim_end().to_string(), Vec::new()));
        } else if let Some(rest) = line.trim_start().strip_prefix("-> ") {
            let words: Vec<&str> = rest.split_whitespace().collect();
            if words[0] == "RemoteAddress:Port" {
                continue;
            }
            blocks.last_mut().unwrap().1.push(format!("  -> {} {} {}", words[0], words[1], words[2]));
        }
    }
    finish(blocks)
}

/// The same blocks for a rendered state.
pub fn rendered_blocks(state: &IpvsState) -> Vec<String> {
    let blocks = state
        .services
        .values()
        .map(|d| {
            let dests = d.real_servers.iter().map(|rs| format!("  -> {} {} {}", rs.addr(), rs.forward, rs.weight)).collect();
            (ipvsadm_line(&d.virtual_server), dests)
        })
        .collect();
    finish(blocks)
}

fn finish(mut blocks: Vec<(String, Vec<String>)>) -> Vec<String> {
    blocks.sort();
    blocks
        .into_iter()
        .map(|(svc, mut dests)| {
            dests.sort();
            std::iter::once(svc).chain(dests).collect::<Vec<_>>().join("\n")
        })
        .collect()
}

/// The block of one service line, e.g. `TCP  10.96.10.20:7000 rr persistent 600`.
pub fn block<'a>(blocks: &'a [String], service_line: &str) -> &'a str {
    blocks
        .iter()
        .find(|b| b.lines().next() == Some(service_line))
        .unwrap_or_else(|| panic!("no `{service_line}` in ipvsadm -Ln:\n{}", blocks.join("\n")))
}

/// Our sets as `ipset save` shows them.
pub fn ipsets() -> IpSets {
    IpSets::parse_save(IpFamily::V4, &sh("ipset save"))
}

/// Set members by set, for comparison.
pub fn members(sets: &IpSets) -> BTreeMap<&'static str, Vec<String>> {
    KubeSet::ALL.iter().map(|s| (s.base_name(), sets.members(*s).map(String::from).collect())).collect()
}

/// Our chains' rules in `<tool>-save` output: (table, chain) to rules.
pub fn saved_chains(save_cmd: &str) -> BTreeMap<(String, String), Vec<String>> {
    let mut chains = BTreeMap::new();
    let mut table = String::new();
    for line in sh(save_cmd).lines() {
        if let Some(t) = line.strip_prefix('*') {
            table = t.to_string();
        } else if let Some(decl) = line.strip_prefix(':') {
            let chain = decl.split_whitespace().next().unwrap().to_string();
            chains.entry((table.clone(), chain)).or_insert_with(Vec::new);
        } else if let Some(rule) = line.strip_prefix("-A ") {
            let (chain, rest) = rule.split_once(' ').unwrap();
            chains.entry((table.clone(), chain.to_string())).or_insert_with(Vec::new).push(rest.to_string());
        }
    }
    chains
}

/// The rendered rules in the same shape (our chains only).
pub fn rendered_chains(state: &IpvsState) -> BTreeMap<(String, String), Vec<String>> {
    let mut chains = BTreeMap::new();
    for (table, rules) in state.ruleset.tables() {
        for chain in &rules.chains {
            chains.insert((table.to_string(), chain.clone()), Vec::new());
        }
        for rule in &rules.rules {
            let line = rule.to_string();
            let rest = line.strip_prefix(rule.chain()).unwrap().trim_start();
            chains.get_mut(&(table.to_string(), rule.chain().to_string())).unwrap().push(rest.to_string());
        }
    }
    chains
}
