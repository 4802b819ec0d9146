//! ClusterIP traffic: the address joins `cluster-ips`, and
//! `service-ips` sends it to the internal chain, or `no-endpoint-services`
//! drops or rejects it.

use super::service_port::Port;
use super::shared::SharedSets;
use crate::Element;

/// Adds the ClusterIP's elements.
pub fn render_cluster_ip(port: &Port<'_>, shared: &mut SharedSets) {
    let ip = port.svc().cluster_ip;
    shared.cluster_ips.push(ip);
    let key = port.ip_key(ip);
    match port.plan.internal_refusal {
        None => shared
            .service_ips
            .push(Element::verdict(key, Port::goto(port.internal_chain()))),
        Some(refusal) => shared.no_endpoint_services.push(port.refused(key, refusal)),
    }
}
