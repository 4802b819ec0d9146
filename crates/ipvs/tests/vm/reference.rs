//! The reference scenario on the VM's kernel (the VM's own namespace plays
//! node-a): programmed state read back with `ipvsadm -Ln`, `ipset save`,
//! `iptables-legacy-save` and `ip addr` must equal the render; a second
//! apply changes nothing; endpoint, scheduler and service changes are
//! followed; `--cleanup` leaves nothing.

use super::checks::{sh, sh_status};
use super::kernel_view::*;
use crate::support::reference::{eps, ip, reference_options, reference_snapshot};
use ipvs::apply::{ApplyOptions, ApplyReport, IpvsApplier, KernelSetup, apply_kernel_setup};
use ipvs::cleanup::{apply_cleanup, leftovers_present};
use ipvs::render::{IpvsState, RenderOptions, render};
use ipvs::{Scheduler, Timeouts};
use xtables::apply::Backend;
use model::IpFamily;
use model::{ServicePortName, Snapshot};
use std::sync::Arc;
use tokio::runtime::Runtime;

fn web() -> ServicePortName {
    ServicePortName::new("storefront", "web", "http", model::Protocol::Tcp)
}

fn changes(r: &ApplyReport) -> [usize; 10] {
    [
        r.services_added,
        r.services_updated,
        r.services_deleted,
        r.real_servers_added,
        r.real_servers_updated,
        r.real_servers_drained,
        r.real_servers_deleted,
        r.addresses_bound,
        r.addresses_unbound,
        r.ipset_changes,
    ]
}

fn assert_kernel_matches(state: &IpvsState) {
    assert_eq!(ipvsadm_blocks(), rendered_blocks(state), "ipvsadm -Ln differs from the render");
    assert_eq!(members(&ipsets()), members(&state.ipsets), "ipset save differs from the render");
    let saved = saved_chains("iptables-legacy-save");
    let differing: Vec<String> = rendered_chains(state)
        .into_iter()
        .filter(|(chain, rules)| saved.get(chain) != Some(rules))
        .map(|(chain, rules)| format!("{chain:?}\n  rendered: {rules:#?}\n  saved:    {:#?}", saved.get(&chain)))
        .collect();
    assert!(differing.is_empty(), "iptables-legacy-save differs from the render:\n{}", differing.join("\n"));
    let bound = sh("ip -o -4 addr show dev kube-ipvs0");
    for addr in &state.bind_addresses {
        assert!(bound.contains(&format!("inet {addr}/32 ")), "{addr} not on kube-ipvs0:\n{bound}");
    }
    assert_eq!(bound.lines().count(), state.bind_addresses.len(), "extra addresses on kube-ipvs0:\n{bound}");
}

pub fn reference_scenario(rt: &Runtime) {
    sh("ip link del kube-ipvs0");
    sh("ip link add ext0 type veth peer name ext0p && ip addr add 192.168.86.2/24 dev ext0 && ip link set ext0 up && ip link set ext0p up");
    rt.block_on(async {
        let mut applier = IpvsApplier::connect(Backend::Legacy, ApplyOptions::default()).await.unwrap();
        let timeouts = Timeouts { tcp: 900, tcp_fin: 120, udp: 300 };
        apply_kernel_setup(applier.ipvs(), KernelSetup { strict_arp: true, timeouts }).await.unwrap();
        assert_eq!(sh("cat /proc/sys/net/ipv4/vs/conntrack /proc/sys/net/ipv4/conf/all/arp_ignore").split_whitespace().collect::<Vec<_>>(), ["1", "1"]);
        assert!(sh("ipvsadm -L --timeout").contains("900 120 300"));

        let locals = applier.local_addresses().await.unwrap();
        assert_eq!(locals, [ip("192.168.86.2")], "node addresses, kube-ipvs0 and loopback excluded");
        let mut opts = RenderOptions { local_addresses: locals, ..reference_options() };
        let state = render(&reference_snapshot(), &opts);

        // Leftovers of iptables mode: gone after the first IPVS-mode sync.
        sh("iptables-legacy -t nat -N KUBE-SVC-AAAAAAAAAAAAAAAA && iptables-legacy -t nat -N KUBE-NODEPORTS \
            && iptables-legacy -t nat -A KUBE-SVC-AAAAAAAAAAAAAAAA -j KUBE-MARK-MASQ 2>/dev/null; \
            iptables-legacy -t filter -N KUBE-EXTERNAL-SERVICES && iptables-legacy -t filter -A INPUT -m conntrack --ctstate NEW \
            -m comment --comment 'kubernetes externally-visible service portals' -j KUBE-EXTERNAL-SERVICES");
        let first = applier.apply(&state).await.unwrap();
        let saved = sh("iptables-legacy-save");
        for leftover in ["KUBE-SVC-AAAAAAAAAAAAAAAA", "KUBE-NODEPORTS", "KUBE-EXTERNAL-SERVICES"] {
            assert!(!saved.contains(leftover), "iptables-mode leftover {leftover} survived:\n{saved}");
        }
        assert_eq!(first.services_added, state.services.len());
        assert_eq!(first.real_servers_added, state.real_server_count());
        assert_eq!(first.addresses_bound, state.bind_addresses.len());
        assert!(sh("ip -d link show kube-ipvs0").contains("dummy"), "kube-ipvs0 made as a dummy link");
        assert_kernel_matches(&state);

        // The seeds' examples, as ipvsadm prints them.
        let blocks = ipvsadm_blocks();
        assert!(block(&blocks, "TCP  10.96.10.10:80 rr").contains("  -> 10.244.0.11:8080 Masq 1"), "ClusterIP, port remapped");
        assert_eq!(block(&blocks, "TCP  10.96.10.20:7000 rr persistent 600").lines().count(), 4, "ClientIP affinity");
        block(&blocks, "TCP  192.0.2.50:8000 rr");
        block(&blocks, "TCP  192.0.2.10:443 rr");
        assert_eq!(block(&blocks, "TCP  192.168.86.2:30443 rr"), "TCP  192.168.86.2:30443 rr\n  -> 10.244.0.14:8443 Masq 1", "ETP Local NodePort");
        assert_eq!(block(&blocks, "TCP  192.168.86.2:30080 rr").lines().count(), 3, "ETP Cluster NodePort");
        let nat = sh("iptables-legacy-save -t nat");
        assert!(nat.contains("-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES"), "{nat}");

        let again = applier.apply(&state).await.unwrap();
        assert_eq!(changes(&again), [0; 10], "second apply of the same state changed something: {again:?}");

        // Endpoints change: real servers follow; the idle one goes at once.
        let mut snap: Snapshot = reference_snapshot();
        snap.endpoints.insert(web(), Arc::new(eps(8080, &["10.244.0.11@a", "10.244.2.11@c", "10.244.3.11@c"])));
        let state = render(&snap, &opts);
        let r = applier.apply(&state).await.unwrap();
        assert_eq!((r.real_servers_added, r.real_servers_deleted, r.services_added), (1, 1, 0), "{r:?}");
        assert_eq!(
            block(&ipvsadm_blocks(), "TCP  10.96.10.10:80 rr"),
            "TCP  10.96.10.10:80 rr\n  -> 10.244.0.11:8080 Masq 1\n  -> 10.244.2.11:8080 Masq 1\n  -> 10.244.3.11:8080 Masq 1"
        );
        assert_kernel_matches(&state);

        // Scheduler change: every virtual server is updated in place.
        opts.scheduler = Scheduler::WeightedLeastConnection;
        let state = render(&snap, &opts);
        let r = applier.apply(&state).await.unwrap();
        assert_eq!((r.services_updated, r.services_added, r.services_deleted), (state.services.len(), 0, 0));
        assert!(ipvsadm_blocks().iter().all(|b| b.lines().next().unwrap().contains(" wlc")));
        assert_kernel_matches(&state);

        // A service goes: its virtual servers, addresses and set members too.
        let legacy = ServicePortName::new("storefront", "legacy", "http", model::Protocol::Tcp);
        snap.services.remove(&legacy);
        snap.endpoints.remove(&legacy);
        let state = render(&snap, &opts);
        let r = applier.apply(&state).await.unwrap();
        assert_eq!((r.services_deleted, r.addresses_unbound), (2, 2), "{r:?}");
        assert!(!sh("ip -o addr show dev kube-ipvs0").contains("192.0.2.50"));
        assert_kernel_matches(&state);
        assert!(!sh("iptables-legacy-save -t nat").contains("KUBE-EXTERNAL-IP"), "rule of the emptied set removed");

        drop(applier);
        assert!(leftovers_present(&ApplyOptions::default()).await.unwrap());
        let report = apply_cleanup(&ApplyOptions::default()).await.unwrap();
        assert!(!leftovers_present(&ApplyOptions::default()).await.unwrap());
        assert!(report.ipvs_available && report.dummy_deleted);
        assert_eq!(report.services_deleted, state.services.len());
        assert!(report.iptables_cleaned.contains(&(Backend::Legacy, IpFamily::V4)), "{report:?}");
    });
    assert_nothing_left();
    sh("ip link del ext0");
}

/// After `--cleanup`: no virtual server, no set of ours, no chain of ours
/// in either backend, no kube-ipvs0.
pub fn assert_nothing_left() {
    assert_eq!(sh("ipvsadm -Ln | wc -l").trim(), "3", "only ipvsadm's header is left:\n{}", sh("ipvsadm -Ln"));
    let sets = sh("ipset list -n");
    assert!(!sets.contains("KUBE-"), "ipsets left: {sets}");
    for save in ["iptables-legacy-save", "iptables-nft-save"] {
        let rules = sh(save);
        assert!(!rules.contains("KUBE-"), "{save} still has:\n{rules}");
    }
    assert!(!sh_status("ip link show kube-ipvs0"), "kube-ipvs0 still there");
}
