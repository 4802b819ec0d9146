//! The xtables lock held by another process (the proxy runs with a
//! private `/run`, so the lock is the scenario's own file and the host's
//! `/run/xtables.lock` is untouched). Held shorter than the tools' wait
//! (`--wait=5`, as upstream's `-w 5`): the sync waits and then applies the
//! change, with no failure. Held longer: the restore gives up, the sync
//! fails and is retried, and the change lands once the lock is free.
//! Probes to healthy services never fail.

use super::{Steady, periods, wait_until};
use crate::bed::{Bed, Launch, Mode, Source};
use crate::figures::print;
use crate::state::ClusterState;
use nix::fcntl::{Flock, FlockArg};
use std::path::Path;
use std::time::{Duration, Instant};

const SCENARIO: &str = "xtables lock held (iptables)";

/// Runs the scenario.
pub fn run() {
    let bed = Bed::build();
    let state = ClusterState::new(super::CHURNED);
    bed.write(&state);
    let run = bed.dir().join("run");
    std::fs::create_dir_all(&run).expect("create the private /run");
    let lock = run.join("xtables.lock");
    std::fs::write(&lock, "").expect("create the lock file");
    let mut launch = Launch::new(Mode::Iptables, Source::Manifests).with(&periods());
    launch.private_run = Some(run);
    let mut s = Steady::start(bed, state, launch);

    let waited = hold_while_changing(&mut s, &lock, Duration::from_secs(3));
    print(SCENARIO, "held 3 s: change applied after (s)", format!("{:.2}", waited.as_secs_f64()));
    assert!(!s.proxy.logged("sync failed"), "a sync failed while the lock was held for less than the wait");

    let waited = hold_while_changing(&mut s, &lock, Duration::from_secs(8));
    print(SCENARIO, "held 8 s: change applied after (s)", format!("{:.2}", waited.as_secs_f64()));
    assert!(s.proxy.logged("sync failed; will retry"), "no failed sync while the lock was held past the wait");

    let tally = s.prober.take();
    print(SCENARIO, "probes to healthy services", &tally);
    assert_eq!(tally.failed, 0, "connections to healthy services failed: {tally}");
}

/// Takes the lock, changes the state, keeps the lock for `hold` (the old
/// rules must stay meanwhile), releases it; returns how long after the
/// change the new rules were there.
fn hold_while_changing(s: &mut Steady, lock: &Path, hold: Duration) -> Duration {
    let file = std::fs::File::open(lock).expect("open the lock file");
    let held = Flock::lock(file, FlockArg::LockExclusive).map_err(|(_, e)| e).expect("take the xtables lock");
    let old = s.state.expected();
    let changed = Instant::now();
    s.change(5);
    while changed.elapsed() < hold {
        assert_eq!(s.bed.rules_endpoints(Mode::Iptables), old, "rules changed while the lock was held");
        std::thread::sleep(Duration::from_millis(250));
    }
    drop(held);
    wait_until("the change lands after the lock is released", Duration::from_secs(15), || s.rules_match());
    changed.elapsed()
}
