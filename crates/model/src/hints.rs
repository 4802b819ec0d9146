//! Topology hints of one endpoint (EndpointSlice `endpoints[].hints`).

use crate::NodeName;

/// Where an endpoint should be used: the zones (`forZones[].name`) and
/// nodes (`forNodes[].name`, written for `PreferSameNode` traffic
/// distribution) whose proxies should pick it. Only endpoints with at
/// least one hint carry a value (see [`EndpointHints::new`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EndpointHints {
    /// Zones this endpoint is hinted for, sorted, once each.
    for_zones: Box<[Box<str>]>,
    /// Nodes this endpoint is hinted for, sorted, once each.
    for_nodes: Box<[NodeName]>,
}

impl EndpointHints {
    /// The hints for `zones` and `nodes`; `None` when both are empty (an
    /// endpoint without hints, as upstream reads an empty `hints`).
    pub fn new<Z, N>(zones: impl IntoIterator<Item = Z>, nodes: impl IntoIterator<Item = N>) -> Option<Self>
    where
        Z: Into<Box<str>>,
        N: Into<NodeName>,
    {
        let mut for_zones: Vec<Box<str>> = zones.into_iter().map(Into::into).collect();
        let mut for_nodes: Vec<NodeName> = nodes.into_iter().map(Into::into).collect();
        if for_zones.is_empty() && for_nodes.is_empty() {
            return None;
        }
        for_zones.sort();
        for_zones.dedup();
        for_nodes.sort();
        for_nodes.dedup();
        Some(Self { for_zones: for_zones.into(), for_nodes: for_nodes.into() })
    }

    /// The endpoint has zone hints.
    pub fn has_zone_hints(&self) -> bool {
        !self.for_zones.is_empty()
    }

    /// The endpoint has node hints.
    pub fn has_node_hints(&self) -> bool {
        !self.for_nodes.is_empty()
    }

    /// The endpoint is hinted for `zone`.
    pub fn for_zone(&self, zone: &str) -> bool {
        self.for_zones.binary_search_by(|z| (**z).cmp(zone)).is_ok()
    }

    /// The endpoint is hinted for node `name`.
    pub fn for_node(&self, name: &str) -> bool {
        self.for_nodes.binary_search_by(|n| (**n).cmp(name)).is_ok()
    }

    /// The zones hinted, sorted.
    pub fn zones(&self) -> impl Iterator<Item = &str> {
        self.for_zones.iter().map(|z| &**z)
    }

    /// The nodes hinted, sorted.
    pub fn nodes(&self) -> impl Iterator<Item = &str> {
        self.for_nodes.iter().map(|n| &**n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_hints_is_none() {
        assert_eq!(EndpointHints::new(Vec::<String>::new(), Vec::<String>::new()), None);
    }

    #[test]
    fn lookups_find_listed_names_only() {
        let hints = EndpointHints::new(["zone-b", "zone-a", "zone-b"], ["node-x"]);
        let Some(hints) = hints else { panic!("hints expected") };
        assert!(hints.for_zone("zone-a") && hints.for_zone("zone-b") && !hints.for_zone("zone-c"));
        assert!(hints.for_node("node-x") && !hints.for_node("node-y"));
        assert_eq!(hints.zones().collect::<Vec<_>>(), ["zone-a", "zone-b"]);
        assert!(hints.has_zone_hints() && hints.has_node_hints());
    }

    #[test]
    fn zone_only_hints_have_no_node_hints() {
        let Some(hints) = EndpointHints::new(["zone-a"], Vec::<String>::new()) else { panic!("hints expected") };
        assert!(!hints.has_node_hints());
        assert!(!hints.for_node(""));
    }
}
