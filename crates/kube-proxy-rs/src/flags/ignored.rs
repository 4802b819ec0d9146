//! Which flags upstream ignores when `--config` is given: every flag bound
//! to a field of the config file. `--config` replaces that whole object with
//! the file's; only `--hostname-override`, `--master`, `--cleanup`,
//! `--init-only`, `--write-config-to`, the logging flags and our own flags
//! still apply.

use super::Flags;

/// Names of the file-mapped flags present on this command line.
pub fn given_file_flags(f: &Flags) -> Vec<&'static str> {
    let given: [(&'static str, bool); 40] = [
        ("--feature-gates", f.feature_gates.is_some()),
        ("--kubeconfig", f.kubeconfig.is_some()),
        ("--kube-api-content-type", f.kube_api_content_type.is_some()),
        ("--kube-api-burst", f.kube_api_burst.is_some()),
        ("--kube-api-qps", f.kube_api_qps.is_some()),
        ("--bind-address", f.bind_address.is_some()),
        ("--healthz-bind-address", f.healthz_bind_address.is_some()),
        ("--metrics-bind-address", f.metrics_bind_address.is_some()),
        (
            "--bind-address-hard-fail",
            f.bind_address_hard_fail.is_some(),
        ),
        ("--profiling", f.profiling.is_some()),
        (
            "--show-hidden-metrics-for-version",
            f.show_hidden_metrics_for_version.is_some(),
        ),
        ("--proxy-mode", f.proxy_mode.is_some()),
        (
            "--iptables-masquerade-bit",
            f.iptables_masquerade_bit.is_some(),
        ),
        ("--masquerade-all", f.masquerade_all.is_some()),
        (
            "--iptables-localhost-nodeports",
            f.iptables_localhost_nodeports.is_some(),
        ),
        ("--iptables-sync-period", f.iptables_sync_period.is_some()),
        (
            "--iptables-min-sync-period",
            f.iptables_min_sync_period.is_some(),
        ),
        ("--ipvs-sync-period", f.ipvs_sync_period.is_some()),
        ("--ipvs-min-sync-period", f.ipvs_min_sync_period.is_some()),
        ("--ipvs-scheduler", f.ipvs_scheduler.is_some()),
        ("--ipvs-exclude-cidrs", f.ipvs_exclude_cidrs.is_some()),
        ("--ipvs-strict-arp", f.ipvs_strict_arp.is_some()),
        ("--ipvs-tcp-timeout", f.ipvs_tcp_timeout.is_some()),
        ("--ipvs-tcpfin-timeout", f.ipvs_tcpfin_timeout.is_some()),
        ("--ipvs-udp-timeout", f.ipvs_udp_timeout.is_some()),
        ("--detect-local-mode", f.detect_local_mode.is_some()),
        ("--pod-bridge-interface", f.pod_bridge_interface.is_some()),
        (
            "--pod-interface-name-prefix",
            f.pod_interface_name_prefix.is_some(),
        ),
        ("--cluster-cidr", f.cluster_cidr.is_some()),
        ("--nodeport-addresses", f.nodeport_addresses.is_some()),
        ("--oom-score-adj", f.oom_score_adj.is_some()),
        ("--proxy-port-range", f.proxy_port_range.is_some()),
        (
            "--conntrack-max-per-core",
            f.conntrack_max_per_core.is_some(),
        ),
        ("--conntrack-min", f.conntrack_min.is_some()),
        (
            "--conntrack-tcp-timeout-established",
            f.conntrack_tcp_timeout_established.is_some(),
        ),
        (
            "--conntrack-tcp-timeout-close-wait",
            f.conntrack_tcp_timeout_close_wait.is_some(),
        ),
        (
            "--conntrack-tcp-be-liberal",
            f.conntrack_tcp_be_liberal.is_some(),
        ),
        ("--conntrack-udp-timeout", f.conntrack_udp_timeout.is_some()),
        (
            "--conntrack-udp-timeout-stream",
            f.conntrack_udp_timeout_stream.is_some(),
        ),
        ("--config-sync-period", f.config_sync_period.is_some()),
    ];
    let deprecated_ports = [
        ("--healthz-port", f.healthz_port.is_some()),
        ("--metrics-port", f.metrics_port.is_some()),
    ];
    given
        .into_iter()
        .chain(deprecated_ports)
        .filter(|(_, is_given)| *is_given)
        .map(|(name, _)| name)
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn lists_only_file_flags_that_were_given() {
        let f = Flags::parse_from_args([
            "kube-proxy-rs",
            "--config=x.yaml",
            "--proxy-mode=ipvs",
            "--masquerade-all",
            "--hostname-override=n",
            "-v=3",
            "--dry-run",
        ])
        .unwrap();
        assert_eq!(
            given_file_flags(&f),
            vec!["--proxy-mode", "--masquerade-all"]
        );
    }
}
