//! What a node's kernel holds, printed for failure messages: the
//! iptables-legacy tables and the nftables ruleset.

use crate::netns::Netns;

/// `iptables-legacy-save` of the namespace, then `nft list ruleset` if it is
/// not empty; a tool that fails says so in place of its output.
pub fn dump_rules(ns: &Netns) -> String {
    let mut text = String::new();
    for (program, args) in [("iptables-legacy-save", &[][..]), ("nft", &["list", "ruleset"][..])] {
        let out = match ns.exec(program, args) {
            Ok(out) => out,
            Err(e) => format!("({program} failed: {e:#})\n"),
        };
        if program == "nft" && out.trim().is_empty() {
            continue;
        }
        text.push_str(&format!("# {program} {}\n{out}", args.join(" ")));
    }
    text
}
