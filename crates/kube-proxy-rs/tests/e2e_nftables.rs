//! The end-to-end traffic suite (`e2e_traffic.rs`, issue 3) in nftables
//! mode on this machine: the same two-node cluster in network namespaces,
//! every case, both proxies started with `--proxy-mode nftables` (the
//! suite first checks that each node has table `ip kube-proxy` and no
//! iptables-mode chains). Needs root, `nft` and a kernel with nf_tables;
//! without them the test fails. Heavy: run alone
//! (`cargo nextest run -p kube-proxy-rs -E 'test(=e2e_nftables)'`, or
//! `cargo test -p kube-proxy-rs --test e2e_nftables -- --nocapture` to see
//! every check); `KPRS_E2E_BINARY=<path>` tests another build.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "e2e/suite.rs"]
mod suite;

use std::path::Path;
use suite::scenario::Mode;

/// Environment variable naming another proxy binary to test.
const BINARY_OVERRIDE: &str = "KPRS_E2E_BINARY";

#[test]
fn e2e_nftables() {
    testkit::netns::require_kernel();
    let override_ = std::env::var_os(BINARY_OVERRIDE);
    let binary = override_.as_deref().map_or(Path::new(env!("CARGO_BIN_EXE_kube-proxy-rs")), Path::new);
    suite::run(binary, Mode::Nftables, 1, None);
}
