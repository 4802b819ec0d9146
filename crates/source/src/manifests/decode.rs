//! Decoding documents into k8s-openapi objects, one at a time so a bad one
//! costs only itself.
//!
//! Each document is read twice: once untyped (`serde_json::Value`) for its
//! kind and name, once typed straight from the YAML text, which keeps
//! YAML's leniency for string fields (an unquoted `version: 1` label is the
//! string `"1"`, as kubectl reads it). Items of a `List` are re-read from
//! their JSON form, which is YAML too.

use super::split::{Document, split_documents};
use super::{Parsed, Warning};
use crate::Error;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tracker::ObjectKind;

/// Parser options: YAML 1.2 booleans only (so a label value `yes` stays a
/// string), no snippets in messages, and limits sized for clusters of tens
/// of thousands of objects rather than the defaults (1,024 documents).
fn options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        strict_booleans: true,
        with_snippet: false,
        budget: serde_saphyr::budget! {
            max_documents: 10_000_000,
            max_nodes: 500_000_000,
            max_events: 1_000_000_000,
            max_total_scalar_bytes: 4 << 30,
            max_reader_input_bytes: None,
        },
    }
}

/// Parses manifests `text` read from `origin`.
pub(super) fn parse_named(origin: &str, text: &str) -> Result<Parsed, Error> {
    check_syntax(origin, text)?;
    let mut parsed = Parsed::default();
    for doc in split_documents(text) {
        let value: Value = serde_saphyr::from_str_with_options(doc.text, options())
            .map_err(|e| not_yaml(origin, &e, doc.line))?;
        match value {
            Value::Null => {}
            Value::Object(_) => decode_document(&doc, &value, &mut parsed),
            other => {
                return Err(Error::NotAnObject {
                    origin: origin.to_string(),
                    line: doc.line,
                    found: what(&other),
                });
            }
        }
    }
    Ok(parsed)
}

/// Fails when `text` is not a YAML stream, with file line and column.
fn check_syntax(origin: &str, text: &str) -> Result<(), Error> {
    serde_saphyr::from_multiple_with_options::<serde::de::IgnoredAny>(text, options())
        .map(drop)
        .map_err(|e| not_yaml(origin, &e, 1))
}

fn not_yaml(origin: &str, err: &serde_saphyr::Error, first_line: usize) -> Error {
    let message = match err.location() {
        Some(loc) => format!(
            "line {}, column {}: {}",
            loc.line() as usize + first_line - 1,
            loc.column(),
            message_of(err)
        ),
        None => message_of(err),
    };
    Error::NotYaml {
        origin: origin.to_string(),
        message,
    }
}

/// The parser's message without its own location suffix.
fn message_of(err: &serde_saphyr::Error) -> String {
    err.without_snippet().to_string()
}

fn what(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// The kinds the proxy reads, with the apiVersion each must have.
fn kind_of(kind: &str) -> Option<(ObjectKind, &'static str)> {
    match kind {
        "Service" => Some((ObjectKind::Service, "v1")),
        "EndpointSlice" => Some((ObjectKind::EndpointSlice, "discovery.k8s.io/v1")),
        "Node" => Some((ObjectKind::Node, "v1")),
        _ => None,
    }
}

fn str_at<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    path.iter()
        .try_fold(value, |v, key| v.get(key))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn decode_document(doc: &Document<'_>, value: &Value, parsed: &mut Parsed) {
    let kind = str_at(value, &["kind"]);
    if kind == "List"
        || (kind.ends_with("List") && kind_of(kind.trim_end_matches("List")).is_some())
    {
        decode_list(doc, value, kind.trim_end_matches("List"), parsed);
        return;
    }
    decode_object(doc, value, kind, doc.text, parsed);
}

/// Items of a `List` (any kind) or of a typed list (`ServiceList`, ...,
/// whose items may omit their own kind).
fn decode_list(doc: &Document<'_>, value: &Value, item_kind: &str, parsed: &mut Parsed) {
    let items = value
        .get("items")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    for item in items {
        let kind = match str_at(item, &["kind"]) {
            "" => item_kind,
            k => k,
        };
        decode_object(doc, item, kind, &item.to_string(), parsed);
    }
}

/// Decodes one object of kind `kind` from `text` (its header read from
/// `value`), recording it or a warning.
fn decode_object(doc: &Document<'_>, value: &Value, kind: &str, text: &str, parsed: &mut Parsed) {
    let Some((object_kind, api_version)) = kind_of(kind) else {
        tracing::debug!(
            kind,
            line = doc.line,
            "ignoring manifest of a kind the proxy does not read"
        );
        return;
    };
    let warn = |message: String| Warning {
        kind: object_kind,
        namespace: str_at(value, &["metadata", "namespace"]).to_string(),
        name: str_at(value, &["metadata", "name"]).to_string(),
        line: doc.line,
        message,
    };
    let found_version = str_at(value, &["apiVersion"]);
    let result = if found_version != api_version {
        Err(format!(
            "unsupported apiVersion {found_version:?} (want {api_version})"
        ))
    } else {
        decode_typed(object_kind, text, parsed).map_err(|e| message_of(&e))
    };
    match result {
        Ok(()) => {}
        Err(message) => {
            let warning = warn(message);
            tracing::warn!("{warning}");
            parsed.warnings.push(warning);
        }
    }
}

/// Decodes `text` as a `kind` object and stores it in `parsed`.
fn decode_typed(
    kind: ObjectKind,
    text: &str,
    parsed: &mut Parsed,
) -> Result<(), serde_saphyr::Error> {
    let objects = &mut parsed.objects;
    match kind {
        ObjectKind::Service => objects.services.push(decode_as(text)?),
        ObjectKind::EndpointSlice => objects.endpoint_slices.push(decode_as(text)?),
        ObjectKind::Node => objects.nodes.push(decode_as(text)?),
    }
    Ok(())
}

fn decode_as<T: DeserializeOwned>(text: &str) -> Result<T, serde_saphyr::Error> {
    serde_saphyr::from_str_with_options(text, options())
}
