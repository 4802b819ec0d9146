//! The fields of each kind the proxy reads, and nothing else.
//!
//! Upstream's proxy decodes whole objects with Go's lenient decoder: a
//! `null` anywhere is a zero value, and a field it never reads can hold
//! anything. The typed k8s-openapi structs are stricter (a `null` where
//! the schema says required fails the whole object: a Service status
//! condition written with `"lastTransitionTime": null` once stopped every
//! later Service update). So an object is first read untyped, cut down to
//! the fields listed here (what the tracker reads, plus the fields the
//! typed structs require beside them), with every `null` dropped, and only
//! then typed. A field listed here that does not type makes that one
//! object invalid; everything else about the object is ignored.

use serde_json::{Map, Value};

/// Which part of a JSON value the proxy reads.
#[derive(Debug)]
pub(crate) enum Shape {
    /// The whole value (a string, a number, a map of labels), nulls dropped.
    Whole,
    /// Only these fields of an object.
    Fields(&'static [(&'static str, Shape)]),
    /// Each item of a list, read with this shape.
    Items(&'static Shape),
}

use Shape::{Fields, Items, Whole};

/// `metadata` as the tracker and the source read it: name, namespace and
/// labels, and the resource version to resume watches from.
const METADATA: Shape = Fields(&[
    ("name", Whole),
    ("namespace", Whole),
    ("labels", Whole),
    ("resourceVersion", Whole),
]);

/// A Node's `metadata`: also its deletion timestamp (a node going away).
const NODE_METADATA: Shape = Fields(&[
    ("name", Whole),
    ("labels", Whole),
    ("resourceVersion", Whole),
    ("deletionTimestamp", Whole),
]);

/// A ServiceCIDR's `metadata`: its name and resource version.
const NAME_ONLY_METADATA: Shape = Fields(&[("name", Whole), ("resourceVersion", Whole)]);

/// A v1 Service: its spec's addressing, ports and policies, and its
/// load-balancer ingress addresses.
pub(crate) const SERVICE: Shape = Fields(&[
    ("apiVersion", Whole),
    ("kind", Whole),
    ("metadata", METADATA),
    (
        "spec",
        Fields(&[
            ("type", Whole),
            ("clusterIP", Whole),
            ("clusterIPs", Whole),
            (
                "ports",
                Items(&Fields(&[
                    ("name", Whole),
                    ("protocol", Whole),
                    ("port", Whole),
                    ("nodePort", Whole),
                ])),
            ),
            ("externalIPs", Whole),
            ("loadBalancerSourceRanges", Whole),
            ("externalTrafficPolicy", Whole),
            ("internalTrafficPolicy", Whole),
            ("healthCheckNodePort", Whole),
            ("sessionAffinity", Whole),
            (
                "sessionAffinityConfig",
                Fields(&[("clientIP", Fields(&[("timeoutSeconds", Whole)]))]),
            ),
        ]),
    ),
    (
        "status",
        Fields(&[(
            "loadBalancer",
            Fields(&[(
                "ingress",
                Items(&Fields(&[("ip", Whole), ("ipMode", Whole)])),
            )]),
        )]),
    ),
]);

/// A discovery.k8s.io/v1 EndpointSlice: address type, endpoints with
/// their conditions, node and hints, and ports.
pub(crate) const ENDPOINT_SLICE: Shape = Fields(&[
    ("apiVersion", Whole),
    ("kind", Whole),
    ("metadata", METADATA),
    ("addressType", Whole),
    (
        "endpoints",
        Items(&Fields(&[
            ("addresses", Whole),
            (
                "conditions",
                Fields(&[("ready", Whole), ("serving", Whole), ("terminating", Whole)]),
            ),
            ("nodeName", Whole),
            (
                "hints",
                Fields(&[
                    ("forZones", Items(&Fields(&[("name", Whole)]))),
                    ("forNodes", Items(&Fields(&[("name", Whole)]))),
                ]),
            ),
        ])),
    ),
    (
        "ports",
        Items(&Fields(&[
            ("name", Whole),
            ("protocol", Whole),
            ("port", Whole),
        ])),
    ),
]);

/// A v1 Node: pod CIDRs, taints (a taint's `effect` is required by the
/// typed struct beside the `key` read), addresses.
pub(crate) const NODE: Shape = Fields(&[
    ("apiVersion", Whole),
    ("kind", Whole),
    ("metadata", NODE_METADATA),
    (
        "spec",
        Fields(&[
            ("podCIDR", Whole),
            ("podCIDRs", Whole),
            (
                "taints",
                Items(&Fields(&[("key", Whole), ("effect", Whole)])),
            ),
        ]),
    ),
    (
        "status",
        Fields(&[(
            "addresses",
            Items(&Fields(&[("type", Whole), ("address", Whole)])),
        )]),
    ),
]);

/// A networking.k8s.io/v1 ServiceCIDR: its CIDRs.
pub(crate) const SERVICE_CIDR: Shape = Fields(&[
    ("apiVersion", Whole),
    ("kind", Whole),
    ("metadata", NAME_ONLY_METADATA),
    ("spec", Fields(&[("cidrs", Whole)])),
]);

/// `value` cut down to `shape`, with every `null` dropped (a `null` is
/// Go's zero value: the same as the field left out). A value whose type
/// does not fit the shape (a string where an object was expected) is kept
/// as it is, so typing it names the field.
pub(crate) fn keep(shape: &Shape, value: Value) -> Option<Value> {
    match (shape, value) {
        (_, Value::Null) => None,
        (Whole, value) => Some(without_nulls(value)),
        (Fields(fields), Value::Object(mut object)) => {
            let kept: Map<String, Value> = fields
                .iter()
                .filter_map(|(name, shape)| {
                    let value = object.remove(*name)?;
                    Some(((*name).to_string(), keep(shape, value)?))
                })
                .collect();
            Some(Value::Object(kept))
        }
        (Items(item), Value::Array(items)) => Some(Value::Array(
            items.into_iter().filter_map(|v| keep(item, v)).collect(),
        )),
        (_, other) => Some(other),
    }
}

/// `value` with every `null` (object field or list item) dropped.
fn without_nulls(value: Value) -> Value {
    match value {
        Value::Object(object) => Value::Object(
            object
                .into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .filter(|v| !v.is_null())
                .map(without_nulls)
                .collect(),
        ),
        other => other,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_not_read_are_dropped_whatever_they_hold() {
        let service = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "a", "namespace": "ns", "annotations": {"x": null}, "managedFields": [null]},
            "spec": {"clusterIP": "10.0.0.1", "selector": {"app": null}, "ports": [{"port": 80, "targetPort": null, "appProtocol": 5}]},
            "status": {"conditions": [{"type": "Ready", "lastTransitionTime": null}],
                       "loadBalancer": {"ingress": [{"ip": "1.2.3.4", "ports": [{"port": null}]}]}},
        });
        let kept = keep(&SERVICE, service).unwrap();
        assert_eq!(
            kept,
            json!({
                "apiVersion": "v1", "kind": "Service",
                "metadata": {"name": "a", "namespace": "ns"},
                "spec": {"clusterIP": "10.0.0.1", "ports": [{"port": 80}]},
                "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}},
            })
        );
    }

    #[test]
    fn nulls_in_fields_read_are_left_out() {
        let slice = json!({
            "metadata": {"name": "s", "labels": {"kubernetes.io/service-name": "a", "other": null}},
            "addressType": "IPv4",
            "endpoints": [null, {"addresses": ["10.0.0.1", null], "conditions": {"ready": null}, "nodeName": null}],
            "ports": null,
        });
        let kept = keep(&ENDPOINT_SLICE, slice).unwrap();
        assert_eq!(
            kept,
            json!({
                "metadata": {"name": "s", "labels": {"kubernetes.io/service-name": "a"}},
                "addressType": "IPv4",
                "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {}}],
            })
        );
    }

    #[test]
    fn a_value_of_the_wrong_type_is_kept_for_typing_to_name() {
        let node =
            json!({"metadata": {"name": "n"}, "spec": "not an object", "status": {"addresses": 7}});
        let kept = keep(&NODE, node.clone()).unwrap();
        assert_eq!(kept, node);
    }
}
