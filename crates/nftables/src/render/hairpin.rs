//! Hairpin traffic: a local endpoint reaching itself through its service
//! is masqueraded; `hairpin-connections` lists each local endpoint as
//! `ip . ip . proto . port`.

use super::service_port::Port;
use super::shared::SharedSets;
use super::statement::value;
use crate::{Element, Value};

/// Adds an element per reachable endpoint on this node.
pub fn render_hairpin(port: &Port<'_>, shared: &mut SharedSets) {
    for ep in port.plan.reachable.iter().filter(|ep| ep.is_local) {
        shared.hairpin_connections.push(Element::new(vec![
            value(ep.ip),
            value(ep.ip),
            port.proto(),
            Value::Port(ep.port),
        ]));
    }
}
