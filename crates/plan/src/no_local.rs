//! Services whose traffic policy is Local but that have no local endpoint.

use std::ops::AddAssign;

/// Counts for `kubeproxy_sync_proxy_rules_no_local_endpoints_total`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoLocalEndpoints {
    /// `traffic_policy="internal"`: internalTrafficPolicy Local.
    pub internal: usize,
    /// `traffic_policy="external"`: externalTrafficPolicy Local.
    pub external: usize,
}

impl AddAssign for NoLocalEndpoints {
    fn add_assign(&mut self, other: Self) {
        self.internal += other.internal;
        self.external += other.external;
    }
}
