//! Objects as the API server sends them → what the proxy needs, leniently.
//!
//! An object is read untyped, cut down to the fields the proxy reads
//! ([`crate::read_fields`], nulls dropped) and then typed. It never fails
//! as a whole: an object whose fields read do not type is [`Decoded::Invalid`],
//! carrying its namespace, name and resource version (so a watch carries
//! on past it) and the field that failed with why. Only a value that is
//! not JSON at all fails, as it must: the stream itself is broken then.

use crate::read_fields;
use k8s_openapi::api::core::v1::{Node, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::ServiceCIDR;
use serde::de::{Deserialize, DeserializeOwned, Deserializer};
use serde_json::Value;

/// A kind decoded leniently: the fields of it the proxy reads.
pub trait ReadFields: DeserializeOwned {
    /// `value` cut down to the fields read, nulls dropped (`None`: nothing).
    fn keep_read_fields(value: Value) -> Option<Value>;
}

impl ReadFields for Service {
    fn keep_read_fields(value: Value) -> Option<Value> {
        read_fields::keep(&read_fields::SERVICE, value)
    }
}

impl ReadFields for EndpointSlice {
    fn keep_read_fields(value: Value) -> Option<Value> {
        read_fields::keep(&read_fields::ENDPOINT_SLICE, value)
    }
}

impl ReadFields for Node {
    fn keep_read_fields(value: Value) -> Option<Value> {
        read_fields::keep(&read_fields::NODE, value)
    }
}

impl ReadFields for ServiceCIDR {
    fn keep_read_fields(value: Value) -> Option<Value> {
        read_fields::keep(&read_fields::SERVICE_CIDR, value)
    }
}

/// One object, decoded.
#[derive(Debug, Clone)]
pub enum Decoded<K> {
    /// Its fields read all typed.
    Valid(K),
    /// A field read did not type: the object is treated as absent.
    Invalid(Invalid),
}

/// An object that could not be used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// `metadata.namespace` (empty for cluster-scoped kinds or when unreadable).
    pub namespace: String,
    /// `metadata.name` (empty when unreadable).
    pub name: String,
    /// `metadata.resourceVersion`, when there is one.
    pub resource_version: Option<String>,
    /// The field that failed and why, e.g. `spec.ports[0].port: invalid
    /// type: string "http", expected i32`.
    pub problem: String,
}

/// `value` decoded as a `K`: its fields the proxy reads, typed.
pub fn decode<K: ReadFields>(value: Value) -> Decoded<K> {
    let (namespace, name, resource_version) = identity(&value);
    let kept = K::keep_read_fields(value).unwrap_or(Value::Null);
    match serde_path_to_error::deserialize::<_, K>(kept) {
        Ok(object) => Decoded::Valid(object),
        Err(err) => Decoded::Invalid(Invalid {
            namespace,
            name,
            resource_version,
            problem: problem(&err),
        }),
    }
}

/// The field path and the typing error, as one line.
fn problem(err: &serde_path_to_error::Error<serde_json::Error>) -> String {
    match err.path().to_string().as_str() {
        "." => err.inner().to_string(),
        path => format!("{path}: {}", err.inner()),
    }
}

/// Namespace, name and resource version read untyped (empty when absent
/// or not strings).
fn identity(value: &Value) -> (String, String, Option<String>) {
    let meta = |key: &str| {
        value
            .get("metadata")
            .and_then(|m| m.get(key))
            .and_then(Value::as_str)
    };
    (
        meta("namespace").unwrap_or("").to_string(),
        meta("name").unwrap_or("").to_string(),
        meta("resourceVersion").map(str::to_string),
    )
}

impl<K> Decoded<K> {
    /// The object's resource version, valid or not.
    pub fn resource_version(&self) -> Option<&str>
    where
        K: ::kube::Resource,
    {
        match self {
            Decoded::Valid(object) => object.meta().resource_version.as_deref(),
            Decoded::Invalid(invalid) => invalid.resource_version.as_deref(),
        }
    }
}

impl<'de, K: ReadFields> Deserialize<'de> for Decoded<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(decode)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    fn invalid<K: ReadFields + std::fmt::Debug>(value: Value) -> Invalid {
        match decode::<K>(value) {
            Decoded::Invalid(invalid) => invalid,
            Decoded::Valid(object) => panic!("decoded: {object:?}"),
        }
    }

    #[test]
    fn a_status_condition_with_a_null_time_does_not_matter() {
        let service = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "7"},
            "spec": {"clusterIP": "172.30.0.1", "ports": [{"port": 80, "protocol": "TCP"}]},
            "status": {"conditions": [{"type": "StatusUpdate", "status": "True", "reason": "E2E",
                                       "message": "Set from e2e test", "lastTransitionTime": null}]},
        });
        let Decoded::Valid(svc) = decode::<Service>(service) else {
            panic!("invalid")
        };
        assert_eq!(svc.spec.unwrap().cluster_ip.as_deref(), Some("172.30.0.1"));
        assert_eq!(svc.metadata.resource_version.as_deref(), Some("7"));
    }

    #[test]
    fn a_field_read_that_does_not_type_names_the_object_and_the_field() {
        let service = json!({
            "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "9"},
            "spec": {"clusterIP": "172.30.0.1", "ports": [{"port": "http"}]},
        });
        let bad = invalid::<Service>(service);
        assert_eq!((bad.namespace.as_str(), bad.name.as_str()), ("ns", "a"));
        assert_eq!(bad.resource_version.as_deref(), Some("9"));
        assert!(
            bad.problem.starts_with("spec.ports[0].port: invalid type"),
            "{}",
            bad.problem
        );
    }

    #[test]
    fn a_null_in_a_field_read_is_its_zero_value_as_for_go() {
        let node = json!({
            "metadata": {"name": "n"},
            "status": {"addresses": [{"type": "InternalIP", "address": null}]},
        });
        let Decoded::Valid(node) = decode::<Node>(node) else {
            panic!("invalid")
        };
        let addresses = node.status.unwrap().addresses.unwrap();
        assert_eq!(
            (addresses[0].type_.as_str(), addresses[0].address.as_str()),
            ("InternalIP", "")
        );
    }

    #[test]
    fn something_not_an_object_is_invalid_without_a_name() {
        let bad = invalid::<Node>(json!(42));
        assert_eq!(bad.name, "");
        assert!(bad.problem.contains("invalid type"), "{}", bad.problem);
    }

    #[test]
    fn huge_values_in_fields_not_read_cost_nothing_downstream() {
        let node = json!({
            "metadata": {"name": "n", "annotations": {"big": "x".repeat(1 << 20)}},
            "status": {"addresses": [{"type": "InternalIP", "address": "192.168.0.2"}],
                       "images": [{"names": null, "sizeBytes": 1e300}]},
        });
        let Decoded::Valid(node) = decode::<Node>(node) else {
            panic!("invalid")
        };
        assert!(node.metadata.annotations.is_none());
        assert!(node.status.unwrap().images.is_none());
    }
}
