//! The `kubeproxy.config.k8s.io/v1alpha1` `KubeProxyConfiguration` file, field
//! for field as upstream v1.36 reads and writes it. Every field is optional
//! here (a YAML `null` is the same as leaving it out, as in Go);
//! [`super::defaults`] fills in what upstream defaults.
//!
//! Fields are declared in alphabetical order so that `--write-config-to`
//! prints them in the order upstream's encoder does.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::error::ConfigError;
use crate::duration::GoDuration;

/// The only API group/version this file format is read as.
pub const API_VERSION: &str = "kubeproxy.config.k8s.io/v1alpha1";
/// The only kind this file format is read as.
pub const KIND: &str = "KubeProxyConfiguration";

/// Upstream's `KubeProxyConfiguration` (v1alpha1). Unknown fields are
/// rejected (see [`parse`]).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KubeProxyConfiguration {
    /// Must be [`API_VERSION`].
    pub api_version: Option<String>,
    /// The node's primary IP override (`--bind-address`).
    pub bind_address: Option<String>,
    /// Treat failure to bind the health or metrics port as fatal.
    pub bind_address_hard_fail: Option<bool>,
    /// How to reach the API server.
    pub client_connection: Option<ClientConnection>,
    /// Pod CIDR(s), comma separated (`--cluster-cidr`).
    #[serde(rename = "clusterCIDR")]
    pub cluster_cidr: Option<String>,
    /// How often informers re-list (`--config-sync-period`).
    pub config_sync_period: Option<GoDuration>,
    /// conntrack sysctls.
    pub conntrack: Option<Conntrack>,
    /// Settings for the non-CIDR local-traffic detectors.
    pub detect_local: Option<DetectLocal>,
    /// How local traffic is recognised (`--detect-local-mode`).
    pub detect_local_mode: Option<String>,
    /// Serve /debug/pprof on the metrics server.
    pub enable_profiling: Option<bool>,
    /// Feature gates by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feature_gates: Option<BTreeMap<String, bool>>,
    /// Node health server address, `IP:port` (`--healthz-bind-address`).
    pub healthz_bind_address: Option<String>,
    /// Node name to use instead of the hostname.
    pub hostname_override: Option<String>,
    /// iptables mode settings.
    pub iptables: Option<IptablesSection>,
    /// IPVS mode settings.
    pub ipvs: Option<IpvsSection>,
    /// Must be [`KIND`].
    pub kind: Option<String>,
    /// Log settings (component-base LoggingConfiguration).
    pub logging: Option<Logging>,
    /// Metrics server address, `IP:port` (`--metrics-bind-address`).
    pub metrics_bind_address: Option<String>,
    /// `iptables`, `ipvs`, `nftables` or empty (`--proxy-mode`).
    pub mode: Option<String>,
    /// nftables mode settings.
    pub nftables: Option<NftablesSection>,
    /// CIDRs (or `primary`) NodePorts are served on.
    pub node_port_addresses: Option<Vec<String>>,
    /// oom_score_adj for the process.
    pub oom_score_adj: Option<i32>,
    /// Unused by the Linux proxies; kept for compatibility.
    pub port_range: Option<String>,
    /// Re-enable metrics hidden in this earlier version.
    pub show_hidden_metrics_for_version: Option<String>,
    /// Windows only; accepted and ignored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub windows_run_as_service: Option<bool>,
    /// Windows only; accepted and ignored.
    pub winkernel: Option<Winkernel>,
}

/// component-base `ClientConnectionConfiguration`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientConnection {
    /// Accept header for API requests.
    pub accept_content_types: Option<String>,
    /// Burst of the client's rate limiter.
    pub burst: Option<i32>,
    /// Content type of requests.
    pub content_type: Option<String>,
    /// Path to a kubeconfig file.
    pub kubeconfig: Option<String>,
    /// Queries per second of the client's rate limiter.
    #[serde(serialize_with = "serialize_go_float")]
    pub qps: Option<f32>,
}

/// `KubeProxyConntrackConfiguration`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Conntrack {
    /// nf_conntrack_max per CPU (0: leave as is).
    pub max_per_core: Option<i32>,
    /// Lower bound for nf_conntrack_max.
    pub min: Option<i32>,
    /// nf_conntrack_tcp_be_liberal.
    pub tcp_be_liberal: Option<bool>,
    /// nf_conntrack_tcp_timeout_close_wait (0: leave as is).
    pub tcp_close_wait_timeout: Option<GoDuration>,
    /// nf_conntrack_tcp_timeout_established (0: leave as is).
    pub tcp_established_timeout: Option<GoDuration>,
    /// nf_conntrack_udp_timeout_stream (0: leave as is).
    pub udp_stream_timeout: Option<GoDuration>,
    /// nf_conntrack_udp_timeout (0: leave as is).
    pub udp_timeout: Option<GoDuration>,
}

/// `DetectLocalConfiguration`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DetectLocal {
    /// Bridge whose traffic is local (detectLocalMode BridgeInterface).
    pub bridge_interface: Option<String>,
    /// Interface prefix whose traffic is local (InterfaceNamePrefix).
    pub interface_name_prefix: Option<String>,
}

/// `KubeProxyIPTablesConfiguration`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IptablesSection {
    /// Accept NodePorts on 127.0.0.1.
    pub localhost_node_ports: Option<bool>,
    /// SNAT all service traffic (iptables and ipvs modes).
    pub masquerade_all: Option<bool>,
    /// fwmark bit for packets to masquerade.
    pub masquerade_bit: Option<i32>,
    /// Least time between two syncs.
    pub min_sync_period: Option<GoDuration>,
    /// Most time between two syncs.
    pub sync_period: Option<GoDuration>,
}

/// `KubeProxyIPVSConfiguration`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IpvsSection {
    /// Virtual servers in these CIDRs are never cleaned up.
    #[serde(rename = "excludeCIDRs")]
    pub exclude_cidrs: Option<Vec<String>>,
    /// Least time between two syncs.
    pub min_sync_period: Option<GoDuration>,
    /// IPVS scheduler (empty: rr).
    pub scheduler: Option<String>,
    /// Set arp_ignore=1 / arp_announce=2.
    #[serde(rename = "strictARP")]
    pub strict_arp: Option<bool>,
    /// Most time between two syncs.
    pub sync_period: Option<GoDuration>,
    /// IPVS TCP FIN timeout (0: leave as is).
    pub tcp_fin_timeout: Option<GoDuration>,
    /// IPVS TCP timeout (0: leave as is).
    pub tcp_timeout: Option<GoDuration>,
    /// IPVS UDP timeout (0: leave as is).
    pub udp_timeout: Option<GoDuration>,
}

/// `KubeProxyNFTablesConfiguration`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NftablesSection {
    /// SNAT all service traffic (nftables mode).
    pub masquerade_all: Option<bool>,
    /// fwmark bit for packets to masquerade.
    pub masquerade_bit: Option<i32>,
    /// Least time between two syncs.
    pub min_sync_period: Option<GoDuration>,
    /// Most time between two syncs.
    pub sync_period: Option<GoDuration>,
}

/// `KubeProxyWinkernelConfiguration` (Windows only; carried, unused).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Winkernel {
    /// HNS DSR.
    #[serde(rename = "enableDSR")]
    pub enable_dsr: Option<bool>,
    /// Forward the health-check VIP.
    pub forward_health_check_vip: Option<bool>,
    /// HNS network name.
    pub network_name: Option<String>,
    /// Root HNS endpoint name.
    pub root_hns_endpoint_name: Option<String>,
    /// Source VIP.
    pub source_vip: Option<String>,
}

/// component-base `LoggingConfiguration`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Logging {
    /// How often buffered logs are flushed.
    pub flush_frequency: Option<GoDuration>,
    /// `text` or `json`.
    pub format: Option<String>,
    /// Per-format options.
    pub options: Option<LoggingOptions>,
    /// klog verbosity (`-v`).
    pub verbosity: Option<u32>,
    /// Per-file verbosity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vmodule: Option<Vec<VModuleItem>>,
}

/// One `vmodule` entry.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VModuleItem {
    /// File name pattern.
    pub file_pattern: Option<String>,
    /// Verbosity for matching files.
    pub verbosity: Option<u32>,
}

/// `FormatOptions`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LoggingOptions {
    /// JSON format options.
    pub json: Option<OutputOptions>,
    /// Text format options.
    pub text: Option<OutputOptions>,
}

/// `OutputRoutingOptions` of one format.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OutputOptions {
    /// Buffer size for info messages (a resource quantity, kept as text).
    pub info_buffer_size: Option<Quantity>,
    /// Write info messages to stdout and errors to stderr.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub split_stream: Option<bool>,
}

/// A Kubernetes resource quantity, kept as its text (`"0"`, `"64Ki"`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Quantity(pub String);

impl<'de> Deserialize<'de> for Quantity {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        String::deserialize(de).map(Quantity)
    }
}

/// Writes a float as Go's encoder does: `50`, not `50.0`.
fn serialize_go_float<S: serde::Serializer>(v: &Option<f32>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => s.serialize_i64(*f as i64),
        Some(f) => s.serialize_f64(f64::from(*f)),
        None => s.serialize_none(),
    }
}

/// Reads a config file's text strictly: unknown fields, wrong types, a
/// missing or foreign `apiVersion`/`kind` are errors naming what is wrong.
///
/// Upstream v1.36 decodes strictly first; for v1alpha1 it then falls back
/// to a lenient decode and only logs the strict error. We stop at the
/// strict error instead: a typo in a field name should not silently leave
/// a default in force.
pub fn parse(path: &str, text: &str) -> Result<KubeProxyConfiguration, ConfigError> {
    let file: KubeProxyConfiguration =
        serde_saphyr::from_str(text).map_err(|e| ConfigError::Decode {
            path: path.to_string(),
            reason: first_line(&e.to_string()),
        })?;
    check_type(path, &file)?;
    Ok(file)
}

/// Rejects files that are not a v1alpha1 KubeProxyConfiguration.
fn check_type(path: &str, file: &KubeProxyConfiguration) -> Result<(), ConfigError> {
    let wrong =
        |field: &'static str, got: &Option<String>, want: &'static str| ConfigError::WrongType {
            path: path.to_string(),
            field,
            got: got.clone().unwrap_or_default(),
            want,
        };
    if file.kind.as_deref() != Some(KIND) {
        return Err(wrong("kind", &file.kind, KIND));
    }
    if file.api_version.as_deref() != Some(API_VERSION) {
        return Err(wrong("apiVersion", &file.api_version, API_VERSION));
    }
    Ok(())
}

/// The first line of serde-saphyr's message (it adds a source snippet after
/// it), without its `error: ` prefix.
fn first_line(message: &str) -> String {
    let line = message.lines().next().unwrap_or(message);
    line.strip_prefix("error: ").unwrap_or(line).to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const HEAD: &str =
        "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n";

    #[test]
    fn reads_the_upstream_reference_file() {
        let text = std::fs::read_to_string(super::super::tests_support::reference_path(
            "iptables/kube-proxy-config.yaml",
        ))
        .unwrap();
        let file = parse("ref.yaml", &text).unwrap();
        assert_eq!(file.cluster_cidr.as_deref(), Some("10.244.0.0/16"));
        assert_eq!(file.client_connection.as_ref().unwrap().qps, Some(50.0));
        assert_eq!(file.iptables.as_ref().unwrap().masquerade_bit, Some(14));
        assert_eq!(
            file.conntrack.as_ref().unwrap().tcp_established_timeout,
            Some(GoDuration::ZERO)
        );
    }

    #[test]
    fn reads_renamed_keys() {
        let text = format!(
            "{HEAD}clusterCIDR: 10.0.0.0/8\nipvs:\n  strictARP: true\n  excludeCIDRs: [10.1.0.0/16]\nwinkernel:\n  enableDSR: true\n"
        );
        let file = parse("f.yaml", &text).unwrap();
        assert_eq!(file.cluster_cidr.as_deref(), Some("10.0.0.0/8"));
        let ipvs = file.ipvs.unwrap();
        assert_eq!(ipvs.strict_arp, Some(true));
        assert_eq!(ipvs.exclude_cidrs, Some(vec!["10.1.0.0/16".to_string()]));
    }

    #[test]
    fn null_is_the_same_as_absent() {
        let text = format!("{HEAD}mode:\niptables: null\nconntrack:\n  maxPerCore: null\n");
        let file = parse("f.yaml", &text).unwrap();
        assert_eq!(file.mode, None);
        assert_eq!(file.iptables, None);
        assert_eq!(file.conntrack.unwrap().max_per_core, None);
    }

    #[test]
    fn unknown_fields_are_named() {
        let err = parse("f.yaml", &format!("{HEAD}iptables:\n  syncPeriodd: 1s\n")).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("unknown field `syncPeriodd`"), "{msg}");
        assert!(msg.contains("f.yaml"), "{msg}");
        assert!(msg.contains("line 4"), "{msg}");
        let err = parse("f.yaml", &format!("{HEAD}udpIdleTimeout: 250ms\n")).unwrap_err();
        assert!(
            err.to_string().contains("unknown field `udpIdleTimeout`"),
            "{err}"
        );
    }

    #[test]
    fn bad_durations_carry_gos_message() {
        let err = parse("f.yaml", &format!("{HEAD}iptables:\n  syncPeriod: 30\n")).unwrap_err();
        assert!(
            err.to_string()
                .contains("time: missing unit in duration \"30\""),
            "{err}"
        );
    }

    #[test]
    fn wrong_or_missing_type_is_named() {
        let err = parse(
            "f.yaml",
            "apiVersion: kubeproxy.config.k8s.io/v1beta9\nkind: KubeProxyConfiguration\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("apiVersion") && err.contains("v1beta9"),
            "{err}"
        );
        let err = parse(
            "f.yaml",
            "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeletConfiguration\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("kind") && err.contains("KubeletConfiguration"),
            "{err}"
        );
        let err = parse("f.yaml", "").unwrap_err().to_string();
        assert!(err.contains("kind"), "{err}");
    }
}
