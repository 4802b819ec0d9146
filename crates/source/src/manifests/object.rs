//! One decoded object of the file, as handed on one at a time.

use crate::kube::kinds::{ObjectKey, Watched};
use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::ServiceCIDR;
use tracker::{ObjectKind, Objects, Tracker};

/// A Service, EndpointSlice, Node or ServiceCIDR read from the file. Only
/// a few batches of them exist at a time (see `pipeline`) and each is moved
/// once, so its variants are not boxed.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)]
pub enum Object {
    /// A v1 Service.
    Service(Service),
    /// A discovery.k8s.io/v1 EndpointSlice.
    EndpointSlice(EndpointSlice),
    /// A v1 Node.
    Node(Node),
    /// A networking.k8s.io/v1 ServiceCIDR.
    ServiceCIDR(ServiceCIDR),
}

impl Object {
    /// Its kind and `namespace/name`: what a later read needs to find it
    /// gone.
    pub(crate) fn key(&self) -> (ObjectKind, ObjectKey) {
        match self {
            Object::Service(o) => (ObjectKind::Service, ObjectKey::of(&o.metadata)),
            Object::EndpointSlice(o) => (ObjectKind::EndpointSlice, ObjectKey::of(&o.metadata)),
            Object::Node(o) => (ObjectKind::Node, ObjectKey::of(&o.metadata)),
            Object::ServiceCIDR(o) => (ObjectKind::ServiceCIDR, ObjectKey::of(&o.metadata)),
        }
    }

    /// Adds or updates it in `tracker` (which logs its own warnings).
    pub(crate) fn upsert(&self, tracker: &mut Tracker) {
        match self {
            Object::Service(o) => o.upsert(tracker),
            Object::EndpointSlice(o) => o.upsert(tracker),
            Object::Node(o) => o.upsert(tracker),
            Object::ServiceCIDR(o) => o.upsert(tracker),
        }
    }

    /// Appends it to the list of its kind.
    pub(crate) fn push_to(self, objects: &mut Objects) {
        match self {
            Object::Service(o) => objects.services.push(o),
            Object::EndpointSlice(o) => objects.endpoint_slices.push(o),
            Object::Node(o) => objects.nodes.push(o),
            Object::ServiceCIDR(o) => objects.service_cidrs.push(o),
        }
    }
}

/// Deletes from `tracker` the object of `kind` named by `key`.
pub(crate) fn delete(kind: ObjectKind, key: &ObjectKey, tracker: &mut Tracker) {
    match kind {
        ObjectKind::Service => Service::with_key(key).delete(tracker),
        ObjectKind::EndpointSlice => EndpointSlice::with_key(key).delete(tracker),
        ObjectKind::Node => Node::with_key(key).delete(tracker),
        ObjectKind::ServiceCIDR => ServiceCIDR::with_key(key).delete(tracker),
    }
}
