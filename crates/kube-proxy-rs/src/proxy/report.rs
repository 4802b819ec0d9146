//! What one sync did, whatever the mode: for logs and metrics.

use health::SyncKind;
use std::collections::BTreeMap;
use std::time::Duration;

/// The figures of one sync.
pub struct SyncReport {
    /// Time spent rendering (pure; in iptables mode, the applier's first
    /// walk, which also hashes each chain).
    pub render: Duration,
    /// Time spent applying to the kernel.
    pub apply: Duration,
    /// Whether everything was written or only what changed (iptables
    /// mode's partial syncs; IPVS mode always syncs in full).
    pub kind: SyncKind,
    /// Chains written whole by the restore (iptables mode only).
    pub written_chains: Option<usize>,
    /// Rules written by the restore per table (iptables mode only; IPVS
    /// mode writes its companion rules whole).
    pub written_rules: BTreeMap<iptables::Table, usize>,
    /// Counts of the iptables rules rendered (all of them in iptables
    /// mode; the companion rules in IPVS mode).
    pub rules: iptables::RuleCounts,
    /// IPVS virtual servers programmed (IPVS mode only).
    pub virtual_servers: Option<usize>,
    /// Services with internalTrafficPolicy Local and no local endpoint.
    pub no_local_internal: usize,
    /// Services with externalTrafficPolicy Local and no local endpoint.
    pub no_local_external: usize,
}
