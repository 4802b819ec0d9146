//! The reference comparison on the real kernel, in fresh network
//! namespaces: the rendered tables sent with `NftSocket` list (`nft list
//! table`) as upstream's `ruleset.nft`, element order and the order of
//! per-service chains aside; they read back over netlink as rendered;
//! and the `nft -f` text, loaded by `nft`, lists the same.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/create.rs"]
mod create;
#[path = "support/reference.rs"]
mod reference;

use anyhow::{Result, bail};
use model::IpFamily;
use nftables::{Expr, Family, NftSocket, Rule, Set, TableContents};
use reference::*;
use testkit::netns::Netns;

fn netns(label: &str) -> Result<Netns> {
    if let Some(why) = testkit::netns::unavailable() {
        panic!("{why}");
    }
    Netns::new(label)
}

fn send(ns: &Netns, contents: &TableContents) -> Result<()> {
    let tx = create::create_all(contents);
    let result = ns.run(move || NftSocket::connect().and_then(|mut s| s.apply(&tx)))?;
    if let Err(e) = result {
        bail!("{e}");
    }
    Ok(())
}

fn nft_list(ns: &Netns, family: &str) -> Result<String> {
    ns.exec("nft", &["list", "table", family, "kube-proxy"])
}

fn assert_lists_as_reference(ns: &Netns, family: &str) -> Result<()> {
    let listed = nft_list(ns, family)?;
    let diff = differences(&listed, &reference_table(family));
    assert!(
        diff.is_empty(),
        "{family}: {} differences from upstream:\n{}",
        diff.len(),
        diff.join("\n")
    );
    Ok(())
}

#[test]
fn rendered_tables_list_as_upstreams_ruleset() -> Result<()> {
    let ns = netns("nftrender")?;
    send(&ns, &render_reference(IpFamily::V4).ruleset.contents())?;
    send(&ns, &render_reference(IpFamily::V6).ruleset.contents())?;
    assert_lists_as_reference(&ns, "ip")?;
    assert_lists_as_reference(&ns, "ip6")
}

/// Rules without handles; sets without ids.
fn plain(mut c: TableContents) -> TableContents {
    c.rules.iter_mut().for_each(|r: &mut Rule| r.handle = None);
    c.sets.iter_mut().for_each(|s: &mut Set| s.id = None);
    for elements in c.elements.values_mut() {
        elements.sort_by_key(|e| format!("{e:?}"));
    }
    c
}

#[test]
fn rendered_tables_read_back_over_netlink_as_rendered() -> Result<()> {
    let ns = netns("nftrback")?;
    for family in [IpFamily::V4, IpFamily::V6] {
        let contents = render_reference(family).ruleset.contents();
        send(&ns, &contents)?;
        let nf = contents.table.family;
        let got = ns
            .run(move || NftSocket::connect().and_then(|mut s| s.list_table(nf, "kube-proxy")))??
            .expect("our table");
        let (got, want) = (plain(got), plain(contents));
        assert_eq!(got.table, want.table);
        assert_eq!(got.chains, want.chains);
        assert_eq!(got.rules.len(), want.rules.len());
        for (g, w) in got.rules.iter().zip(&want.rules) {
            assert_eq!(g, w);
        }
        let mut got_sets = got.sets.clone();
        let mut want_sets = want.sets.clone();
        got_sets.sort_by(|a, b| a.name.cmp(&b.name));
        want_sets.sort_by(|a, b| a.name.cmp(&b.name));
        assert_eq!(got_sets, want_sets);
        assert_eq!(got.elements, want.elements);
        // the anonymous maps are ours by name
        assert!(
            got.rules
                .iter()
                .flat_map(|r| &r.exprs)
                .any(|e| matches!(e, Expr::Lookup { set, .. } if set.name.starts_with("__kp-")))
                == (nf == Family::Ip)
        );
    }
    Ok(())
}

#[test]
fn nft_accepts_the_printed_text_and_lists_the_same() -> Result<()> {
    let ns = netns("nfttext")?;
    for family in [IpFamily::V4, IpFamily::V6] {
        let text = render_reference(family).ruleset.to_nft_text();
        let path =
            std::env::temp_dir().join(format!("nftrender-{}-{family:?}.nft", std::process::id()));
        std::fs::write(&path, &text)?;
        let loaded = ns.exec("nft", &["-f", path.to_str().unwrap()]);
        std::fs::remove_file(&path)?;
        loaded?;
    }
    assert_lists_as_reference(&ns, "ip")?;
    assert_lists_as_reference(&ns, "ip6")
}

/// Replacing a balancing rule in one transaction (delete the old rule,
/// add the new one with its map under the same name of ours) is accepted:
/// the kernel frees the old anonymous map's name with its rule. This is
/// what lets the renderer name anonymous maps by chain, stably.
#[test]
fn a_rule_and_its_named_anonymous_map_can_be_replaced_in_one_transaction() -> Result<()> {
    use nftables::{Op, SetFlags, SetRef, Transaction};
    let ns = netns("nftreplace")?;
    let chain = "service-QCNCQR2N-storefront/catalog/tcp/http";
    // the chain picks its endpoint upstream's way, from an anonymous map
    let mut rendered = render_reference(IpFamily::V4).ruleset;
    rendered
        .chains
        .iter_mut()
        .find(|c| c.chain.name == chain)
        .unwrap()
        .rules[0]
        .stmts[1] = nftables::render::Stmt::DnatNumgenMap {
        family: Family::Ip,
        targets: vec![
            ("10.244.1.13".parse().unwrap(), 8080),
            ("10.244.2.13".parse().unwrap(), 8080),
        ],
    };
    send(&ns, &rendered.contents())?;
    let current = ns
        .run(|| NftSocket::connect().and_then(|mut s| s.list_table(Family::Ip, "kube-proxy")))??
        .expect("our table");
    let old = current
        .rules_of(chain)
        .next()
        .expect("the dnat rule")
        .clone();

    // one more endpoint: the same rule shape with a three-element map
    let mut changed = rendered.clone();
    let stmts = &mut changed
        .chains
        .iter_mut()
        .find(|c| c.chain.name == chain)
        .unwrap()
        .rules[0]
        .stmts;
    if let nftables::render::Stmt::DnatNumgenMap { targets, .. } = &mut stmts[1] {
        targets.push(("10.244.3.13".parse().unwrap(), 8080));
    }
    let contents = changed.contents();
    let new_rule = contents.rules_of(chain).next().unwrap().clone();
    let map = contents
        .sets
        .iter()
        .find(|s| {
            s.flags.contains(SetFlags::ANONYMOUS)
                && s.name == nftables::render::anonymous_set_name(chain, 0)
        })
        .unwrap()
        .clone();
    let mut tx = Transaction::new(Family::Ip, "kube-proxy");
    tx.push(Op::DeleteRule {
        chain: chain.into(),
        handle: old.handle.unwrap(),
    });
    tx.push(Op::AddSet(map.clone()));
    tx.push(Op::AddElements {
        set: SetRef::to_set(&map),
        elements: contents.elements[&map.name].clone(),
    });
    tx.push(Op::AddRule(new_rule));
    let result = ns.run(move || NftSocket::connect().and_then(|mut s| s.apply(&tx)))?;
    if let Err(e) = result {
        bail!("{e}");
    }
    let listed = nft_list(&ns, "ip")?;
    assert!(listed.contains("dnat ip to numgen random mod 3 map { 0 : 10.244.1.13 . 8080, 1 : 10.244.2.13 . 8080, 2 : 10.244.3.13 . 8080 }"), "{listed}");
    assert!(!listed.contains("numgen random mod 2 map { 0 : 10.244.1.13"));
    Ok(())
}

/// `BridgeInterface` and `InterfaceNamePrefix` (upstream's `iifname`
/// matches): the reference scenario rendered with each loads over netlink
/// and as `nft -f` text, lists the detector where the CIDR was, and reads
/// back over netlink as rendered.
#[test]
fn interface_detection_loads_and_lists_as_iifname() -> Result<()> {
    use nftables::render::render;
    use plan::LocalDetection;
    let cases = [
        (LocalDetection::BridgeInterface("cbr0".into()), "\"cbr0\""),
        (
            LocalDetection::InterfaceNamePrefix("veth".into()),
            "\"veth*\"",
        ),
    ];
    for (i, (detection, iface)) in cases.into_iter().enumerate() {
        for family in [IpFamily::V4, IpFamily::V6] {
            let mut opts = reference_options(family);
            opts.common.local_detection = detection.clone();
            let rendered = render(&reference_snapshot(family), &opts, &reference_facts()).ruleset;
            let (nf, name) = if family == IpFamily::V4 {
                (Family::Ip, "ip")
            } else {
                (Family::Ip6, "ip6")
            };
            let ns = netns(&format!("nftif{i}{name}"))?;
            let contents = rendered.contents();
            send(&ns, &contents)?;
            let listed = nft_list(&ns, name)?;
            let masq = format!(
                "{name} daddr @cluster-ips iifname != {iface} meta mark set meta mark | 0x00004000 comment \"masquerade clusterIP traffic from outside cluster\""
            );
            assert!(listed.contains(&masq), "{masq}\nnot in\n{listed}");
            if family == IpFamily::V4 {
                let pods = format!("iifname {iface} goto service-");
                assert!(listed.contains(&pods), "{pods}\nnot in\n{listed}");
                assert!(listed.contains("comment \"short-circuit pod traffic\""));
            }
            assert!(!listed.contains("saddr != 10.244.0.0/16"));
            let got = ns
                .run(move || {
                    NftSocket::connect().and_then(|mut s| s.list_table(nf, "kube-proxy"))
                })??
                .expect("our table");
            assert_eq!(
                plain(got).rules,
                plain(contents).rules,
                "read back as rendered"
            );

            let text_ns = netns(&format!("nftift{i}{name}"))?;
            let path =
                std::env::temp_dir().join(format!("nftif-{}-{i}-{name}.nft", std::process::id()));
            std::fs::write(&path, rendered.to_nft_text())?;
            let loaded = text_ns.exec("nft", &["-f", path.to_str().unwrap()]);
            std::fs::remove_file(&path)?;
            loaded?;
            assert!(
                nft_list(&text_ns, name)?.contains(&masq),
                "the text lists the same"
            );
        }
    }
    Ok(())
}
