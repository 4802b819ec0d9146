//! The node health and metrics servers when their port is taken, as
//! upstream: the proxy keeps syncing and binds again every 5 s until the
//! port is free; with `--bind-address-hard-fail` the failure ends the proxy
//! with an error naming the server and the flag. The binary runs in a
//! network namespace of its own. Needs root; without it the test fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/proxy.rs"]
mod proxy;

use proxy::Proxy;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};
use testkit::netns::Netns;

const METRICS: &str = "127.0.0.1:10249";
const NODE_HEALTH: &str = "127.0.0.1:10256";

fn args(manifests: &Path, extra: &[&str]) -> Vec<String> {
    let manifests = manifests.display().to_string();
    let base = [
        "--manifests", &manifests, "--hostname-override", "node-a", "--iptables-backend", "legacy",
        "--healthz-bind-address", NODE_HEALTH, "--metrics-bind-address", METRICS,
    ];
    base.iter().chain(extra).map(|s| s.to_string()).collect()
}

/// A namespace with loopback up, the example cluster, and `METRICS` taken
/// by a listener of the test.
fn node_with_metrics_port_taken() -> (Netns, tempfile::TempDir, TcpListener) {
    testkit::netns::require_kernel();
    let ns = Netns::new("servers").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/cluster.yaml");
    std::fs::copy(example, dir.path().join("cluster.yaml")).unwrap();
    let taken = ns.run(|| TcpListener::bind(METRICS)).unwrap().unwrap();
    (ns, dir, taken)
}

/// The status line of `GET path` from inside the namespace, or the error.
fn status(ns: &Netns, addr: &'static str, path: &'static str) -> Result<String, std::io::Error> {
    ns.run(move || {
        let mut stream = TcpStream::connect(addr)?;
        write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")?;
        let mut reply = String::new();
        stream.read_to_string(&mut reply)?;
        Ok(reply.lines().next().unwrap_or_default().to_string())
    })
    .unwrap()
}

#[test]
fn a_taken_port_is_bound_again_once_free() {
    let (ns, dir, taken) = node_with_metrics_port_taken();
    let mut proxy = Proxy::start_in(&ns, &args(&dir.path().join("cluster.yaml"), &[]));
    proxy.wait_for("metrics server failed; will retry");
    proxy.wait_for("synced iptables rules ip_family=IPv4");
    assert_eq!(status(&ns, NODE_HEALTH, "/healthz").unwrap(), "HTTP/1.1 200 OK");
    drop(taken);
    let deadline = Instant::now() + Duration::from_secs(12);
    loop {
        match status(&ns, METRICS, "/metrics") {
            Ok(line) => break assert_eq!(line, "HTTP/1.1 200 OK"),
            Err(err) => assert!(Instant::now() < deadline, "metrics not served 12 s after its port was freed: {err}"),
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    proxy.stop();
}

#[test]
fn bind_address_hard_fail_ends_the_proxy() {
    let (ns, dir, _taken) = node_with_metrics_port_taken();
    let mut proxy = Proxy::start_in(&ns, &args(&dir.path().join("cluster.yaml"), &["--bind-address-hard-fail"]));
    let status = proxy.wait_exit().expect("the proxy still runs with its metrics port taken");
    assert!(!status.success(), "exited {status}");
    assert!(proxy.logged("metrics server failed"), "the error does not name the server");
    assert!(proxy.logged("--bind-address-hard-fail"), "the error does not name the flag");
}
