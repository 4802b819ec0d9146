//! The shortcut answers what the full parser answers, or nothing.

use super::*;

fn full(text: &str) -> Value {
    serde_saphyr::from_str_with_options(text, super::super::decode::options()).unwrap()
}

/// Either the shortcut gives up or it agrees with the full parser.
fn agrees(text: &str) -> bool {
    match parse(text) {
        Some(value) => {
            assert_eq!(value, full(text), "{text}");
            true
        }
        None => false,
    }
}

#[test]
fn reads_kubectl_shaped_objects_as_the_full_parser() {
    let text = "
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
# a comment line
metadata:
  name: web-1
  namespace: shop
  labels:
    kubernetes.io/service-name: web
    version: \"1\"
    empty: ''
    quote: 'it''s'
addressType: IPv4
endpoints:
- addresses:
  - 10.180.0.1
  conditions:
    ready: true
    serving: false
  nodeName: node-b
  hints: {}
-   addresses: [\"10.180.0.2\"]
ports:
  - name: http
    port: 8080
    protocol: TCP
    appProtocol: null
    weird: -12
  - name:
    port: 0
";
    // The quoted flow list on the second endpoint is left to the full parser.
    assert!(!agrees(text));
    assert!(agrees(&text.replace("[\"10.180.0.2\"]", "[10.180.0.2]")));
    let block = text.replace("[\"10.180.0.2\"]", "\n    - \"10.180.0.2\"");
    assert!(agrees(&block), "{block}");
}

#[test]
fn gives_up_on_what_it_does_not_know() {
    for text in [
        "a: {b: {c: 1}}\n",
        "- - a\n",
        "a: - b\n",
        "a: [1, [2]]\n",
        "a: [\"x\"]\n",
        "a: [fd00::1]\n",
        "a: [1, ]\n",
        "a: {b: }\n",
        "a: |\n  x\n",
        "a: &x 1\nb: *x\n",
        "a: !!str 1\n",
        "a: 1.5\n",
        "a: 1e3\n",
        "a: True\n",
        "a: yes\n",
        "a: 0123\n",
        "a: b: c\n",
        "a: b # c\n",
        "a: \"x\ny\"\n",
        "\"a\": 1\n",
        "a:\n\tb: 1\n",
        "a: 1\na: 2\n",
        "a: x\n  y\n",
        "a: 'it's'\n",
        "a: \"\\x41\"\n",
    ] {
        assert!(parse(text).is_none(), "{text:?}");
    }
}

#[test]
fn scalars_are_typed_as_the_full_parser_types_them() {
    for text in [
        "a: 80\n",
        "a: -1\n",
        "a: 0\n",
        "a: true\n",
        "a: false\n",
        "a: null\n",
        "a: ~\n",
        "a:\n",
        "a: 10.180.0.1\n",
        "a: 10.0.0.0/8\n",
        "a: fd00::1\n",
        "a: \"80\"\n",
        "a: \"tab\\there\"\n",
        "a: x-y_z.w/v\n",
        "a: []\n",
        "a: {}\n",
        "a: [10.128.0.0]\n",
        "a: [10.0.0.1, 10.0.0.2,x]\n",
        "a: {ready: true, serving: false, n: 3}\n",
        "a: '#not a comment'\n",
    ] {
        assert!(agrees(text), "{text:?}");
    }
}

#[test]
fn deep_nesting_is_left_to_the_full_parser() {
    let deep: String = (0..40)
        .map(|d| format!("{}k{d}:\n", " ".repeat(d)))
        .collect();
    assert!(parse(&deep).is_none());
    let shallow: String = (0..10)
        .map(|d| format!("{}k{d}:\n", " ".repeat(d)))
        .collect();
    assert!(agrees(&shallow));
}
