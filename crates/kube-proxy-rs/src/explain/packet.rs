//! `explain packet`: reads the rules (kernel or file), walks the packet,
//! prints the explanation.

use super::args::{Backend, Mode, Output, PacketArgs, Source};
use anyhow::{Context, bail};
use explain::{Explanation, Node, Query, Sender};
use model::IpFamily;
use std::net::{IpAddr, SocketAddr};

/// The explanation of the packet `args` describes, formatted.
pub fn run(args: &PacketArgs) -> anyhow::Result<String> {
    let node = node(&args.source_of_rules)?;
    let query = query(args, &node)?;
    if query.source.is_ipv4() != query.destination.is_ipv4() {
        bail!("source {} and destination {} are of different IP families", query.source.ip(), query.destination.ip());
    }
    let rules = Rules::read(&args.source_of_rules, IpFamily::of(query.destination.ip()))?;
    let explanation = rules.explain(&node, &query)?.assuming(node.assumptions(&query));
    format(&explanation, args.source_of_rules.output)
}

/// Prints an explanation as text or JSON.
fn format(explanation: &Explanation, output: Output) -> anyhow::Result<String> {
    Ok(match output {
        Output::Text => explanation.to_string(),
        Output::Json => format!("{}\n", serde_json::to_string_pretty(explanation)?),
    })
}

/// The rules of one mode, as read.
#[derive(Clone)]
pub enum Rules {
    /// `iptables-save` text.
    Iptables(String),
    /// nftables tables.
    Nftables(Vec<nftables::TableContents>),
    /// IPVS mode's virtual servers, ipsets and rules.
    Ipvs(explain::ipvs::IpvsDump),
}

impl Rules {
    /// Reads the rules `source` names: the file (whatever families it
    /// holds), else the kernel's rules of `family`.
    pub fn read(source: &Source, family: IpFamily) -> anyhow::Result<Self> {
        match &source.from_file {
            Some(path) => Self::from_file(path, source.mode),
            None => Self::live(source, family),
        }
    }

    fn from_file(path: &std::path::Path, mode: Option<Mode>) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
        let json = text.trim_start().starts_with('{');
        let detected = match (text.starts_with("# virtual servers"), json) {
            (true, _) => Mode::Ipvs,
            (false, true) => Mode::Nftables,
            (false, false) => Mode::Iptables,
        };
        match mode.unwrap_or(detected) {
            Mode::Ipvs => Ok(Rules::Ipvs(
                explain::ipvs::IpvsDump::parse(&text).with_context(|| format!("{} (IPVS dump)", path.display()))?,
            )),
            Mode::Nftables if json => Ok(Rules::Nftables(
                explain::nft::json::tables(&text).with_context(|| format!("{} (nft -j list ruleset)", path.display()))?,
            )),
            Mode::Nftables => bail!("{}: nftables mode needs `nft -j list ruleset` output (JSON)", path.display()),
            Mode::Iptables if !json => Ok(Rules::Iptables(text)),
            Mode::Iptables => bail!("{}: iptables mode needs iptables-save output, not JSON", path.display()),
        }
    }

    /// The kernel's rules of `family`; without `--mode`, nftables when our
    /// table of the family (or, for IPv6, of IPv4: the proxy runs one mode)
    /// exists, else IPVS when `kube-ipvs0` exists and IPVS can be read,
    /// else iptables.
    fn live(source: &Source, family: IpFamily) -> anyhow::Result<Self> {
        let nft = || explain::live::nftables_table(explain::live::nft_family(family));
        let iptables = || explain::live::iptables_save(backend(source), family);
        match source.mode {
            Some(Mode::Nftables) => Ok(Rules::Nftables(vec![nft()?])),
            Some(Mode::Iptables) => Ok(Rules::Iptables(iptables()?)),
            Some(Mode::Ipvs) => Ok(Rules::Ipvs(live_ipvs(backend(source), family)?)),
            None => match nft() {
                Ok(table) => Ok(Rules::Nftables(vec![table])),
                Err(e) if family == IpFamily::V6 && explain::live::nftables_table(nftables::Family::Ip).is_ok() => Err(e.into()),
                Err(_) => match explain::live::ipvs_link_exists().then(|| live_ipvs(backend(source), family)) {
                    Some(Ok(dump)) => Ok(Rules::Ipvs(dump)),
                    _ => Ok(Rules::Iptables(iptables()?)),
                },
            },
        }
    }

    /// Walks `query` on `node` through these rules.
    pub fn explain(&self, node: &Node, query: &Query) -> anyhow::Result<Explanation> {
        Ok(match self {
            Rules::Iptables(save) => explain::iptables::explain_packet(save, None, node, query)?,
            Rules::Nftables(tables) => explain::nft::explain_packet(tables, node, query)?,
            Rules::Ipvs(dump) => explain::ipvs::explain_packet(dump, node, query)?,
        })
    }
}

/// IPVS mode's state of `family` as the kernel holds it now.
pub fn live_ipvs(backend: Option<explain::live::IptablesBackend>, family: IpFamily) -> anyhow::Result<explain::ipvs::IpvsDump> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().context("cannot start the async runtime")?;
    Ok(runtime.block_on(explain::live::ipvs_dump(backend, family))?)
}

/// The live reader's backend for the command line's choice.
pub fn backend_of(choice: Option<Backend>) -> Option<explain::live::IptablesBackend> {
    choice.map(|b| match b {
        Backend::Legacy => explain::live::IptablesBackend::Legacy,
        Backend::Nft => explain::live::IptablesBackend::Nft,
    })
}

fn backend(source: &Source) -> Option<explain::live::IptablesBackend> {
    backend_of(source.iptables_backend)
}

/// The node: `--node-ip`s, else (live) the kernel's addresses; from a
/// file without `--node-ip`, unknown (the explanation says what that
/// assumed).
pub fn node(source: &Source) -> anyhow::Result<Node> {
    if !source.node_ips.is_empty() {
        return Ok(Node::new(source.node_ips.iter().copied()));
    }
    if source.from_file.is_some() {
        return Ok(Node::unknown());
    }
    Ok(Node::new(super::local_addresses(None)?))
}

fn query(args: &PacketArgs, node: &Node) -> anyhow::Result<Query> {
    let protocol = match args.protocol.to_ascii_lowercase().as_str() {
        "tcp" => model::Protocol::Tcp,
        "udp" => model::Protocol::Udp,
        "sctp" => model::Protocol::Sctp,
        other => bail!("protocol `{other}`: expected tcp, udp or sctp"),
    };
    let source = parse_source(&args.source)?;
    let destination: SocketAddr =
        args.destination.parse().with_context(|| format!("destination `{}`: expected ADDRESS:PORT", args.destination))?;
    let sender = if args.from_pod {
        Sender::Pod
    } else if args.from_node || (!args.from_outside && node.addresses.contains(&source.ip())) {
        Sender::Node
    } else {
        Sender::Outside
    };
    Ok(Query { protocol, source, destination, sender, in_interface: args.in_interface.clone() })
}

/// `ADDRESS` or `ADDRESS:PORT` (`[v6]:PORT`); the port defaults to the
/// tracer's.
fn parse_source(text: &str) -> anyhow::Result<SocketAddr> {
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let ip: IpAddr = text.parse().with_context(|| format!("source `{text}`: expected ADDRESS or ADDRESS:PORT"))?;
    Ok(SocketAddr::new(ip, explain::tracer::DEFAULT_SOURCE_PORT))
}
