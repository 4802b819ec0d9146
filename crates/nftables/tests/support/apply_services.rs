//! Desired tables for the applier's kernel tests, built by hand: a
//! small `ip kube-proxy` shaped like upstream's (base chains, `services`
//! with the `service-ips` verdict map, one chain per service with a
//! `numgen` DNAT map, `cluster-ips`, an affinity set the packet path fills).

#![allow(dead_code)]

use nftables::stmt::{self, Field};
use nftables::*;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;

pub const TCP: u8 = 6;

/// One service: its ClusterIP (port 80/tcp) and endpoints (port 8080).
#[derive(Debug, Clone)]
pub struct Service {
    pub name: String,
    pub ip: Ipv4Addr,
    pub endpoints: Vec<Ipv4Addr>,
}

impl Service {
    /// Service `n`: ClusterIP 10.96.x.y, `endpoints` endpoints 10.244.x.y.
    pub fn numbered(n: u32, endpoints: u32) -> Self {
        Service {
            name: format!("ns{}/svc{n}", n % 100),
            ip: Ipv4Addr::from(0x0a60_0000 + n),
            endpoints: (0..endpoints)
                .map(|e| Ipv4Addr::from(0x0af4_0000 + n * 16 + e))
                .collect(),
        }
    }

    pub fn chain(&self) -> String {
        format!("service-{:08X}-{}/tcp/http", fnv(&self.name), self.name)
    }

    pub fn vmap_element(&self) -> Element {
        Element::verdict(
            vec![Value::Ipv4(self.ip), Value::Proto(TCP), Value::Port(80)],
            Verdict::Goto(self.chain()),
        )
    }
}

/// A short stable hash for chain names (upstream uses sha256; any stable
/// name does here).
fn fnv(s: &str) -> u32 {
    s.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ b as u32).wrapping_mul(0x0100_0193)
    })
}

fn base(name: &str, kind: ChainType, hook: Hook, priority: i32) -> Chain {
    Chain::base(
        name,
        BaseChain {
            kind,
            hook,
            priority,
            policy: Policy::Accept,
        },
    )
}

/// The desired `ip kube-proxy` for `services`.
pub fn table(services: &[Service]) -> TableContents {
    let daddr_l4_dport = [Field::IpDaddr, Field::L4proto, Field::ThDport];
    let mut t = TableContents {
        table: Table::new(Family::Ip, "kube-proxy").with_comment("rules for kube-proxy"),
        chains: vec![
            base("nat-prerouting", ChainType::Nat, Hook::Prerouting, -100),
            base("nat-output", ChainType::Nat, Hook::Output, -100),
            base("filter-output", ChainType::Filter, Hook::Output, 0),
            Chain::regular("services"),
            Chain::regular("cluster-ips-check"),
        ],
        rules: vec![
            Rule::new(
                "nat-prerouting",
                stmt::verdict(Verdict::Jump("services".into())),
            ),
            Rule::new(
                "nat-output",
                stmt::verdict(Verdict::Jump("services".into())),
            ),
            Rule::new(
                "filter-output",
                [
                    stmt::ct_state(stmt::CT_STATE_NEW),
                    stmt::verdict(Verdict::Jump("cluster-ips-check".into())),
                ]
                .concat(),
            ),
            Rule::new(
                "services",
                stmt::vmap(&daddr_l4_dport, SetRef::named("service-ips")),
            ),
            Rule::new(
                "cluster-ips-check",
                [
                    stmt::in_set(&[Field::IpDaddr], SetRef::named("cluster-ips"), false),
                    stmt::reject(),
                ]
                .concat(),
            )
            .with_comment("Reject traffic to invalid ports of ClusterIPs"),
        ],
        sets: vec![
            Set::new("cluster-ips", vec![DataType::Ipv4Addr]).with_comment("Active ClusterIPs"),
            Set::map(
                "service-ips",
                vec![
                    DataType::Ipv4Addr,
                    DataType::InetProto,
                    DataType::InetService,
                ],
                vec![DataType::Verdict],
            )
            .with_comment("ClusterIP, ExternalIP and LoadBalancer IP traffic"),
            Set {
                size: Some(65535),
                timeout_ms: Some(10_800_000),
                ..Set::new("affinity-clients", vec![DataType::Ipv4Addr])
                    .with_flags(SetFlags::DYNAMIC | SetFlags::TIMEOUT)
            },
        ],
        elements: BTreeMap::new(),
    };
    t.elements.insert("affinity-clients".into(), vec![]);
    for (i, s) in services.iter().enumerate() {
        add_service(&mut t, i as u32 + 1, s);
    }
    t
}

fn add_service(t: &mut TableContents, id: u32, s: &Service) {
    let chain = s.chain();
    t.chains.push(Chain::regular(chain.as_str()));
    let map = Set::anonymous(
        id,
        vec![DataType::Integer],
        Some(vec![DataType::Ipv4Addr, DataType::InetService]),
    );
    let elements = s
        .endpoints
        .iter()
        .enumerate()
        .map(|(n, e)| {
            Element::data(
                vec![Value::Integer(n as u32)],
                vec![Value::Ipv4(*e), Value::Port(8080)],
            )
        })
        .collect();
    t.elements.insert(TableContents::set_key(&map), elements);
    t.rules.push(Rule::new(
        chain.as_str(),
        [
            stmt::l4proto(TCP),
            stmt::dnat_numgen_map(2, s.endpoints.len() as u32, SetRef::to_set(&map), 4),
        ]
        .concat(),
    ));
    t.sets.push(map);
    t.elements
        .entry("cluster-ips".into())
        .or_default()
        .push(Element::new(vec![Value::Ipv4(s.ip)]));
    t.elements
        .entry("service-ips".into())
        .or_default()
        .push(s.vmap_element());
}

/// The same table with upstream's other service shape: the service chain
/// jumps through `numgen random mod N vmap { 0 : goto endpoint-…, … }` to
/// one chain per endpoint (which DNATs), and a firewall chain drops
/// sources outside an anonymous interval set.
pub fn table_with_endpoint_chains(
    services: &[Service],
    allowed: &[(Ipv4Addr, Ipv4Addr)],
) -> TableContents {
    let mut t = table(&[]);
    let mut id = 1;
    for s in services {
        let chain = s.chain();
        t.chains.push(Chain::regular(chain.as_str()));
        let vmap = Set::anonymous(id, vec![DataType::Integer], Some(vec![DataType::Verdict]));
        id += 1;
        let mut elements = Vec::new();
        for (n, e) in s.endpoints.iter().enumerate() {
            let ep = format!("endpoint-{:08X}-{}__{e}/8080", fnv(&s.name), s.name);
            t.chains.push(Chain::regular(ep.as_str()));
            t.rules.push(Rule::new(
                ep.as_str(),
                [stmt::l4proto(TCP), stmt::dnat_to((*e).into(), 8080)].concat(),
            ));
            elements.push(Element::verdict(
                vec![Value::Integer(n as u32)],
                Verdict::Goto(ep),
            ));
        }
        t.elements.insert(TableContents::set_key(&vmap), elements);
        t.rules.push(Rule::new(
            chain.as_str(),
            stmt::numgen_vmap(s.endpoints.len() as u32, SetRef::to_set(&vmap)),
        ));
        t.sets.push(vmap);
        t.elements
            .entry("service-ips".into())
            .or_default()
            .push(s.vmap_element());
    }
    let ranges = Set::anonymous(id, vec![DataType::Ipv4Addr], None).with_flags(SetFlags::INTERVAL);
    let mut elements = vec![];
    if allowed
        .first()
        .is_some_and(|(from, _)| u32::from(*from) != 0)
    {
        elements.push(Element::interval_end(vec![Value::Ipv4(
            Ipv4Addr::UNSPECIFIED,
        )]));
    }
    for (from, to) in allowed {
        elements.push(Element::new(vec![Value::Ipv4(*from)]));
        elements.push(Element::interval_end(vec![Value::Ipv4(*to)]));
    }
    t.chains.push(Chain::regular("firewall-check"));
    t.rules.push(Rule::new(
        "firewall-check",
        [
            stmt::in_set(&[Field::IpSaddr], SetRef::to_set(&ranges), true),
            stmt::verdict(Verdict::Drop),
        ]
        .concat(),
    ));
    t.elements.insert(TableContents::set_key(&ranges), elements);
    t.sets.push(ranges);
    t
}
