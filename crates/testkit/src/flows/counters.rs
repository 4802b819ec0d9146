//! The iptables counterpart of the nft trace: which rules' packet counters
//! a flow moved (`iptables-save -c` before and after it), compared with
//! the counter deltas of upstream's run (`iptables_hits` in `flows.json`),
//! up to which endpoint a random choice picked (`KUBE-SEP-` chain names,
//! endpoint addresses, the `statistic` match that picked one).

use super::case::FlowCase;
use crate::netns::Netns;
use anyhow::{Context, Result};
use std::collections::{BTreeMap, BTreeSet};

/// A rule: table, chain, and the rule after `-A CHAIN`.
pub type RuleKey = (String, String, String);

/// Every rule's packet counter in `ns` (`iptables-legacy-save -c`).
pub fn rule_counters(ns: &Netns) -> Result<BTreeMap<RuleKey, u64>> {
    let saved = ns.exec("iptables-legacy-save", &["-c"]).context("iptables-legacy-save -c")?;
    let mut table = String::new();
    let mut counters: BTreeMap<RuleKey, u64> = BTreeMap::new();
    for line in saved.lines() {
        if let Some(name) = line.strip_prefix('*') {
            table = name.to_string();
            continue;
        }
        let Some((packets, rule)) = counted_rule(line) else { continue };
        let Some((chain, rest)) = rule.split_once(' ') else { continue };
        *counters.entry((table.clone(), chain.to_string(), rest.to_string())).or_default() += packets;
    }
    Ok(counters)
}

/// `[packets:bytes] -A CHAIN rule` -> (packets, `CHAIN rule`).
fn counted_rule(line: &str) -> Option<(u64, &str)> {
    let rest = line.strip_prefix('[')?;
    let (counts, rule) = rest.split_once("] -A ")?;
    let packets = counts.split(':').next()?.parse().ok()?;
    Some((packets, rule))
}

/// The rules whose counter moved from `before` to `after`.
pub fn moved(before: &BTreeMap<RuleKey, u64>, after: &BTreeMap<RuleKey, u64>) -> BTreeSet<RuleKey> {
    after.iter().filter(|(key, n)| before.get(*key).is_none_or(|b| *n > b)).map(|(key, _)| key.clone()).collect()
}

/// `Ok` if every rule of kube-proxy's chains (`KUBE-*`, as upstream's run
/// recorded them) that `ours` moved also moved in upstream's run, and
/// every rule that moved for each of upstream's connections moved here.
pub fn check_hits(flow: &FlowCase, ours: &BTreeSet<RuleKey>) -> Result<(), String> {
    let ours: BTreeSet<&RuleKey> = ours.iter().filter(|(_, chain, _)| chain.starts_with("KUBE-")).collect();
    if ours.is_empty() {
        return Err("no rule counter moved".to_string());
    }
    let upstream: BTreeSet<RuleKey> =
        flow.rule_hits.iter().map(|h| normalized(&(h.table.clone(), h.chain.clone(), h.rule.clone()))).collect();
    let ours_normalized: BTreeSet<RuleKey> = ours.iter().map(|key| normalized(key)).collect();
    let extra: Vec<String> = ours_normalized.difference(&upstream).map(show).collect();
    if !extra.is_empty() {
        return Err(format!("rules hit here that upstream's run never hit:\n      {}", extra.join("\n      ")));
    }
    // Upstream's connections, answered or not: a nat rule whose counter
    // moved at least that often is on every connection's path (fewer can
    // be noise, such as kube-proxy's own API traffic).
    let observed = &flow.observed;
    let attempts =
        observed.answered.values().sum::<usize>() + observed.connected_only + observed.failures.values().sum::<usize>();
    let connections = u64::try_from(attempts).unwrap_or(u64::MAX).max(1);
    let missed: Vec<String> = flow
        .rule_hits
        .iter()
        .filter(|h| h.table == "nat" && h.packets >= connections)
        .map(|h| normalized(&(h.table.clone(), h.chain.clone(), h.rule.clone())))
        .filter(|key| !ours_normalized.contains(key))
        .map(|key| show(&key))
        .collect();
    if !missed.is_empty() {
        return Err(format!(
            "rules every upstream connection hit that were not hit here:\n      {}",
            missed.join("\n      ")
        ));
    }
    Ok(())
}

fn show(key: &RuleKey) -> String {
    format!("{} -A {} {}", key.0, key.1, key.2)
}

/// The rule with the picked endpoint blanked out.
fn normalized(key: &RuleKey) -> RuleKey {
    (key.0.clone(), blank_words(&key.1), blank_words(&key.2))
}

fn blank_words(text: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut words = text.split(' ').peekable();
    while let Some(word) = words.next() {
        match word {
            // `-m statistic --mode random --probability P`: which endpoint.
            "-m" if words.peek() == Some(&"statistic") => {
                for _ in 0..5 {
                    words.next();
                }
            }
            "--to-destination" => {
                words.next();
                out.push("--to-destination <endpoint>".to_string());
            }
            "->" => {
                let quoted = words.next().unwrap_or_default();
                out.push(format!("-> <endpoint>{}", if quoted.ends_with('"') { "\"" } else { "" }));
            }
            w if w.starts_with("KUBE-SEP-") => out.push("KUBE-SEP-<endpoint>".to_string()),
            w => out.push(w.to_string()),
        }
    }
    out.join(" ")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::flows::iptables_flows;

    fn upstream_hits(flow: &FlowCase) -> BTreeSet<RuleKey> {
        flow.rule_hits.iter().map(|h| (h.table.clone(), h.chain.clone(), h.rule.clone())).collect()
    }

    #[test]
    fn a_flow_must_hit_upstreams_rules() {
        let flows = iptables_flows().unwrap();
        let by_id = |id: &str| flows.iter().find(|f| f.id == id).unwrap();
        let (f01, f02, f07) = (by_id("F01"), by_id("F02"), by_id("F07"));
        assert!(check_hits(f01, &upstream_hits(f01)).is_ok());
        assert!(check_hits(f01, &upstream_hits(f02)).is_err(), "F02 is masqueraded, F01 not");
        assert!(check_hits(f01, &BTreeSet::new()).is_err(), "nothing hit");
        let mut without_dnat = upstream_hits(f01);
        without_dnat.retain(|(_, chain, _)| chain != "KUBE-SERVICES");
        assert!(check_hits(f01, &without_dnat).is_err(), "the service rule every connection hits");
        // Builtin chains are not compared (upstream's run did not record them).
        let mut with_builtin = upstream_hits(f07);
        with_builtin.insert(("nat".into(), "OUTPUT".into(), "-j KUBE-SERVICES".into()));
        assert!(check_hits(f07, &with_builtin).is_ok());
    }

    #[test]
    fn reads_counters_and_blanks_the_endpoint() {
        assert_eq!(counted_rule("[7:420] -A KUBE-FORWARD -j ACCEPT"), Some((7, "KUBE-FORWARD -j ACCEPT")));
        assert_eq!(counted_rule(":KUBE-FORWARD - [0:0]"), None);
        let a = r#"-m comment --comment "storefront/cart:grpc -> 10.244.0.12:7000" -m statistic --mode random --probability 0.33333333349 -j KUBE-SEP-QQYPJOWEHMOIZWXP"#;
        let b = r#"-m comment --comment "storefront/cart:grpc -> 10.244.2.12:7000" -j KUBE-SEP-J2FLXLJ5F32W4KBV"#;
        assert_eq!(blank_words(a), blank_words(b));
        assert_eq!(
            blank_words(a),
            r#"-m comment --comment "storefront/cart:grpc -> <endpoint>" -j KUBE-SEP-<endpoint>"#
        );
        let dnat =
            "-p tcp -m comment --comment \"storefront/web:http\" -m tcp -j DNAT --to-destination 10.244.0.11:8080";
        assert!(blank_words(dnat).ends_with("-j DNAT --to-destination <endpoint>"));
        assert_eq!(blank_words("-j MARK --set-xmark 0x4000/0x4000"), "-j MARK --set-xmark 0x4000/0x4000");
    }
}
