//! The applier against the kernel, each test in a fresh network
//! namespace: full sync from nothing, nothing written when nothing
//! changed, a partial sync writes only what changed, a refused
//! transaction changes nothing and names the object, our table deleted
//! or changed by hand is repaired by a full sync, another program's table
//! is never changed, `cleanup` removes ours only.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/apply_services.rs"]
mod services;

use anyhow::{Result, bail};
use nftables::apply::{SyncReport, Syncer, cleanup};
use nftables::*;
use services::Service;
use testkit::netns::Netns;

fn netns(label: &str) -> Result<Netns> {
    if let Some(why) = testkit::netns::unavailable() {
        panic!("{why}");
    }
    Netns::new(label)
}

/// A socket acting in `ns` (it keeps acting there from any thread).
fn socket(ns: &Netns) -> Result<NftSocket> {
    Ok(ns.run(NftSocket::connect)??)
}

fn nft(ns: &Netns, args: &[&str]) -> Result<String> {
    ns.exec("nft", args)
}

fn list_ours(ns: &Netns) -> Result<String> {
    nft(ns, &["list", "table", "ip", "kube-proxy"])
}

/// Another program's table, with a chain and a rule; its listing.
fn other_table(ns: &Netns) -> Result<String> {
    nft(
        ns,
        &[
            "add table ip other; add chain ip other c { type filter hook input priority 0; }; add rule ip other c tcp dport 22 counter accept",
        ],
    )?;
    nft(ns, &["list", "table", "ip", "other"])
}

fn services(n: u32) -> Vec<Service> {
    (1..=n).map(|i| Service::numbered(i, 3)).collect()
}

fn ok(r: Result<SyncReport, Error>) -> Result<SyncReport> {
    match r {
        Ok(r) => Ok(r),
        Err(e) => bail!("{e}"),
    }
}

#[test]
fn full_sync_from_nothing_then_nothing_to_write() -> Result<()> {
    let ns = netns("apfull")?;
    let other = other_table(&ns)?;
    let mut sock = socket(&ns)?;
    let mut syncer = Syncer::new(Family::Ip);
    assert!(syncer.needs_full_sync());
    let desired = services::table(&services(5));

    let first = ok(syncer.sync_partial(&mut sock, desired.clone()))?;
    assert!(first.full, "the first sync is full");
    assert_eq!(first.counts.chains_written, 10);
    assert_eq!(first.counts.rules_written, 10);
    assert_eq!(first.counts.sets_written, 3);
    assert_eq!(first.counts.anonymous_sets_written, 5);
    assert_eq!(first.counts.elements_written, 10);
    assert_eq!(first.counts.anonymous_elements_written, 15);
    assert!(first.kernel > std::time::Duration::ZERO);
    assert!(!syncer.needs_full_sync());

    let text = list_ours(&ns)?;
    assert!(
        text.contains("dnat ip to numgen random mod 3 map { 0 : 10.244.0.16 . 8080"),
        "{text}"
    );
    assert!(text.contains(": goto service-"), "{text}");

    // the same state again: nothing sent, partial or full
    let again = ok(syncer.sync_partial(&mut sock, desired.clone()))?;
    assert!(!again.full);
    assert!(again.counts.is_empty() && again.changes == 0, "{again:?}");
    let full = ok(syncer.sync_full(&mut sock, desired.clone()))?;
    assert!(full.full);
    assert!(
        full.counts.is_empty(),
        "read back equals what we wrote: {full:?}"
    );
    assert_eq!(list_ours(&ns)?, text);
    assert_eq!(nft(&ns, &["list", "table", "ip", "other"])?, other);
    Ok(())
}

#[test]
fn partial_sync_writes_only_the_changed_chain_and_element() -> Result<()> {
    let ns = netns("appart")?;
    let mut sock = socket(&ns)?;
    let mut syncer = Syncer::new(Family::Ip);
    let mut svcs = services(20);
    ok(syncer.sync_full(&mut sock, services::table(&svcs)))?;

    // one service gets a fourth endpoint; another's map element points
    // to a third service's chain
    svcs[4].endpoints.push("10.244.99.4".parse()?);
    let mut desired = services::table(&svcs);
    let moved = svcs[7].vmap_element();
    let vmap = desired.elements.get_mut("service-ips").unwrap();
    let at = vmap.iter().position(|e| *e == moved).unwrap();
    vmap[at].data = Some(ElementData::Verdict(Verdict::Goto(svcs[8].chain())));

    let report = ok(syncer.sync_partial(&mut sock, desired.clone()))?;
    assert!(!report.full);
    let c = report.counts;
    assert_eq!(
        (c.chains_written, c.chains_flushed, c.rules_written),
        (0, 1, 1),
        "{c:?}"
    );
    assert_eq!(
        (c.anonymous_sets_written, c.anonymous_elements_written),
        (1, 4)
    );
    assert_eq!((c.elements_written, c.elements_deleted), (1, 1));
    assert_eq!(c.objects_deleted(), 1);

    let text = list_ours(&ns)?;
    assert!(text.contains("numgen random mod 4 map"), "{text}");
    assert!(text.contains("10.244.99.4 . 8080"));
    let moved_line = format!("10.96.0.8 . tcp . 80 : goto {}", svcs[8].chain());
    assert!(text.contains(&moved_line), "{text}");
    // what the kernel holds is exactly the desired table
    assert!(
        ok(syncer.sync_full(&mut sock, desired.clone()))?
            .counts
            .is_empty()
    );
    Ok(())
}

#[test]
fn a_refused_transaction_changes_nothing_and_names_the_object() -> Result<()> {
    let ns = netns("aprefuse")?;
    let mut sock = socket(&ns)?;
    let mut syncer = Syncer::new(Family::Ip);
    let svcs = services(3);
    let good = services::table(&svcs);
    ok(syncer.sync_full(&mut sock, good.clone()))?;
    let before = list_ours(&ns)?;

    // a changed service whose rule jumps to a chain that does not exist
    let mut bad = services::table(&services(4));
    bad.rules.push(Rule::new(
        svcs[1].chain(),
        stmt::verdict(Verdict::Jump("no-such-chain".into())),
    ));
    let Err(Error::Refused(refusals)) = syncer.sync_partial(&mut sock, bad.clone()) else {
        bail!("the kernel should refuse a jump to a missing chain");
    };
    let named = &refusals[0].object;
    assert!(
        named.starts_with(&format!("add rule ip kube-proxy {}", svcs[1].chain())),
        "{named}"
    );
    assert_eq!(refusals[0].source.raw_os_error(), Some(2), "ENOENT");
    assert_eq!(list_ours(&ns)?, before, "nothing of it applied");
    assert!(syncer.needs_full_sync());

    // the next good sync is full and works
    let desired = services::table(&services(4));
    let next = ok(syncer.sync_partial(&mut sock, desired.clone()))?;
    assert!(next.full);
    assert_eq!(next.counts.chains_written, 1);
    assert!(!syncer.needs_full_sync());
    assert!(list_ours(&ns)?.contains(&services(4)[3].chain()));
    Ok(())
}

#[test]
fn our_table_deleted_by_hand_is_back_after_the_next_sync() -> Result<()> {
    let ns = netns("apdel")?;
    let other = other_table(&ns)?;
    let mut sock = socket(&ns)?;
    let mut syncer = Syncer::new(Family::Ip);
    let desired = services::table(&services(4));
    ok(syncer.sync_full(&mut sock, desired.clone()))?;
    let before = list_ours(&ns)?;

    nft(&ns, &["delete", "table", "ip", "kube-proxy"])?;
    let report = ok(syncer.sync_partial(&mut sock, desired.clone()))?;
    assert!(report.full, "a deleted table is detected: {report:?}");
    assert_eq!(report.counts.chains_written, 9);
    assert_eq!(list_ours(&ns)?, before, "the same table again");
    assert_eq!(nft(&ns, &["list", "table", "ip", "other"])?, other);
    Ok(())
}

#[test]
fn a_chain_added_to_our_table_by_hand_is_removed_by_a_full_sync() -> Result<()> {
    let ns = netns("apintr")?;
    let mut sock = socket(&ns)?;
    let mut syncer = Syncer::new(Family::Ip);
    let desired = services::table(&services(2));
    ok(syncer.sync_full(&mut sock, desired.clone()))?;

    // someone else's commit elsewhere: still partial, nothing written
    nft(&ns, &["add table ip elsewhere"])?;
    let r = ok(syncer.sync_partial(&mut sock, desired.clone()))?;
    assert!(!r.full && r.counts.is_empty(), "{r:?}");

    nft(
        &ns,
        &["add chain ip kube-proxy intruder; add rule ip kube-proxy intruder accept"],
    )?;
    let r = ok(syncer.sync_partial(&mut sock, desired.clone()))?;
    assert!(r.full, "a changed table is detected");
    assert_eq!((r.counts.chains_flushed, r.counts.chains_deleted), (1, 1));
    assert!(!list_ours(&ns)?.contains("intruder"));
    Ok(())
}

#[test]
fn a_cold_start_split_into_parts_builds_the_same_table() -> Result<()> {
    let ns = netns("apsplit")?;
    let mut sock = socket(&ns)?;
    let desired = services::table(&services(5));
    let mut whole = Syncer::for_table(Family::Ip, "kube-proxy");
    ok(whole.sync_full(&mut sock, desired.clone()))?;
    let text = list_ours(&ns)?;
    assert!(cleanup(&mut sock, Family::Ip)?);

    let mut split = Syncer::new(Family::Ip).with_max_anonymous_sets_per_transaction(2);
    let r = ok(split.sync_full(&mut sock, desired.clone()))?;
    assert_eq!(
        r.transactions, 4,
        "three staging parts and the final one: {r:?}"
    );
    assert_eq!(list_ours(&ns)?, text);
    assert!(ok(split.sync_full(&mut sock, desired))?.counts.is_empty());
    Ok(())
}

/// The staging parts of a split sync write only chains nothing reaches:
/// when the final part is refused, the verdict map traffic goes through is
/// as before, and the next full sync completes the table.
#[test]
fn a_split_sync_whose_final_part_is_refused_leaves_traffic_on_the_old_rules() -> Result<()> {
    let ns = netns("apstage")?;
    let mut sock = socket(&ns)?;
    let old = services(2);
    let mut syncer = Syncer::new(Family::Ip).with_max_anonymous_sets_per_transaction(2);
    ok(syncer.sync_full(&mut sock, services::table(&old)))?;
    let service_ips = |ns: &Netns| nft(ns, &["list", "map", "ip", "kube-proxy", "service-ips"]);
    let before = service_ips(&ns)?;

    let new = services(7);
    let mut refused = services::table(&new);
    // an element naming a chain that does not exist: refused in the final part
    let vmap = refused.elements.get_mut("service-ips").unwrap();
    vmap.push(Element::verdict(
        vec![
            Value::Ipv4("10.99.0.1".parse()?),
            Value::Proto(6),
            Value::Port(80),
        ],
        Verdict::Goto("no-such-chain".into()),
    ));
    let err = syncer.sync_full(&mut sock, refused).unwrap_err();
    assert!(
        err.to_string()
            .contains("add element ip kube-proxy service-ips"),
        "{err}"
    );
    assert_eq!(service_ips(&ns)?, before, "traffic still sees the old map");
    let staged = list_ours(&ns)?;
    assert!(
        staged.contains(&new[6].chain()),
        "the staging parts were applied:\n{staged}"
    );

    let r = ok(syncer.sync_full(&mut sock, services::table(&new)))?;
    assert!(r.full);
    let mut whole = Syncer::new(Family::Ip);
    let text = list_ours(&ns)?;
    assert!(cleanup(&mut sock, Family::Ip)?);
    ok(whole.sync_full(&mut sock, services::table(&new)))?;
    assert_eq!(
        text,
        list_ours(&ns)?,
        "as one transaction would have left it"
    );
    Ok(())
}

/// A lean cold start is sent in parts by a thread of its own while the
/// next part is built: a part the kernel refuses in the middle stops the
/// rest (the parts after it are never applied, so nothing reaches the
/// chains made so far) and names the object; the next sync completes the
/// table as one transaction would have made it.
#[test]
fn a_lean_cold_start_stops_at_its_first_refused_part() -> Result<()> {
    let ns = netns("aprefuse")?;
    let mut sock = socket(&ns)?;
    let lean = || {
        Syncer::new(Family::Ip)
            .without_applied_state()
            .with_max_anonymous_sets_per_transaction(2)
    };
    let svcs = services(9);
    let mut refused = services::table(&svcs);
    // service 4's rule names a set that does not exist: its part is refused
    let bad = refused
        .rules
        .iter_mut()
        .find(|r| r.chain == svcs[3].chain())
        .unwrap();
    let lookup = stmt::in_set(&[stmt::Field::IpSaddr], SetRef::named("no-such-set"), false);
    bad.exprs.splice(0..0, lookup);
    let err = lean().sync_full(&mut sock, refused).unwrap_err();
    assert!(
        err.to_string().contains(&format!("add rule ip kube-proxy {}", svcs[3].chain())),
        "{err}"
    );
    let staged = list_ours(&ns)?;
    let rule_of = |s: &Service| format!("chain {} {{\n\t\tmeta l4proto", s.chain());
    assert!(staged.contains(&rule_of(&svcs[0])), "the first parts were applied:\n{staged}");
    assert!(!staged.contains(&rule_of(&svcs[8])), "no part after the refused one:\n{staged}");
    assert!(
        !staged.contains("jump services"),
        "nothing reaches the chains made so far:\n{staged}"
    );

    let r = ok(lean().sync_full(&mut sock, services::table(&svcs)))?;
    assert!(r.full);
    let text = list_ours(&ns)?;
    assert!(cleanup(&mut sock, Family::Ip)?);
    ok(Syncer::new(Family::Ip).sync_full(&mut sock, services::table(&svcs)))?;
    assert_eq!(text, list_ours(&ns)?, "as one transaction would have left it");
    Ok(())
}

#[test]
fn a_full_sync_reads_back_without_dumping_anonymous_sets_of_known_content() -> Result<()> {
    let ns = netns("apknown")?;
    let mut sock = socket(&ns)?;
    let mut syncer = Syncer::new(Family::Ip);
    let mut svcs = services(20);
    ok(syncer.sync_full(&mut sock, services::table(&svcs)))?;
    svcs[3].endpoints.pop();
    ok(syncer.sync_partial(&mut sock, services::table(&svcs)))?;

    // listing everything dumps the elements of every set
    sock.capture();
    sock.list_table(Family::Ip, "kube-proxy")?;
    let dumped_all = sock.take_capture().len();

    // the same syncer knows the anonymous sets it wrote by name
    sock.capture();
    let r = ok(syncer.sync_full(&mut sock, services::table(&svcs)))?;
    let dumped_known = sock.take_capture().len();
    assert!(r.counts.is_empty(), "the kernel holds what we wrote: {r:?}");
    assert!(
        dumped_known + 20 <= dumped_all,
        "20 element dumps fewer: {dumped_known} vs {dumped_all} buffers"
    );

    // a new syncer (a restarted proxy) by their fingerprints
    let mut fresh = Syncer::new(Family::Ip);
    sock.capture();
    let r = ok(fresh.sync_full(&mut sock, services::table(&svcs)))?;
    let dumped_restart = sock.take_capture().len();
    assert!(r.counts.is_empty(), "{r:?}");
    assert!(
        dumped_restart + 20 <= dumped_all,
        "{dumped_restart} vs {dumped_all} buffers"
    );
    let text = list_ours(&ns)?;
    assert!(
        !text.contains("kube-proxy content"),
        "nft does not show fingerprints:\n{text}"
    );
    assert!(text.contains("numgen random mod 2 map { 0 : "), "{text}");

    // a fresh syncer with other endpoints for one service rewrites that
    // chain only (the fingerprint listed does not match what it wants)
    svcs[9].endpoints.push("10.244.77.7".parse()?);
    let r = ok(Syncer::new(Family::Ip).sync_full(&mut sock, services::table(&svcs)))?;
    assert_eq!(
        (r.counts.chains_flushed, r.counts.rules_written),
        (1, 1),
        "{r:?}"
    );

    // a rule made again by hand with other endpoints (the kernel names its
    // map itself) is read back and repaired
    let chain = svcs[5].chain();
    nft(&ns, &["flush", "chain", "ip", "kube-proxy", &chain])?;
    nft(
        &ns,
        &[&format!(
            "add rule ip kube-proxy {chain} meta l4proto tcp dnat ip to numgen random mod 3 map {{ 0 : 10.1.1.1 . 8080, 1 : 10.1.1.2 . 8080, 2 : 10.1.1.3 . 8080 }}"
        )],
    )?;
    let r = ok(syncer.sync_full(&mut sock, services::table(&svcs)))?;
    assert_eq!(
        (r.counts.chains_flushed, r.counts.rules_written),
        (1, 1),
        "{r:?}"
    );
    assert!(!list_ours(&ns)?.contains("10.1.1.1"));
    Ok(())
}

#[test]
fn an_ip6_table_syncs_beside_the_ip_one() -> Result<()> {
    let ns = netns("apip6")?;
    let mut sock = socket(&ns)?;
    let ip6 = |n: u16| Value::Ipv6(std::net::Ipv6Addr::new(0xfd00, 0x96, 0, 0, 0, 0, 0, n));
    let table6 = |ips: &[u16]| {
        let set =
            Set::new("cluster-ips", vec![DataType::Ipv6Addr]).with_comment("Active ClusterIPs");
        let mut t = TableContents {
            table: Table::new(Family::Ip6, "kube-proxy").with_comment("rules for kube-proxy"),
            chains: vec![Chain::regular("cluster-ips-check")],
            rules: vec![Rule::new(
                "cluster-ips-check",
                [
                    stmt::in_set(
                        &[stmt::Field::Ip6Daddr],
                        SetRef::named("cluster-ips"),
                        false,
                    ),
                    stmt::reject6(),
                ]
                .concat(),
            )],
            sets: vec![set],
            elements: Default::default(),
        };
        t.elements.insert(
            "cluster-ips".into(),
            ips.iter().map(|n| Element::new(vec![ip6(*n)])).collect(),
        );
        t
    };
    let mut v4 = Syncer::new(Family::Ip);
    let mut v6 = Syncer::new(Family::Ip6);
    ok(v4.sync_full(&mut sock, services::table(&services(2))))?;
    let r = ok(v6.sync_partial(&mut sock, table6(&[1, 2])))?;
    assert!(r.full && r.counts.elements_written == 2, "{r:?}");
    // the ip syncer's commit does not make the ip6 one full
    ok(v4.sync_partial(&mut sock, services::table(&services(3))))?;
    let r = ok(v6.sync_partial(&mut sock, table6(&[2, 3])))?;
    assert!(!r.full, "{r:?}");
    assert_eq!(
        (r.counts.elements_written, r.counts.elements_deleted),
        (1, 1)
    );
    let text = nft(&ns, &["list", "table", "ip6", "kube-proxy"])?;
    assert!(
        text.contains("fd00:96::2") && text.contains("fd00:96::3") && !text.contains("fd00:96::1"),
        "{text}"
    );
    assert!(
        ok(v6.sync_full(&mut sock, table6(&[2, 3])))?
            .counts
            .is_empty()
    );
    assert!(cleanup(&mut sock, Family::Ip6)?);
    assert!(
        list_ours(&ns)?.contains("service-ips"),
        "the ip table stays"
    );
    Ok(())
}

#[test]
fn endpoint_chains_behind_anonymous_verdict_maps_come_and_go() -> Result<()> {
    let ns = netns("apvmap")?;
    let mut sock = socket(&ns)?;
    let mut syncer = Syncer::new(Family::Ip);
    let mut svcs = services(4);
    let range = |a: &str, b: &str| -> Result<(std::net::Ipv4Addr, std::net::Ipv4Addr)> {
        Ok((a.parse()?, b.parse()?))
    };
    let allowed = vec![
        range("172.20.0.0", "172.20.0.16")?,
        range("192.168.86.0", "192.168.87.0")?,
    ];
    let first = ok(syncer.sync_full(
        &mut sock,
        services::table_with_endpoint_chains(&svcs, &allowed),
    ))?;
    assert_eq!(first.counts.chains_written, 5 + 4 + 12 + 1);
    let text = list_ours(&ns)?;
    assert!(
        text.contains("numgen random mod 3 vmap { 0 : goto endpoint-"),
        "{text}"
    );
    assert!(
        text.contains("ip saddr != { 172.20.0.0/28, 192.168.86.0/24 } drop"),
        "{text}"
    );
    // read back, the same table (interval set and verdict maps included)
    let again = ok(Syncer::new(Family::Ip).sync_full(
        &mut sock,
        services::table_with_endpoint_chains(&svcs, &allowed),
    ))?;
    assert!(again.counts.is_empty(), "{again:?}");

    // an endpoint goes: its chain is deleted after the map naming it
    let gone = svcs[2].endpoints.remove(1);
    let r = ok(syncer.sync_partial(
        &mut sock,
        services::table_with_endpoint_chains(&svcs, &allowed[..1]),
    ))?;
    assert!(!r.full);
    assert_eq!(
        (
            r.counts.chains_flushed,
            r.counts.chains_deleted,
            r.counts.rules_written
        ),
        (3, 1, 2),
        "service chain, firewall chain and the endpoint's chain flushed: {r:?}"
    );
    let text = list_ours(&ns)?;
    assert!(!text.contains(&format!("__{gone}/8080")), "{text}");
    assert!(
        text.contains("ip saddr != { 172.20.0.0/28 } drop"),
        "{text}"
    );
    assert!(
        ok(syncer.sync_full(
            &mut sock,
            services::table_with_endpoint_chains(&svcs, &allowed[..1])
        ))?
        .counts
        .is_empty()
    );
    Ok(())
}

#[test]
fn cleanup_removes_our_table_only() -> Result<()> {
    let ns = netns("apclean")?;
    let other = other_table(&ns)?;
    let mut sock = socket(&ns)?;
    assert!(!cleanup(&mut sock, Family::Ip)?, "nothing to remove yet");
    ok(Syncer::new(Family::Ip).sync_full(&mut sock, services::table(&services(2))))?;
    assert!(cleanup(&mut sock, Family::Ip)?);
    assert!(list_ours(&ns).is_err(), "our table is gone");
    assert!(!cleanup(&mut sock, Family::Ip)?);
    assert_eq!(nft(&ns, &["list", "table", "ip", "other"])?, other);
    Ok(())
}

/// A syncer that keeps nothing (nftables mode's) reads our table back
/// reduced to digests and diffs chain by chain: it still writes nothing
/// when nothing changed (without dumping the anonymous sets it made),
/// and repairs whatever someone else changed in our table.
#[test]
fn a_lean_full_sync_repairs_outside_changes_to_our_table() -> Result<()> {
    let ns = netns("aplean")?;
    let other = other_table(&ns)?;
    let mut sock = socket(&ns)?;
    let lean = || Syncer::new(Family::Ip).without_applied_state();
    let mut syncer = lean();
    let svcs = services(20);
    let desired = || services::table(&svcs);
    ok(syncer.sync_full(&mut sock, desired()))?;
    let text = list_ours(&ns)?;

    sock.capture();
    sock.list_table(Family::Ip, "kube-proxy")?;
    let dumped_all = sock.take_capture().len();
    sock.capture();
    let r = ok(syncer.sync_full(&mut sock, desired()))?;
    let dumped_reduced = sock.take_capture().len();
    assert!(r.full && r.counts.is_empty() && r.changes == 0, "{r:?}");
    // 20 element dumps fewer (the named sets are asked for by name, a
    // few requests, instead of the set dump)
    assert!(
        dumped_reduced + 15 <= dumped_all,
        "no anonymous set dumped: {dumped_reduced} vs {dumped_all} buffers"
    );
    // a restarted proxy too (it lists the sets: their fingerprints)
    sock.capture();
    assert!(
        ok(lean().sync_full(&mut sock, desired()))?
            .counts
            .is_empty()
    );
    let dumped_restart = sock.take_capture().len();
    assert!(
        dumped_restart + 15 <= dumped_all,
        "{dumped_restart} vs {dumped_all} buffers"
    );

    // a chain and a rule added, a rule of ours changed, an element gone,
    // an element added, a map remade by hand with other endpoints
    let (changed, remade) = (svcs[3].chain(), svcs[5].chain());
    nft(
        &ns,
        &[&format!(
            "add chain ip kube-proxy intruder; add rule ip kube-proxy intruder accept; \
             add rule ip kube-proxy {changed} counter accept; \
             delete element ip kube-proxy service-ips {{ {} . tcp . 80 }}; \
             add element ip kube-proxy cluster-ips {{ 10.99.9.9 }}; \
             flush chain ip kube-proxy {remade}; \
             add rule ip kube-proxy {remade} meta l4proto tcp dnat ip to numgen random mod 2 map {{ 0 : 10.1.1.1 . 8080, 1 : 10.1.1.2 . 8080 }}",
            svcs[7].ip
        )],
    )?;
    let r = ok(syncer.sync_full(&mut sock, desired()))?;
    assert_eq!(
        (
            r.counts.chains_flushed,
            r.counts.chains_deleted,
            r.counts.rules_written
        ),
        (3, 1, 2),
        "{r:?}"
    );
    assert_eq!(
        (r.counts.elements_written, r.counts.elements_deleted),
        (1, 1),
        "{r:?}"
    );
    assert_eq!(list_ours(&ns)?, text, "repaired");
    assert!(
        ok(syncer.sync_full(&mut sock, desired()))?
            .counts
            .is_empty()
    );

    // without listing the sets (all known): a chain, a named set and a rule
    // binding an anonymous set made by hand are seen all the same
    nft(&ns, &["add chain ip kube-proxy intruder2"])?;
    let r = ok(syncer.sync_full(&mut sock, desired()))?;
    assert_eq!(r.counts.chains_deleted, 1, "{r:?}");
    nft(
        &ns,
        &["add set ip kube-proxy intruder-set { type ipv4_addr; }"],
    )?;
    let r = ok(syncer.sync_full(&mut sock, desired()))?;
    assert_eq!(r.counts.sets_deleted, 1, "{r:?}");
    nft(
        &ns,
        &[&format!(
            "add rule ip kube-proxy {changed} ip saddr {{ 10.0.0.1, 10.0.0.2 }} accept"
        )],
    )?;
    let r = ok(syncer.sync_full(&mut sock, desired()))?;
    assert_eq!(
        (r.counts.chains_flushed, r.counts.rules_written),
        (1, 1),
        "{r:?}"
    );
    assert_eq!(list_ours(&ns)?, text, "repaired");

    // our table deleted: made again
    nft(&ns, &["delete", "table", "ip", "kube-proxy"])?;
    let r = ok(syncer.sync_full(&mut sock, desired()))?;
    assert!(r.counts.chains_written > 0, "{r:?}");
    assert_eq!(list_ours(&ns)?, text);
    assert_eq!(nft(&ns, &["list", "table", "ip", "other"])?, other);
    Ok(())
}
