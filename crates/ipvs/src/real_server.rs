//! A destination (real server) of a virtual service (`ipvsadm -a`), with
//! its conversion to and from netlink attributes.

use crate::netlink::constants::*;
use crate::netlink::{DestAttr, Stats};
use crate::virtual_server::{family_of, inet_addr_bytes, ip_from_inet_addr};
use netlink_packet_core::DecodeError;
use std::fmt;
use std::net::{IpAddr, SocketAddr};

/// How IPVS forwards to a real server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ForwardMethod {
    /// NAT (`-m`): the only method that can remap ports; what kube-proxy uses.
    Masquerade,
    /// Local node.
    Local,
    /// IP-in-IP tunnel (`-i`).
    Tunnel,
    /// Direct routing (`-g`).
    DirectRoute,
    /// Bypass.
    Bypass,
}

impl ForwardMethod {
    fn to_bits(self) -> u32 {
        match self {
            ForwardMethod::Masquerade => IP_VS_CONN_F_MASQ,
            ForwardMethod::Local => IP_VS_CONN_F_LOCALNODE,
            ForwardMethod::Tunnel => IP_VS_CONN_F_TUNNEL,
            ForwardMethod::DirectRoute => IP_VS_CONN_F_DROUTE,
            ForwardMethod::Bypass => IP_VS_CONN_F_BYPASS,
        }
    }

    fn from_bits(bits: u32) -> Self {
        match bits & IP_VS_CONN_F_FWD_MASK {
            IP_VS_CONN_F_LOCALNODE => ForwardMethod::Local,
            IP_VS_CONN_F_TUNNEL => ForwardMethod::Tunnel,
            IP_VS_CONN_F_DROUTE => ForwardMethod::DirectRoute,
            IP_VS_CONN_F_BYPASS => ForwardMethod::Bypass,
            _ => ForwardMethod::Masquerade,
        }
    }
}

impl fmt::Display for ForwardMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ForwardMethod::Masquerade => "Masq",
            ForwardMethod::Local => "Local",
            ForwardMethod::Tunnel => "Tunnel",
            ForwardMethod::DirectRoute => "Route",
            ForwardMethod::Bypass => "Bypass",
        })
    }
}

/// A real server of one virtual service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RealServer {
    /// Backend address.
    pub address: IpAddr,
    /// Backend port.
    pub port: u16,
    /// Forwarding method.
    pub forward: ForwardMethod,
    /// Weight; 0 stops new connections (graceful termination).
    pub weight: u32,
    /// Upper connection threshold (0 = none).
    pub upper_threshold: u32,
    /// Lower connection threshold (0 = none).
    pub lower_threshold: u32,
    /// Active connections (read from the kernel; ignored when sent).
    pub active_conns: u32,
    /// Inactive connections (read from the kernel; ignored when sent).
    pub inactive_conns: u32,
    /// Persistence templates (read from the kernel; ignored when sent).
    pub persist_conns: u32,
    /// Counters, when read from the kernel.
    pub stats: Option<Stats>,
}

impl RealServer {
    /// A NAT-mode real server with weight 1, as kube-proxy programs them.
    pub fn masquerade(address: IpAddr, port: u16) -> Self {
        Self {
            address,
            port,
            forward: ForwardMethod::Masquerade,
            weight: 1,
            upper_threshold: 0,
            lower_threshold: 0,
            active_conns: 0,
            inactive_conns: 0,
            persist_conns: 0,
            stats: None,
        }
    }

    /// `address:port`, what identifies the real server within its service.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::new(self.address, self.port)
    }

    /// The same settings, ignoring connection counts and counters.
    pub fn same_settings(&self, other: &RealServer) -> bool {
        self.addr() == other.addr()
            && self.forward == other.forward
            && self.weight == other.weight
            && self.upper_threshold == other.upper_threshold
            && self.lower_threshold == other.lower_threshold
    }

    /// Every attribute a new or changed destination needs, in `ipvsadm`'s
    /// order (the tunnel attributes are zero for non-tunnel methods).
    pub fn to_attrs(&self) -> Vec<DestAttr> {
        vec![
            DestAttr::AddressFamily(family_of(&self.address)),
            DestAttr::Address(inet_addr_bytes(&self.address)),
            DestAttr::Port(self.port),
            DestAttr::FwdMethod(self.forward.to_bits()),
            DestAttr::Weight(self.weight),
            DestAttr::TunType(0),
            DestAttr::TunPort(0),
            DestAttr::TunFlags(0),
            DestAttr::UpperThreshold(self.upper_threshold),
            DestAttr::LowerThreshold(self.lower_threshold),
        ]
    }

    /// The attributes that name this destination in a delete request.
    pub fn key_attrs(address: IpAddr, port: u16) -> Vec<DestAttr> {
        vec![
            DestAttr::AddressFamily(family_of(&address)),
            DestAttr::Address(inet_addr_bytes(&address)),
            DestAttr::Port(port),
        ]
    }

    /// Reads a destination from kernel attributes; `service_family` is used
    /// when the kernel is too old to send the destination's own family.
    pub fn from_attrs(attrs: &[DestAttr], service_family: u16) -> Result<Self, DecodeError> {
        let mut family = service_family;
        let mut raw_addr = None;
        let mut rs = RealServer::masquerade(IpAddr::from([0, 0, 0, 0]), 0);
        for attr in attrs {
            match attr {
                DestAttr::AddressFamily(af) => family = *af,
                DestAttr::Address(raw) => raw_addr = Some(raw.as_slice()),
                DestAttr::Port(p) => rs.port = *p,
                DestAttr::FwdMethod(bits) => rs.forward = ForwardMethod::from_bits(*bits),
                DestAttr::Weight(w) => rs.weight = *w,
                DestAttr::UpperThreshold(t) => rs.upper_threshold = *t,
                DestAttr::LowerThreshold(t) => rs.lower_threshold = *t,
                DestAttr::ActiveConns(n) => rs.active_conns = *n,
                DestAttr::InactiveConns(n) => rs.inactive_conns = *n,
                DestAttr::PersistConns(n) => rs.persist_conns = *n,
                DestAttr::Stats64(s) => rs.stats = Some(Stats::from_attrs(s)),
                DestAttr::Stats(s) if rs.stats.is_none() => rs.stats = Some(Stats::from_attrs(s)),
                _ => {}
            }
        }
        let raw = raw_addr.ok_or_else(|| DecodeError::from("IPVS destination without an address"))?;
        rs.address = ip_from_inet_addr(family, raw)?;
        Ok(rs)
    }
}
