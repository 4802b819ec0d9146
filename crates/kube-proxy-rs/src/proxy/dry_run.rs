//! `--dry-run`: read the manifests once, render the rules and print what
//! the proxy would apply, then exit. Nothing on the node is changed: the
//! local addresses are read, nothing else.
//!
//! * iptables and IPVS modes: the `iptables-restore` input of iptables
//!   mode, nfacct matches left out (so the output restores on any kernel),
//!   and the jumps from the built-in chains, which the applier ensures one
//!   by one, printed as comments.
//! * nftables mode: the table as `nft -f` text (`table ip kube-proxy { … }`),
//!   which `nft -c -f` accepts.
//!
//! Either for the primary family only (the Node's first IP in the file, or
//! `--bind-address`; IPv4 when neither says), so the output restores with
//! one tool.

use super::sources::manifests_node_host_ips;
use super::{families, mode_options, node_name};
use crate::config::{Config, ProxyMode};
use anyhow::Context;
use model::IpFamily;
use std::fmt::Write;
use std::sync::{Mutex, PoisonError};

/// Prints the rules for the manifests file to stdout.
pub async fn run(config: &Config) -> anyhow::Result<()> {
    anyhow::ensure!(
        config.mode != ProxyMode::Userspace,
        "--dry-run: userspace mode's portal rules name the proxy ports bound at run time; nothing to print"
    );
    let (family, snapshot) = manifests_snapshot(config, "--dry-run")?;
    if config.mode == ProxyMode::Nftables {
        print!("{}", nftables_text(config, family, &snapshot).await?);
        return Ok(());
    }
    let opts = iptables::render::RenderOptions {
        local_addresses: host::read_local_addresses().await?,
        ..mode_options::iptables_render_options(config, family)
    };
    let ruleset = iptables::render::render(&snapshot, &opts).ruleset;
    print!("{}{}", builtin_jumps_as_comments(&ruleset), ruleset.to_restore());
    Ok(())
}

/// The primary family and its cluster state of `--manifests`, as the
/// proxy's first sync sees them (`job` names who needs it, for the error).
pub(crate) fn manifests_snapshot(config: &Config, job: &str) -> anyhow::Result<(IpFamily, model::Snapshot)> {
    let mut families = manifests_snapshots(config, job, false)?;
    Ok(families.remove(0))
}

/// The cluster state of `--manifests` for the primary family and, with
/// `both`, for the other family too (primary first).
pub(crate) fn manifests_snapshots(config: &Config, job: &str, both: bool) -> anyhow::Result<Vec<(IpFamily, model::Snapshot)>> {
    let path = config.manifests.as_ref().with_context(|| format!("{job} needs --manifests FILE"))?;
    let checked = source::manifests::read(path)?;
    let node_name = node_name::resolve(config)?;
    let family = families::primary_family(config.bind_address, &manifests_node_host_ips(&checked, &node_name));
    let others: Vec<IpFamily> = IpFamily::ALL.into_iter().filter(|f| both && *f != family).collect();
    let tracker = Mutex::new(tracker::Tracker::with_families(node_name, family, &others));
    source::manifests::Held::default().replace(checked, &tracker);
    let mut tracker = tracker.into_inner().unwrap_or_else(PoisonError::into_inner);
    Ok(tracker.families().into_iter().filter_map(|f| Some((f, tracker.snapshot_of(f)?.0))).collect())
}

/// nftables mode's table for `snapshot` on this node, as `nft -f` text.
async fn nftables_text(config: &Config, family: IpFamily, snapshot: &model::Snapshot) -> anyhow::Result<String> {
    let facts = plan::NodeFacts { local_addresses: host::read_local_addresses().await? };
    let opts = nftables::render::RenderOptions {
        service_cidrs: snapshot.service_cidrs.clone(),
        ..mode_options::nftables_render_options(config, family)
    };
    Ok(nftables::render::render(snapshot, &opts, &facts).ruleset.to_nft_text())
}

fn builtin_jumps_as_comments(ruleset: &iptables::Ruleset) -> String {
    let mut out = String::from("# Jumps from built-in chains, ensured one by one (iptables -C / -I / -A):\n");
    for jump in &ruleset.builtin_jumps {
        let verb = if jump.prepend { "-I" } else { "-A" };
        let args: Vec<String> = jump.args.iter().map(|a| quote(a)).collect();
        let _ = writeln!(out, "#   -t {} {verb} {} {}", jump.table, jump.chain, args.join(" "));
    }
    out
}

/// Quotes an argument with spaces the way iptables-save prints it.
fn quote(arg: &str) -> String {
    if arg.contains(' ') { format!("\"{arg}\"") } else { arg.to_string() }
}
