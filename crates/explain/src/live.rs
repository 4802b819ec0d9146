//! The one part of `explain` that reads the kernel: `iptables-save` (or
//! `iptables-legacy-save`; `ip6tables-save` for IPv6), `ipset save`, IPVS
//! over netlink, and our nftables tables (`ip` and `ip6 kube-proxy`) over
//! netlink, in the network namespace of the calling thread. Each reader
//! reads one IP family: the one of the packet or of the Service's address.

use crate::error::ExplainError;
use model::IpFamily;
use nftables::{Family, NftSocket, TableContents};
use std::process::Command;

/// Which iptables backend's rules to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IptablesBackend {
    /// `iptables-nft-save`.
    Nft,
    /// `iptables-legacy-save`.
    Legacy,
}

impl IptablesBackend {
    /// The backend's save tool for `family` (`iptables-nft-save`,
    /// `ip6tables-legacy-save`, ...).
    pub fn save_program(self, family: IpFamily) -> &'static str {
        match (self, family) {
            (IptablesBackend::Nft, IpFamily::V4) => "iptables-nft-save",
            (IptablesBackend::Legacy, IpFamily::V4) => "iptables-legacy-save",
            (IptablesBackend::Nft, IpFamily::V6) => "ip6tables-nft-save",
            (IptablesBackend::Legacy, IpFamily::V6) => "ip6tables-legacy-save",
        }
    }
}

/// Our nftables table's family for an IP family.
pub fn nft_family(family: IpFamily) -> Family {
    match family {
        IpFamily::V4 => Family::Ip,
        IpFamily::V6 => Family::Ip6,
    }
}

/// `iptables-save` (`ip6tables-save` for IPv6) output of `backend`, or
/// (`None`) of the first backend that holds a `KUBE-SERVICES` chain, nft
/// first.
pub fn iptables_save(backend: Option<IptablesBackend>, family: IpFamily) -> Result<String, ExplainError> {
    let candidates: &[IptablesBackend] = match backend {
        Some(IptablesBackend::Nft) => &[IptablesBackend::Nft],
        Some(IptablesBackend::Legacy) => &[IptablesBackend::Legacy],
        None => &[IptablesBackend::Nft, IptablesBackend::Legacy],
    };
    let mut last = None;
    for candidate in candidates {
        let program = candidate.save_program(family);
        let text = match run(program, &[]) {
            Ok(text) => text,
            Err(e) if backend.is_some() => return Err(e),
            Err(_) => continue, // that backend's tools are not installed
        };
        if text.contains(":KUBE-SERVICES") || backend.is_some() {
            return Ok(text);
        }
        last = Some(program);
    }
    Err(ExplainError::NothingProgrammed(format!("iptables ({} found no KUBE-SERVICES chain)", last.unwrap_or("iptables-save"))))
}

/// `ipset save` output (IPVS mode's sets).
pub fn ipset_save() -> Result<String, ExplainError> {
    run("ipset", &["save"])
}

/// Our nftables table (`ip kube-proxy` or `ip6 kube-proxy`) as the
/// kernel holds it, read over netlink.
pub fn nftables_table(family: Family) -> Result<TableContents, ExplainError> {
    let live = |e: nftables::Error| ExplainError::Live { what: format!("list table {} kube-proxy", family.name()), reason: e.to_string() };
    let mut socket = NftSocket::connect().map_err(live)?;
    socket
        .list_table(family, "kube-proxy")
        .map_err(live)?
        .ok_or_else(|| ExplainError::NothingProgrammed(format!("nftables (no table {} kube-proxy)", family.name())))
}

fn run(program: &str, args: &[&str]) -> Result<String, ExplainError> {
    let what = || format!("{program} {}", args.join(" ")).trim().to_string();
    let output = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| ExplainError::Live { what: what(), reason: e.to_string() })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
        return Err(ExplainError::Live { what: what(), reason: format!("{}: {stderr}", output.status) });
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// IPVS mode's state of `family` as the kernel holds it: virtual and real
/// servers over IPVS netlink, the addresses of `kube-ipvs0`, `ipset save`
/// (both families' sets: each family's rules name only its own) and the
/// companion rules (`iptables-save` or `ip6tables-save`).
pub async fn ipvs_dump(backend: Option<IptablesBackend>, family: IpFamily) -> Result<crate::ipvs::IpvsDump, ExplainError> {
    let live = |what: &str, e: ipvs::Error| ExplainError::Live { what: what.to_string(), reason: e.to_string() };
    let socket = ipvs::IpvsSocket::connect().await.map_err(|e| live("IPVS netlink", e))?;
    let mut virtual_servers = Vec::new();
    for vs in socket.services().await.map_err(|e| live("list IPVS services", e))? {
        if IpFamily::of(vs.key.address) != family || vs.key.fwmark != 0 {
            continue;
        }
        let protocol = match vs.key.protocol {
            ipvs::IpProtocol::Tcp => model::Protocol::Tcp,
            ipvs::IpProtocol::Udp => model::Protocol::Udp,
            ipvs::IpProtocol::Sctp => model::Protocol::Sctp,
            _ => continue,
        };
        let reals = socket.destinations(&vs.key).await.map_err(|e| live("list IPVS real servers", e))?;
        virtual_servers.push(crate::tracer::VirtualService {
            protocol,
            address: std::net::SocketAddr::new(vs.key.address, vs.key.port),
            scheduler: vs.scheduler.clone(),
            persistent: vs.flags.contains(ipvs::ServiceFlags::PERSISTENT).then_some(vs.timeout),
            real_servers: reals.iter().map(|rs| (std::net::SocketAddr::new(rs.address, rs.port), rs.weight)).collect(),
        });
    }
    Ok(crate::ipvs::IpvsDump {
        virtual_servers,
        bound: dummy_addresses()?.into_iter().filter(|a| IpFamily::of(*a) == family).collect(),
        ipsets: ipset_save()?,
        iptables: iptables_save(backend, family)?,
    })
}

/// Whether IPVS mode's dummy link `kube-ipvs0` exists (IPVS mode runs,
/// or ran, here).
pub fn ipvs_link_exists() -> bool {
    run("ip", &["-o", "link", "show", "dev", "kube-ipvs0"]).is_ok()
}

/// The addresses on `kube-ipvs0` (`ip -o addr show dev kube-ipvs0`).
fn dummy_addresses() -> Result<Vec<std::net::IpAddr>, ExplainError> {
    let text = run("ip", &["-o", "addr", "show", "dev", "kube-ipvs0"])?;
    Ok(text
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace().skip_while(|w| *w != "inet" && *w != "inet6");
            words.next()?;
            words.next()?.split('/').next()?.parse().ok()
        })
        .collect())
}
