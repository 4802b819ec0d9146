//! The reliability suite (issue 15, items 1 and 2): the real binary in a
//! network namespace playing node-a (testkit's cluster: echo pods and a
//! client pod), programming the real kernel while EndpointSlices churn at
//! rate and while faults hit it, with probe traffic to healthy services
//! running through every scenario and counting failed connections. Each
//! scenario is bounded in time and count; the sizes are scaled down for
//! CI, `KPRS_RELIABILITY_FULL=1` runs the (see `reliability/size.rs`).
//! Figures are printed as `[reliability] ...` lines (`--no-capture`) and
//! recorded in docs/reliability.md. Needs root; without it every test fails.
//! IPVS mode runs in a VM (`reliability/ipvs_vm.rs`): this machine's
//! kernel has no IPVS.

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

#[path = "../../source/tests/kube/fake_api.rs"]
mod fake_api;
#[path = "e2e/http.rs"]
mod http;
#[path = "support/proxy.rs"]
mod proxy;

#[path = "reliability/api.rs"]
mod api;
#[path = "reliability/bed.rs"]
mod bed;
#[path = "reliability/churn.rs"]
mod churn;
#[path = "reliability/faults.rs"]
mod faults;
#[path = "reliability/figures.rs"]
mod figures;
#[path = "reliability/ipvs_vm.rs"]
mod ipvs_vm;
#[path = "reliability/observe.rs"]
mod observe;
#[path = "reliability/probes.rs"]
mod probes;
#[path = "reliability/size.rs"]
mod size;
#[path = "reliability/state.rs"]
mod state;

use bed::Mode;
use churn::Via;

#[test]
fn churn_through_the_api_server() {
    churn::run("churn (API server, iptables)", Mode::Iptables, Via::Api);
}

#[test]
fn churn_through_the_manifests_file() {
    churn::run("churn (manifests file, iptables)", Mode::Iptables, Via::Manifests);
}

#[test]
fn churn_through_the_api_server_in_nftables_mode() {
    churn::run("churn (API server, nftables)", Mode::Nftables, Via::Api);
}

#[test]
fn fault_chains_flushed_or_deleted_by_hand() {
    faults::removed_by_hand::run(Mode::Iptables);
}

#[test]
fn fault_table_flushed_or_deleted_by_hand_in_nftables_mode() {
    faults::removed_by_hand::run(Mode::Nftables);
}

#[test]
fn fault_restore_refused() {
    faults::failing_restore::run();
}

#[test]
fn fault_transaction_refused_in_nftables_mode() {
    faults::refused_transaction::run();
}

#[test]
fn fault_api_server_gone_and_back() {
    faults::api_gone::run();
}

#[test]
fn fault_sigkill_in_the_middle_of_a_sync_and_restart() {
    faults::sigkill::run();
}

#[test]
fn fault_xtables_lock_held_by_another_process() {
    faults::xtables_lock::run();
}

#[test]
fn reliability_in_ipvs_mode_in_a_vm() {
    ipvs_vm::run("reliability_in_ipvs_mode_in_a_vm");
}
