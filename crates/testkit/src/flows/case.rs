//! One reference flow: who sent what where, what upstream did with it and
//! what was observed.

use super::expected::Expected;
use super::topology::NODE_A_IP;
use crate::tracer::{Outcome, Packet, Protocol};
use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// Where a flow comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowSource {
    /// A client pod on node-a (`pod 10.244.0.200`).
    Pod(IpAddr),
    /// A process on node-a itself.
    Node,
    /// An outside client (`ext 172.20.0.10`, `ext 172.20.0.66`).
    External(IpAddr),
    /// An endpoint pod on node-a reaching its own service (`ep
    /// 10.244.0.11`: hairpin).
    Endpoint(IpAddr),
}

/// An iptables rule whose packet counter moved during the flow (nat rules
/// count first packets only, filter rules every packet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleHit {
    /// `nat` / `filter`.
    pub table: String,
    /// Chain.
    pub chain: String,
    /// The rule after `-A CHAIN`, as `iptables-save` printed it.
    pub rule: String,
    /// Packets counted.
    pub packets: u64,
}

/// What the probes saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observation {
    /// Connections answered, per endpoint that answered.
    pub answered: BTreeMap<SocketAddr, usize>,
    /// Source addresses each endpoint saw.
    pub peers: BTreeMap<SocketAddr, BTreeSet<IpAddr>>,
    /// Connections that only reported being established (no endpoint
    /// answer, e.g. to the kube-apiserver).
    pub connected_only: usize,
    /// Failed probes by error (`timeout`, `ECONNREFUSED`).
    pub failures: BTreeMap<String, usize>,
}

/// One path upstream's nft trace recorded for a flow: the packets in
/// conntrack state new that took it, and its `<table> <chain> <rule or
/// policy> (verdict)` lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracedPath {
    /// Packets that took this path.
    pub count: u64,
    /// The steps, in order.
    pub steps: Vec<String>,
}

/// One flow of the reference table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowCase {
    /// `F01` ...
    pub id: String,
    /// Scenario number (`1`, `5a`, `K` ...).
    pub scenario: String,
    /// `namespace/name` of the service.
    pub service: String,
    /// Who sends.
    pub from: FlowSource,
    /// L4 protocol.
    pub protocol: Protocol,
    /// Where to.
    pub destination: SocketAddr,
    /// What the destination is: `cip`, `np`, `lb0`, `xip0`, `lo` ...
    pub target: String,
    /// Upstream's verdict.
    pub expected: Expected,
    /// What the probes saw.
    pub observed: Observation,
    /// iptables counters that moved (empty for nftables flows).
    pub rule_hits: Vec<RuleHit>,
    /// The nft trace paths (empty for iptables flows).
    pub nft_trace: Vec<TracedPath>,
}

impl FlowSource {
    /// The client's address for a packet to `destination`: node-a sends
    /// from its InternalIP, or from 127.0.0.1 to a loopback address.
    pub fn address(&self, destination: IpAddr) -> IpAddr {
        match self {
            FlowSource::Pod(ip) | FlowSource::External(ip) | FlowSource::Endpoint(ip) => *ip,
            FlowSource::Node if destination.is_loopback() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            FlowSource::Node => IpAddr::V4(NODE_A_IP),
        }
    }
}

impl FlowCase {
    /// The client's source address.
    pub fn source(&self) -> IpAddr {
        self.from.address(self.destination.ip())
    }

    /// The flow's first packet.
    pub fn packet(&self) -> Packet {
        let source = self.source();
        match self.from {
            FlowSource::Node => Packet::local(self.protocol, source, self.destination),
            _ => Packet::inbound(self.protocol, source, self.destination),
        }
    }

    /// The outcomes a tracer must report for this flow.
    pub fn expected_outcomes(&self) -> BTreeSet<Outcome> {
        self.expected.outcomes(self.source())
    }

    /// One line naming the flow, for messages.
    pub fn label(&self) -> String {
        let from = match self.from {
            FlowSource::Pod(ip) => format!("pod {ip}"),
            FlowSource::Node => "node-a".to_string(),
            FlowSource::External(ip) => format!("ext {ip}"),
            FlowSource::Endpoint(ip) => format!("ep {ip}"),
        };
        format!("{} (scenario {}, {}): {from} -> {} {}", self.id, self.scenario, self.service, self.protocol, self.destination)
    }
}
