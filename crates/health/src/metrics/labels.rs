//! Label sets of the kube-proxy metrics, with upstream's label names,
//! kept sorted by name as Go prints them.

use super::TrafficPolicy;
use model::IpFamily;

/// A series' label names and values, sorted by name. Series of one
/// family share their names, so ordering label sets orders the series
/// by label values, as Go does.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct Labels(Vec<(&'static str, String)>);

impl Labels {
    /// `pairs`, sorted by label name.
    pub(super) fn new(mut pairs: Vec<(&'static str, String)>) -> Self {
        pairs.sort_by_key(|(name, _)| *name);
        Self(pairs)
    }

    /// No labels: the one series of an unlabelled metric.
    pub(super) fn none() -> Self {
        Self::default()
    }

    /// `{ip_family}`
    pub(super) fn family(ip_family: IpFamily) -> Self {
        Self::new(vec![("ip_family", ip_family.as_str().to_string())])
    }

    /// `{ip_family, table}`
    pub(super) fn table(ip_family: IpFamily, table: &str) -> Self {
        Self::new(vec![("ip_family", ip_family.as_str().to_string()), ("table", table.to_string())])
    }

    /// `{ip_family, traffic_policy}`
    pub(super) fn policy(ip_family: IpFamily, traffic_policy: TrafficPolicy) -> Self {
        Self::new(vec![
            ("ip_family", ip_family.as_str().to_string()),
            ("traffic_policy", traffic_policy.as_str().to_string()),
        ])
    }

    /// `{code}`: an HTTP status.
    pub(super) fn code(code: u16) -> Self {
        Self::new(vec![("code", code.to_string())])
    }

    /// The pairs, sorted by name.
    pub(super) fn pairs(&self) -> &[(&'static str, String)] {
        &self.0
    }
}
