//! IPVS mode: virtual servers with their real servers, the ipsets and
//! the companion iptables rules, walked together (the iptables tracer
//! with IPVS between INPUT/OUTPUT and POSTROUTING).
//!
//! The dump format (ours, `kube-proxy-rs explain dump --mode ipvs` writes
//! it, `--from-file` reads it) is four sections, each starting with its
//! header line:
//!
//! ```text
//! # virtual servers            one per line as `ipvsadm -Ln` shows them:
//! TCP  10.96.10.10:80 rr       PROTO  ADDRESS:PORT SCHEDULER [persistent SECONDS]
//!   -> 10.244.0.11:8080 Masq 1   its real servers: ADDRESS:PORT FORWARD WEIGHT
//! # addresses on the dummy interface
//! 10.96.10.10                  the addresses bound to kube-ipvs0 (local to the node)
//! # ipsets
//! add KUBE-CLUSTER-IP 10.96.10.10,tcp:80    `ipset save` lines (upstream's sets
//!                              need no `create` line: their types are known)
//! # iptables
//! *nat …                       `iptables-save` output
//! ```
//!
//! It is also what `ipvs::render::IpvsState` prints, so a rendered plan
//! reads back the same way.

use crate::error::ExplainError;
use crate::explanation::Explanation;
use crate::node::Node;
use crate::query::Query;
use crate::tracer::{IpSets, Protocol, VirtualService, parse_rules, trace};
use std::collections::BTreeSet;
use std::fmt::Write;
use std::net::{IpAddr, SocketAddr};

/// The section headers, in order.
const VIRTUAL_SERVERS: &str = "# virtual servers";
const ADDRESSES: &str = "# addresses on the dummy interface";
const IPSETS: &str = "# ipsets";
const IPTABLES: &str = "# iptables";

/// What IPVS mode programmed on a node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IpvsDump {
    /// Virtual servers with their real servers.
    pub virtual_servers: Vec<VirtualService>,
    /// Addresses bound to `kube-ipvs0`.
    pub bound: Vec<IpAddr>,
    /// `ipset save` lines.
    pub ipsets: String,
    /// `iptables-save` output.
    pub iptables: String,
}

impl IpvsDump {
    /// Reads the dump format (see the module docs).
    pub fn parse(text: &str) -> Result<Self, ExplainError> {
        let mut dump = IpvsDump::default();
        let mut section = "";
        for (index, line) in text.lines().enumerate() {
            let bad = |reason: &str| ExplainError::IpvsDump { line: index + 1, text: line.to_string(), reason: reason.to_string() };
            if let Some(header) = [VIRTUAL_SERVERS, ADDRESSES, IPSETS, IPTABLES].into_iter().find(|h| line.starts_with(h)) {
                section = header;
                continue;
            }
            match section {
                VIRTUAL_SERVERS => dump.virtual_server_line(line).map_err(|r| bad(&r))?,
                ADDRESSES if !line.trim().is_empty() => dump.bound.push(line.trim().parse().map_err(|_| bad("not an address"))?),
                IPSETS => writeln!(dump.ipsets, "{line}").map_err(|_| bad("write"))?,
                IPTABLES => writeln!(dump.iptables, "{line}").map_err(|_| bad("write"))?,
                _ if line.trim().is_empty() || line.starts_with('#') => {}
                _ => return Err(bad("before the first section header (`# virtual servers`)")),
            }
        }
        if dump.virtual_servers.is_empty() && dump.iptables.trim().is_empty() {
            return Err(ExplainError::NothingProgrammed("the IPVS dump (no virtual server, no iptables rule)".to_string()));
        }
        Ok(dump)
    }

    fn virtual_server_line(&mut self, line: &str) -> Result<(), String> {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            [] => Ok(()),
            ["->", real, _forward, weight, ..] => {
                let vs = self.virtual_servers.last_mut().ok_or("a real server before any virtual server")?;
                let real: SocketAddr = real.parse().map_err(|_| format!("real server `{real}` is not ADDRESS:PORT"))?;
                vs.real_servers.push((real, weight.parse().map_err(|_| format!("weight `{weight}`"))?));
                Ok(())
            }
            [proto, address, scheduler, rest @ ..] => {
                let protocol = match *proto {
                    "TCP" => Protocol::Tcp,
                    "UDP" => Protocol::Udp,
                    "SCTP" => Protocol::Sctp,
                    other => return Err(format!("protocol `{other}` (fwmark services are not explained)")),
                };
                let persistent = match rest {
                    ["persistent", seconds, ..] => Some(seconds.parse().map_err(|_| format!("persistence `{seconds}`"))?),
                    _ => None,
                };
                let address = address.parse().map_err(|_| format!("virtual server `{address}` is not ADDRESS:PORT"))?;
                self.virtual_servers.push(VirtualService { protocol, address, scheduler: scheduler.to_string(), persistent, real_servers: Vec::new() });
                Ok(())
            }
            _ => Err("expected `PROTO ADDRESS:PORT SCHEDULER` or `-> ADDRESS:PORT FORWARD WEIGHT`".to_string()),
        }
    }

    /// The IP families of its virtual servers and bound addresses (IPv4
    /// when it has neither).
    pub fn families(&self) -> Vec<model::IpFamily> {
        let addresses = self.virtual_servers.iter().map(|vs| vs.address.ip()).chain(self.bound.iter().copied());
        let present: BTreeSet<model::IpFamily> = addresses.map(model::IpFamily::of).collect();
        if present.is_empty() { vec![model::IpFamily::V4] } else { present.into_iter().collect() }
    }

    /// The dump with only `family`'s virtual servers and bound addresses
    /// (the sets and rules are kept: each family's rules name only its
    /// own sets).
    pub fn only(&self, family: model::IpFamily) -> IpvsDump {
        IpvsDump {
            virtual_servers: self.virtual_servers.iter().filter(|vs| model::IpFamily::of(vs.address.ip()) == family).cloned().collect(),
            bound: self.bound.iter().filter(|a| model::IpFamily::of(**a) == family).copied().collect(),
            ..self.clone()
        }
    }

    /// The ipsets, with a `create` line for each of upstream's sets the
    /// text does not create (a set with no member has no `add` line, and
    /// the rules still match it).
    fn ipset_save(&self) -> String {
        let created: BTreeSet<&str> = self.ipsets.lines().filter_map(|l| l.strip_prefix("create ")?.split_whitespace().next()).collect();
        let mut creates = String::new();
        for set in ipvs::ipset::KubeSet::ALL {
            for family in [model::IpFamily::V4, model::IpFamily::V6] {
                let name = set.name(family);
                if !created.contains(name.as_str()) {
                    let _ = writeln!(creates, "create {name} {}", set.set_type().as_str());
                }
            }
        }
        creates + &self.ipsets
    }
}

impl std::fmt::Display for IpvsDump {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{VIRTUAL_SERVERS} ({})", self.virtual_servers.len())?;
        for vs in &self.virtual_servers {
            write!(f, "{}  {} {}", vs.protocol.to_string().to_uppercase(), vs.address, vs.scheduler)?;
            match vs.persistent {
                Some(seconds) => writeln!(f, " persistent {seconds}")?,
                None => writeln!(f)?,
            }
            for (real, weight) in &vs.real_servers {
                writeln!(f, "  -> {real} Masq {weight}")?;
            }
        }
        writeln!(f, "{ADDRESSES}")?;
        for address in &self.bound {
            writeln!(f, "{address}")?;
        }
        writeln!(f, "{IPSETS}")?;
        f.write_str(&self.ipsets)?;
        writeln!(f, "{IPTABLES}")?;
        f.write_str(&self.iptables)
    }
}

/// Explains `query` on `node` (whose addresses the dump's bound ones
/// join) through IPVS mode's `dump`.
pub fn explain_packet(dump: &IpvsDump, node: &Node, query: &Query) -> Result<Explanation, ExplainError> {
    let rules = parse_rules(&dump.iptables)?;
    let ctx = Node::new(node.addresses.iter().chain(&dump.bound).copied())
        .trace_context()
        .with_ipsets(IpSets::parse_save(&dump.ipset_save())?)
        .with_virtual_servers(dump.virtual_servers.clone());
    let verdict = trace(&rules, &ctx, &query.packet())?;
    Ok(Explanation::new("ipvs", query, &verdict))
}
