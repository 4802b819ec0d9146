//! A v1 Service → the [`ServicePort`]s the proxy programs.
//!
//! What is skipped, and how (upstream semantics):
//! * silently (not the proxy's business): services labelled
//!   `service.kubernetes.io/service-proxy-name` or
//!   `service.kubernetes.io/headless`, headless ones (`clusterIP: None`),
//!   ExternalName ones, ones without a clusterIP, and ones whose clusterIPs
//!   are all of the other IP family;
//! * the whole Service, with a warning: no name, an unknown `spec.type`, a
//!   clusterIP that is not an IP address;
//! * one port, with a warning: port number 0 or > 65535, a nodePort out of
//!   range, an unknown protocol, a duplicate name/protocol pair;
//! * one value, with a warning, the Service kept: an externalIP, a
//!   load-balancer ingress IP or a loadBalancerSourceRange that does not
//!   parse (upstream filters these the same way), a bad
//!   healthCheckNodePort (ignored) or affinity timeout (default used).
//!
//! Values of the other family (externalIPs, ingress IPs, source ranges) are
//! dropped silently, as upstream's single-family proxier does.

use crate::IpFamily;
use crate::meta::{has_label, name_of, namespace_of, protocol_of};
use crate::warning::{ObjectKind, Problem, Warning, Warnings};
use ipnet::IpNet;
use k8s_openapi::api::core::v1::{Service, ServiceSpec};
use model::{ServiceName, ServicePort, ServicePortName};
use std::collections::BTreeSet;
use std::net::IpAddr;

/// Label of services handled by another proxy.
pub const LABEL_SERVICE_PROXY_NAME: &str = "service.kubernetes.io/service-proxy-name";
/// Label of headless services.
pub const LABEL_HEADLESS: &str = "service.kubernetes.io/headless";
/// ClientIP affinity timeout when the Service gives none (3 hours).
pub const DEFAULT_AFFINITY_SECONDS: u32 = 10800;
/// Largest ClientIP affinity timeout the API accepts (1 day).
const MAX_AFFINITY_SECONDS: i32 = 86400;

/// The name a Service is tracked under.
pub(crate) fn service_name(svc: &Service) -> ServiceName {
    ServiceName::new(namespace_of(&svc.metadata), name_of(&svc.metadata))
}

/// The Service's ports as the proxy programs them (empty when the proxy
/// ignores the Service), and the warnings found on the way.
/// `name` is the Service's name as [`service_name`] gives it (shared).
pub(crate) fn service_ports(
    svc: &Service,
    name: &ServiceName,
    family: IpFamily,
) -> (Vec<ServicePort>, Vec<Warning>) {
    let mut warnings = Warnings::new(ObjectKind::Service, &name.namespace, &name.name);
    let ports = match svc.spec.as_ref() {
        _ if name.name.is_empty() => {
            warnings.push(Problem::MissingName);
            Vec::new()
        }
        Some(spec) if !ignored_by_labels(svc) => {
            spec_ports(name, spec, svc, family, &mut warnings)
        }
        _ => Vec::new(),
    };
    (ports, warnings.into_vec())
}

fn ignored_by_labels(svc: &Service) -> bool {
    has_label(&svc.metadata, LABEL_SERVICE_PROXY_NAME) || has_label(&svc.metadata, LABEL_HEADLESS)
}

/// `spec.type`, as far as the proxy cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ServiceType {
    ClusterIp,
    NodePort,
    LoadBalancer,
    ExternalName,
}

fn service_type(spec: &ServiceSpec) -> Result<ServiceType, String> {
    match spec.type_.as_deref() {
        None | Some("") | Some("ClusterIP") => Ok(ServiceType::ClusterIp),
        Some("NodePort") => Ok(ServiceType::NodePort),
        Some("LoadBalancer") => Ok(ServiceType::LoadBalancer),
        Some("ExternalName") => Ok(ServiceType::ExternalName),
        Some(other) => Err(other.to_string()),
    }
}

fn spec_ports(
    name: &ServiceName,
    spec: &ServiceSpec,
    svc: &Service,
    family: IpFamily,
    warnings: &mut Warnings<'_>,
) -> Vec<ServicePort> {
    let svc_type = match service_type(spec) {
        Ok(ServiceType::ExternalName) => return Vec::new(),
        Ok(t) => t,
        Err(other) => {
            warnings.push(Problem::UnknownServiceType(other));
            return Vec::new();
        }
    };
    let Some(cluster_ip) = cluster_ip(spec, family, warnings) else {
        return Vec::new();
    };
    let shared = SharedFields::read(spec, svc, svc_type, family, warnings);
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for port in spec.ports.iter().flatten() {
        let Some(mut sp) = one_port(name, port, svc_type, cluster_ip, warnings) else {
            continue;
        };
        if !seen.insert((sp.name.port.clone(), sp.name.protocol)) {
            warnings.push(Problem::DuplicatePort {
                port: sp.name.port.clone(),
                protocol: sp.name.protocol.as_lower().to_uppercase(),
            });
            continue;
        }
        shared.apply(&mut sp);
        out.push(sp);
    }
    out
}

/// The clusterIP of `family`; `None` when the Service has none (headless,
/// unset, other family only, or a bad address, which is warned about).
fn cluster_ip(spec: &ServiceSpec, family: IpFamily, warnings: &mut Warnings<'_>) -> Option<IpAddr> {
    let primary = spec.cluster_ip.as_deref().unwrap_or("");
    if primary.is_empty() || primary == "None" {
        return None;
    }
    let listed = spec.cluster_ips.as_deref().filter(|ips| !ips.is_empty());
    let candidates: Vec<&str> = match listed {
        Some(ips) => ips.iter().map(String::as_str).collect(),
        None => vec![primary],
    };
    let mut chosen = None;
    for text in candidates {
        match text.parse::<IpAddr>() {
            Ok(ip) if family.contains(ip) => chosen = chosen.or(Some(ip)),
            Ok(_) => {}
            Err(_) => {
                warnings.push(Problem::BadClusterIp(text.to_string()));
                return None;
            }
        }
    }
    chosen
}

/// Service-wide fields copied into every port.
struct SharedFields {
    external_ips: Vec<IpAddr>,
    load_balancer_ips: Vec<IpAddr>,
    source_ranges: Vec<IpNet>,
    affinity: Option<u32>,
    external_policy_local: bool,
    internal_policy_local: bool,
    health_check_node_port: Option<u16>,
}

impl SharedFields {
    fn read(
        spec: &ServiceSpec,
        svc: &Service,
        svc_type: ServiceType,
        family: IpFamily,
        warnings: &mut Warnings<'_>,
    ) -> Self {
        let external_ips = external_ips(spec, family, warnings);
        let external_policy_local = spec.external_traffic_policy.as_deref() == Some("Local")
            && externally_accessible(svc_type, &external_ips);
        let needs_health_check = svc_type == ServiceType::LoadBalancer && external_policy_local;
        Self {
            load_balancer_ips: load_balancer_ips(svc, family, warnings),
            source_ranges: source_ranges(spec, family, warnings),
            affinity: affinity_seconds(spec, warnings),
            internal_policy_local: spec.internal_traffic_policy.as_deref() == Some("Local"),
            health_check_node_port: if needs_health_check {
                health_check_node_port(spec, warnings)
            } else {
                None
            },
            external_ips,
            external_policy_local,
        }
    }

    fn apply(&self, sp: &mut ServicePort) {
        sp.external_ips.clone_from(&self.external_ips);
        sp.load_balancer_ips.clone_from(&self.load_balancer_ips);
        sp.load_balancer_source_ranges
            .clone_from(&self.source_ranges);
        sp.session_affinity_seconds = self.affinity;
        sp.external_policy_local = self.external_policy_local;
        sp.internal_policy_local = self.internal_policy_local;
        sp.health_check_node_port = self.health_check_node_port;
    }
}

/// Upstream's `ExternallyAccessible`: NodePort / LoadBalancer type, or a
/// ClusterIP service with external IPs.
fn externally_accessible(svc_type: ServiceType, external_ips: &[IpAddr]) -> bool {
    matches!(svc_type, ServiceType::NodePort | ServiceType::LoadBalancer)
        || !external_ips.is_empty()
}

fn external_ips(spec: &ServiceSpec, family: IpFamily, warnings: &mut Warnings<'_>) -> Vec<IpAddr> {
    let mut out = Vec::new();
    for text in spec.external_ips.iter().flatten() {
        match text.parse::<IpAddr>() {
            Ok(ip) if family.contains(ip) => push_unique(&mut out, ip),
            Ok(_) => {}
            Err(_) => warnings.push(Problem::BadExternalIp(text.clone())),
        }
    }
    out
}

/// `status.loadBalancer.ingress[].ip` with ipMode VIP (or unset); ipMode
/// Proxy ingresses are not routed by the proxy, as upstream.
fn load_balancer_ips(svc: &Service, family: IpFamily, warnings: &mut Warnings<'_>) -> Vec<IpAddr> {
    let ingress = svc
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|lb| lb.ingress.as_ref());
    let mut out = Vec::new();
    for ing in ingress.into_iter().flatten() {
        let Some(text) = ing.ip.as_deref().filter(|ip| !ip.is_empty()) else {
            continue;
        };
        if ing.ip_mode.as_deref() == Some("Proxy") {
            continue;
        }
        match text.parse::<IpAddr>() {
            Ok(ip) if family.contains(ip) => push_unique(&mut out, ip),
            Ok(_) => {}
            Err(_) => warnings.push(Problem::BadLoadBalancerIp(text.to_string())),
        }
    }
    out
}

/// `spec.loadBalancerSourceRanges`, spaces stripped, masked to the network
/// address as upstream's CIDR parser does.
fn source_ranges(spec: &ServiceSpec, family: IpFamily, warnings: &mut Warnings<'_>) -> Vec<IpNet> {
    let mut out = Vec::new();
    for text in spec.load_balancer_source_ranges.iter().flatten() {
        let stripped: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        match stripped.parse::<IpNet>() {
            Ok(net) if family.contains_net(&net) => push_unique(&mut out, net.trunc()),
            Ok(_) => {}
            Err(_) => warnings.push(Problem::BadSourceRange(text.clone())),
        }
    }
    out
}

fn affinity_seconds(spec: &ServiceSpec, warnings: &mut Warnings<'_>) -> Option<u32> {
    if spec.session_affinity.as_deref() != Some("ClientIP") {
        return None;
    }
    let timeout = spec
        .session_affinity_config
        .as_ref()
        .and_then(|c| c.client_ip.as_ref())
        .and_then(|c| c.timeout_seconds);
    match timeout {
        None => Some(DEFAULT_AFFINITY_SECONDS),
        Some(t) if (1..=MAX_AFFINITY_SECONDS).contains(&t) => u32::try_from(t).ok(),
        Some(t) => {
            warnings.push(Problem::BadAffinityTimeout(i64::from(t)));
            Some(DEFAULT_AFFINITY_SECONDS)
        }
    }
}

fn health_check_node_port(spec: &ServiceSpec, warnings: &mut Warnings<'_>) -> Option<u16> {
    match spec.health_check_node_port {
        None | Some(0) => None,
        Some(p) => match u16::try_from(p) {
            Ok(p) => Some(p),
            Err(_) => {
                warnings.push(Problem::BadHealthCheckNodePort(i64::from(p)));
                None
            }
        },
    }
}

fn one_port(
    name: &ServiceName,
    port: &k8s_openapi::api::core::v1::ServicePort,
    svc_type: ServiceType,
    cluster_ip: IpAddr,
    warnings: &mut Warnings<'_>,
) -> Option<ServicePort> {
    let port_name = port.name.clone().unwrap_or_default();
    let protocol = match protocol_of(port.protocol.as_deref()) {
        Ok(p) => p,
        Err(value) => {
            warnings.push(Problem::BadProtocol {
                port: port_name,
                value,
            });
            return None;
        }
    };
    let Some(number) = u16::try_from(port.port).ok().filter(|p| *p != 0) else {
        warnings.push(Problem::BadPort {
            port: port_name,
            value: i64::from(port.port),
        });
        return None;
    };
    let node_port = match (svc_type, port.node_port) {
        (ServiceType::NodePort | ServiceType::LoadBalancer, Some(np)) if np != 0 => {
            match u16::try_from(np) {
                Ok(np) => Some(np),
                Err(_) => {
                    warnings.push(Problem::BadNodePort {
                        port: port_name,
                        value: i64::from(np),
                    });
                    return None;
                }
            }
        }
        _ => None,
    };
    let spn = ServicePortName::of(name.clone(), port_name, protocol);
    let mut sp = ServicePort::cluster_ip(spn, cluster_ip, number);
    sp.node_port = node_port;
    Some(sp)
}

fn push_unique<T: PartialEq>(out: &mut Vec<T>, value: T) {
    if !out.contains(&value) {
        out.push(value);
    }
}
