//! iptables mode behind the proxier seam, on a real kernel in a fresh
//! network namespace: the runner's full-sync policy drives the proxier
//! (first sync full, a request partial, a vanished canary full again), the
//! node's addresses are read on every sync (a `nodePortAddresses` address
//! added after start-up gets its NodePort jump at the next sync).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "apply_support/support.rs"]
mod support;

use xtables::apply::{Backend, BackendChoice};
use iptables::proxier::{IptablesProxier, ProxierOptions};
use iptables::render::RenderOptions;
use model::Snapshot;
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
/// the policy records.
async fn sync(
    proxier: &mut IptablesProxier,
    policy: &mut FullSyncPolicy,
    trigger: Trigger,
    snapshot: &Snapshot,
) -> (SyncScope, SyncReport) {
    let now = tokio::time::Instant::now();
    let scope = policy.decide(trigger, now, || proxier.state_unknown()).await.unwrap();
    let report = proxier.sync(snapshot, &model::ChangeSet::default(), scope.is_full()).await.unwrap();
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
