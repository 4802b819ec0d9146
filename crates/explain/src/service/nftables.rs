//! A Service in an nftables table: the chains named for its ports
//! (`service-`, `external-`, `local-`, `firewall-`, `endpoint-…`), their
//! rules with the anonymous sets they use, the map elements that lead to
//! them or name the Service, its affinity sets, and what they say.

use super::{Programmed, names_service, port_in};
use crate::explanation::service_of_chain;
use crate::nft::describe::rule_text;
use nftables::render::endpoint_slots::slot_key_number;
use nftables::render::names::SERVICE_IPS_DIRECT;
use nftables::{Element, ElementData, Expr, Rule, TableContents, Value, Verdict};

/// What `table` holds for `service` (`ns/name`).
pub fn programmed(table: &TableContents, service: &str) -> Programmed {
    let mut out = Programmed { rules: rule_lines(table, service), ..Programmed::default() };
    read_chains(table, service, &mut out);
    read_map_elements(table, service, &mut out);
    out
}

/// The Service's port named by chain `name`, if the chain is one of its.
fn port_of_chain(name: &str, service: &str) -> Option<String> {
    service_of_chain(name)?.strip_prefix(service)?.strip_prefix(':').map(str::to_string)
}

/// The Service's rules and map elements, one per line.
pub fn rule_lines(table: &TableContents, service: &str) -> Vec<String> {
    let mut lines = Vec::new();
    for chain in table.chains.iter().filter(|c| port_of_chain(&c.name, service).is_some()) {
        lines.push(format!("chain {}", chain.name));
        for rule in table.rules_of(&chain.name) {
            lines.push(format!("chain {}: {}", chain.name, rule_line(table, rule)));
        }
    }
    for set in &table.sets {
        if set.name.starts_with("affinity-") && port_of_chain(&set.name, service).is_some() {
            lines.push(format!("set {} timeout {}s", set.name, set.timeout_ms.unwrap_or(0) / 1000));
        }
    }
    for (map, element) in map_elements(table, service) {
        lines.push(format!("map {map}: {}", element_text(element)));
    }
    lines
}

/// A rule as text; a balancing rule as the endpoints it picks from, the
/// same whether they are in an anonymous map (upstream) or in the rule's
/// slot of a shared endpoint map (ours): `… dnat to one of { a . p, … }`.
fn rule_line(table: &TableContents, rule: &Rule) -> String {
    match balancing_pick(table, &rule.exprs) {
        Some((numgen, picked)) => {
            let before = Rule { exprs: rule.exprs[..numgen].to_vec(), ..rule.clone() };
            let picked: Vec<String> = picked.iter().filter_map(|e| data_of(e)).map(values).collect();
            format!("{} dnat to one of {{ {} }}", rule_text(&before), picked.join(", "))
        }
        None => format!("{}{}", rule_text(rule), anonymous_elements(table, &rule.exprs)),
    }
}

/// A balancing pick (`numgen` then a lookup whose data is the DNAT
/// target): where the `numgen` is, and the elements picked from, in
/// order — an anonymous map's elements, or the start elements of the
/// numbers `numgen` gives (`mod M offset K`) in an interval map.
fn balancing_pick<'a>(table: &'a TableContents, exprs: &[Expr]) -> Option<(usize, Vec<&'a Element>)> {
    let at = exprs.iter().position(|e| matches!(e, Expr::Numgen { .. }))?;
    let Expr::Numgen { modulus, offset, .. } = exprs[at] else { return None };
    let set = exprs[at..].iter().find_map(|e| match e {
        Expr::Lookup { set, dreg: Some(reg), .. } if *reg != nftables::Register::VERDICT => Some(&set.name),
        _ => None,
    })?;
    let declared = table.sets.iter().find(|s| &s.name == set);
    let key = declared.map_or_else(|| set.clone(), TableContents::set_key);
    let mut elements: Vec<&Element> =
        table.elements.get(&key).into_iter().flatten().filter(|e| !e.is_interval_end()).collect();
    if declared.is_some_and(|s| s.flags.contains(nftables::SetFlags::INTERVAL)) {
        let window = u64::from(offset)..u64::from(offset) + u64::from(modulus);
        elements.retain(|e| e.key.first().and_then(slot_key_number).is_some_and(|k| window.contains(&u64::from(k))));
    }
    elements.sort_by_key(|e| Value::concat_bytes(&e.key));
    Some((at, elements))
}

fn data_of(element: &Element) -> Option<&[Value]> {
    match &element.data {
        Some(ElementData::Values(data)) => Some(data),
        _ => None,
    }
}

/// `{ 0 : 10.244.1.13 . 8080, … }` for the anonymous sets a rule uses.
fn anonymous_elements(table: &TableContents, exprs: &[Expr]) -> String {
    let mut out = String::new();
    for expr in exprs {
        let Expr::Lookup { set, .. } = expr else { continue };
        if !set.name.starts_with("__") {
            continue;
        }
        let mut elements: Vec<&Element> = table.elements.get(&set.name).into_iter().flatten().collect();
        elements.sort_by_key(|e| Value::concat_bytes(&e.key));
        let texts: Vec<String> = elements.into_iter().map(element_text).collect();
        out.push_str(&format!(" {{ {} }}", texts.join(", ")));
    }
    out
}

fn element_text(element: &Element) -> String {
    let key = values(&element.key);
    let comment = element.comment().map(|c| format!(" comment \"{c}\"")).unwrap_or_default();
    match &element.data {
        Some(ElementData::Verdict(v)) => format!("{key}{comment} : {v}"),
        Some(ElementData::Values(data)) => format!("{key}{comment} : {}", values(data)),
        None if element.is_interval_end() => format!("{key} (end)"),
        None => format!("{key}{comment}"),
    }
}

fn values(values: &[Value]) -> String {
    values.iter().map(Value::to_string).collect::<Vec<_>>().join(" . ")
}

/// Elements of named maps that lead to one of the Service's chains or
/// whose comment names it, with their map's name.
fn map_elements<'a>(table: &'a TableContents, service: &str) -> Vec<(&'a str, &'a Element)> {
    let mut out = Vec::new();
    for set in table.sets.iter().filter(|s| !s.name.starts_with("__")) {
        for element in table.elements.get(&TableContents::set_key(set)).into_iter().flatten() {
            let leads_here = match &element.data {
                Some(ElementData::Verdict(Verdict::Goto(c) | Verdict::Jump(c))) => port_of_chain(c, service).is_some(),
                _ => false,
            };
            if leads_here || element.comment().is_some_and(|c| names_service(c, service)) {
                out.push((set.name.as_str(), element));
            }
        }
    }
    out
}

/// Endpoints (DNAT map data, `endpoint-…__ip/port` chains) and affinity.
fn read_chains(table: &TableContents, service: &str, out: &mut Programmed) {
    for chain in &table.chains {
        let Some(port_name) = port_of_chain(&chain.name, service) else { continue };
        let port = out.ports.entry(port_name).or_default();
        if let Some((_, endpoint)) = chain.name.split_once("__") {
            port.endpoints.insert(endpoint.replace('/', ":"));
        }
        for rule in table.rules_of(&chain.name) {
            let picked = balancing_pick(table, &rule.exprs).map(|(_, p)| p).unwrap_or_default();
            for data in picked.into_iter().filter_map(data_of) {
                port.endpoints.insert(endpoint_text(data));
            }
        }
    }
    for set in table.sets.iter().filter(|s| s.name.starts_with("affinity-")) {
        if let Some(port_name) = port_of_chain(&set.name, service) {
            out.ports.entry(port_name).or_default().affinity_seconds = set.timeout_ms.map(|ms| ms / 1000);
        }
    }
}

fn endpoint_text(data: &[Value]) -> String {
    match data {
        [Value::Ipv4(ip), Value::Port(port)] => format!("{ip}:{port}"),
        [Value::Ipv6(ip), Value::Port(port)] => format!("[{ip}]:{port}"),
        other => values(other),
    }
}

/// Addresses (`service-ips`, `firewall-ips`) and node ports
/// (`service-nodeports`) that lead to the Service's chains; ClusterIPs
/// DNATed straight to their one endpoint (`service-ips-direct`, ours,
/// each element commented with its `ns/name:port`).
fn read_map_elements(table: &TableContents, service: &str, out: &mut Programmed) {
    for (map, element) in map_elements(table, service) {
        if map == SERVICE_IPS_DIRECT {
            read_direct(element, service, out);
            continue;
        }
        let chain = match &element.data {
            Some(ElementData::Verdict(Verdict::Goto(c) | Verdict::Jump(c))) => c.as_str(),
            _ => "",
        };
        let Some(port_name) = port_of_chain(chain, service) else { continue };
        let port = out.ports.entry(port_name).or_default();
        match (map, element.key.as_slice()) {
            ("service-ips", [addr, Value::Proto(p), Value::Port(n)]) => {
                let kind = if chain.starts_with("service-") { "cluster IP" } else { "external or load-balancer IP" };
                port.addresses.insert(format!("{addr} {}/{n} ({kind})", Value::Proto(*p)));
            }
            ("service-nodeports", [_, Value::Port(n)]) => {
                port.node_ports.insert(*n);
            }
            _ => {}
        }
    }
}

/// A `service-ips-direct` element: the port's ClusterIP and its endpoint.
fn read_direct(element: &Element, service: &str, out: &mut Programmed) {
    let Some(port_name) = element.comment().and_then(|c| port_in(c, service)) else { return };
    let (Some(data), [addr, Value::Proto(p), Value::Port(n)]) = (data_of(element), element.key.as_slice()) else { return };
    let port = out.ports.entry(port_name).or_default();
    port.addresses.insert(format!("{addr} {}/{n} (cluster IP)", Value::Proto(*p)));
    port.endpoints.insert(endpoint_text(data));
}
