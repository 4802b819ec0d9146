//! The configuration as each mode's proxier takes it: plain mapping of
//! [`Config`] fields onto the mode crates' option types (shared parts —
//! backend, cluster CIDR, NodePort addresses — mapped once).

use crate::config::{Config, DetectLocal, IptablesBackend, NodePortAddresses};
use xtables::apply::{Backend, BackendChoice};
use model::IpFamily;
use std::time::Duration;

/// iptables mode's options for `family`.
pub fn iptables(config: &Config, family: IpFamily) -> iptables::proxier::ProxierOptions {
    iptables::proxier::ProxierOptions {
        backend: backend_choice(config.iptables_backend),
        render: iptables_render_options(config, family),
        route_localnet: wants_route_localnet(config, family),
    }
}

/// nftables mode's options for `family`: the shared options (where
/// `nodePortAddresses` unset already means `primary` in this mode, as the
/// configuration's defaults say), no localhost NodePorts (upstream's
/// nftables mode has none), and no service CIDRs here: they come from the
/// cluster's ServiceCIDR objects, with each snapshot.
pub fn nftables(config: &Config, family: IpFamily) -> nftables::proxier::ProxierOptions {
    nftables::proxier::ProxierOptions {
        render: nftables_render_options(config, family),
        max_anonymous_sets_per_transaction: Some(nftables::proxier::MAX_ANONYMOUS_SETS_PER_TRANSACTION),
    }
}

/// nftables mode's render options from the configuration.
pub fn nftables_render_options(config: &Config, family: IpFamily) -> nftables::render::RenderOptions {
    nftables::render::RenderOptions {
        common: plan::Options { localhost_nodeports: false, ..plan_options(config, family) },
        service_cidrs: Vec::new(),
        shared_endpoint_maps: config.nftables_shared_endpoint_maps,
    }
}

/// Userspace mode's options for `family`: the shared options (localhost
/// NodePorts as `--iptables-localhost-nodeports` says; they need no
/// `route_localnet` here).
pub fn userspace(config: &Config, family: IpFamily) -> userspace::proxier::ProxierOptions {
    userspace::proxier::ProxierOptions { backend: backend_choice(config.iptables_backend), plan: plan_options(config, family) }
}

/// Userspace mode's data path: `--proxy-port-range`, `--udp-timeout`.
pub fn forwarder(config: &Config) -> forward::ForwarderOptions {
    forward::ForwarderOptions { port_range: config.proxy_port_range, udp_idle_timeout: config.udp_idle_timeout }
}

/// IPVS mode's options for `family`.
pub fn ipvs(config: &Config, family: IpFamily) -> ipvs::proxier::ProxierOptions {
    ipvs::proxier::ProxierOptions {
        backend: backend_choice(config.iptables_backend),
        apply: ipvs_apply_options(config),
        setup: ipvs::apply::KernelSetup { strict_arp: config.ipvs.strict_arp, timeouts: ipvs_timeouts(config) },
        render: ipvs::render::RenderOptions {
            common: plan_options(config, family),
            scheduler: config.ipvs.scheduler,
            ..ipvs::render::RenderOptions::default()
        },
    }
}

/// The IPVS applier's options (`--ipvs-exclude-cidrs`), also for cleanups.
pub fn ipvs_apply_options(config: &Config) -> ipvs::apply::ApplyOptions {
    ipvs::apply::ApplyOptions { exclude_cidrs: config.ipvs.exclude_cidrs.clone(), ..Default::default() }
}

/// iptables mode's render options from the configuration; the kernel
/// facts in them are left at their defaults (the proxier reads them).
pub fn iptables_render_options(config: &Config, family: IpFamily) -> iptables::render::RenderOptions {
    iptables::render::RenderOptions { common: plan_options(config, family), ..iptables::render::RenderOptions::default() }
}

/// Upstream sets `route_localnet` when localhost NodePorts are on (IPv4).
pub fn wants_route_localnet(config: &Config, family: IpFamily) -> bool {
    family == IpFamily::V4 && config.localhost_node_ports
}

/// The options every mode shares, from `config`.
fn plan_options(config: &Config, family: IpFamily) -> plan::Options {
    let local_detection = match &config.detect_local {
        DetectLocal::ClusterCidr(cidrs) => plan::LocalDetection::ClusterCidr(cidrs.clone()),
        DetectLocal::NodeCidr => plan::LocalDetection::NodeCidr,
        DetectLocal::BridgeInterface(name) => plan::LocalDetection::BridgeInterface(name.clone()),
        DetectLocal::InterfaceNamePrefix(prefix) => plan::LocalDetection::InterfaceNamePrefix(prefix.clone()),
    };
    let node_port_addresses = match &config.node_port_addresses {
        NodePortAddresses::All => plan::NodePortAddresses::All,
        NodePortAddresses::Primary => plan::NodePortAddresses::Primary,
        NodePortAddresses::Cidrs(cidrs) => plan::NodePortAddresses::Cidrs(cidrs.clone()),
    };
    plan::Options {
        family,
        local_detection,
        masquerade_all: config.masquerade_all,
        masquerade_bit: config.masquerade_bit,
        node_port_addresses,
        localhost_nodeports: config.localhost_node_ports,
    }
}

/// `--iptables-backend` as the applier spells it.
pub fn backend_choice(flag: IptablesBackend) -> BackendChoice {
    match flag {
        IptablesBackend::Auto => BackendChoice::Auto,
        IptablesBackend::Legacy => BackendChoice::Fixed(Backend::Legacy),
        IptablesBackend::Nft => BackendChoice::Fixed(Backend::Nft),
    }
}

/// The IPVS timeouts in seconds; 0 leaves the kernel's value.
fn ipvs_timeouts(config: &Config) -> ipvs::Timeouts {
    let secs = |d: Option<Duration>| d.map_or(0, |d| u32::try_from(d.as_secs()).unwrap_or(u32::MAX));
    ipvs::Timeouts {
        tcp: secs(config.ipvs.tcp_timeout),
        tcp_fin: secs(config.ipvs.tcp_fin_timeout),
        udp: secs(config.ipvs.udp_timeout),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::flags::Flags;

    fn config(args: &[&str]) -> Config {
        let all: Vec<&str> = std::iter::once("kube-proxy-rs").chain(args.iter().copied()).collect();
        crate::config::load(&Flags::parse_from_args(all).unwrap()).unwrap().config
    }

    #[test]
    fn nftables_mode_serves_nodeports_on_primary_ips_and_never_on_localhost() {
        let config = config(&["--proxy-mode=nftables", "--iptables-localhost-nodeports=true", "--masquerade-all"]);
        let opts = nftables_render_options(&config, IpFamily::V4);
        assert_eq!(opts.common.node_port_addresses, plan::NodePortAddresses::Primary);
        assert!(!opts.common.localhost_nodeports, "upstream's nftables mode has no localhost NodePorts");
        assert!(opts.common.masquerade_all);
        assert!(opts.service_cidrs.is_empty());
        assert_eq!(nftables(&config, IpFamily::V4).max_anonymous_sets_per_transaction, Some(1000));
    }

    #[test]
    fn nftables_mode_uses_shared_endpoint_maps_unless_told_false() {
        for (args, shared) in [
            (&["--proxy-mode=nftables"][..], true),
            (&["--proxy-mode=nftables", "--nftables-shared-endpoint-maps"], true),
            (&["--proxy-mode=nftables", "--nftables-shared-endpoint-maps=false"], false),
        ] {
            assert_eq!(nftables_render_options(&config(args), IpFamily::V4).shared_endpoint_maps, shared, "{args:?}");
        }
    }

    #[test]
    fn nftables_mode_keeps_explicit_nodeport_addresses_and_uses_its_own_masquerade_bit() {
        let config = config(&["--proxy-mode=nftables", "--nodeport-addresses=192.168.0.0/16", "--iptables-masquerade-bit=3"]);
        let opts = nftables_render_options(&config, IpFamily::V4);
        let cidrs = plan::NodePortAddresses::Cidrs(vec!["192.168.0.0/16".parse().unwrap()]);
        assert_eq!(opts.common.node_port_addresses, cidrs);
        // --iptables-masquerade-bit sets iptables.masqueradeBit only; nftables.masqueradeBit defaults to 14.
        assert_eq!(opts.common.masquerade_bit, 14);
    }

    #[test]
    fn each_family_detects_pods_by_its_own_cluster_cidr_and_serves_node_ports_on_its_own_addresses() {
        let config = config(&["--cluster-cidr=10.244.0.0/16,fd00:244::/64", "--nodeport-addresses=192.168.0.0/24,fd00:192::/64"]);
        let mut snapshot = model::Snapshot::default();
        snapshot.node.addresses = vec!["192.168.0.2".parse().unwrap(), "fd00:192::2".parse().unwrap()];
        let facts = plan::NodeFacts {
            local_addresses: ["192.168.0.2", "10.0.0.1", "fd00:192::2", "fd00:1::1"].iter().map(|a| a.parse().unwrap()).collect(),
        };
        for (family, pods, node_ip) in [(IpFamily::V4, "10.244.0.0/16", "192.168.0.2"), (IpFamily::V6, "fd00:244::/64", "fd00:192::2")] {
            let opts = iptables_render_options(&config, family);
            let context = plan::SyncContext::new(&snapshot, &opts.common, &facts);
            assert_eq!(context.family, family);
            assert_eq!(context.local_traffic, Some(plan::LocalTraffic::Cidr(pods.parse().unwrap())), "{family}");
            assert_eq!(context.node_ip, Some(node_ip.parse().unwrap()), "{family}");
            assert_eq!(context.node_ports, plan::NodePorts::Only(vec![node_ip.parse().unwrap()]), "{family}");
        }
    }

    #[test]
    fn an_ipv4_only_cluster_cidr_leaves_the_ipv6_proxier_without_pod_detection_as_upstream() {
        let config = config(&["--cluster-cidr=10.244.0.0/16"]);
        let opts = iptables_render_options(&config, IpFamily::V6);
        let context = plan::SyncContext::new(&model::Snapshot::default(), &opts.common, &plan::NodeFacts::default());
        assert_eq!(context.local_traffic, None);
        assert!(!wants_route_localnet(&config, IpFamily::V6));
    }
}
