//! The command line: upstream kube-proxy's flags, with their names and
//! meanings, read the way Go's pflag reads them (`--flag=value` and
//! `--flag value`; booleans as `--masquerade-all` or `--masquerade-all=false`;
//! `-v=4`, `-v 4` and `--v=4`; a repeated flag's last value wins, list flags
//! take comma-separated values), plus our own `--manifests`, `--dry-run` and
//! `--iptables-backend`.
//!
//! Every value flag is an `Option`: `Some` means "given on the command line",
//! which is what upstream's `FlagSet.Changed` answers and what the
//! precedence rules in [`crate::config`] need.

mod go_value;
mod ignored;

use std::path::PathBuf;

use clap::Parser;

use crate::duration::GoDuration;
pub use go_value::FeatureGate;
use go_value::{parse_duration, parse_feature_gate, parse_go_bool};

/// How `--iptables-backend` picks the iptables binaries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum IptablesBackend {
    /// Whichever backend already holds rules (as upstream's wrapper
    /// scripts decide), else legacy.
    #[default]
    Auto,
    /// `iptables-legacy-restore` and friends.
    Legacy,
    /// `iptables-nft-restore` and friends.
    Nft,
}

/// kube-proxy-rs's command line. Field docs are the `--help` text.
#[derive(Clone, Debug, Default, Parser)]
#[command(
    name = "kube-proxy-rs",
    version = concat!(env!("CARGO_PKG_VERSION"), " (git ", env!("KPRS_GIT_COMMIT"), ")"),
    about = "The Kubernetes network proxy runs on each node: it programs the node's \
             datapath so that traffic to a Service's addresses reaches its endpoints.",
    args_override_self = true,
    max_term_width = 100
)]
pub struct Flags {
    /// The path to the configuration file. When set, every flag that maps to a
    /// field of the file is ignored (as upstream does); see the README.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// If set, write the default configuration values to this file and exit.
    #[arg(long = "write-config-to", value_name = "FILE")]
    pub write_config_to: Option<PathBuf>,

    /// If true cleanup iptables and ipvs rules and exit.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = parse_go_bool)]
    pub cleanup: Option<bool>,

    /// If true, perform any initialization steps that must be done with full
    /// root privileges, and then exit.
    #[arg(long = "init-only", value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = parse_go_bool)]
    pub init_only: Option<bool>,

    /// A set of key=value pairs that describe feature gates for
    /// alpha/experimental features. Ignored if --config is given.
    /// kube-proxy-rs: WatchListClient=false turns streaming lists off; other
    /// gates are validated and ignored.
    #[arg(long = "feature-gates", value_name = "KEY=BOOL,...", value_delimiter = ',',
          action = clap::ArgAction::Append, value_parser = parse_feature_gate)]
    pub feature_gates: Option<Vec<FeatureGate>>,

    /// Path to kubeconfig file with authorization information (the master
    /// location can be overridden by the master flag). Ignored if --config is given.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<String>,

    /// The address of the Kubernetes API server (overrides any value in kubeconfig).
    #[arg(long, value_name = "URL")]
    pub master: Option<String>,

    /// Content type of requests sent to apiserver. Ignored if --config is given.
    #[arg(long = "kube-api-content-type", value_name = "TYPE")]
    pub kube_api_content_type: Option<String>,

    /// Burst to use while talking with kubernetes apiserver (default 10).
    /// Ignored if --config is given.
    #[arg(
        long = "kube-api-burst",
        value_name = "N",
        allow_negative_numbers = true
    )]
    pub kube_api_burst: Option<i32>,

    /// QPS to use while talking with kubernetes apiserver (default 5).
    /// Ignored if --config is given.
    #[arg(
        long = "kube-api-qps",
        value_name = "QPS",
        allow_negative_numbers = true
    )]
    pub kube_api_qps: Option<f32>,

    /// If non-empty, will be used as the name of the Node that kube-proxy is
    /// running on. If unset, the node name is assumed to be the same as the
    /// node's hostname. Applies even with --config.
    #[arg(long = "hostname-override", value_name = "NAME")]
    pub hostname_override: Option<String>,

    /// Overrides kube-proxy's idea of what its node's primary IP is
    /// (default 0.0.0.0). Ignored if --config is given.
    #[arg(long = "bind-address", value_name = "IP")]
    pub bind_address: Option<String>,

    /// The IP address and port for the health check server to serve on
    /// (default 0.0.0.0:10256). Set empty to disable. Ignored if --config is given.
    #[arg(long = "healthz-bind-address", value_name = "IP:PORT")]
    pub healthz_bind_address: Option<String>,

    /// The IP address and port for the metrics server to serve on
    /// (default 127.0.0.1:10249). Set empty to disable. Ignored if --config is given.
    #[arg(long = "metrics-bind-address", value_name = "IP:PORT")]
    pub metrics_bind_address: Option<String>,

    /// If true kube-proxy will treat failure to bind to a port as fatal and exit.
    #[arg(long = "bind-address-hard-fail", value_name = "BOOL", num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = parse_go_bool)]
    pub bind_address_hard_fail: Option<bool>,

    /// If true enables profiling via web interface on /debug/pprof handler.
    /// Ignored if --config is given. kube-proxy-rs: accepted and ignored
    /// (pprof profiles Go programs).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = parse_go_bool)]
    pub profiling: Option<bool>,

    /// The previous version for which you want to show hidden metrics.
    /// Ignored if --config is given. kube-proxy-rs: accepted and ignored
    /// (it hides no metrics).
    #[arg(long = "show-hidden-metrics-for-version", value_name = "VERSION")]
    pub show_hidden_metrics_for_version: Option<String>,

    /// Which proxy mode to use: 'iptables' (default), 'ipvs', or 'nftables'.
    /// Ignored if --config is given.
    #[arg(long = "proxy-mode", value_name = "MODE")]
    pub proxy_mode: Option<String>,

    /// If using the iptables or ipvs proxy mode, the bit of the fwmark space to
    /// mark packets requiring SNAT with. Must be within the range [0, 31] (default 14).
    #[arg(
        long = "iptables-masquerade-bit",
        value_name = "BIT",
        allow_negative_numbers = true
    )]
    pub iptables_masquerade_bit: Option<i32>,

    /// SNAT all traffic sent via Service cluster IPs.
    #[arg(long = "masquerade-all", value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = parse_go_bool)]
    pub masquerade_all: Option<bool>,

    /// If false, do not accept NodePort connections on localhost (iptables
    /// mode and IPv4 only) (default true).
    #[arg(long = "iptables-localhost-nodeports", value_name = "BOOL", num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = parse_go_bool)]
    pub iptables_localhost_nodeports: Option<bool>,

    /// An interval (e.g. '5s', '1m', '2h22m') indicating how frequently various
    /// re-synchronizing and cleanup operations are performed. Must be greater
    /// than 0 (default 30s). Used in iptables and nftables modes.
    #[arg(long = "iptables-sync-period", value_name = "DURATION", allow_hyphen_values = true,
          value_parser = parse_duration)]
    pub iptables_sync_period: Option<GoDuration>,

    /// The minimum period between rule resyncs (e.g. '5s', '1m', '2h22m'). A
    /// value of 0 means every change results in an immediate resync (default 1s).
    #[arg(long = "iptables-min-sync-period", value_name = "DURATION", allow_hyphen_values = true,
          value_parser = parse_duration)]
    pub iptables_min_sync_period: Option<GoDuration>,

    /// Like --iptables-sync-period, for ipvs mode (default 30s).
    #[arg(long = "ipvs-sync-period", value_name = "DURATION", allow_hyphen_values = true,
          value_parser = parse_duration)]
    pub ipvs_sync_period: Option<GoDuration>,

    /// Like --iptables-min-sync-period, for ipvs mode (default 1s).
    #[arg(long = "ipvs-min-sync-period", value_name = "DURATION", allow_hyphen_values = true,
          value_parser = parse_duration)]
    pub ipvs_min_sync_period: Option<GoDuration>,

    /// The ipvs scheduler type when proxy mode is ipvs: rr (default), wrr, lc,
    /// wlc, lblc, lblcr, dh, sh, sed, nq or mh.
    #[arg(long = "ipvs-scheduler", value_name = "NAME")]
    pub ipvs_scheduler: Option<String>,

    /// A comma-separated list of CIDRs which the ipvs proxier should not touch
    /// when cleaning up IPVS rules.
    #[arg(long = "ipvs-exclude-cidrs", value_name = "CIDR,...", value_delimiter = ',',
          action = clap::ArgAction::Append)]
    pub ipvs_exclude_cidrs: Option<Vec<String>>,

    /// Enable strict ARP by setting arp_ignore to 1 and arp_announce to 2.
    #[arg(long = "ipvs-strict-arp", value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = parse_go_bool)]
    pub ipvs_strict_arp: Option<bool>,

    /// The timeout for idle IPVS TCP connections, 0 to leave as-is.
    #[arg(long = "ipvs-tcp-timeout", value_name = "DURATION", allow_hyphen_values = true,
          value_parser = parse_duration)]
    pub ipvs_tcp_timeout: Option<GoDuration>,

    /// The timeout for IPVS TCP connections after receiving a FIN packet, 0 to leave as-is.
    #[arg(long = "ipvs-tcpfin-timeout", value_name = "DURATION", allow_hyphen_values = true,
          value_parser = parse_duration)]
    pub ipvs_tcpfin_timeout: Option<GoDuration>,

    /// The timeout for IPVS UDP packets, 0 to leave as-is.
    #[arg(long = "ipvs-udp-timeout", value_name = "DURATION", allow_hyphen_values = true,
          value_parser = parse_duration)]
    pub ipvs_udp_timeout: Option<GoDuration>,

    /// Mode to use to detect local traffic: ClusterCIDR (default), NodeCIDR,
    /// BridgeInterface or InterfaceNamePrefix. Ignored if --config is given.
    #[arg(long = "detect-local-mode", value_name = "MODE")]
    pub detect_local_mode: Option<String>,

    /// A bridge interface name; with --detect-local-mode=BridgeInterface,
    /// traffic from this bridge is local.
    #[arg(long = "pod-bridge-interface", value_name = "NAME")]
    pub pod_bridge_interface: Option<String>,

    /// An interface name prefix; with --detect-local-mode=InterfaceNamePrefix,
    /// traffic from interfaces starting with it is local.
    #[arg(long = "pod-interface-name-prefix", value_name = "PREFIX")]
    pub pod_interface_name_prefix: Option<String>,

    /// The CIDR range of the pods in the cluster (or a comma-separated
    /// dual-stack pair). With --detect-local-mode=ClusterCIDR, traffic from
    /// it is local. Ignored if --config is given.
    #[arg(long = "cluster-cidr", value_name = "CIDR")]
    pub cluster_cidr: Option<String>,

    /// A list of CIDR ranges that contain valid node IPs, or the single string
    /// 'primary'. NodePorts are only accepted on matching node IPs; unset means
    /// all local IPs (nftables mode: primary). Ignored if --config is given.
    #[arg(long = "nodeport-addresses", value_name = "CIDR,...", value_delimiter = ',',
          action = clap::ArgAction::Append)]
    pub nodeport_addresses: Option<Vec<String>>,

    /// The oom-score-adj value for kube-proxy process, in [-1000, 1000]
    /// (default -999). Ignored if --config is given.
    #[arg(
        long = "oom-score-adj",
        value_name = "N",
        allow_negative_numbers = true
    )]
    pub oom_score_adj: Option<i32>,

    /// Maximum number of NAT connections to track per CPU core (0 to leave the
    /// limit as-is and ignore conntrack-min) (default 32768).
    #[arg(
        long = "conntrack-max-per-core",
        value_name = "N",
        allow_negative_numbers = true
    )]
    pub conntrack_max_per_core: Option<i32>,

    /// Minimum number of conntrack entries to allocate, regardless of
    /// conntrack-max-per-core (default 131072).
    #[arg(
        long = "conntrack-min",
        value_name = "N",
        allow_negative_numbers = true
    )]
    pub conntrack_min: Option<i32>,

    /// Idle timeout for established TCP connections (0 to leave as-is) (default 24h0m0s).
    #[arg(long = "conntrack-tcp-timeout-established", value_name = "DURATION",
          allow_hyphen_values = true, value_parser = parse_duration)]
    pub conntrack_tcp_timeout_established: Option<GoDuration>,

    /// NAT timeout for TCP connections in the CLOSE_WAIT state (default 1h0m0s).
    #[arg(long = "conntrack-tcp-timeout-close-wait", value_name = "DURATION",
          allow_hyphen_values = true, value_parser = parse_duration)]
    pub conntrack_tcp_timeout_close_wait: Option<GoDuration>,

    /// Enable liberal mode for tracking TCP packets.
    #[arg(long = "conntrack-tcp-be-liberal", value_name = "BOOL", num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = parse_go_bool)]
    pub conntrack_tcp_be_liberal: Option<bool>,

    /// Idle timeout for UNREPLIED UDP connections (0 to leave as-is).
    #[arg(long = "conntrack-udp-timeout", value_name = "DURATION", allow_hyphen_values = true,
          value_parser = parse_duration)]
    pub conntrack_udp_timeout: Option<GoDuration>,

    /// Idle timeout for ASSURED UDP connections (0 to leave as-is).
    #[arg(long = "conntrack-udp-timeout-stream", value_name = "DURATION",
          allow_hyphen_values = true, value_parser = parse_duration)]
    pub conntrack_udp_timeout_stream: Option<GoDuration>,

    /// How often configuration from the apiserver is refreshed. Must be
    /// greater than 0 (default 15m0s). kube-proxy-rs: validated and ignored
    /// (an informer resync; the watches and --iptables-sync-period cover it).
    #[arg(long = "config-sync-period", value_name = "DURATION", allow_hyphen_values = true,
          value_parser = parse_duration)]
    pub config_sync_period: Option<GoDuration>,

    /// Deprecated: the port of the health check server; 0 disables it. Use
    /// --healthz-bind-address instead.
    #[arg(
        long = "healthz-port",
        value_name = "PORT",
        hide = true,
        allow_negative_numbers = true
    )]
    pub healthz_port: Option<i32>,

    /// Deprecated: the port of the metrics server; 0 disables it. Use
    /// --metrics-bind-address instead.
    #[arg(
        long = "metrics-port",
        value_name = "PORT",
        hide = true,
        allow_negative_numbers = true
    )]
    pub metrics_port: Option<i32>,

    /// Number for the log level verbosity.
    #[arg(short = 'v', long = "v", value_name = "LEVEL")]
    pub v: Option<u32>,

    /// Comma-separated list of pattern=N settings for file-filtered logging.
    /// kube-proxy-rs: validated and ignored (use RUST_LOG).
    #[arg(long, value_name = "PATTERN=N,...")]
    pub vmodule: Option<String>,

    /// Maximum number of seconds between log flushes (default 5s).
    /// kube-proxy-rs: validated and ignored (logs are not buffered).
    #[arg(long = "log-flush-frequency", value_name = "DURATION", allow_hyphen_values = true,
          value_parser = parse_duration)]
    pub log_flush_frequency: Option<GoDuration>,

    /// Sets the log format: text (default) or json.
    #[arg(long = "logging-format", value_name = "FORMAT")]
    pub logging_format: Option<String>,

    /// Read Services, EndpointSlices and Nodes from this multi-document YAML
    /// file (re-read when it changes) instead of the API server. Our addition.
    #[arg(long, value_name = "FILE")]
    pub manifests: Option<PathBuf>,

    /// Print the rules that would be applied and exit without touching the
    /// kernel. Our addition.
    #[arg(long = "dry-run", value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_missing_value = "true", value_parser = parse_go_bool)]
    pub dry_run: Option<bool>,

    /// Which iptables binaries to use: auto (whichever already holds rules,
    /// else legacy), legacy or nft. Our addition.
    #[arg(long = "iptables-backend", value_name = "BACKEND", value_enum)]
    pub iptables_backend: Option<IptablesBackend>,

    /// nftables mode: balancing chains pick their endpoint from shared
    /// interval maps (`service-endpoints-<n>`) instead of one anonymous map
    /// each: a cold start linear in the services, an endpoint change an
    /// element update (docs/scale.md). false: upstream v1.36's table
    /// exactly, to diff against upstream's. Our addition; default true.
    #[arg(long = "nftables-shared-endpoint-maps", value_name = "BOOL", num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = parse_go_bool)]
    pub nftables_shared_endpoint_maps: Option<bool>,

    /// iptables and nftables mode, starting where IPVS mode ran: how long
    /// a virtual server IPVS mode left is kept for its established
    /// connections before it is deleted anyway (then kube-ipvs0, the
    /// ipsets and IPVS mode's chains go). 0 deletes them at the first sync.
    /// Our addition; default 5m.
    #[arg(long = "ipvs-drain-timeout", value_name = "DURATION", value_parser = parse_duration)]
    pub ipvs_drain_timeout: Option<GoDuration>,

    /// Every mode: NodePorts answer on 127.0.0.1 (and [::1]) through a
    /// listener in this process that forwards to the port's endpoints,
    /// with route_localnet left at 0 (iptables mode then runs as with
    /// --iptables-localhost-nodeports=false). Our addition; default false.
    #[arg(long = "userspace-localhost-nodeports", value_name = "BOOL", num_args = 0..=1,
          require_equals = true, default_missing_value = "true", value_parser = parse_go_bool)]
    pub userspace_localhost_nodeports: Option<bool>,

    /// Range of host ports (beginPort-endPort, single port or
    /// beginPort+offset, inclusive) that may be consumed in order to proxy
    /// service traffic (userspace mode). If unspecified, 0, or 0-0, ports
    /// are chosen by the kernel. Ignored if --config is given.
    #[arg(long = "proxy-port-range", value_name = "RANGE")]
    pub proxy_port_range: Option<String>,

    /// How long an idle UDP client session is kept open (e.g. '250ms',
    /// '2s'). Must be greater than 0. Only applicable for
    /// proxy-mode=userspace (default 250ms).
    #[arg(long = "udp-timeout", value_name = "DURATION", allow_hyphen_values = true, value_parser = parse_duration)]
    pub udp_timeout: Option<GoDuration>,
}

impl Flags {
    /// Parses a command line (first item: the program name). On a usage
    /// error, `--help` or `--version`, returns clap's error, whose `exit()`
    /// prints it and exits (code 2 for usage errors, 0 for help).
    pub fn parse_from_args<I, T>(args: I) -> Result<Flags, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        Flags::try_parse_from(args)
    }

    /// Names of the flags given on this command line that upstream ignores
    /// when `--config` is set (every flag that maps to a field of the file).
    pub fn given_file_flags(&self) -> Vec<&'static str> {
        ignored::given_file_flags(self)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Flags {
        let mut all = vec!["kube-proxy-rs"];
        all.extend_from_slice(args);
        Flags::parse_from_args(all).unwrap()
    }

    fn fails(args: &[&str]) -> String {
        let mut all = vec!["kube-proxy-rs"];
        all.extend_from_slice(args);
        Flags::parse_from_args(all).unwrap_err().to_string()
    }

    #[test]
    fn nothing_given_means_all_none() {
        let f = parse(&[]);
        assert_eq!(f.config, None);
        assert_eq!(f.masquerade_all, None);
        assert_eq!(f.iptables_sync_period, None);
        assert!(f.given_file_flags().is_empty());
    }

    #[test]
    fn values_with_equals_or_space() {
        let f = parse(&["--proxy-mode=ipvs", "--hostname-override", "node-a"]);
        assert_eq!(f.proxy_mode.as_deref(), Some("ipvs"));
        assert_eq!(f.hostname_override.as_deref(), Some("node-a"));
    }

    #[test]
    fn booleans_like_pflag() {
        assert_eq!(parse(&["--masquerade-all"]).masquerade_all, Some(true));
        assert_eq!(
            parse(&["--masquerade-all=false"]).masquerade_all,
            Some(false)
        );
        assert_eq!(parse(&["--masquerade-all=true"]).masquerade_all, Some(true));
        assert_eq!(parse(&["--masquerade-all=0"]).masquerade_all, Some(false));
        assert_eq!(parse(&["--masquerade-all=T"]).masquerade_all, Some(true));
        assert_eq!(parse(&["--cleanup"]).cleanup, Some(true));
        assert_eq!(parse(&["--dry-run"]).dry_run, Some(true));
        // `--flag value` does not consume the next word for booleans.
        let err = fails(&["--masquerade-all", "false"]);
        assert!(err.contains("false"), "{err}");
        let err = fails(&["--masquerade-all=yes"]);
        assert!(
            err.contains("--masquerade-all") && err.contains("yes"),
            "{err}"
        );
    }

    #[test]
    fn verbosity_forms() {
        assert_eq!(parse(&["-v=4"]).v, Some(4));
        assert_eq!(parse(&["--v=4"]).v, Some(4));
        assert_eq!(parse(&["-v", "3"]).v, Some(3));
        assert_eq!(parse(&["-v2"]).v, Some(2));
        assert_eq!(parse(&["--v", "5"]).v, Some(5));
    }

    #[test]
    fn durations_use_go_syntax() {
        let f = parse(&[
            "--iptables-sync-period=2h22m",
            "--iptables-min-sync-period",
            "1m30.5s",
        ]);
        assert_eq!(f.iptables_sync_period.unwrap().to_string(), "2h22m0s");
        assert_eq!(f.iptables_min_sync_period.unwrap().to_string(), "1m30.5s");
        let f = parse(&["--iptables-sync-period", "-1s"]);
        assert_eq!(f.iptables_sync_period.unwrap().as_nanos(), -1_000_000_000);
        let err = fails(&["--iptables-sync-period=5"]);
        assert!(err.contains("--iptables-sync-period"), "{err}");
        assert!(
            err.contains("time: missing unit in duration \"5\""),
            "{err}"
        );
    }

    #[test]
    fn last_repeat_wins_and_lists_split_on_commas() {
        let f = parse(&["--proxy-mode=ipvs", "--proxy-mode=iptables"]);
        assert_eq!(f.proxy_mode.as_deref(), Some("iptables"));
        let f = parse(&["--nodeport-addresses=10.0.0.0/8,192.168.0.0/16"]);
        assert_eq!(
            f.nodeport_addresses,
            Some(vec!["10.0.0.0/8".to_string(), "192.168.0.0/16".to_string()])
        );
        let f = parse(&[
            "--ipvs-exclude-cidrs=10.0.0.0/8",
            "--ipvs-exclude-cidrs=10.1.0.0/16",
        ]);
        assert_eq!(f.ipvs_exclude_cidrs.map(|v| v.len()), Some(2));
    }

    #[test]
    fn our_backend_flag_is_an_enum() {
        assert_eq!(
            parse(&["--iptables-backend=nft"]).iptables_backend,
            Some(IptablesBackend::Nft)
        );
        let err = fails(&["--iptables-backend=xtables"]);
        assert!(err.contains("--iptables-backend"), "{err}");
        assert!(
            err.contains("auto") && err.contains("legacy") && err.contains("nft"),
            "{err}"
        );
    }

    #[test]
    fn feature_gates_parse_to_pairs() {
        let f = parse(&["--feature-gates=A=true,B=false"]);
        assert_eq!(
            f.feature_gates,
            Some(vec![
                FeatureGate {
                    name: "A".into(),
                    enabled: true
                },
                FeatureGate {
                    name: "B".into(),
                    enabled: false
                }
            ])
        );
        let err = fails(&["--feature-gates=A"]);
        assert!(err.contains("--feature-gates"), "{err}");
    }

    #[test]
    fn negative_integers_are_values() {
        assert_eq!(
            parse(&["--oom-score-adj", "-500"]).oom_score_adj,
            Some(-500)
        );
        assert_eq!(
            parse(&["--iptables-masquerade-bit=-1"]).iptables_masquerade_bit,
            Some(-1)
        );
    }

    #[test]
    fn unknown_flags_are_usage_errors() {
        let mut all = vec!["kube-proxy-rs", "--no-such-flag"];
        all.truncate(2);
        let err = Flags::parse_from_args(all).unwrap_err();
        assert_eq!(err.exit_code(), 2);
    }
}
