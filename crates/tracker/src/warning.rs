//! What the tracker reports about objects it cannot (fully) use.

use std::fmt;

/// The kinds of API object the proxy reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ObjectKind {
    /// v1 Service.
    Service,
    /// discovery.k8s.io/v1 EndpointSlice.
    EndpointSlice,
    /// v1 Node.
    Node,
    /// networking.k8s.io/v1 ServiceCIDR.
    ServiceCIDR,
}

impl ObjectKind {
    /// The API kind name (`Service`, `EndpointSlice`, `Node`,
    /// `ServiceCIDR`).
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectKind::Service => "Service",
            ObjectKind::EndpointSlice => "EndpointSlice",
            ObjectKind::Node => "Node",
            ObjectKind::ServiceCIDR => "ServiceCIDR",
        }
    }
}

impl fmt::Display for ObjectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What is wrong with an object, and (in the wording) what the tracker did
/// about it: whole object skipped, one port / endpoint skipped, or one
/// field value dropped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// `metadata.name` is missing or empty: the object is skipped.
    #[error("metadata.name is missing; object skipped")]
    MissingName,
    /// `spec.type` is not ClusterIP, NodePort, LoadBalancer or ExternalName:
    /// the Service is skipped.
    #[error("unknown spec.type {0:?}; service skipped")]
    UnknownServiceType(String),
    /// `spec.clusterIP` / `spec.clusterIPs` holds something that is not an IP
    /// address: the Service is skipped (upstream would program garbage).
    #[error("bad clusterIP {0:?}: not an IP address; service skipped")]
    BadClusterIp(String),
    /// One `spec.externalIPs` entry is not an IP address: that entry is
    /// dropped, the Service is kept (as upstream filters external IPs).
    #[error("bad externalIP {0:?}: not an IP address; ignored")]
    BadExternalIp(String),
    /// One `status.loadBalancer.ingress[].ip` is not an IP address: dropped,
    /// the Service is kept.
    #[error("bad load-balancer ingress IP {0:?}: not an IP address; ignored")]
    BadLoadBalancerIp(String),
    /// One `spec.loadBalancerSourceRanges` entry is not a CIDR: dropped, the
    /// Service is kept (upstream filters source ranges the same way).
    #[error("bad loadBalancerSourceRange {0:?}: not a CIDR (a.b.c.d/n); ignored")]
    BadSourceRange(String),
    /// `spec.ports[].port` is 0 or beyond 65535: that port is skipped.
    #[error("port {port:?}: bad port number {value}; port skipped")]
    BadPort {
        /// The port's name.
        port: String,
        /// The value found.
        value: i64,
    },
    /// `spec.ports[].nodePort` is negative or beyond 65535: that port is
    /// skipped.
    #[error("port {port:?}: bad nodePort {value}; port skipped")]
    BadNodePort {
        /// The port's name.
        port: String,
        /// The value found.
        value: i64,
    },
    /// `spec.ports[].protocol` is not TCP, UDP or SCTP: that port is skipped.
    #[error("port {port:?}: unknown protocol {value:?}; port skipped")]
    BadProtocol {
        /// The port's name.
        port: String,
        /// The value found.
        value: String,
    },
    /// Two `spec.ports` entries share name and protocol: the later one is
    /// skipped.
    #[error("port {port:?}/{protocol}: duplicate port name; later port skipped")]
    DuplicatePort {
        /// The port's name.
        port: String,
        /// Its protocol.
        protocol: String,
    },
    /// `spec.healthCheckNodePort` is out of range: ignored (no health-check
    /// server), the Service is kept.
    #[error("bad healthCheckNodePort {0}; ignored")]
    BadHealthCheckNodePort(i64),
    /// `sessionAffinityConfig.clientIP.timeoutSeconds` is outside 1..=86400:
    /// the default (10800) is used.
    #[error("bad sessionAffinityConfig.clientIP.timeoutSeconds {0}; using 10800")]
    BadAffinityTimeout(i64),
    /// The EndpointSlice has no `kubernetes.io/service-name` label: skipped.
    #[error("no kubernetes.io/service-name label; slice skipped")]
    SliceWithoutServiceName,
    /// An EndpointSlice port has no port number, 0, or beyond 65535: that
    /// port is skipped.
    #[error("endpoint port {port:?}: bad port number {value:?}; port skipped")]
    BadEndpointPort {
        /// The port's name.
        port: String,
        /// The value found (None when unset).
        value: Option<i64>,
    },
    /// An EndpointSlice port's protocol is not TCP, UDP or SCTP: skipped.
    #[error("endpoint port {port:?}: unknown protocol {value:?}; port skipped")]
    BadEndpointProtocol {
        /// The port's name.
        port: String,
        /// The value found.
        value: String,
    },
    /// An endpoint has no address: that endpoint is skipped.
    #[error("endpoint without address; endpoint skipped")]
    EndpointWithoutAddress,
    /// An endpoint's first address is not an IP: that endpoint is skipped.
    #[error("bad endpoint address {0:?}: not an IP address; endpoint skipped")]
    BadEndpointAddress(String),
    /// A Node InternalIP / ExternalIP is not an IP address: dropped.
    #[error("bad node address {0:?}: not an IP address; ignored")]
    BadNodeAddress(String),
    /// A Node podCIDR is not a CIDR: dropped.
    #[error("bad podCIDR {0:?}: not a CIDR; ignored")]
    BadPodCidr(String),
    /// A ServiceCIDR `spec.cidrs` entry is not a CIDR: dropped, the other
    /// entries are kept.
    #[error("bad service CIDR {0:?}: not a CIDR; ignored")]
    BadServiceCidr(String),
}

/// One problem with one object: logged once with `tracing::warn!` when it
/// is found, and returned to the caller so tests (and the manifests source)
/// can inspect it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// Kind of the object.
    pub kind: ObjectKind,
    /// Its namespace (empty for cluster-scoped kinds: Nodes, ServiceCIDRs).
    pub namespace: String,
    /// Its name (empty when missing).
    pub name: String,
    /// What is wrong.
    pub problem: Problem,
}

impl Warning {
    /// `kind ns/name` (or `kind name` for cluster-scoped objects).
    pub fn object(&self) -> String {
        object_label(self.kind, &self.namespace, &self.name)
    }

    /// Logs the warning (one `tracing::warn!` line).
    pub(crate) fn log(&self) {
        tracing::warn!(object = %self.object(), "{}", self.problem);
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.object(), self.problem)
    }
}

/// `kind ns/name`, `kind name` without namespace, `<unnamed>` without name.
pub fn object_label(kind: ObjectKind, namespace: &str, name: &str) -> String {
    let name = if name.is_empty() { "<unnamed>" } else { name };
    if namespace.is_empty() {
        format!("{kind} {name}")
    } else {
        format!("{kind} {namespace}/{name}")
    }
}

/// Collects the warnings about one object.
#[derive(Debug)]
pub(crate) struct Warnings<'a> {
    kind: ObjectKind,
    namespace: &'a str,
    name: &'a str,
    found: Vec<Warning>,
}

impl<'a> Warnings<'a> {
    /// Starts collecting for one object.
    pub(crate) fn new(kind: ObjectKind, namespace: &'a str, name: &'a str) -> Self {
        Self {
            kind,
            namespace,
            name,
            found: Vec::new(),
        }
    }

    /// Records one problem (the [`crate::Tracker`] logs it).
    pub(crate) fn push(&mut self, problem: Problem) {
        let warning = Warning {
            kind: self.kind,
            namespace: self.namespace.to_string(),
            name: self.name.to_string(),
            problem,
        };
        self.found.push(warning);
    }

    /// The warnings found.
    pub(crate) fn into_vec(self) -> Vec<Warning> {
        self.found
    }
}
