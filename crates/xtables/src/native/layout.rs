//! The fixed parts of x_tables entries per family: where `ipt_entry`
//! and `ip6t_entry` keep addresses, interfaces, protocol, flags and their
//! offsets, and the byte helpers the encoder uses.

use ipnet::IpNet;
use std::net::IpAddr;

/// The x_tables family: `ip_tables` (`ipt_entry`) or `ip6_tables`
/// (`ip6t_entry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// IPv4 (`struct ipt_entry`, 112 bytes).
    V4,
    /// IPv6 (`struct ip6t_entry`, 168 bytes).
    V6,
}

/// Inverse flags shared by both families.
const INV_VIA_IN: u8 = 0x01;
const INV_VIA_OUT: u8 = 0x02;
const INV_SRCIP: u8 = 0x08;
const INV_DSTIP: u8 = 0x10;
const INV_PROTO: u8 = 0x40;

impl Family {
    /// The family of `model`'s IP family.
    pub fn of(family: model::IpFamily) -> Self {
        match family {
            model::IpFamily::V4 => Family::V4,
            model::IpFamily::V6 => Family::V6,
        }
    }

    /// `sizeof(struct ipt_entry)` / `sizeof(struct ip6t_entry)`.
    pub fn entry_len(self) -> usize {
        match self {
            Family::V4 => 112,
            Family::V6 => 168,
        }
    }

    /// Offset of `target_offset` (`next_offset` follows, `comefrom` after).
    pub fn offsets_at(self) -> usize {
        match self {
            Family::V4 => 88,
            Family::V6 => 140,
        }
    }

    /// Offset of the entry's counters (two u64).
    pub fn counters_at(self) -> usize {
        self.entry_len() - 16
    }

    fn addr_len(self) -> usize {
        match self {
            Family::V4 => 4,
            Family::V6 => 16,
        }
    }

    /// (iniface, iniface_mask, proto, flags, invflags) offsets.
    fn fields(self) -> (usize, usize, usize, usize, usize) {
        match self {
            Family::V4 => (16, 48, 80, 82, 83),
            Family::V6 => (64, 96, 128, 131, 132),
        }
    }

    pub(crate) fn set_offsets(self, entry: &mut [u8], target: usize, next: usize) -> Result<(), ()> {
        let (target, next) = (u16::try_from(target).map_err(|_| ())?, u16::try_from(next).map_err(|_| ())?);
        let at = self.offsets_at();
        put_u16(entry, at, target);
        put_u16(entry, at + 2, next);
        Ok(())
    }

    /// `-g`: the flag that makes a jump not return.
    pub(crate) fn set_goto(self, entry: &mut [u8]) {
        let flags = self.fields().3;
        entry[flags] |= match self {
            Family::V4 => 0x02,
            Family::V6 => 0x04,
        };
    }

    /// `[!] -s NET` / `[!] -d NET`.
    pub(crate) fn set_address(self, entry: &mut [u8], dst: bool, value: &str, negated: bool) -> Result<(), String> {
        let net: IpNet = match value.parse() {
            Ok(net) => net,
            Err(_) => value.parse::<IpAddr>().map(IpNet::from).map_err(|_| format!("address {value}"))?,
        };
        let (addr, mask) = match (self, net.network(), net.netmask()) {
            (Family::V4, IpAddr::V4(a), IpAddr::V4(m)) => (a.octets().to_vec(), m.octets().to_vec()),
            (Family::V6, IpAddr::V6(a), IpAddr::V6(m)) => (a.octets().to_vec(), m.octets().to_vec()),
            _ => return Err(format!("address {value} in {self:?}")),
        };
        let len = self.addr_len();
        let (at, mask_at) = if dst { (len, 3 * len) } else { (0, 2 * len) };
        entry[at..at + len].copy_from_slice(&addr);
        entry[mask_at..mask_at + len].copy_from_slice(&mask);
        if negated {
            entry[self.fields().4] |= if dst { INV_DSTIP } else { INV_SRCIP };
        }
        Ok(())
    }

    /// `[!] -i IFACE` / `[!] -o IFACE` (`+` ends a prefix and is kept).
    pub(crate) fn set_iface(self, entry: &mut [u8], out: bool, name: &str, negated: bool) -> Result<(), String> {
        if name.is_empty() || name.len() >= 16 {
            return Err(format!("interface {name:?}"));
        }
        let (name_at, mask_at, ..) = self.fields();
        let (name_at, mask_at) = if out { (name_at + 16, mask_at + 16) } else { (name_at, mask_at) };
        entry[name_at..name_at + name.len()].copy_from_slice(name.as_bytes());
        let masked = if name.ends_with('+') { name.len() - 1 } else { name.len() + 1 };
        entry[mask_at..mask_at + masked].fill(0xff);
        if negated {
            entry[self.fields().4] |= if out { INV_VIA_OUT } else { INV_VIA_IN };
        }
        Ok(())
    }

    /// `[!] -p PROTO`.
    pub(crate) fn set_proto(self, entry: &mut [u8], name: &str, negated: bool) -> Result<(), String> {
        let number: u16 = match name {
            "tcp" => 6,
            "udp" => 17,
            "sctp" => 132,
            "icmp" => 1,
            "ipv6-icmp" | "icmpv6" => 58,
            other => other.parse().map_err(|_| format!("-p {other}"))?,
        };
        let (_, _, proto, flags, invflags) = self.fields();
        put_u16(entry, proto, number);
        if self == Family::V6 {
            entry[flags] |= 0x01; // IP6T_F_PROTO
        }
        if negated {
            entry[invflags] |= INV_PROTO;
        }
        Ok(())
    }
}

/// `XT_ALIGN`: records are padded to 8 bytes.
pub fn align(len: usize) -> usize {
    len.div_ceil(8) * 8
}

pub(crate) fn put_u16(buf: &mut [u8], at: usize, value: u16) {
    buf[at..at + 2].copy_from_slice(&value.to_ne_bytes());
}

pub(crate) fn put_u32(buf: &mut [u8], at: usize, value: u32) {
    buf[at..at + 4].copy_from_slice(&value.to_ne_bytes());
}

pub(crate) fn u16_at(buf: &[u8], at: usize) -> u16 {
    buf.get(at..at + 2).map_or(0, |b| u16::from_ne_bytes([b[0], b[1]]))
}

pub(crate) fn u32_at(buf: &[u8], at: usize) -> u32 {
    buf.get(at..at + 4).map_or(0, |b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
}

/// Copies `name` into a NUL-padded field (cut to leave the final NUL).
pub(crate) fn put_name(field: &mut [u8], name: &str) {
    let len = name.len().min(field.len().saturating_sub(1));
    field[..len].copy_from_slice(&name.as_bytes()[..len]);
}
