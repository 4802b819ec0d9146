//! The expression lists `nft` generates for the statements of upstream's
//! kube-proxy ruleset, so a rule built here lists (`nft list`) as the same
//! text. Each function returns the expressions of one statement or match;
//! a rule concatenates them.

use crate::expr::{
    CmpOp, CtKey, Expr, ImmediateData, MetaDir, MetaKey, NatType, PayloadBase, SetRef,
};
use crate::{Register, Verdict};
use std::net::IpAddr;

/// `ct state new`'s bit.
pub const CT_STATE_NEW: u32 = 0x8;
/// `ct status dnat`'s bit (`IPS_DST_NAT`).
pub const CT_STATUS_DNAT: u32 = 0x20;
/// `NF_NAT_RANGE_PROTO_RANDOM_FULLY` (`fully-random`).
pub const NAT_FULLY_RANDOM: u32 = 0x10;
/// `RTN_LOCAL`, for `fib … type local`.
const RTN_LOCAL: u32 = 2;

/// A packet field `nft` can load (alone or in a concatenation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// `ip saddr`.
    IpSaddr,
    /// `ip daddr`.
    IpDaddr,
    /// `ip6 saddr`.
    Ip6Saddr,
    /// `ip6 daddr`.
    Ip6Daddr,
    /// `meta l4proto`.
    L4proto,
    /// `th dport`.
    ThDport,
    /// `meta mark`.
    Mark,
}

impl Field {
    /// The expression loading the field into `dreg`.
    pub fn load(self, dreg: Register) -> Expr {
        let payload = |base, offset, len| Expr::Payload {
            base,
            offset,
            len,
            dreg,
        };
        match self {
            Field::IpSaddr => payload(PayloadBase::Network, 12, 4),
            Field::IpDaddr => payload(PayloadBase::Network, 16, 4),
            Field::Ip6Saddr => payload(PayloadBase::Network, 8, 16),
            Field::Ip6Daddr => payload(PayloadBase::Network, 24, 16),
            Field::ThDport => payload(PayloadBase::Transport, 2, 2),
            Field::L4proto => Expr::Meta {
                key: MetaKey::L4proto,
                dir: MetaDir::Load(dreg),
            },
            Field::Mark => Expr::Meta {
                key: MetaKey::Mark,
                dir: MetaDir::Load(dreg),
            },
        }
    }

    /// Its length in bytes.
    pub fn byte_len(self) -> u32 {
        match self {
            Field::IpSaddr | Field::IpDaddr | Field::Mark => 4,
            Field::Ip6Saddr | Field::Ip6Daddr => 16,
            Field::L4proto => 1,
            Field::ThDport => 2,
        }
    }
}

/// Loads `fields` as a concatenation (`a . b . c`) starting at register 1.
pub fn load_concat(fields: &[Field]) -> Vec<Expr> {
    let mut reg = 1;
    let mut out = Vec::with_capacity(fields.len());
    for (i, f) in fields.iter().enumerate() {
        let r = if i == 0 {
            Register::R1
        } else {
            Register(reg).canonical()
        };
        out.push(f.load(r));
        // a 16-byte register 1 is 32-bit registers 8..11
        reg = if i == 0 {
            8 + f.byte_len().div_ceil(4)
        } else {
            reg + f.byte_len().div_ceil(4)
        };
    }
    out
}

/// `<fields> @set` (or `!= @set`).
pub fn in_set(fields: &[Field], set: SetRef, invert: bool) -> Vec<Expr> {
    let mut out = load_concat(fields);
    out.push(Expr::Lookup {
        set,
        sreg: Register::R1,
        dreg: None,
        invert,
    });
    out
}

/// `<fields> vmap @map`.
pub fn vmap(fields: &[Field], map: SetRef) -> Vec<Expr> {
    let mut out = load_concat(fields);
    out.push(Expr::Lookup {
        set: map,
        sreg: Register::R1,
        dreg: Some(Register::VERDICT),
        invert: false,
    });
    out
}

/// `<field> == value` / `!= value`, the value in network order.
pub fn compare(field: Field, op: CmpOp, value: &[u8]) -> Vec<Expr> {
    vec![
        field.load(Register::R1),
        Expr::Cmp {
            sreg: Register::R1,
            op,
            data: value.to_vec(),
        },
    ]
}

/// `ip saddr 10.0.0.0/8` (or `!=`): address field under a prefix mask.
pub fn prefix(field: Field, op: CmpOp, addr: IpAddr, prefix_len: u8) -> Vec<Expr> {
    let bytes = match addr {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    };
    let mask: Vec<u8> = (0..bytes.len())
        .map(|i| {
            let bits = (i32::from(prefix_len) - 8 * i as i32).clamp(0, 8);
            (0xffu16 << (8 - bits)) as u8
        })
        .collect();
    let len = bytes.len() as u32;
    let masked: Vec<u8> = bytes.iter().zip(&mask).map(|(b, m)| b & m).collect();
    vec![
        field.load(Register::R1),
        Expr::Bitwise {
            sreg: Register::R1,
            dreg: Register::R1,
            len,
            mask,
            xor: vec![0; len as usize],
        },
        Expr::Cmp {
            sreg: Register::R1,
            op,
            data: masked,
        },
    ]
}

/// `iifname "<name>"` (`input` true) or `oifname "<name>"`, `==` or `!=`.
pub fn ifname(input: bool, op: CmpOp, name: &str) -> Vec<Expr> {
    let key = if input {
        MetaKey::Iifname
    } else {
        MetaKey::Oifname
    };
    let mut data = name.as_bytes()[..name.len().min(15)].to_vec();
    data.resize(16, 0);
    vec![
        Expr::Meta {
            key,
            dir: MetaDir::Load(Register::R1),
        },
        Expr::Cmp {
            sreg: Register::R1,
            op,
            data,
        },
    ]
}

/// `meta nfproto ipv4` (2) / `ipv6` (10).
pub fn nfproto(proto: u8) -> Vec<Expr> {
    vec![
        Expr::Meta {
            key: MetaKey::Nfproto,
            dir: MetaDir::Load(Register::R1),
        },
        Expr::Cmp {
            sreg: Register::R1,
            op: CmpOp::Eq,
            data: vec![proto],
        },
    ]
}

/// `ct direction original` (`reply` false) / `reply`.
pub fn ct_direction(reply: bool) -> Vec<Expr> {
    vec![
        Expr::Ct {
            key: CtKey::Direction,
            dreg: Register::R1,
            direction: None,
        },
        Expr::Cmp {
            sreg: Register::R1,
            op: CmpOp::Eq,
            data: vec![u8::from(reply)],
        },
    ]
}

/// `meta l4proto tcp` (6), `udp` (17), `sctp` (132).
pub fn l4proto(proto: u8) -> Vec<Expr> {
    compare(Field::L4proto, CmpOp::Eq, &[proto])
}

/// `ct state <bits>` (e.g. [`CT_STATE_NEW`]).
pub fn ct_state(bits: u32) -> Vec<Expr> {
    ct_bits(CtKey::State, bits)
}

/// `ct status <bits>` (e.g. [`CT_STATUS_DNAT`]).
pub fn ct_status(bits: u32) -> Vec<Expr> {
    ct_bits(CtKey::Status, bits)
}

fn ct_bits(key: CtKey, bits: u32) -> Vec<Expr> {
    vec![
        Expr::Ct {
            key,
            dreg: Register::R1,
            direction: None,
        },
        and_nonzero(bits)[0].clone(),
        and_nonzero(bits)[1].clone(),
    ]
}

/// `& bits != 0` on register 1 (host-order 32-bit value).
fn and_nonzero(bits: u32) -> [Expr; 2] {
    [
        Expr::Bitwise {
            sreg: Register::R1,
            dreg: Register::R1,
            len: 4,
            mask: bits.to_ne_bytes().to_vec(),
            xor: vec![0; 4],
        },
        Expr::Cmp {
            sreg: Register::R1,
            op: CmpOp::Neq,
            data: vec![0; 4],
        },
    ]
}

/// `meta mark & bits != 0`.
pub fn mark_has(bits: u32) -> Vec<Expr> {
    let [a, b] = and_nonzero(bits);
    vec![Field::Mark.load(Register::R1), a, b]
}

/// `meta mark set meta mark | bits`.
pub fn mark_or(bits: u32) -> Vec<Expr> {
    mark_set(!bits, bits)
}

/// `meta mark set meta mark ^ bits`.
pub fn mark_xor(bits: u32) -> Vec<Expr> {
    mark_set(u32::MAX, bits)
}

fn mark_set(mask: u32, xor: u32) -> Vec<Expr> {
    vec![
        Field::Mark.load(Register::R1),
        Expr::Bitwise {
            sreg: Register::R1,
            dreg: Register::R1,
            len: 4,
            mask: mask.to_ne_bytes().to_vec(),
            xor: xor.to_ne_bytes().to_vec(),
        },
        Expr::Meta {
            key: MetaKey::Mark,
            dir: MetaDir::Set(Register::R1),
        },
    ]
}

/// A verdict statement: `accept`, `drop`, `jump c`, `goto c`, `return`.
pub fn verdict(v: Verdict) -> Vec<Expr> {
    vec![Expr::Immediate {
        dreg: Register::VERDICT,
        data: ImmediateData::Verdict(v),
    }]
}

/// `numgen random mod <n>` into register 1.
pub fn numgen_random(modulus: u32) -> Expr {
    Expr::Numgen {
        dreg: Register::R1,
        modulus,
        random: true,
        offset: 0,
    }
}

/// `numgen random mod <n> vmap <map>` (map keyed by `integer`).
pub fn numgen_vmap(modulus: u32, map: SetRef) -> Vec<Expr> {
    vec![
        numgen_random(modulus),
        Expr::Lookup {
            set: map,
            sreg: Register::R1,
            dreg: Some(Register::VERDICT),
            invert: false,
        },
    ]
}

/// `dnat ip to numgen random mod <n> map <map>` where the map's data is
/// `ipv4_addr . inet_service` (or `ipv6_addr . inet_service`).
pub fn dnat_numgen_map(family: u8, modulus: u32, map: SetRef, addr_len: u32) -> Vec<Expr> {
    dnat_numgen_offset_map(family, modulus, 0, map, addr_len)
}

/// `dnat ip to numgen random mod <n> offset <k> map <map>`: the keys
/// `k..k+n` of a map shared by many services (data as in
/// [`dnat_numgen_map`]).
pub fn dnat_numgen_offset_map(
    family: u8,
    modulus: u32,
    offset: u32,
    map: SetRef,
    addr_len: u32,
) -> Vec<Expr> {
    let port_reg = Register(8 + addr_len.div_ceil(4)).canonical();
    vec![
        Expr::Numgen {
            dreg: Register::R1,
            modulus,
            random: true,
            offset,
        },
        Expr::Lookup {
            set: map,
            sreg: Register::R1,
            dreg: Some(Register::R1),
            invert: false,
        },
        Expr::Nat {
            kind: NatType::Dnat,
            family,
            addr_min: Some(Register::R1),
            proto_min: Some(port_reg),
            flags: 0x3,
        },
    ]
}

/// `dnat ip to <fields> map <map>`: the concatenated fields looked up in
/// a map whose data (`ipv4_addr . inet_service` or `ipv6_addr .
/// inet_service`, `addr_len` bytes of address) is the DNAT target.
pub fn dnat_map(family: u8, fields: &[Field], map: SetRef, addr_len: u32) -> Vec<Expr> {
    let port_reg = Register(8 + addr_len.div_ceil(4)).canonical();
    let mut out = load_concat(fields);
    out.push(Expr::Lookup {
        set: map,
        sreg: Register::R1,
        dreg: Some(Register::R1),
        invert: false,
    });
    out.push(Expr::Nat {
        kind: NatType::Dnat,
        family,
        addr_min: Some(Register::R1),
        proto_min: Some(port_reg),
        flags: 0x3,
    });
    out
}

/// `dnat ip to numgen random mod <n> offset <k> map <map>` where the map
/// has `flags interval` and a host-order `integer` key: `nft` turns the
/// number into network order first (`byteorder`), as interval keys
/// compare byte by byte. The layout of issue 25 keys every service's
/// endpoints this way (a slot of `n` keys at `k`, one range per endpoint).
pub fn dnat_numgen_interval_map(
    family: u8,
    modulus: u32,
    offset: u32,
    map: SetRef,
    addr_len: u32,
) -> Vec<Expr> {
    let mut exprs = dnat_numgen_offset_map(family, modulus, offset, map, addr_len);
    exprs.insert(1, byteorder_hton(Register::R1, 4, 4));
    exprs
}

/// `byteorder reg <r> = hton(reg <r>, <size>, <len>)`. Carried as
/// [`Expr::Other`] with its raw attributes (nothing reads it back typed
/// yet; the codec round-trips it byte for byte).
pub fn byteorder_hton(reg: Register, size: u32, len: u32) -> Expr {
    use crate::codec::constants::{
        NFT_BYTEORDER_HTON, NFTA_BYTEORDER_DREG, NFTA_BYTEORDER_LEN, NFTA_BYTEORDER_OP,
        NFTA_BYTEORDER_SIZE, NFTA_BYTEORDER_SREG,
    };
    let mut data = Vec::new();
    for (kind, value) in [
        (NFTA_BYTEORDER_SREG, reg.0),
        (NFTA_BYTEORDER_DREG, reg.0),
        (NFTA_BYTEORDER_OP, NFT_BYTEORDER_HTON),
        (NFTA_BYTEORDER_LEN, len),
        (NFTA_BYTEORDER_SIZE, size),
    ] {
        data.extend_from_slice(&8u16.to_ne_bytes());
        data.extend_from_slice(&kind.to_ne_bytes());
        data.extend_from_slice(&value.to_be_bytes());
    }
    Expr::Other {
        name: "byteorder".into(),
        data,
    }
}

/// `dnat to <addr>:<port>`.
pub fn dnat_to(addr: IpAddr, port: u16) -> Vec<Expr> {
    let (family, bytes) = match addr {
        IpAddr::V4(a) => (2, a.octets().to_vec()),
        IpAddr::V6(a) => (10, a.octets().to_vec()),
    };
    vec![
        Expr::Immediate {
            dreg: Register::R1,
            data: ImmediateData::Value(bytes),
        },
        Expr::Immediate {
            dreg: Register::R2,
            data: ImmediateData::Value(port.to_be_bytes().to_vec()),
        },
        Expr::Nat {
            kind: NatType::Dnat,
            family,
            addr_min: Some(Register::R1),
            proto_min: Some(Register::R2),
            flags: 0x3,
        },
    ]
}

/// `masquerade fully-random`.
pub fn masquerade_fully_random() -> Vec<Expr> {
    vec![Expr::Masq {
        flags: NAT_FULLY_RANDOM,
    }]
}

/// `reject` (ICMP port unreachable) in an `ip` table.
pub fn reject() -> Vec<Expr> {
    vec![Expr::Reject { kind: 0, code: 3 }]
}

/// `reject` in an `ip6` table (ICMPv6 port unreachable).
pub fn reject6() -> Vec<Expr> {
    vec![Expr::Reject { kind: 0, code: 4 }]
}

/// `reject with icmpx port-unreachable` (`inet` tables).
pub fn reject_icmpx() -> Vec<Expr> {
    vec![Expr::Reject { kind: 2, code: 1 }]
}

/// `reject with tcp reset`.
pub fn reject_tcp_reset() -> Vec<Expr> {
    vec![Expr::Reject { kind: 1, code: 0 }]
}

/// `fib saddr type local` (`daddr` with `daddr` true).
pub fn fib_type_local(daddr: bool) -> Vec<Expr> {
    vec![
        Expr::Fib {
            result: 3,
            flags: if daddr { 2 } else { 1 },
            dreg: Register::R1,
        },
        Expr::Cmp {
            sreg: Register::R1,
            op: CmpOp::Eq,
            data: RTN_LOCAL.to_ne_bytes().to_vec(),
        },
    ]
}

/// `update @set { <field> }` (timeout from the set).
pub fn update_set(field: Field, set: SetRef) -> Vec<Expr> {
    vec![
        field.load(Register::R1),
        Expr::Dynset {
            set,
            op: 1,
            sreg_key: Register::R1,
            timeout_ms: None,
        },
    ]
}

/// `counter`.
pub fn counter() -> Vec<Expr> {
    vec![Expr::Counter {
        bytes: 0,
        packets: 0,
    }]
}

/// `notrack`.
pub fn notrack() -> Vec<Expr> {
    vec![Expr::Notrack]
}

/// `limit rate <rate>/second burst <burst> packets`.
pub fn limit_per_second(rate: u64, burst: u32) -> Vec<Expr> {
    vec![Expr::Limit {
        rate,
        unit: 1,
        burst,
        kind: 0,
        flags: 0,
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_mask_the_address() {
        let exprs = prefix(Field::IpSaddr, CmpOp::Neq, [10, 244, 7, 9].into(), 12);
        assert_eq!(
            exprs[1],
            Expr::Bitwise {
                sreg: Register::R1,
                dreg: Register::R1,
                len: 4,
                mask: vec![255, 240, 0, 0],
                xor: vec![0; 4]
            }
        );
        assert_eq!(
            exprs[2],
            Expr::Cmp {
                sreg: Register::R1,
                op: CmpOp::Neq,
                data: vec![10, 240, 0, 0]
            }
        );
    }

    #[test]
    fn concatenations_load_into_consecutive_32_bit_registers() {
        let regs: Vec<Register> = load_concat(&[Field::IpDaddr, Field::L4proto, Field::ThDport])
            .into_iter()
            .map(|e| match e {
                Expr::Payload { dreg, .. } => dreg,
                Expr::Meta {
                    dir: MetaDir::Load(r),
                    ..
                } => r,
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(regs, [Register(1), Register(9), Register(10)]);
        let v6: Vec<Expr> = load_concat(&[Field::Ip6Saddr, Field::Ip6Daddr]);
        assert!(matches!(
            v6[1],
            Expr::Payload {
                // 32-bit register 12 is 16-byte register 2, as the kernel lists it
                dreg: Register(2),
                ..
            }
        ));
    }
}
