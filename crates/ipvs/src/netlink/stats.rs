//! Traffic counters nested in a service or destination
//! (`IPVS_*_ATTR_STATS` with mixed 32/64-bit values, `*_STATS64` all 64-bit).

use super::constants::*;
use super::nla::parse_all;
use netlink_packet_core::{DecodeError, Nla, NlaBuffer, Parseable, parse_u32, parse_u64};

/// One counter: its `IPVS_STATS_ATTR_*` kind and value, remembering whether
/// the kernel sent it as 32 or 64 bits so it re-encodes identically.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatsAttr {
    /// A 32-bit counter.
    U32(u16, u32),
    /// A 64-bit counter.
    U64(u16, u64),
}

impl StatsAttr {
    /// The counter's value, widened.
    pub fn value(&self) -> u64 {
        match *self {
            StatsAttr::U32(_, v) => u64::from(v),
            StatsAttr::U64(_, v) => v,
        }
    }
}

impl Nla for StatsAttr {
    fn value_len(&self) -> usize {
        match self {
            StatsAttr::U32(..) => 4,
            StatsAttr::U64(..) => 8,
        }
    }

    fn kind(&self) -> u16 {
        match *self {
            StatsAttr::U32(k, _) | StatsAttr::U64(k, _) => k,
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match *self {
            StatsAttr::U32(_, v) => buffer.copy_from_slice(&v.to_ne_bytes()),
            StatsAttr::U64(_, v) => buffer.copy_from_slice(&v.to_ne_bytes()),
        }
    }
}

impl<'a> Parseable<NlaBuffer<&'a [u8]>> for StatsAttr {
    fn parse(buf: &NlaBuffer<&'a [u8]>) -> Result<Self, DecodeError> {
        let value = buf.value();
        match value.len() {
            4 => Ok(StatsAttr::U32(buf.kind(), parse_u32(value)?)),
            8 => Ok(StatsAttr::U64(buf.kind(), parse_u64(value)?)),
            n => Err(DecodeError::from(format!("IPVS stats attribute {} has {n} bytes", buf.kind()))),
        }
    }
}

/// Parses a nested stats list.
pub(crate) fn parse_stats(payload: &[u8]) -> Result<Vec<StatsAttr>, DecodeError> {
    parse_all(payload, |nla| StatsAttr::parse(nla))
}

/// The counters of a service or destination, decoded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Connections scheduled.
    pub conns: u64,
    /// Packets in.
    pub in_packets: u64,
    /// Packets out.
    pub out_packets: u64,
    /// Bytes in.
    pub in_bytes: u64,
    /// Bytes out.
    pub out_bytes: u64,
}

impl Stats {
    /// Picks the counters out of a stats attribute list.
    pub fn from_attrs(attrs: &[StatsAttr]) -> Self {
        let mut stats = Stats::default();
        for attr in attrs {
            let slot = match attr.kind() {
                IPVS_STATS_ATTR_CONNS => &mut stats.conns,
                IPVS_STATS_ATTR_INPKTS => &mut stats.in_packets,
                IPVS_STATS_ATTR_OUTPKTS => &mut stats.out_packets,
                IPVS_STATS_ATTR_INBYTES => &mut stats.in_bytes,
                IPVS_STATS_ATTR_OUTBYTES => &mut stats.out_bytes,
                _ => continue,
            };
            *slot = attr.value();
        }
        stats
    }
}
