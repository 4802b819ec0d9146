//! Checking `kube-proxy-rs explain packet` against a flow: the command
//! line that asks about the flow's first packet, and whether the
//! endings its JSON answer lists are the flow's verdict (the same DNAT
//! set with the same masquerading, or the same drop / reject / no rule).

use super::case::{FlowCase, FlowSource};
use super::expected::Expected;
use crate::tracer::{Outcome, describe_outcomes};
use anyhow::{Context, Result, bail};
use std::collections::BTreeSet;
use std::net::SocketAddr;

/// node-a's interface towards the external clients.
const EXTERNAL_INTERFACE: &str = "ext0";

/// The arguments of `kube-proxy-rs explain packet … -o json` for `flow`'s
/// first packet as it reaches node-a (external clients arrive on
/// `ext0`; a pod's veth is left unknown).
pub fn explain_args(flow: &FlowCase) -> Vec<String> {
    let mut args = vec![
        "explain".to_string(),
        "packet".to_string(),
        flow.protocol.to_string(),
        flow.source().to_string(),
        flow.destination.to_string(),
    ];
    match flow.from {
        FlowSource::Node => args.push("--from-node".to_string()),
        FlowSource::Pod(_) | FlowSource::Endpoint(_) => args.push("--from-pod".to_string()),
        FlowSource::External(_) => {
            args.extend(["--from-outside", "--in-interface", EXTERNAL_INTERFACE].map(String::from));
        }
    }
    args.extend(["-o".to_string(), "json".to_string()]);
    args
}

/// The endings an `explain packet -o json` answer lists.
pub fn explained_outcomes(json: &str) -> Result<BTreeSet<Outcome>> {
    let answer: serde_json::Value = serde_json::from_str(json).context("explain's answer is not JSON")?;
    let outcomes = answer.get("outcomes").and_then(|o| o.as_array()).context("no `outcomes` list")?;
    outcomes.iter().map(outcome).collect()
}

fn outcome(reach: &serde_json::Value) -> Result<Outcome> {
    let masquerade = || reach.get("masquerade").and_then(serde_json::Value::as_bool).context("no `masquerade`");
    Ok(match reach.get("kind").and_then(|k| k.as_str()).context("no `kind`")? {
        "dnat" => {
            let to = reach.get("to").and_then(|t| t.as_str()).context("no `to`")?;
            Outcome::Dnat { to: to.parse::<SocketAddr>().with_context(|| format!("`to` {to}"))?, masquerade: masquerade()? }
        }
        "accept" => Outcome::Accept { masquerade: masquerade()? },
        "local" => Outcome::Local,
        "drop" => Outcome::Drop,
        "reject" => Outcome::Reject,
        other => bail!("unknown kind `{other}`"),
    })
}

/// `Ok` if `explained` is what the flow's verdict means: the same
/// endings (for a sticky service, every endpoint it may stick to).
pub fn check_explained(flow: &FlowCase, explained: &BTreeSet<Outcome>) -> Result<(), String> {
    let expected = flow.expected_outcomes();
    if *explained == expected {
        return Ok(());
    }
    let what = match flow.expected {
        Expected::Dnat { .. } => "DNAT set and masquerading",
        _ => "ending",
    };
    Err(format!("explain says {}, the flow's verdict is {} ({what} differ)", describe_outcomes(explained), describe_outcomes(&expected)))
}
