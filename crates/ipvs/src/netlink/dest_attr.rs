//! Attributes of one destination, i.e. real server (`IPVS_CMD_ATTR_DEST`,
//! nested).

use super::constants::*;
use super::nla::{emit_nested, nested_len, parse_all, parse_default};
use super::stats::{StatsAttr, parse_stats};
use netlink_packet_core::{
    DecodeError, DefaultNla, ErrorContext, NLA_F_NESTED, Nla, NlaBuffer, Parseable, parse_u8, parse_u16,
    parse_u16_be, parse_u32,
};

/// One destination attribute, as the kernel and `ipvsadm` send it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DestAttr {
    /// Real server address, raw `union nf_inet_addr` (16 bytes).
    Address(Vec<u8>),
    /// Port, host order here (network order on the wire).
    Port(u16),
    /// Forwarding method and connection flags (`IP_VS_CONN_F_*`).
    FwdMethod(u32),
    /// Scheduling weight; 0 takes the server out of rotation.
    Weight(u32),
    /// Upper connection threshold (0 = none).
    UpperThreshold(u32),
    /// Lower connection threshold (0 = none).
    LowerThreshold(u32),
    /// Active connections (dump only).
    ActiveConns(u32),
    /// Inactive connections (dump only).
    InactiveConns(u32),
    /// Persistence templates (dump only).
    PersistConns(u32),
    /// Counters (dump only).
    Stats(Vec<StatsAttr>),
    /// `AF_INET` or `AF_INET6` of the destination.
    AddressFamily(u16),
    /// 64-bit counters (dump only).
    Stats64(Vec<StatsAttr>),
    /// Tunnel type (tunnel forwarding only).
    TunType(u8),
    /// Tunnel port, host order here.
    TunPort(u16),
    /// Tunnel flags.
    TunFlags(u16),
    /// Anything else, kept verbatim.
    Other(DefaultNla),
}

impl Nla for DestAttr {
    fn value_len(&self) -> usize {
        use DestAttr::*;
        match self {
            TunType(_) => 1,
            Port(_) | AddressFamily(_) | TunPort(_) | TunFlags(_) => 2,
            FwdMethod(_) | Weight(_) | UpperThreshold(_) | LowerThreshold(_) | ActiveConns(_)
            | InactiveConns(_) | PersistConns(_) => 4,
            Address(raw) => raw.len(),
            Stats(attrs) | Stats64(attrs) => nested_len(attrs),
            Other(nla) => nla.value_len(),
        }
    }

    fn kind(&self) -> u16 {
        use DestAttr::*;
        match self {
            Address(_) => IPVS_DEST_ATTR_ADDR,
            Port(_) => IPVS_DEST_ATTR_PORT,
            FwdMethod(_) => IPVS_DEST_ATTR_FWD_METHOD,
            Weight(_) => IPVS_DEST_ATTR_WEIGHT,
            UpperThreshold(_) => IPVS_DEST_ATTR_U_THRESH,
            LowerThreshold(_) => IPVS_DEST_ATTR_L_THRESH,
            ActiveConns(_) => IPVS_DEST_ATTR_ACTIVE_CONNS,
            InactiveConns(_) => IPVS_DEST_ATTR_INACT_CONNS,
            PersistConns(_) => IPVS_DEST_ATTR_PERSIST_CONNS,
            Stats(_) => IPVS_DEST_ATTR_STATS | NLA_F_NESTED,
            AddressFamily(_) => IPVS_DEST_ATTR_ADDR_FAMILY,
            Stats64(_) => IPVS_DEST_ATTR_STATS64 | NLA_F_NESTED,
            TunType(_) => IPVS_DEST_ATTR_TUN_TYPE,
            TunPort(_) => IPVS_DEST_ATTR_TUN_PORT,
            TunFlags(_) => IPVS_DEST_ATTR_TUN_FLAGS,
            Other(nla) => nla.kind(),
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        use DestAttr::*;
        match self {
            Address(raw) => buffer.copy_from_slice(raw),
            Port(v) | TunPort(v) => buffer.copy_from_slice(&v.to_be_bytes()),
            AddressFamily(v) | TunFlags(v) => buffer.copy_from_slice(&v.to_ne_bytes()),
            TunType(v) => buffer[0] = *v,
            FwdMethod(v) | Weight(v) | UpperThreshold(v) | LowerThreshold(v) | ActiveConns(v)
            | InactiveConns(v) | PersistConns(v) => buffer.copy_from_slice(&v.to_ne_bytes()),
            Stats(attrs) | Stats64(attrs) => emit_nested(attrs, buffer),
            Other(nla) => nla.emit_value(buffer),
        }
    }
}

impl<'a> Parseable<NlaBuffer<&'a [u8]>> for DestAttr {
    fn parse(buf: &NlaBuffer<&'a [u8]>) -> Result<Self, DecodeError> {
        use DestAttr::*;
        let payload = buf.value();
        let attr = match buf.kind() {
            IPVS_DEST_ATTR_ADDR => Address(payload.to_vec()),
            IPVS_DEST_ATTR_PORT => Port(parse_u16_be(payload)?),
            IPVS_DEST_ATTR_FWD_METHOD => FwdMethod(parse_u32(payload)?),
            IPVS_DEST_ATTR_WEIGHT => Weight(parse_u32(payload)?),
            IPVS_DEST_ATTR_U_THRESH => UpperThreshold(parse_u32(payload)?),
            IPVS_DEST_ATTR_L_THRESH => LowerThreshold(parse_u32(payload)?),
            IPVS_DEST_ATTR_ACTIVE_CONNS => ActiveConns(parse_u32(payload)?),
            IPVS_DEST_ATTR_INACT_CONNS => InactiveConns(parse_u32(payload)?),
            IPVS_DEST_ATTR_PERSIST_CONNS => PersistConns(parse_u32(payload)?),
            IPVS_DEST_ATTR_STATS => Stats(parse_stats(payload)?),
            IPVS_DEST_ATTR_ADDR_FAMILY => AddressFamily(parse_u16(payload)?),
            IPVS_DEST_ATTR_STATS64 => Stats64(parse_stats(payload)?),
            IPVS_DEST_ATTR_TUN_TYPE => TunType(parse_u8(payload)?),
            IPVS_DEST_ATTR_TUN_PORT => TunPort(parse_u16_be(payload)?),
            IPVS_DEST_ATTR_TUN_FLAGS => TunFlags(parse_u16(payload)?),
            _ => Other(parse_default(buf)?),
        };
        Ok(attr)
    }
}

/// Parses the nested list of a destination attribute.
pub(crate) fn parse_dest_attrs(payload: &[u8]) -> Result<Vec<DestAttr>, DecodeError> {
    parse_all(payload, |nla| DestAttr::parse(nla)).context("parsing IPVS destination attributes")
}
