//! Reads a mode's `flows.json` and the summary table of its `flows.txt`
//! into [`FlowCase`]s.

use super::case::{FlowCase, FlowSource, Observation, RuleHit, TracedPath};
use super::expected::Expected;
use super::reference::read_reference;
use crate::tracer::Protocol;
use anyhow::{Context, Result, bail};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

/// The iptables-mode flows of the reference corpus.
pub fn iptables_flows() -> Result<Vec<FlowCase>> {
    load_flows("iptables")
}

/// The nftables-mode flows of the reference corpus.
pub fn nftables_flows() -> Result<Vec<FlowCase>> {
    load_flows("nftables")
}

/// The flows of `mode` (`iptables`, `nftables`): `<mode>/flows.json`
/// with each flow's verdict from `<mode>/flows.txt`.
pub fn load_flows(mode: &str) -> Result<Vec<FlowCase>> {
    let json = read_reference(&format!("{mode}/flows.json"))?;
    let summary = read_reference(&format!("{mode}/flows.txt"))?;
    let raw: Vec<RawFlow> = serde_json::from_str(&json).with_context(|| format!("parse {mode}/flows.json"))?;
    let results = summary_results(&summary);
    raw.into_iter()
        .map(|flow| {
            let id = flow.id.clone();
            flow_case(flow, &results).with_context(|| format!("{mode} flow {id}"))
        })
        .collect()
}

#[derive(Deserialize)]
struct RawFlow {
    id: String,
    scen: String,
    svc: String,
    src: String,
    src_label: String,
    bind: Option<String>,
    proto: String,
    dst: IpAddr,
    port: u16,
    target: String,
    probe: RawProbe,
    #[serde(default)]
    iptables_hits: Vec<RawHit>,
    #[serde(default)]
    nft_trace: Vec<RawTrace>,
}

#[derive(Deserialize)]
struct RawTrace {
    count: u64,
    steps: Vec<String>,
}

#[derive(Deserialize)]
struct RawProbe {
    results: Vec<RawResult>,
}

#[derive(Deserialize)]
struct RawResult {
    ok: bool,
    ep: Option<SocketAddr>,
    peer: Option<IpAddr>,
    err: Option<String>,
    connected: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct RawHit {
    table: String,
    chain: String,
    rule: String,
    packets: u64,
}

/// The summary rows by flow id: the whole row, whose result column
/// follows the destination.
fn summary_results(summary: &str) -> BTreeMap<String, String> {
    summary
        .lines()
        .skip_while(|line| !line.starts_with("## Summary"))
        .take_while(|line| !line.starts_with("## Details"))
        .filter_map(|line| Some((line.split_whitespace().next()?.to_string(), line.to_string())))
        .collect()
}

fn flow_case(flow: RawFlow, results: &BTreeMap<String, String>) -> Result<FlowCase> {
    let protocol = match flow.proto.as_str() {
        "tcp" => Protocol::Tcp,
        "udp" => Protocol::Udp,
        "sctp" => Protocol::Sctp,
        other => bail!("unknown protocol {other}"),
    };
    let destination = SocketAddr::new(flow.dst, flow.port);
    let row = results.get(&flow.id).context("no row in the flows.txt summary")?;
    let result = result_column(row, &flow.proto, &destination.to_string())
        .with_context(|| format!("summary row lacks `{} {destination}`: {row}", flow.proto))?;
    let expected = Expected::parse(result)?;
    Ok(FlowCase {
        from: flow_source(&flow)?,
        observed: observation(&flow.probe),
        rule_hits: flow
            .iptables_hits
            .into_iter()
            .map(|h| RuleHit { table: h.table, chain: h.chain, rule: h.rule, packets: h.packets })
            .collect(),
        nft_trace: flow.nft_trace.into_iter().map(|t| TracedPath { count: t.count, steps: t.steps }).collect(),
        id: flow.id,
        scenario: flow.scen,
        service: flow.svc,
        protocol,
        destination,
        target: flow.target,
        expected,
    })
}

/// The text after the `proto destination` columns of a summary row.
fn result_column<'a>(row: &'a str, proto: &str, destination: &str) -> Option<&'a str> {
    row.match_indices(destination).find_map(|(at, _)| {
        let before = row[..at].strip_suffix(char::is_whitespace)?;
        let after = &row[at + destination.len()..];
        let is_column = before.trim_end().ends_with(proto) && after.starts_with(char::is_whitespace);
        is_column.then(|| after.trim())
    })
}

/// `pod` takes its address from the label (`pod 10.244.0.200`), the
/// others from the address the probe bound to.
fn flow_source(flow: &RawFlow) -> Result<FlowSource> {
    let bound = || -> Result<IpAddr> {
        let bind = flow.bind.as_deref().context("no bind address")?;
        bind.parse().with_context(|| format!("bind address `{bind}`"))
    };
    Ok(match flow.src.as_str() {
        "node" => FlowSource::Node,
        "pod" => {
            let last = flow.src_label.split_whitespace().last().unwrap_or_default();
            FlowSource::Pod(last.parse().with_context(|| format!("pod address in `{}`", flow.src_label))?)
        }
        "ext" | "extout" => FlowSource::External(bound()?),
        "hairpin" => FlowSource::Endpoint(bound()?),
        other => bail!("unknown source kind `{other}`"),
    })
}

fn observation(probe: &RawProbe) -> Observation {
    let mut seen = Observation::default();
    for result in &probe.results {
        match (result.ok, result.ep) {
            (true, Some(ep)) => {
                *seen.answered.entry(ep).or_default() += 1;
                if let Some(peer) = result.peer {
                    seen.peers.entry(ep).or_default().insert(peer);
                }
            }
            (true, None) if result.connected.is_some() => seen.connected_only += 1,
            _ => {
                let error = result.err.clone().unwrap_or_else(|| "unknown".to_string());
                *seen.failures.entry(error).or_default() += 1;
            }
        }
    }
    seen
}
