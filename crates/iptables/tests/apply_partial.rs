//! Partial syncs on a real kernel, each case in a fresh network namespace,
//! for both backends: after one endpoint change only that service's chains
//! change in `iptables-save` and every service's packet flows still hold
//! (the same as after a full sync of the same state); a vanished canary
//! makes the state unknown (the policy then asks for a full sync); a failed partial restore keeps the previous
//! rules of the failing table and makes the next sync full.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "apply_support/support.rs"]
mod support;

use plan::Options;
use xtables::apply::{Backend, Rollback, Syncer};
use iptables::chain_name::{ServiceChains, endpoint_chain};
use iptables::render::{RenderOptions, render};
use model::IpFamily;
use xtables::{Error, Rule, Ruleset, Table};
use model::{Endpoint, ServicePortName, Snapshot};
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};
use support::*;
use testkit::builders::*;
use testkit::tracer::{Outcome, Packet, Protocol, TraceContext, parse_rules, trace};

/// Each chain of each table as `iptables-save` printed it: its rules in
/// order (counters, comments and chain order left out).
type Chains = BTreeMap<(String, String), Vec<String>>;

fn chains_of(save: &str) -> Chains {
    let mut out = Chains::new();
    let mut table = String::new();
    for line in save.lines() {
        if let Some(name) = line.strip_prefix('*') {
            table = name.to_string();
        } else if let Some(decl) = line.strip_prefix(':') {
            let chain = decl.split_whitespace().next().unwrap_or_default();
            out.entry((table.clone(), chain.to_string())).or_default();
        } else if let Some(rule) = line.strip_prefix("-A ") {
            let chain = rule.split_whitespace().next().unwrap_or_default();
            out.entry((table.clone(), chain.to_string())).or_default().push(rule.to_string());
        }
    }
    out
}

/// The chains whose rules differ, or that exist in one save only.
fn changed_chains(before: &Chains, after: &Chains) -> BTreeSet<(String, String)> {
    before.keys().chain(after.keys()).filter(|k| before.get(*k) != after.get(*k)).cloned().collect()
}

/// Services of several kinds: the one that changes is `web` (NodePort).
fn snapshot_with(web_endpoints: &[u16], db_endpoints: &[u16]) -> Snapshot {
    let eps = |pods: &[u16], port: u16| pods.iter().map(|n| endpoint(pod_ip(*n), port).build()).collect::<Vec<_>>();
    snapshot()
        .service(tcp_port("ns1", "web", "http", cluster_ip(1), 80).node_port(30080), eps(web_endpoints, 8080))
        .service(tcp_port("ns1", "db", "pg", cluster_ip(2), 5432), eps(db_endpoints, 5432))
        .service(tcp_port("ns2", "dns", "dns", cluster_ip(10), 53).udp().affinity(10800), eps(&[20, 21], 53))
        .service(
            tcp_port("ns2", "lb", "https", cluster_ip(3), 443).node_port(30443).lb_ip(lb_ip(1)).source_range("203.0.113.0/24"),
            [endpoint(pod_ip(30), 443).local(), endpoint(pod_ip(31), 443)],
        )
        .service(tcp_port("ns2", "local", "p", cluster_ip(4), 81).node_port(30081).etp_local(), eps(&[40], 81))
        .build()
}

const WEB: &[u16] = &[1, 2, 3];
const WEB_MOVED: &[u16] = &[1, 2, 4];
const DB: &[u16] = &[10, 11];

fn options() -> RenderOptions {
    // nfacct objects exist only where the applier made them.
    RenderOptions { nfacct: false, common: Options::with_cluster_cidr(cluster_cidr()), ..RenderOptions::default() }
}

fn rules(snapshot: &Snapshot) -> Ruleset {
    render(snapshot, &options()).ruleset
}

fn web() -> ServicePortName {
    ServicePortName::new("ns1", "web", "http", Protocol::Tcp)
}

/// Every chain of `name` with the endpoints in `pods` (both before and
/// after a change).
fn chains_of_service(name: &ServicePortName, pods: &[u16], port: u16) -> BTreeSet<String> {
    let chains = ServiceChains::new(name);
    let seps = pods.iter().map(|n| endpoint_chain(name, &Endpoint::ready(pod_ip(*n), port, Some(OTHER_NODE), false)));
    [chains.svc, chains.svl, chains.ext, chains.fw].into_iter().chain(seps).collect()
}

/// Runs `check(syncer)` in a fresh namespace for each backend (IPv4).
fn for_each_backend<Fut>(label: &str, check: fn(Syncer) -> Fut)
where
    Fut: std::future::Future<Output = ()> + 'static,
{
    for backend in Backend::ALL {
        in_netns(label, move || check(Syncer::new(iptables(backend, IpFamily::V4).recording_input())));
    }
}

/// The packets of every service: from a pod to its ClusterIP, and from
/// outside to its NodePort and load-balancer IP.
fn packets(snapshot: &Snapshot) -> Vec<Packet> {
    let pod: IpAddr = pod_ip(200);
    let outside: IpAddr = "203.0.113.9".parse().unwrap();
    let mut out = Vec::new();
    for svc in snapshot.services.values() {
        let proto = svc.name.protocol;
        out.push(Packet::inbound(proto, pod, SocketAddr::new(svc.cluster_ip, svc.port)).via("eth0"));
        if let Some(node_port) = svc.node_port {
            out.push(Packet::inbound(proto, outside, SocketAddr::new(node_ip(), node_port)).via("eth0"));
        }
        for ip in &svc.load_balancer_ips {
            out.push(Packet::inbound(proto, outside, SocketAddr::new(*ip, svc.port)).via("eth0"));
        }
    }
    out
}

/// What each packet can become through the rules of `save`.
fn traces(save: &str, packets: &[Packet]) -> Vec<BTreeSet<Outcome>> {
    let rules = parse_rules(save).unwrap();
    let ctx = TraceContext::new([node_ip()]);
    packets.iter().map(|p| trace(&rules, &ctx, p).unwrap().outcomes).collect()
}

#[test]
fn one_endpoint_change_rewrites_only_that_services_chains_and_every_flow_holds() {
    for_each_backend("partial", |mut syncer| async move {
        let ipt = syncer.iptables();
        let (before, after) = (snapshot_with(WEB, DB), snapshot_with(WEB_MOVED, DB));
        let first = syncer.sync(&rules(&before), false).await.unwrap();
        assert!(!first.partial, "the first sync is full");
        let save_before = ipt.save().await.unwrap();

        let synced = syncer.sync(&rules(&after), false).await.unwrap();
        assert!(synced.partial, "{:?}: {synced:?}", ipt);
        let save_after = ipt.save().await.unwrap();
        let changed = changed_chains(&chains_of(&save_before), &chains_of(&save_after));
        let allowed: BTreeSet<String> = chains_of_service(&web(), &[1, 2, 3, 4], 8080);
        let outside: Vec<_> = changed.iter().filter(|(_, chain)| !allowed.contains(chain)).collect();
        assert!(outside.is_empty(), "{:?}: chains of other services changed: {outside:?}", ipt);
        let web_chains = ServiceChains::new(&web());
        let moved = [&web_chains.svc, &endpoint_chain(&web(), &endpoint(pod_ip(3), 8080).build())];
        for chain in moved.into_iter().chain([&endpoint_chain(&web(), &endpoint(pod_ip(4), 8080).build())]) {
            assert!(changed.contains(&("nat".to_string(), chain.clone())), "{:?}: {chain} unchanged: {changed:?}", ipt);
        }
        assert_eq!(synced.written_chains, 2, "{:?}: SVC rewritten, one SEP created: {synced:?}", ipt);
        assert!(!save_after.contains("10.180.0.3:8080") && save_after.contains("10.180.0.4:8080"));

        // Every flow of every service: web reaches its new endpoint only,
        // and the rules are exactly what a full sync writes.
        let packets = packets(&after);
        let partial_traces = traces(&save_after, &packets);
        let web_ip = SocketAddr::new(cluster_ip(1), 80);
        let web_trace = packets.iter().position(|p| p.destination == web_ip).unwrap();
        let targets: BTreeSet<SocketAddr> = partial_traces[web_trace]
            .iter()
            .filter_map(|o| if let Outcome::Dnat { to, .. } = o { Some(*to) } else { None })
            .collect();
        let expected: BTreeSet<SocketAddr> = WEB_MOVED.iter().map(|n| SocketAddr::new(pod_ip(*n), 8080)).collect();
        assert_eq!(targets, expected);
        let full = syncer.sync(&rules(&after), true).await.unwrap();
        assert!(!full.partial);
        let save_full = ipt.save().await.unwrap();
        assert_eq!(chains_of(&save_after), chains_of(&save_full), "{:?}: partial and full syncs differ", ipt);
        assert_eq!(partial_traces, traces(&save_full, &packets));
    });
}

#[test]
fn nothing_changed_writes_nothing_and_a_deleted_service_goes() {
    for_each_backend("partial-noop", |mut syncer| async move {
        let ipt = syncer.iptables();
        let before = snapshot_with(WEB, DB);
        syncer.sync(&rules(&before), true).await.unwrap();
        let save = normalized(&ipt.save().await.unwrap());
        let again = syncer.sync(&rules(&before), false).await.unwrap();
        assert!(again.partial && again.written_chains == 0 && again.applied.restore_input.as_deref() == Some(""), "{again:?}");
        assert_eq!(normalized(&ipt.save().await.unwrap()), save);

        let mut without_db = before.clone();
        without_db.services.retain(|name, _| name.service.name != "db");
        let synced = syncer.sync(&rules(&without_db), false).await.unwrap();
        assert!(synced.partial);
        let db = ServicePortName::new("ns1", "db", "pg", Protocol::Tcp);
        let gone = chains_of_service(&db, DB, 5432);
        let save = ipt.save().await.unwrap();
        assert!(gone.iter().all(|chain| !has_chain(&save, chain)), "{:?}: db chains left:\n{save}", ipt);
        let full = syncer.sync(&rules(&without_db), true).await.unwrap();
        assert!(full.applied.removed.is_empty(), "{:?}: the partial sync left stale chains: {full:?}", ipt);
    });
}

#[test]
fn a_vanished_canary_makes_the_state_unknown_and_a_full_sync_repairs_it() {
    for_each_backend("partial-canary", |mut syncer| async move {
        let ipt = syncer.iptables();
        let before = snapshot_with(WEB, DB);
        syncer.sync(&rules(&before), true).await.unwrap();
        let (iptables, _) = tools(ipt.backend(), ipt.family());
        // Someone flushes nat's KUBE-SERVICES and deletes the canary.
        sh(&iptables, &["-w", "5", "-t", "nat", "-F", "KUBE-SERVICES"]);
        sh(&iptables, &["-w", "5", "-t", "mangle", "-X", "KUBE-PROXY-CANARY"]);
        assert!(syncer.state_unknown().await.unwrap(), "{:?}: canary gone", ipt);
        let synced = syncer.sync(&rules(&before), true).await.unwrap();
        assert!(!synced.partial, "{:?}: {synced:?}", ipt);
        let save = ipt.save().await.unwrap();
        assert!(has_chain(&ipt.saved_rules(Table::Mangle).await.unwrap(), "KUBE-PROXY-CANARY"));
        assert!(save.contains("-A KUBE-SERVICES -d 172.30.0.1/32"), "{:?}: KUBE-SERVICES not rewritten:\n{save}", ipt);
        assert!(!syncer.state_unknown().await.unwrap(), "{:?}: canary back", ipt);
        assert!(syncer.sync(&rules(&before), false).await.unwrap().partial, "canary back: partial again");
    });
}

#[test]
fn a_failed_partial_restore_keeps_the_failing_tables_rules_and_the_next_sync_is_full() {
    for_each_backend("partial-fail", |mut syncer| async move {
        let ipt = syncer.iptables();
        // db has no endpoints at first: a REJECT in filter.
        syncer.sync(&rules(&snapshot_with(WEB, &[])), true).await.unwrap();
        let save_before = chains_of(&ipt.save().await.unwrap());

        // db gains endpoints (filter and nat change) and web moves, with a
        // rule the kernel refuses in one of web's nat chains.
        let after = snapshot_with(WEB_MOVED, DB);
        let mut broken = rules(&after);
        let svc = ServiceChains::new(&web()).svc;
        broken.nat.rules.push(Rule::new(&svc).jump("KUBE-NO-SUCH-CHAIN").build());
        let err = syncer.sync(&broken, false).await.unwrap_err();
        let Error::Restore(failure) = &err else { panic!("{:?}: not a restore failure: {err}", ipt) };
        assert_eq!(failure.table, Some(Table::Nat), "{:?}: {err}", ipt);
        assert_eq!(failure.rollback, Rollback::Skipped(vec![Table::Filter]), "{:?}: {err}", ipt);
        let save_failed = chains_of(&ipt.save().await.unwrap());
        let nat = |chains: &Chains| chains.iter().filter(|((t, _), _)| t == "nat").map(|(k, v)| (k.clone(), v.clone())).collect::<Chains>();
        assert_eq!(nat(&save_failed), nat(&save_before), "{:?}: the failing table changed", ipt);
        assert!(syncer.needs_full_sync());
        assert!(syncer.state_unknown().await.unwrap());

        let synced = syncer.sync(&rules(&after), false).await.unwrap();
        assert!(!synced.partial, "{:?}: the sync after a failure must be full", ipt);
        let targets = traces(&ipt.save().await.unwrap(), &[Packet::inbound(Protocol::Tcp, pod_ip(200), SocketAddr::new(cluster_ip(2), 5432)).via("eth0")]);
        assert!(targets[0].iter().all(|o| matches!(o, Outcome::Dnat { .. })), "{:?}: db not served: {targets:?}", ipt);
    });
}
