//! Upstream's `Validate` for the resolved settings, producing the typed
//! [`Config`]. Every problem is collected (as upstream aggregates them) and
//! named by the flag when the value came from the command line, or by its
//! field path when it came from the `--config` file.

use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;
use std::time::Duration;

use ipnet::IpNet;

use super::settings::{NODE_PORT_ADDRESSES_PRIMARY, Settings};
use super::{
    ClientConnection, Config, ConfigError, ConntrackConfig, DetectLocal, FieldError, IpvsConfig,
    IpvsScheduler, LogFormat, LoggingConfig, NodePortAddresses, ProxyMode,
};
use crate::duration::GoDuration;
use crate::flags::Flags;

/// The only earlier version `showHiddenMetricsForVersion` may name
/// (upstream allows just the previous minor release, and we track v1.36).
const PREVIOUS_MINOR_VERSION: &str = "1.35";

/// Names values by flag or by field path, depending on where they came from.
struct Namer<'a> {
    from_file: bool,
    mode: &'a str,
}

impl Namer<'_> {
    fn name(&self, flag: &str, field: &str) -> String {
        if self.from_file {
            field.to_string()
        } else {
            flag.to_string()
        }
    }

    /// The section whose sync periods apply in this mode.
    fn period_names(&self) -> (String, String) {
        match (self.from_file, self.mode) {
            (false, "ipvs") => ("--ipvs-sync-period".into(), "--ipvs-min-sync-period".into()),
            (false, _) => (
                "--iptables-sync-period".into(),
                "--iptables-min-sync-period".into(),
            ),
            (true, section) => (
                format!("{section}.syncPeriod"),
                format!("{section}.minSyncPeriod"),
            ),
        }
    }
}

/// Collects errors while validating.
struct Errors(Vec<FieldError>);

impl Errors {
    fn push(&mut self, name: String, value: impl ToString, reason: impl Into<String>) {
        self.0.push(FieldError {
            name,
            value: value.to_string(),
            reason: reason.into(),
        });
    }
}

/// Validates `s` into a [`Config`]; `from_file` says whether values came
/// from the `--config` file (errors name fields) or the command line.
pub fn validate(s: &Settings, flags: &Flags, from_file: bool) -> Result<Config, ConfigError> {
    let namer = Namer {
        from_file,
        mode: &s.mode,
    };
    let mut errs = Errors(Vec::new());
    let mode = validate_mode(s, &namer, &mut errs);
    let masquerade_bit = validate_masquerade_bits(s, mode, &namer, &mut errs);
    let (sync_period, min_sync_period) = validate_periods(s, &namer, &mut errs);
    let config_sync_period = positive(
        s.config_sync_period,
        namer.name("--config-sync-period", "configSyncPeriod"),
        &mut errs,
    );
    let bind_address = parse_ip(
        &s.bind_address,
        namer.name("--bind-address", "bindAddress"),
        &mut errs,
    );
    let healthz = host_port(
        &s.healthz_bind_address,
        namer.name("--healthz-bind-address", "healthzBindAddress"),
        &mut errs,
    );
    let metrics = host_port(
        &s.metrics_bind_address,
        namer.name("--metrics-bind-address", "metricsBindAddress"),
        &mut errs,
    );
    let proxy_port_range = validate_port_range(&s.port_range, &namer, &mut errs);
    let udp_idle_timeout = validate_udp_timeout(flags, &mut errs);
    let node_port_addresses = validate_node_port_addresses(s, &namer, &mut errs);
    let show_hidden = validate_show_hidden(s, &namer, &mut errs);
    let detect_local = validate_detect_local(s, &namer, &mut errs);
    let ipvs = validate_ipvs(s, mode == Some(ProxyMode::Ipvs), &namer, &mut errs);
    let conntrack = validate_conntrack(s, &namer, &mut errs);
    let oom_score_adj = validate_oom_score_adj(s, &namer, &mut errs);
    let client = validate_client(s, flags, &namer, &mut errs);
    let logging = validate_logging(s, flags, from_file, &mut errs);
    let hostname_override = validate_hostname(s, flags, &mut errs);
    let ipvs_drain_timeout = validate_ipvs_drain_timeout(flags, &mut errs);
    if !errs.0.is_empty() {
        return Err(ConfigError::Invalid(errs.0));
    }
    let invalid = || ConfigError::Invalid(Vec::new());
    Ok(Config {
        mode: mode.ok_or_else(invalid)?,
        hostname_override,
        bind_address: bind_address.ok_or_else(invalid)?,
        bind_address_hard_fail: s.bind_address_hard_fail,
        healthz_bind_address: healthz.ok_or_else(invalid)?,
        metrics_bind_address: metrics.ok_or_else(invalid)?,
        enable_profiling: s.enable_profiling,
        detect_local: detect_local.ok_or_else(invalid)?,
        masquerade_all: s.masquerade_all,
        masquerade_bit: masquerade_bit.ok_or_else(invalid)?,
        sync_period: sync_period.ok_or_else(invalid)?,
        min_sync_period: min_sync_period.ok_or_else(invalid)?,
        localhost_node_ports: s.localhost_node_ports && !flags.userspace_localhost_nodeports.unwrap_or(false),
        node_port_addresses,
        ipvs,
        conntrack,
        config_sync_period: config_sync_period.ok_or_else(invalid)?,
        oom_score_adj,
        client,
        logging,
        feature_gates: s.feature_gates.clone(),
        show_hidden_metrics_for_version: show_hidden,
        config_file: flags.config.clone(),
        manifests: flags.manifests.clone(),
        dry_run: flags.dry_run.unwrap_or(false),
        cleanup: flags.cleanup.unwrap_or(false),
        init_only: flags.init_only.unwrap_or(false),
        iptables_backend: flags.iptables_backend.unwrap_or_default(),
        nftables_shared_endpoint_maps: flags.nftables_shared_endpoint_maps.unwrap_or(true),
        userspace_localhost_nodeports: flags.userspace_localhost_nodeports.unwrap_or(false),
        ipvs_drain_timeout: ipvs_drain_timeout.ok_or_else(invalid)?,
        proxy_port_range,
        udp_idle_timeout: udp_idle_timeout.ok_or_else(invalid)?,
    })
}

/// `--ipvs-drain-timeout` (ours): default 5m, not negative.
fn validate_ipvs_drain_timeout(flags: &Flags, errs: &mut Errors) -> Option<Duration> {
    let Some(value) = flags.ipvs_drain_timeout else { return Some(DEFAULT_IPVS_DRAIN_TIMEOUT) };
    let drain = value.to_std();
    if drain.is_none() {
        errs.push("--ipvs-drain-timeout".to_string(), value, "must be greater than or equal to 0");
    }
    drain
}

/// `--ipvs-drain-timeout`'s default.
pub const DEFAULT_IPVS_DRAIN_TIMEOUT: Duration = Duration::from_secs(5 * 60);

fn validate_mode(s: &Settings, namer: &Namer, errs: &mut Errors) -> Option<ProxyMode> {
    match s.mode.as_str() {
        "iptables" => Some(ProxyMode::Iptables),
        "ipvs" => Some(ProxyMode::Ipvs),
        "nftables" => Some(ProxyMode::Nftables),
        "userspace" => Some(ProxyMode::Userspace),
        other => {
            errs.push(
                namer.name("--proxy-mode", "mode"),
                other,
                "must be iptables, ipvs, nftables, userspace or blank (blank means the \
                 best-available proxy [currently iptables])",
            );
            None
        }
    }
}

/// Checks iptables.masqueradeBit always and nftables.masqueradeBit in
/// nftables mode (as upstream); returns the bit the active mode uses.
fn validate_masquerade_bits(
    s: &Settings,
    mode: Option<ProxyMode>,
    namer: &Namer,
    errs: &mut Errors,
) -> Option<u8> {
    let check = |bit: i32, name: String, errs: &mut Errors| match u8::try_from(bit) {
        Ok(b) if b <= 31 => Some(b),
        _ => {
            errs.push(name, bit, "must be within the range [0, 31]");
            None
        }
    };
    let iptables = check(
        s.iptables_masquerade_bit,
        namer.name("--iptables-masquerade-bit", "iptables.masqueradeBit"),
        errs,
    );
    if mode == Some(ProxyMode::Nftables) {
        return check(
            s.nftables_masquerade_bit,
            "nftables.masqueradeBit".into(),
            errs,
        );
    }
    iptables
}

fn validate_periods(
    s: &Settings,
    namer: &Namer,
    errs: &mut Errors,
) -> (Option<Duration>, Option<Duration>) {
    let (period_name, min_name) = namer.period_names();
    let period = positive(s.sync_period, period_name.clone(), errs);
    let min = non_negative(s.min_sync_period, min_name.clone(), errs);
    if period.is_some() && s.min_sync_period > s.sync_period {
        errs.push(
            min_name,
            s.min_sync_period,
            format!(
                "must be less than or equal to {period_name} ({})",
                s.sync_period
            ),
        );
        return (period, None);
    }
    (period, min)
}

/// A duration that must be above zero.
fn positive(d: GoDuration, name: String, errs: &mut Errors) -> Option<Duration> {
    match d.to_std() {
        Some(std) if !std.is_zero() => Some(std),
        _ => {
            errs.push(name, d, "must be greater than 0");
            None
        }
    }
}

/// A duration that must not be negative.
fn non_negative(d: GoDuration, name: String, errs: &mut Errors) -> Option<Duration> {
    let std = d.to_std();
    if std.is_none() {
        errs.push(name, d, "must be greater than or equal to 0");
    }
    std
}

/// A non-negative duration where zero means "leave the kernel's value".
fn optional_timeout(d: Option<GoDuration>, name: String, errs: &mut Errors) -> Option<Duration> {
    non_negative(d.unwrap_or_default(), name, errs).filter(|t| !t.is_zero())
}

fn parse_ip(text: &str, name: String, errs: &mut Errors) -> Option<IpAddr> {
    match text.parse() {
        Ok(ip) => Some(ip),
        Err(_) => {
            errs.push(
                name,
                text,
                "not a valid textual representation of an IP address",
            );
            None
        }
    }
}

/// `IP:port` with a port in 1..=65535; empty means disabled (`Some(None)`).
fn host_port(text: &str, name: String, errs: &mut Errors) -> Option<Option<SocketAddr>> {
    if text.is_empty() {
        return Some(None);
    }
    let Some((host, port)) = split_host_port(text) else {
        errs.push(name, text, "must be IP:port");
        return None;
    };
    let ip = host.parse::<IpAddr>();
    let port = port.parse::<u16>().ok().filter(|p| *p != 0);
    match (ip, port) {
        (Ok(ip), Some(port)) => Some(Some(SocketAddr::new(ip, port))),
        (Err(_), _) => {
            errs.push(name, text, "must be IP:port with a valid IP");
            None
        }
        (_, None) => {
            errs.push(name, text, "must be IP:port with a port in 1-65535");
            None
        }
    }
}

/// Go's `net.SplitHostPort` for the forms we accept: `1.2.3.4:80`, `[::1]:80`.
fn split_host_port(text: &str) -> Option<(&str, &str)> {
    if let Some(rest) = text.strip_prefix('[') {
        let (host, port) = rest.split_once("]:")?;
        return Some((host, port));
    }
    let (host, port) = text.rsplit_once(':')?;
    (!host.contains(':')).then_some((host, port))
}

/// `portRange` / `--proxy-port-range`: empty, `N`, `A-B` or `A+N` (as
/// upstream's `utilnet.PortRange` parses it); empty, `0` and `0-0` mean any
/// free port.
fn validate_port_range(text: &str, namer: &Namer, errs: &mut Errors) -> Option<forward::PortRange> {
    let value = text.trim();
    if value.is_empty() {
        return None;
    }
    match parse_port_range(value) {
        Some(range) => (range != forward::PortRange { first: 0, last: 0 }).then_some(range),
        None => {
            errs.push(namer.name("--proxy-port-range", "portRange"), text, "must be a valid port range (e.g. 300-2000)");
            None
        }
    }
}

/// `N`, `A-B` (A <= B) or `A+N` (A + N <= 65535).
fn parse_port_range(value: &str) -> Option<forward::PortRange> {
    let port = |p: &str| p.trim().parse::<u16>().ok();
    let (first, last) = if let Some((a, b)) = value.split_once('-') {
        (port(a)?, port(b)?)
    } else if let Some((a, n)) = value.split_once('+') {
        let first = port(a)?;
        (first, first.checked_add(port(n)?)?)
    } else {
        (port(value)?, port(value)?)
    };
    (first <= last).then_some(forward::PortRange { first, last })
}

/// `--udp-timeout` (upstream's `udpIdleTimeout`): default 250ms, above 0.
fn validate_udp_timeout(flags: &Flags, errs: &mut Errors) -> Option<Duration> {
    let Some(value) = flags.udp_timeout else { return Some(DEFAULT_UDP_IDLE_TIMEOUT) };
    let timeout = value.to_std().filter(|d| !d.is_zero());
    if timeout.is_none() {
        errs.push("--udp-timeout".to_string(), value, "must be greater than 0");
    }
    timeout
}

/// `--udp-timeout`'s default (upstream's 250ms).
pub const DEFAULT_UDP_IDLE_TIMEOUT: Duration = Duration::from_millis(250);

fn validate_node_port_addresses(
    s: &Settings,
    namer: &Namer,
    errs: &mut Errors,
) -> NodePortAddresses {
    let list = &s.node_port_addresses;
    if list.is_empty() {
        return NodePortAddresses::All;
    }
    let item_name =
        |i: usize| namer.name("--nodeport-addresses", &format!("nodePortAddresses[{i}]"));
    if list.len() == 1 && list[0] == NODE_PORT_ADDRESSES_PRIMARY {
        return NodePortAddresses::Primary;
    }
    let mut cidrs = Vec::new();
    for (i, item) in list.iter().enumerate() {
        if item == NODE_PORT_ADDRESSES_PRIMARY {
            errs.push(item_name(i), item, "can't use both 'primary' and CIDRs");
            continue;
        }
        match IpNet::from_str(item) {
            Ok(net) => cidrs.push(net),
            Err(_) => errs.push(item_name(i), item, "must be a valid CIDR"),
        }
    }
    NodePortAddresses::Cidrs(cidrs)
}

fn validate_show_hidden(s: &Settings, namer: &Namer, errs: &mut Errors) -> Option<String> {
    let v = s.show_hidden_metrics_for_version.as_str();
    if v.is_empty() {
        return None;
    }
    if v != PREVIOUS_MINOR_VERSION {
        errs.push(
            namer.name("--show-hidden-metrics-for-version", "showHiddenMetricsForVersion"),
            v,
            format!("must be omitted or have the value '{PREVIOUS_MINOR_VERSION}'; only the previous minor version is allowed"),
        );
        return None;
    }
    Some(v.to_string())
}

fn validate_detect_local(s: &Settings, namer: &Namer, errs: &mut Errors) -> Option<DetectLocal> {
    let mode_name = namer.name("--detect-local-mode", "detectLocalMode");
    let non_empty = |value: &str, name: String, errs: &mut Errors| {
        if value.is_empty() {
            errs.push(
                name,
                value,
                format!(
                    "must not be empty when {mode_name} is {}",
                    s.detect_local_mode
                ),
            );
            return None;
        }
        Some(value.to_string())
    };
    match s.detect_local_mode.as_str() {
        "ClusterCIDR" => validate_cluster_cidrs(s, namer, errs).map(DetectLocal::ClusterCidr),
        "NodeCIDR" => Some(DetectLocal::NodeCidr),
        "BridgeInterface" => non_empty(
            &s.bridge_interface,
            namer.name("--pod-bridge-interface", "detectLocal.bridgeInterface"),
            errs,
        )
        .map(DetectLocal::BridgeInterface),
        "InterfaceNamePrefix" => non_empty(
            &s.interface_name_prefix,
            namer.name(
                "--pod-interface-name-prefix",
                "detectLocal.interfaceNamePrefix",
            ),
            errs,
        )
        .map(DetectLocal::InterfaceNamePrefix),
        other => {
            errs.push(
                mode_name,
                other,
                "supported values: \"ClusterCIDR\", \"NodeCIDR\", \"BridgeInterface\", \"InterfaceNamePrefix\"",
            );
            None
        }
    }
}

/// One CIDR or a dual-stack pair (one IPv4, one IPv6).
fn validate_cluster_cidrs(s: &Settings, namer: &Namer, errs: &mut Errors) -> Option<Vec<IpNet>> {
    let name = namer.name("--cluster-cidr", "clusterCIDR");
    let list = &s.cluster_cidrs;
    if list.len() > 2 {
        errs.push(name, list.join(","), "must be a single CIDR or a dual-stack pair of CIDRs (e.g. 10.100.0.0/16,fde4:8dba:82e1::/48)");
        return None;
    }
    let mut nets = Vec::new();
    for item in list {
        match IpNet::from_str(item) {
            Ok(net) => nets.push(net),
            Err(_) => errs.push(
                name.clone(),
                item,
                "must be a valid CIDR block (e.g. 10.100.0.0/16 or fde4:8dba:82e1::/48)",
            ),
        }
    }
    if nets.len() != list.len() {
        return None;
    }
    let same_family = matches!(
        nets.as_slice(),
        [IpNet::V4(_), IpNet::V4(_)] | [IpNet::V6(_), IpNet::V6(_)]
    );
    if same_family {
        errs.push(
            name,
            list.join(","),
            "must be a single CIDR or a dual-stack pair of CIDRs (one IPv4, one IPv6)",
        );
        return None;
    }
    Some(nets)
}

fn validate_ipvs(s: &Settings, ipvs_mode: bool, namer: &Namer, errs: &mut Errors) -> IpvsConfig {
    let mut sink = Errors(Vec::new());
    // Upstream checks the ipvs section only in ipvs mode.
    let errs = if ipvs_mode { errs } else { &mut sink };
    let ipvs = &s.ipvs;
    let scheduler_text = ipvs.scheduler.clone().unwrap_or_default();
    let scheduler = scheduler_text.parse::<IpvsScheduler>().unwrap_or_else(|err| {
        errs.push(
            namer.name("--ipvs-scheduler", "ipvs.scheduler"),
            &scheduler_text,
            format!("must be one of {} (blank means rr)", err.valid),
        );
        IpvsScheduler::RoundRobin
    });
    let mut exclude_cidrs = Vec::new();
    for (i, item) in ipvs.exclude_cidrs.iter().flatten().enumerate() {
        match IpNet::from_str(item) {
            Ok(net) => exclude_cidrs.push(net),
            Err(_) => errs.push(
                namer.name("--ipvs-exclude-cidrs", &format!("ipvs.excludeCIDRs[{i}]")),
                item,
                "must be a valid CIDR",
            ),
        }
    }
    IpvsConfig {
        scheduler,
        strict_arp: ipvs.strict_arp.unwrap_or(false),
        exclude_cidrs,
        tcp_timeout: optional_timeout(
            ipvs.tcp_timeout,
            namer.name("--ipvs-tcp-timeout", "ipvs.tcpTimeout"),
            errs,
        ),
        tcp_fin_timeout: optional_timeout(
            ipvs.tcp_fin_timeout,
            namer.name("--ipvs-tcpfin-timeout", "ipvs.tcpFinTimeout"),
            errs,
        ),
        udp_timeout: optional_timeout(
            ipvs.udp_timeout,
            namer.name("--ipvs-udp-timeout", "ipvs.udpTimeout"),
            errs,
        ),
    }
}

fn validate_conntrack(s: &Settings, namer: &Namer, errs: &mut Errors) -> ConntrackConfig {
    let c = &s.conntrack;
    let count = |v: Option<i32>, name: String, errs: &mut Errors| {
        let v = v.unwrap_or(0);
        u32::try_from(v).unwrap_or_else(|_| {
            errs.push(name, v, "must be greater than or equal to 0");
            0
        })
    };
    ConntrackConfig {
        max_per_core: count(
            c.max_per_core,
            namer.name("--conntrack-max-per-core", "conntrack.maxPerCore"),
            errs,
        ),
        min: count(c.min, namer.name("--conntrack-min", "conntrack.min"), errs),
        tcp_established_timeout: optional_timeout(
            c.tcp_established_timeout,
            namer.name(
                "--conntrack-tcp-timeout-established",
                "conntrack.tcpEstablishedTimeout",
            ),
            errs,
        ),
        tcp_close_wait_timeout: optional_timeout(
            c.tcp_close_wait_timeout,
            namer.name(
                "--conntrack-tcp-timeout-close-wait",
                "conntrack.tcpCloseWaitTimeout",
            ),
            errs,
        ),
        tcp_be_liberal: c.tcp_be_liberal.unwrap_or(false),
        udp_timeout: optional_timeout(
            c.udp_timeout,
            namer.name("--conntrack-udp-timeout", "conntrack.udpTimeout"),
            errs,
        ),
        udp_stream_timeout: optional_timeout(
            c.udp_stream_timeout,
            namer.name(
                "--conntrack-udp-timeout-stream",
                "conntrack.udpStreamTimeout",
            ),
            errs,
        ),
    }
}

fn validate_oom_score_adj(s: &Settings, namer: &Namer, errs: &mut Errors) -> i32 {
    if !(-1000..=1000).contains(&s.oom_score_adj) {
        errs.push(
            namer.name("--oom-score-adj", "oomScoreAdj"),
            s.oom_score_adj,
            "must be within the range [-1000, 1000]",
        );
    }
    s.oom_score_adj
}

fn validate_client(
    s: &Settings,
    flags: &Flags,
    namer: &Namer,
    errs: &mut Errors,
) -> ClientConnection {
    let c = &s.client;
    let burst = c.burst.unwrap_or(0);
    let burst = u32::try_from(burst).unwrap_or_else(|_| {
        errs.push(
            namer.name("--kube-api-burst", "clientConnection.burst"),
            burst,
            "must be greater than or equal to 0",
        );
        0
    });
    ClientConnection {
        kubeconfig: c
            .kubeconfig
            .clone()
            .filter(|k| !k.is_empty())
            .map(Into::into),
        master: flags.master.clone().filter(|m| !m.is_empty()),
        qps: c.qps.unwrap_or(5.0),
        burst,
        content_type: c.content_type.clone().unwrap_or_default(),
        accept_content_types: c.accept_content_types.clone().unwrap_or_default(),
    }
}

fn validate_logging(
    s: &Settings,
    flags: &Flags,
    from_file: bool,
    errs: &mut Errors,
) -> LoggingConfig {
    // Logging flags win even with --config, so name the flag when given.
    let name = |flag_given: bool, flag: &str, field: &str| {
        if from_file && !flag_given {
            field.to_string()
        } else {
            flag.to_string()
        }
    };
    let format = match s.log_format.as_str() {
        "text" => LogFormat::Text,
        "json" => LogFormat::Json,
        other => {
            errs.push(
                name(
                    flags.logging_format.is_some(),
                    "--logging-format",
                    "logging.format",
                ),
                other,
                "supported values: \"json\", \"text\"",
            );
            LogFormat::Text
        }
    };
    let mut vmodule = Vec::new();
    for item in s.vmodule.split(',').filter(|i| !i.is_empty()) {
        match item.split_once('=').map(|(p, l)| (p, l.parse::<u32>())) {
            Some((pattern, Ok(level))) if !pattern.is_empty() => {
                vmodule.push((pattern.to_string(), level))
            }
            _ => errs.push(
                name(flags.vmodule.is_some(), "--vmodule", "logging.vmodule"),
                item,
                "expected pattern=N",
            ),
        }
    }
    let flush_name = name(
        flags.log_flush_frequency.is_some(),
        "--log-flush-frequency",
        "logging.flushFrequency",
    );
    LoggingConfig {
        verbosity: s.verbosity,
        vmodule,
        format,
        flush_frequency: positive(s.log_flush_frequency, flush_name, errs)
            .unwrap_or(Duration::from_secs(5)),
    }
}

/// `--hostname-override` wins over the file; either is trimmed and
/// lower-cased, and must not be blank once trimmed.
fn validate_hostname(s: &Settings, flags: &Flags, errs: &mut Errors) -> Option<String> {
    let (raw, name) = match flags.hostname_override.as_deref().filter(|h| !h.is_empty()) {
        Some(flag) => (flag, "--hostname-override"),
        None => (s.hostname_override.as_str(), "hostnameOverride"),
    };
    if raw.is_empty() {
        return None;
    }
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        errs.push(name.into(), raw, "must not be blank");
        return None;
    }
    Some(trimmed.to_lowercase())
}
