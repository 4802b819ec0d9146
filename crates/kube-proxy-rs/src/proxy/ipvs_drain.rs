//! Leaving IPVS mode without a dropped connection (issue 27): iptables or
//! nftables mode starting where IPVS mode ran leaves IPVS mode's objects
//! in place through its start-up and, after each family's first sync,
//! drains them instead of deleting them.
//!
//! Meanwhile both are loaded. The new mode DNATs a new connection in
//! prerouting (or output), so it is routed to its endpoint and never
//! reaches IPVS, which sees only packets delivered to a local address
//! (`kube-ipvs0`'s, the node's NodePorts) in local-in. An established IPVS
//! connection has a conntrack entry whose NAT was bound (to nothing) when
//! it began; NAT rules apply to new entries only, so its packets keep
//! going to the virtual address, are delivered locally and found in
//! IPVS's connection table, which forwards them to their real server as
//! long as the address stays on `kube-ipvs0` and the virtual server with
//! its real server exists (with `expire_nodest_conn`, which IPVS mode
//! sets, a packet of a connection whose real server is gone is dropped
//! and the connection expired). IPVS mode's companion rules stay too:
//! its masquerade mark may still be set on a new NodePort connection
//! (then masqueraded by the new mode, which would masquerade it anyway
//! unless the service became `externalTrafficPolicy: Local` meanwhile),
//! its filter rejects only new connections to `kube-ipvs0`'s addresses,
//! which the new mode has DNATed away.
//!
//! So, once a family has synced, each of its virtual servers is deleted
//! when no connection through it is open any more in IPVS's connection
//! table (established or closing; `TIME_WAIT` entries do not count, nor
//! the real servers' `ActiveConn` counters, which can stay above zero
//! after the connections closed: [`ipvs::conn_table`]), or when
//! `--ipvs-drain-timeout` has passed since that sync (logged as cut, with
//! the connections it had). When every family served has synced and none
//! of their virtual servers is left, the rest goes: virtual servers of
//! families not served, `kube-ipvs0`, IPVS mode's chains (under iptables
//! mode, those it shares by name with iptables mode stay in the backend
//! iptables mode uses), the ipsets. The drain runs on a thread of its own
//! (it takes minutes; the sync loops must not wait); if the proxy stops
//! first, the next start finds the leftovers and drains again.

use ipvs::apply::ApplyOptions;
use ipvs::drain::{Draining, draining};
use ipvs::{Error, IpvsSocket};
use model::IpFamily;
use proxier::{Cleaned, Cleanup, LocalFuture, Mode};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use xtables::apply::Backend;

/// How often the drain looks at the connection counts.
const POLL: Duration = Duration::from_millis(500);
/// How often the drain says what it still waits for.
const SAY_EVERY: Duration = Duration::from_secs(10);

/// IPVS mode's leftovers on this node, drained after the new mode's
/// first syncs.
pub struct IpvsDrain {
    opts: ApplyOptions,
    /// `--ipvs-drain-timeout`.
    limit: Duration,
    /// The families the new mode serves.
    families: Vec<IpFamily>,
    /// Where iptables mode now runs (empty under nftables mode).
    iptables_mode: Vec<(Backend, IpFamily)>,
    /// When each family first synced; the drain starts with the first.
    synced: Mutex<BTreeMap<IpFamily, Instant>>,
}

impl IpvsDrain {
    /// A drain of IPVS mode's leftovers for a mode serving `families`.
    pub fn new(opts: ApplyOptions, limit: Duration, families: &[IpFamily], iptables_mode: Vec<(Backend, IpFamily)>) -> Arc<Self> {
        Arc::new(Self { opts, limit, families: families.to_vec(), iptables_mode, synced: Mutex::default() })
    }

    /// Records `family`'s first sync; the first one starts the drain.
    fn family_synced(self: &Arc<Self>, family: IpFamily) {
        let first = {
            let mut synced = self.synced.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let first = synced.is_empty();
            synced.entry(family).or_insert_with(Instant::now);
            first
        };
        if !first {
            return;
        }
        let drain = Arc::clone(self);
        let spawned = std::thread::Builder::new().name("ipvs-drain".into()).spawn(move || drain.run());
        if let Err(err) = spawned {
            tracing::warn!(%err, "cannot start draining IPVS mode's leftovers");
        }
    }

    /// The families synced so far, with the time each drain limit passes.
    fn deadlines(&self) -> BTreeMap<IpFamily, Instant> {
        let synced = self.synced.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        synced.iter().map(|(family, at)| (*family, *at + self.limit)).collect()
    }

    /// The drain thread: its own single-threaded runtime (IPVS netlink
    /// futures are not `Send`).
    fn run(self: Arc<Self>) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build();
        match runtime {
            Ok(runtime) => runtime.block_on(self.drain()),
            Err(err) => tracing::warn!(%err, "cannot start draining IPVS mode's leftovers"),
        }
    }

    async fn drain(&self) {
        let started = Instant::now();
        match IpvsSocket::connect().await {
            Ok(ipvs) => self.drain_virtual_servers(&ipvs).await,
            Err(err) => tracing::debug!(%err, "no IPVS to drain"),
        }
        match ipvs::cleanup::apply_cleanup_sparing(&self.opts, &self.iptables_mode).await {
            Ok(report) => tracing::info!(
                elapsed = ?started.elapsed(),
                virtual_servers = report.services_deleted,
                dummy_deleted = report.dummy_deleted,
                "IPVS mode's leftovers drained and removed"
            ),
            Err(err) => tracing::warn!(%err, "could not remove what IPVS mode left behind"),
        }
    }

    /// Until every family served has synced and has no virtual server
    /// left: deletes the drained ones, and those past the limit.
    async fn drain_virtual_servers(&self, ipvs: &IpvsSocket) {
        let mut said = Instant::now();
        loop {
            let deadlines = self.deadlines();
            let mut left = 0;
            for (family, deadline) in &deadlines {
                match self.drain_family(ipvs, *family, *deadline).await {
                    Ok(n) => left += n,
                    Err(err) => {
                        tracing::warn!(%err, %family, "cannot drain IPVS mode's virtual servers");
                        return;
                    }
                }
            }
            if left == 0 && self.families.iter().all(|f| deadlines.contains_key(f)) {
                return;
            }
            if said.elapsed() >= SAY_EVERY {
                tracing::info!(virtual_servers = left, "IPVS mode's virtual servers still have open connections: kept");
                said = Instant::now();
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// One pass over `family`'s virtual servers; how many are left.
    async fn drain_family(&self, ipvs: &IpvsSocket, family: IpFamily, deadline: Instant) -> Result<usize, Error> {
        let mut left = 0;
        let past_limit = Instant::now() >= deadline;
        for vs in draining(ipvs, &self.opts, family).await? {
            if vs.open > 0 && !past_limit {
                left += 1;
                continue;
            }
            delete(ipvs, &vs).await?;
        }
        Ok(left)
    }
}

/// Deletes a drained virtual server; one with active connections is
/// logged as cut.
async fn delete(ipvs: &IpvsSocket, vs: &Draining) -> Result<(), Error> {
    ipvs.delete_service(&vs.key).await?;
    if vs.open > 0 {
        tracing::warn!(
            virtual_server = %vs.key,
            open = vs.open,
            active = vs.active,
            inactive = vs.inactive,
            "--ipvs-drain-timeout passed: IPVS virtual server deleted with its connections"
        );
    } else {
        tracing::info!(virtual_server = %vs.key, active = vs.active, inactive = vs.inactive, "IPVS virtual server drained and deleted");
    }
    Ok(())
}

/// One family's share of the drain, for [`super::leftovers::Leftovers`].
pub struct DrainFamily(pub Arc<IpvsDrain>);

impl Cleanup for DrainFamily {
    fn mode(&self) -> Mode {
        Mode::Ipvs
    }

    fn clean_up(&self) -> LocalFuture<'_, Vec<Cleaned>> {
        Box::pin(async { Vec::new() })
    }

    fn remove_leftovers(&self) -> LocalFuture<'_, ()> {
        Box::pin(async {
            for family in self.0.families.clone() {
                self.0.family_synced(family);
            }
        })
    }

    /// Starts draining `family`'s virtual servers (in the background).
    fn remove_family_leftovers(&self, family: IpFamily) -> LocalFuture<'_, ()> {
        self.0.family_synced(family);
        Box::pin(async {})
    }
}
