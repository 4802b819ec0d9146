//! From command line and config file to one validated [`Config`], the only
//! configuration the rest of the program reads.
//!
//! # Precedence (as upstream kube-proxy v1.36)
//!
//! * Without `--config`: upstream's defaults, overridden by each flag given.
//!   The `--iptables-(min-)sync-period` flags set the periods in iptables and
//!   nftables modes, `--ipvs-(min-)sync-period` in ipvs mode; the other pair
//!   is ignored (with a warning).
//! * With `--config FILE`: the file, with upstream's v1alpha1 defaults for
//!   what it leaves out or sets to zero (`syncPeriod: 0s` means 30s), replaces
//!   every flag that maps to a file field; upstream ignores those flags
//!   silently, we ignore them with one warning naming them. Only
//!   `--hostname-override`, `--master`, `--cleanup`, `--init-only`,
//!   `--write-config-to`, the logging flags (`-v`, `--vmodule`,
//!   `--log-flush-frequency`, `--logging-format`) and our own `--manifests`,
//!   `--dry-run` and `--iptables-backend` still apply.
//! * Then, in both cases: a blank mode is iptables, nftables mode defaults
//!   `nodePortAddresses` to `primary`, a blank detect-local mode is
//!   ClusterCIDR; and everything is validated as upstream's `Validate` does
//!   (plus the IPVS scheduler name). Each error names the flag (without
//!   `--config`) or the field path (with it).
//!
//! One deliberate difference: an unknown field in the file is an error here;
//! upstream v1.36 retries v1alpha1 files leniently and only logs it.

mod error;
mod settings;
mod v1alpha1;
mod validate;

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use ipnet::IpNet;

use crate::flags::Flags;
pub use crate::flags::IptablesBackend;
pub use error::{ConfigError, FieldError};
use settings::Settings;

/// The proxy mode: which datapath the node is programmed with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProxyMode {
    /// iptables rules (the default, as upstream).
    Iptables,
    /// IPVS virtual servers plus ipsets and a few iptables rules.
    Ipvs,
    /// One nftables table.
    Nftables,
    /// Proxy ports in the proxy process and iptables portal rules
    /// (upstream's userspace mode, removed in v1.26).
    Userspace,
}

/// How the proxy tells traffic from local pods (for masquerading).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DetectLocal {
    /// Source in the cluster CIDR(s); with none given, nothing is local.
    ClusterCidr(Vec<IpNet>),
    /// Source in the node's `spec.podCIDRs`.
    NodeCidr,
    /// Arriving from this bridge interface.
    BridgeInterface(String),
    /// Arriving from an interface whose name starts with this prefix.
    InterfaceNamePrefix(String),
}

/// Which node addresses accept NodePort traffic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodePortAddresses {
    /// Every local address (upstream's unset `nodePortAddresses`).
    All,
    /// The node's primary IP(s) from its Node object (`primary`).
    Primary,
    /// Local addresses inside these CIDRs.
    Cidrs(Vec<IpNet>),
}

/// An IPVS scheduling algorithm (`--ipvs-scheduler`): the ipvs crate's.
pub use ipvs::Scheduler as IpvsScheduler;

/// IPVS mode settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IpvsConfig {
    /// Scheduler for every virtual server.
    pub scheduler: IpvsScheduler,
    /// Set arp_ignore=1 and arp_announce=2.
    pub strict_arp: bool,
    /// Virtual servers in these CIDRs are never removed.
    pub exclude_cidrs: Vec<IpNet>,
    /// IPVS TCP timeout; `None` leaves the kernel's value.
    pub tcp_timeout: Option<Duration>,
    /// IPVS TCP FIN timeout; `None` leaves the kernel's value.
    pub tcp_fin_timeout: Option<Duration>,
    /// IPVS UDP timeout; `None` leaves the kernel's value.
    pub udp_timeout: Option<Duration>,
}

/// conntrack sysctls to set at start-up (`None`/0: leave as is).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConntrackConfig {
    /// nf_conntrack_max per CPU; 0 leaves the limit (and ignores `min`).
    pub max_per_core: u32,
    /// Lower bound for nf_conntrack_max.
    pub min: u32,
    /// nf_conntrack_tcp_timeout_established.
    pub tcp_established_timeout: Option<Duration>,
    /// nf_conntrack_tcp_timeout_close_wait.
    pub tcp_close_wait_timeout: Option<Duration>,
    /// nf_conntrack_tcp_be_liberal=1.
    pub tcp_be_liberal: bool,
    /// nf_conntrack_udp_timeout.
    pub udp_timeout: Option<Duration>,
    /// nf_conntrack_udp_timeout_stream.
    pub udp_stream_timeout: Option<Duration>,
}

/// How to reach the API server.
#[derive(Clone, Debug, PartialEq)]
pub struct ClientConnection {
    /// kubeconfig path (`--kubeconfig` / `clientConnection.kubeconfig`).
    pub kubeconfig: Option<PathBuf>,
    /// API server URL overriding the kubeconfig's (`--master`).
    pub master: Option<String>,
    /// Client rate limit.
    pub qps: f32,
    /// Client burst.
    pub burst: u32,
    /// Content type of requests.
    pub content_type: String,
    /// Accept header (empty: the client's default).
    pub accept_content_types: String,
}

/// Log output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// klog-style text.
    Text,
    /// One JSON object per line.
    Json,
}

/// Log settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggingConfig {
    /// klog verbosity (`-v`): 0 normal, 2 upstream's usual, 4+ debug.
    pub verbosity: u32,
    /// Per-file verbosity: (file pattern, level).
    pub vmodule: Vec<(String, u32)>,
    /// Text or JSON.
    pub format: LogFormat,
    /// How often buffered output is flushed.
    pub flush_frequency: Duration,
}

/// The validated configuration every other part of the program reads.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Which datapath to program.
    pub mode: ProxyMode,
    /// Node name override, trimmed and lower-cased; `None`: the hostname.
    pub hostname_override: Option<String>,
    /// The node's primary IP override (`0.0.0.0`/`::` when unset).
    pub bind_address: IpAddr,
    /// Exit when the health or metrics port cannot be bound.
    pub bind_address_hard_fail: bool,
    /// Node health server (`/healthz`, `/livez`); `None`: disabled.
    pub healthz_bind_address: Option<SocketAddr>,
    /// Metrics server; `None`: disabled.
    pub metrics_bind_address: Option<SocketAddr>,
    /// Serve /debug/pprof (accepted; no Rust equivalent).
    pub enable_profiling: bool,
    /// How local (pod) traffic is recognised.
    pub detect_local: DetectLocal,
    /// SNAT all service traffic.
    pub masquerade_all: bool,
    /// fwmark bit of the masquerade mark (14: `0x4000`).
    pub masquerade_bit: u8,
    /// A full sync at least this often (always above zero).
    pub sync_period: Duration,
    /// Never two syncs closer than this (at most `sync_period`).
    pub min_sync_period: Duration,
    /// Accept NodePorts on 127.0.0.1 (iptables mode, IPv4).
    pub localhost_node_ports: bool,
    /// Node addresses NodePorts are served on.
    pub node_port_addresses: NodePortAddresses,
    /// IPVS mode settings (defaults in other modes).
    pub ipvs: IpvsConfig,
    /// conntrack sysctls.
    pub conntrack: ConntrackConfig,
    /// Informer resync period (always above zero).
    pub config_sync_period: Duration,
    /// oom_score_adj for the process, in [-1000, 1000].
    pub oom_score_adj: i32,
    /// API server connection.
    pub client: ClientConnection,
    /// Log settings.
    pub logging: LoggingConfig,
    /// Feature gates by name, as given.
    pub feature_gates: BTreeMap<String, bool>,
    /// Earlier version whose hidden metrics to show (`1.35`), if any.
    pub show_hidden_metrics_for_version: Option<String>,
    /// The `--config` file, if any.
    pub config_file: Option<PathBuf>,
    /// `--manifests FILE`: read cluster state from this file, not the API.
    pub manifests: Option<PathBuf>,
    /// `--dry-run`: print the rules and exit.
    pub dry_run: bool,
    /// `--nftables-shared-endpoint-maps` (default true): nftables mode's
    /// balancing chains pick from shared endpoint maps; false: upstream's
    /// table exactly.
    pub nftables_shared_endpoint_maps: bool,
    /// `--userspace-localhost-nodeports` (default false): NodePorts on
    /// loopback through listeners of ours (then `localhost_node_ports` is
    /// false: no route_localnet, no kernel rule for them).
    pub userspace_localhost_nodeports: bool,
    /// `--cleanup`: remove everything we ever created and exit.
    pub cleanup: bool,
    /// `--init-only`: do the privileged set-up and exit.
    pub init_only: bool,
    /// `--iptables-backend`.
    pub iptables_backend: IptablesBackend,
    /// `--ipvs-drain-timeout`: how long IPVS mode's leftover virtual
    /// servers are kept for their connections after another mode's first
    /// sync.
    pub ipvs_drain_timeout: std::time::Duration,
    /// `--proxy-port-range` (`portRange`): userspace mode's proxy ports;
    /// `None`: any free port.
    pub proxy_port_range: Option<forward::PortRange>,
    /// `--udp-timeout` (upstream's `udpIdleTimeout`): userspace mode's
    /// idle UDP client sessions close after this long.
    pub udp_idle_timeout: Duration,
}

/// The outcome of [`load`]: the configuration, warnings to log once logging
/// is set up, and the effective file for `--write-config-to`.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The validated configuration.
    pub config: Config,
    /// Things worth telling the operator (ignored flags, deprecated flags).
    pub warnings: Vec<String>,
    /// `--write-config-to FILE`, if given.
    pub write_config_to: Option<PathBuf>,
    effective: Settings,
}

impl Loaded {
    /// The configuration in force as a v1alpha1 file, defaults filled in,
    /// as upstream's `--write-config-to` writes it.
    ///
    /// Strings are quoted by YAML 1.2 rules, as Go's encoder does in practice
    /// (so `bindAddress: 0.0.0.0` stays unquoted).
    pub fn effective_yaml(&self) -> Result<String, ConfigError> {
        let mut options = serde_saphyr::SerializerOptions::default();
        options.yaml_12 = true;
        options.no_lang_directive = true;
        serde_saphyr::to_string_with_options(&self.effective.to_file(), options).map_err(|e| {
            ConfigError::Write {
                path: "(effective configuration)".into(),
                reason: e.to_string(),
            }
        })
    }

    /// Writes [`Loaded::effective_yaml`] to `path`.
    pub fn write_effective(&self, path: &std::path::Path) -> Result<(), ConfigError> {
        std::fs::write(path, self.effective_yaml()?).map_err(|e| ConfigError::Write {
            path: path.display().to_string(),
            reason: e.to_string(),
        })
    }
}

/// Resolves flags (and the `--config` file they name) into a [`Config`]
/// following upstream's precedence (see the module docs).
pub fn load(flags: &Flags) -> Result<Loaded, ConfigError> {
    let mut warnings = Vec::new();
    let (mut settings, from_file) = match &flags.config {
        Some(path) => (settings_from_file(path, flags, &mut warnings)?, true),
        None => {
            warnings.extend(unused_period_flag_warnings(flags));
            warnings.extend(deprecated_flag_warnings(flags));
            (Settings::from_flags(flags), false)
        }
    };
    settings.apply_platform_defaults();
    let config = validate::validate(&settings, flags, from_file)?;
    Ok(Loaded {
        config,
        warnings,
        write_config_to: flags.write_config_to.clone(),
        effective: settings,
    })
}

fn settings_from_file(
    path: &std::path::Path,
    flags: &Flags,
    warnings: &mut Vec<String>,
) -> Result<Settings, ConfigError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: shown.clone(),
        source,
    })?;
    let mut settings = Settings::from_file(v1alpha1::parse(&shown, &text)?);
    settings.apply_logging_flags(flags);
    let ignored = flags.given_file_flags();
    if !ignored.is_empty() {
        warnings.push(format!(
            "ignoring {} because --config is set (upstream kube-proxy ignores flags that map to \
             config file fields); set them in {shown} instead",
            ignored.join(", ")
        ));
    }
    Ok(settings)
}

/// Warns about the period flags of the mode not in use, which upstream
/// ignores.
fn unused_period_flag_warnings(flags: &Flags) -> Vec<String> {
    let ipvs = flags.proxy_mode.as_deref() == Some("ipvs");
    let unused = if ipvs {
        [
            (
                "--iptables-sync-period",
                flags.iptables_sync_period.is_some(),
            ),
            (
                "--iptables-min-sync-period",
                flags.iptables_min_sync_period.is_some(),
            ),
        ]
    } else {
        [
            ("--ipvs-sync-period", flags.ipvs_sync_period.is_some()),
            (
                "--ipvs-min-sync-period",
                flags.ipvs_min_sync_period.is_some(),
            ),
        ]
    };
    let mode = flags
        .proxy_mode
        .as_deref()
        .filter(|m| !m.is_empty())
        .unwrap_or("iptables");
    unused
        .into_iter()
        .filter(|(_, given)| *given)
        .map(|(name, _)| format!("ignoring {name}: it does not apply in {mode} mode"))
        .collect()
}

fn deprecated_flag_warnings(flags: &Flags) -> Vec<String> {
    let mut out = Vec::new();
    if flags.healthz_port.is_some() {
        out.push("--healthz-port is deprecated; use --healthz-bind-address instead".to_string());
    }
    if flags.metrics_port.is_some() {
        out.push("--metrics-port is deprecated; use --metrics-bind-address instead".to_string());
    }
    out
}

#[cfg(test)]
mod tests_support {
    /// Path of a file in the upstream reference corpus (`testdata/`).
    pub fn reference_path(rel: &str) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../testdata/upstream-v1.36")
            .join(rel)
    }
}

#[cfg(test)]
mod tests;
