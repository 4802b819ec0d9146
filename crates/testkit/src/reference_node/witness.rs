//! A table of the test's own in node-a that counts, per flow, the packets
//! that entered node-a (prerouting / output, before anything else) and the
//! ones that got through it (postrouting / input, after everything else),
//! so a silent flow can be told apart: dropped in node-a (entered, never
//! through) or lost outside it (through, unanswered). Like the
//! trace-only table of upstream's run, it never changes a verdict.

use crate::flows::FlowCase;
use crate::netns::Netns;
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The witness table (`ip` family).
pub const TABLE: &str = "kprs-flow-witness";

/// What the witness counted for one flow.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Passage {
    /// Packets of the flow that entered node-a.
    pub entered: u64,
    /// Packets of the flow that left node-a or were delivered to it.
    pub through: u64,
}

/// Loads the witness table with one counting rule per flow and chain.
pub(super) fn install(node: &Netns, flows: &[FlowCase]) -> Result<()> {
    let mut text = format!("table ip {TABLE} {{\n");
    let chains = [
        ("entered-in", "prerouting priority -500", false),
        ("entered-local", "output priority -500", false),
        ("through-out", "postrouting priority 500", true),
        ("through-in", "input priority 500", true),
    ];
    for (name, hook, after_nat) in chains {
        let _ = writeln!(text, "  chain {name} {{\n    type filter hook {hook}; policy accept;");
        for flow in flows {
            let _ = writeln!(text, "    {} counter comment \"{}\"", matcher(flow, after_nat), flow.id);
        }
        text.push_str("  }\n");
    }
    text.push_str("}\n");
    let dir = tempfile::tempdir().context("temporary directory")?;
    let path = dir.path().join("witness.nft");
    std::fs::write(&path, &text).with_context(|| format!("write {}", path.display()))?;
    node.exec("nft", &["-f", &path.to_string_lossy()]).context("load the witness table")?;
    Ok(())
}

/// The flow's first packets as sent (before NAT), or its connection by
/// its original tuple (after NAT).
fn matcher(flow: &FlowCase, after_nat: bool) -> String {
    let (source, destination, port) = (flow.source(), flow.destination.ip(), flow.destination.port());
    let protocol = flow.protocol;
    if after_nat {
        format!(
            "ct protocol {protocol} ct original ip saddr {source} ct original ip daddr {destination} ct original proto-dst {port}"
        )
    } else {
        format!("meta l4proto {protocol} ip saddr {source} ip daddr {destination} th dport {port}")
    }
}

/// Every flow's counts.
pub(super) fn read(node: &Netns) -> Result<BTreeMap<String, Passage>> {
    let listing = node.exec("nft", &["list", "table", "ip", TABLE]).context("list the witness table")?;
    let mut passages: BTreeMap<String, Passage> = BTreeMap::new();
    let mut through = false;
    for line in listing.lines().map(str::trim) {
        if let Some(chain) = line.strip_prefix("chain ") {
            through = chain.starts_with("through");
            continue;
        }
        let Some((packets, id)) = counted(line) else { continue };
        let passage = passages.entry(id).or_default();
        if through {
            passage.through += packets;
        } else {
            passage.entered += packets;
        }
    }
    Ok(passages)
}

/// `… counter packets N bytes M comment "ID"` -> (N, ID).
fn counted(line: &str) -> Option<(u64, String)> {
    let packets = line.split("counter packets ").nth(1)?.split_whitespace().next()?.parse().ok()?;
    let id = line.split("comment \"").nth(1)?.strip_suffix('"')?;
    Some((packets, id.to_string()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_counter_line() {
        let line =
            r#"ip saddr 10.244.0.200 ip daddr 10.96.10.111 tcp dport 80 counter packets 3 bytes 180 comment "F50""#;
        assert_eq!(counted(line), Some((3, "F50".to_string())));
        assert_eq!(counted("type filter hook input priority 500; policy accept;"), None);
    }
}
