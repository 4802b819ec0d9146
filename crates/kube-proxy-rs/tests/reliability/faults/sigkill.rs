//! The proxy killed with SIGKILL in the middle of a sync (while its
//! `iptables-legacy-restore` runs) and started again, a few times: the
//! kernel holds either the old or the new rules of the nat table (never a
//! mix), and the restarted proxy converges to the new state without first
//! removing working rules: no probe to a healthy service fails, also
//! during the restarts.

use super::{Steady, periods, wait_until};
use crate::bed::{Bed, Launch, Mode, Source};
use crate::figures::print;
use crate::proxy::Proxy;
use crate::size::Size;
use crate::state::ClusterState;
use std::time::{Duration, Instant};

const SCENARIO: &str = "SIGKILL mid-sync and restart (iptables)";
/// How long after the restore starts each round's SIGKILL comes (one
/// round each): the kill lands before, during or after the nat `COMMIT`.
const KILL_DELAYS_MS: [u64; 3] = [0, 15, 40];

/// Runs the scenario.
pub fn run() {
    let size = Size::from_env();
    let bed = Bed::build();
    let state = ClusterState::new(size.services);
    bed.write(&state);
    let mut s = Steady::start(bed, state, Launch::new(Mode::Iptables, Source::Manifests).with(&periods()));
    let (mut old_kept, mut new_kept) = (0, 0);
    for (round, delay) in (1..).zip(KILL_DELAYS_MS) {
        let old = s.state.expected();
        s.change(size.services);
        let new = s.state.expected();
        let restore = kill_during_restore(&mut s.proxy, Duration::from_millis(delay));
        wait_until("the orphaned restore ends", Duration::from_secs(10), || !alive(restore));
        let held = s.bed.rules_endpoints(Mode::Iptables);
        assert!(held == old || held == new, "round {round}: the nat table is neither the old nor the new state");
        if held == old { old_kept += 1 } else { new_kept += 1 }
        s.proxy = s.bed.start_proxy(&s.launch);
        let converged = s.wait_for_rules(Duration::from_secs(30));
        let what = format!("round {round}: restarted proxy converged after (s)");
        print(SCENARIO, &what, format!("{:.2}", converged.as_secs_f64()));
    }
    let tally = s.prober.take();
    print(SCENARIO, "kernel held after the kill", format!("old rules {old_kept}×, new rules {new_kept}×"));
    print(SCENARIO, "probes to healthy services", &tally);
    assert_eq!(tally.failed, 0, "connections to healthy services failed: {tally}");
}

/// Waits for the proxy to start `iptables-legacy-restore`, SIGKILLs the
/// proxy `delay` later and returns the restore's pid.
fn kill_during_restore(proxy: &mut Proxy, delay: Duration) -> u32 {
    let start = Instant::now();
    loop {
        if let Some(restore) = restore_child(proxy.pid()) {
            std::thread::sleep(delay);
            proxy.kill();
            return restore;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "the proxy never ran iptables-legacy-restore");
        std::thread::sleep(Duration::from_micros(500));
    }
}

/// A child of `parent` running `iptables-legacy-restore`.
fn restore_child(parent: u32) -> Option<u32> {
    let children = std::fs::read_dir(format!("/proc/{parent}/task")).ok()?.flatten().flat_map(|task| {
        let text = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        text.split_whitespace().filter_map(|p| p.parse::<u32>().ok()).collect::<Vec<_>>()
    });
    children.into_iter().find(|pid| {
        std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| String::from_utf8_lossy(&c).contains("restore"))
    })
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}
