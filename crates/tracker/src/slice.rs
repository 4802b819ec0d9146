//! A discovery.k8s.io/v1 EndpointSlice → the form the tracker keeps: for
//! each usable port, the model endpoints it contributes (sorted, one per
//! address, local copies preferred), ready to be shared with snapshots.
//!
//! What is skipped, and how (upstream's EndpointSliceCache semantics):
//! * silently: slices whose `addressType` is not this tracker's family
//!   (including FQDN), and endpoints whose first address is of the other
//!   family;
//! * the whole slice, with a warning: no name, no
//!   `kubernetes.io/service-name` label;
//! * one port, with a warning: no port number, 0 or > 65535, an unknown
//!   protocol;
//! * one endpoint, with a warning: no address, or a first address that is
//!   not an IP.
//!
//! Conditions are resolved as upstream's proxy does: `ready` unset means
//! true, `serving` unset means true, `terminating` unset means false. Only
//! the first address of an endpoint is used. Topology hints
//! (`hints.forZones[].name`, `hints.forNodes[].name`) are kept as given;
//! empty hints are no hints.

use crate::IpFamily;
use crate::merge::canonical;
use crate::meta::{label, name_of, namespace_of, protocol_of};
use crate::warning::{ObjectKind, Problem, Warning, Warnings};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointPort, EndpointSlice};
use model::{EndpointHints, Protocol, ServiceName};
use std::net::IpAddr;
use std::sync::Arc;

/// Label naming the Service an EndpointSlice belongs to.
pub const LABEL_SERVICE_NAME: &str = "kubernetes.io/service-name";

/// Identifies one EndpointSlice: namespace and slice name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct SliceKey {
    pub(crate) namespace: Box<str>,
    pub(crate) name: Box<str>,
}

impl SliceKey {
    pub(crate) fn of(slice: &EndpointSlice) -> Self {
        Self {
            namespace: namespace_of(&slice.metadata).into(),
            name: name_of(&slice.metadata).into(),
        }
    }
}

/// One usable port of a slice and the endpoints it contributes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SlicePort {
    pub(crate) name: String,
    pub(crate) protocol: Protocol,
    pub(crate) port: u16,
    /// Sorted, one per address (see [`canonical`]); shared with the
    /// snapshots when this is the only source of a service port.
    pub(crate) endpoints: Arc<Vec<model::Endpoint>>,
}

/// One usable endpoint of a slice, conditions resolved, before it is
/// given a port.
struct SliceEndpoint {
    ip: IpAddr,
    node_name: Option<model::NodeName>,
    ready: bool,
    serving: bool,
    terminating: bool,
    hints: Option<Arc<EndpointHints>>,
}

impl SliceEndpoint {
    /// The model endpoint at `port`; local when it names `node_name`.
    fn at(&self, port: u16, node_name: &str) -> model::Endpoint {
        let node = self.node_name.as_deref();
        model::Endpoint {
            ip: self.ip,
            port,
            node_name: self.node_name.clone(),
            is_local: !node_name.is_empty() && node == Some(node_name),
            ready: self.ready,
            serving: self.serving,
            terminating: self.terminating,
            hints: self.hints.clone(),
        }
    }
}

/// What the tracker keeps of one EndpointSlice.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct SliceInfo {
    pub(crate) ports: Box<[SlicePort]>,
}

impl SliceInfo {
    /// Takes over the endpoint lists of `held` that equal the new ones, so
    /// an update touching one port keeps the others' shared lists.
    pub(crate) fn reuse_lists(&mut self, held: &SliceInfo) {
        for port in self.ports.iter_mut() {
            let same = held.ports.iter().find(|h| {
                (&h.name, h.protocol, h.port) == (&port.name, port.protocol, port.port) && h.endpoints == port.endpoints
            });
            if let Some(same) = same {
                port.endpoints = same.endpoints.clone();
            }
        }
    }
}

/// How slices are read: the tracker's family and node, and the shared
/// node-name strings.
pub(crate) struct SliceReader<'a, F> {
    pub(crate) family: IpFamily,
    pub(crate) node_name: &'a str,
    pub(crate) intern: F,
}

/// The slice's owning service and kept form; `None` when the proxy
/// ignores or cannot use the slice.
pub(crate) fn slice_info(
    slice: &EndpointSlice,
    reader: &mut SliceReader<'_, impl FnMut(&str) -> model::NodeName>,
) -> (Option<(ServiceName, SliceInfo)>, Vec<Warning>) {
    let family = reader.family;
    let namespace = namespace_of(&slice.metadata);
    let name = name_of(&slice.metadata);
    let mut warnings = Warnings::new(ObjectKind::EndpointSlice, namespace, name);
    if name.is_empty() {
        warnings.push(Problem::MissingName);
        return (None, warnings.into_vec());
    }
    let Some(service) = label(&slice.metadata, LABEL_SERVICE_NAME) else {
        warnings.push(Problem::SliceWithoutServiceName);
        return (None, warnings.into_vec());
    };
    if slice.address_type != family.as_str() {
        return (None, warnings.into_vec());
    }
    let ports: Vec<(String, Protocol, u16)> = slice
        .ports
        .iter()
        .flatten()
        .filter_map(|p| slice_port(p, &mut warnings))
        .collect();
    let endpoints: Vec<SliceEndpoint> = slice
        .endpoints
        .iter()
        .flatten()
        .filter_map(|ep| slice_endpoint(ep, family, &mut reader.intern, &mut warnings))
        .collect();
    let node_name = reader.node_name;
    let ports = ports
        .into_iter()
        .map(|(name, protocol, port)| SlicePort {
            endpoints: Arc::new(canonical(endpoints.iter().map(|ep| ep.at(port, node_name)).collect())),
            name,
            protocol,
            port,
        })
        .collect();
    let info = SliceInfo { ports };
    (
        Some((ServiceName::new(namespace, service), info)),
        warnings.into_vec(),
    )
}

/// A usable port: name, protocol, number.
fn slice_port(port: &EndpointPort, warnings: &mut Warnings<'_>) -> Option<(String, Protocol, u16)> {
    let name = port.name.clone().unwrap_or_default();
    let protocol = match protocol_of(port.protocol.as_deref()) {
        Ok(p) => p,
        Err(value) => {
            warnings.push(Problem::BadEndpointProtocol { port: name, value });
            return None;
        }
    };
    match port.port.map(u16::try_from) {
        Some(Ok(number)) if number != 0 => Some((name, protocol, number)),
        _ => {
            warnings.push(Problem::BadEndpointPort {
                port: name,
                value: port.port.map(i64::from),
            });
            None
        }
    }
}

fn slice_endpoint(
    ep: &Endpoint,
    family: IpFamily,
    intern: &mut impl FnMut(&str) -> model::NodeName,
    warnings: &mut Warnings<'_>,
) -> Option<SliceEndpoint> {
    let Some(first) = ep.addresses.first() else {
        warnings.push(Problem::EndpointWithoutAddress);
        return None;
    };
    let ip = match first.parse::<IpAddr>() {
        Ok(ip) if family.contains(ip) => ip,
        Ok(_) => return None,
        Err(_) => {
            warnings.push(Problem::BadEndpointAddress(first.clone()));
            return None;
        }
    };
    let conditions = ep.conditions.as_ref();
    let ready = conditions.and_then(|c| c.ready).unwrap_or(true);
    Some(SliceEndpoint {
        ip,
        node_name: ep.node_name.as_deref().map(&mut *intern),
        ready,
        serving: conditions.and_then(|c| c.serving).unwrap_or(true),
        terminating: conditions.and_then(|c| c.terminating).unwrap_or(false),
        hints: hints_of(ep, intern).map(Arc::new),
    })
}

/// The endpoint's zone and node hints; `None` without any.
fn hints_of(ep: &Endpoint, intern: &mut impl FnMut(&str) -> model::NodeName) -> Option<EndpointHints> {
    let hints = ep.hints.as_ref()?;
    let zones = hints.for_zones.iter().flatten().map(|z| z.name.as_str());
    let nodes = hints.for_nodes.iter().flatten().map(|n| intern(&n.name));
    EndpointHints::new(zones, nodes)
}
