//! A table shaped like upstream's `ip kube-proxy` (reference
//! `nftables/ruleset.nft`), with one of every construct it uses.

use nftables::stmt::{self, Field};
use nftables::*;
use std::net::Ipv4Addr;

pub const TABLE: &str = "kube-proxy-test";
const TCP: u8 = 6;
const UDP: u8 = 17;

fn ip(a: [u8; 4]) -> Value {
    Value::Ipv4(Ipv4Addr::from(a))
}

fn rule(chain: &str, parts: Vec<Vec<Expr>>) -> Rule {
    Rule::new(chain, parts.into_iter().flatten().collect())
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

/// The named sets and maps with their elements.
pub fn sets() -> Vec<(Set, Vec<Element>)> {
    use DataType::{InetProto, InetService, Ipv4Addr};
    let goto = |c: &str| Verdict::Goto(c.to_string());
    vec![
        (
            Set::new(
                "hairpin-connections",
                vec![Ipv4Addr, Ipv4Addr, InetProto, InetService],
            )
            .with_comment("service hairpin connections"),
            vec![Element::new(vec![
                ip([10, 244, 0, 12]),
                ip([10, 244, 0, 12]),
                Value::Proto(TCP),
                Value::Port(7000),
            ])],
        ),
        (
            Set::new("cluster-ips", vec![Ipv4Addr]).with_comment("Active ClusterIPs"),
            vec![
                Element::new(vec![ip([10, 96, 0, 1])]),
                Element::new(vec![ip([10, 96, 10, 10])]),
            ],
        ),
        (
            Set::new("nodeport-ips", vec![Ipv4Addr])
                .with_comment("IPs that accept NodePort traffic"),
            vec![Element::new(vec![ip([192, 168, 86, 2])])],
        ),
        (
            Set::map(
                "no-endpoint-services",
                vec![Ipv4Addr, InetProto, InetService],
                vec![DataType::Verdict],
            )
            .with_comment("vmap to drop or reject packets to services with no endpoints"),
            vec![
                Element::verdict(
                    vec![ip([10, 96, 10, 90]), Value::Proto(TCP), Value::Port(80)],
                    goto("reject-chain"),
                )
                .with_comment("storefront/coming-soon:http"),
                Element::verdict(
                    vec![ip([10, 96, 10, 111]), Value::Proto(TCP), Value::Port(80)],
                    Verdict::Drop,
                )
                .with_comment("ops/audit:http"),
            ],
        ),
        (
            Set::map(
                "no-endpoint-nodeports",
                vec![InetProto, InetService],
                vec![DataType::Verdict],
            )
            .with_comment("vmap to drop or reject packets to service nodeports with no endpoints"),
            vec![
                Element::verdict(vec![Value::Proto(TCP), Value::Port(30808)], Verdict::Drop)
                    .with_comment("storefront/inventory:http"),
            ],
        ),
        (
            Set::map(
                "firewall-ips",
                vec![Ipv4Addr, InetProto, InetService],
                vec![DataType::Verdict],
            )
            .with_comment("destinations that are subject to LoadBalancerSourceRanges"),
            vec![Element::verdict(
                vec![ip([192, 0, 2, 10]), Value::Proto(TCP), Value::Port(443)],
                goto(FIREWALL),
            )],
        ),
        (
            Set::map(
                "service-ips",
                vec![Ipv4Addr, InetProto, InetService],
                vec![DataType::Verdict],
            )
            .with_comment("ClusterIP, ExternalIP and LoadBalancer IP traffic"),
            vec![
                Element::verdict(
                    vec![ip([10, 96, 10, 30]), Value::Proto(TCP), Value::Port(80)],
                    goto(SVC),
                ),
                Element::verdict(
                    vec![ip([10, 96, 10, 120]), Value::Proto(UDP), Value::Port(53)],
                    goto(SVC_AFFINITY),
                ),
                Element::verdict(
                    vec![ip([192, 0, 2, 30]), Value::Proto(TCP), Value::Port(80)],
                    goto(EXT),
                ),
            ],
        ),
        (
            Set::map(
                "service-nodeports",
                vec![InetProto, InetService],
                vec![DataType::Verdict],
            )
            .with_comment("NodePort traffic"),
            vec![Element::verdict(
                vec![Value::Proto(TCP), Value::Port(30080)],
                goto(EXT),
            )],
        ),
        (
            Set {
                size: Some(65535),
                timeout_ms: Some(600_000),
                ..Set::new(AFFINITY, vec![Ipv4Addr])
                    .with_flags(SetFlags::DYNAMIC | SetFlags::TIMEOUT)
            },
            vec![],
        ),
    ]
}

pub const SVC: &str = "service-QCNCQR2N-storefront/catalog/tcp/http";
pub const EXT: &str = "external-QCNCQR2N-storefront/catalog/tcp/http";
pub const FIREWALL: &str = "firewall-B4HLWV4J-storefront/frontend/tcp/https";
pub const SVC_AFFINITY: &str = "service-27NAFT4N-storefront/cart/tcp/grpc";
pub const ENDPOINT: &str = "endpoint-34X2MHTE-storefront/cart/tcp/grpc__10.244.0.12/7000";
pub const AFFINITY: &str = "affinity-34X2MHTE-storefront/cart/tcp/grpc__10.244.0.12/7000";

/// Chains in the order they are created.
pub fn chains() -> Vec<Chain> {
    vec![
        base(
            "filter-prerouting-pre-dnat",
            ChainType::Filter,
            Hook::Prerouting,
            -110,
        ),
        base("filter-input", ChainType::Filter, Hook::Input, 0),
        base("filter-output", ChainType::Filter, Hook::Output, 0),
        base("nat-output", ChainType::Nat, Hook::Output, -100),
        base("nat-postrouting", ChainType::Nat, Hook::Postrouting, 100),
        Chain::regular("nodeport-endpoints-check"),
        Chain::regular("service-endpoints-check"),
        Chain::regular("firewall-check"),
        Chain::regular("services"),
        Chain::regular("masquerading"),
        Chain::regular("cluster-ips-check"),
        Chain::regular("reject-chain")
            .with_comment("helper for @no-endpoint-services / @no-endpoint-nodeports"),
        Chain::regular(SVC),
        Chain::regular(EXT),
        Chain::regular(FIREWALL),
        Chain::regular(ENDPOINT),
        Chain::regular(SVC_AFFINITY),
    ]
}

/// Anonymous sets (with their elements) and the rules, in order.
pub fn rules() -> (Vec<(Set, Vec<Element>)>, Vec<Rule>) {
    use DataType::{InetService, Integer, Ipv4Addr};
    let named = SetRef::named;
    let new = stmt::ct_state(stmt::CT_STATE_NEW);
    let jump = |c: &str| stmt::verdict(Verdict::Jump(c.to_string()));
    let goto = |c: &str| stmt::verdict(Verdict::Goto(c.to_string()));
    let l4_dport = [Field::L4proto, Field::ThDport];
    let daddr_l4_dport = [Field::IpDaddr, Field::L4proto, Field::ThDport];

    let dnat_map = Set::anonymous(1, vec![Integer], Some(vec![Ipv4Addr, InetService]));
    let dnat_elems = vec![
        Element::data(
            vec![Value::Integer(0)],
            vec![ip([10, 244, 1, 13]), Value::Port(8080)],
        ),
        Element::data(
            vec![Value::Integer(1)],
            vec![ip([10, 244, 2, 13]), Value::Port(8080)],
        ),
    ];
    let ng_vmap = Set::anonymous(2, vec![Integer], Some(vec![DataType::Verdict]));
    let ng_elems = vec![
        Element::verdict(vec![Value::Integer(0)], Verdict::Goto(ENDPOINT.to_string())),
        Element::verdict(vec![Value::Integer(1)], Verdict::Goto(ENDPOINT.to_string())),
    ];
    let ranges = Set::anonymous(3, vec![Ipv4Addr], None).with_flags(SetFlags::INTERVAL);
    let range_elems = vec![
        Element::interval_end(vec![ip([0, 0, 0, 0])]),
        Element::new(vec![ip([172, 20, 0, 0])]),
        Element::interval_end(vec![ip([172, 20, 0, 16])]),
        Element::new(vec![ip([192, 168, 86, 0])]),
        Element::interval_end(vec![ip([192, 168, 87, 0])]),
    ];

    let rules = vec![
        rule(
            "filter-prerouting-pre-dnat",
            vec![new.clone(), jump("firewall-check")],
        ),
        rule(
            "filter-input",
            vec![new.clone(), jump("nodeport-endpoints-check")],
        ),
        rule(
            "filter-output",
            vec![new.clone(), jump("service-endpoints-check")],
        ),
        rule("filter-output", vec![new, jump("cluster-ips-check")]),
        rule("nat-output", vec![jump("services")]),
        rule("nat-postrouting", vec![jump("masquerading")]),
        rule(
            "nodeport-endpoints-check",
            vec![
                stmt::in_set(&[Field::IpDaddr], named("nodeport-ips"), false),
                stmt::vmap(&l4_dport, named("no-endpoint-nodeports")),
            ],
        ),
        rule(
            "service-endpoints-check",
            vec![stmt::vmap(&daddr_l4_dport, named("no-endpoint-services"))],
        ),
        rule(
            "firewall-check",
            vec![stmt::vmap(&daddr_l4_dport, named("firewall-ips"))],
        ),
        rule(
            "services",
            vec![
                stmt::in_set(&[Field::IpDaddr], named("cluster-ips"), false),
                stmt::prefix(Field::IpSaddr, CmpOp::Neq, [10, 244, 0, 0].into(), 16),
                stmt::mark_or(0x4000),
            ],
        )
        .with_comment("masquerade clusterIP traffic from outside cluster"),
        rule(
            "services",
            vec![stmt::vmap(&daddr_l4_dport, named("service-ips"))],
        ),
        rule(
            "services",
            vec![
                stmt::in_set(&[Field::IpDaddr], named("nodeport-ips"), false),
                stmt::vmap(&l4_dport, named("service-nodeports")),
            ],
        ),
        rule(
            "masquerading",
            vec![
                stmt::mark_has(0x4000),
                stmt::mark_xor(0x4000),
                stmt::masquerade_fully_random(),
            ],
        ),
        rule(
            "masquerading",
            vec![
                stmt::ct_status(stmt::CT_STATUS_DNAT),
                stmt::in_set(
                    &[
                        Field::IpSaddr,
                        Field::IpDaddr,
                        Field::L4proto,
                        Field::ThDport,
                    ],
                    named("hairpin-connections"),
                    false,
                ),
                stmt::masquerade_fully_random(),
            ],
        ),
        rule(
            "cluster-ips-check",
            vec![
                stmt::in_set(&[Field::IpDaddr], named("cluster-ips"), false),
                stmt::reject(),
            ],
        )
        .with_comment("Reject traffic to invalid ports of ClusterIPs"),
        rule(
            "cluster-ips-check",
            vec![
                stmt::prefix(Field::IpDaddr, CmpOp::Eq, [10, 96, 0, 0].into(), 12),
                stmt::verdict(Verdict::Drop),
            ],
        )
        .with_comment("Drop traffic to unallocated ClusterIPs"),
        rule("reject-chain", vec![stmt::reject()]),
        rule(
            SVC,
            vec![
                stmt::l4proto(TCP),
                stmt::dnat_numgen_map(2, 2, SetRef::to_set(&dnat_map), 4),
            ],
        ),
        rule(EXT, vec![stmt::mark_or(0x4000)]).with_comment("masquerade"),
        rule(
            EXT,
            vec![
                stmt::prefix(Field::IpSaddr, CmpOp::Eq, [10, 244, 0, 0].into(), 16),
                goto(SVC),
            ],
        )
        .with_comment("short-circuit pod traffic"),
        rule(
            EXT,
            vec![stmt::fib_type_local(false), stmt::mark_or(0x4000)],
        )
        .with_comment("masquerade local traffic"),
        rule(EXT, vec![stmt::fib_type_local(false), goto(SVC)])
            .with_comment("short-circuit local traffic"),
        rule(
            FIREWALL,
            vec![
                stmt::in_set(&[Field::IpSaddr], SetRef::to_set(&ranges), true),
                stmt::verdict(Verdict::Drop),
            ],
        ),
        rule(
            ENDPOINT,
            vec![stmt::update_set(Field::IpSaddr, named(AFFINITY))],
        ),
        rule(
            ENDPOINT,
            vec![
                stmt::l4proto(TCP),
                stmt::dnat_to([10, 244, 0, 12].into(), 7000),
            ],
        ),
        rule(
            SVC_AFFINITY,
            vec![
                stmt::in_set(&[Field::IpSaddr], named(AFFINITY), false),
                goto(ENDPOINT),
            ],
        ),
        rule(
            SVC_AFFINITY,
            vec![stmt::numgen_vmap(2, SetRef::to_set(&ng_vmap))],
        ),
        rule(
            SVC_AFFINITY,
            vec![
                stmt::counter(),
                stmt::notrack(),
                stmt::limit_per_second(10, 5),
            ],
        ),
        rule(
            SVC_AFFINITY,
            vec![
                stmt::ifname(true, CmpOp::Eq, "lo"),
                stmt::ifname(false, CmpOp::Neq, "eth0"),
                stmt::nfproto(2),
                stmt::ct_direction(false),
                stmt::l4proto(TCP),
                stmt::reject_tcp_reset(),
            ],
        ),
    ];
    (
        vec![
            (dnat_map, dnat_elems),
            (ng_vmap, ng_elems),
            (ranges, range_elems),
        ],
        rules,
    )
}

/// The whole table as one transaction.
pub fn transaction() -> Transaction {
    let mut tx = Transaction::new(Family::Ip, TABLE);
    tx.push(Op::AddTable(
        Table::new(Family::Ip, TABLE).with_comment("rules for kube-proxy"),
    ));
    // chains first: verdict map elements name them
    for chain in chains() {
        tx.push(Op::AddChain(chain));
    }
    for (set, elements) in sets() {
        let set_ref = SetRef::to_set(&set);
        tx.push(Op::AddSet(set));
        if !elements.is_empty() {
            tx.push(Op::AddElements {
                set: set_ref,
                elements,
            });
        }
    }
    let (anonymous, rules) = rules();
    for (set, elements) in anonymous {
        let set_ref = SetRef::to_set(&set);
        tx.push(Op::AddSet(set));
        tx.push(Op::AddElements {
            set: set_ref,
            elements,
        });
    }
    for rule in rules {
        tx.push(Op::AddRule(rule));
    }
    tx
}
