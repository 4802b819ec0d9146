//! API objects → the model (`crates/tracker`): a stream of JSON objects
//! (Service, EndpointSlice, Node, ServiceCIDR, told apart by `kind`, as the
//! API server sends them) decoded as the API source decodes them
//! (`source::lenient`: the fields the proxy reads) and fed to a tracker of
//! each family as watch events.
//! Any object is taken or dropped with warnings, never a panic; once every
//! object is deleted again, the snapshot holds no service, endpoint or CIDR.

#![no_main]

use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::ServiceCIDR;
use libfuzzer_sys::fuzz_target;
use model::IpFamily;
use source::lenient::{self, Decoded, ReadFields};
use tracker::Tracker;

enum Object {
    Service(Service),
    Slice(EndpointSlice),
    Node(Node),
    Cidr(ServiceCIDR),
}

fn valid<K: ReadFields>(value: serde_json::Value) -> Option<K> {
    match lenient::decode(value) {
        Decoded::Valid(object) => Some(object),
        Decoded::Invalid(invalid) => {
            let _ = invalid.problem;
            None
        }
    }
}

fn object(value: serde_json::Value) -> Option<Object> {
    let kind = value.get("kind")?.as_str()?.to_string();
    match kind.as_str() {
        "Service" => valid(value).map(Object::Service),
        "EndpointSlice" => valid(value).map(Object::Slice),
        "Node" => valid(value).map(Object::Node),
        "ServiceCIDR" => valid(value).map(Object::Cidr),
        _ => None,
    }
}

fn upsert(tracker: &mut Tracker, object: &Object) -> Vec<tracker::Warning> {
    match object {
        Object::Service(o) => tracker.upsert_service(o),
        Object::Slice(o) => tracker.upsert_endpoint_slice(o),
        Object::Node(o) => tracker.upsert_node(o),
        Object::Cidr(o) => tracker.upsert_service_cidr(o),
    }
}

fn delete(tracker: &mut Tracker, object: &Object) {
    match object {
        Object::Service(o) => tracker.delete_service(o),
        Object::Slice(o) => tracker.delete_endpoint_slice(o),
        Object::Node(o) => tracker.delete_node(o),
        Object::Cidr(o) => tracker.delete_service_cidr(o),
    }
}

fuzz_target!(|data: &[u8]| {
    let values = serde_json::Deserializer::from_slice(data).into_iter::<serde_json::Value>();
    let objects: Vec<Object> = values.map_while(Result::ok).filter_map(object).collect();
    for family in IpFamily::ALL {
        let mut tracker = Tracker::with_family("node-a", family);
        for object in &objects {
            for warning in upsert(&mut tracker, object) {
                let _ = warning.to_string();
            }
        }
        let _ = tracker.snapshot();
        let _ = tracker.take_change_counts();
        for object in &objects {
            delete(&mut tracker, object);
        }
        let (snapshot, _) = tracker.snapshot();
        assert!(snapshot.services.is_empty(), "services left after deleting every object: {:?}", snapshot.services.keys());
        assert!(snapshot.endpoints.values().all(|e| e.is_empty()), "endpoints left after deleting every object");
        assert!(snapshot.service_cidrs.is_empty(), "service CIDRs left after deleting every object");
    }
});
