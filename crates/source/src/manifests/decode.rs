//! Decoding documents into k8s-openapi objects, one at a time so a bad one
//! costs only itself and only one object is ever held.
//!
//! Two passes over the text. [`check`] reads each document untyped (by
//! the `plain_yaml` shortcut when the document is plain block YAML, else
//! by the full parser; a `serde_json::Value`, dropped at once) and fails on the first one that
//! is not YAML ([`Error::NotYaml`] with the file's line and column) or not
//! a mapping: what makes the whole file unusable. [`decode_each`] then
//! reads each document again untyped, for its kind and name, and types
//! that value (fast: no second YAML parse); a document whose value does
//! not type as JSON would (an unquoted `version: 1` label is the number 1
//! there) is typed from its YAML text instead, which keeps YAML's
//! leniency for string fields (the string `"1"`, as kubectl reads it).
//! Each object is handed on as soon as it is decoded. Items of
//! a `List` are re-read from their JSON form (JSON is YAML), so there an
//! unquoted `1.10` label becomes `"1.1"`; `kubectl get -o yaml` quotes
//! such values, so this only touches hand-written lists.

use super::plain_yaml;
use super::split::{Document, split_documents};
use super::{Object, Warning};
use crate::Error;
use crate::lenient::{self, ReadFields};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tracker::ObjectKind;

/// Parser options: YAML 1.2 booleans only (so a label value `yes` stays a
/// string), no snippets in messages, and limits sized for clusters of tens
/// of thousands of objects rather than the defaults (1,024 documents).
pub(super) fn options() -> serde_saphyr::Options {
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

/// Fails when `text` (read from `origin`) is not a stream of YAML
/// mappings; when it passes, [`decode_each`] cannot fail as a whole.
pub(super) fn check(origin: &str, text: &str) -> Result<(), Error> {
    split_documents(text)
        .iter()
        .try_for_each(|doc| check_document(origin, doc))
}

/// Fails when `doc` is not YAML or not a mapping.
pub(super) fn check_document(origin: &str, doc: &Document<'_>) -> Result<(), Error> {
    document_value(origin, doc).map(drop)
}

/// Hands each Service, EndpointSlice, Node and ServiceCIDR of `text` to `emit`, in file
/// order; returns the documents of those kinds that were skipped (each
/// also logged). A document that fails [`check`] is skipped with an error.
pub(super) fn decode_each(origin: &str, text: &str, emit: &mut dyn FnMut(Object)) -> Vec<Warning> {
    split_documents(text)
        .iter()
        .flat_map(|doc| decode_one(origin, doc, emit))
        .collect()
}

/// [`decode_each`] for one document.
pub(super) fn decode_one(
    origin: &str,
    doc: &Document<'_>,
    emit: &mut dyn FnMut(Object),
) -> Vec<Warning> {
    let mut out = Decoded {
        emit,
        warnings: Vec::new(),
    };
    match document_value(origin, doc) {
        Ok(Some(value)) => decode_document(doc, value, &mut out),
        Ok(None) => {}
        Err(err) => tracing::error!("{err}; document skipped"),
    }
    out.warnings
}

/// Where decoded objects and warnings go.
struct Decoded<'a> {
    emit: &'a mut dyn FnMut(Object),
    warnings: Vec<Warning>,
}

/// The document read untyped: `None` when it is empty, an error when it
/// is not YAML or not a mapping.
fn document_value(origin: &str, doc: &Document<'_>) -> Result<Option<Value>, Error> {
    let value = match plain_yaml::parse(doc.text) {
        Some(value) => value,
        None => serde_saphyr::from_str_with_options(doc.text, options()).map_err(|e| {
            Error::NotYaml {
                origin: origin.to_string(),
                message: relocated(&e, doc.line),
            }
        })?,
    };
    match value {
        Value::Null => Ok(None),
        Value::Object(_) => Ok(Some(value)),
        other => Err(Error::NotAnObject {
            origin: origin.to_string(),
            line: doc.line,
            found: what(&other),
        }),
    }
}

/// The parser's message with its location (relative to the text parsed)
/// moved to file lines: the text parsed started on line `first_line`.
fn relocated(err: &serde_saphyr::Error, first_line: usize) -> String {
    let (message, location) = split_location(err);
    match location {
        Some((line, column)) => format!(
            "{message} at line {}, column {column}",
            line + first_line - 1
        ),
        None => message,
    }
}

/// The parser's message without its location suffix, and that location.
fn split_location(err: &serde_saphyr::Error) -> (String, Option<(usize, u64)>) {
    let text = err.without_snippet().to_string();
    let Some(loc) = err.location() else {
        return (text, None);
    };
    let suffix = format!(" at line {}, column {}", loc.line(), loc.column());
    let line = usize::try_from(loc.line()).unwrap_or(usize::MAX);
    let message = text
        .strip_suffix(&suffix)
        .map(str::to_string)
        .unwrap_or(text);
    (message, Some((line, loc.column())))
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
        "ServiceCIDR" => Some((ObjectKind::ServiceCIDR, "networking.k8s.io/v1")),
        _ => None,
    }
}

fn str_at<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    path.iter()
        .try_fold(value, |v, key| v.get(key))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn decode_document(doc: &Document<'_>, value: Value, out: &mut Decoded<'_>) {
    let kind = str_at(&value, &["kind"]).to_string();
    let item_kind = kind
        .strip_suffix("List")
        .filter(|k| k.is_empty() || kind_of(k).is_some());
    match item_kind {
        Some(item_kind) => decode_list(doc, &value, item_kind, out),
        None => decode_object(doc, &value, &kind, Source::Document(doc.text, &value), out),
    }
}

/// Items of a `List` (any kinds) or of a typed list (`ServiceList`, ...,
/// whose items may omit their own kind).
fn decode_list(doc: &Document<'_>, value: &Value, item_kind: &str, out: &mut Decoded<'_>) {
    let items = value
        .get("items")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    for (index, item) in items.iter().enumerate() {
        let kind = match str_at(item, &["kind"]) {
            "" => item_kind,
            k => k,
        };
        let item = with_api_version(item, kind);
        decode_object(
            doc,
            &item,
            kind,
            Source::ListItem(index, &item.to_string()),
            out,
        );
    }
}

/// Items of typed lists from the API carry no apiVersion; give them ours.
fn with_api_version(item: &Value, kind: &str) -> Value {
    let mut item = item.clone();
    if let (Some(obj), Some((_, version))) = (item.as_object_mut(), kind_of(kind)) {
        obj.entry("apiVersion")
            .or_insert_with(|| Value::String(version.to_string()));
    }
    item
}

/// Where an object's text comes from.
enum Source<'a> {
    /// A whole document of the stream, and its untyped form.
    Document(&'a str, &'a Value),
    /// Item `n` of a List, as JSON text.
    ListItem(usize, &'a str),
}

/// Decodes one object of kind `kind` from `source` (its header read from
/// `value`), recording it or a warning. Kinds the proxy does not read are
/// ignored.
fn decode_object(
    doc: &Document<'_>,
    value: &Value,
    kind: &str,
    source: Source<'_>,
    out: &mut Decoded<'_>,
) {
    let Some((object_kind, api_version)) = kind_of(kind) else {
        tracing::debug!(
            kind,
            line = doc.line,
            "ignoring a manifest of a kind the proxy does not read"
        );
        return;
    };
    let found_version = str_at(value, &["apiVersion"]);
    let result = if found_version != api_version {
        Err(format!(
            "unsupported apiVersion {found_version:?} (want {api_version})"
        ))
    } else {
        match source {
            Source::Document(text, value) => decode_fast(object_kind, value, out)
                .or_else(|()| decode_typed(object_kind, text, out))
                .map_err(|e| relocated(&e, doc.line)),
            Source::ListItem(index, text) => decode_typed(object_kind, text, out)
                .map_err(|e| format!("items[{index}]: {}", split_location(&e).0)),
        }
        .or_else(|message| decode_read_fields(object_kind, value, out).ok_or(message))
    };
    if let Err(message) = result {
        let warning = Warning {
            kind: object_kind,
            namespace: str_at(value, &["metadata", "namespace"]).to_string(),
            name: str_at(value, &["metadata", "name"]).to_string(),
            line: doc.line,
            message,
        };
        tracing::warn!("{warning}");
        out.warnings.push(warning);
    }
}

/// Decodes `text` as a `kind` object and hands it on.
fn decode_typed(
    kind: ObjectKind,
    text: &str,
    out: &mut Decoded<'_>,
) -> Result<(), serde_saphyr::Error> {
    let object = match kind {
        ObjectKind::Service => Object::Service(decode_as(text)?),
        ObjectKind::EndpointSlice => Object::EndpointSlice(decode_as(text)?),
        ObjectKind::Node => Object::Node(decode_as(text)?),
        ObjectKind::ServiceCIDR => Object::ServiceCIDR(decode_as(text)?),
    };
    (out.emit)(object);
    Ok(())
}

/// Decodes the already-read untyped `value` as a `kind` object and hands
/// it on; `Err` (nothing handed on) when it does not fit as JSON would
/// type it (an unquoted number or boolean in a string field, say), and the
/// document is then decoded from its YAML text, leniency and all.
fn decode_fast(kind: ObjectKind, value: &Value, out: &mut Decoded<'_>) -> Result<(), ()> {
    fn typed<T: DeserializeOwned>(value: &Value) -> Result<T, ()> {
        T::deserialize(value).map_err(drop)
    }
    let object = match kind {
        ObjectKind::Service => Object::Service(typed(value)?),
        ObjectKind::EndpointSlice => Object::EndpointSlice(typed(value)?),
        ObjectKind::Node => Object::Node(typed(value)?),
        ObjectKind::ServiceCIDR => Object::ServiceCIDR(typed(value)?),
    };
    (out.emit)(object);
    Ok(())
}

/// The last resort for an object that does not type whole: only the
/// fields the proxy reads, as the API source reads every object
/// ([`crate::lenient`]); `None` (nothing handed on) when those do not type
/// either, and the object is skipped with the whole typing's message.
fn decode_read_fields(kind: ObjectKind, value: &Value, out: &mut Decoded<'_>) -> Option<()> {
    fn valid<T: ReadFields>(value: &Value) -> Option<T> {
        match lenient::decode(value.clone()) {
            lenient::Decoded::Valid(object) => Some(object),
            lenient::Decoded::Invalid(_) => None,
        }
    }
    let object = match kind {
        ObjectKind::Service => Object::Service(valid(value)?),
        ObjectKind::EndpointSlice => Object::EndpointSlice(valid(value)?),
        ObjectKind::Node => Object::Node(valid(value)?),
        ObjectKind::ServiceCIDR => Object::ServiceCIDR(valid(value)?),
    };
    (out.emit)(object);
    Some(())
}

fn decode_as<T: DeserializeOwned>(text: &str) -> Result<T, serde_saphyr::Error> {
    serde_saphyr::from_str_with_options(text, options())
}
