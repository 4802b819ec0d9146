//! Attributes of one virtual service (`IPVS_CMD_ATTR_SERVICE`, nested).

use super::constants::*;
use super::nla::{emit_cstring, emit_nested, nested_len, parse_all, parse_default};
use super::stats::{StatsAttr, parse_stats};
use netlink_packet_core::{
    DecodeError, DefaultNla, ErrorContext, NLA_F_NESTED, Nla, NlaBuffer, Parseable, parse_string, parse_u16,
    parse_u16_be, parse_u32,
};

/// `struct ip_vs_flags`: the flags to set and which of them the request
/// touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlagsAttr {
    /// `IP_VS_SVC_F_*` bits.
    pub flags: u32,
    /// Which bits of `flags` apply (`!0` replaces all of them).
    pub mask: u32,
}

/// One service attribute, as the kernel and `ipvsadm` send it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServiceAttr {
    /// `AF_INET` or `AF_INET6`.
    AddressFamily(u16),
    /// IP protocol number.
    Protocol(u16),
    /// Virtual address, raw: `union nf_inet_addr` (16 bytes; an IPv4
    /// address fills the first 4).
    Address(Vec<u8>),
    /// Port, host order here (network order on the wire).
    Port(u16),
    /// Firewall mark of a fwmark service.
    Fwmark(u32),
    /// Scheduler name (`rr`, `wlc`, ...).
    Scheduler(String),
    /// Service flags and mask.
    Flags(FlagsAttr),
    /// Persistence timeout in seconds.
    Timeout(u32),
    /// Persistence netmask (IPv4: the mask; IPv6: the prefix length).
    Netmask(u32),
    /// Counters (dump only).
    Stats(Vec<StatsAttr>),
    /// Persistence engine name.
    PeName(String),
    /// 64-bit counters (dump only).
    Stats64(Vec<StatsAttr>),
    /// Anything else, kept verbatim.
    Other(DefaultNla),
}

impl Nla for ServiceAttr {
    fn value_len(&self) -> usize {
        use ServiceAttr::*;
        match self {
            AddressFamily(_) | Protocol(_) | Port(_) => 2,
            Fwmark(_) | Timeout(_) | Netmask(_) => 4,
            Address(raw) => raw.len(),
            Scheduler(s) | PeName(s) => s.len() + 1,
            Flags(_) => 8,
            Stats(attrs) | Stats64(attrs) => nested_len(attrs),
            Other(nla) => nla.value_len(),
        }
    }

    fn kind(&self) -> u16 {
        use ServiceAttr::*;
        match self {
            AddressFamily(_) => IPVS_SVC_ATTR_AF,
            Protocol(_) => IPVS_SVC_ATTR_PROTOCOL,
            Address(_) => IPVS_SVC_ATTR_ADDR,
            Port(_) => IPVS_SVC_ATTR_PORT,
            Fwmark(_) => IPVS_SVC_ATTR_FWMARK,
            Scheduler(_) => IPVS_SVC_ATTR_SCHED_NAME,
            Flags(_) => IPVS_SVC_ATTR_FLAGS,
            Timeout(_) => IPVS_SVC_ATTR_TIMEOUT,
            Netmask(_) => IPVS_SVC_ATTR_NETMASK,
            Stats(_) => IPVS_SVC_ATTR_STATS | NLA_F_NESTED,
            PeName(_) => IPVS_SVC_ATTR_PE_NAME,
            Stats64(_) => IPVS_SVC_ATTR_STATS64 | NLA_F_NESTED,
            Other(nla) => nla.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        use ServiceAttr::*;
        match self {
            AddressFamily(v) | Protocol(v) => buffer.copy_from_slice(&v.to_ne_bytes()),
            Port(v) => buffer.copy_from_slice(&v.to_be_bytes()),
            Fwmark(v) | Timeout(v) | Netmask(v) => buffer.copy_from_slice(&v.to_ne_bytes()),
            Address(raw) => buffer.copy_from_slice(raw),
            Scheduler(s) | PeName(s) => emit_cstring(s, buffer),
            Flags(f) => {
                buffer[..4].copy_from_slice(&f.flags.to_ne_bytes());
                buffer[4..].copy_from_slice(&f.mask.to_ne_bytes());
            }
            Stats(attrs) | Stats64(attrs) => emit_nested(attrs, buffer),
            Other(nla) => nla.emit_value(buffer),
        }
    }
}

impl<'a> Parseable<NlaBuffer<&'a [u8]>> for ServiceAttr {
    fn parse(buf: &NlaBuffer<&'a [u8]>) -> Result<Self, DecodeError> {
        use ServiceAttr::*;
        let payload = buf.value();
        let kind = buf.kind();
        let attr = match kind {
            IPVS_SVC_ATTR_AF => AddressFamily(parse_u16(payload)?),
            IPVS_SVC_ATTR_PROTOCOL => Protocol(parse_u16(payload)?),
            IPVS_SVC_ATTR_ADDR => Address(payload.to_vec()),
            IPVS_SVC_ATTR_PORT => Port(parse_u16_be(payload)?),
            IPVS_SVC_ATTR_FWMARK => Fwmark(parse_u32(payload)?),
            IPVS_SVC_ATTR_SCHED_NAME => Scheduler(parse_string(payload)?),
            IPVS_SVC_ATTR_FLAGS => Flags(parse_flags(payload)?),
            IPVS_SVC_ATTR_TIMEOUT => Timeout(parse_u32(payload)?),
            IPVS_SVC_ATTR_NETMASK => Netmask(parse_u32(payload)?),
            IPVS_SVC_ATTR_STATS => Stats(parse_stats(payload)?),
            IPVS_SVC_ATTR_PE_NAME => PeName(parse_string(payload)?),
            IPVS_SVC_ATTR_STATS64 => Stats64(parse_stats(payload)?),
            _ => Other(parse_default(buf)?),
        };
        Ok(attr)
    }
}

fn parse_flags(payload: &[u8]) -> Result<FlagsAttr, DecodeError> {
    if payload.len() != 8 {
        return Err(DecodeError::from(format!("IPVS service flags have {} bytes, want 8", payload.len())));
    }
    Ok(FlagsAttr { flags: parse_u32(&payload[..4])?, mask: parse_u32(&payload[4..])? })
}

/// Parses the nested list of a service attribute.
pub(crate) fn parse_service_attrs(payload: &[u8]) -> Result<Vec<ServiceAttr>, DecodeError> {
    parse_all(payload, |nla| ServiceAttr::parse(nla)).context("parsing IPVS service attributes")
}
