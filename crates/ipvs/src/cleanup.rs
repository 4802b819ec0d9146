//! `--cleanup` (and start-up in another mode): remove what IPVS mode made —
//! virtual servers, the dummy interface, the companion iptables chains and
//! their jumps, our ipsets — in that order (a set still used by a rule
//! cannot be destroyed).

use crate::apply::ApplyOptions;
use crate::apply::diff::is_excluded;
use crate::command::{CommandFailure, run};
use crate::ipset::apply::destroy_ipsets;
use crate::render::rules::{FILTER_CHAINS, NAT_CHAINS};
use crate::{Error, IpvsSocket, Links};
use xtables::apply::{Backend, Iptables};
use model::IpFamily;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

const BUILTIN_CHAINS: [&str; 5] = ["PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"];

/// What a cleanup removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanupReport {
    /// The kernel has IPVS (else there were no virtual servers to delete).
    pub ipvs_available: bool,
    /// Virtual servers deleted.
    pub services_deleted: usize,
    /// The dummy interface existed and was deleted.
    pub dummy_deleted: bool,
    /// iptables restores run (one per backend and family that had
    /// something of ours).
    pub iptables_cleaned: Vec<(Backend, IpFamily)>,
}

/// Removes everything IPVS mode makes, in the calling thread's network
/// namespace: every virtual server outside `opts.exclude_cidrs` (IPVS mode
/// assumes the IPVS table is its own, as upstream does), the dummy
/// interface, our chains in both iptables backends and families, and our
/// ipsets. Missing pieces are fine; failures are collected.
pub async fn apply_cleanup(opts: &ApplyOptions) -> Result<CleanupReport, Error> {
    apply_cleanup_sparing(opts, &[]).await
}

/// The chains IPVS mode shares by name with iptables mode: where iptables
/// mode now runs, they are its own (rewritten by its first sync).
pub const IPTABLES_MODE_CHAINS: [&str; 5] = ["KUBE-SERVICES", "KUBE-POSTROUTING", "KUBE-MARK-MASQ", "KUBE-FORWARD", "KUBE-PROXY-FIREWALL"];

/// [`apply_cleanup`], but in the iptables backends and families of
/// `iptables_mode` (where iptables mode runs now) the chains of
/// [`IPTABLES_MODE_CHAINS`] and the jumps to them stay: only IPVS mode's
/// own chains go there.
pub async fn apply_cleanup_sparing(opts: &ApplyOptions, iptables_mode: &[(Backend, IpFamily)]) -> Result<CleanupReport, Error> {
    let mut report = CleanupReport::default();
    let mut errors: Vec<String> = Vec::new();
    match delete_virtual_servers(opts).await {
        Ok(n) => (report.ipvs_available, report.services_deleted) = (true, n),
        Err(Error::IpvsUnavailable(_)) => {}
        Err(e) => errors.push(e.to_string()),
    }
    match delete_dummy(&opts.dummy_interface).await {
        Ok(deleted) => report.dummy_deleted = deleted,
        Err(e) => errors.push(e.to_string()),
    }
    for backend in Backend::ALL {
        for family in [IpFamily::V4, IpFamily::V6] {
            let spared: &[&str] = if iptables_mode.contains(&(backend, family)) { &IPTABLES_MODE_CHAINS } else { &[] };
            match apply_iptables_cleanup_sparing(backend, family, spared).await {
                Ok(true) => report.iptables_cleaned.push((backend, family)),
                Ok(false) => {}
                Err(e) => errors.push(e.to_string()),
            }
        }
    }
    for family in [IpFamily::V4, IpFamily::V6] {
        match destroy_ipsets(family).await {
            Ok(()) => {}
            Err(Error::Ipset { detail, .. }) if detail.starts_with("cannot start") => {}
            Err(e) => errors.push(e.to_string()),
        }
    }
    if errors.is_empty() { Ok(report) } else { Err(Error::Incomplete { errors }) }
}

/// Whether IPVS mode left something here: the dummy interface or our
/// `KUBE-IPVS-IPS` set. A proxy starting in another mode can call
/// [`apply_cleanup`] only then, so it never flushes an IPVS table that
/// someone else (not kube-proxy) uses.
pub async fn leftovers_present(opts: &ApplyOptions) -> Result<bool, Error> {
    if Links::connect()?.link_index(&opts.dummy_interface).await?.is_some() {
        return Ok(true);
    }
    match run("ipset", &["list", "-n"], None).await {
        Ok(names) => Ok(names.lines().any(|l| l.trim() == "KUBE-IPVS-IPS" || l.trim() == "KUBE-6-IPVS-IPS")),
        Err(CommandFailure::Spawn(_)) => Ok(false),
        Err(e) => Err(Error::Ipset { operation: "ipset list -n".into(), detail: e.to_string() }),
    }
}

async fn delete_virtual_servers(opts: &ApplyOptions) -> Result<usize, Error> {
    let ipvs = IpvsSocket::connect().await?;
    let services = ipvs.services().await?;
    let doomed: Vec<_> = services.iter().filter(|vs| !is_excluded(vs.key.address, &opts.exclude_cidrs)).collect();
    if doomed.len() == services.len() && !doomed.is_empty() {
        ipvs.flush().await?;
    } else {
        for vs in &doomed {
            ipvs.delete_service(&vs.key).await?;
        }
    }
    Ok(doomed.len())
}

async fn delete_dummy(name: &str) -> Result<bool, Error> {
    let links = Links::connect()?;
    let existed = links.link_index(name).await?.is_some();
    links.delete_link(name).await?;
    Ok(existed)
}

/// Removes IPVS mode's chains and jumps from one backend and family;
/// `Ok(false)` when there was nothing (or the backend's tools are absent).
pub async fn apply_iptables_cleanup(backend: Backend, family: IpFamily) -> Result<bool, Error> {
    apply_iptables_cleanup_sparing(backend, family, &[]).await
}

/// [`apply_iptables_cleanup`], keeping the chains named in `spared`.
async fn apply_iptables_cleanup_sparing(backend: Backend, family: IpFamily, spared: &[&str]) -> Result<bool, Error> {
    let Ok(saved) = Iptables::new(backend, family).save().await else { return Ok(false) };
    let Some(input) = render_iptables_cleanup_sparing(&saved, spared) else { return Ok(false) };
    let base = if family == IpFamily::V6 { "ip6tables" } else { "iptables" };
    let program = format!("{base}-{backend}-restore");
    run(&program, &["--noflush", "--wait=5"], Some(&input)).await.map_err(|e| match e {
        CommandFailure::Spawn(err) => Error::IptablesCleanup { command: program.clone(), detail: err.to_string() },
        CommandFailure::Failed(detail) => Error::IptablesCleanup { command: program.clone(), detail },
    })?;
    Ok(true)
}

/// The `iptables-restore --noflush` input that deletes, from an
/// `iptables-save` dump, our jumps in built-in chains and our chains
/// (flushed, then `-X`). A chain of ours that a rule of someone else still
/// jumps to is kept. `None` when there is nothing of ours.
pub fn render_iptables_cleanup(saved: &str) -> Option<String> {
    render_iptables_cleanup_sparing(saved, &[])
}

/// [`render_iptables_cleanup`], keeping the chains named in `spared` (and
/// so the chains their rules jump to).
pub fn render_iptables_cleanup_sparing(saved: &str, spared: &[&str]) -> Option<String> {
    let tables = parse_save(saved);
    let mut out = String::new();
    for (table, ours) in [("nat", &NAT_CHAINS[..]), ("filter", &FILTER_CHAINS[..])] {
        let Some(t) = tables.get(table) else { continue };
        let mut doomed: BTreeSet<&str> = ours.iter().copied().filter(|c| t.chains.contains(*c) && !spared.contains(c)).collect();
        // Keep chains still used by rules that stay (a fixed point: keeping
        // a chain keeps the chains it jumps to).
        loop {
            let kept: Vec<&str> = doomed
                .iter()
                .copied()
                .filter(|c| {
                    t.rules.iter().any(|(chain, rule)| {
                        target(rule) == Some(c) && !doomed.contains(chain.as_str()) && !BUILTIN_CHAINS.contains(&chain.as_str())
                    })
                })
                .collect();
            if kept.is_empty() {
                break;
            }
            kept.iter().for_each(|c| {
                doomed.remove(c);
            });
        }
        let jumps: Vec<&(String, String)> = t
            .rules
            .iter()
            .filter(|(chain, rule)| BUILTIN_CHAINS.contains(&chain.as_str()) && target(rule).is_some_and(|x| doomed.contains(x)))
            .collect();
        if doomed.is_empty() && jumps.is_empty() {
            continue;
        }
        let _ = writeln!(out, "*{table}");
        for (chain, rule) in jumps {
            let _ = writeln!(out, "-D {chain} {rule}");
        }
        for chain in &doomed {
            let _ = writeln!(out, ":{chain} - [0:0]");
        }
        for chain in &doomed {
            let _ = writeln!(out, "-X {chain}");
        }
        out.push_str("COMMIT\n");
    }
    (!out.is_empty()).then_some(out)
}

#[derive(Default)]
struct SavedTable {
    chains: BTreeSet<String>,
    /// (chain, rule text after `-A CHAIN `).
    rules: Vec<(String, String)>,
}

fn parse_save(text: &str) -> BTreeMap<String, SavedTable> {
    let mut tables: BTreeMap<String, SavedTable> = BTreeMap::new();
    let mut current = String::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix('*') {
            current = name.to_string();
            tables.entry(current.clone()).or_default();
        } else if let Some(decl) = line.strip_prefix(':') {
            let chain = decl.split_whitespace().next().unwrap_or_default();
            tables.entry(current.clone()).or_default().chains.insert(chain.to_string());
        } else if let Some(rule) = line.strip_prefix("-A ") {
            let (chain, rest) = rule.split_once(' ').unwrap_or((rule, ""));
            tables.entry(current.clone()).or_default().rules.push((chain.to_string(), rest.to_string()));
        }
    }
    tables
}

/// The `-j` / `-g` target of a rule.
fn target(rule: &str) -> Option<&str> {
    let mut words = rule.split_whitespace();
    while let Some(w) = words.next() {
        if w == "-j" || w == "-g" {
            return words.next();
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deletes_our_chains_and_jumps_only() {
        let saved = "*nat\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n:KUBE-MARK-MASQ - [0:0]\n:DOCKER - [0:0]\n\
                     -A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n\
                     -A PREROUTING -j DOCKER\n-A KUBE-SERVICES -j KUBE-MARK-MASQ\n-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000\nCOMMIT\n\
                     *filter\n:INPUT ACCEPT [0:0]\nCOMMIT\n";
        let input = render_iptables_cleanup(saved).unwrap_or_default();
        assert_eq!(
            input,
            "*nat\n-D PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n\
             :KUBE-MARK-MASQ - [0:0]\n:KUBE-SERVICES - [0:0]\n-X KUBE-MARK-MASQ\n-X KUBE-SERVICES\nCOMMIT\n"
        );
    }

    #[test]
    fn spares_iptables_modes_chains_where_it_runs() {
        let saved = "*nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-SERVICES - [0:0]\n:KUBE-NODE-PORT - [0:0]\n:KUBE-MARK-MASQ - [0:0]\n\
                     -A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n\
                     -A KUBE-NODE-PORT -j KUBE-MARK-MASQ\nCOMMIT\n";
        let input = render_iptables_cleanup_sparing(saved, &IPTABLES_MODE_CHAINS).unwrap_or_default();
        assert_eq!(input, "*nat\n:KUBE-NODE-PORT - [0:0]\n-X KUBE-NODE-PORT\nCOMMIT\n");
    }

    #[test]
    fn keeps_a_chain_someone_else_still_uses() {
        let saved = "*nat\n:KUBE-MARK-MASQ - [0:0]\n:KUBE-SVC-X - [0:0]\n-A KUBE-SVC-X -j KUBE-MARK-MASQ\nCOMMIT\n";
        assert_eq!(render_iptables_cleanup(saved), None);
        assert_eq!(render_iptables_cleanup("*nat\n:PREROUTING ACCEPT [0:0]\nCOMMIT\n"), None);
    }
}
