//! The `explain` command line.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::net::IpAddr;
use std::path::PathBuf;

/// Why does this packet go where it goes? What is programmed for this
/// Service, and does it differ from what the proxy would program?
#[derive(Debug, Parser)]
#[command(name = "kube-proxy-rs explain", bin_name = "kube-proxy-rs explain", max_term_width = 100)]
pub struct ExplainArgs {
    #[command(subcommand)]
    pub what: What,
}

#[derive(Debug, Subcommand)]
pub enum What {
    /// The path a new connection takes through the node's rules.
    Packet(PacketArgs),
    /// What is programmed for one Service, and its drift from the cluster state.
    Service(ServiceArgs),
    /// Write the rules in the form `--from-file` reads (IPVS mode: our dump
    /// format): the kernel's now, or with the proxy's flags after `--`, what
    /// the proxy would program.
    Dump(DumpArgs),
    /// What behaves otherwise after restarting the proxy in another mode,
    /// per Service, and why (the proxy's flags after `--`).
    Migrate(MigrateArgs),
}

/// `explain migrate`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// The mode to switch to.
    #[arg(long, value_enum)]
    pub to: Target,
    /// The IP family to compare.
    #[arg(long, value_enum, default_value_t)]
    pub family: Family,
    /// The pod address the probes come from; default: the 200th address
    /// of the cluster CIDR.
    #[arg(long = "pod-ip", value_name = "IP")]
    pub pod_ip: Option<IpAddr>,
    /// The outside client the probes come from; default: 203.0.113.10
    /// (2001:db8::a).
    #[arg(long = "client-ip", value_name = "IP")]
    pub client_ip: Option<IpAddr>,
    /// The interface outside clients arrive on; default: unknown
    /// (interface matches are explored both ways).
    #[arg(long = "client-interface", value_name = "IF")]
    pub client_interface: Option<String>,
    #[command(flatten)]
    pub source_of_rules: Source,
    /// The proxy's own flags after `--` (`--config`, `--manifests` or
    /// `--kubeconfig` …): the cluster state to probe, and the
    /// configuration of both modes.
    #[arg(last = true, value_name = "PROXY FLAGS")]
    pub proxy_flags: Vec<String>,
}

/// The mode `explain migrate` switches to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Target {
    /// nftables mode.
    Nftables,
    /// iptables mode.
    Iptables,
}

impl Target {
    /// The mode's name as reports spell it.
    pub fn mode_name(self) -> &'static str {
        match self {
            Target::Nftables => "nftables",
            Target::Iptables => "iptables",
        }
    }
}

/// `explain dump`.
#[derive(Debug, Args)]
pub struct DumpArgs {
    /// The mode whose rules to write.
    #[arg(long, value_enum)]
    pub mode: Mode,
    /// The node's addresses (repeatable; default: read from the kernel).
    #[arg(long = "node-ip", value_name = "IP")]
    pub node_ips: Vec<IpAddr>,
    /// iptables backend to read live; default: the one holding KUBE-SERVICES.
    #[arg(long = "iptables-backend", value_enum)]
    pub iptables_backend: Option<Backend>,
    /// The IP family whose rules to write.
    #[arg(long, value_enum, default_value_t)]
    pub family: Family,
    /// The proxy's own flags after `--`: write its rendering of that
    /// cluster state instead of the kernel's rules.
    #[arg(last = true, value_name = "PROXY FLAGS")]
    pub proxy_flags: Vec<String>,
}

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Output {
    /// Readable text.
    #[default]
    Text,
    /// JSON, for scripts.
    Json,
}

/// Which rules to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// iptables rules (`iptables-save`).
    Iptables,
    /// Our nftables table.
    Nftables,
    /// IPVS virtual servers, ipsets and companion rules.
    Ipvs,
}

/// An IP family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Family {
    /// IPv4 (`iptables-save`, table `ip kube-proxy`).
    #[default]
    Ipv4,
    /// IPv6 (`ip6tables-save`, table `ip6 kube-proxy`).
    Ipv6,
}

impl Family {
    /// The model's family.
    pub fn ip_family(self) -> model::IpFamily {
        match self {
            Family::Ipv4 => model::IpFamily::V4,
            Family::Ipv6 => model::IpFamily::V6,
        }
    }
}

/// Which iptables backend to read live.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// `iptables-legacy-save`.
    Legacy,
    /// `iptables-nft-save`.
    Nft,
}

/// Where the rules come from, shared by both subcommands.
#[derive(Debug, Args)]
pub struct Source {
    /// The mode whose rules to read; default: nftables when our table
    /// exists (or the file is nft JSON), IPVS when `kube-ipvs0` exists (or
    /// the file is an IPVS dump), else iptables.
    #[arg(long, value_enum)]
    pub mode: Option<Mode>,
    /// Read a saved dump instead of the kernel: `iptables-save` output,
    /// `nft -j list ruleset` output, or an IPVS dump (`explain dump --mode
    /// ipvs`). Needs no privileges.
    #[arg(long = "from-file", value_name = "FILE")]
    pub from_file: Option<PathBuf>,
    /// iptables backend to read live; default: the one holding KUBE-SERVICES.
    #[arg(long = "iptables-backend", value_enum)]
    pub iptables_backend: Option<Backend>,
    /// The node's addresses (repeatable); default: read from the kernel, or
    /// unknown with --from-file (only loopback is local, and the answer
    /// says so).
    #[arg(long = "node-ip", value_name = "IP")]
    pub node_ips: Vec<IpAddr>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t)]
    pub output: Output,
}

/// `explain packet`.
#[derive(Debug, Args)]
pub struct PacketArgs {
    /// `tcp`, `udp` or `sctp`.
    pub protocol: String,
    /// Source address, optionally with a port (`10.244.0.5` or `10.244.0.5:40000`).
    pub source: String,
    /// Destination address and port (`10.96.0.10:53`).
    pub destination: String,
    /// The packet comes from a pod on this node.
    #[arg(long = "from-pod", group = "sender")]
    pub from_pod: bool,
    /// The packet comes from a process on the node itself.
    #[arg(long = "from-node", group = "sender")]
    pub from_node: bool,
    /// The packet comes from outside the node (the default unless the
    /// source is one of the node's addresses).
    #[arg(long = "from-outside", group = "sender")]
    pub from_outside: bool,
    /// The interface the packet arrives on (unknown: interface matches are
    /// explored both ways).
    #[arg(long = "in-interface", value_name = "IF")]
    pub in_interface: Option<String>,
    #[command(flatten)]
    pub source_of_rules: Source,
}

/// `explain service`.
#[derive(Debug, Args)]
pub struct ServiceArgs {
    /// `namespace/name`.
    pub service: String,
    #[command(flatten)]
    pub source_of_rules: Source,
    /// The proxy's own flags after `--` (`--config`, `--manifests`,
    /// `--kubeconfig`, `--hostname-override` …): the cluster state to
    /// compare with, rendered as the proxy would. Needed in IPVS mode,
    /// whose virtual servers do not name their Service.
    #[arg(last = true, value_name = "PROXY FLAGS")]
    pub proxy_flags: Vec<String>,
}
