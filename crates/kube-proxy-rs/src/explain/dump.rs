//! `explain dump`: the rules in the form `--from-file` reads — the
//! kernel's now, or (with the proxy's flags after `--`) what the proxy
//! would program for that cluster state. IPVS mode writes our dump format
//! (`explain::ipvs`); iptables mode `iptables-save` text; nftables mode
//! points at `nft -j list ruleset`, which is already the format.

use super::args::{DumpArgs, Mode};
use super::packet::{backend_of, live_ipvs};
use anyhow::bail;

/// The dump `args` asks for.
pub fn run(args: &DumpArgs) -> anyhow::Result<String> {
    if !args.proxy_flags.is_empty() {
        return rendered(args);
    }
    match args.mode {
        Mode::Ipvs => Ok(live_ipvs(backend_of(args.iptables_backend), args.family.ip_family())?.to_string()),
        Mode::Iptables => Ok(explain::live::iptables_save(backend_of(args.iptables_backend), args.family.ip_family())?),
        Mode::Nftables => bail!("for nftables mode, `nft -j list ruleset` already writes what --from-file reads"),
    }
}

/// What the proxy, started with the flags after `--`, would program.
fn rendered(args: &DumpArgs) -> anyhow::Result<String> {
    let (config, state) = super::proxy_state(&args.proxy_flags, "explain dump")?;
    let family = args.family.ip_family();
    let snapshot = state.of(family);
    let local_addresses = match args.node_ips.is_empty() {
        false => args.node_ips.clone(),
        // IPVS mode's own kube-ipvs0 addresses are not the node's (the proxy leaves them out too)
        true => super::local_addresses(Some("kube-ipvs0"))?,
    };
    Ok(match args.mode {
        Mode::Ipvs => {
            let opts = ipvs::render::RenderOptions {
                local_addresses,
                ..crate::proxy::mode_options::ipvs(&config, family).render
            };
            let state = ipvs::render::render(&snapshot, &opts);
            format!("{state}{}", builtin_jumps(&state.ruleset))
        }
        Mode::Iptables => {
            let opts = iptables::render::RenderOptions {
                local_addresses,
                ..crate::proxy::mode_options::iptables_render_options(&config, family)
            };
            let ruleset = iptables::render::render(&snapshot, &opts).ruleset;
            format!("{}{}", ruleset.to_restore(), builtin_jumps(&ruleset))
        }
        Mode::Nftables => bail!("for nftables mode, `--dry-run` prints the table as `nft -f` text"),
    })
}

/// The jumps from the built-in chains (the applier ensures them one by
/// one, so the restore text lacks them), as restore blocks of their own:
/// a dump must hold the whole path from PREROUTING / OUTPUT.
pub(super) fn builtin_jumps(ruleset: &xtables::rules::Ruleset) -> String {
    let mut out = String::new();
    for jump in &ruleset.builtin_jumps {
        let args: Vec<String> = jump.args.iter().map(|a| if a.contains(' ') { format!("\"{a}\"") } else { a.clone() }).collect();
        out.push_str(&format!("*{}\n-A {} {}\nCOMMIT\n", jump.table, jump.chain, args.join(" ")));
    }
    out
}
