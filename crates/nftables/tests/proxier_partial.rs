//! nftables mode's proxier on the real kernel, in a fresh network
//! namespace: after a first full sync, a long run of random changes to a
//! few services at a time (endpoints, ports, NodePorts, external IPs
//! shared between services, load balancers with source ranges, affinity,
//! traffic policies, local endpoints shared between services' hairpin
//! sets, services added and deleted), each synced partially with the
//! change set naming the changed services only. After every sync our
//! table, read back, diffs as equal to a full rendering of the snapshot;
//! most syncs are partial (those whose external IP is also another
//! service's fall back to full), and a sync with nothing changed writes
//! nothing.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use anyhow::Result;
use model::{ChangeSet, ServiceName, Snapshot};
use nftables::proxier::{NftablesProxier, ProxierOptions};
use nftables::render::{
    EndpointSlots, RenderContext, RenderOptions, Services, Slots, render_services,
};
use nftables::{Family, NftSocket, apply};
use plan::NodeFacts;
use proxier::Proxier;
use std::collections::{BTreeMap, BTreeSet};
use testkit::builders::*;
use testkit::netns::Netns;

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }
}

/// One service as the test varies it.
#[derive(Debug, Clone)]
struct Def {
    ports: u16,
    node_port: bool,
    external: Option<u8>,
    load_balancer: bool,
    affinity: bool,
    etp_local: bool,
    itp_local: bool,
    /// (pod, local, ready)
    endpoints: Vec<(u16, bool, bool)>,
}

/// Up to four endpoints, each pod once (a pod's local endpoint may be
/// another service's too: their hairpin elements are shared).
fn random_endpoints(rng: &mut Rng) -> Vec<(u16, bool, bool)> {
    let mut endpoints: Vec<(u16, bool, bool)> = (0..rng.below(5))
        .map(|_| (1 + rng.below(12) as u16, rng.chance(3), !rng.chance(5)))
        .collect();
    endpoints.sort_by_key(|e| e.0);
    endpoints.dedup_by_key(|e| e.0);
    endpoints
}

fn random_def(rng: &mut Rng) -> Def {
    Def {
        ports: 1 + rng.below(2) as u16,
        node_port: rng.chance(2),
        external: rng.chance(5).then(|| 1 + rng.below(8) as u8),
        load_balancer: rng.chance(4),
        affinity: rng.chance(4),
        etp_local: rng.chance(3),
        itp_local: rng.chance(5),
        endpoints: random_endpoints(rng),
    }
}

fn snapshot_of(defs: &BTreeMap<u16, Def>) -> Snapshot {
    let mut builder = snapshot();
    for (i, def) in defs {
        for p in 0..def.ports {
            let mut port = tcp_port(
                "ns",
                &format!("svc{i}"),
                &format!("p{p}"),
                cluster_ip(*i),
                80 + p,
            );
            if def.node_port {
                port = port.node_port(30000 + i * 2 + p);
            }
            if let Some(n) = def.external {
                port = port.external_ip(external_ip(n));
            }
            if def.load_balancer {
                port = port.lb_ip(lb_ip(*i as u8)).source_range("203.0.113.0/24");
            }
            if def.affinity {
                port = port.affinity(10800);
            }
            if def.etp_local {
                port = port.etp_local();
            }
            if def.itp_local {
                port = port.itp_local();
            }
            let endpoints: Vec<_> = def
                .endpoints
                .iter()
                .map(|&(pod, local, ready)| {
                    let mut ep = endpoint(pod_ip(pod), 8080);
                    if local {
                        ep = ep.local();
                    }
                    if !ready {
                        ep = ep.not_ready();
                    }
                    ep
                })
                .collect();
            builder = builder.service(port, endpoints);
        }
    }
    builder.build()
}

fn options() -> RenderOptions {
    let mut opts = RenderOptions::nftables_defaults(plan::IpFamily::V4);
    opts.common.local_detection = plan::LocalDetection::ClusterCidr(vec![cluster_cidr()]);
    opts
}

/// Whether our table in the kernel is what a full rendering of
/// `snapshot` with the proxier's `slots` gives: the transaction from one
/// to the other is empty.
async fn kernel_equals_full_render(
    socket: &mut NftSocket,
    snapshot: &Snapshot,
    slots: &EndpointSlots,
) -> Result<Vec<String>> {
    let facts = NodeFacts {
        local_addresses: host::read_local_addresses().await?,
    };
    let ctx = RenderContext::new(snapshot, &options(), &facts);
    let desired = render_services(snapshot, &ctx, Services::All, Slots::of(slots))
        .rendered
        .ruleset
        .contents();
    let listed = socket.list_table(Family::Ip, "kube-proxy")?;
    let tx = apply::diff(&desired, listed.as_ref());
    Ok(tx.ops.iter().map(|op| format!("{op:?}")).collect())
}

async fn random_partial_syncs(seed: u64) -> Result<()> {
    let mut proxier = NftablesProxier::new(ProxierOptions {
        render: options(),
        max_anonymous_sets_per_transaction: None,
    })?;
    let mut socket = NftSocket::connect()?;
    let mut rng = Rng(seed);
    let mut defs: BTreeMap<u16, Def> = (1..=20).map(|i| (i, random_def(&mut rng))).collect();
    let first = proxier
        .sync(&snapshot_of(&defs), &ChangeSet::default(), true)
        .await?;
    assert!(!first.partial);
    let (mut partial, mut steps) = (0, 0);
    for step in 0..120 {
        let mut changes = ChangeSet::default();
        for _ in 0..1 + rng.below(3) {
            let i = 1 + rng.below(30) as u16;
            changes
                .services
                .insert(ServiceName::new("ns", format!("svc{i}")));
            match (defs.get_mut(&i), rng.below(5)) {
                (Some(_), 0) => drop(defs.remove(&i)),
                (Some(def), 1 | 2) => def.endpoints = random_endpoints(&mut rng),
                _ => drop(defs.insert(i, random_def(&mut rng))),
            }
        }
        let snapshot = snapshot_of(&defs);
        // now and then a full sync of the table as it stands: the shared
        // endpoint maps' elements compared map by map as they come
        let full = step % 25 == 24;
        let report = proxier.sync(&snapshot, &changes, full).await?;
        assert!(!(full && report.partial), "step {step}: {report:?}");
        steps += 1;
        partial += usize::from(report.partial);
        let differences =
            kernel_equals_full_render(&mut socket, &snapshot, proxier.endpoint_slots()).await?;
        assert!(
            differences.is_empty(),
            "step {step} (changed {:?}, partial {}): the kernel differs from a full render:\n{}",
            changes.services,
            report.partial,
            differences.join("\n")
        );
        if step % 10 == 0 {
            let idle = proxier
                .sync(&snapshot, &ChangeSet::default(), false)
                .await?;
            let figures = idle.nftables.unwrap_or_default();
            assert!(
                idle.partial && figures.changes == 0,
                "step {step}: {idle:?}"
            );
        }
    }
    eprintln!("{partial} of {steps} syncs were partial");
    assert!(
        partial * 3 >= steps * 2,
        "only {partial} of {steps} syncs were partial"
    );
    // A change set naming services the snapshot does not hold changes nothing.
    let snapshot = snapshot_of(&defs);
    let unknown = ChangeSet {
        services: BTreeSet::from([ServiceName::new("other", "gone")]),
        ..ChangeSet::default()
    };
    let report = proxier.sync(&snapshot, &unknown, false).await?;
    assert!(
        report.partial && report.nftables.unwrap_or_default().changes == 0,
        "{report:?}"
    );
    Ok(())
}

#[test]
fn partial_syncs_of_random_changes_leave_the_table_a_full_render_gives() -> Result<()> {
    if let Some(why) = testkit::netns::unavailable() {
        panic!("{why}");
    }
    let ns = Netns::new("nftpartial")?;
    ns.run(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        // each run starts with a new proxier (a restart: its first sync is full)
        for seed in [
            0x9E37_79B9_7F4A_7C15,
            0xD1B5_4A32_D192_ED03,
            0x8CB9_2BA7_2F3D_8DD7,
        ] {
            runtime.block_on(random_partial_syncs(seed))?;
        }
        Ok(())
    })?
}
