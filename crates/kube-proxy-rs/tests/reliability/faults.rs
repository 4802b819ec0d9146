//! Faults, one scenario each, on a proxy in steady state with probes to
//! the healthy services running throughout: our chains or table removed by
//! hand, a restore the kernel's tool refuses, an nftables transaction the
//! kernel refuses, the API server gone and back,
//! SIGKILL in the middle of a sync, the xtables lock held by another
//! process. Each counts the failed connections to healthy services, phase
//! by phase; only a fault that itself removes their rules may cost any.

#[path = "faults/api_gone.rs"]
pub mod api_gone;
#[path = "faults/failing_restore.rs"]
pub mod failing_restore;
#[path = "faults/refused_transaction.rs"]
pub mod refused_transaction;
#[path = "faults/removed_by_hand.rs"]
pub mod removed_by_hand;
#[path = "faults/sigkill.rs"]
pub mod sigkill;
#[path = "faults/xtables_lock.rs"]
pub mod xtables_lock;

use crate::bed::{Bed, Launch, Mode, synced_line};
use crate::probes::Prober;
use crate::proxy::Proxy;
use crate::state::{CLIENT_POD, ClusterState};
use std::time::{Duration, Instant};

/// Churned services in a fault scenario (enough for real tables, small
/// enough for quick syncs).
pub const CHURNED: usize = 50;
/// `--iptables-sync-period` of the fault scenarios: repairs come with the
/// next full sync, `/healthz` turns unhealthy after twice this.
pub const SYNC_PERIOD: Duration = Duration::from_secs(4);

/// The flags every fault scenario adds.
pub fn periods() -> Vec<&'static str> {
    vec!["--iptables-sync-period", "4s", "--iptables-min-sync-period", "100ms"]
}

/// [`periods`] of `mode`: IPVS mode has its own (`--ipvs-sync-period`…).
pub fn periods_for(mode: Mode) -> Vec<&'static str> {
    match mode {
        Mode::Ipvs => vec!["--ipvs-sync-period", "4s", "--ipvs-min-sync-period", "100ms"],
        Mode::Iptables | Mode::Nftables => periods(),
    }
}

/// A proxy in steady state: its rules hold `state`, probes run.
pub struct Steady {
    /// The bed.
    pub bed: Bed,
    /// What the proxy was last given.
    pub state: ClusterState,
    /// How it was started (for restarts).
    pub launch: Launch,
    /// The running proxy.
    pub proxy: Proxy,
    /// The probes to the healthy services.
    pub prober: Prober,
}

impl Steady {
    /// Starts the proxy on `bed` (its source already holding `state`) and
    /// waits for its rules, then starts the probes.
    pub fn start(bed: Bed, state: ClusterState, launch: Launch) -> Self {
        let mut proxy = bed.start_proxy(&launch);
        proxy.wait_for(synced_line(launch.mode));
        bed.wait_for_rules(launch.mode, &state, Duration::from_secs(20));
        let prober = Prober::start(&bed.client_netns(), CLIENT_POD.1, state.healthy_addresses());
        Self { bed, state, launch, proxy, prober }
    }

    /// The scenario's mode.
    pub fn mode(&self) -> Mode {
        self.launch.mode
    }

    /// Churns `n` services and writes the manifests file.
    pub fn change(&mut self, n: usize) {
        for _ in 0..n {
            self.state.churn_one();
        }
        self.bed.write(&self.state);
    }

    /// Waits until the rules hold the current state; how long that took.
    pub fn wait_for_rules(&self, patience: Duration) -> Duration {
        let start = Instant::now();
        self.bed.wait_for_rules(self.mode(), &self.state, patience);
        start.elapsed()
    }

    /// Whether the rules hold the current state now.
    pub fn rules_match(&self) -> bool {
        self.bed.rules_endpoints(self.mode()) == self.state.expected()
    }
}

/// Waits until `f` holds, checking every 100 ms, or panics with `what`.
pub fn wait_until(what: &str, patience: Duration, mut f: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < patience, "{what}: not within {patience:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    start.elapsed()
}
