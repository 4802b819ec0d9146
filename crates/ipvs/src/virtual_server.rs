//! A virtual service as IPVS sees it (`ipvsadm -A`), independent of the
//! wire format, with its conversion to and from netlink attributes.

use crate::netlink::constants::*;
use crate::netlink::{FlagsAttr, ServiceAttr, Stats};
use netlink_packet_core::DecodeError;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Transport protocol of a virtual service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IpProtocol {
    /// TCP (6).
    Tcp,
    /// UDP (17).
    Udp,
    /// SCTP (132).
    Sctp,
    /// Any other IP protocol number (0 for fwmark services).
    Other(u16),
}

impl IpProtocol {
    /// The IP protocol number.
    pub fn number(self) -> u16 {
        match self {
            IpProtocol::Tcp => IPPROTO_TCP,
            IpProtocol::Udp => IPPROTO_UDP,
            IpProtocol::Sctp => IPPROTO_SCTP,
            IpProtocol::Other(n) => n,
        }
    }

    /// The protocol with IP number `n`.
    pub fn from_number(n: u16) -> Self {
        match n {
            IPPROTO_TCP => IpProtocol::Tcp,
            IPPROTO_UDP => IpProtocol::Udp,
            IPPROTO_SCTP => IpProtocol::Sctp,
            other => IpProtocol::Other(other),
        }
    }
}

impl From<model::Protocol> for IpProtocol {
    fn from(p: model::Protocol) -> Self {
        match p {
            model::Protocol::Tcp => IpProtocol::Tcp,
            model::Protocol::Udp => IpProtocol::Udp,
            model::Protocol::Sctp => IpProtocol::Sctp,
        }
    }
}

impl fmt::Display for IpProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IpProtocol::Tcp => f.write_str("TCP"),
            IpProtocol::Udp => f.write_str("UDP"),
            IpProtocol::Sctp => f.write_str("SCTP"),
            IpProtocol::Other(n) => write!(f, "proto-{n}"),
        }
    }
}

/// `IP_VS_SVC_F_*` flags of a virtual service.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServiceFlags(pub u32);

impl ServiceFlags {
    /// Persistent service: ClientIP session affinity (`ipvsadm -p`).
    pub const PERSISTENT: ServiceFlags = ServiceFlags(IP_VS_SVC_F_PERSISTENT);
    /// Set by the kernel on every listed service; never requested.
    pub const HASHED: ServiceFlags = ServiceFlags(IP_VS_SVC_F_HASHED);
    /// `mh` scheduler: hash the source port too (upstream's
    /// `FlagSourceHash`, `ipvsadm -b mh-port`).
    pub const SCHED_MH_PORT: ServiceFlags = ServiceFlags(IP_VS_SVC_F_SCHED2);

    /// Whether every bit of `other` is set.
    pub fn contains(self, other: ServiceFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for ServiceFlags {
    type Output = ServiceFlags;
    fn bitor(self, rhs: ServiceFlags) -> ServiceFlags {
        ServiceFlags(self.0 | rhs.0)
    }
}

/// What identifies a virtual service in the kernel: address, protocol and
/// port, or a firewall mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServiceKey {
    /// Virtual address (the unspecified address of the family for fwmark
    /// services).
    pub address: IpAddr,
    /// Protocol (`Other(0)` for fwmark services).
    pub protocol: IpProtocol,
    /// Port (0 for fwmark services).
    pub port: u16,
    /// Firewall mark; non-zero makes this a fwmark service.
    pub fwmark: u32,
}

impl ServiceKey {
    /// An address/protocol/port service.
    pub fn new(address: IpAddr, protocol: IpProtocol, port: u16) -> Self {
        Self { address, protocol, port, fwmark: 0 }
    }

    /// `AF_INET` or `AF_INET6`.
    pub fn family(&self) -> u16 {
        family_of(&self.address)
    }

    /// The attributes that name this service in a request: what `ipvsadm`
    /// sends to list a service's destinations.
    pub fn to_attrs(&self) -> Vec<ServiceAttr> {
        let mut attrs = vec![ServiceAttr::AddressFamily(self.family())];
        if self.fwmark != 0 {
            attrs.push(ServiceAttr::Fwmark(self.fwmark));
        } else {
            attrs.push(ServiceAttr::Protocol(self.protocol.number()));
            attrs.push(ServiceAttr::Address(inet_addr_bytes(&self.address)));
            attrs.push(ServiceAttr::Port(self.port));
        }
        attrs
    }
}

impl fmt::Display for ServiceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.fwmark != 0 {
            return write!(f, "FWM {}", self.fwmark);
        }
        match self.address {
            IpAddr::V4(a) => write!(f, "{} {}:{}", self.protocol, a, self.port),
            IpAddr::V6(a) => write!(f, "{} [{}]:{}", self.protocol, a, self.port),
        }
    }
}

/// A virtual service with its scheduling settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VirtualServer {
    /// Which service.
    pub key: ServiceKey,
    /// Scheduler name (`rr`, `wrr`, `lc`, ...).
    pub scheduler: String,
    /// Flags, without the kernel's `HASHED` bit.
    pub flags: ServiceFlags,
    /// Persistence timeout in seconds (0 without persistence).
    pub timeout: u32,
    /// Persistence netmask: all ones for IPv4, the prefix length (128) for
    /// IPv6, as `ipvsadm` and upstream send it.
    pub netmask: u32,
    /// Counters, when read from the kernel.
    pub stats: Option<Stats>,
}

impl VirtualServer {
    /// A service with `scheduler`, no persistence and the default netmask.
    pub fn new(key: ServiceKey, scheduler: &str) -> Self {
        let netmask = if key.family() == AF_INET6 { 128 } else { u32::MAX };
        Self { key, scheduler: scheduler.to_string(), flags: ServiceFlags::default(), timeout: 0, netmask, stats: None }
    }

    /// The same settings, ignoring counters: what a sync compares.
    pub fn same_settings(&self, other: &VirtualServer) -> bool {
        self.key == other.key
            && self.scheduler == other.scheduler
            && self.flags == other.flags
            && self.timeout == other.timeout
            && self.netmask == other.netmask
    }

    /// Every attribute a new or changed service needs, in `ipvsadm`'s order.
    pub fn to_attrs(&self) -> Vec<ServiceAttr> {
        let mut attrs = self.key.to_attrs();
        attrs.push(ServiceAttr::Scheduler(self.scheduler.clone()));
        attrs.push(ServiceAttr::Flags(FlagsAttr { flags: self.flags.0, mask: u32::MAX }));
        attrs.push(ServiceAttr::Timeout(self.timeout));
        attrs.push(ServiceAttr::Netmask(self.netmask));
        attrs
    }

    /// Reads a service from the attributes of a kernel reply (or a request).
    pub fn from_attrs(attrs: &[ServiceAttr]) -> Result<Self, DecodeError> {
        let mut family = None;
        let (mut protocol, mut raw_addr, mut port, mut fwmark) = (0, None, 0, 0);
        let mut vs = VirtualServer::new(ServiceKey::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), IpProtocol::Other(0), 0), "");
        for attr in attrs {
            match attr {
                ServiceAttr::AddressFamily(af) => family = Some(*af),
                ServiceAttr::Protocol(p) => protocol = *p,
                ServiceAttr::Address(raw) => raw_addr = Some(raw.as_slice()),
                ServiceAttr::Port(p) => port = *p,
                ServiceAttr::Fwmark(m) => fwmark = *m,
                ServiceAttr::Scheduler(s) => vs.scheduler = s.clone(),
                ServiceAttr::Flags(f) => vs.flags = ServiceFlags(f.flags & !IP_VS_SVC_F_HASHED),
                ServiceAttr::Timeout(t) => vs.timeout = *t,
                ServiceAttr::Netmask(m) => vs.netmask = *m,
                ServiceAttr::Stats64(s) => vs.stats = Some(Stats::from_attrs(s)),
                ServiceAttr::Stats(s) if vs.stats.is_none() => vs.stats = Some(Stats::from_attrs(s)),
                _ => {}
            }
        }
        let family = family.ok_or_else(|| DecodeError::from("IPVS service without an address family"))?;
        let address = match raw_addr {
            Some(raw) => ip_from_inet_addr(family, raw)?,
            None => unspecified(family),
        };
        vs.key = ServiceKey { address, protocol: IpProtocol::from_number(protocol), port, fwmark };
        Ok(vs)
    }
}

/// `AF_INET` or `AF_INET6` for `addr`.
pub(crate) fn family_of(addr: &IpAddr) -> u16 {
    match addr {
        IpAddr::V4(_) => AF_INET,
        IpAddr::V6(_) => AF_INET6,
    }
}

/// `union nf_inet_addr` bytes: 16, IPv4 in the first 4 (as `ipvsadm` sends).
pub(crate) fn inet_addr_bytes(addr: &IpAddr) -> Vec<u8> {
    let mut raw = vec![0u8; 16];
    match addr {
        IpAddr::V4(a) => raw[..4].copy_from_slice(&a.octets()),
        IpAddr::V6(a) => raw.copy_from_slice(&a.octets()),
    }
    raw
}

/// Reads an address of `family` from `union nf_inet_addr` bytes (4 or 16).
pub(crate) fn ip_from_inet_addr(family: u16, raw: &[u8]) -> Result<IpAddr, DecodeError> {
    match (family, raw.len()) {
        (AF_INET, n) if n >= 4 => Ok(IpAddr::V4(Ipv4Addr::new(raw[0], raw[1], raw[2], raw[3]))),
        (AF_INET6, 16) => {
            let mut octets = [0u8; 16];
            octets.copy_from_slice(raw);
            Ok(IpAddr::V6(Ipv6Addr::from(octets)))
        }
        (af, n) => Err(DecodeError::from(format!("IPVS address of family {af} has {n} bytes"))),
    }
}

fn unspecified(family: u16) -> IpAddr {
    if family == AF_INET6 { IpAddr::V6(Ipv6Addr::UNSPECIFIED) } else { IpAddr::V4(Ipv4Addr::UNSPECIFIED) }
}
