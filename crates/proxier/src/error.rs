//! A failed sync, with the kind of failure the metrics count.

/// Which per-mode failure counter a failed sync counts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// An iptables sync failed (`sync_proxy_rules_iptables_restore_failures_total`;
    /// `partial`: also `..._iptables_partial_restore_failures_total`).
    IptablesRestore {
        /// The failed sync was a partial one.
        partial: bool,
    },
    /// An nftables transaction (or the read-back of our table before it)
    /// failed (`sync_proxy_rules_nftables_sync_failures_total`).
    NftablesSync,
    /// Removing nftables objects that are no longer wanted failed, apart
    /// from a sync (`sync_proxy_rules_nftables_cleanup_failures_total`).
    NftablesCleanup,
    /// Anything else (IPVS netlink, ipset, addresses): no restore counter.
    Other,
}

/// A failed sync: what failed, for the log, and its [`Failure`] kind.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct SyncError {
    /// The counter it counts in.
    pub failure: Failure,
    /// The mode's own error.
    error: Box<dyn std::error::Error + Send + Sync>,
}

impl SyncError {
    /// `error` counted as `failure`.
    pub fn new(
        failure: Failure,
        error: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Self {
            failure,
            error: error.into(),
        }
    }

    /// The mode's own error.
    pub fn error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        self.error.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_the_modes_error_and_keeps_the_kind() {
        let err = SyncError::new(
            Failure::IptablesRestore { partial: true },
            "iptables-restore failed at line 3",
        );
        assert_eq!(err.to_string(), "iptables-restore failed at line 3");
        assert_eq!(err.failure, Failure::IptablesRestore { partial: true });
    }
}
