//! What a node's kernel holds, printed for failure messages: the
//! iptables-legacy tables of both families and the nftables ruleset.

use crate::netns::Netns;

/// `iptables-legacy-save` and `ip6tables-legacy-save` of the namespace
/// (each if it is not empty), then `nft list ruleset` if it is not empty; a
/// tool that fails says so in place of its output.
pub fn dump_rules(ns: &Netns) -> String {
    let mut text = String::new();
    let tools = [("iptables-legacy-save", &[][..]), ("ip6tables-legacy-save", &[][..]), ("nft", &["list", "ruleset"][..])];
    for (program, args) in tools {
        let out = match ns.exec(program, args) {
            Ok(out) => out,
            Err(e) => format!("({program} failed: {e:#})\n"),
        };
        if program != "iptables-legacy-save" && out.trim().is_empty() {
            continue;
        }
        text.push_str(&format!("# {program} {}\n{out}", args.join(" ")));
    }
    text
}
