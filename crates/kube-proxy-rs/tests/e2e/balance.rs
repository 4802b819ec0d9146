//! Balance: over many connections every endpoint of a service gets a share
//! close to even.
//!
//! The bound: `web` has k = 4 endpoints (2 per node). With a correct proxy
//! each of n = 1000 connections from one pod picks an endpoint uniformly and
//! independently, so each endpoint's count is Binomial(1000, 1/4) (mean 250,
//! sd 13.7). We accept counts in the exact binomial interval whose two tails
//! each carry at most 1e-6 / (2k) = 1.25e-7; by the union bound over the 8
//! tails a correct proxy fails this case with probability below 1e-6. The
//! interval comes out at [182, 323], i.e. every endpoint within about ±28 %
//! of its fair share. That still catches real bugs: the classic mistake of
//! giving every rule probability 1/k (instead of 1/k, 1/(k-1), … 1/1) sends
//! about 42 % of connections to the last endpoint (count ≈ 422), and an
//! endpoint that is never used gives 0.

use super::Env;
use super::binomial::acceptance_interval;
use super::flow::{From, Source, reach_any, tcp};
use super::scenario::addr::at;
use std::collections::BTreeMap;
use testkit::echo::Outcome;

const ENDPOINTS: [&str; 4] = ["a1", "a2", "b1", "b2"];
const CONNECTIONS: u32 = 1000;
/// Chance that a correct proxy fails this case (union bound over all tails).
const FALSE_FAILURE: f64 = 1e-6;

/// Runs the case; `Ok(counts and bound)` or `Err(failure text)`.
pub fn run(env: &Env) -> Result<String, String> {
    let flow = tcp(From::Pod("ca"), at([10, 96, 10, 10], 80), reach_any(&ENDPOINTS, 8080, Source::Kept)).times(CONNECTIONS as usize);
    let attempts = flow.probe(env.cluster)?;
    flow.check(env.cluster, &attempts)?;
    let mut counts: BTreeMap<&str, u32> = ENDPOINTS.iter().map(|ep| (*ep, 0)).collect();
    for a in &attempts {
        if let Outcome::Answered(ans) = &a.outcome
            && let Some(n) = counts.get_mut(ans.ep.as_str())
        {
            *n += 1;
        }
    }
    let k = ENDPOINTS.len() as f64;
    let (lo, hi) = acceptance_interval(CONNECTIONS, 1.0 / k, FALSE_FAILURE / (2.0 * k));
    let shown: Vec<String> = counts.iter().map(|(ep, n)| format!("{ep} {n}")).collect();
    let text = format!(
        "{} -> {CONNECTIONS} connections: {}; accepted per endpoint: [{lo}, {hi}] (false-failure chance < {FALSE_FAILURE:e})",
        flow.describe(),
        shown.join(", ")
    );
    if counts.values().all(|n| (lo..=hi).contains(n)) { Ok(text) } else { Err(format!("{text}\n    problem:  a count is outside the accepted interval")) }
}
