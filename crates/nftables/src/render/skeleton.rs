//! The fixed part of the table: base chains and their jumps, the
//! dispatch and check chains, masquerading, and the shared sets and maps
//! (filled with the elements the service ports produced).

use super::RenderContext;
use super::endpoint_slots::endpoint_map;
use super::names::*;
use super::ruleset::{ChainRules, NamedSet, RuleSpec, Ruleset};
use super::shared::SharedSets;
use super::statement::{Stmt, addr_type, daddr, saddr, value};
use crate::stmt::Field;
use crate::{
    BaseChain, Chain, ChainType, DataType, Element, ElementData, Family, Hook, Policy, Set, Table,
    Verdict,
};
use ipnet::IpNet;
use std::collections::BTreeSet;
use std::net::IpAddr;

/// `dstnat` priority.
const DSTNAT: i32 = -100;
/// `srcnat` priority.
const SRCNAT: i32 = 100;
/// `filter` priority.
const FILTER: i32 = 0;

/// The table with its fixed chains and the shared sets holding `shared`.
pub fn render_skeleton(ctx: &RenderContext, shared: SharedSets, endpoint_maps: u32) -> Ruleset {
    let mut chains = base_chains();
    chains.extend([
        nodeport_endpoints_check(ctx),
        single(
            SERVICE_ENDPOINTS_CHECK,
            Stmt::Vmap {
                fields: daddr_proto_port(ctx.family),
                map: NO_ENDPOINT_SERVICES.into(),
            },
        ),
        single(
            FIREWALL_CHECK,
            Stmt::Vmap {
                fields: daddr_proto_port(ctx.family),
                map: FIREWALL_IPS.into(),
            },
        ),
        services(ctx),
        masquerading(ctx),
        cluster_ips_check(ctx),
        reject_chain(ctx.family),
    ]);
    Ruleset {
        table: Table::new(ctx.family, TABLE).with_comment(TABLE_COMMENT),
        sets: shared_sets(ctx, shared, endpoint_maps),
        chains,
    }
}

fn base(
    name: &str,
    kind: ChainType,
    hook: Hook,
    priority: i32,
    jumps: &[(bool, &str)],
) -> ChainRules {
    let mut chain = ChainRules::new(Chain::base(
        name,
        BaseChain {
            kind,
            hook,
            priority,
            policy: Policy::Accept,
        },
    ));
    for (new_only, target) in jumps {
        let mut stmts = Vec::new();
        if *new_only {
            stmts.push(Stmt::CtStateNew);
        }
        stmts.push(Stmt::Verdict(Verdict::Jump((*target).to_string())));
        chain.push(RuleSpec::new(stmts));
    }
    chain
}

/// Upstream's base chains: filtering before DNAT (firewall), filtering of
/// new connections (no endpoints, invalid ClusterIP ports), and NAT.
fn base_chains() -> Vec<ChainRules> {
    use ChainType::{Filter, Nat};
    let services_checks = [(true, SERVICE_ENDPOINTS_CHECK), (true, CLUSTER_IPS_CHECK)];
    vec![
        base(
            "filter-prerouting-pre-dnat",
            Filter,
            Hook::Prerouting,
            DSTNAT - 10,
            &[(true, FIREWALL_CHECK)],
        ),
        base(
            "filter-output-pre-dnat",
            Filter,
            Hook::Output,
            DSTNAT - 10,
            &[(true, FIREWALL_CHECK)],
        ),
        base(
            "filter-input",
            Filter,
            Hook::Input,
            FILTER,
            &[
                (true, NODEPORT_ENDPOINTS_CHECK),
                (true, SERVICE_ENDPOINTS_CHECK),
            ],
        ),
        base(
            "filter-forward",
            Filter,
            Hook::Forward,
            FILTER,
            &services_checks,
        ),
        base(
            "filter-output",
            Filter,
            Hook::Output,
            FILTER,
            &services_checks,
        ),
        base(
            "nat-prerouting",
            Nat,
            Hook::Prerouting,
            DSTNAT,
            &[(false, SERVICES)],
        ),
        base(
            "nat-output",
            Nat,
            Hook::Output,
            DSTNAT,
            &[(false, SERVICES)],
        ),
        base(
            "nat-postrouting",
            Nat,
            Hook::Postrouting,
            SRCNAT,
            &[(false, MASQUERADING)],
        ),
    ]
}

fn single(name: &str, stmt: Stmt) -> ChainRules {
    let mut chain = ChainRules::new(Chain::regular(name));
    chain.push(RuleSpec::new(vec![stmt]));
    chain
}

fn daddr_proto_port(family: Family) -> Vec<Field> {
    vec![daddr(family), Field::L4proto, Field::ThDport]
}

fn proto_port() -> Vec<Field> {
    vec![Field::L4proto, Field::ThDport]
}

/// `ip daddr != 127.0.0.0/8` / `ip6 daddr != ::1`: NodePorts never answer
/// on loopback in this mode.
fn not_loopback(family: Family) -> Stmt {
    match family {
        Family::Ip6 => Stmt::Address {
            field: daddr(family),
            negated: true,
            addr: std::net::Ipv6Addr::LOCALHOST.into(),
        },
        _ => Stmt::Prefix {
            field: daddr(family),
            negated: true,
            net: IpNet::V4(ipnet::Ipv4Net::new_assert(
                std::net::Ipv4Addr::new(127, 0, 0, 0),
                8,
            )),
        },
    }
}

/// Matches of traffic to a NodePort address: `@nodeport-ips`, or every
/// local address but loopback (`fib_local`: the chain is not on the input
/// hook, where every address is local).
fn nodeport_destination(ctx: &RenderContext, fib_local: bool) -> Vec<Stmt> {
    match ctx.nodeport_ips {
        Some(_) => vec![Stmt::InSet {
            fields: vec![daddr(ctx.family)],
            set: NODEPORT_IPS.into(),
        }],
        None if fib_local => vec![Stmt::FibLocal { daddr: true }, not_loopback(ctx.family)],
        None => vec![not_loopback(ctx.family)],
    }
}

fn nodeport_endpoints_check(ctx: &RenderContext) -> ChainRules {
    let mut stmts = nodeport_destination(ctx, false);
    stmts.push(Stmt::Vmap {
        fields: proto_port(),
        map: NO_ENDPOINT_NODEPORTS.into(),
    });
    let mut chain = ChainRules::new(Chain::regular(NODEPORT_ENDPOINTS_CHECK));
    chain.push(RuleSpec::new(stmts));
    chain
}

/// Dispatch: the ClusterIP masquerade rule, then service IPs (and, ours,
/// the ports DNATed straight to their one endpoint), then NodePorts.
fn services(ctx: &RenderContext) -> ChainRules {
    let mut chain = ChainRules::new(Chain::regular(SERVICES));
    if let Some(rule) = cluster_ip_masquerade(ctx) {
        chain.push(rule);
    }
    chain.push(RuleSpec::new(vec![Stmt::Vmap {
        fields: daddr_proto_port(ctx.family),
        map: SERVICE_IPS.into(),
    }]));
    if ctx.direct_dispatch {
        chain.push(RuleSpec::new(vec![Stmt::DnatMap {
            family: ctx.family,
            fields: daddr_proto_port(ctx.family),
            map: SERVICE_IPS_DIRECT.into(),
        }]));
    }
    let mut nodeports = nodeport_destination(ctx, true);
    nodeports.push(Stmt::Vmap {
        fields: proto_port(),
        map: SERVICE_NODEPORTS.into(),
    });
    chain.push(RuleSpec::new(nodeports));
    chain
}

/// Marks ClusterIP traffic for masquerading: all of it with
/// `masqueradeAll`, else what does not come from the pod network; none
/// when pod traffic cannot be told apart.
fn cluster_ip_masquerade(ctx: &RenderContext) -> Option<RuleSpec> {
    let to_cluster_ip = Stmt::InSet {
        fields: vec![daddr(ctx.family)],
        set: CLUSTER_IPS.into(),
    };
    if ctx.sync.masquerade_all {
        return Some(
            RuleSpec::new(vec![to_cluster_ip, Stmt::MarkOr(ctx.mark)])
                .with_comment("masquerade all clusterIP traffic"),
        );
    }
    let not_from_pods = super::local_traffic::if_not_local(ctx)?;
    Some(
        RuleSpec::new(vec![to_cluster_ip, not_from_pods, Stmt::MarkOr(ctx.mark)])
            .with_comment("masquerade clusterIP traffic from outside cluster"),
    )
}

fn masquerading(ctx: &RenderContext) -> ChainRules {
    let mut chain = ChainRules::new(Chain::regular(MASQUERADING));
    chain.push(RuleSpec::new(vec![
        Stmt::MarkHas(ctx.mark),
        Stmt::MarkXor(ctx.mark),
        Stmt::MasqueradeFullyRandom,
    ]));
    let hairpin = vec![
        saddr(ctx.family),
        daddr(ctx.family),
        Field::L4proto,
        Field::ThDport,
    ];
    chain.push(RuleSpec::new(vec![
        Stmt::CtStatusDnat,
        Stmt::InSet {
            fields: hairpin,
            set: HAIRPIN_CONNECTIONS.into(),
        },
        Stmt::MasqueradeFullyRandom,
    ]));
    chain
}

/// Rejects ClusterIP ports no service defines; drops traffic to the
/// unallocated addresses of each known service CIDR.
fn cluster_ips_check(ctx: &RenderContext) -> ChainRules {
    let mut chain = ChainRules::new(Chain::regular(CLUSTER_IPS_CHECK));
    chain.push(
        RuleSpec::new(vec![
            Stmt::InSet {
                fields: vec![daddr(ctx.family)],
                set: CLUSTER_IPS.into(),
            },
            Stmt::Reject(ctx.family),
        ])
        .with_comment("Reject traffic to invalid ports of ClusterIPs"),
    );
    for cidr in &ctx.service_cidrs {
        chain.push(
            RuleSpec::new(vec![
                Stmt::Prefix {
                    field: daddr(ctx.family),
                    negated: false,
                    net: cidr.trunc(),
                },
                Stmt::Verdict(Verdict::Drop),
            ])
            .with_comment("Drop traffic to unallocated ClusterIPs"),
        );
    }
    chain
}

fn reject_chain(family: Family) -> ChainRules {
    let mut chain = ChainRules::new(
        Chain::regular(REJECT_CHAIN)
            .with_comment("helper for @no-endpoint-services / @no-endpoint-nodeports"),
    );
    chain.push(RuleSpec::new(vec![Stmt::Reject(family)]));
    chain
}

/// The shared sets and maps in upstream's order, then (ours)
/// `service-ips-direct` and the first `endpoint_maps` shared endpoint
/// maps.
fn shared_sets(ctx: &RenderContext, mut shared: SharedSets, endpoint_maps: u32) -> Vec<NamedSet> {
    use DataType::{InetProto, InetService};
    let addr = addr_type(ctx.family);
    let svc_key = vec![addr, InetProto, InetService];
    let port_key = vec![InetProto, InetService];
    let vmap = |name: &str, key: &Vec<DataType>, comment: &str, elements| NamedSet {
        set: Set::map(name, key.clone(), vec![DataType::Verdict]).with_comment(comment),
        elements: first_per_key(elements),
    };
    // the first service giving a key keeps it, whichever map it is in
    let (direct, chained): (Vec<Element>, Vec<Element>) =
        first_per_key(std::mem::take(&mut shared.service_ips))
            .into_iter()
            .partition(|e| matches!(e.data, Some(ElementData::Values(_))));
    let mut sets = vec![
        NamedSet {
            set: Set::new(
                HAIRPIN_CONNECTIONS,
                vec![addr, addr, InetProto, InetService],
            )
            .with_comment("service hairpin connections"),
            elements: first_per_key(shared.hairpin_connections),
        },
        NamedSet {
            set: Set::new(CLUSTER_IPS, vec![addr]).with_comment("Active ClusterIPs"),
            elements: unique(&shared.cluster_ips),
        },
    ];
    if let Some(ips) = &ctx.nodeport_ips {
        sets.push(NamedSet {
            set: Set::new(NODEPORT_IPS, vec![addr])
                .with_comment("IPs that accept NodePort traffic"),
            elements: unique(ips),
        });
    }
    sets.extend([
        vmap(
            NO_ENDPOINT_SERVICES,
            &svc_key,
            "vmap to drop or reject packets to services with no endpoints",
            shared.no_endpoint_services,
        ),
        vmap(
            NO_ENDPOINT_NODEPORTS,
            &port_key,
            "vmap to drop or reject packets to service nodeports with no endpoints",
            shared.no_endpoint_nodeports,
        ),
        vmap(
            FIREWALL_IPS,
            &svc_key,
            "destinations that are subject to LoadBalancerSourceRanges",
            shared.firewall_ips,
        ),
        vmap(
            SERVICE_IPS,
            &svc_key,
            "ClusterIP, ExternalIP and LoadBalancer IP traffic",
            chained,
        ),
        vmap(
            SERVICE_NODEPORTS,
            &port_key,
            "NodePort traffic",
            shared.service_nodeports,
        ),
    ]);
    if ctx.direct_dispatch {
        sets.push(NamedSet {
            set: Set::map(SERVICE_IPS_DIRECT, svc_key, vec![addr, InetService]).with_comment(
                "ClusterIP traffic of single-endpoint services, DNATed without a service chain",
            ),
            elements: direct,
        });
    }
    sets.extend((0..endpoint_maps).map(|n| NamedSet {
        set: endpoint_map(ctx.family, n),
        elements: shared.endpoint_maps.remove(&n).unwrap_or_default(),
    }));
    sets
}

/// The elements with the first of each key only: two services may name
/// the same destination (an externalIP), or the same endpoint (hairpin),
/// and a set holds a key once.
fn first_per_key(elements: Vec<Element>) -> Vec<Element> {
    // the keys borrowed, not copied (a copy of every key is some 13 MiB
    // at 100,000 services; measured, not what sets the sync's peak)
    let keep: Vec<bool> = {
        let mut seen = std::collections::HashSet::with_capacity(elements.len());
        elements
            .iter()
            .map(|e| seen.insert(e.key.as_slice()))
            .collect()
    };
    elements
        .into_iter()
        .zip(keep)
        .filter_map(|(e, keep)| keep.then_some(e))
        .collect()
}

/// One element per address, in address order.
fn unique(ips: &[IpAddr]) -> Vec<Element> {
    ips.iter()
        .copied()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .map(|ip| Element::new(vec![value(ip)]))
        .collect()
}
