//! The reference comparison, pure: the upstream v1.36 corpus scenario
//! rendered by the nftables renderer prints (as `nft -f` text) the
//! reference `ruleset.nft`, element order and the order of per-service
//! chains aside; the same text is kept as an insta golden.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/reference.rs"]
mod reference;

use model::IpFamily;
use nftables::render::render;
use reference::*;

#[test]
fn ipv4_table_prints_as_upstreams_ruleset() {
    let ours = render_reference(IpFamily::V4).ruleset.to_nft_text();
    // The default shape: shared endpoint maps, no anonymous `numgen` map,
    // single-endpoint ClusterIP-only ports without a chain.
    assert!(ours.contains("\tmap service-endpoints-") && ours.contains("map @service-endpoints-"));
    assert!(ours.contains("dnat ip to ip daddr . meta l4proto . th dport map @service-ips-direct"));
    assert!(!ours.contains("chain service-2QRHZV4L-default/kubernetes/tcp/https"));
    assert!(!ours.contains("numgen random mod 2 map {"));
    let diff = differences(&ours, &reference_table("ip"));
    assert!(
        diff.is_empty(),
        "{} differences from upstream:\n{}",
        diff.len(),
        diff.join("\n")
    );
}

#[test]
fn with_the_flag_off_the_table_prints_as_upstreams_ruleset_as_it_is() {
    let mut opts = reference_options(IpFamily::V4);
    opts.shared_endpoint_maps = false;
    let ours = render(&reference_snapshot(IpFamily::V4), &opts, &reference_facts())
        .ruleset
        .to_nft_text();
    assert!(!ours.contains("map service-endpoints-") && !ours.contains("map @service-endpoints-"));
    assert!(!ours.contains("service-ips-direct"));
    assert_eq!(normalize(&as_upstream(&ours)), normalize(&ours));
    let diff = differences(&ours, &reference_table("ip"));
    assert!(diff.is_empty(), "{}", diff.join("\n"));
}

#[test]
fn ipv6_table_prints_as_upstreams_ruleset() {
    let ours = render_reference(IpFamily::V6).ruleset.to_nft_text();
    let diff = differences(&ours, &reference_table("ip6"));
    assert!(
        diff.is_empty(),
        "{} differences from upstream:\n{}",
        diff.len(),
        diff.join("\n")
    );
}

#[test]
fn nft_text_golden() {
    insta::assert_snapshot!(
        "reference_ip",
        render_reference(IpFamily::V4).ruleset.to_nft_text()
    );
    insta::assert_snapshot!(
        "reference_ip6",
        render_reference(IpFamily::V6).ruleset.to_nft_text()
    );
}

#[test]
fn no_local_endpoint_counts_match_upstream() {
    let v4 = render_reference(IpFamily::V4).no_local_endpoints;
    assert_eq!((v4.internal, v4.external), (1, 2));
    let v6 = render_reference(IpFamily::V6).no_local_endpoints;
    assert_eq!((v6.internal, v6.external), (0, 0));
}

#[test]
fn the_comparison_notices_a_changed_element_and_a_missing_chain() {
    let ours = render_reference(IpFamily::V4).ruleset.to_nft_text();
    let changed = ours.replace("10.244.2.13 . 8080", "10.244.2.14 . 8080");
    assert_eq!(differences(&changed, &reference_table("ip")).len(), 2);
    let mut rendered = render_reference(IpFamily::V4).ruleset;
    rendered
        .chains
        .retain(|c| !c.chain.name.starts_with("firewall-"));
    assert!(!differences(&rendered.to_nft_text(), &reference_table("ip")).is_empty());
}

#[test]
fn the_reference_holds_what_its_readme_counts() {
    // "table ip kube-proxy: 48 chains, 77 rules, 6 sets, 5 maps, 70 set/map
    // elements", and ours the shared endpoint map besides: one range (a
    // start and an end marker) per endpoint of each balancing chain, where
    // upstream's anonymous maps hold one element each
    // Ours also sends the ClusterIP-only single-endpoint ports
    // (storefront/reviews, default/kubernetes) straight to their endpoint
    // through `service-ips-direct`: a chain and its rule fewer each, their
    // `service-ips` element moved there, one fixed rule more.
    let ip = render_reference(IpFamily::V4).ruleset;
    let ours = |name: &str| name.starts_with("service-endpoints-") || name == "service-ips-direct";
    let (shared, upstreams): (Vec<_>, Vec<_>) = ip.sets.iter().partition(|s| ours(&s.set.name));
    let direct = ip
        .set("service-ips-direct")
        .expect("the direct map")
        .elements
        .len();
    assert_eq!(direct, 2);
    let rules: usize = ip.chains.iter().map(|c| c.rules.len()).sum();
    let elements: usize = upstreams.iter().map(|s| s.elements.len()).sum();
    let maps = upstreams.iter().filter(|s| s.set.data.is_some()).count();
    assert_eq!(
        (
            ip.chains.len() + direct,
            rules + direct - 1,
            upstreams.len() - maps,
            maps,
            elements + direct
        ),
        (48, 77, 6, 5, 70)
    );
    let upstream_text = as_upstream(&ip.to_nft_text());
    let picked = upstream_text.matches(" . ").count() - ours_other_pairs(&upstream_text);
    // the direct map and the endpoint maps, 16 ports each
    let endpoint_maps: Vec<_> = shared
        .iter()
        .filter(|s| s.set.name.starts_with("service-endpoints-"))
        .collect();
    assert_eq!(shared.len(), 1 + endpoint_maps.len());
    assert_eq!(endpoint_maps.len(), 2);
    let slotted: usize = endpoint_maps.iter().map(|s| s.elements.len()).sum();
    assert_eq!(slotted, 2 * (picked - direct));
    let ip6 = render_reference(IpFamily::V6).ruleset;
    let rules: usize = ip6.chains.iter().map(|c| c.rules.len()).sum();
    assert_eq!(
        (ip6.chains.len(), rules, ip6.sets.len()),
        (15, 21, 8),
        "no balancing chain in the IPv6 scenario (ours: the direct rule and map besides)"
    );
}

/// The ` . ` pairs of `text` outside the balancing rules' maps.
fn ours_other_pairs(text: &str) -> usize {
    text.lines()
        .filter(|l| !l.contains("to numgen random mod"))
        .map(|l| l.matches(" . ").count())
        .sum()
}

#[test]
fn a_lean_rendering_gives_the_pieces_of_the_whole_table() {
    use nftables::TableContents;
    use nftables::render::endpoint_slots::map_name;
    use nftables::render::{RenderContext, Slots, render_lean, slots_in_order};
    for family in [IpFamily::V4, IpFamily::V6] {
        let snap = reference_snapshot(family);
        let ctx = RenderContext::new(&snap, &reference_options(family), &reference_facts());
        let whole = render_reference(family);
        let slots = slots_in_order(&snap, &ctx);
        let maps = slots.maps() as usize;
        assert!(maps > 0 || family == IpFamily::V6, "no endpoint map");
        let lean = render_lean(&snap, &ctx, Slots::of(&slots));
        assert_eq!(
            lean.selected.rendered.no_local_endpoints,
            whole.no_local_endpoints
        );
        let in_parts = lean.sets_in_parts();
        assert!(in_parts.iter().any(|s| s == "service-ips"), "{in_parts:?}");
        let (skeleton, pieces) = lean.into_pieces();
        let (whole_skeleton, whole_pieces) = whole.ruleset.into_pieces();
        let pieces: Vec<_> = pieces.collect();
        let whole_pieces: Vec<_> = whole_pieces.collect();
        // the endpoint maps: declared, their elements in a piece each, last
        for n in 0..maps as u32 {
            assert!(skeleton.sets.iter().any(|s| s.name == map_name(n)));
            assert!(!skeleton.elements.contains_key(&map_name(n)));
        }
        let (rest, map_pieces) = pieces.split_at(pieces.len() - maps);
        for (n, piece) in map_pieces.iter().enumerate() {
            assert!(piece.chains.is_empty() && piece.rules.is_empty() && piece.sets.is_empty());
            assert!(!piece.elements[&map_name(n as u32)].is_empty(), "map {n}");
        }
        // the shared sets: declared, their elements in pieces of elements
        // only among the chains', the last naming every one
        for set in &in_parts {
            assert!(skeleton.sets.iter().any(|s| s.name == *set), "{set}");
            assert!(!skeleton.elements.contains_key(set), "{set}");
        }
        let (chains, shared): (Vec<_>, Vec<_>) =
            rest.iter().partition(|piece| !piece.chains.is_empty());
        for piece in &shared {
            assert!(piece.rules.is_empty() && piece.sets.is_empty());
            assert!(piece.elements.keys().all(|set| in_parts.contains(set)));
        }
        let last = rest.last().expect("pieces");
        assert!(in_parts.iter().all(|set| last.elements.contains_key(set)));
        if family == IpFamily::V4 {
            assert!(
                chains.iter().any(|p| !p.sets.is_empty()),
                "no anonymous set"
            );
            assert!(chains.len() > 40, "{} pieces", chains.len());
        }
        let chains: Vec<TableContents> = chains.into_iter().cloned().collect();
        assert_eq!(chains, whole_pieces[..], "{family:?}");
        // the same table, but for the order of the shared sets' elements
        let sorted = |mut table: TableContents| {
            for elements in table.elements.values_mut() {
                elements.sort_by_key(|e| format!("{e:?}"));
            }
            table
        };
        let lean = sorted(TableContents::from_pieces(skeleton, pieces.into_iter()));
        let whole = sorted(TableContents::from_pieces(
            whole_skeleton,
            whole_pieces.into_iter(),
        ));
        if family == IpFamily::V4 {
            for set in ["service-ips", "cluster-ips"] {
                assert!(!whole.elements[set].is_empty(), "{set} empty");
            }
        }
        assert_eq!(lean, whole, "{family:?}");
    }
}
