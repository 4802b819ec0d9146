//! A restore the kernel's tool refuses: a stand-in `iptables-legacy-restore`
//! first on the proxy's `PATH` slips, while a flag file exists, a rule
//! jumping to a chain that does not exist into the nat table's input, so
//! the real tool rejects the whole table. The previous rules must stay
//! (probes keep working), the sync is retried with growing delays,
//! `/healthz` turns 503 once the change has waited twice the sync period
//! (upstream's timeout), the restore failure counter moves; once the tool
//! accepts again, the change is applied and `/healthz` is 200 again.

use super::{SYNC_PERIOD, Steady, periods, wait_until};
use crate::bed::{Bed, Launch, Mode, Source};
use crate::figures::print;
use crate::observe::{healthz_status, metric};
use crate::state::ClusterState;
use std::path::Path;
use std::time::{Duration, Instant};

const SCENARIO: &str = "restore refused (iptables)";
const RESTORE_FAILURES: &str = "kubeproxy_sync_proxy_rules_iptables_restore_failures_total";

/// Runs the scenario.
pub fn run() {
    let bed = Bed::build();
    let state = ClusterState::new(super::CHURNED);
    bed.write(&state);
    let (tools, flag) = (bed.dir().join("tools"), bed.dir().join("refuse-restores"));
    install_stand_in(&tools, &flag);
    let mut launch = Launch::new(Mode::Iptables, Source::Manifests).with(&periods());
    launch.path_first = Some(tools);
    let mut s = Steady::start(bed, state, launch);
    assert_eq!(healthz_status(s.bed.node()), Ok(200), "healthz before the fault");

    let old = s.state.expected();
    std::fs::write(&flag, "").expect("create the flag file");
    let changed = Instant::now();
    s.change(5);
    let delays = retry_delays(&mut s, 3);
    print(SCENARIO, "retry delays after failed syncs", format!("{delays:?}"));
    assert!(delays.windows(2).all(|w| w[1] > w[0] || w[1] >= SYNC_PERIOD), "no backoff: {delays:?}");
    assert_eq!(s.bed.rules_endpoints(Mode::Iptables), old, "the previous rules did not stay");

    let unhealthy = wait_until("healthz 503", 2 * SYNC_PERIOD + Duration::from_secs(6), || {
        healthz_status(s.bed.node()) == Ok(503)
    });
    let unhealthy_after = changed.elapsed();
    print(SCENARIO, "healthz 503 after the change waited (s)", format!("{:.1}", unhealthy_after.as_secs_f64()));
    assert!(unhealthy_after >= 2 * SYNC_PERIOD - Duration::from_millis(500), "unhealthy too early: {unhealthy:?}");
    let failures = metric(s.bed.node(), RESTORE_FAILURES).expect("scrape /metrics");
    print(SCENARIO, RESTORE_FAILURES, failures);
    assert!(failures >= 3.0, "{RESTORE_FAILURES} = {failures}");

    std::fs::remove_file(&flag).expect("remove the flag file");
    let applied = s.wait_for_rules(SYNC_PERIOD + Duration::from_secs(4));
    print(SCENARIO, "change applied after the tool accepted again (s)", format!("{:.1}", applied.as_secs_f64()));
    wait_until("healthz 200 again", Duration::from_secs(5), || healthz_status(s.bed.node()) == Ok(200));
    let tally = s.prober.take();
    print(SCENARIO, "probes to healthy services", &tally);
    assert_eq!(tally.failed, 0, "connections to healthy services failed: {tally}");
}

/// Writes the stand-in `iptables-legacy-restore` into `dir`.
fn install_stand_in(dir: &Path, flag: &Path) {
    let real = which("iptables-legacy-restore");
    std::fs::create_dir_all(dir).expect("create the tools directory");
    let script = format!(
        "#!/bin/sh\n# The reliability suite's stand-in: while {flag} exists, a jump to a chain\n\
         # that does not exist goes into the nat table, and the real tool refuses it.\n\
         if [ -e '{flag}' ]; then\n  sed '/^\\*nat$/a -A KUBE-SERVICES -j KPRS-TEST-NO-SUCH-CHAIN' | '{real}' \"$@\"\n  exit $?\nfi\n\
         exec '{real}' \"$@\"\n",
        flag = flag.display()
    );
    let path = dir.join("iptables-legacy-restore");
    std::fs::write(&path, script).expect("write the stand-in");
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod the stand-in");
}

fn which(program: &str) -> String {
    let out = std::process::Command::new("sh").args(["-c", &format!("command -v {program}")]).output().expect("sh");
    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(!path.is_empty(), "{program} not found: install iptables (scripts/test.sh does)");
    path
}

/// The `retry_in` of the next `n` "sync failed; will retry" lines.
pub fn retry_delays(s: &mut Steady, n: usize) -> Vec<Duration> {
    (0..n)
        .map(|_| {
            let line = s.proxy.wait_for("sync failed; will retry");
            retry_in(&line).unwrap_or_else(|| panic!("no retry_in in {line:?}"))
        })
        .collect()
}

/// `retry_in=1.5s` / `retry_in=500ms` in a log line.
pub fn retry_in(line: &str) -> Option<Duration> {
    let value = line.split_whitespace().find_map(|w| w.strip_prefix("retry_in="))?;
    if let Some(ms) = value.strip_suffix("ms") {
        return Some(Duration::from_secs_f64(ms.parse::<f64>().ok()? / 1e3));
    }
    Some(Duration::from_secs_f64(value.strip_suffix('s')?.parse().ok()?))
}

#[test]
fn retry_delays_are_read_from_the_log() {
    assert_eq!(retry_in("WARN sync failed; will retry retry_in=2s error=x"), Some(Duration::from_secs(2)));
    assert_eq!(retry_in("retry_in=500ms"), Some(Duration::from_millis(500)));
    assert_eq!(retry_in("no delay"), None);
}
