//! kube-proxy-rs: flags and config in, wiring out.
fn main() {}
