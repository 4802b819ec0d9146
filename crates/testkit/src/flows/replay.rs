//! Replaying reference flows for real: each flow's connections sent from
//! its client's namespace in a [`ReferenceNode`], as upstream's run sent
//! them (up to [`TRIES`] fresh connections, stopped after
//! [`GIVE_UP_AFTER`] when those all failed the same way), and checked
//! against the flow's verdict.

use super::case::FlowCase;
use super::counters::{RuleKey, moved, rule_counters};
use super::expected::Expected;
use super::probe::{Attempt, Seen};
use super::verdict::{check, check_dropped_in_node, check_passed_through_node, summary};
use crate::reference_node::{Passage, Paths, ReferenceNode};
use anyhow::Result;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Connections per flow, as in upstream's run.
pub const TRIES: usize = 30;
/// A flow whose first this-many connections failed the same way stops
/// there, as in upstream's run.
pub const GIVE_UP_AFTER: usize = 3;

/// Connections per flow in the traced pass ([`trace_all`]).
pub const TRACE_TRIES: usize = 3;

/// One flow replayed.
#[derive(Debug, Clone)]
pub struct Replayed {
    /// The flow's [`FlowCase::label`].
    pub label: String,
    /// How each connection ended.
    pub seen: Vec<Seen>,
    /// The flow's packets entering and getting through node-a (see
    /// [`ReferenceNode::watch`]); `None` when replayed alone.
    pub passage: Option<Passage>,
    /// `None` if that is what upstream saw, else what differs.
    pub mismatch: Option<String>,
}

impl Replayed {
    /// The failure message: flow, expected verdict, what was seen.
    pub fn report(&self, flow: &FlowCase) -> String {
        format!(
            "{}\n    expected: {:?}\n    seen:     {}{}\n    differs:  {}",
            self.label,
            flow.expected,
            summary(&self.seen),
            self.passage
                .map(|p| format!(" [node-a: {} packet(s) entered, {} got through]", p.entered, p.through))
                .unwrap_or_default(),
            self.mismatch.as_deref().unwrap_or("nothing")
        )
    }
}

/// Replays `flow` from its client in `node`, waiting `timeout` for each
/// connection.
pub fn replay(node: &ReferenceNode, flow: &FlowCase, timeout: Duration) -> Result<Replayed> {
    let (ns, source) = node.client_for(flow)?;
    let attempt = Attempt { protocol: flow.protocol, source, destination: flow.destination, timeout };
    let seen = ns.run(move || {
        let mut seen: Vec<Seen> = Vec::new();
        while seen.len() < TRIES {
            seen.push(attempt.run());
            if seen.len() == GIVE_UP_AFTER && failed_alike(&seen) {
                break;
            }
        }
        seen
    })?;
    let mismatch = check(flow, flow.source(), &seen).err();
    Ok(Replayed { label: flow.label(), seen, passage: None, mismatch })
}

/// Replays every flow, `workers` at a time, with node-a's witness
/// counting their packets: a flow upstream's rules dropped must also be
/// dropped in node-a here ([`check_dropped_in_node`]), one no rule matched
/// must leave node-a ([`check_passed_through_node`]). The results in flow
/// order; errors only if the witness cannot be set up or read.
pub fn replay_all(
    node: &ReferenceNode,
    flows: &[FlowCase],
    timeout: Duration,
    workers: usize,
) -> Result<Vec<Result<Replayed>>> {
    node.watch(flows)?;
    let mut replays = replay_each(node, flows, timeout, workers);
    let passages = node.passages()?;
    for (flow, replayed) in flows.iter().zip(replays.iter_mut()) {
        let Ok(replayed) = replayed else { continue };
        let passage = passages.get(&flow.id).copied().unwrap_or_default();
        replayed.passage = Some(passage);
        if replayed.mismatch.is_some() {
            continue;
        }
        replayed.mismatch = match flow.expected {
            Expected::Drop => check_dropped_in_node(passage).err(),
            Expected::NoRule => check_passed_through_node(passage).err(),
            _ => None,
        };
    }
    Ok(replays)
}

fn replay_each(node: &ReferenceNode, flows: &[FlowCase], timeout: Duration, workers: usize) -> Vec<Result<Replayed>> {
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, Result<Replayed>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers.max(1))
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::SeqCst);
                        let Some(flow) = flows.get(i) else { break };
                        mine.push((i, replay(node, flow, timeout)));
                    }
                    mine
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// Traces every flow through table `kube-proxy` in node-a, as upstream's
/// run did: one flow after the other (a burst of trace events overflows
/// the monitor's socket and loses some), up to [`TRACE_TRIES`] connections
/// each, stopped at the first that is not answered. Returns each flow's
/// paths and what the monitor said on stderr.
pub fn trace_all(
    node: &ReferenceNode,
    flows: &[FlowCase],
    timeout: Duration,
) -> Result<(BTreeMap<String, Paths>, Vec<String>)> {
    let tracer = node.trace(flows)?;
    for flow in flows {
        send_answered_run(node, flow, timeout)?;
    }
    Ok(tracer.finish())
}

/// Up to [`TRACE_TRIES`] connections of `flow` from its client, stopping at
/// the first one not answered.
fn send_answered_run(node: &ReferenceNode, flow: &FlowCase, timeout: Duration) -> Result<()> {
    let (ns, source) = node.client_for(flow)?;
    let attempt = Attempt { protocol: flow.protocol, source, destination: flow.destination, timeout };
    ns.run(move || {
        for _ in 0..TRACE_TRIES {
            if !matches!(attempt.run(), Seen::Answered { .. }) {
                break;
            }
        }
    })
}

/// The iptables counterpart of [`trace_all`]: one flow after the other,
/// up to [`TRACE_TRIES`] connections each, the rules whose packet counters
/// the flow moved in node-a (`iptables-legacy-save -c` before and after,
/// a moment after the last connection so its closing packets count for it).
pub fn count_all(
    node: &ReferenceNode,
    flows: &[FlowCase],
    timeout: Duration,
) -> Result<BTreeMap<String, BTreeSet<RuleKey>>> {
    let mut hits = BTreeMap::new();
    let mut before = rule_counters(node.node())?;
    for flow in flows {
        send_answered_run(node, flow, timeout)?;
        std::thread::sleep(SETTLE);
        let after = rule_counters(node.node())?;
        hits.insert(flow.id.clone(), moved(&before, &after));
        before = after;
    }
    Ok(hits)
}

/// How long the last packets of a flow's connections get before its
/// counters are read.
const SETTLE: Duration = Duration::from_millis(100);

/// No connection answered and all ended the same way.
fn failed_alike(seen: &[Seen]) -> bool {
    let first = &seen[0];
    !matches!(first, Seen::Answered { .. }) && seen.iter().all(|s| s == first)
}
