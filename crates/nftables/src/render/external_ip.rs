//! externalIP traffic: `service-ips` sends it to the external chain when
//! the service has endpoints; `no-endpoint-services` drops or rejects
//! what external traffic cannot be served.

use super::service_port::Port;
use super::shared::SharedSets;
use crate::Element;
use std::net::IpAddr;

/// Adds the elements of every externalIP of the family.
pub fn render_external_ips(port: &Port<'_>, shared: &mut SharedSets) {
    for ip in &port.plan.external_ips {
        render_external_destination(port, *ip, shared);
    }
}

/// The dispatch and refusal elements of one external destination IP
/// (externalIP or load-balancer IP).
pub fn render_external_destination(port: &Port<'_>, ip: IpAddr, shared: &mut SharedSets) {
    let key = port.ip_key(ip);
    if port.plan.has_endpoints {
        shared.service_ips.push(Element::verdict(
            key.clone(),
            Port::goto(&port.names.external),
        ));
    }
    if let Some(refusal) = port.plan.external_refusal {
        shared.no_endpoint_services.push(port.refused(key, refusal));
    }
}
