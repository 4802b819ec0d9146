//! ClusterIP traffic: the address joins `cluster-ips`, and
//! `service-ips` sends it to the internal chain (or `service-ips-direct`
//! to its one endpoint, see [`super::direct`]), or `no-endpoint-services`
//! drops or rejects it.

use super::direct::direct_target;
use super::service_port::Port;
use super::shared::SharedSets;
use super::statement::value;
use crate::{Element, Value};

/// Adds the ClusterIP's elements.
pub fn render_cluster_ip(port: &Port<'_>, shared: &mut SharedSets) {
    let ip = port.svc().cluster_ip;
    shared.cluster_ips.push(ip);
    let key = port.ip_key(ip);
    if let Some((ep, ep_port)) = direct_target(port) {
        // in the same list as `service-ips`' elements: the first service
        // giving a key keeps it, whichever map it goes to
        let data = vec![value(ep), Value::Port(ep_port)];
        let element = Element::data(key, data).with_comment(port.comment.clone());
        shared.service_ips.push(element);
        return;
    }
    match port.plan.internal_refusal {
        None => shared
            .service_ips
            .push(Element::verdict(key, Port::goto(port.internal_chain()))),
        Some(refusal) => shared.no_endpoint_services.push(port.refused(key, refusal)),
    }
}
