//! NodePort traffic: `service-nodeports` sends it to the external chain
//! when the service has endpoints; `no-endpoint-nodeports` drops or
//! rejects what external traffic cannot be served.

use super::service_port::Port;
use super::shared::SharedSets;
use crate::Element;

/// Adds the NodePort's elements, if the port has one.
pub fn render_node_port(port: &Port<'_>, shared: &mut SharedSets) {
    let Some(node_port) = port.svc().node_port else {
        return;
    };
    let key = port.port_key(node_port);
    if port.plan.has_endpoints {
        shared.service_nodeports.push(Element::verdict(
            key.clone(),
            Port::goto(&port.names.external),
        ));
    }
    if let Some(refusal) = port.plan.external_refusal {
        shared
            .no_endpoint_nodeports
            .push(port.refused(key, refusal));
    }
}
