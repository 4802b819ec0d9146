//! The upstream v1.36 reference scenario for the IPVS tests: the
//! hand-built snapshot from `testkit::reference_scenario` and the corpus's
//! configuration in IPVS mode.

#[allow(unused_imports)] // each test binary uses its own share
pub use testkit::reference_scenario::{eps, ip, lb, net, nodeport, port};
use plan::Options;

/// The reference snapshot, as node-a sees it.
pub fn reference_snapshot() -> model::Snapshot {
    testkit::reference_scenario::snapshot()
}

/// The corpus's configuration in IPVS mode: clusterCIDR 10.244.0.0/16,
/// node-a's address 192.168.86.2 as the only local address.
pub fn reference_options() -> ipvs::render::RenderOptions {
    ipvs::render::RenderOptions {
        common: Options::with_cluster_cidr(net("10.244.0.0/16")),
        local_addresses: vec![ip("192.168.86.2")],
        ..Default::default()
    }
}
