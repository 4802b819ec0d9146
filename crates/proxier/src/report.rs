//! What one sync did, the same shape for every mode: read by the metrics
//! and the sync log, never by mode-specific code.

use std::time::Duration;

/// The figures of one successful sync.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncReport {
    /// Time spent rendering (pure).
    pub render: Duration,
    /// Time spent applying to the kernel.
    pub apply: Duration,
    /// Only what changed was written (iptables mode's partial syncs).
    pub partial: bool,
    /// Rule counts per table, for the tables the metrics expose
    /// (`sync_proxy_rules_iptables_total` / `_last`): iptables mode's
    /// rules, or IPVS mode's companion iptables rules.
    pub rule_tables: Vec<TableRules>,
    /// Chains written whole by the sync (iptables mode only).
    pub written_chains: Option<usize>,
    /// Virtual servers programmed (IPVS mode only).
    pub virtual_servers: Option<usize>,
    /// Objects of nftables mode's table (nftables mode only).
    pub nftables: Option<NftablesFigures>,
    /// Of [`SyncReport::apply`], the time the kernel itself spent on the
    /// transaction (modes that can measure it: nftables).
    pub kernel: Option<Duration>,
    /// Services with internalTrafficPolicy Local and no local endpoint.
    pub no_local_internal: usize,
    /// Services with externalTrafficPolicy Local and no local endpoint.
    pub no_local_external: usize,
}

/// One table's rules in a [`SyncReport`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableRules {
    /// The table's label (`filter`, `nat`).
    pub table: &'static str,
    /// Rules rendered.
    pub rules: usize,
    /// Chains rendered.
    pub chains: usize,
    /// Rules written by this sync.
    pub written: usize,
}

/// nftables mode's figures of one sync: its table as rendered, and what
/// the transaction changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NftablesFigures {
    /// Chains rendered.
    pub chains: usize,
    /// Rules rendered.
    pub rules: usize,
    /// Named sets and maps rendered.
    pub sets: usize,
    /// Elements of named sets and maps rendered.
    pub elements: usize,
    /// Messages in the transaction (0: nothing was sent).
    pub changes: usize,
    /// Chains added or rewritten.
    pub chains_written: usize,
    /// Rules added.
    pub rules_written: usize,
    /// Elements added (named and anonymous sets).
    pub elements_written: usize,
    /// Tables, chains, sets and elements deleted.
    pub objects_deleted: usize,
    /// Time reading our table back (full syncs).
    pub read_back: Duration,
    /// Of `read_back`, the kernel's: inside the socket's `send` and
    /// `recv` calls (it builds each dump message while we wait).
    pub read_back_kernel: Duration,
}

impl SyncReport {
    /// The figures of `table`, if the sync reported it.
    pub fn table(&self, table: &str) -> Option<&TableRules> {
        self.rule_tables.iter().find(|t| t.table == table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_found_by_label() {
        let nat = TableRules {
            table: "nat",
            rules: 3,
            chains: 2,
            written: 1,
        };
        let report = SyncReport {
            rule_tables: vec![nat],
            ..SyncReport::default()
        };
        assert_eq!(report.table("nat"), Some(&nat));
        assert_eq!(report.table("filter"), None);
    }
}
