//! The API objects of the kube-API binary tests: Service shop/web
//! (ClusterIP 10.96.0.40, port 80 → 8080) and its EndpointSlice.

#![allow(dead_code)] // each test binary uses its own part

use serde_json::{Value, json};

/// Service shop/web.
pub fn service() -> Value {
    json!({
        "metadata": {"namespace": "shop", "name": "web", "labels": {}},
        "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.40", "clusterIPs": ["10.96.0.40"],
                 "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]},
    })
}

/// shop/web's EndpointSlice with ready endpoints `ips` on node-b.
pub fn slice(ips: &[&str]) -> Value {
    let endpoints: Vec<Value> =
        ips.iter().map(|ip| json!({"addresses": [ip], "conditions": {"ready": true}, "nodeName": "node-b"})).collect();
    json!({
        "metadata": {"namespace": "shop", "name": "web-1", "labels": {"kubernetes.io/service-name": "web"}},
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
    })
}
