//! The values nf_tables works with: families, registers, verdicts, set
//! key and data types, and typed values laid out as the kernel stores
//! them (each field of a concatenation in its own 32-bit register).

use std::net::{Ipv4Addr, Ipv6Addr};

/// A table's address family (`nfgen_family`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// `ip` (`NFPROTO_IPV4`).
    Ip,
    /// `ip6` (`NFPROTO_IPV6`).
    Ip6,
    /// `inet` (`NFPROTO_INET`).
    Inet,
}

impl Family {
    /// The `NFPROTO_*` number.
    pub fn nfproto(self) -> u8 {
        match self {
            Family::Ip => 2,
            Family::Ip6 => 10,
            Family::Inet => 1,
        }
    }

    /// The family for an `NFPROTO_*` number.
    pub fn from_nfproto(n: u8) -> Option<Self> {
        match n {
            2 => Some(Family::Ip),
            10 => Some(Family::Ip6),
            1 => Some(Family::Inet),
            _ => None,
        }
    }

    /// The name `nft` uses (`ip`, `ip6`, `inet`).
    pub fn name(self) -> &'static str {
        match self {
            Family::Ip => "ip",
            Family::Ip6 => "ip6",
            Family::Inet => "inet",
        }
    }
}

/// An nf_tables register: 0 is the verdict register, 1–4 the 16-byte
/// registers, 8–23 the 32-bit ones (`NFT_REG32_00`…), as `nft` numbers
/// them (a concatenation starts at register 1 and goes on at 9, 10, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Register(pub u32);

impl Register {
    /// The verdict register (a verdict map's destination).
    pub const VERDICT: Register = Register(0);
    /// Register 1, where `nft` loads a single value.
    pub const R1: Register = Register(1);
    /// Register 2.
    pub const R2: Register = Register(2);

    /// The 32-bit register that holds field `index` of a concatenation
    /// starting at register 1 (field 0 → 1, field 1 → 9, …), the way `nft`
    /// allocates them.
    pub fn concat_field(index: u32) -> Register {
        if index == 0 {
            Register::R1
        } else {
            Register(8 + index)
        }
    }

    /// The number the kernel dumps for this register: a 32-bit register
    /// that starts a 16-byte one (12, 16, 20) is listed as that one (2, 3,
    /// 4). Rules built with canonical numbers read back unchanged.
    pub fn canonical(self) -> Register {
        match self.0 {
            r @ 8..=23 if r % 4 == 0 => Register(r / 4 - 1),
            _ => self,
        }
    }
}

/// A verdict: in a rule's immediate, a verdict map's data, or a policy.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// `accept`.
    Accept,
    /// `drop`.
    Drop,
    /// `continue`.
    Continue,
    /// `return`.
    Return,
    /// `jump <chain>` (by name).
    Jump(String),
    /// `goto <chain>` (by name).
    Goto(String),
}

/// A set's key or data type (`nft`'s datatype numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DataType {
    /// `verdict` (a verdict map's data).
    Verdict,
    /// `integer` (32 bits, host byte order: `numgen` output).
    Integer,
    /// `ipv4_addr`.
    Ipv4Addr,
    /// `ipv6_addr`.
    Ipv6Addr,
    /// `inet_proto`.
    InetProto,
    /// `inet_service` (a port).
    InetService,
    /// `mark`.
    Mark,
}

impl DataType {
    /// `nft`'s type number.
    pub fn id(self) -> u32 {
        match self {
            DataType::Verdict => 1,
            DataType::Integer => 4,
            DataType::Ipv4Addr => 7,
            DataType::Ipv6Addr => 8,
            DataType::InetProto => 12,
            DataType::InetService => 13,
            DataType::Mark => 19,
        }
    }

    /// The type for `nft`'s type number.
    pub fn from_id(id: u32) -> Option<Self> {
        Some(match id {
            1 => DataType::Verdict,
            4 => DataType::Integer,
            7 => DataType::Ipv4Addr,
            8 => DataType::Ipv6Addr,
            12 => DataType::InetProto,
            13 => DataType::InetService,
            19 => DataType::Mark,
            _ => return None,
        })
    }

    /// The value's length in bytes (before padding to a register).
    pub fn byte_len(self) -> u32 {
        match self {
            DataType::Verdict => 16,
            DataType::Integer | DataType::Ipv4Addr | DataType::Mark => 4,
            DataType::Ipv6Addr => 16,
            DataType::InetProto => 1,
            DataType::InetService => 2,
        }
    }

    /// The type number of a concatenation, as `nft` composes it (6 bits
    /// per field, first field highest).
    pub fn concat_id(types: &[DataType]) -> u32 {
        types.iter().fold(0, |acc, t| (acc << 6) | t.id())
    }

    /// Splits a (concatenated) type number into its fields.
    pub fn split_concat_id(mut id: u32) -> Option<Vec<DataType>> {
        let mut out = Vec::new();
        while id != 0 {
            out.push(DataType::from_id(id & 0x3f)?);
            id >>= 6;
        }
        out.reverse();
        (!out.is_empty()).then_some(out)
    }

    /// Length of a concatenation of `types` in registers (each field
    /// rounded up to 4 bytes).
    pub fn concat_len(types: &[DataType]) -> u32 {
        types.iter().map(|t| t.byte_len().div_ceil(4) * 4).sum()
    }
}

/// One typed value: a set element's key or data field, or a constant a
/// rule compares with.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Value {
    /// An IPv4 address.
    Ipv4(Ipv4Addr),
    /// An IPv6 address.
    Ipv6(Ipv6Addr),
    /// An IP protocol number (6 tcp, 17 udp, 132 sctp).
    Proto(u8),
    /// A port.
    Port(u16),
    /// A packet mark (host byte order).
    Mark(u32),
    /// A 32-bit integer in host byte order (`numgen` output).
    Integer(u32),
}

impl Value {
    /// The bytes the kernel compares, without register padding.
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            Value::Ipv4(a) => a.octets().to_vec(),
            Value::Ipv6(a) => a.octets().to_vec(),
            Value::Proto(p) => vec![*p],
            Value::Port(p) => p.to_be_bytes().to_vec(),
            Value::Mark(m) | Value::Integer(m) => m.to_ne_bytes().to_vec(),
        }
    }

    /// The value of type `ty` in `bytes` (at least its length).
    pub fn from_bytes(ty: DataType, bytes: &[u8]) -> Option<Value> {
        let fixed = |n: usize| bytes.get(..n);
        Some(match ty {
            DataType::Ipv4Addr => Value::Ipv4(<[u8; 4]>::try_from(fixed(4)?).ok()?.into()),
            DataType::Ipv6Addr => Value::Ipv6(<[u8; 16]>::try_from(fixed(16)?).ok()?.into()),
            DataType::InetProto => Value::Proto(*bytes.first()?),
            DataType::InetService => Value::Port(u16::from_be_bytes(fixed(2)?.try_into().ok()?)),
            DataType::Mark => Value::Mark(u32::from_ne_bytes(fixed(4)?.try_into().ok()?)),
            DataType::Integer => Value::Integer(u32::from_ne_bytes(fixed(4)?.try_into().ok()?)),
            DataType::Verdict => return None,
        })
    }

    /// A concatenation's bytes: each field padded to 4 bytes.
    pub fn concat_bytes(values: &[Value]) -> Vec<u8> {
        let mut out = Vec::with_capacity(values.len() * 4);
        for v in values {
            out.extend_from_slice(&v.to_bytes());
            while !out.len().is_multiple_of(4) {
                out.push(0);
            }
        }
        out
    }

    /// Splits a concatenation's bytes into values of `types`.
    pub fn split_concat(types: &[DataType], bytes: &[u8]) -> Option<Vec<Value>> {
        let mut at = 0;
        let mut out = Vec::with_capacity(types.len());
        for ty in types {
            out.push(Value::from_bytes(*ty, bytes.get(at..)?)?);
            at += (ty.byte_len().div_ceil(4) * 4) as usize;
        }
        (at == bytes.len()).then_some(out)
    }
}

/// As `nft` writes it: `10.96.0.1`, `tcp`, `80`, `0x00004000`.
impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Ipv4(a) => write!(f, "{a}"),
            Value::Ipv6(a) => write!(f, "{a}"),
            Value::Proto(6) => f.write_str("tcp"),
            Value::Proto(17) => f.write_str("udp"),
            Value::Proto(132) => f.write_str("sctp"),
            Value::Proto(p) => write!(f, "{p}"),
            Value::Port(p) => write!(f, "{p}"),
            Value::Mark(m) => write!(f, "{m:#010x}"),
            Value::Integer(i) => write!(f, "{i}"),
        }
    }
}

/// As `nft` writes it: `accept`, `goto <chain>`.
impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verdict::Accept => f.write_str("accept"),
            Verdict::Drop => f.write_str("drop"),
            Verdict::Continue => f.write_str("continue"),
            Verdict::Return => f.write_str("return"),
            Verdict::Jump(c) => write!(f, "jump {c}"),
            Verdict::Goto(c) => write!(f, "goto {c}"),
        }
    }
}

/// A concatenation as `nft` writes it: `10.96.0.1 . tcp . 80`.
pub(crate) fn concat_text(values: &[Value]) -> String {
    values
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join(" . ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concatenated_types_compose_as_nft_does() {
        let key = [
            DataType::Ipv4Addr,
            DataType::InetProto,
            DataType::InetService,
        ];
        assert_eq!(DataType::concat_id(&key), (7 << 12) | (12 << 6) | 13);
        assert_eq!(
            DataType::split_concat_id(DataType::concat_id(&key)).as_deref(),
            Some(&key[..])
        );
        assert_eq!(DataType::concat_len(&key), 12);
        assert_eq!(DataType::split_concat_id(63), None);
    }

    #[test]
    fn each_field_of_a_concatenation_takes_a_whole_register() {
        let values = [
            Value::Ipv4([10, 96, 0, 1].into()),
            Value::Proto(6),
            Value::Port(443),
        ];
        let bytes = Value::concat_bytes(&values);
        assert_eq!(bytes, [10, 96, 0, 1, 6, 0, 0, 0, 0x01, 0xbb, 0, 0]);
        let types = [
            DataType::Ipv4Addr,
            DataType::InetProto,
            DataType::InetService,
        ];
        assert_eq!(
            Value::split_concat(&types, &bytes).as_deref(),
            Some(&values[..])
        );
        assert_eq!(
            Value::split_concat(&types, &bytes[..8]),
            None,
            "short data is refused"
        );
    }
}
