//! Label sets of the kube-proxy metrics, with upstream's label names.

use super::TrafficPolicy;
use model::IpFamily;
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use std::fmt::Write;

/// `{ip_family}`
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(super) struct FamilyLabel {
    ip_family: &'static str,
}

impl FamilyLabel {
    pub(super) fn new(ip_family: IpFamily) -> Self {
        Self { ip_family: ip_family.as_str() }
    }
}

/// `{ip_family, table}`
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(super) struct TableLabels {
    ip_family: &'static str,
    table: String,
}

impl TableLabels {
    pub(super) fn new(ip_family: IpFamily, table: &str) -> Self {
        Self { ip_family: ip_family.as_str(), table: table.to_string() }
    }
}

/// `{ip_family, traffic_policy}`
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(super) struct PolicyLabels {
    ip_family: &'static str,
    traffic_policy: TrafficPolicy,
}

impl PolicyLabels {
    pub(super) fn new(ip_family: IpFamily, traffic_policy: TrafficPolicy) -> Self {
        Self { ip_family: ip_family.as_str(), traffic_policy }
    }
}

/// `{code}`: an HTTP status.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(super) struct CodeLabel {
    code: u16,
}

impl CodeLabel {
    pub(super) fn new(code: u16) -> Self {
        Self { code }
    }
}

impl EncodeLabelValue for TrafficPolicy {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        encoder.write_str(self.as_str())
    }
}
