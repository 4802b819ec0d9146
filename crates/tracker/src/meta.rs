//! Names and labels read from `metadata`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use model::Protocol;

/// The namespace of a namespaced object; `default` when unset, as
/// `kubectl apply` fills it in for a manifest without one.
pub(crate) fn namespace_of(meta: &ObjectMeta) -> &str {
    match meta.namespace.as_deref() {
        None | Some("") => "default",
        Some(ns) => ns,
    }
}

/// `metadata.name`, empty when unset.
pub(crate) fn name_of(meta: &ObjectMeta) -> &str {
    meta.name.as_deref().unwrap_or("")
}

/// The object carries label `key` (any value).
pub(crate) fn has_label(meta: &ObjectMeta, key: &str) -> bool {
    meta.labels
        .as_ref()
        .is_some_and(|labels| labels.contains_key(key))
}

/// The value of label `key`, if set and non-empty.
pub(crate) fn label<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.labels
        .as_ref()?
        .get(key)
        .map(String::as_str)
        .filter(|v| !v.is_empty())
}

/// A port protocol as the API defaults it: unset means TCP. `Err` carries
/// the unknown spelling.
pub(crate) fn protocol_of(protocol: Option<&str>) -> Result<Protocol, String> {
    match protocol {
        None | Some("") => Ok(Protocol::Tcp),
        Some(p) => Protocol::from_api(p).ok_or_else(|| p.to_string()),
    }
}
