//! The renderer and the applier together on the real kernel, in a fresh
//! network namespace, as nftables mode's proxier drives them: the
//! reference scenario's rendering, applied by the `Syncer`, lists as
//! upstream's `ruleset.nft`; full and partial syncs of the same rendering
//! write nothing (the renderer's `__kp-…` anonymous map names and the
//! applier's own names compare by content); one endpoint removed replaces
//! that service's rule and its `numgen` map — and nothing else — in a
//! partial sync, after which a fresh syncer's full sync finds
//! nothing to write.

#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(dead_code)] // the shared reference support has more than this test uses

#[path = "support/reference.rs"]
mod reference;

use anyhow::Result;
use model::{IpFamily, Snapshot};
use nftables::apply::{SyncReport, Syncer};
use nftables::render::render;
use nftables::{Family, NftSocket, TableContents};
use reference::*;
use std::sync::Arc;
use testkit::netns::Netns;

fn netns(label: &str) -> Result<Netns> {
    if let Some(why) = testkit::netns::unavailable() {
        panic!("{why}");
    }
    Netns::new(label)
}

fn contents(snapshot: &Snapshot) -> TableContents {
    let rendered = render(
        snapshot,
        &reference_options(IpFamily::V4),
        &reference_facts(),
    );
    rendered.ruleset.contents()
}

/// The reference snapshot with the last endpoint of the first service
/// port of internalTrafficPolicy Cluster that has more than two, all
/// ready, removed (it keeps a chain: a
/// port left with one might be DNATed straight from `services`); that
/// port's name.
fn one_endpoint_less(mut snapshot: Snapshot) -> (Snapshot, String) {
    let (name, endpoints) = snapshot
        .endpoints
        .iter()
        .find(|(name, eps)| {
            eps.len() > 2
                && eps.iter().all(|e| e.ready)
                && (snapshot.services.get(*name)).is_some_and(|s| !s.internal_policy_local)
        })
        .map(|(name, eps)| (name.clone(), eps.clone()))
        .expect("a service port with three ready endpoints");
    let mut fewer = endpoints.as_ref().clone();
    fewer.pop();
    snapshot.endpoints.insert(name.clone(), Arc::new(fewer));
    (snapshot, name.to_string())
}

#[test]
fn syncer_applies_the_rendering_writes_nothing_again_and_replaces_a_changed_map() -> Result<()> {
    let ns = netns("nftrapply")?;
    let mut socket = ns.run(NftSocket::connect)??;
    let mut syncer = Syncer::new(Family::Ip);
    let snapshot = reference_snapshot(IpFamily::V4);

    let first = syncer.sync_full(&mut socket, contents(&snapshot))?;
    assert!(first.changes > 0, "{first:?}");
    let listed = ns.exec("nft", &["list", "table", "ip", "kube-proxy"])?;
    let diff = differences(&listed, &reference_table("ip"));
    assert!(
        diff.is_empty(),
        "applied table differs from upstream:\n{}",
        diff.join("\n")
    );

    let again: SyncReport = syncer.sync_full(&mut socket, contents(&snapshot))?;
    assert_eq!(
        again.changes, 0,
        "a full sync of the same rendering wrote: {:?}",
        again.counts
    );
    let partial = syncer.sync_partial(&mut socket, contents(&snapshot))?;
    assert!(!partial.full && partial.changes == 0, "{partial:?}");

    let (changed, port) = one_endpoint_less(snapshot);
    let replaced = syncer.sync_partial(&mut socket, contents(&changed))?;
    assert!(!replaced.full, "{replaced:?}");
    // the endpoint leaves its range of the shared endpoint map: elements
    // only, no rule rewritten, no chain or set touched (upstream v1.36
    // rewrites the rule and its anonymous map)
    assert_eq!(
        (
            replaced.counts.chains_flushed,
            replaced.counts.rules_written,
            replaced.counts.anonymous_sets_written,
            replaced.counts.sets_written,
        ),
        (0, 0, 0, 0),
        "{port}: {:?}",
        replaced.counts
    );
    assert!(
        replaced.counts.elements_written >= 1 && replaced.counts.elements_deleted >= 1,
        "{port}: the slot's ranges were not replaced: {:?}",
        replaced.counts
    );
    let listed = ns.exec("nft", &["list", "table", "ip", "kube-proxy"])?;
    let rendered_text = render(
        &changed,
        &reference_options(IpFamily::V4),
        &reference_facts(),
    )
    .ruleset
    .to_nft_text();
    let diff = differences(&listed, &as_upstream(&rendered_text));
    assert!(
        diff.is_empty(),
        "{port}: the kernel's table differs from the rendering:\n{}",
        diff.join("\n")
    );

    // A restarted proxy: a fresh syncer reads the table back and agrees.
    let mut fresh = Syncer::new(Family::Ip);
    let restart = fresh.sync_full(&mut socket, contents(&changed))?;
    assert_eq!(
        restart.changes, 0,
        "a fresh full sync found differences: {:?}",
        restart.counts
    );
    Ok(())
}

/// A cold start as the proxier sends it: the reference rendering typed
/// chain by chain and sent in parts of at most one anonymous set
/// (`Syncer::sync_full_in_pieces`) lists as upstream's table, and a full
/// sync of the whole rendering then finds nothing to write. With our
/// table present, the same call is an ordinary full sync.
#[test]
fn a_cold_start_sent_in_pieces_lists_as_upstream_and_needs_nothing_more() -> Result<()> {
    let ns = netns("nftpieces")?;
    let mut socket = ns.run(NftSocket::connect)??;
    let mut syncer = Syncer::new(Family::Ip)
        .without_applied_state()
        .with_max_anonymous_sets_per_transaction(1);
    let snapshot = reference_snapshot(IpFamily::V4);
    let rendered = || {
        render(
            &snapshot,
            &reference_options(IpFamily::V4),
            &reference_facts(),
        )
        .ruleset
    };

    let (skeleton, pieces) = rendered().into_pieces();
    let first = syncer.sync_full_in_pieces(&mut socket, skeleton, &[], pieces)?;
    // two anonymous sets left (the affinity service's verdict maps)
    assert!(first.full && first.transactions >= 2, "{first:?}");
    let listed = ns.exec("nft", &["list", "table", "ip", "kube-proxy"])?;
    let diff = differences(&listed, &reference_table("ip"));
    assert!(
        diff.is_empty(),
        "table sent in pieces differs from upstream:\n{}",
        diff.join("\n")
    );

    let again = Syncer::new(Family::Ip).sync_full(&mut socket, rendered().contents())?;
    assert_eq!(
        again.changes, 0,
        "after the pieces a full sync wrote: {:?}",
        again.counts
    );
    let (skeleton, pieces) = rendered().into_pieces();
    let present = syncer.sync_full_in_pieces(&mut socket, skeleton, &[], pieces)?;
    assert!(present.full && present.changes == 0, "{present:?}");
    Ok(())
}
