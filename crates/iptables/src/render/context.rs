//! The per-sync settings of iptables mode: the shared [`SyncContext`] plus
//! what this mode prints once per sync (mark, pod network) and its own
//! kernel facts (nfacct, conntrack liberal, `--random-fully`).

use super::RenderOptions;
use super::local_traffic::LocalMatch;
use model::Snapshot;
use plan::{NodeFacts, SyncContext};

/// The per-sync settings every service port is rendered with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderContext {
    /// The decisions every mode shares.
    pub(crate) sync: SyncContext,
    /// Masquerade mark, e.g. `0x4000`.
    pub(crate) mark: String,
    /// The local-traffic detector, as printed; `None` when pod traffic
    /// cannot be told apart.
    pub(crate) local: Option<LocalMatch>,
    pub(crate) nfacct: bool,
    pub(crate) conntrack_liberal: bool,
    pub(crate) random_fully: bool,
}

impl RenderContext {
    /// Derives the settings for rendering `snapshot` with `opts`.
    pub fn new(snapshot: &Snapshot, opts: &RenderOptions) -> Self {
        let local_addresses =
            if opts.local_addresses.is_empty() { &snapshot.node.addresses } else { &opts.local_addresses };
        let facts = NodeFacts { local_addresses: local_addresses.clone() };
        let sync = SyncContext::new(snapshot, &opts.common, &facts);
        Self {
            mark: sync.mark.to_string(),
            local: sync.local_traffic.as_ref().map(LocalMatch::new),
            nfacct: opts.nfacct,
            conntrack_liberal: opts.conntrack_tcp_be_liberal,
            random_fully: opts.random_fully,
            sync,
        }
    }
}
