//! ipset contents for `-m set --match-set`: the sets IPVS mode matches in
//! its iptables rules (`KUBE-CLUSTER-IP`, `KUBE-LOOP-BACK`,
//! `KUBE-NODE-PORT-TCP` ...). Built in code or read from `ipset save`.

use super::error::TraceError;
use super::packet::Protocol;
use ipnet::IpNet;
use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

/// Set types the tracer can match (the ones kube-proxy creates).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IpSetKind {
    /// `hash:ip`
    HashIp,
    /// `hash:net`
    HashNet,
    /// `hash:ip,port`
    HashIpPort,
    /// `hash:net,port`
    HashNetPort,
    /// `hash:ip,port,ip`
    HashIpPortIp,
    /// `hash:ip,port,net`
    HashIpPortNet,
    /// `bitmap:port`
    BitmapPort,
}

/// One dimension of a set member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dim {
    /// An address (or a prefix, for `net` dimensions).
    Addr,
    /// A port (with a protocol, for hash types).
    Port,
}

impl IpSetKind {
    /// Parses the type name `ipset` uses (`hash:ip,port` ...).
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "hash:ip" => Self::HashIp,
            "hash:net" => Self::HashNet,
            "hash:ip,port" => Self::HashIpPort,
            "hash:net,port" => Self::HashNetPort,
            "hash:ip,port,ip" => Self::HashIpPortIp,
            "hash:ip,port,net" => Self::HashIpPortNet,
            "bitmap:port" => Self::BitmapPort,
            _ => return None,
        })
    }

    /// The type name as `ipset` prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::HashIp => "hash:ip",
            Self::HashNet => "hash:net",
            Self::HashIpPort => "hash:ip,port",
            Self::HashNetPort => "hash:net,port",
            Self::HashIpPortIp => "hash:ip,port,ip",
            Self::HashIpPortNet => "hash:ip,port,net",
            Self::BitmapPort => "bitmap:port",
        }
    }

    pub(crate) fn dims(self) -> &'static [Dim] {
        use Dim::{Addr, Port};
        match self {
            Self::HashIp | Self::HashNet => &[Addr],
            Self::HashIpPort | Self::HashNetPort => &[Addr, Port],
            Self::HashIpPortIp | Self::HashIpPortNet => &[Addr, Port, Addr],
            Self::BitmapPort => &[Port],
        }
    }
}

impl fmt::Display for IpSetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One dimension of one member.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Element {
    Net(IpNet),
    Ports { protocol: Option<Protocol>, first: u16, last: u16 },
}

/// What a packet offers to one dimension of a lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Key {
    /// An address.
    Addr(IpAddr),
    /// A port of a protocol.
    Port(Protocol, u16),
}

/// One ipset: its type and members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpSet {
    /// The set name.
    pub name: String,
    /// The set type.
    pub kind: IpSetKind,
    members: Vec<Vec<Element>>,
}

impl IpSet {
    /// An empty set.
    pub fn new(name: &str, kind: IpSetKind) -> Self {
        Self { name: name.to_string(), kind, members: Vec::new() }
    }

    /// Adds a member written as `ipset add` takes it: `10.0.0.1`,
    /// `10.0.0.0/24`, `10.0.0.1,tcp:80`, `10.0.0.1,tcp:80,10.0.0.1`,
    /// `30080` (bitmap:port), port ranges `a-b`.
    pub fn add(&mut self, entry: &str) -> Result<(), String> {
        let parts: Vec<&str> = entry.split(',').collect();
        let dims = self.kind.dims();
        if parts.len() != dims.len() {
            return Err(format!("{} needs {} comma-separated parts", self.kind, dims.len()));
        }
        let bitmap = self.kind == IpSetKind::BitmapPort;
        let member = parts
            .iter()
            .zip(dims)
            .map(|(part, dim)| match dim {
                Dim::Addr => parse_net(part),
                Dim::Port => parse_ports(part, bitmap),
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.members.push(member);
        Ok(())
    }

    /// Builder form of [`IpSet::add`].
    pub fn with(mut self, entry: &str) -> Result<Self, String> {
        self.add(entry)?;
        Ok(self)
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// True if the set has no members.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Does a member match `keys` (one per dimension, in order)?
    pub(crate) fn contains(&self, keys: &[Key]) -> bool {
        self.members.iter().any(|member| member.iter().zip(keys).all(|(element, key)| element_matches(element, key)))
    }
}

fn element_matches(element: &Element, key: &Key) -> bool {
    match (element, key) {
        (Element::Net(net), Key::Addr(ip)) => net.contains(ip),
        (Element::Ports { protocol, first, last }, Key::Port(proto, port)) => {
            protocol.is_none_or(|p| p == *proto) && (*first..=*last).contains(port)
        }
        _ => false,
    }
}

fn parse_net(text: &str) -> Result<Element, String> {
    if let Ok(net) = text.parse::<IpNet>() {
        return Ok(Element::Net(net));
    }
    text.parse::<IpAddr>()
        .map(|ip| Element::Net(IpNet::from(ip)))
        .map_err(|_| format!("`{text}` is not an address or prefix"))
}

fn parse_ports(text: &str, bitmap: bool) -> Result<Element, String> {
    let (protocol, range) = match text.split_once(':') {
        Some((proto, range)) => (Some(parse_protocol(proto)?), range),
        None if bitmap => (None, text),
        None => (Some(Protocol::Tcp), text),
    };
    let (first, last) = match range.split_once('-') {
        Some((a, b)) => (parse_port(a)?, parse_port(b)?),
        None => (parse_port(range)?, parse_port(range)?),
    };
    Ok(Element::Ports { protocol, first, last })
}

fn parse_protocol(text: &str) -> Result<Protocol, String> {
    match text {
        "tcp" => Ok(Protocol::Tcp),
        "udp" => Ok(Protocol::Udp),
        "sctp" => Ok(Protocol::Sctp),
        other => Err(format!("unsupported protocol `{other}`")),
    }
}

fn parse_port(text: &str) -> Result<u16, String> {
    text.parse().map_err(|_| format!("`{text}` is not a port"))
}

/// Every ipset the rules may name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IpSets {
    sets: BTreeMap<String, IpSet>,
}

impl IpSets {
    /// No sets.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) a set.
    pub fn insert(&mut self, set: IpSet) {
        self.sets.insert(set.name.clone(), set);
    }

    /// The set called `name`.
    pub fn get(&self, name: &str) -> Option<&IpSet> {
        self.sets.get(name)
    }

    /// Reads `ipset save` output (`create NAME TYPE ...` and
    /// `add NAME ENTRY ...` lines; options after the type or entry are
    /// ignored).
    pub fn parse_save(text: &str) -> Result<Self, TraceError> {
        let mut sets = Self::new();
        for (index, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            sets.apply_save_line(line).map_err(|reason| TraceError::IpsetSyntax {
                line: index + 1,
                text: raw.to_string(),
                reason,
            })?;
        }
        Ok(sets)
    }

    fn apply_save_line(&mut self, line: &str) -> Result<(), String> {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["create", name, kind, ..] => {
                let kind = IpSetKind::parse(kind).ok_or_else(|| format!("unsupported set type `{kind}`"))?;
                self.insert(IpSet::new(name, kind));
                Ok(())
            }
            ["add", name, entry, ..] => {
                let set = self.sets.get_mut(*name).ok_or_else(|| format!("set `{name}` is not created"))?;
                set.add(entry)
            }
            _ => Err("expected `create NAME TYPE` or `add NAME ENTRY`".to_string()),
        }
    }
}
