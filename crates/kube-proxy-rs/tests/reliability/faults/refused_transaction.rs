//! nftables mode: a transaction the kernel refuses, for a reason outside
//! the proxy. The kernel holds at most 1,024 hook entries per family and
//! hook in a network namespace (`MAX_HOOK_COUNT`; `E2BIG` past it).
//! Another table (`ip kprs-test-hog`, base chains without rules) fills
//! node-a's IPv4 output hook to that limit, then our `filter-output` base
//! chain is deleted by hand and the slot it freed taken by one more hog
//! chain. Every sync from then on must create `filter-output` again, and
//! the kernel refuses the whole transaction (`E2BIG`) — the services
//! changed meanwhile included. Nothing of the proxy is changed or stood in
//! for: its transactions reach the real kernel and are refused there.
//!
//! Checks: the previous rules stay (the services' DNAT maps as they were;
//! probes to the healthy services, which do not pass the output hook, see
//! no failure), the sync is retried with growing delays, `/healthz` turns
//! 503 once the change has waited twice the sync period (upstream's
//! timeout), not before, `…nftables_sync_failures_total` counts; once the
//! hog table is gone the change and `filter-output` are applied and
//! `/healthz` is 200 again.

use super::failing_restore::{retry_delays, retry_in};
use super::{SYNC_PERIOD, Steady, periods, wait_until};
use crate::bed::{Bed, Launch, Mode, Source, run_in};
use crate::figures::print;
use crate::observe::{healthz_status, metric};
use crate::state::ClusterState;
use std::time::{Duration, Instant};

const SCENARIO: &str = "transaction refused (nftables)";
const SYNC_FAILURES: &str = "kubeproxy_sync_proxy_rules_nftables_sync_failures_total";
/// The table that fills the output hook.
const HOG: &str = "kprs-test-hog";
/// Our base chain on the output hook that the fault deletes (locally
/// generated traffic only: the probes, forwarded by node-a, never pass it).
const DELETED: &str = "filter-output";

/// Runs the scenario.
pub fn run() {
    let bed = Bed::build();
    let state = ClusterState::new(super::CHURNED);
    bed.write(&state);
    let mut s = Steady::start(bed, state, Launch::new(Mode::Nftables, Source::Manifests).with(&periods()));
    assert_eq!(healthz_status(s.bed.node()), Ok(200), "healthz before the fault");
    assert!(has_chain(&s.bed, DELETED), "no {DELETED} chain in our table before the fault");

    let hogs = fill_output_hook(&s.bed);
    print(SCENARIO, "hog base chains filling the output hook", hogs);
    delete_our_chain_and_take_its_slot(&s.bed, hogs);
    let old = s.state.expected();
    let changed = Instant::now();
    s.change(5);

    let first = s.proxy.wait_for("sync failed; will retry");
    print(SCENARIO, "first failed sync", first.split_once("WARN").map_or(first.as_str(), |l| l.1).trim());
    assert!(first.contains("refused") && first.contains("Argument list too long"), "not the kernel's E2BIG: {first}");
    assert_eq!(healthz_status(s.bed.node()), Ok(200), "unhealthy as soon as a sync failed ({:?} after the change)", changed.elapsed());
    let mut delays = vec![retry_in(&first).unwrap_or_else(|| panic!("no retry_in in {first:?}"))];
    delays.extend(retry_delays(&mut s, 3));
    print(SCENARIO, "retry delays after failed syncs", format!("{delays:?}"));
    assert!(delays.windows(2).all(|w| w[1] > w[0] || w[1] >= SYNC_PERIOD), "no backoff: {delays:?}");
    assert_eq!(s.bed.rules_endpoints(Mode::Nftables), old, "the previous rules did not stay");
    assert!(!has_chain(&s.bed, DELETED), "{DELETED} came back although the hook is full");

    wait_until("healthz 503", 2 * SYNC_PERIOD + Duration::from_secs(6), || healthz_status(s.bed.node()) == Ok(503));
    let unhealthy_after = changed.elapsed();
    print(SCENARIO, "healthz 503 after the change waited (s)", format!("{:.1}", unhealthy_after.as_secs_f64()));
    assert!(unhealthy_after >= 2 * SYNC_PERIOD - Duration::from_millis(500), "unhealthy too early: {unhealthy_after:?}");
    let failures = metric(s.bed.node(), SYNC_FAILURES).expect("scrape /metrics");
    print(SCENARIO, SYNC_FAILURES, failures);
    assert!(failures >= 3.0, "{SYNC_FAILURES} = {failures}");
    assert_eq!(s.bed.rules_endpoints(Mode::Nftables), old, "the previous rules did not stay");

    run_in(s.bed.node(), "nft", &["delete", "table", "ip", HOG]);
    let applied = s.wait_for_rules(SYNC_PERIOD + Duration::from_secs(4));
    print(SCENARIO, "change applied after the hog table went (s)", format!("{:.1}", applied.as_secs_f64()));
    assert!(has_chain(&s.bed, DELETED), "{DELETED} not repaired");
    wait_until("healthz 200 again", Duration::from_secs(5), || healthz_status(s.bed.node()) == Ok(200));
    let tally = s.prober.take();
    print(SCENARIO, "probes to healthy services", &tally);
    assert_eq!(tally.failed, 0, "connections to healthy services failed: {tally}");
}

/// Whether our table has chain `name`.
fn has_chain(bed: &Bed, name: &str) -> bool {
    bed.nft_table().lines().any(|l| l.trim() == format!("chain {name} {{"))
}

/// Adds base chains on the IPv4 output hook in table [`HOG`] until the
/// kernel refuses one more (`E2BIG`); returns how many it holds.
fn fill_output_hook(bed: &Bed) -> usize {
    run_in(bed.node(), "nft", &["add", "table", "ip", HOG]);
    let mut n = 0;
    for chunk in [512, 128, 32, 8, 2, 1] {
        while try_hogs(bed, n, chunk) {
            n += chunk;
        }
    }
    assert!(n > 900, "only {n} hog chains fitted: the hook limit is not what the scenario needs");
    n
}

/// Adds hog chains `from..from + count` in one transaction; false when
/// the kernel refused it for the hook limit.
fn try_hogs(bed: &Bed, from: usize, count: usize) -> bool {
    let script: String = (from..from + count)
        .map(|i| format!("add chain ip {HOG} hog-{i} {{ type filter hook output priority {}; }}\n", i % 100))
        .collect();
    let path = bed.dir().join("hogs.nft");
    std::fs::write(&path, script).expect("write the hog chains");
    let out = bed.node().command("nft").arg("-f").arg(&path).output().expect("run nft");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() || stderr.contains("Argument list too long"), "nft -f: {stderr}");
    out.status.success()
}

/// Deletes our [`DELETED`] chain, then gives the hook slot it freed to
/// one more hog chain. The two are separate transactions (a base chain's
/// hook is released at commit, a new one's taken before): should a sync
/// of the proxy put the chain back in between, it is deleted again.
fn delete_our_chain_and_take_its_slot(bed: &Bed, hogs: usize) {
    for attempt in 0..5 {
        let script = format!("flush chain ip kube-proxy {DELETED}\ndelete chain ip kube-proxy {DELETED}\n");
        let path = bed.dir().join("delete.nft");
        std::fs::write(&path, script).expect("write the deletion");
        run_in(bed.node(), "nft", &["-f", &path.to_string_lossy()]);
        if try_hogs(bed, hogs + attempt, 1) {
            return;
        }
    }
    panic!("the proxy put {DELETED} back before the hog chain could take its slot, five times");
}
