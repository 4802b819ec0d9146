//! iptables mode behind the proxier seam, on a real kernel in a fresh
//! network namespace: the runner's full-sync policy drives the proxier
//! (first sync full, a request partial, a vanished canary full again), the
//! node's addresses are read on every sync (a `nodePortAddresses` address
//! added after start-up gets its NodePort jump at the next sync), and a
//! partial sync renders only the services its change set names, carrying
//! the others' chains over.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "apply_support/support.rs"]
mod support;

use xtables::apply::{Backend, BackendChoice};
use iptables::proxier::{IptablesProxier, ProxierOptions};
use iptables::render::RenderOptions;
use model::{ChangeSet, ServiceName, Snapshot};
use proxier::{Mode, Proxier, SyncReport};
use runner::{FullSyncPolicy, FullSyncReason, SyncScope, Trigger};
use std::time::Duration;
use support::*;
use testkit::builders::*;

fn options() -> ProxierOptions {
    let common = plan::Options {
        local_detection: plan::LocalDetection::ClusterCidr(vec![cluster_cidr()]),
        node_port_addresses: plan::NodePortAddresses::Cidrs(vec!["10.77.0.0/16".parse().unwrap()]),
        ..plan::Options::default()
    };
    let render = RenderOptions { common, ..RenderOptions::default() };
    ProxierOptions { backend: BackendChoice::Fixed(Backend::Legacy), render, route_localnet: false }
}

fn web(pods: &[u16]) -> Snapshot {
    let eps: Vec<_> = pods.iter().map(|n| endpoint(pod_ip(*n), 8080).build()).collect();
    snapshot().service(tcp_port("ns1", "web", "http", cluster_ip(1), 80).node_port(30080), eps).build()
}

/// One sync as the binary runs it: the policy decides, the proxier syncs,
/// the policy records (every service in the snapshot named changed).
async fn sync(
    proxier: &mut IptablesProxier,
    policy: &mut FullSyncPolicy,
    trigger: Trigger,
    snapshot: &Snapshot,
) -> (SyncScope, SyncReport) {
    let changes = ChangeSet { services: snapshot.services.keys().map(|n| n.service.clone()).collect(), ..ChangeSet::default() };
    sync_changes(proxier, policy, trigger, snapshot, &changes).await
}

/// [`sync`] with these changes.
async fn sync_changes(
    proxier: &mut IptablesProxier,
    policy: &mut FullSyncPolicy,
    trigger: Trigger,
    snapshot: &Snapshot,
    changes: &ChangeSet,
) -> (SyncScope, SyncReport) {
    let now = tokio::time::Instant::now();
    let scope = policy.decide(trigger, now, || proxier.state_unknown()).await.unwrap();
    let report = proxier.sync(snapshot, changes, scope.is_full()).await.unwrap();
    policy.record(true, !report.partial, tokio::time::Instant::now());
    (scope, report)
}

#[test]
fn the_policy_decides_each_sync_and_addresses_are_read_every_sync() {
    in_netns("seam", || async {
        let mut proxier = IptablesProxier::new(options()).await.unwrap();
        assert_eq!(proxier.mode(), Mode::Iptables);
        let mut policy = FullSyncPolicy::new(Duration::from_secs(3600));

        let (scope, report) = sync(&mut proxier, &mut policy, Trigger::Initial, &web(&[1])).await;
        assert_eq!(scope, SyncScope::Full(FullSyncReason::Asked(Trigger::Initial)));
        assert!(!report.partial);
        let nat = report.table("nat").copied().unwrap();
        assert!(nat.rules > 0 && nat.chains > 0 && nat.written == nat.rules, "{report:?}");
        assert!(report.table("filter").is_some() && report.virtual_servers.is_none(), "{report:?}");
        let save = sh("iptables-legacy-save", &["-t", "nat"]);
        assert!(!save.contains("10.77.0.5"), "{save}");

        sh("ip", &["addr", "add", "10.77.0.5/32", "dev", "lo"]);
        let (scope, report) = sync(&mut proxier, &mut policy, Trigger::Requested, &web(&[1, 2])).await;
        assert_eq!(scope, SyncScope::Partial);
        assert!(report.partial, "{report:?}");
        let save = sh("iptables-legacy-save", &["-t", "nat"]);
        assert!(save.contains("-A KUBE-SERVICES -d 10.77.0.5/32"), "the new address has no NodePort jump:\n{save}");

        sh("iptables-legacy", &["-w", "5", "-t", "mangle", "-X", "KUBE-PROXY-CANARY"]);
        let (scope, report) = sync(&mut proxier, &mut policy, Trigger::Requested, &web(&[1, 2])).await;
        assert_eq!(scope, SyncScope::Full(FullSyncReason::StateUnknown));
        assert!(!report.partial, "{report:?}");
        assert!(has_chain(&sh("iptables-legacy-save", &["-t", "mangle"]), "KUBE-PROXY-CANARY"));
    });
}

/// Three services, `db` with endpoints `pods`.
fn three(pods: &[u16]) -> Snapshot {
    let eps = |pods: &[u16], port: u16| pods.iter().map(|n| endpoint(pod_ip(*n), port).build()).collect::<Vec<_>>();
    snapshot()
        .service(tcp_port("ns1", "web", "http", cluster_ip(1), 80).node_port(30080), eps(&[1, 2], 8080))
        .service(tcp_port("ns1", "db", "sql", cluster_ip(2), 5432), eps(pods, 5432))
        .service(tcp_port("ns2", "cache", "redis", cluster_ip(3), 6379), eps(&[7], 6379))
        .build()
}

fn only(names: &[(&str, &str)]) -> ChangeSet {
    ChangeSet { services: names.iter().map(|(ns, n)| ServiceName::new(*ns, *n)).collect(), ..ChangeSet::default() }
}

#[test]
fn a_partial_sync_renders_the_changed_services_and_carries_the_others_over() {
    in_netns("carry", || async {
        let mut proxier = IptablesProxier::new(options()).await.unwrap();
        let mut policy = FullSyncPolicy::new(Duration::from_secs(3600));
        let (_, first) = sync(&mut proxier, &mut policy, Trigger::Initial, &three(&[3, 4])).await;
        assert!(!first.partial);

        // db's endpoints change: only db is rendered; the others' chains stay.
        let changes = only(&[("ns1", "db")]);
        let (scope, report) = sync_changes(&mut proxier, &mut policy, Trigger::Requested, &three(&[3, 5, 6]), &changes).await;
        assert_eq!(scope, SyncScope::Partial);
        assert!(report.partial, "{report:?}");
        let save = sh("iptables-legacy-save", &["-t", "nat"]);
        for pod in [5, 6] {
            assert!(save.contains(&format!("--to-destination {}:5432", pod_ip(pod))), "db's new endpoint {pod} missing:\n{save}");
        }
        assert!(!save.contains(&format!("--to-destination {}:5432", pod_ip(4))), "db's old endpoint left:\n{save}");
        assert!(save.contains(&format!("--to-destination {}:6379", pod_ip(7))), "cache's chains gone:\n{save}");

        // The kernel holds what a full render gives: a full sync writes nothing, and counts the same.
        let (scope, full) = sync(&mut proxier, &mut policy, Trigger::Periodic, &three(&[3, 5, 6])).await;
        assert!(scope.is_full() && !full.partial, "{scope:?}");
        assert_eq!(full.written_chains, Some(0), "the partial sync left chains differing from a full render: {full:?}");
        for table in ["nat", "filter"] {
            let counts = |r: &SyncReport| r.table(table).map(|t| (t.rules, t.chains));
            assert_eq!(counts(&full), counts(&report), "{table}: the partial sync counted otherwise");
        }

        // A service removed beside a changed one: cache goes, web stays.
        let two = snapshot()
            .service(tcp_port("ns1", "web", "http", cluster_ip(1), 80).node_port(30080), vec![endpoint(pod_ip(1), 8080).build(), endpoint(pod_ip(2), 8080).build()])
            .service(tcp_port("ns1", "db", "sql", cluster_ip(2), 5432), vec![endpoint(pod_ip(3), 5432).build()])
            .build();
        let changes = only(&[("ns1", "db"), ("ns2", "cache")]);
        let (_, report) = sync_changes(&mut proxier, &mut policy, Trigger::Requested, &two, &changes).await;
        assert!(report.partial, "{report:?}");
        let save = sh("iptables-legacy-save", &["-t", "nat"]);
        assert!(!save.contains(&pod_ip(7).to_string()) && !save.contains("ns2/cache"), "cache left:\n{save}");
        assert!(save.contains(&format!("--to-destination {}:8080", pod_ip(2))), "web's chains gone:\n{save}");
        let (_, full) = sync(&mut proxier, &mut policy, Trigger::Periodic, &two).await;
        assert_eq!(full.written_chains, Some(0), "{full:?}");

        // Carried means not rendered: web's endpoint 2 goes, but a change set
        // naming only db leaves web's chains as they were (until a full sync).
        let web_one = snapshot()
            .service(tcp_port("ns1", "web", "http", cluster_ip(1), 80).node_port(30080), vec![endpoint(pod_ip(1), 8080).build()])
            .service(tcp_port("ns1", "db", "sql", cluster_ip(2), 5432), vec![endpoint(pod_ip(3), 5432).build()])
            .build();
        let (_, report) = sync_changes(&mut proxier, &mut policy, Trigger::Requested, &web_one, &only(&[("ns1", "db")])).await;
        assert_eq!((report.partial, report.written_chains), (true, Some(0)), "{report:?}");
        assert!(sh("iptables-legacy-save", &["-t", "nat"]).contains(&format!("--to-destination {}:8080", pod_ip(2))));
        let (_, full) = sync(&mut proxier, &mut policy, Trigger::Periodic, &web_one).await;
        assert!(full.written_chains.is_some_and(|n| n > 0), "{full:?}");
        assert!(!sh("iptables-legacy-save", &["-t", "nat"]).contains(&format!("--to-destination {}:8080", pod_ip(2))));
    });
}
