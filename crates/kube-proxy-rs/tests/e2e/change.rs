//! Change at run time: the manifests file is rewritten while both proxies
//! run. Adding an endpoint to `dyn` (10.96.10.150:80, first only a1) brings
//! new connections to it; removing a1 takes new connections off it;
//! deleting the service stops its traffic. Each change must show within
//! [`DEADLINE`] (times the run's slowdown): the proxies poll the file about
//! every second and resync at once (min sync period 0s), so about 1–2 s is
//! expected.

use super::Env;
use super::flow::{Flow, From, Source, TIMEOUT, reach, reach_any, stretched, summarize, tcp};
use super::scenario::addr::{DYN, on};
use super::scenario::{HC_HOME, manifests};
use std::time::{Duration, Instant};
use testkit::echo::{Attempt, Outcome};

/// How long a change may take to show in new connections.
pub const DEADLINE: Duration = Duration::from_secs(5);
const POLL_BATCH: usize = 4;

/// Runs the case; `Ok(how long each change took)` or `Err(failure text)`.
pub fn run(env: &Env) -> Result<String, String> {
    let dst = on(DYN, 80);
    tcp(From::Pod("ca"), dst, reach(&["a1"], 8080, Source::Kept)).run(env.cluster).map_err(|e| format!("before any change: {e}"))?;

    write(env, Some(&["a1", "a3"]))?;
    let poll = tcp(From::Pod("ca"), dst, reach_any(&["a1", "a3"], 8080, Source::Kept)).times(POLL_BATCH);
    let added = wait_until(env, "endpoint a3 added: a new connection reaches a3", || {
        let attempts = poll.probe(env.cluster)?;
        poll.check(env.cluster, &attempts)?;
        Ok((answered_by(&attempts, "a3"), attempts))
    })?;
    tcp(From::Pod("ca"), dst, reach(&["a1", "a3"], 8080, Source::Kept)).run(env.cluster).map_err(|e| format!("after adding a3: {e}"))?;

    write(env, Some(&["a3"]))?;
    let poll = tcp(From::Pod("ca"), dst, reach_any(&["a1", "a3"], 8080, Source::Kept)).times(10);
    let removed = wait_until(env, "endpoint a1 removed: 10 new connections in a row reach only a3", || {
        let attempts = poll.probe(env.cluster)?;
        poll.check(env.cluster, &attempts)?;
        Ok((!answered_by(&attempts, "a1"), attempts))
    })?;
    tcp(From::Pod("ca"), dst, reach(&["a3"], 8080, Source::Kept)).times(30).run(env.cluster).map_err(|e| format!("after removing a1: {e}"))?;

    write(env, None)?;
    // Three in a row: in the emulated VM a lone attempt can go unanswered
    // while the service is still there.
    let poll = tcp(From::Pod("ca"), dst, reach_any(&["a3"], 8080, Source::Kept)).times(1);
    let gone = wait_until_silent(env, "service dyn deleted: 3 new connections in a row get no answer", &poll, 3)?;
    let after = poll.times(3).probe(env.cluster)?;
    if after.iter().any(|a| matches!(a.outcome, Outcome::Answered(_))) {
        return Err(format!("service dyn deleted: traffic came back\n    saw:      {}", summarize(&after)));
    }
    Ok(format!(
        "pod ca -> tcp {dst}: a3 added, followed after {}; a1 removed, followed after {}; service deleted, traffic stopped after {} (deadline {:?} each; a dropped attempt costs {:?})",
        secs(added),
        secs(removed),
        secs(gone),
        env.deadline(DEADLINE),
        stretched(TIMEOUT)
    ))
}

fn write(env: &Env, dyn_endpoints: Option<&[&str]>) -> Result<(), String> {
    env.cluster.write_manifests(&manifests(dyn_endpoints, HC_HOME)).map_err(|e| format!("rewrite manifests: {e:#}"))
}

/// Polls `step` until it reports success; fails with the last attempts seen
/// once [`DEADLINE`] has passed. Returns how long it took.
fn wait_until(env: &Env, what: &str, mut step: impl FnMut() -> Result<(bool, Vec<Attempt>), String>) -> Result<Duration, String> {
    let (start, written) = (Instant::now(), super::utc_now());
    let deadline = env.deadline(DEADLINE);
    loop {
        let (done, attempts) = step()?;
        if done {
            return Ok(start.elapsed());
        }
        if start.elapsed() > deadline {
            return Err(format!(
                "{what}\n    expected: within {deadline:?} of rewriting the manifests (at {written})\n    saw:      still, after {}: {}",
                secs(start.elapsed()),
                summarize(&attempts).replace('\n', "; ")
            ));
        }
        if let Some((node, status)) = env.cluster.exited_proxy() {
            return Err(format!("{what}: the proxy on {node} exited ({status})"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Probes with `flow` (one attempt at a time) until `in_a_row` attempts in
/// a row got no answer (timed out or refused); fails when no such run of
/// attempts began within [`DEADLINE`]. Returns when the run began. One
/// attempt at a time, not in batches: a dropped attempt costs the whole
/// probe timeout (6 s in the VM), so a batch of three begun just before the
/// change took effect would end after the 20 s deadline, leaving no time for
/// another (seen on a loaded host: the proxy deleted the service 2.1 s after
/// the rewrite, and the check failed at 20.2 s).
fn wait_until_silent(env: &Env, what: &str, flow: &Flow, in_a_row: usize) -> Result<Duration, String> {
    let (start, written) = (Instant::now(), super::utc_now());
    let deadline = env.deadline(DEADLINE);
    let (mut run_began, mut silent, mut seen) = (Duration::ZERO, 0, Vec::new());
    loop {
        if silent == 0 && start.elapsed() > deadline {
            return Err(format!(
                "{what}\n    expected: within {deadline:?} of rewriting the manifests (at {written})\n    saw:      still, after {}: {}",
                secs(start.elapsed()),
                summarize(&seen).replace('\n', "; ")
            ));
        }
        let began = start.elapsed();
        let attempts = flow.probe(env.cluster)?;
        if attempts.iter().all(|a| matches!(a.outcome, Outcome::TimedOut | Outcome::Refused)) {
            run_began = if silent == 0 { began } else { run_began };
            silent += attempts.len();
        } else {
            silent = 0;
        }
        seen.extend(attempts);
        seen = seen.split_off(seen.len().saturating_sub(in_a_row));
        if silent >= in_a_row {
            return Ok(run_began);
        }
        if let Some((node, status)) = env.cluster.exited_proxy() {
            return Err(format!("{what}: the proxy on {node} exited ({status})"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn answered_by(attempts: &[Attempt], ep: &str) -> bool {
    attempts.iter().any(|a| matches!(&a.outcome, Outcome::Answered(ans) if ans.ep == ep))
}

fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}
