//! The elements of the shared sets and verdict maps, collected while the
//! service ports are rendered, and which service put which key there (for
//! partial syncs: a key two services hold stays while one of them does).

use super::names::{
    CLUSTER_IPS, FIREWALL_IPS, HAIRPIN_CONNECTIONS, NO_ENDPOINT_NODEPORTS, NO_ENDPOINT_SERVICES,
    SERVICE_IPS, SERVICE_IPS_DIRECT, SERVICE_NODEPORTS,
};
use super::statement::value;
use crate::{Element, Value};
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::net::IpAddr;

/// The lists of a [`SharedSets`] but the endpoint maps, in the order of
/// [`SharedSets::into_lists`]; `service-ips`' holds
/// `service-ips-direct`'s elements too.
pub const LISTS: [&str; 7] = [
    HAIRPIN_CONNECTIONS,
    CLUSTER_IPS,
    NO_ENDPOINT_SERVICES,
    NO_ENDPOINT_NODEPORTS,
    FIREWALL_IPS,
    SERVICE_IPS,
    SERVICE_NODEPORTS,
];

/// The sets whose elements the service ports give (`nodeport-ips` is the
/// node's): [`LISTS`] and `service-ips-direct`.
pub const SHARED_SETS: [&str; 8] = {
    let mut all = [SERVICE_IPS_DIRECT; 8];
    let mut i = 0;
    while i < LISTS.len() {
        all[i] = LISTS[i];
        i += 1;
    }
    all
};

/// Whether an element of shared set `set` is the same whichever service
/// gives it (no data, no comment): `hairpin-connections`, `cluster-ips`.
pub fn is_interchangeable(set: &str) -> bool {
    set == HAIRPIN_CONNECTIONS || set == CLUSTER_IPS
}

/// A hash of element key `key` of shared set `set`: what identifies the
/// element in the set (a 64-bit hash; two keys sharing one are taken as
/// the same key). `service-ips-direct` shares `service-ips`' keys: a
/// destination is in one or the other.
pub fn shared_key(set: &str, key: &[Value]) -> u64 {
    let set = match set {
        SERVICE_IPS_DIRECT => SERVICE_IPS,
        other => other,
    };
    let mut hasher = std::hash::DefaultHasher::new();
    set.hash(&mut hasher);
    key.hash(&mut hasher);
    hasher.finish()
}

/// Elements of the table's shared sets and maps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SharedSets {
    /// `hairpin-connections`.
    pub hairpin_connections: Vec<Element>,
    /// `cluster-ips` (duplicates removed when the set is made).
    pub cluster_ips: Vec<IpAddr>,
    /// `no-endpoint-services`.
    pub no_endpoint_services: Vec<Element>,
    /// `no-endpoint-nodeports`.
    pub no_endpoint_nodeports: Vec<Element>,
    /// `firewall-ips`.
    pub firewall_ips: Vec<Element>,
    /// `service-ips`, and `service-ips-direct`'s elements (with data
    /// instead of a verdict) among them.
    pub service_ips: Vec<Element>,
    /// `service-nodeports`.
    pub service_nodeports: Vec<Element>,
    /// `service-endpoints-<n>` by `n`: each balancing chain's slot (no
    /// key is given by two services).
    pub endpoint_maps: BTreeMap<u32, Vec<Element>>,
    /// Leaves `endpoint_maps` empty: a pass of the lean rendering whose
    /// endpoint maps' elements are rendered by another (at 10,000
    /// services × 10 endpoints, 200,000 elements made and dropped by each
    /// of the two passes that do not keep them).
    pub without_endpoint_maps: bool,
}

/// How many elements each list of a [`SharedSets`] held at some point.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Marks([usize; 7]);

impl SharedSets {
    /// Empty, and leaving the endpoint maps empty.
    pub fn without_endpoint_maps() -> Self {
        Self {
            without_endpoint_maps: true,
            ..Self::default()
        }
    }

    /// The lists' elements, in the order of [`LISTS`] (the endpoint maps
    /// left out).
    pub fn into_lists(self) -> [Vec<Element>; 7] {
        let cluster_ips = self
            .cluster_ips
            .into_iter()
            .map(|ip| Element::new(vec![value(ip)]))
            .collect();
        [
            self.hairpin_connections,
            cluster_ips,
            self.no_endpoint_services,
            self.no_endpoint_nodeports,
            self.firewall_ips,
            self.service_ips,
            self.service_nodeports,
        ]
    }

    /// The lists' lengths now.
    pub fn marks(&self) -> Marks {
        Marks([
            self.hairpin_connections.len(),
            self.cluster_ips.len(),
            self.no_endpoint_services.len(),
            self.no_endpoint_nodeports.len(),
            self.firewall_ips.len(),
            self.service_ips.len(),
            self.service_nodeports.len(),
        ])
    }

    /// The [`shared_key`]s of the elements added since `since`, each once.
    pub fn keys_since(&self, since: Marks) -> Vec<u64> {
        let lists = [
            &self.hairpin_connections,
            &self.no_endpoint_services,
            &self.no_endpoint_nodeports,
            &self.firewall_ips,
            &self.service_ips,
            &self.service_nodeports,
        ];
        let names = [
            HAIRPIN_CONNECTIONS,
            NO_ENDPOINT_SERVICES,
            NO_ENDPOINT_NODEPORTS,
            FIREWALL_IPS,
            SERVICE_IPS,
            SERVICE_NODEPORTS,
        ];
        let starts = [
            since.0[0], since.0[2], since.0[3], since.0[4], since.0[5], since.0[6],
        ];
        let mut keys: Vec<u64> = lists
            .iter()
            .zip(names)
            .zip(starts)
            .flat_map(|((list, name), start)| {
                list.get(start..)
                    .unwrap_or_default()
                    .iter()
                    .map(move |e| shared_key(name, &e.key))
            })
            .collect();
        keys.extend(
            self.cluster_ips
                .get(since.0[1]..)
                .unwrap_or_default()
                .iter()
                .map(|ip| shared_key(CLUSTER_IPS, &[value(*ip)])),
        );
        keys.sort_unstable();
        keys.dedup();
        keys
    }
}
