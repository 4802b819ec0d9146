//! A discovery.k8s.io/v1 EndpointSlice → the compact form the tracker
//! keeps (ports and endpoints only, a few dozen bytes per endpoint).
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
//! the first address of an endpoint is used.

use crate::IpFamily;
use crate::meta::{label, name_of, namespace_of, protocol_of};
use crate::warning::{ObjectKind, Problem, Warning, Warnings};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointPort, EndpointSlice};
use model::{Protocol, ServiceName};
use std::net::IpAddr;
use std::sync::Arc;

/// Label naming the Service an EndpointSlice belongs to.
pub const LABEL_SERVICE_NAME: &str = "kubernetes.io/service-name";

/// Identifies one EndpointSlice: namespace and slice name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct SliceKey {
    pub(crate) namespace: String,
    pub(crate) name: String,
}

impl SliceKey {
    pub(crate) fn of(slice: &EndpointSlice) -> Self {
        Self {
            namespace: namespace_of(&slice.metadata).to_string(),
            name: name_of(&slice.metadata).to_string(),
        }
    }
}

/// One usable port of a slice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SlicePort {
    pub(crate) name: String,
    pub(crate) protocol: Protocol,
    pub(crate) port: u16,
}

/// One usable endpoint of a slice, conditions resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SliceEndpoint {
    pub(crate) ip: IpAddr,
    pub(crate) node_name: Option<Arc<str>>,
    pub(crate) ready: bool,
    pub(crate) serving: bool,
    pub(crate) terminating: bool,
}

/// What the tracker keeps of one EndpointSlice.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct SliceInfo {
    pub(crate) ports: Vec<SlicePort>,
    pub(crate) endpoints: Vec<SliceEndpoint>,
}

/// The slice's owning service and compact form; `None` when the proxy
/// ignores or cannot use the slice. `intern` shares node-name strings.
pub(crate) fn slice_info(
    slice: &EndpointSlice,
    family: IpFamily,
    intern: &mut impl FnMut(&str) -> Arc<str>,
) -> (Option<(ServiceName, SliceInfo)>, Vec<Warning>) {
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
    if slice.address_type != family.address_type() {
        return (None, warnings.into_vec());
    }
    let info = SliceInfo {
        ports: slice
            .ports
            .iter()
            .flatten()
            .filter_map(|p| slice_port(p, &mut warnings))
            .collect(),
        endpoints: slice
            .endpoints
            .iter()
            .flatten()
            .filter_map(|ep| slice_endpoint(ep, family, intern, &mut warnings))
            .collect(),
    };
    (
        Some((ServiceName::new(namespace, service), info)),
        warnings.into_vec(),
    )
}

fn slice_port(port: &EndpointPort, warnings: &mut Warnings<'_>) -> Option<SlicePort> {
    let name = port.name.clone().unwrap_or_default();
    let protocol = match protocol_of(port.protocol.as_deref()) {
        Ok(p) => p,
        Err(value) => {
            warnings.push(Problem::BadEndpointProtocol { port: name, value });
            return None;
        }
    };
    match port.port.map(u16::try_from) {
        Some(Ok(number)) if number != 0 => Some(SlicePort {
            name,
            protocol,
            port: number,
        }),
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
    intern: &mut impl FnMut(&str) -> Arc<str>,
    warnings: &mut Warnings<'_>,
) -> Option<SliceEndpoint> {
    let Some(first) = ep.addresses.first() else {
        warnings.push(Problem::EndpointWithoutAddress);
        return None;
    };
    let ip = match first.parse::<IpAddr>() {
        Ok(ip) if family.matches(&ip) => ip,
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
        node_name: ep.node_name.as_deref().map(intern),
        ready,
        serving: conditions.and_then(|c| c.serving).unwrap_or(true),
        terminating: conditions.and_then(|c| c.terminating).unwrap_or(false),
    })
}
