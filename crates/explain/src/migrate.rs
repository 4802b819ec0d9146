//! `explain migrate`: what behaves otherwise after switching a node from
//! one mode to another (IPVS or iptables to nftables, IPVS or nftables to
//! iptables), per Service, and why.
//!
//! Two sources, both checkable: every Service port is probed — a new
//! connection to its ClusterIP (and another port of it), its NodePort on
//! each node address and on 127.0.0.1, its load-balancer and external IPs,
//! from a pod, the node and an outside client ([`probes`]) — through the
//! node's current rules and through what the new mode would program for
//! the same cluster state, and each probe whose endings differ is a
//! difference, with why ([`why`]); and what no first packet shows
//! (the IPVS scheduler and weights, session affinity's scope, the
//! node-wide settings) is read from the
//! current state and the configuration ([`notes`]). A Service with
//! neither is reported as having no difference.

mod notes;
pub mod probes;
mod text;
mod why;

use crate::error::ExplainError;
use crate::explanation::{Explanation, Reach};
use crate::ipvs::IpvsDump;
use crate::node::Node;
use crate::query::Query;
use crate::tracer::Outcome;
use model::Snapshot;
use probes::{Clients, Probe};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

pub use notes::Settings;

/// Walks one probe through one mode's rules.
pub type Walker<'a> = &'a dyn Fn(&Query) -> Result<Explanation, ExplainError>;

/// A switch to compare: the modes, the cluster state, the node and how to
/// walk a packet through each mode's rules.
pub struct Migration<'a> {
    /// The mode the node runs now (`ipvs`, `iptables`, `nftables`).
    pub from: &'a str,
    /// The mode it switches to.
    pub to: &'a str,
    /// The cluster state (one IP family's).
    pub snapshot: &'a Snapshot,
    /// The node's addresses.
    pub node: &'a Node,
    /// Who the probes come from.
    pub clients: &'a Clients,
    /// The current state when it is IPVS mode's (schedulers, weights,
    /// persistence).
    pub ipvs: Option<&'a IpvsDump>,
    /// The node-wide settings of both modes.
    pub settings: &'a Settings,
    /// The current rules.
    pub before: Walker<'a>,
    /// The new mode's rules.
    pub after: Walker<'a>,
}

/// What changes with the switch.
#[derive(Debug, Clone, Serialize)]
pub struct MigrationReport {
    /// The mode now.
    pub from: String,
    /// The mode after the switch.
    pub to: String,
    /// Node-wide differences (settings whose defaults differ, workarounds
    /// one mode has), each with why.
    pub node: Vec<Note>,
    /// Probes of a port no Service has on a ClusterIP, when every
    /// ClusterIP's ends alike: one difference for all (else each is its
    /// Service's).
    pub cluster_ip_other_ports: Option<Difference>,
    /// One entry per Service, in name order.
    pub services: Vec<ServiceChange>,
}

/// One Service: what differs, and what was checked unchanged.
#[derive(Debug, Clone, Serialize)]
pub struct ServiceChange {
    /// `namespace/name`.
    pub service: String,
    /// Probes whose endings differ.
    pub differences: Vec<Difference>,
    /// What no probe shows but differs (scheduler, weights, affinity).
    pub notes: Vec<Note>,
    /// Probes whose endings are the same in both modes.
    pub unchanged: Vec<Unchanged>,
}

impl ServiceChange {
    /// Nothing behaves otherwise.
    pub fn no_difference(&self) -> bool {
        self.differences.is_empty() && self.notes.is_empty()
    }
}

/// A probe that ends otherwise after the switch.
#[derive(Debug, Clone, Serialize)]
pub struct Difference {
    /// The probe.
    pub probe: Probe,
    /// Its endings now.
    pub before: Vec<Reach>,
    /// Its endings after the switch.
    pub after: Vec<Reach>,
    /// Why, in one line.
    pub why: String,
}

/// A probe that ends alike in both modes.
#[derive(Debug, Clone, Serialize)]
pub struct Unchanged {
    /// The probe.
    pub probe: Probe,
    /// Its endings, now and after.
    pub outcomes: Vec<Reach>,
}

/// A difference no probe shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Note {
    /// What differs (`scheduler`, `session affinity`, `ping` …).
    pub topic: String,
    /// How and why.
    pub why: String,
}

/// Compares the two modes for every Service of the cluster state.
pub fn compare(migration: &Migration<'_>) -> Result<MigrationReport, ExplainError> {
    let mut by_service: BTreeMap<String, ServiceChange> = BTreeMap::new();
    let node_source = migration.snapshot.node.addresses.first().copied();
    for (name, port) in &migration.snapshot.services {
        let service = name.service.to_string();
        let other_port = (!by_service.contains_key(&service)).then(|| other_port(migration.snapshot, port.cluster_ip));
        let entry = by_service.entry(service.clone()).or_insert_with(|| ServiceChange {
            service,
            differences: Vec::new(),
            notes: Vec::new(),
            unchanged: Vec::new(),
        });
        let endpoints = migration.snapshot.endpoints_of(name);
        for probe in probes::of_port(name, port, migration.node, node_source, migration.clients, other_port) {
            let query = probe.query()?;
            let before = (migration.before)(&query)?;
            let after = (migration.after)(&query)?;
            if endings(&before) == endings(&after) {
                entry.unchanged.push(Unchanged { probe, outcomes: after.outcomes });
                continue;
            }
            let why = why::why(migration, &probe, port, endpoints, &before, &after);
            entry.differences.push(Difference { probe, before: before.outcomes, after: after.outcomes, why });
        }
        for note in notes::of_port(migration, name, port) {
            if !entry.notes.contains(&note) {
                entry.notes.push(note);
            }
        }
    }
    let mut services: Vec<ServiceChange> = by_service.into_values().collect();
    let cluster_ip_other_ports = other_ports_alike(&mut services);
    Ok(MigrationReport {
        from: migration.from.to_string(),
        to: migration.to.to_string(),
        node: notes::of_node(migration),
        cluster_ip_other_ports,
        services,
    })
}

/// When every Service's other-port probe ends alike (now and after), they
/// leave the Services and the first, if they differ, is returned to stand
/// for all.
fn other_ports_alike(services: &mut [ServiceChange]) -> Option<Difference> {
    let is_other = |target: probes::Target| target == probes::Target::ClusterIpOtherPort;
    let mut pairs = BTreeSet::new();
    let mut count = 0;
    for service in services.iter() {
        for d in service.differences.iter().filter(|d| is_other(d.probe.target)) {
            pairs.insert((kinds(&d.before), kinds(&d.after)));
            count += 1;
        }
        for u in service.unchanged.iter().filter(|u| is_other(u.probe.target)) {
            pairs.insert((kinds(&u.outcomes), kinds(&u.outcomes)));
            count += 1;
        }
    }
    if pairs.len() != 1 || pairs.iter().any(|(a, b)| a == b) {
        return None;
    }
    let mut first = None;
    for service in services.iter_mut() {
        let (moved, kept): (Vec<Difference>, Vec<Difference>) = service.differences.drain(..).partition(|d| is_other(d.probe.target));
        service.differences = kept;
        for d in moved {
            if first.is_none() {
                first = Some(Difference { why: format!("{} (alike on all {count} ClusterIPs)", d.why), ..d });
            }
        }
    }
    first
}

/// The endings' kinds, endpoints aside (`dnat`, `reject` …).
fn kinds(reaches: &[Reach]) -> BTreeSet<String> {
    reaches.iter().map(|r| format!("{:?}", std::mem::discriminant(r))).collect()
}

/// A port no Service port at `cluster_ip` has.
fn other_port(snapshot: &Snapshot, cluster_ip: std::net::IpAddr) -> u16 {
    let used: Vec<u16> = snapshot.services.values().filter(|p| p.cluster_ip == cluster_ip).map(|p| p.port).collect();
    probes::unused_port(&used)
}

/// An explanation's endings, without their chances.
fn endings(explanation: &Explanation) -> BTreeSet<Outcome> {
    explanation.outcomes.iter().map(Reach::outcome).collect()
}
