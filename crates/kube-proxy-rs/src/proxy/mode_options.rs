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
fn backend_choice(flag: IptablesBackend) -> BackendChoice {
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
