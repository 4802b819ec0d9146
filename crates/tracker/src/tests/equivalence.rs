//! Property: any sequence of add/update/delete events leaves the same
//! model as building it from the final set of objects (issue 4), and every
//! difference between two snapshots is in the change set between them.

use super::support::{Flat, flat};
use crate::{Objects, Tracker};
use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use model::{ServiceName, Snapshot};
use proptest::prelude::*;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

const SERVICE_KEYS: [(&str, &str); 4] = [("a", "s0"), ("a", "s1"), ("a", "s2"), ("b", "s0")];
const SLICE_KEYS: [(&str, &str); 5] = [
    ("a", "e0"),
    ("a", "e1"),
    ("a", "e2"),
    ("a", "e3"),
    ("b", "e0"),
];
const NODE_NAMES: [&str; 2] = ["node-a", "node-b"];

/// A service as a handful of choices.
#[derive(Debug, Clone)]
struct SvcVariant {
    svc_type: usize,
    cluster_ip: usize,
    ports: u8,
    etp_local: bool,
    external_ips: usize,
    proxy_name_label: bool,
}

fn svc_variant() -> impl Strategy<Value = SvcVariant> {
    (
        0..5usize,
        0..3usize,
        0..8u8,
        any::<bool>(),
        0..3usize,
        prop::bool::weighted(0.1),
    )
        .prop_map(
            |(svc_type, cluster_ip, ports, etp_local, external_ips, proxy_name_label)| SvcVariant {
                svc_type,
                cluster_ip,
                ports,
                etp_local,
                external_ips,
                proxy_name_label,
            },
        )
}

fn build_service((ns, name): (&str, &str), v: &SvcVariant) -> Service {
    let svc_type = [
        "ClusterIP",
        "NodePort",
        "LoadBalancer",
        "ExternalName",
        "ClusterIP",
    ][v.svc_type];
    let cluster_ip = if v.svc_type == 4 {
        "None"
    } else {
        ["10.96.0.1", "10.96.0.2", "10.96.0.x"][v.cluster_ip]
    };
    let templates = [
        json!({"name": "http", "port": 80, "nodePort": 30080}),
        json!({"name": "dns", "port": 53, "protocol": "UDP", "nodePort": 30053}),
        json!({"name": "", "port": 9000, "nodePort": 30090}),
    ];
    let ports: Vec<Value> = (0..3)
        .filter(|i| v.ports & (1 << i) != 0)
        .map(|i| templates[i].clone())
        .collect();
    let external_ips = [
        json!([]),
        json!(["192.0.2.1"]),
        json!(["bogus", "192.0.2.2"]),
    ][v.external_ips]
        .clone();
    let labels = if v.proxy_name_label {
        json!({"service.kubernetes.io/service-proxy-name": "x"})
    } else {
        json!({})
    };
    serde_json::from_value(json!({
        "metadata": {"namespace": ns, "name": name, "labels": labels},
        "spec": {
            "type": svc_type,
            "clusterIP": cluster_ip,
            "ports": ports,
            "externalIPs": external_ips,
            "externalTrafficPolicy": if v.etp_local { "Local" } else { "Cluster" },
            "healthCheckNodePort": 32000,
        },
        "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.100"}]}},
    }))
    .unwrap()
}

/// One endpoint as choices: address, node, three optional conditions.
type EpVariant = (u8, usize, Option<bool>, Option<bool>, Option<bool>);

#[derive(Debug, Clone)]
struct SliceVariant {
    service: Option<usize>,
    ipv6: bool,
    ports: u8,
    endpoints: Vec<EpVariant>,
}

fn slice_variant() -> impl Strategy<Value = SliceVariant> {
    let endpoint = (
        1..5u8,
        0..3usize,
        any::<Option<bool>>(),
        any::<Option<bool>>(),
        any::<Option<bool>>(),
    );
    (
        prop::option::weighted(0.9, 0..3usize),
        prop::bool::weighted(0.1),
        0..16u8,
        prop::collection::vec(endpoint, 0..4),
    )
        .prop_map(|(service, ipv6, ports, endpoints)| SliceVariant {
            service,
            ipv6,
            ports,
            endpoints,
        })
}

fn build_slice((ns, name): (&str, &str), v: &SliceVariant) -> EndpointSlice {
    let labels = match v.service {
        Some(i) => json!({"kubernetes.io/service-name": (["s0", "s1", "s2"][i])}),
        None => json!({}),
    };
    let templates = [
        json!({"name": "http", "port": 8080}),
        json!({"name": "dns", "port": 5353, "protocol": "UDP"}),
        json!({"name": "", "port": 9000}),
        json!({"name": "http", "port": 0}),
    ];
    let ports: Vec<Value> = (0..4)
        .filter(|i| v.ports & (1 << i) != 0)
        .map(|i| templates[i].clone())
        .collect();
    let endpoints: Vec<Value> = v
        .endpoints
        .iter()
        .map(|(addr, node, ready, serving, terminating)| {
            let address = if *addr == 4 { "10.0.0.999".to_string() } else { format!("10.0.0.{addr}") };
            let mut e = json!({"addresses": [address], "conditions": {"ready": ready, "serving": serving, "terminating": terminating}});
            if *node > 0 {
                e["nodeName"] = json!(NODE_NAMES[node - 1]);
            }
            e
        })
        .collect();
    serde_json::from_value(json!({
        "metadata": {"namespace": ns, "name": name, "labels": labels},
        "addressType": if v.ipv6 { "IPv6" } else { "IPv4" },
        "ports": ports,
        "endpoints": endpoints,
    }))
    .unwrap()
}

fn build_node(name: &str, addr: u8, cidr: u8, tainted: bool) -> Node {
    let taints = if tainted {
        json!([{"key": "ToBeDeletedByClusterAutoscaler", "effect": "NoSchedule"}])
    } else {
        json!([])
    };
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"podCIDRs": [format!("10.244.{cidr}.0/24")], "taints": taints},
        "status": {"addresses": [{"type": "InternalIP", "address": format!("192.168.86.{addr}")}]},
    }))
    .unwrap()
}

#[derive(Debug, Clone)]
enum Event {
    UpsertService(usize, SvcVariant),
    DeleteService(usize),
    UpsertSlice(usize, SliceVariant),
    DeleteSlice(usize),
    UpsertNode(usize, u8, u8, bool),
    DeleteNode(usize),
    ReplaceAllWithCurrent,
    Snapshot,
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        4 => (0..SERVICE_KEYS.len(), svc_variant()).prop_map(|(k, v)| Event::UpsertService(k, v)),
        1 => (0..SERVICE_KEYS.len()).prop_map(Event::DeleteService),
        5 => (0..SLICE_KEYS.len(), slice_variant()).prop_map(|(k, v)| Event::UpsertSlice(k, v)),
        1 => (0..SLICE_KEYS.len()).prop_map(Event::DeleteSlice),
        1 => (0..2usize, 2..4u8, 0..2u8, any::<bool>()).prop_map(|(n, a, c, t)| Event::UpsertNode(n, a, c, t)),
        1 => (0..2usize).prop_map(Event::DeleteNode),
        1 => Just(Event::ReplaceAllWithCurrent),
        2 => Just(Event::Snapshot),
    ]
}

/// The objects that exist after the events so far, by key.
#[derive(Default, Clone)]
struct World {
    services: BTreeMap<usize, Service>,
    slices: BTreeMap<usize, EndpointSlice>,
    nodes: BTreeMap<usize, Node>,
}

impl World {
    fn objects(&self) -> Objects {
        Objects {
            services: self.services.values().cloned().collect(),
            endpoint_slices: self.slices.values().cloned().collect(),
            nodes: self.nodes.values().cloned().collect(),
            service_cidrs: Vec::new(),
        }
    }
}

/// Services whose entries differ between two snapshots.
fn differing_services(a: &Snapshot, b: &Snapshot) -> BTreeSet<ServiceName> {
    let mut out = BTreeSet::new();
    let keys = a
        .services
        .keys()
        .chain(b.services.keys())
        .chain(a.endpoints.keys())
        .chain(b.endpoints.keys());
    for k in keys {
        let svc_differs = a.services.get(k).map(|p| &**p) != b.services.get(k).map(|p| &**p);
        let eps_differs = a.endpoints.get(k).map(|e| &**e) != b.endpoints.get(k).map(|e| &**e);
        if svc_differs || eps_differs {
            out.insert(k.service.clone());
        }
    }
    out
}

/// Takes a snapshot and checks that its change set covers every
/// difference from `prev`.
fn checked_snapshot(t: &mut Tracker, prev: &Snapshot) -> Result<Snapshot, TestCaseError> {
    let (snap, changes) = t.snapshot();
    let differing = differing_services(prev, &snap);
    prop_assert!(
        differing.is_subset(&changes.services),
        "differing {differing:?} not in {:?}",
        changes.services
    );
    let node_differs =
        prev.node.addresses != snap.node.addresses || prev.node.pod_cidrs != snap.node.pod_cidrs;
    prop_assert!(!node_differs || changes.node_changed);
    Ok(snap)
}

fn built_from_scratch(objects: &Objects) -> Flat {
    let mut t = Tracker::new("node-a");
    t.replace_all(objects);
    flat(&t.snapshot().0)
}

fn built_by_upserts_in_reverse(objects: &Objects) -> Flat {
    let mut t = Tracker::new("node-a");
    objects
        .nodes
        .iter()
        .rev()
        .for_each(|n| drop(t.upsert_node(n)));
    objects
        .endpoint_slices
        .iter()
        .rev()
        .for_each(|s| drop(t.upsert_endpoint_slice(s)));
    objects
        .services
        .iter()
        .rev()
        .for_each(|s| drop(t.upsert_service(s)));
    flat(&t.snapshot().0)
}

fn apply(t: &mut Tracker, world: &mut World, ev: &Event) {
    match ev {
        Event::UpsertService(k, v) => {
            let svc = build_service(SERVICE_KEYS[*k], v);
            t.upsert_service(&svc);
            world.services.insert(*k, svc);
        }
        Event::DeleteService(k) => {
            // Deletion goes by name: the object handed over may be stale.
            t.delete_service(&build_service(SERVICE_KEYS[*k], &svc_variant_any()));
            world.services.remove(k);
        }
        Event::UpsertSlice(k, v) => {
            let s = build_slice(SLICE_KEYS[*k], v);
            t.upsert_endpoint_slice(&s);
            world.slices.insert(*k, s);
        }
        Event::DeleteSlice(k) => {
            let stale = SliceVariant {
                service: None,
                ipv6: false,
                ports: 0,
                endpoints: vec![],
            };
            t.delete_endpoint_slice(&build_slice(SLICE_KEYS[*k], &stale));
            world.slices.remove(k);
        }
        Event::UpsertNode(n, a, c, taint) => {
            let node = build_node(NODE_NAMES[*n], *a, *c, *taint);
            t.upsert_node(&node);
            world.nodes.insert(*n, node);
        }
        Event::DeleteNode(n) => {
            t.delete_node(&build_node(NODE_NAMES[*n], 9, 9, false));
            world.nodes.remove(n);
        }
        Event::ReplaceAllWithCurrent => drop(t.replace_all(&world.objects())),
        Event::Snapshot => {}
    }
}

fn svc_variant_any() -> SvcVariant {
    SvcVariant {
        svc_type: 0,
        cluster_ip: 0,
        ports: 1,
        etp_local: false,
        external_ips: 0,
        proxy_name_label: false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn events_equal_building_from_the_final_objects(events in prop::collection::vec(event(), 0..40)) {
        let mut t = Tracker::new("node-a");
        let mut world = World::default();
        let mut prev = Snapshot { node: model::NodeInfo { name: "node-a".into(), ..Default::default() }, ..Default::default() };
        for ev in &events {
            apply(&mut t, &mut world, ev);
            if matches!(ev, Event::Snapshot) {
                prev = checked_snapshot(&mut t, &prev)?;
            }
        }
        let last = checked_snapshot(&mut t, &prev)?;
        let objects = world.objects();
        prop_assert_eq!(&flat(&last), &built_from_scratch(&objects));
        prop_assert_eq!(&flat(&last), &built_by_upserts_in_reverse(&objects));
        t.replace_all(&objects);
        prop_assert!(!t.has_changes(), "replacing with the same objects changes nothing");
    }

    #[test]
    fn successive_whole_states_track_like_fresh_builds(states in prop::collection::vec(prop::collection::vec(event(), 0..15), 1..5)) {
        let mut t = Tracker::new("node-a");
        let mut prev = t.snapshot().0;
        for evs in &states {
            let mut world = World::default();
            let mut scratch = Tracker::new("scratch");
            evs.iter().for_each(|ev| apply(&mut scratch, &mut world, ev));
            let objects = world.objects();
            t.replace_all(&objects);
            prev = checked_snapshot(&mut t, &prev)?;
            prop_assert_eq!(&flat(&prev), &built_from_scratch(&objects));
        }
    }
}
