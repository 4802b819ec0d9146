//! Resolution tests: defaults, flag and file precedence, and one test per
//! kind of invalid value, each checking the name in the message.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::time::Duration;

use super::*;

fn flags(args: &[&str]) -> Flags {
    let mut all = vec!["kube-proxy-rs"];
    all.extend_from_slice(args);
    Flags::parse_from_args(all).unwrap()
}

fn load_args(args: &[&str]) -> Result<Loaded, ConfigError> {
    load(&flags(args))
}

fn config(args: &[&str]) -> Config {
    load_args(args).unwrap().config
}

fn error(args: &[&str]) -> String {
    load_args(args).unwrap_err().to_string()
}

/// Writes a config file (the header added) and returns its directory guard and path.
fn file(body: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.yaml");
    let text = format!(
        "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n{body}"
    );
    std::fs::write(&path, text).unwrap();
    (dir, path.display().to_string())
}

fn with_file(body: &str, extra: &[&str]) -> Result<Loaded, ConfigError> {
    let (_dir, path) = file(body);
    let arg = format!("--config={path}");
    let mut args = vec![arg.as_str()];
    args.extend_from_slice(extra);
    load_args(&args)
}

fn addr(s: &str) -> Option<SocketAddr> {
    Some(s.parse().unwrap())
}

#[test]
fn defaults_match_upstream() {
    let c = config(&[]);
    assert_eq!(c.mode, ProxyMode::Iptables);
    assert_eq!(c.sync_period, Duration::from_secs(30));
    assert_eq!(c.min_sync_period, Duration::from_secs(1));
    assert_eq!(c.masquerade_bit, 14);
    assert!(!c.masquerade_all);
    assert!(c.localhost_node_ports);
    assert_eq!(c.healthz_bind_address, addr("0.0.0.0:10256"));
    assert_eq!(c.metrics_bind_address, addr("127.0.0.1:10249"));
    assert_eq!(c.bind_address.to_string(), "0.0.0.0");
    assert_eq!(c.detect_local, DetectLocal::ClusterCidr(vec![]));
    assert_eq!(c.node_port_addresses, NodePortAddresses::All);
    assert_eq!(c.config_sync_period, Duration::from_secs(900));
    assert_eq!(c.oom_score_adj, -999);
    assert_eq!(c.conntrack.max_per_core, 32768);
    assert_eq!(c.conntrack.min, 131072);
    assert_eq!(
        c.conntrack.tcp_established_timeout,
        Some(Duration::from_secs(86400))
    );
    assert_eq!(
        c.conntrack.tcp_close_wait_timeout,
        Some(Duration::from_secs(3600))
    );
    assert_eq!((c.client.qps, c.client.burst), (5.0, 10));
    assert_eq!(c.client.content_type, "application/vnd.kubernetes.protobuf");
    assert_eq!(c.ipvs.scheduler, IpvsScheduler::RoundRobin);
    assert_eq!(c.iptables_backend, IptablesBackend::Auto);
    assert_eq!(c.hostname_override, None);
    assert!(!c.dry_run && !c.cleanup);
}

#[test]
fn flags_set_their_values() {
    let c = config(&[
        "--proxy-mode=iptables",
        "--cluster-cidr=10.0.0.0/8",
        "--masquerade-all",
        "--iptables-sync-period=1m",
        "--iptables-min-sync-period=0",
        "--iptables-masquerade-bit=5",
        "--iptables-localhost-nodeports=false",
        "--nodeport-addresses=192.168.0.0/16",
        "--hostname-override=Node-A ",
        "--healthz-bind-address=127.0.0.1",
        "--metrics-bind-address=[::1]:9999",
        "-v=4",
        "--manifests=/tmp/m.yaml",
        "--dry-run",
        "--iptables-backend=legacy",
    ]);
    assert_eq!(
        c.detect_local,
        DetectLocal::ClusterCidr(vec!["10.0.0.0/8".parse().unwrap()])
    );
    assert!(c.masquerade_all);
    assert_eq!(c.sync_period, Duration::from_secs(60));
    assert_eq!(c.min_sync_period, Duration::ZERO);
    assert_eq!(c.masquerade_bit, 5);
    assert!(!c.localhost_node_ports);
    assert_eq!(
        c.node_port_addresses,
        NodePortAddresses::Cidrs(vec!["192.168.0.0/16".parse().unwrap()])
    );
    assert_eq!(c.hostname_override.as_deref(), Some("node-a"));
    assert_eq!(
        c.healthz_bind_address,
        addr("127.0.0.1:10256"),
        "a bare IP gets the default port"
    );
    assert_eq!(c.metrics_bind_address, addr("[::1]:9999"));
    assert_eq!(c.logging.verbosity, 4);
    assert_eq!(c.manifests, Some("/tmp/m.yaml".into()));
    assert!(c.dry_run);
    assert_eq!(c.iptables_backend, IptablesBackend::Legacy);
}

#[test]
fn period_flags_follow_the_mode() {
    let loaded = load_args(&[
        "--proxy-mode=ipvs",
        "--ipvs-sync-period=10s",
        "--iptables-sync-period=5s",
    ])
    .unwrap();
    assert_eq!(loaded.config.sync_period, Duration::from_secs(10));
    assert_eq!(loaded.config.min_sync_period, Duration::from_secs(1));
    assert!(
        loaded
            .warnings
            .iter()
            .any(|w| w.contains("--iptables-sync-period")),
        "{:?}",
        loaded.warnings
    );
    let nft = config(&["--proxy-mode=nftables", "--iptables-sync-period=7s"]);
    assert_eq!(nft.sync_period, Duration::from_secs(7));
    assert_eq!(nft.node_port_addresses, NodePortAddresses::Primary);
}

#[test]
fn deprecated_port_flags() {
    let c = config(&["--healthz-port=0", "--metrics-port=1234"]);
    assert_eq!(c.healthz_bind_address, None);
    assert_eq!(
        c.metrics_bind_address,
        addr("127.0.0.1:10249"),
        "an address with a port keeps it"
    );
    let c = config(&["--metrics-bind-address=0.0.0.0", "--metrics-port=1234"]);
    assert_eq!(c.metrics_bind_address, addr("0.0.0.0:1234"));
    assert_eq!(
        config(&["--metrics-bind-address="]).metrics_bind_address,
        None
    );
}

#[test]
fn reference_files_resolve() {
    let ipt = support_path("iptables/kube-proxy-config.yaml");
    let c = config(&["--config", &ipt]);
    assert_eq!(c.mode, ProxyMode::Iptables);
    assert_eq!(c.hostname_override.as_deref(), Some("node-a"));
    assert_eq!(
        c.detect_local,
        DetectLocal::ClusterCidr(vec!["10.244.0.0/16".parse().unwrap()])
    );
    assert_eq!((c.client.qps, c.client.burst), (50.0, 100));
    assert_eq!(c.client.kubeconfig, Some("kubeconfig".into()));
    assert_eq!(c.healthz_bind_address, addr("127.0.0.1:10256"));
    assert_eq!(c.conntrack.max_per_core, 0, "an explicit 0 is kept");
    assert_eq!(
        c.conntrack.tcp_established_timeout, None,
        "0s: leave the kernel's value"
    );
    let nft = config(&["--config", &support_path("nftables/kube-proxy-config.yaml")]);
    assert_eq!(nft.mode, ProxyMode::Nftables);
    assert_eq!(nft.node_port_addresses, NodePortAddresses::Primary);
}

fn support_path(rel: &str) -> String {
    tests_support::reference_path(rel).display().to_string()
}

#[test]
fn write_config_matches_upstream_effective_files() {
    for mode in ["iptables", "nftables"] {
        let loaded = load_args(&[
            "--config",
            &support_path(&format!("{mode}/kube-proxy-config.yaml")),
        ])
        .unwrap();
        let want = std::fs::read_to_string(tests_support::reference_path(&format!(
            "{mode}/kube-proxy-config.effective.yaml"
        )))
        .unwrap();
        assert_eq!(loaded.effective_yaml().unwrap(), want, "{mode}");
    }
}

#[test]
fn effective_file_reads_back_to_the_same_config() {
    let loaded = load_args(&[
        "--proxy-mode=ipvs",
        "--ipvs-scheduler=wlc",
        "--ipvs-sync-period=10s",
        "--cluster-cidr=10.0.0.0/8,fd00::/48",
        "--masquerade-all",
        "--feature-gates=Foo=true",
    ])
    .unwrap();
    let (_dir, path) = file("");
    std::fs::write(&path, loaded.effective_yaml().unwrap()).unwrap();
    let again = load_args(&["--config", &path]).unwrap();
    assert_eq!(
        again.config,
        Config {
            config_file: Some(path.into()),
            ..loaded.config
        }
    );
}

#[test]
fn config_file_replaces_file_flags_with_a_warning() {
    let loaded = with_file(
        "mode: ipvs\nhostnameOverride: from-file\n",
        &[
            "--proxy-mode=nftables",
            "--masquerade-all",
            "--hostname-override=From-Flag",
            "-v=2",
            "--master=https://x",
        ],
    )
    .unwrap();
    let c = &loaded.config;
    assert_eq!(
        c.mode,
        ProxyMode::Ipvs,
        "--proxy-mode is ignored with --config"
    );
    assert!(!c.masquerade_all);
    assert_eq!(
        c.hostname_override.as_deref(),
        Some("from-flag"),
        "--hostname-override still wins"
    );
    assert_eq!(c.logging.verbosity, 2, "logging flags still win");
    assert_eq!(c.client.master.as_deref(), Some("https://x"));
    let w = loaded.warnings.join("\n");
    assert!(
        w.contains("--proxy-mode") && w.contains("--masquerade-all"),
        "{w}"
    );
    assert!(!w.contains("--hostname-override"), "{w}");
}

#[test]
fn file_zero_means_default_and_mode_picks_the_section() {
    let c = with_file("iptables:\n  syncPeriod: 0s\n  minSyncPeriod: 0s\n", &[])
        .unwrap()
        .config;
    assert_eq!(
        (c.sync_period, c.min_sync_period),
        (Duration::from_secs(30), Duration::from_secs(1))
    );
    let c = with_file(
        "mode: ipvs\niptables:\n  syncPeriod: 5s\n  masqueradeAll: true\nipvs:\n  syncPeriod: 20s\n  scheduler: sh\n  strictARP: true\n  excludeCIDRs: [10.9.0.0/16]\n  tcpTimeout: 900s\n",
        &[],
    )
    .unwrap()
    .config;
    assert_eq!(
        (c.sync_period, c.min_sync_period),
        (Duration::from_secs(20), Duration::ZERO)
    );
    assert!(c.masquerade_all, "ipvs mode reads iptables.masqueradeAll");
    assert_eq!(c.ipvs.scheduler, IpvsScheduler::SourceHashing);
    assert!(c.ipvs.strict_arp);
    assert_eq!(c.ipvs.exclude_cidrs, vec!["10.9.0.0/16".parse().unwrap()]);
    assert_eq!(c.ipvs.tcp_timeout, Some(Duration::from_secs(900)));
    let c = with_file(
        "mode: nftables\nnftables:\n  masqueradeAll: true\n  masqueradeBit: 3\n",
        &[],
    )
    .unwrap()
    .config;
    assert!(c.masquerade_all);
    assert_eq!(c.masquerade_bit, 3);
}

#[test]
fn period_errors_name_flag_or_field() {
    let e = error(&["--iptables-sync-period=0"]);
    assert_eq!(
        e,
        "--iptables-sync-period: invalid value \"0s\": must be greater than 0"
    );
    let e = error(&["--iptables-sync-period=-1s"]);
    assert!(
        e.starts_with("--iptables-sync-period: invalid value \"-1s\""),
        "{e}"
    );
    let e = error(&["--iptables-min-sync-period=-1s"]);
    assert!(
        e.contains("--iptables-min-sync-period") && e.contains("greater than or equal to 0"),
        "{e}"
    );
    let e = error(&[
        "--iptables-min-sync-period=1m",
        "--iptables-sync-period=30s",
    ]);
    assert!(e.contains("--iptables-min-sync-period: invalid value \"1m0s\": must be less than or equal to --iptables-sync-period (30s)"), "{e}");
    let e = error(&["--proxy-mode=ipvs", "--ipvs-sync-period=0s"]);
    assert!(e.starts_with("--ipvs-sync-period:"), "{e}");
    let e = with_file("iptables:\n  syncPeriod: -5s\n", &[])
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("iptables.syncPeriod: invalid value \"-5s\""),
        "{e}"
    );
    let e = with_file("iptables:\n  syncPeriod: 10s\n  minSyncPeriod: 20s\n", &[])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("iptables.minSyncPeriod") && e.contains("iptables.syncPeriod (10s)"),
        "{e}"
    );
    let e = error(&["--config-sync-period=-1s"]);
    assert!(e.starts_with("--config-sync-period:"), "{e}");
}

#[test]
fn masquerade_bit_range() {
    let e = error(&["--iptables-masquerade-bit=40"]);
    assert_eq!(
        e,
        "--iptables-masquerade-bit: invalid value \"40\": must be within the range [0, 31]"
    );
    let e = error(&["--iptables-masquerade-bit=-1"]);
    assert!(e.contains("range [0, 31]"), "{e}");
    let e = with_file("mode: nftables\nnftables:\n  masqueradeBit: 32\n", &[])
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("nftables.masqueradeBit"), "{e}");
    assert_eq!(config(&["--iptables-masquerade-bit=31"]).masquerade_bit, 31);
}

#[test]
fn mode_and_scheduler_names() {
    let e = error(&["--proxy-mode=kernelspace"]);
    assert!(
        e.starts_with(
            "--proxy-mode: invalid value \"kernelspace\": must be iptables, ipvs, nftables, userspace or blank"
        ),
        "{e}"
    );
    let e = with_file("mode: kernelspace\n", &[])
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("mode: invalid value \"kernelspace\""), "{e}");
    assert_eq!(config(&["--proxy-mode="]).mode, ProxyMode::Iptables);
    let e = error(&["--proxy-mode=ipvs", "--ipvs-scheduler=fifo"]);
    assert_eq!(
        e,
        "--ipvs-scheduler: invalid value \"fifo\": must be one of rr, wrr, lc, wlc, lblc, lblcr, sh, dh, sed, nq, mh (blank means rr)"
    );
    assert!(
        load_args(&["--ipvs-scheduler=fifo"]).is_ok(),
        "only checked in ipvs mode, as upstream"
    );
    for s in IpvsScheduler::ALL {
        let name = s.name();
        assert_eq!(
            config(&["--proxy-mode=ipvs", &format!("--ipvs-scheduler={name}")])
                .ipvs
                .scheduler,
            s
        );
        assert_eq!(s.name(), name);
    }
}

#[test]
fn addresses_and_cidrs() {
    let e = error(&["--cluster-cidr=10.0.0.0/33"]);
    assert!(
        e.starts_with("--cluster-cidr: invalid value \"10.0.0.0/33\": must be a valid CIDR block"),
        "{e}"
    );
    let e = error(&["--cluster-cidr=10.0.0.0/8,11.0.0.0/8"]);
    assert!(e.contains("dual-stack"), "{e}");
    let dual = config(&["--cluster-cidr=10.0.0.0/8,fd00::/48"]);
    assert!(matches!(dual.detect_local, DetectLocal::ClusterCidr(ref v) if v.len() == 2));
    let e = error(&["--healthz-bind-address=localhost:10256"]);
    assert!(
        e.starts_with("--healthz-bind-address: invalid value \"localhost:10256\""),
        "{e}"
    );
    let e = error(&["--metrics-bind-address=127.0.0.1:70000"]);
    assert!(e.contains("port in 1-65535"), "{e}");
    let e = error(&["--bind-address=300.1.1.1"]);
    assert!(e.starts_with("--bind-address:"), "{e}");
    let e = error(&["--nodeport-addresses=primary,10.0.0.0/8"]);
    assert!(e.contains("can't use both 'primary' and CIDRs"), "{e}");
    let e = with_file("nodePortAddresses: [10.0.0.0/8, bogus]\n", &[])
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("nodePortAddresses[1]: invalid value \"bogus\": must be a valid CIDR"),
        "{e}"
    );
    let e = with_file("mode: ipvs\nipvs:\n  excludeCIDRs: [nope]\n", &[])
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("ipvs.excludeCIDRs[0]"), "{e}");
    let e = with_file("healthzBindAddress: \"1.2.3.4:abc\"\n", &[])
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("healthzBindAddress:"), "{e}");
}

#[test]
fn detect_local_modes() {
    assert_eq!(
        config(&["--detect-local-mode=NodeCIDR"]).detect_local,
        DetectLocal::NodeCidr
    );
    let c = config(&[
        "--detect-local-mode=BridgeInterface",
        "--pod-bridge-interface=cbr0",
    ]);
    assert_eq!(c.detect_local, DetectLocal::BridgeInterface("cbr0".into()));
    let e = error(&["--detect-local-mode=BridgeInterface"]);
    assert!(
        e.starts_with("--pod-bridge-interface:") && e.contains("must not be empty"),
        "{e}"
    );
    let e = error(&["--detect-local-mode=Magic"]);
    assert!(
        e.starts_with("--detect-local-mode: invalid value \"Magic\""),
        "{e}"
    );
    let e = with_file("detectLocalMode: InterfaceNamePrefix\n", &[])
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("detectLocal.interfaceNamePrefix:"), "{e}");
}

#[test]
fn other_upstream_checks() {
    let e = error(&["--oom-score-adj=-1001"]);
    assert!(
        e.starts_with("--oom-score-adj:") && e.contains("[-1000, 1000]"),
        "{e}"
    );
    let e = error(&["--conntrack-min=-1"]);
    assert!(e.starts_with("--conntrack-min:"), "{e}");
    let e = error(&["--conntrack-tcp-timeout-established=-1s"]);
    assert!(e.starts_with("--conntrack-tcp-timeout-established:"), "{e}");
    let e = error(&["--kube-api-burst=-1"]);
    assert!(e.starts_with("--kube-api-burst:"), "{e}");
    let e = error(&["--proxy-mode=ipvs", "--ipvs-udp-timeout=-1s"]);
    assert!(e.starts_with("--ipvs-udp-timeout:"), "{e}");
    let e = error(&["--hostname-override=   "]);
    assert!(
        e.starts_with("--hostname-override:") && e.contains("blank"),
        "{e}"
    );
    let e = with_file("portRange: 2000-1000\n", &[])
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("portRange:"), "{e}");
    let e = error(&["--show-hidden-metrics-for-version=1.20"]);
    assert!(e.starts_with("--show-hidden-metrics-for-version:"), "{e}");
    let e = error(&["--logging-format=xml"]);
    assert!(e.starts_with("--logging-format:"), "{e}");
    let e = with_file("logging:\n  format: xml\n", &[])
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("logging.format:"), "{e}");
}

#[test]
fn every_problem_is_reported_at_once() {
    let e = error(&[
        "--iptables-masquerade-bit=40",
        "--proxy-mode=foo",
        "--cluster-cidr=x",
    ]);
    assert_eq!(e.lines().count(), 3, "{e}");
}

#[test]
fn file_problems_name_the_file() {
    let e = with_file("iptables:\n  syncPerod: 1s\n", &[])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("config.yaml") && e.contains("unknown field `syncPerod`"),
        "{e}"
    );
    let e = load_args(&["--config=/nonexistent/kp.yaml"])
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("--config: cannot read config file /nonexistent/kp.yaml"),
        "{e}"
    );
}

#[test]
fn userspace_mode_with_its_port_range_and_udp_timeout() {
    let c = config(&["--proxy-mode=userspace", "--proxy-port-range=40000-40100", "--udp-timeout=2s"]);
    assert_eq!(c.mode, ProxyMode::Userspace);
    assert_eq!(c.proxy_port_range, Some(forward::PortRange { first: 40000, last: 40100 }));
    assert_eq!(c.udp_idle_timeout, Duration::from_secs(2));
    let defaults = config(&["--proxy-mode=userspace"]);
    assert_eq!((defaults.proxy_port_range, defaults.udp_idle_timeout), (None, Duration::from_millis(250)));
    for (range, first, last) in [("40000+10", 40000, 40010), ("40005", 40005, 40005)] {
        let arg = format!("--proxy-port-range={range}");
        assert_eq!(config(&[&arg]).proxy_port_range, Some(forward::PortRange { first, last }), "{range}");
    }
    assert_eq!(config(&["--proxy-port-range=0-0"]).proxy_port_range, None, "0-0: any free port");
    let file = with_file("mode: userspace\nportRange: 30000-30009\n", &[]).unwrap().config;
    assert_eq!((file.mode, file.proxy_port_range), (ProxyMode::Userspace, Some(forward::PortRange { first: 30000, last: 30009 })));
}

#[test]
fn bad_userspace_values_name_their_flag() {
    for bad in ["--proxy-port-range=2000-1000", "--proxy-port-range=x", "--proxy-port-range=65535+1"] {
        let e = error(&["--proxy-mode=userspace", bad]);
        assert!(e.starts_with("--proxy-port-range:"), "{bad}: {e}");
    }
    for bad in ["--udp-timeout=0s", "--udp-timeout=-1s"] {
        let e = error(&["--proxy-mode=userspace", bad]);
        assert!(e.starts_with("--udp-timeout:"), "{bad}: {e}");
    }
}
