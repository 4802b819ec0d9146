//! What upstream kube-proxy v1.36 answers over HTTP, from the reference
//! corpus' raw `curl -si` captures (`crates/health/tests/fixtures/
//! upstream-v1.36/`): the answer of a service's health-check node port,
//! and the node's `/healthz`, with the parts that change from run to run
//! (the `Date` value, timestamps, the length they imply) blanked.

/// Upstream's captures: (file, namespace, name, local endpoints).
pub const SERVICE_CAPTURES: [(&str, &str, &str, usize); 3] = [
    (include_str!("../../../health/tests/fixtures/upstream-v1.36/iptables/hcnp-32070-storefront-api.txt"), "storefront", "api", 2),
    (include_str!("../../../health/tests/fixtures/upstream-v1.36/iptables/hcnp-32052-storefront-search.txt"), "storefront", "search", 0),
    (include_str!("../../../health/tests/fixtures/upstream-v1.36/iptables/hcnp-32170-storefront-gateway.txt"), "storefront", "gateway", 0),
];

/// Upstream's node `/healthz` answer.
pub const NODE_HEALTHZ: &str = include_str!("../../../health/tests/fixtures/upstream-v1.36/iptables/node-healthz.txt");

/// What stands in for a blanked value.
const BLANK: &str = "<varies>";

/// Upstream's answer of a health-check node port for `namespace/name` with
/// `local` ready endpoints on the node (proxy healthy), `Date` blanked.
/// `service_answer_matches_upstream_captures` ties it to the captures.
pub fn service_answer(namespace: &str, name: &str, local: usize) -> String {
    let body = format!(
        "{{\n\t\"service\": {{\n\t\t\"namespace\": \"{namespace}\",\n\t\t\"name\": \"{name}\"\n\t}},\n\t\"localEndpoints\": {local},\n\t\"serviceProxyHealthy\": true\n}}"
    );
    let status = if local > 0 { "200 OK" } else { "503 Service Unavailable" };
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nX-Content-Type-Options: nosniff\r\nX-Load-Balancing-Endpoint-Weight: {local}\r\nDate: {BLANK}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Upstream's node `/healthz` answer for an IPv4-only proxy, run-dependent
/// parts blanked: the capture minus its `IPv6` entry (that proxy ran both
/// families; kube-proxy-rs runs IPv4 only).
pub fn node_healthz() -> String {
    let blanked = blank_node_health(NODE_HEALTHZ);
    blanked.replace(&format!(",\"IPv6\":{{\"lastUpdated\":\"{BLANK}\",\"healthy\":true}}"), "")
}

/// `answer` with its `Date` header value blanked.
pub fn blank_date(answer: &str) -> String {
    blank_header(answer, "Date")
}

/// A node health answer with `Date`, `Content-Length` and every timestamp
/// blanked.
pub fn blank_node_health(answer: &str) -> String {
    let mut text = blank_header(&blank_date(answer), "Content-Length");
    for key in ["\"lastUpdated\":\"", "\"currentTime\":\""] {
        text = blank_values_after(&text, key);
    }
    text
}

fn blank_header(answer: &str, name: &str) -> String {
    let prefix = format!("{name}: ");
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((answer, ""));
    let head: Vec<String> =
        head.split("\r\n").map(|l| if l.starts_with(&prefix) { format!("{prefix}{BLANK}") } else { l.to_string() }).collect();
    format!("{}\r\n\r\n{body}", head.join("\r\n"))
}

/// Replaces the string value after every `key` (which ends in its opening
/// quote) with the blank.
fn blank_values_after(text: &str, key: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(key) {
        let value_start = at + key.len();
        out.push_str(&rest[..value_start]);
        out.push_str(BLANK);
        rest = &rest[value_start..];
        rest = rest.find('"').map_or("", |end| &rest[end..]);
    }
    out.push_str(rest);
    out
}

/// The expected health-check answers are upstream's captures, byte for
/// byte (apart from the `Date` value).
#[test]
fn service_answer_matches_upstream_captures() {
    for (capture, namespace, name, local) in SERVICE_CAPTURES {
        assert_eq!(service_answer(namespace, name, local), blank_date(capture), "{namespace}/{name}");
    }
    assert!(node_healthz().contains("\"nodeEligible\":true,\"healthy\":true,\"status\":{\"IPv4\":{"));
    assert!(!node_healthz().contains("IPv6"));
}
