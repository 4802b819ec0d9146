//! The upstream v1.36 reference scenario (`testdata/upstream-v1.36`):
//! `cluster.yaml` read by the manifests source and the tracker as node-a,
//! the nftables-mode options of its `kube-proxy-config.yaml`, and its
//! `ruleset.nft`, plus the comparison of `nft` texts.

use model::{IpFamily, Snapshot};
use nftables::render::{RenderOptions, Rendered, render};
use plan::{LocalDetection, NodeFacts};

pub const CLUSTER_YAML: &str = include_str!("../../../../testdata/upstream-v1.36/cluster.yaml");
pub const RULESET_NFT: &str =
    include_str!("../../../../testdata/upstream-v1.36/nftables/ruleset.nft");

/// `cluster.yaml` as the tracker hands it to the proxier of `family` on
/// node-a (the same loader as the iptables reference test).
pub fn reference_snapshot(family: IpFamily) -> Snapshot {
    let parsed = source::manifests::parse(CLUSTER_YAML).expect("cluster.yaml parses");
    assert!(parsed.warnings.is_empty(), "{:?}", parsed.warnings);
    let mut tracker = tracker::Tracker::with_family("node-a", family);
    let warnings = tracker.replace_all(&parsed.objects);
    assert!(warnings.is_empty(), "{warnings:?}");
    tracker.snapshot().0
}

/// nftables mode with the corpus's configuration: clusterCIDR
/// 10.244.0.0/16 (IPv4 only), the ServiceCIDR 10.96.0.0/12, defaults
/// otherwise (`nodePortAddresses` unset: `primary`; shared endpoint maps,
/// which [`as_upstream`] turns back into upstream's table, the one
/// `shared_endpoint_maps = false` renders as it is).
pub fn reference_options(family: IpFamily) -> RenderOptions {
    let mut opts = RenderOptions::nftables_defaults(family);
    opts.common.local_detection =
        LocalDetection::ClusterCidr(vec!["10.244.0.0/16".parse().unwrap()]);
    opts.service_cidrs = vec!["10.96.0.0/12".parse().unwrap()];
    opts
}

/// node-a's addresses in the corpus's network namespace.
pub fn reference_facts() -> NodeFacts {
    NodeFacts {
        local_addresses: [
            "192.168.86.2",
            "172.20.0.1",
            "10.244.0.1",
            "127.0.0.1",
            "::1",
        ]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect(),
    }
}

pub fn render_reference(family: IpFamily) -> Rendered {
    render(
        &reference_snapshot(family),
        &reference_options(family),
        &reference_facts(),
    )
}

/// The `table <family> kube-proxy { … }` block of the reference.
pub fn reference_table(family: &str) -> String {
    let start = RULESET_NFT
        .find(&format!("table {family} kube-proxy {{"))
        .expect("table in reference");
    let rest = &RULESET_NFT[start..];
    let end = rest.find("\n}\n").expect("end of table") + 3;
    rest[..end].to_string()
}

/// `nft` text normalised for comparison: each `elements = { … }` on one
/// line with its elements sorted (the kernel's hash order is not ours to
/// fix), and each run of per-service blocks (names with a `/`) sorted
/// (upstream's order across services is random).
pub fn normalize(text: &str) -> String {
    let joined = join_elements(text);
    let mut lines = joined.lines();
    let mut out = Vec::new();
    let mut header = Vec::new();
    for line in lines.by_ref() {
        header.push(line.to_string());
        if !line.starts_with("table ") && !line.starts_with("\tcomment") {
            break;
        }
    }
    let mut blocks: Vec<String> = Vec::new();
    let mut current = header.pop().map(|l| vec![l]).unwrap_or_default();
    out.extend(header);
    for line in lines {
        if line.is_empty() {
            continue;
        }
        current.push(line.to_string());
        if line == "\t}" {
            blocks.push(current.join("\n"));
            current.clear();
        }
    }
    out.extend(sort_service_runs(blocks));
    out.extend(current);
    out.join("\n") + "\n"
}

fn join_elements(text: &str) -> String {
    let mut out = String::new();
    let mut pending: Option<String> = None;
    for line in text.lines() {
        let line = line.trim_end();
        if let Some(acc) = &mut pending {
            acc.push(' ');
            acc.push_str(line.trim_start());
        } else if let Some(rest) = line.trim_start().strip_prefix("elements = { ") {
            pending = Some(rest.to_string());
        } else {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        if let Some(acc) = pending.as_ref().filter(|a| a.ends_with(" }")) {
            let mut items: Vec<&str> = acc.trim_end_matches(" }").split(", ").collect();
            items.sort_unstable();
            out.push_str(&format!("\t\telements = {{ {} }}\n", items.join(", ")));
            pending = None;
        }
    }
    out
}

fn is_service_block(block: &str) -> bool {
    block.lines().next().is_some_and(|l| l.contains('/'))
}

fn sort_service_runs(blocks: Vec<String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut run: Vec<String> = Vec::new();
    for block in blocks {
        if is_service_block(&block) {
            run.push(block);
            continue;
        }
        run.sort();
        out.append(&mut run);
        out.push(block);
    }
    run.sort();
    out.append(&mut run);
    out
}

/// Our table's text as upstream v1.36 would print the same table: where
/// ours differs from upstream's by design, and only there. Upstream gives
/// each balancing chain an anonymous map (`dnat ip to numgen random mod N
/// map { 0 : a . p, … }`); ours picks from the chain's slot of a shared
/// endpoint map (`numgen random mod 65536 offset K map
/// @service-endpoints-<n>`, one range per endpoint, in the same order).
/// The shared maps are dropped and each such rule written upstream's way.
/// A port ours DNATs straight from `services` (`service-ips-direct`) gets
/// back its `service-` chain and `service-ips` element.
pub fn as_upstream(ours: &str) -> String {
    let joined = direct_as_upstream(&join_elements(ours));
    let slots = slot_endpoints(&joined);
    let mut out = String::new();
    let mut in_endpoint_map = false;
    for line in joined.lines() {
        if line.starts_with("\tmap service-endpoints-") {
            in_endpoint_map = true;
        }
        if !in_endpoint_map {
            out.push_str(&upstream_pick(line, &slots));
            out.push('\n');
        }
        if line == "\t}" {
            in_endpoint_map = false;
        }
    }
    out
}

/// `text` (elements joined) with ours's direct dispatch written as
/// upstream's: each `service-ips-direct` element (`ip . proto . port
/// comment "ns/name:port" : endpoint`) becomes a `service-ips` element
/// going to the port's `service-` chain, which DNATs to the endpoint
/// through an anonymous map of one; the map and the `services` rule that
/// uses it are dropped.
fn direct_as_upstream(text: &str) -> String {
    let mut direct = Vec::new();
    let mut in_direct = false;
    let family = if text.starts_with("table ip6 ") {
        "ip6"
    } else {
        "ip"
    };
    for line in text.lines() {
        if line == "\tmap service-ips-direct {" {
            in_direct = true;
        } else if in_direct && line == "\t}" {
            in_direct = false;
        } else if let Some(items) = line.trim_start().strip_prefix("elements = { ")
            && in_direct
        {
            direct.extend(items.trim_end_matches(" }").split(", ").map(direct_element));
        }
    }
    let mut out = Vec::new();
    let (mut in_direct, mut in_service_ips, mut has_elements) = (false, false, false);
    let gotos: Vec<String> = direct
        .iter()
        .map(|(key, chain, _)| format!("{key} : goto {chain}"))
        .collect();
    for line in text.lines() {
        match line {
            "\tmap service-ips-direct {" => in_direct = true,
            "\tmap service-ips {" => in_service_ips = true,
            _ => {}
        }
        if in_direct {
            in_direct = line != "\t}";
            continue;
        }
        if line.contains("map @service-ips-direct") {
            continue;
        }
        if in_service_ips && let Some(items) = line.trim_start().strip_prefix("elements = { ") {
            let mut all: Vec<String> = items
                .trim_end_matches(" }")
                .split(", ")
                .map(str::to_string)
                .collect();
            all.extend(gotos.iter().cloned());
            out.push(format!("\t\telements = {{ {} }}", all.join(", ")));
            has_elements = true;
            continue;
        }
        if in_service_ips && line == "\t}" {
            if !has_elements && !gotos.is_empty() {
                out.push(format!("\t\telements = {{ {} }}", gotos.join(", ")));
            }
            in_service_ips = false;
        }
        if line == "}" {
            for (_, chain, endpoint) in &direct {
                let proto = chain.rsplit('/').nth(1).expect("proto in the chain name");
                out.push(format!("\tchain {chain} {{"));
                out.push(format!(
                    "\t\tmeta l4proto {proto} dnat {family} to numgen random mod 1 map {{ 0 : {endpoint} }}"
                ));
                out.push("\t}".to_string());
            }
        }
        out.push(line.to_string());
    }
    out.join("\n") + "\n"
}

/// A `service-ips-direct` element: its key, the `service-` chain upstream
/// gives its port, and its endpoint.
fn direct_element(item: &str) -> (String, String, String) {
    let (key, rest) = item.split_once(" comment \"").expect("a commented element");
    let (comment, endpoint) = rest.split_once("\" : ").expect("comment then endpoint");
    let proto = key.split(" . ").nth(1).expect("ip . proto . port");
    let protocol = match proto {
        "tcp" => model::Protocol::Tcp,
        "udp" => model::Protocol::Udp,
        _ => model::Protocol::Sctp,
    };
    let (ns, rest) = comment.split_once('/').expect("ns/name");
    let (name, port) = rest.split_once(':').unwrap_or((rest, ""));
    let port_name = model::ServicePortName::new(ns, name, port, protocol);
    let chain = nftables::render::names::ServiceChains::new(&port_name).service;
    (key.to_string(), chain, endpoint.to_string())
}

/// `(map, slot offset)` → the slot's endpoints in key order.
fn slot_endpoints(text: &str) -> std::collections::BTreeMap<(String, u64), Vec<String>> {
    let mut out = std::collections::BTreeMap::<(String, u64), Vec<(u64, String)>>::new();
    let mut map = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("\tmap ") {
            map = rest.strip_suffix(" {").map(str::to_string);
            continue;
        }
        let (Some(name), Some(items)) = (&map, line.trim_start().strip_prefix("elements = { "))
        else {
            continue;
        };
        if !name.starts_with("service-endpoints-") {
            continue;
        }
        for item in items.trim_end_matches(" }").split(", ") {
            let (range, endpoint) = item.split_once(" : ").expect("range : endpoint");
            let first: u64 = range.split('-').next().unwrap().parse().unwrap();
            out.entry((name.clone(), first - first % 65536))
                .or_default()
                .push((first, endpoint.to_string()));
        }
    }
    out.into_iter()
        .map(|(k, mut v)| {
            v.sort();
            (k, v.into_iter().map(|(_, e)| e).collect())
        })
        .collect()
}

/// `line` with a pick from a shared endpoint map written as upstream's
/// anonymous map.
fn upstream_pick(
    line: &str,
    slots: &std::collections::BTreeMap<(String, u64), Vec<String>>,
) -> String {
    let Some(at) = line.find(" to numgen random mod 65536") else {
        return line.to_string();
    };
    let rest = &line[at + " to numgen random mod 65536".len()..];
    let (offset, rest) = match rest.strip_prefix(" offset ") {
        Some(r) => {
            let (n, r) = r.split_once(' ').expect("offset then map");
            (n.parse::<u64>().expect("offset"), format!(" {r}"))
        }
        None => (0, rest.to_string()),
    };
    let (map, tail) = rest
        .strip_prefix(" map @")
        .expect("map @name")
        .split_once(' ')
        .unwrap_or((rest.trim_start_matches(" map @"), ""));
    let endpoints = &slots[&(map.to_string(), offset)];
    let items: Vec<String> = endpoints
        .iter()
        .enumerate()
        .map(|(i, e)| format!("{i} : {e}"))
        .collect();
    let tail = if tail.is_empty() {
        String::new()
    } else {
        format!(" {tail}")
    };
    format!(
        "{} to numgen random mod {} map {{ {} }}{tail}",
        &line[..at],
        endpoints.len(),
        items.join(", ")
    )
}

/// The lines of `ours` (as [`as_upstream`]) and `theirs` (normalised) that
/// differ.
pub fn differences(ours: &str, theirs: &str) -> Vec<String> {
    let (o, t) = (normalize(&as_upstream(ours)), normalize(theirs));
    let o_lines: Vec<&str> = o.lines().collect();
    let t_lines: Vec<&str> = t.lines().collect();
    let mut out = Vec::new();
    for l in o_lines.iter().filter(|l| !t_lines.contains(l)) {
        out.push(format!("only ours:     {l}"));
    }
    for l in t_lines.iter().filter(|l| !o_lines.contains(l)) {
        out.push(format!("only upstream: {l}"));
    }
    if out.is_empty() && o != t {
        out.push("same lines, different order".to_string());
    }
    out
}
