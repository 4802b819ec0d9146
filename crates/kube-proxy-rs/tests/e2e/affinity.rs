//! Session affinity ClientIP: one client sticks to one endpoint over many
//! connections, and after `timeoutSeconds` (3 s in cluster.yaml) of
//! silence it picks afresh.
//!
//! `sticky` has 4 endpoints. The client pod `ca` acts as 12 clients (its
//! extra source addresses). Stickiness: each client makes 6 connections,
//! all must land on one endpoint (without affinity that happens with
//! chance 4^-5 per client). Expiry: after 3 s + 2 s of silence each client
//! connects once more; with expiry working each client re-picks uniformly
//! and stays on its old endpoint with chance 1/4, so "no client moved"
//! happens by chance with probability 4^-12 = 6e-8 — the case fails only
//! then; without expiry no client can move, so it fails for sure.
//!
//! IPVS mode (upstream's too) makes affinity a persistent virtual server
//! (`ipvsadm`: `persistent 3`); the kernel keeps a persistence template
//! alive while any connection it placed is still in the IPVS table, and a
//! closed TCP connection stays there in TIME_WAIT for 2 minutes (not
//! settable), so expiry after a few seconds cannot be seen. There the case
//! checks stickiness and that the virtual server's persistence timeout is
//! `timeoutSeconds`.
//!
//! Userspace mode balances round-robin: before the expiry check one
//! connection from another client moves the turn (see `round_robin_step`).
use super::Env;
use super::kernel_state::persistence_timeout;
use super::scenario::Mode;
use super::flow::{From, Source, reach_any, tcp};
use super::scenario::addr::at;
use super::scenario::{AFFINITY_TIMEOUT_SECS, ca_sources};
use std::time::Duration;
use testkit::echo::Outcome;

const ENDPOINTS: [&str; 4] = ["a1", "a2", "b1", "b2"];
const STICKY_CONNECTIONS: usize = 6;
/// `sticky`'s ClusterIP and port, as `ipvsadm` names its virtual server.
const VIRTUAL_SERVER: &str = "10.96.10.20:7000";

/// Runs the case; `Ok(what was seen)` or `Err(failure text)`.
pub fn run(env: &Env) -> Result<String, String> {
    let mut first = Vec::new();
    for src in ca_sources() {
        let flow = tcp(From::PodAs("ca", src), at([10, 96, 10, 20], 7000), reach_any(&ENDPOINTS, 8080, Source::Kept)).times(STICKY_CONNECTIONS);
        let attempts = flow.probe(env.cluster)?;
        let seen = flow.check(env.cluster, &attempts)?;
        let eps = endpoints(&attempts);
        if eps.iter().any(|ep| *ep != eps[0]) {
            return Err(format!("{}\n    expected: all {STICKY_CONNECTIONS} connections on one endpoint (ClientIP affinity)\n    saw:      {}", flow.describe(), seen.replace('\n', "\n              ")));
        }
        first.push((src, eps[0].clone()));
    }
    if env.mode == Mode::Ipvs {
        return check_persistence(env, first.len());
    }
    std::thread::sleep(Duration::from_secs(AFFINITY_TIMEOUT_SECS + 2));
    if env.mode == Mode::Userspace {
        round_robin_step(env)?;
    }
    let mut moved = 0;
    let mut lines = Vec::new();
    for (src, before) in &first {
        let flow = tcp(From::PodAs("ca", *src), at([10, 96, 10, 20], 7000), reach_any(&ENDPOINTS, 8080, Source::Kept)).times(1);
        let attempts = flow.probe(env.cluster)?;
        flow.check(env.cluster, &attempts)?;
        let after = endpoints(&attempts).remove(0);
        moved += usize::from(after != *before);
        lines.push(format!("{src}: {before} -> {after}"));
    }
    let text = format!(
        "{} clients each stuck to one endpoint over {STICKY_CONNECTIONS} connections; after {} s idle {moved} of them moved ({})",
        first.len(),
        AFFINITY_TIMEOUT_SECS + 2,
        lines.join(", ")
    );
    if moved > 0 { Ok(text) } else { Err(format!("{text}\n    problem:  affinity never expired (by chance: 4^-12)")) }
}

/// Userspace mode balances round-robin, as upstream's userspace proxier
/// did: 12 clients re-picking after expiry would take the 12 next turns,
/// which (12 being a multiple of 4) are the endpoints they had. One
/// connection from another client (`ca`'s own address) moves the turn by
/// one, so with expiry working every client moves; without it none does.
fn round_robin_step(env: &Env) -> Result<(), String> {
    let flow = tcp(From::Pod("ca"), at([10, 96, 10, 20], 7000), reach_any(&ENDPOINTS, 8080, Source::Kept)).times(1);
    let attempts = flow.probe(env.cluster)?;
    flow.check(env.cluster, &attempts).map(drop)
}

/// IPVS mode: node-a (where `ca` is) has `sticky`'s virtual server
/// persistent for `timeoutSeconds`.
fn check_persistence(env: &Env, clients: usize) -> Result<String, String> {
    let node = env.cluster.node("node-a").ok_or("no node-a")?;
    let seen = persistence_timeout(node.ns(), VIRTUAL_SERVER);
    let sticky = format!("{clients} clients each stuck to one endpoint over {STICKY_CONNECTIONS} connections");
    if seen == Some(AFFINITY_TIMEOUT_SECS) {
        Ok(format!("{sticky}; node-a: {VIRTUAL_SERVER} persistent {AFFINITY_TIMEOUT_SECS} (expiry not observable in IPVS mode)"))
    } else {
        Err(format!("{sticky}, but\n    expected: node-a {VIRTUAL_SERVER} persistent {AFFINITY_TIMEOUT_SECS}\n    saw:      {seen:?}"))
    }
}

fn endpoints(attempts: &[testkit::echo::Attempt]) -> Vec<String> {
    attempts
        .iter()
        .map(|a| match &a.outcome {
            Outcome::Answered(ans) => ans.ep.clone(),
            other => other.to_string(),
        })
        .collect()
}
