//! Health-check node port (issue 5): the `hc-local` LoadBalancer service
//! (externalTrafficPolicy Local, healthCheckNodePort 32160, one endpoint)
//! answers 200 on the node that has the endpoint and 503 on the other,
//! byte for byte as upstream does (`upstream::service_answer`); moving the
//! endpoint to the other node and back flips both answers, each move
//! within [`DEADLINE`] (times the run's slowdown). The outside client asks
//! each node's IP, as a cloud load balancer would.

use super::Env;
use super::http;
use super::scenario::addr::{NODE_A, NODE_B, on};
use super::scenario::{DYN_START, HC_AWAY, HC_HOME, HC_NAME, HC_NAMESPACE, HC_PORT, manifests};
use super::upstream::{blank_date, service_answer};
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

/// How long a move may take to show in both nodes' answers.
pub const DEADLINE: Duration = Duration::from_secs(5);
const NODES: [(&str, Ipv4Addr); 2] = [("node-a", NODE_A), ("node-b", NODE_B)];

/// Runs the case; `Ok(summary)` or `Err(expected vs seen)`.
pub fn run(env: &Env) -> Result<String, String> {
    let start = wait_for(env, HC_HOME, "at start")?;
    write(env, HC_AWAY)?;
    let away = wait_for(env, HC_AWAY, "after moving the endpoint")?;
    write(env, HC_HOME)?;
    let home = wait_for(env, HC_HOME, "after moving it back")?;
    Ok(format!(
        "client -> {{node-a, node-b}}:{HC_PORT}/healthz: 200/503 as upstream with the endpoint on node-a (seen after {}), \
         flipped to 503/200 {} after moving it to node-b, back {} after moving it back (deadline {:?})",
        secs(start),
        secs(away),
        secs(home),
        env.deadline(DEADLINE)
    ))
}

/// Waits until each node answers as upstream would with the endpoint on
/// the node of pod `endpoint`; how long that took, or every node's
/// expected and seen answer at the deadline.
fn wait_for(env: &Env, endpoint: &str, when: &str) -> Result<Duration, String> {
    let (started, since) = (Instant::now(), super::utc_now());
    loop {
        let mismatches = mismatches(env, endpoint);
        if mismatches.is_empty() {
            return Ok(started.elapsed());
        }
        if started.elapsed() > env.deadline(DEADLINE) {
            return Err(format!(
                "health-check node port {when} (endpoint {endpoint} on {}), still wrong after {} (since {since}):\n{}",
                super::scenario::pod_node(endpoint),
                secs(started.elapsed()),
                mismatches.join("\n")
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One "expected / saw" text per node whose answer is not upstream's.
fn mismatches(env: &Env, endpoint: &str) -> Vec<String> {
    let client = env.cluster.client().ns();
    let mut wrong = Vec::new();
    for (node, ip) in NODES {
        let local = usize::from(super::scenario::pod_node(endpoint) == node);
        let expected = service_answer(HC_NAMESPACE, HC_NAME, local);
        let seen = http::get(client, on(ip, HC_PORT), "/healthz").map(|a| blank_date(&a));
        if seen.as_ref() != Ok(&expected) {
            let seen = seen.unwrap_or_else(|e| format!("(no answer: {e})"));
            wrong.push(format!("  client -> {node} {ip}:{HC_PORT}/healthz\n    expected: {expected:?}\n    saw:      {seen:?}"));
        }
    }
    wrong
}

fn write(env: &Env, hc_endpoint: &str) -> Result<(), String> {
    env.cluster.write_manifests(&manifests(Some(DYN_START), hc_endpoint)).map_err(|e| format!("rewrite manifests: {e:#}"))
}

fn secs(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}
