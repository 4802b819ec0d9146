//! The endpoint pick of the layout issue 25 chose (see the README's "Table
//! shapes at scale"), on a real kernel in a fresh network namespace: a
//! service chain's one rule `dnat ip to numgen random mod 65536 offset K
//! map @service-endpoints`, the map shared by services, with `flags
//! interval` and each endpoint owning a range of the service's slot.
//! 10,000 real connections to a service with 100 endpoints land on every
//! endpoint, evenly (chi-square), and a service beside it in the same map
//! keeps its own endpoint; 5,000 services × 1–4 endpoints in 20 shared
//! maps, each service's endpoint set read back through real connections.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use anyhow::{Result, bail};
use nftables::*;
use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use testkit::netns::Netns;

const SLOT: u32 = 1 << 16;
const MAP: &str = "service-endpoints";
const PORT: u16 = 8080;
const ENDPOINTS: u32 = 100;
const CONNECTIONS: u32 = 10_000;
/// χ² with 99 degrees of freedom exceeds this with probability 0.001.
const CHI_SQUARE_99_P001: f64 = 148.23;

fn netns(label: &str) -> Result<Netns> {
    if let Some(why) = testkit::netns::unavailable() {
        panic!("{why}");
    }
    Netns::new(label)
}

fn key(k: u32) -> Value {
    Value::Integer(u32::from_ne_bytes(k.to_be_bytes()))
}

/// Service `slot`'s endpoints: each range's start with its endpoint, and
/// an end marker at the next range's start.
fn slot_elements(slot: u32, endpoints: &[Ipv4Addr]) -> Vec<Element> {
    let n = endpoints.len() as u64;
    let start = |e: u64| slot * SLOT + u32::try_from(e * u64::from(SLOT) / n).unwrap();
    let mut out = Vec::new();
    for (e, addr) in endpoints.iter().enumerate() {
        let e = e as u64;
        out.push(Element::data(
            vec![key(start(e))],
            vec![Value::Ipv4(*addr), Value::Port(PORT)],
        ));
        out.push(Element::interval_end(vec![key(start(e + 1))]));
    }
    out
}

fn service_rule(chain: &str, slot: u32) -> Rule {
    service_rule_in(chain, MAP, slot)
}

fn service_rule_in(chain: &str, map: &str, slot: u32) -> Rule {
    let pick = stmt::dnat_numgen_interval_map(2, SLOT, slot * SLOT, SetRef::named(map), 4);
    Rule::new(chain, [stmt::l4proto(6), pick].concat())
}

/// Two services in one interval map: 172.30.0.1:80 over 100 endpoints
/// (127.0.1.1–100), 172.30.0.2:80 over one (127.0.2.1); DNAT in `output`.
fn table() -> Transaction {
    let mut tx = Transaction::new(Family::Ip, "kube-proxy");
    tx.push(Op::AddTable(Table::new(Family::Ip, "kube-proxy")));
    let base = BaseChain {
        kind: ChainType::Nat,
        hook: Hook::Output,
        priority: -100,
        policy: Policy::Accept,
    };
    tx.push(Op::AddChain(Chain::base("nat-output", base)));
    let mut map = Set::map(
        MAP,
        vec![DataType::Integer],
        vec![DataType::Ipv4Addr, DataType::InetService],
    );
    map.flags = map.flags | SetFlags::INTERVAL;
    tx.push(Op::AddSet(map));
    let wide: Vec<Ipv4Addr> = (1..=ENDPOINTS)
        .map(|i| Ipv4Addr::new(127, 0, 1, i as u8))
        .collect();
    let mut elements = slot_elements(0, &wide);
    elements.extend(slot_elements(1, &[Ipv4Addr::new(127, 0, 2, 1)]));
    tx.push(Op::AddElements {
        set: SetRef::named(MAP),
        elements,
    });
    for (slot, chain) in ["service-wide", "service-one"].into_iter().enumerate() {
        tx.push(Op::AddChain(Chain::regular(chain)));
        tx.push(Op::AddRule(service_rule(chain, slot as u32)));
        let daddr = stmt::compare(
            stmt::Field::IpDaddr,
            CmpOp::Eq,
            &[172, 30, 0, slot as u8 + 1],
        );
        let goto = stmt::verdict(Verdict::Goto(chain.into()));
        tx.push(Op::AddRule(Rule::new("nat-output", [daddr, goto].concat())));
    }
    tx
}

/// Where `count` connections to `service` landed (the address the
/// listener saw as its own).
fn connect_many(
    listener: &TcpListener,
    service: Ipv4Addr,
    count: u32,
) -> Result<HashMap<Ipv4Addr, u32>> {
    let mut landed = HashMap::new();
    for _ in 0..count {
        let _client = TcpStream::connect(SocketAddrV4::new(service, 80))?;
        let (accepted, _) = listener.accept()?;
        match accepted.local_addr()? {
            std::net::SocketAddr::V4(local) => *landed.entry(*local.ip()).or_insert(0) += 1,
            other => bail!("accepted on {other}"),
        }
    }
    Ok(landed)
}

fn chi_square(landed: &HashMap<Ipv4Addr, u32>, endpoints: u32, total: u32) -> f64 {
    let expected = f64::from(total) / f64::from(endpoints);
    (1..=endpoints)
        .map(|i| {
            let seen = landed
                .get(&Ipv4Addr::new(127, 0, 1, i as u8))
                .copied()
                .unwrap_or(0);
            (f64::from(seen) - expected).powi(2) / expected
        })
        .sum()
}

#[test]
fn a_shared_interval_map_spreads_100_endpoints_evenly() -> Result<()> {
    let ns = netns("nftspread")?;
    ns.ip(&["route", "add", "172.30.0.0/16", "dev", "lo"])?;
    let (wide, one) = ns.run(|| -> Result<_> {
        NftSocket::connect()?.apply(&table())?;
        let listener = TcpListener::bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, PORT))?;
        let wide = connect_many(&listener, Ipv4Addr::new(172, 30, 0, 1), CONNECTIONS)?;
        let one = connect_many(&listener, Ipv4Addr::new(172, 30, 0, 2), 200)?;
        Ok((wide, one))
    })??;
    assert_eq!(
        one,
        HashMap::from([(Ipv4Addr::new(127, 0, 2, 1), 200)]),
        "the one-endpoint service keeps its own"
    );
    assert_eq!(
        wide.len(),
        ENDPOINTS as usize,
        "every endpoint reached, none outside: {wide:?}"
    );
    assert!(
        wide.keys().all(|a| a.octets()[..3] == [127, 0, 1]),
        "only the service's endpoints: {wide:?}"
    );
    let chi2 = chi_square(&wide, ENDPOINTS, CONNECTIONS);
    println!(
        "χ² over {ENDPOINTS} endpoints, {CONNECTIONS} connections: {chi2:.1} (p = 0.001 at {CHI_SQUARE_99_P001})"
    );
    assert!(
        chi2 < CHI_SQUARE_99_P001,
        "uneven spread: χ² = {chi2:.1}, {wide:?}"
    );
    Ok(())
}

const SERVICES: u32 = 5_000;
const SERVICES_PER_MAP: u32 = 256;

fn service_ip(s: u32) -> Ipv4Addr {
    Ipv4Addr::from(0xac1e_0001 + s)
}

/// Service `s`'s endpoints: 1–4 of them, 127.<1 + s / 250>.<s % 250>.<e + 1>.
fn endpoints_of(s: u32) -> Vec<Ipv4Addr> {
    (0..s % 4 + 1)
        .map(|e| Ipv4Addr::new(127, 1 + (s / 250) as u8, (s % 250) as u8, e as u8 + 1))
        .collect()
}

/// `SERVICES` services, each a chain with the one rule, reached from
/// `nat-output` through a verdict map, their endpoints in maps of
/// `SERVICES_PER_MAP` services (rules before the elements that bind them,
/// as the layout's cold start sends them).
fn many_services() -> Transaction {
    let mut tx = Transaction::new(Family::Ip, "kube-proxy");
    tx.push(Op::AddTable(Table::new(Family::Ip, "kube-proxy")));
    let base = BaseChain {
        kind: ChainType::Nat,
        hook: Hook::Output,
        priority: -100,
        policy: Policy::Accept,
    };
    tx.push(Op::AddChain(Chain::base("nat-output", base)));
    let fields = [
        stmt::Field::IpDaddr,
        stmt::Field::L4proto,
        stmt::Field::ThDport,
    ];
    let key = vec![
        DataType::Ipv4Addr,
        DataType::InetProto,
        DataType::InetService,
    ];
    tx.push(Op::AddSet(Set::map(
        "service-ips",
        key,
        vec![DataType::Verdict],
    )));
    let mut per_map: Vec<Vec<Element>> = Vec::new();
    let mut gotos = Vec::new();
    for s in 0..SERVICES {
        let (map, slot) = (s / SERVICES_PER_MAP, s % SERVICES_PER_MAP);
        let name = format!("{MAP}-{map}");
        if per_map.len() <= map as usize {
            let mut set = Set::map(
                name.as_str(),
                vec![DataType::Integer],
                vec![DataType::Ipv4Addr, DataType::InetService],
            );
            set.flags = set.flags | SetFlags::INTERVAL;
            tx.push(Op::AddSet(set));
            per_map.push(Vec::new());
        }
        per_map[map as usize].extend(slot_elements(slot, &endpoints_of(s)));
        let chain = format!("service-{s:05}");
        tx.push(Op::AddChain(Chain::regular(chain.as_str())));
        tx.push(Op::AddRule(service_rule_in(&chain, &name, slot)));
        gotos.push(Element::verdict(
            vec![Value::Ipv4(service_ip(s)), Value::Proto(6), Value::Port(80)],
            Verdict::Goto(chain),
        ));
    }
    for (map, elements) in per_map.into_iter().enumerate() {
        tx.push(Op::AddElements {
            set: SetRef::named(format!("{MAP}-{map}")),
            elements,
        });
    }
    tx.push(Op::AddElements {
        set: SetRef::named("service-ips"),
        elements: gotos,
    });
    tx.push(Op::AddRule(Rule::new(
        "nat-output",
        stmt::vmap(&fields, SetRef::named("service-ips")),
    )));
    tx
}

/// The endpoints connections to `service` reach, connecting until all of
/// `expected` were seen or `cap` connections were made.
fn endpoint_set(
    listener: &TcpListener,
    service: Ipv4Addr,
    expected: &[Ipv4Addr],
    cap: u32,
) -> Result<Vec<Ipv4Addr>> {
    let mut seen: Vec<Ipv4Addr> = Vec::new();
    for _ in 0..cap {
        let _client = TcpStream::connect(SocketAddrV4::new(service, 80))?;
        let (accepted, _) = listener.accept()?;
        let std::net::SocketAddr::V4(local) = accepted.local_addr()? else {
            bail!("not IPv4")
        };
        if !seen.contains(local.ip()) {
            seen.push(*local.ip());
        }
        if seen.len() >= expected.len() && expected.iter().all(|e| seen.contains(e)) {
            break;
        }
    }
    seen.sort();
    Ok(seen)
}

#[test]
fn five_thousand_services_read_back_their_endpoint_sets_through_real_connections() -> Result<()> {
    let ns = netns("nftread")?;
    ns.ip(&["route", "add", "172.30.0.0/16", "dev", "lo"])?;
    let wrong = ns.run(|| -> Result<Vec<String>> {
        NftSocket::connect()?.apply(&many_services())?;
        let listener = TcpListener::bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, PORT))?;
        let mut wrong = Vec::new();
        for s in 0..SERVICES {
            let expected = endpoints_of(s);
            // 64 tries miss one of 4 equally likely endpoints with p ≈ 4·(3/4)^64 ≈ 4e-8.
            let seen = endpoint_set(&listener, service_ip(s), &expected, 64)?;
            if seen != expected {
                wrong.push(format!(
                    "service {s}: expected {expected:?}, reached {seen:?}"
                ));
            }
        }
        Ok(wrong)
    })??;
    assert!(
        wrong.is_empty(),
        "{} of {SERVICES} services reach other endpoints: {:?}",
        wrong.len(),
        &wrong[..wrong.len().min(5)]
    );
    Ok(())
}

/// The pick lists as `nft` writes it (`nft` prints the map's ranges and
/// the rule's offset), and reads back over netlink as sent.
#[test]
fn the_interval_pick_lists_as_nft_writes_it_and_reads_back_as_sent() -> Result<()> {
    let ns = netns("nftilist")?;
    let listed = ns.run(|| -> Result<_> {
        let mut socket = NftSocket::connect()?;
        socket.apply(&table())?;
        Ok(socket.list_table(Family::Ip, "kube-proxy")?)
    })??;
    let Some(listed) = listed else {
        bail!("our table is gone")
    };
    let mut sent: Vec<(String, Vec<Expr>)> = table()
        .ops
        .into_iter()
        .filter_map(|op| match op {
            Op::AddRule(rule) => Some((rule.chain, rule.exprs)),
            _ => None,
        })
        .collect();
    let mut read: Vec<(String, Vec<Expr>)> = listed
        .rules
        .into_iter()
        .map(|r| (r.chain, r.exprs))
        .collect();
    // Listed chain by chain; within a chain in order (the sort is stable).
    sent.sort_by(|a, b| a.0.cmp(&b.0));
    read.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(read, sent, "rules read back over netlink");
    let text = ns.exec("nft", &["list", "table", "ip", "kube-proxy"])?;
    for line in [
        "meta l4proto tcp dnat ip to numgen random mod 65536 map @service-endpoints",
        "meta l4proto tcp dnat ip to numgen random mod 65536 offset 65536 map @service-endpoints",
        "flags interval",
        "0-654 : 127.0.1.1 . 8080",
        "65536-131071 : 127.0.2.1 . 8080",
    ] {
        assert!(text.contains(line), "nft lists {line:?}:\n{text}");
    }
    Ok(())
}
