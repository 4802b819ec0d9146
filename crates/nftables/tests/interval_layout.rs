//! The endpoint pick of the layout issue 25 chose (see the README's "Table
//! shapes at scale"), on a real kernel in fresh network namespaces. On the
//! table the renderer gives by default, synced by nftables mode's proxier
//! as the binary syncs it: 10,000 real connections to a ClusterIP with 100
//! endpoints land on every endpoint, evenly (chi-square at p = 0.001), and
//! a one-endpoint service beside it keeps its own; 5,000 services × 1–4
//! endpoints, each service's endpoint set read back through real
//! connections (the kernel's own lookup: `service-ips`, the service chain,
//! its slot of `service-endpoints-<n>`). The endpoints are distinct
//! addresses of a local route on `lo`, served by one listener. On a
//! hand-built table: the pick lists as `nft` writes it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ::proxier::Proxier;
use anyhow::{Result, bail};
use model::{ChangeSet, Snapshot};
use nftables::proxier::{MAX_ANONYMOUS_SETS_PER_TRANSACTION, NftablesProxier, ProxierOptions};
use nftables::render::RenderOptions;
use nftables::*;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::time::Instant;
use testkit::builders::*;
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

fn chi_square(landed: &HashMap<Ipv4Addr, u32>, endpoints: &[Ipv4Addr], total: u32) -> f64 {
    let expected = f64::from(total) / endpoints.len() as f64;
    endpoints
        .iter()
        .map(|e| {
            let seen = landed.get(e).copied().unwrap_or(0);
            (f64::from(seen) - expected).powi(2) / expected
        })
        .sum()
}

fn v4(ip: IpAddr) -> Ipv4Addr {
    match ip {
        IpAddr::V4(v4) => v4,
        IpAddr::V6(_) => panic!("{ip} is not IPv4"),
    }
}

/// The render options the binary uses by default (shared endpoint maps),
/// with testkit's cluster CIDR (10.0.0.0/8: the test's source address is
/// in it, so nothing is masqueraded).
fn options() -> RenderOptions {
    let mut opts = RenderOptions::nftables_defaults(plan::IpFamily::V4);
    assert!(opts.shared_endpoint_maps, "the default layout");
    opts.common.local_detection = plan::LocalDetection::ClusterCidr(vec![cluster_cidr()]);
    opts
}

/// `services`: (ClusterIP, endpoints), each `ns/svc<i>` port 80/TCP to
/// 8080.
fn snapshot_of(services: &[(Ipv4Addr, Vec<Ipv4Addr>)]) -> Snapshot {
    let mut builder = snapshot();
    for (i, (ip, endpoints)) in services.iter().enumerate() {
        let port = tcp_port("ns", &format!("svc{i}"), "p", IpAddr::V4(*ip), 80);
        let endpoints: Vec<_> = endpoints
            .iter()
            .map(|e| endpoint(IpAddr::V4(*e), PORT))
            .collect();
        builder = builder.service(port, endpoints);
    }
    builder.build()
}

/// A fresh namespace where ClusterIPs (172.30.0.0/16) route to `lo` from
/// 10.180.255.254, and every pod IP (10.180.0.0/16) is local (one
/// listener on 0.0.0.0 serves them all).
fn node(label: &str) -> Result<Netns> {
    let ns = netns(label)?;
    ns.ip(&["addr", "add", "10.180.255.254/32", "dev", "lo"])?;
    ns.ip(&["route", "add", "local", "10.180.0.0/16", "dev", "lo"])?;
    ns.ip(&[
        "route",
        "add",
        "172.30.0.0/16",
        "dev",
        "lo",
        "src",
        "10.180.255.254",
    ])?;
    Ok(ns)
}

/// Syncs `snapshot` with nftables mode's proxier (a cold start, in parts
/// as the binary sends it), listens on 8080 and runs `check`.
fn programmed<T: Send + 'static>(
    ns: &Netns,
    snapshot: Snapshot,
    check: impl FnOnce(&TcpListener) -> Result<T> + Send + 'static,
) -> Result<T> {
    ns.run(move || -> Result<T> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let mut proxier = NftablesProxier::new(ProxierOptions {
            render: options(),
            max_anonymous_sets_per_transaction: Some(MAX_ANONYMOUS_SETS_PER_TRANSACTION),
        })?;
        let started = Instant::now();
        runtime.block_on(proxier.sync(&snapshot, &ChangeSet::default(), true))?;
        println!(
            "{} services synced in {:.2?}",
            snapshot.services.len(),
            started.elapsed()
        );
        let listener = TcpListener::bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, PORT))?;
        check(&listener)
    })?
}

/// The table in the kernel picks from the shared maps, never from an
/// anonymous map (upstream's `numgen random mod N map { … }`).
fn assert_shared_map_layout(ns: &Netns) -> Result<()> {
    let listed = ns.exec("nft", &["-t", "list", "table", "ip", "kube-proxy"])?;
    let picks: Vec<&str> = listed
        .lines()
        .filter(|l| l.contains("dnat") && l.contains("numgen random"))
        .collect();
    assert!(
        !picks.is_empty() && picks.iter().all(|l| l.contains("map @service-endpoints-")),
        "the shared-map layout: {:?}",
        &picks[..picks.len().min(5)]
    );
    Ok(())
}

#[test]
fn the_rendered_table_spreads_100_endpoints_evenly() -> Result<()> {
    let wide: Vec<Ipv4Addr> = (1..=ENDPOINTS as u16).map(|i| v4(pod_ip(i))).collect();
    let one = v4(pod_ip(1000));
    let (wide_ip, one_ip) = (v4(cluster_ip(1)), v4(cluster_ip(2)));
    let snapshot = snapshot_of(&[(wide_ip, wide.clone()), (one_ip, vec![one])]);
    let ns = node("nftspread")?;
    let (landed, alone) = programmed(&ns, snapshot, move |listener| {
        let landed = connect_many(listener, wide_ip, CONNECTIONS)?;
        let alone = connect_many(listener, one_ip, 200)?;
        Ok((landed, alone))
    })?;
    assert_shared_map_layout(&ns)?;
    assert_eq!(
        alone,
        HashMap::from([(one, 200)]),
        "the one-endpoint service keeps its own"
    );
    assert_eq!(
        landed.len(),
        wide.len(),
        "every endpoint reached, none outside: {landed:?}"
    );
    assert!(
        landed.keys().all(|a| wide.contains(a)),
        "only the service's endpoints: {landed:?}"
    );
    let chi2 = chi_square(&landed, &wide, CONNECTIONS);
    println!(
        "χ² over {ENDPOINTS} endpoints, {CONNECTIONS} connections: {chi2:.1} (p = 0.001 at {CHI_SQUARE_99_P001})"
    );
    assert!(
        chi2 < CHI_SQUARE_99_P001,
        "uneven spread: χ² = {chi2:.1}, {landed:?}"
    );
    Ok(())
}

const SERVICES: u16 = 5_000;

/// Service `s`'s endpoints: 1–4 of them, pod IPs of its own.
fn endpoints_of(s: u16) -> Vec<Ipv4Addr> {
    (0..s % 4 + 1)
        .map(|e| v4(pod_ip(1000 + 4 * s + e)))
        .collect()
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
fn five_thousand_rendered_services_read_back_their_endpoint_sets_through_real_connections()
-> Result<()> {
    let services: Vec<(Ipv4Addr, Vec<Ipv4Addr>)> = (0..SERVICES)
        .map(|s| (v4(cluster_ip(s + 1)), endpoints_of(s)))
        .collect();
    let snapshot = snapshot_of(&services);
    let ns = node("nftread")?;
    let started = Instant::now();
    let wrong = programmed(&ns, snapshot, move |listener| {
        let mut wrong = Vec::new();
        for (s, (ip, expected)) in services.iter().enumerate() {
            // 64 tries miss one of 4 equally likely endpoints with p ≈ 4·(3/4)^64 ≈ 4e-8.
            let seen = endpoint_set(listener, *ip, expected, 64)?;
            if seen != *expected {
                wrong.push(format!(
                    "service {s} ({ip}): expected {expected:?}, reached {seen:?}"
                ));
            }
        }
        Ok(wrong)
    })?;
    println!(
        "{SERVICES} services programmed and read back in {:.2?}",
        started.elapsed()
    );
    assert_shared_map_layout(&ns)?;
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
