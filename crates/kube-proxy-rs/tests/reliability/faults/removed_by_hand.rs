//! Our chains (iptables), our table (nftables) or our virtual servers and
//! ipsets (IPVS) flushed or deleted by hand: the fault removes the healthy
//! services' rules (all but the ipsets), so probes may fail
//! until the next sync repairs it (the next full one, at most a sync period
//! away, as upstream's canary); after the repair none may.

use super::{SYNC_PERIOD, Steady, periods_for, wait_until};
use crate::bed::{Bed, Launch, Mode, Source, run_in, sh_in};
use crate::figures::print;
use crate::state::ClusterState;
use std::time::Duration;

/// How long after a repair probes must all succeed.
const AFTER_REPAIR: Duration = Duration::from_secs(2);

/// Runs the scenario in `mode`: first a partial removal (iptables: the
/// `KUBE-SERVICES` chain flushed; nftables: the table flushed), then
/// everything (iptables: every table flushed and every chain deleted, the
/// canary included; nftables: the table deleted). IPVS: every virtual
/// server cleared (`ipvsadm -C`), then every ipset emptied (`ipset flush`).
pub fn run(mode: Mode) {
    run_sized(mode, super::CHURNED, Duration::from_secs(4));
}

/// [`run`] with `churned` churned services, each repair awaited for the
/// sync period and `slack` (more than one sync takes).
pub fn run_sized(mode: Mode, churned: usize, slack: Duration) {
    let scenario = match mode {
        Mode::Iptables => "chains flushed / deleted by hand (iptables)",
        Mode::Nftables => "table flushed / deleted by hand (nftables)",
        Mode::Ipvs => "virtual servers cleared / ipsets flushed by hand (IPVS)",
    };
    let bed = Bed::build();
    let state = ClusterState::new(churned);
    bed.write(&state);
    let s = Steady::start(bed, state, Launch::new(mode, Source::Manifests).with(&periods_for(mode)));
    std::thread::sleep(Duration::from_secs(1));
    let before = s.prober.take();
    print(scenario, "before the fault", &before);
    assert_eq!(before.failed, 0, "probes failed before any fault: {before}");
    let services = service_rules(&s);
    for (what, fault) in faults(mode) {
        fault(&s.bed);
        let repaired = wait_until(&format!("{what}: repaired"), SYNC_PERIOD + slack, || {
            s.rules_match() && service_rules(&s) == services
        });
        // Probes already under way when the repair landed count with the fault.
        std::thread::sleep(crate::probes::TIMEOUT);
        let during = s.prober.take();
        std::thread::sleep(AFTER_REPAIR);
        let after = s.prober.take();
        print(scenario, &format!("{what}: repaired after (s)"), format!("{:.2}", repaired.as_secs_f64()));
        print(scenario, &format!("{what}: probes until repaired"), &during);
        print(scenario, &format!("{what}: probes in the {AFTER_REPAIR:?} after"), &after);
        assert_eq!(after.failed, 0, "{what}: probes failed after the repair: {after}");
    }
}

type Fault = fn(&Bed);

fn faults(mode: Mode) -> Vec<(&'static str, Fault)> {
    match mode {
        Mode::Iptables => {
            vec![("KUBE-SERVICES flushed", flush_kube_services), ("every chain deleted", delete_every_chain)]
        }
        Mode::Nftables => vec![("table flushed", flush_table), ("table deleted", delete_table)],
        Mode::Ipvs => vec![("virtual servers cleared", clear_virtual_servers), ("ipsets flushed", flush_ipsets)],
    }
}

fn clear_virtual_servers(bed: &Bed) {
    run_in(bed.node(), "ipvsadm", &["-C"]);
}

fn flush_ipsets(bed: &Bed) {
    run_in(bed.node(), "ipset", &["flush"]);
}

fn flush_kube_services(bed: &Bed) {
    run_in(bed.node(), "iptables-legacy", &["-w", "5", "-t", "nat", "-F", "KUBE-SERVICES"]);
}

/// As `iptables -F; iptables -X` in each table, but each table at once (a
/// restore of it empty), so no sync of the proxy gets in between.
fn delete_every_chain(bed: &Bed) {
    sh_in(bed.node(), "printf '*nat\\nCOMMIT\\n*filter\\nCOMMIT\\n*mangle\\nCOMMIT\\n' | iptables-legacy-restore -w 5");
}

fn flush_table(bed: &Bed) {
    run_in(bed.node(), "nft", &["flush", "table", "ip", "kube-proxy"]);
}

fn delete_table(bed: &Bed) {
    run_in(bed.node(), "nft", &["delete", "table", "ip", "kube-proxy"]);
}

/// The rules that send traffic to the services: `KUBE-SERVICES` (iptables),
/// the `service-ips` map's elements (nftables) or the ipsets' members and
/// the virtual servers (IPVS), sorted.
fn service_rules(s: &Steady) -> Vec<String> {
    let (text, keep): (String, fn(&str) -> bool) = match s.mode() {
        Mode::Iptables => (s.bed.nat(), |l| l.starts_with("-A KUBE-SERVICES")),
        Mode::Nftables => (s.bed.nft_table(), |l| l.contains(" : goto service-")),
        Mode::Ipvs => {
            let sets = run_in(s.bed.node(), "ipset", &["save"]);
            (sets + &s.bed.ipvs_table(), |l| l.starts_with("add KUBE-") || l.starts_with("TCP "))
        }
    };
    let mut rules: Vec<String> = text.lines().filter(|l| keep(l)).map(str::to_string).collect();
    rules.sort();
    rules
}
