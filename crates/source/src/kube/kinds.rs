//! The kinds the proxy watches and how each one feeds the tracker.

use crate::lenient::ReadFields;
use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::ServiceCIDR;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use std::fmt::{Debug, Display};
use tracker::Tracker;

/// Identifies an object of one kind: `namespace/name` (`/name` for
/// cluster-scoped kinds). One short string per object is all the source
/// keeps; the tracker holds the rest.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ObjectKey(Box<str>);

impl ObjectKey {
    pub(crate) fn of(meta: &ObjectMeta) -> Self {
        let namespace = meta.namespace.as_deref().unwrap_or("");
        let name = meta.name.as_deref().unwrap_or("");
        Self::new(namespace, name)
    }

    pub(crate) fn new(namespace: &str, name: &str) -> Self {
        Self(format!("{namespace}/{name}").into_boxed_str())
    }

    /// The key whose text (`namespace/name`) is `text`.
    pub(crate) fn from_text(text: &str) -> Self {
        Self(text.into())
    }

    /// Metadata carrying only this key's namespace and name.
    pub(crate) fn metadata(&self) -> ObjectMeta {
        let (namespace, name) = self.0.split_once('/').unwrap_or(("", &self.0));
        ObjectMeta {
            namespace: (!namespace.is_empty()).then(|| namespace.to_string()),
            name: Some(name.to_string()),
            ..ObjectMeta::default()
        }
    }
}

impl Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A kind the source watches. Warnings from the tracker are not returned
/// here: the tracker logs each one itself.
pub(crate) trait Watched:
    ::kube::Resource<DynamicType = ()> + Clone + ReadFields + Debug + Send + 'static
{
    /// Name in logs.
    const PLURAL: &'static str;

    /// The API server may not serve this kind (an older or differently
    /// configured cluster): a 404 on its list means "none", said once,
    /// and the kind is not watched further.
    const MAY_BE_MISSING: bool = false;

    /// The object was added or updated.
    fn upsert(&self, tracker: &mut Tracker);

    /// The object was deleted.
    fn delete(&self, tracker: &mut Tracker);

    /// An object with only `key`'s namespace and name: what deleting an
    /// object that a re-list no longer shows needs.
    fn with_key(key: &ObjectKey) -> Self;
}

impl Watched for Service {
    const PLURAL: &'static str = "services";

    fn upsert(&self, tracker: &mut Tracker) {
        tracker.upsert_service(self);
    }

    fn delete(&self, tracker: &mut Tracker) {
        tracker.delete_service(self);
    }

    fn with_key(key: &ObjectKey) -> Self {
        Service {
            metadata: key.metadata(),
            ..Service::default()
        }
    }
}

impl Watched for EndpointSlice {
    const PLURAL: &'static str = "endpointslices";

    fn upsert(&self, tracker: &mut Tracker) {
        tracker.upsert_endpoint_slice(self);
    }

    fn delete(&self, tracker: &mut Tracker) {
        tracker.delete_endpoint_slice(self);
    }

    fn with_key(key: &ObjectKey) -> Self {
        EndpointSlice {
            metadata: key.metadata(),
            ..EndpointSlice::default()
        }
    }
}

impl Watched for Node {
    const PLURAL: &'static str = "nodes";

    fn upsert(&self, tracker: &mut Tracker) {
        tracker.upsert_node(self);
    }

    fn delete(&self, tracker: &mut Tracker) {
        tracker.delete_node(self);
    }

    fn with_key(key: &ObjectKey) -> Self {
        Node {
            metadata: key.metadata(),
            ..Node::default()
        }
    }
}

impl Watched for ServiceCIDR {
    const PLURAL: &'static str = "servicecidrs";
    const MAY_BE_MISSING: bool = true;

    fn upsert(&self, tracker: &mut Tracker) {
        tracker.upsert_service_cidr(self);
    }

    fn delete(&self, tracker: &mut Tracker) {
        tracker.delete_service_cidr(self);
    }

    fn with_key(key: &ObjectKey) -> Self {
        ServiceCIDR {
            metadata: key.metadata(),
            ..ServiceCIDR::default()
        }
    }
}
