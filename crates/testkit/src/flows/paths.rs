//! Whether the paths a flow's packets took through table `kube-proxy`
//! (nft trace) are upstream's: every path traced here must be one of the
//! paths upstream's trace recorded for the flow, up to which endpoint a
//! random choice picked (endpoint chain and affinity set names, the DNAT
//! target of an endpoint chain); the rest of every line, down to the
//! rule text and the verdict, must be identical — but for how a balancing
//! rule picks its endpoint: upstream's anonymous map (`numgen random mod
//! N map { … }`) and our slot of a shared endpoint map (`numgen random
//! mod 65536 offset K map @service-endpoints-<n>`) are the same step here,
//! and so are upstream's `goto` to a `service-` chain and its DNAT and our
//! DNAT straight from `services` (`map @service-ips-direct`); which
//! endpoints the packets reach is checked by the replay itself.

use super::case::FlowCase;
use crate::reference_node::Paths;
use std::collections::BTreeSet;

/// `Ok` if every path in `ours` is one upstream traced for `flow`.
pub fn check_paths(flow: &FlowCase, ours: &Paths) -> Result<(), String> {
    if ours.is_empty() {
        return Err("no packet of the flow was traced through table kube-proxy".to_string());
    }
    let upstream: BTreeSet<Vec<String>> = flow.nft_trace.iter().map(|p| normalized(&p.steps)).collect();
    for path in ours {
        if !upstream.contains(&normalized(path)) {
            return Err(format!(
                "a packet took a path upstream's trace never showed:\n      {}\n    upstream's paths:\n{}",
                path.join("\n      "),
                flow.nft_trace
                    .iter()
                    .map(|p| format!("      ({} packet(s))\n      {}", p.count, p.steps.join("\n      ")))
                    .collect::<Vec<_>>()
                    .join("\n")
            ));
        }
    }
    Ok(())
}

/// The path with the picked endpoint blanked out, and ClusterIP dispatch
/// straight to the DNAT written one way (see [`dispatch_collapsed`]).
fn normalized(steps: &[String]) -> Vec<String> {
    dispatch_collapsed(steps.iter().map(|s| normalized_step(s)).collect())
}

/// What `services` does to a ClusterIP packet of a port without session
/// affinity, as one step: upstream's `vmap @service-ips` going to the
/// port's `service-` chain and that chain's one DNAT rule, or ours's
/// `dnat … map @service-ips-direct` for a port with one endpoint and no
/// chain (`crates/nftables/src/render/direct.rs`). Which endpoint the
/// packets reach is checked by the replay itself.
fn dispatch_collapsed(steps: Vec<String>) -> Vec<String> {
    const SAME: &str = "kube-proxy services: ClusterIP dispatch to its DNAT <pick> (verdict accept)";
    let mut out = Vec::with_capacity(steps.len());
    let mut steps = steps.into_iter().peekable();
    while let Some(step) = steps.next() {
        let direct = step.starts_with("kube-proxy services rule dnat ")
            && step.ends_with(" map @service-ips-direct (verdict accept)");
        let to_chain = step.starts_with("kube-proxy services rule ")
            && step.contains(" daddr . meta l4proto . th dport vmap @service-ips (verdict goto service-");
        let dnat = |next: &String| next.starts_with("kube-proxy service-") && next.ends_with(" to <pick> (verdict accept)");
        if direct {
            out.push(SAME.to_string());
        } else if to_chain && steps.peek().is_some_and(dnat) {
            steps.next();
            out.push(SAME.to_string());
        } else {
            out.push(step);
        }
    }
    out
}

fn normalized_step(step: &str) -> String {
    let step = balancing_pick_blanked(step);
    let step = step.as_str();
    let in_endpoint_chain = step.starts_with("kube-proxy endpoint-");
    let mut out: Vec<String> = Vec::new();
    let mut after_dnat_to = false;
    for word in step.split(' ') {
        let word = if after_dnat_to && in_endpoint_chain { "<endpoint>".to_string() } else { endpoint_blanked(word) };
        after_dnat_to = out.last().is_some_and(|w| w == "dnat") && word == "to";
        out.push(word);
    }
    out.join(" ")
}

/// `… dnat ip to numgen random mod … (verdict accept)` -> `… dnat ip to
/// <pick> (verdict accept)`.
fn balancing_pick_blanked(step: &str) -> String {
    let (Some(at), Some(end)) = (step.find(" to numgen random mod "), step.rfind(" (verdict")) else {
        return step.to_string();
    };
    if end < at {
        return step.to_string();
    }
    format!("{} to <pick>{}", &step[..at], &step[end..])
}

/// `endpoint-HASH-ns/svc/proto/port__ip/port` -> `endpoint-ns/svc/proto/port`,
/// the same for `affinity-` (also behind `@`); punctuation kept.
fn endpoint_blanked(word: &str) -> String {
    for prefix in ["endpoint-", "affinity-", "@affinity-"] {
        let Some(rest) = word.strip_prefix(prefix) else { continue };
        let Some((_hash, name)) = rest.split_once('-') else { continue };
        let service = name.split("__").next().unwrap_or(name);
        let tail: String = word.chars().rev().take_while(|c| matches!(c, ')' | ',')).collect();
        return format!("{prefix}{service}{tail}");
    }
    word.to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::flows::nftables_flows;

    fn upstream_paths(flow: &FlowCase) -> Paths {
        flow.nft_trace.iter().map(|p| p.steps.clone()).collect()
    }

    #[test]
    fn a_flow_must_take_upstreams_paths() {
        let flows = nftables_flows().unwrap();
        let by_id = |id: &str| flows.iter().find(|f| f.id == id).unwrap();
        let (f01, f02, f06) = (by_id("F01"), by_id("F02"), by_id("F06"));
        assert!(check_paths(f01, &upstream_paths(f01)).is_ok());
        assert!(check_paths(f01, &upstream_paths(f02)).is_err(), "F02 is masqueraded, F01 not");
        assert!(check_paths(f01, &Paths::new()).is_err(), "nothing traced");
        // A sticky flow that picked another endpoint than upstream's run.
        let other: Paths = upstream_paths(f06)
            .into_iter()
            .map(|p| {
                p.iter().map(|s| s.replace("AUIQTD7L", "PGET5VWX").replace("10.244.2.12", "10.244.1.12")).collect()
            })
            .collect();
        assert!(check_paths(f06, &other).is_ok());
        let cut: Paths = upstream_paths(f06)
            .into_iter()
            .map(|mut p| {
                p.pop();
                p
            })
            .collect();
        assert!(check_paths(f06, &cut).is_err(), "a path cut short");
    }

    #[test]
    fn blanks_only_the_picked_endpoint() {
        let a = "kube-proxy service-27NAFT4N-storefront/cart/tcp/grpc rule ip saddr @affinity-AUIQTD7L-storefront/cart/tcp/grpc__10.244.2.12/7000 goto endpoint-AUIQTD7L-storefront/cart/tcp/grpc__10.244.2.12/7000 (verdict goto endpoint-AUIQTD7L-storefront/cart/tcp/grpc__10.244.2.12/7000)";
        let b = "kube-proxy service-27NAFT4N-storefront/cart/tcp/grpc rule ip saddr @affinity-PGET5VWX-storefront/cart/tcp/grpc__10.244.1.12/7000 goto endpoint-PGET5VWX-storefront/cart/tcp/grpc__10.244.1.12/7000 (verdict goto endpoint-PGET5VWX-storefront/cart/tcp/grpc__10.244.1.12/7000)";
        assert_eq!(normalized_step(a), normalized_step(b));
        let dnat_a = "kube-proxy endpoint-AUIQTD7L-storefront/cart/tcp/grpc__10.244.2.12/7000 rule meta l4proto tcp dnat to 10.244.2.12:7000 (verdict accept)";
        let dnat_b = "kube-proxy endpoint-PGET5VWX-storefront/cart/tcp/grpc__10.244.1.12/7000 rule meta l4proto tcp dnat to 10.244.1.12:7000 (verdict accept)";
        assert_eq!(normalized_step(dnat_a), normalized_step(dnat_b));
        // Anything else still counts.
        let other = "kube-proxy service-27NAFT4N-storefront/cart/tcp/grpc rule ip saddr @affinity-AUIQTD7L-storefront/cart/tcp/grpc__10.244.2.12/7000 goto endpoint-AUIQTD7L-storefront/cart/tcp/grpc__10.244.2.12/7000 (verdict jump endpoint-AUIQTD7L-storefront/cart/tcp/grpc__10.244.2.12/7000)";
        assert_ne!(normalized_step(a), normalized_step(other));
        let service_dnat = "kube-proxy service-Q2NDXW5G-storefront/web/tcp/http rule meta l4proto tcp dnat ip to numgen random mod 3 map { 0 : 10.244.0.11 . 8080 } (verdict accept)";
        let ours = "kube-proxy service-Q2NDXW5G-storefront/web/tcp/http rule meta l4proto tcp dnat ip to numgen random mod 65536 offset 131072 map @service-endpoints-0 (verdict accept)";
        assert_eq!(normalized_step(service_dnat), normalized_step(ours));
        assert_ne!(normalized_step(ours), normalized_step(&ours.replace("service-Q2", "service-XX")));
    }
}
