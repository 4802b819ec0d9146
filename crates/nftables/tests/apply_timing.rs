//! Timing probe (ignored by default, printed, not asserted): services
//! shaped like upstream's — per service a chain with a `numgen` DNAT map
//! and a `service-ips` verdict-map element — programmed by a full sync
//! from nothing, then one element change and one endpoint change as
//! partial syncs. Prints our own time beside the kernel's.
//!
//! `APPLY_PROBE_SERVICES=n` (default 10,000) and `APPLY_PROBE_ENDPOINTS`
//! (default 10) change the size, `APPLY_PROBE_SPLIT` the anonymous sets
//! per transaction of the cold start (default 1,000; 0: one transaction):
//! `cargo test -p nftables --release --test apply_timing -- --ignored --nocapture`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/apply_services.rs"]
mod services;

use anyhow::{Result, bail};
use nftables::apply::{SyncReport, Syncer};
use nftables::*;
use services::Service;
use std::time::Instant;

fn env(name: &str, default: u32) -> u32 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn print(what: &str, r: &SyncReport) {
    println!(
        "apply timing probe: {what}: total {:?} = kernel {:?} + read back {:?} + ours {:?}; {} changes in {} transaction(s), {:?}",
        r.total,
        r.kernel,
        r.read_back,
        r.own(),
        r.changes,
        r.transactions,
        r.counts
    );
}

#[test]
#[ignore = "tens of seconds of kernel time at 10,000 services; run with --ignored"]
fn timing_probe_full_then_partial() -> Result<()> {
    if let Some(why) = testkit::netns::unavailable() {
        panic!("{why}");
    }
    let ns = testkit::netns::Netns::new("aptime")?;
    let mut sock = ns.run(NftSocket::connect)??;
    let (n, per) = (
        env("APPLY_PROBE_SERVICES", 10_000),
        env("APPLY_PROBE_ENDPOINTS", 10),
    );
    let mut svcs: Vec<Service> = (1..=n).map(|i| Service::numbered(i, per)).collect();
    let mut syncer = Syncer::new(Family::Ip);
    let split = env("APPLY_PROBE_SPLIT", 1000);
    if split > 0 {
        syncer = syncer.with_max_anonymous_sets_per_transaction(split as usize);
    }

    let t = Instant::now();
    let desired = services::table(&svcs);
    let render = t.elapsed();
    println!(
        "apply timing probe: {n} services x {per} endpoints (desired table built in {render:?})"
    );
    let report = match syncer.sync_full(&mut sock, desired.clone()) {
        Ok(r) => r,
        Err(e) => bail!("{e}"),
    };
    print("full sync from nothing", &report);

    let report = match syncer.sync_full(&mut sock, desired.clone()) {
        Ok(r) => r,
        Err(e) => bail!("{e}"),
    };
    print("full sync, nothing changed (read back + diff)", &report);

    let report = match Syncer::new(Family::Ip).sync_full(&mut sock, desired.clone()) {
        Ok(r) => r,
        Err(e) => bail!("{e}"),
    };
    print(
        "full sync by a new syncer (restart), nothing changed",
        &report,
    );

    // one verdict-map element changes
    let mut changed = desired.clone();
    let moved = svcs[n as usize / 2].vmap_element();
    let vmap = changed.elements.get_mut("service-ips").unwrap();
    let at = vmap.iter().position(|e| *e == moved).unwrap();
    vmap[at].data = Some(ElementData::Verdict(Verdict::Goto(svcs[0].chain())));
    let report = match syncer.sync_partial(&mut sock, changed.clone()) {
        Ok(r) => r,
        Err(e) => bail!("{e}"),
    };
    print("partial sync, one element changed", &report);

    // one endpoint more for one service
    svcs[1].endpoints.push("10.250.0.1".parse()?);
    let desired = services::table(&svcs);
    let report = match syncer.sync_partial(&mut sock, desired.clone()) {
        Ok(r) => r,
        Err(e) => bail!("{e}"),
    };
    print("partial sync, one endpoint added", &report);
    Ok(())
}

/// The diff alone, no kernel: two tables of `APPLY_PROBE_SERVICES`
/// services that differ in one element.
#[test]
#[ignore = "timing probe; run with --ignored --nocapture"]
fn timing_probe_pure_diff() {
    let (n, per) = (
        env("APPLY_PROBE_SERVICES", 10_000),
        env("APPLY_PROBE_ENDPOINTS", 10),
    );
    let svcs: Vec<Service> = (1..=n).map(|i| Service::numbered(i, per)).collect();
    let current = services::table(&svcs);
    let mut desired = current.clone();
    desired.elements.get_mut("cluster-ips").unwrap().pop();
    let t = Instant::now();
    let clone = current.clone();
    let cloned = t.elapsed();
    drop(clone);
    let t = Instant::now();
    let tx = nftables::apply::diff(&desired, Some(&current));
    println!(
        "apply timing probe: pure diff of {n} x {per} services: {:?} ({} changes; one clone of a table takes {cloned:?}, the diff clones both)",
        t.elapsed(),
        tx.ops.len()
    );
}

/// Reading back a table of `APPLY_PROBE_SERVICES` services: the kernel's
/// share (requests and dumps) against ours (decoding the captured bytes).
#[test]
#[ignore = "timing probe; run with --ignored --nocapture"]
fn timing_probe_read_back() -> Result<()> {
    if let Some(why) = testkit::netns::unavailable() {
        panic!("{why}");
    }
    let ns = testkit::netns::Netns::new("aplist")?;
    let mut sock = ns.run(NftSocket::connect)??;
    let (n, per) = (
        env("APPLY_PROBE_SERVICES", 10_000),
        env("APPLY_PROBE_ENDPOINTS", 10),
    );
    let svcs: Vec<Service> = (1..=n).map(|i| Service::numbered(i, per)).collect();
    let mut syncer = Syncer::new(Family::Ip).with_max_anonymous_sets_per_transaction(1000);
    if let Err(e) = syncer.sync_full(&mut sock, services::table(&svcs)) {
        bail!("{e}");
    }
    sock.capture();
    let t = Instant::now();
    let listed = sock.list_table(Family::Ip, "kube-proxy")?;
    let list = t.elapsed();
    let captured = sock.take_capture();
    let t = Instant::now();
    let decoded = TableContents::decode(Family::Ip, "kube-proxy", &captured)?;
    let decode = t.elapsed();
    assert_eq!(listed, decoded);
    println!(
        "apply timing probe: read back {n} x {per} services: {list:?} in all, of which decoding {decode:?} ({} buffers, {} bytes)",
        captured.len(),
        captured.iter().map(Vec::len).sum::<usize>()
    );
    Ok(())
}
