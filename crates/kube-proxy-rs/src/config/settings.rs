//! The configuration before validation, shaped like upstream's internal
//! `KubeProxyConfiguration`: one `syncPeriod`/`minSyncPeriod` pair taken
//! from the active mode's section, one `masqueradeAll`. Built either from
//! a config file ([`Settings::from_file`], v1alpha1 defaults applied) or
//! from defaults plus flags ([`Settings::from_flags`]); turned back into a
//! v1alpha1 file by [`Settings::to_file`] for `--write-config-to`.

use std::collections::BTreeMap;

use super::v1alpha1::{self as file, KubeProxyConfiguration};
use crate::duration::GoDuration;
use crate::flags::Flags;

/// Default node health server port (upstream `ports.ProxyHealthzPort`).
pub const HEALTHZ_PORT: u16 = 10256;
/// Default metrics server port (upstream `ports.ProxyStatusPort`).
pub const METRICS_PORT: u16 = 10249;
/// `detectLocal.nodePortAddresses` value meaning "the node's primary IPs".
pub const NODE_PORT_ADDRESSES_PRIMARY: &str = "primary";

/// Unvalidated, defaulted settings; text stays text until validation.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub mode: String,
    pub bind_address: String,
    pub bind_address_hard_fail: bool,
    pub healthz_bind_address: String,
    pub metrics_bind_address: String,
    pub enable_profiling: bool,
    pub cluster_cidrs: Vec<String>,
    pub hostname_override: String,
    pub client: file::ClientConnection,
    pub iptables_masquerade_bit: i32,
    pub localhost_node_ports: bool,
    pub nftables_masquerade_bit: i32,
    pub masquerade_all: bool,
    pub sync_period: GoDuration,
    pub min_sync_period: GoDuration,
    pub ipvs: file::IpvsSection,
    pub conntrack: file::Conntrack,
    pub oom_score_adj: i32,
    pub port_range: String,
    pub config_sync_period: GoDuration,
    pub node_port_addresses: Vec<String>,
    pub show_hidden_metrics_for_version: String,
    pub detect_local_mode: String,
    pub bridge_interface: String,
    pub interface_name_prefix: String,
    pub verbosity: u32,
    pub log_format: String,
    pub log_flush_frequency: GoDuration,
    pub log_options: file::LoggingOptions,
    /// `pattern=N,pattern=N`, as the `--vmodule` flag writes it.
    pub vmodule: String,
    pub feature_gates: BTreeMap<String, bool>,
    pub winkernel: file::Winkernel,
    pub windows_run_as_service: Option<bool>,
}

/// `value` unless it is unset or the type's zero value, else `default`
/// (upstream's defaulting treats zero as unset).
fn or_default<T: PartialEq + Default>(value: Option<T>, default: T) -> T {
    match value {
        Some(v) if v != T::default() => v,
        _ => default,
    }
}

/// Appends `:port` to a bare IP, as upstream's `AppendPortIfNeeded` does;
/// anything else (already has a port, not an IP) is left for validation.
pub fn append_port_if_needed(addr: &str, port: u16) -> String {
    match addr.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(ip)) => format!("{ip}:{port}"),
        Ok(std::net::IpAddr::V6(ip)) => format!("[{ip}]:{port}"),
        Err(_) => addr.to_string(),
    }
}

/// Health and metrics default hosts for a bind address's family.
fn default_hosts(bind_address: &str) -> (&'static str, &'static str) {
    match bind_address.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V6(_)) => ("[::]", "[::1]"),
        _ => ("0.0.0.0", "127.0.0.1"),
    }
}

impl Settings {
    /// Settings from a config file: v1alpha1 defaults, then the v1alpha1 →
    /// internal conversion (sync periods and masqueradeAll come from the
    /// section of the file's mode).
    pub fn from_file(f: KubeProxyConfiguration) -> Settings {
        let mode = f.mode.clone().unwrap_or_default();
        let ipt = f.iptables.clone().unwrap_or_default();
        let nft = f.nftables.clone().unwrap_or_default();
        let mut ipvs = f.ipvs.clone().unwrap_or_default();
        let (sync_period, min_sync_period, masquerade_all) = match mode.as_str() {
            "ipvs" => (
                or_default(ipvs.sync_period, GoDuration::from_secs(30)),
                ipvs.min_sync_period.unwrap_or_default(),
                ipt.masquerade_all.unwrap_or_default(),
            ),
            "nftables" => (
                or_default(nft.sync_period, GoDuration::from_secs(30)),
                or_default(nft.min_sync_period, GoDuration::from_secs(1)),
                nft.masquerade_all.unwrap_or_default(),
            ),
            _ => (
                or_default(ipt.sync_period, GoDuration::from_secs(30)),
                or_default(ipt.min_sync_period, GoDuration::from_secs(1)),
                ipt.masquerade_all.unwrap_or_default(),
            ),
        };
        ipvs.sync_period = None;
        ipvs.min_sync_period = None;
        let bind_address = or_default(f.bind_address, "0.0.0.0".to_string());
        let (healthz_host, metrics_host) = default_hosts(&bind_address);
        let logging = f.logging.unwrap_or_default();
        let detect_local = f.detect_local.unwrap_or_default();
        Settings {
            mode,
            healthz_bind_address: match f.healthz_bind_address.unwrap_or_default() {
                a if a.is_empty() => format!("{healthz_host}:{HEALTHZ_PORT}"),
                a => append_port_if_needed(&a, HEALTHZ_PORT),
            },
            metrics_bind_address: match f.metrics_bind_address.unwrap_or_default() {
                a if a.is_empty() => format!("{metrics_host}:{METRICS_PORT}"),
                a => append_port_if_needed(&a, METRICS_PORT),
            },
            bind_address,
            bind_address_hard_fail: f.bind_address_hard_fail.unwrap_or_default(),
            enable_profiling: f.enable_profiling.unwrap_or_default(),
            cluster_cidrs: match f.cluster_cidr.unwrap_or_default() {
                c if c.is_empty() => Vec::new(),
                c => c.split(',').map(str::to_string).collect(),
            },
            hostname_override: f.hostname_override.unwrap_or_default(),
            client: default_client(f.client_connection.unwrap_or_default()),
            iptables_masquerade_bit: ipt.masquerade_bit.unwrap_or(14),
            localhost_node_ports: ipt.localhost_node_ports.unwrap_or(true),
            nftables_masquerade_bit: nft.masquerade_bit.unwrap_or(14),
            masquerade_all,
            sync_period,
            min_sync_period,
            ipvs: file::IpvsSection {
                exclude_cidrs: ipvs.exclude_cidrs,
                scheduler: Some(ipvs.scheduler.unwrap_or_default()),
                strict_arp: Some(ipvs.strict_arp.unwrap_or_default()),
                tcp_timeout: Some(ipvs.tcp_timeout.unwrap_or_default()),
                tcp_fin_timeout: Some(ipvs.tcp_fin_timeout.unwrap_or_default()),
                udp_timeout: Some(ipvs.udp_timeout.unwrap_or_default()),
                sync_period: None,
                min_sync_period: None,
            },
            conntrack: default_conntrack(f.conntrack.unwrap_or_default()),
            oom_score_adj: f.oom_score_adj.unwrap_or(-999),
            port_range: f.port_range.unwrap_or_default(),
            config_sync_period: or_default(f.config_sync_period, GoDuration::from_secs(15 * 60)),
            node_port_addresses: f.node_port_addresses.unwrap_or_default(),
            show_hidden_metrics_for_version: f.show_hidden_metrics_for_version.unwrap_or_default(),
            detect_local_mode: f.detect_local_mode.unwrap_or_default(),
            bridge_interface: detect_local.bridge_interface.unwrap_or_default(),
            interface_name_prefix: detect_local.interface_name_prefix.unwrap_or_default(),
            verbosity: logging.verbosity.unwrap_or_default(),
            log_format: or_default(logging.format, "text".to_string()),
            log_flush_frequency: or_default(logging.flush_frequency, GoDuration::from_secs(5)),
            log_options: default_log_options(logging.options.unwrap_or_default()),
            vmodule: vmodule_text(logging.vmodule.unwrap_or_default()),
            feature_gates: f.feature_gates.unwrap_or_default(),
            winkernel: default_winkernel(f.winkernel.unwrap_or_default()),
            windows_run_as_service: f.windows_run_as_service,
        }
    }

    /// Settings from flags alone: the defaults of an empty v1alpha1 file,
    /// then every flag given on the command line, as upstream's
    /// `processV1Alpha1Flags` does (the iptables period flags apply unless
    /// the mode is ipvs, the ipvs ones only in ipvs mode).
    pub fn from_flags(flags: &Flags) -> Settings {
        let mut s = Settings::from_file(KubeProxyConfiguration::default());
        s.apply_flags(flags);
        s
    }

    fn apply_flags(&mut self, f: &Flags) {
        set(&mut self.mode, f.proxy_mode.clone());
        set(&mut self.bind_address, f.bind_address.clone());
        set(&mut self.bind_address_hard_fail, f.bind_address_hard_fail);
        set(
            &mut self.healthz_bind_address,
            f.healthz_bind_address.clone(),
        );
        set(
            &mut self.metrics_bind_address,
            f.metrics_bind_address.clone(),
        );
        set(&mut self.enable_profiling, f.profiling);
        set(
            &mut self.show_hidden_metrics_for_version,
            f.show_hidden_metrics_for_version.clone(),
        );
        set(&mut self.iptables_masquerade_bit, f.iptables_masquerade_bit);
        set(&mut self.masquerade_all, f.masquerade_all);
        set(
            &mut self.localhost_node_ports,
            f.iptables_localhost_nodeports,
        );
        let ipvs_mode = self.mode == "ipvs";
        let (period, min_period) = if ipvs_mode {
            (f.ipvs_sync_period, f.ipvs_min_sync_period)
        } else {
            (f.iptables_sync_period, f.iptables_min_sync_period)
        };
        set(&mut self.sync_period, period);
        set(&mut self.min_sync_period, min_period);
        self.apply_ipvs_flags(f);
        self.apply_conntrack_flags(f);
        self.apply_client_flags(f);
        set(&mut self.detect_local_mode, f.detect_local_mode.clone());
        set(&mut self.bridge_interface, f.pod_bridge_interface.clone());
        set(
            &mut self.interface_name_prefix,
            f.pod_interface_name_prefix.clone(),
        );
        if let Some(cidrs) = &f.cluster_cidr {
            self.cluster_cidrs = cidrs.split(',').map(str::to_string).collect();
        }
        set(&mut self.node_port_addresses, f.nodeport_addresses.clone());
        set(&mut self.oom_score_adj, f.oom_score_adj);
        set(&mut self.port_range, f.proxy_port_range.clone());
        set(&mut self.config_sync_period, f.config_sync_period);
        if let Some(gates) = &f.feature_gates {
            self.feature_gates
                .extend(gates.iter().map(|g| (g.name.clone(), g.enabled)));
        }
        if f.write_config_to.is_none() {
            self.apply_deprecated_port_flags(f);
        }
        self.apply_logging_flags(f);
    }

    fn apply_ipvs_flags(&mut self, f: &Flags) {
        set_some(&mut self.ipvs.scheduler, f.ipvs_scheduler.clone());
        if f.ipvs_exclude_cidrs.is_some() {
            self.ipvs.exclude_cidrs = f.ipvs_exclude_cidrs.clone();
        }
        set_some(&mut self.ipvs.strict_arp, f.ipvs_strict_arp);
        set_some(&mut self.ipvs.tcp_timeout, f.ipvs_tcp_timeout);
        set_some(&mut self.ipvs.tcp_fin_timeout, f.ipvs_tcpfin_timeout);
        set_some(&mut self.ipvs.udp_timeout, f.ipvs_udp_timeout);
    }

    fn apply_conntrack_flags(&mut self, f: &Flags) {
        let c = &mut self.conntrack;
        set_some(&mut c.max_per_core, f.conntrack_max_per_core);
        set_some(&mut c.min, f.conntrack_min);
        set_some(
            &mut c.tcp_established_timeout,
            f.conntrack_tcp_timeout_established,
        );
        set_some(
            &mut c.tcp_close_wait_timeout,
            f.conntrack_tcp_timeout_close_wait,
        );
        set_some(&mut c.tcp_be_liberal, f.conntrack_tcp_be_liberal);
        set_some(&mut c.udp_timeout, f.conntrack_udp_timeout);
        set_some(&mut c.udp_stream_timeout, f.conntrack_udp_timeout_stream);
    }

    fn apply_client_flags(&mut self, f: &Flags) {
        set_some(&mut self.client.kubeconfig, f.kubeconfig.clone());
        set_some(
            &mut self.client.content_type,
            f.kube_api_content_type.clone(),
        );
        set_some(&mut self.client.burst, f.kube_api_burst);
        set_some(&mut self.client.qps, f.kube_api_qps);
    }

    /// `--healthz-port` / `--metrics-port`: 0 disables the server, any other
    /// port is appended to a bind address that has none (upstream's
    /// `addressFromDeprecatedFlags`).
    fn apply_deprecated_port_flags(&mut self, f: &Flags) {
        let port_addr = |addr: &str, port: i32| match u16::try_from(port) {
            Ok(0) => String::new(),
            Ok(p) => append_port_if_needed(addr, p),
            Err(_) => format!("{addr}:{port}"),
        };
        if let Some(port) = f.healthz_port {
            self.healthz_bind_address = port_addr(&self.healthz_bind_address, port);
        } else if f.healthz_bind_address.is_some() {
            self.healthz_bind_address =
                append_port_if_needed(&self.healthz_bind_address, HEALTHZ_PORT);
        }
        if let Some(port) = f.metrics_port {
            self.metrics_bind_address = port_addr(&self.metrics_bind_address, port);
        } else if f.metrics_bind_address.is_some() {
            self.metrics_bind_address =
                append_port_if_needed(&self.metrics_bind_address, METRICS_PORT);
        }
    }

    /// The logging flags, which win over the file even with `--config`.
    pub fn apply_logging_flags(&mut self, f: &Flags) {
        set(&mut self.verbosity, f.v);
        set(&mut self.vmodule, f.vmodule.clone());
        set(&mut self.log_flush_frequency, f.log_flush_frequency);
        set(&mut self.log_format, f.logging_format.clone());
    }

    /// Upstream's `platformApplyDefaults` (Linux): blank mode is iptables,
    /// nftables mode serves NodePorts on the primary IPs unless told
    /// otherwise, blank detect-local mode is ClusterCIDR.
    pub fn apply_platform_defaults(&mut self) {
        if self.mode.is_empty() {
            self.mode = "iptables".to_string();
        }
        if self.mode == "nftables" && self.node_port_addresses.is_empty() {
            self.node_port_addresses = vec![NODE_PORT_ADDRESSES_PRIMARY.to_string()];
        }
        if self.detect_local_mode.is_empty() {
            self.detect_local_mode = "ClusterCIDR".to_string();
        }
    }

    /// Back to a v1alpha1 file, as upstream's internal → v1alpha1
    /// conversion does: the sync periods go to the active mode's section
    /// only (the others show 0s) and masqueradeAll to iptables or nftables.
    pub fn to_file(&self) -> KubeProxyConfiguration {
        let zero = Some(GoDuration::ZERO);
        let nft_mode = self.mode == "nftables";
        let mut iptables = file::IptablesSection {
            localhost_node_ports: Some(self.localhost_node_ports),
            masquerade_all: Some(!nft_mode && self.masquerade_all),
            masquerade_bit: Some(self.iptables_masquerade_bit),
            min_sync_period: zero,
            sync_period: zero,
        };
        let mut nftables = file::NftablesSection {
            masquerade_all: Some(nft_mode && self.masquerade_all),
            masquerade_bit: Some(self.nftables_masquerade_bit),
            min_sync_period: zero,
            sync_period: zero,
        };
        let mut ipvs = file::IpvsSection {
            sync_period: zero,
            min_sync_period: zero,
            ..self.ipvs.clone()
        };
        let periods = (Some(self.sync_period), Some(self.min_sync_period));
        match self.mode.as_str() {
            "ipvs" => (ipvs.sync_period, ipvs.min_sync_period) = periods,
            "nftables" => (nftables.sync_period, nftables.min_sync_period) = periods,
            _ => (iptables.sync_period, iptables.min_sync_period) = periods,
        }
        KubeProxyConfiguration {
            api_version: Some(file::API_VERSION.to_string()),
            bind_address: Some(self.bind_address.clone()),
            bind_address_hard_fail: Some(self.bind_address_hard_fail),
            client_connection: Some(self.client.clone()),
            cluster_cidr: Some(self.cluster_cidrs.join(",")),
            config_sync_period: Some(self.config_sync_period),
            conntrack: Some(self.conntrack.clone()),
            detect_local: Some(file::DetectLocal {
                bridge_interface: Some(self.bridge_interface.clone()),
                interface_name_prefix: Some(self.interface_name_prefix.clone()),
            }),
            detect_local_mode: Some(self.detect_local_mode.clone()),
            enable_profiling: Some(self.enable_profiling),
            feature_gates: (!self.feature_gates.is_empty()).then(|| self.feature_gates.clone()),
            healthz_bind_address: Some(self.healthz_bind_address.clone()),
            hostname_override: Some(self.hostname_override.clone()),
            iptables: Some(iptables),
            ipvs: Some(ipvs),
            kind: Some(file::KIND.to_string()),
            logging: Some(self.logging_section()),
            metrics_bind_address: Some(self.metrics_bind_address.clone()),
            mode: Some(self.mode.clone()),
            nftables: Some(nftables),
            node_port_addresses: (!self.node_port_addresses.is_empty())
                .then(|| self.node_port_addresses.clone()),
            oom_score_adj: Some(self.oom_score_adj),
            port_range: Some(self.port_range.clone()),
            show_hidden_metrics_for_version: Some(self.show_hidden_metrics_for_version.clone()),
            windows_run_as_service: self.windows_run_as_service,
            winkernel: Some(self.winkernel.clone()),
        }
    }

    fn logging_section(&self) -> file::Logging {
        let vmodule: Vec<file::VModuleItem> = self
            .vmodule
            .split(',')
            .filter_map(|item| item.split_once('='))
            .map(|(pattern, level)| file::VModuleItem {
                file_pattern: Some(pattern.to_string()),
                verbosity: level.parse().ok(),
            })
            .collect();
        file::Logging {
            flush_frequency: Some(self.log_flush_frequency),
            format: Some(self.log_format.clone()),
            options: Some(self.log_options.clone()),
            verbosity: Some(self.verbosity),
            vmodule: (!vmodule.is_empty()).then_some(vmodule),
        }
    }
}

/// Overwrites `target` when the flag was given.
fn set<T>(target: &mut T, flag: Option<T>) {
    if let Some(v) = flag {
        *target = v;
    }
}

/// Overwrites an optional `target` when the flag was given.
fn set_some<T>(target: &mut Option<T>, flag: Option<T>) {
    if flag.is_some() {
        *target = flag;
    }
}

fn default_client(c: file::ClientConnection) -> file::ClientConnection {
    file::ClientConnection {
        accept_content_types: Some(c.accept_content_types.unwrap_or_default()),
        burst: Some(or_default(c.burst, 10)),
        content_type: Some(or_default(
            c.content_type,
            "application/vnd.kubernetes.protobuf".to_string(),
        )),
        kubeconfig: Some(c.kubeconfig.unwrap_or_default()),
        qps: Some(or_default(c.qps, 5.0)),
    }
}

fn default_conntrack(c: file::Conntrack) -> file::Conntrack {
    file::Conntrack {
        max_per_core: Some(c.max_per_core.unwrap_or(32 * 1024)),
        min: Some(c.min.unwrap_or(128 * 1024)),
        tcp_be_liberal: Some(c.tcp_be_liberal.unwrap_or_default()),
        tcp_close_wait_timeout: Some(
            c.tcp_close_wait_timeout
                .unwrap_or(GoDuration::from_secs(3600)),
        ),
        tcp_established_timeout: Some(
            c.tcp_established_timeout
                .unwrap_or(GoDuration::from_secs(24 * 3600)),
        ),
        udp_stream_timeout: Some(c.udp_stream_timeout.unwrap_or_default()),
        udp_timeout: Some(c.udp_timeout.unwrap_or_default()),
    }
}

fn default_log_options(o: file::LoggingOptions) -> file::LoggingOptions {
    let fill = |out: Option<file::OutputOptions>| {
        let out = out.unwrap_or_default();
        Some(file::OutputOptions {
            info_buffer_size: Some(out.info_buffer_size.unwrap_or(file::Quantity("0".into()))),
            split_stream: out.split_stream,
        })
    };
    file::LoggingOptions {
        json: fill(o.json),
        text: fill(o.text),
    }
}

fn default_winkernel(w: file::Winkernel) -> file::Winkernel {
    file::Winkernel {
        enable_dsr: Some(w.enable_dsr.unwrap_or_default()),
        forward_health_check_vip: Some(w.forward_health_check_vip.unwrap_or_default()),
        network_name: Some(w.network_name.unwrap_or_default()),
        root_hns_endpoint_name: Some(w.root_hns_endpoint_name.unwrap_or_default()),
        source_vip: Some(w.source_vip.unwrap_or_default()),
    }
}

fn vmodule_text(items: Vec<file::VModuleItem>) -> String {
    items
        .into_iter()
        .map(|i| {
            format!(
                "{}={}",
                i.file_pattern.unwrap_or_default(),
                i.verbosity.unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join(",")
}
