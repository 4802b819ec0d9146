//! Rule expressions, one variant per kernel expression (`nft --debug=netlink`
//! shows the same list). [`crate::stmt`] builds the lists `nft` makes for
//! the statements of upstream's ruleset.

use crate::{Register, Verdict};

/// One kernel expression.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Expr {
    /// `payload load <len>b @ <base> + <offset> => <dreg>`.
    Payload {
        /// Header the offset counts from.
        base: PayloadBase,
        /// Byte offset.
        offset: u32,
        /// Byte length.
        len: u32,
        /// Destination register.
        dreg: Register,
    },
    /// `cmp <op> <sreg> <data>`.
    Cmp {
        /// Source register.
        sreg: Register,
        /// Comparison.
        op: CmpOp,
        /// The constant, in register layout.
        data: Vec<u8>,
    },
    /// `bitwise dreg = (sreg & mask) ^ xor`.
    Bitwise {
        /// Source register.
        sreg: Register,
        /// Destination register.
        dreg: Register,
        /// Length in bytes.
        len: u32,
        /// The AND mask.
        mask: Vec<u8>,
        /// The XOR value.
        xor: Vec<u8>,
    },
    /// `meta load <key> => dreg` or `meta set <key> with sreg`.
    Meta {
        /// What to read or write.
        key: MetaKey,
        /// Load into or store from this register.
        dir: MetaDir,
    },
    /// `ct load <key> => dreg`.
    Ct {
        /// What to read.
        key: CtKey,
        /// Destination register.
        dreg: Register,
        /// `original` (0) / `reply` (1) for keys that need one.
        direction: Option<u8>,
    },
    /// `immediate <dreg> <data>`: a verdict (to register 0) or a value.
    Immediate {
        /// Destination register.
        dreg: Register,
        /// The verdict or value.
        data: ImmediateData,
    },
    /// `lookup <sreg> set <set> [dreg <dreg>]`: membership (with `dreg`
    /// `None`), a data map, or a verdict map (`dreg` 0).
    Lookup {
        /// The set.
        set: SetRef,
        /// Key register.
        sreg: Register,
        /// Data register for maps.
        dreg: Option<Register>,
        /// `!= @set`.
        invert: bool,
    },
    /// `numgen <dreg> = random|inc mod <modulus> [offset]`.
    Numgen {
        /// Destination register.
        dreg: Register,
        /// Modulus.
        modulus: u32,
        /// Random or incremental.
        random: bool,
        /// Added to the result.
        offset: u32,
    },
    /// `nat snat|dnat <family> addr_min <reg> proto_min <reg>`.
    Nat {
        /// DNAT or SNAT.
        kind: NatType,
        /// `NFPROTO_*` of the address.
        family: u8,
        /// Register with the address.
        addr_min: Option<Register>,
        /// Register with the port.
        proto_min: Option<Register>,
        /// `NF_NAT_RANGE_*` flags (the kernel adds `MAP_IPS` and
        /// `PROTO_SPECIFIED` itself when registers are given).
        flags: u32,
    },
    /// `masquerade`, with `NF_NAT_RANGE_*` flags (`0x10` fully-random).
    Masq {
        /// Flags.
        flags: u32,
    },
    /// `reject type <kind> code <code>`.
    Reject {
        /// `NFT_REJECT_*`: 0 icmp unreachable, 1 tcp reset, 2 icmpx.
        kind: u32,
        /// The ICMP code (3 port unreachable for icmp, 1 for icmpx).
        code: u8,
    },
    /// `counter packets … bytes …`.
    Counter {
        /// Bytes seen.
        bytes: u64,
        /// Packets seen.
        packets: u64,
    },
    /// `fib <flags> <result> => dreg` (e.g. `fib daddr type`).
    Fib {
        /// `NFT_FIB_RESULT_*` (3 address type).
        result: u32,
        /// `NFTA_FIB_F_*` (1 saddr, 2 daddr, …).
        flags: u32,
        /// Destination register.
        dreg: Register,
    },
    /// `dynset add|update <sreg_key> set <set> [timeout]`.
    Dynset {
        /// The set.
        set: SetRef,
        /// 0 add, 1 update, 2 delete.
        op: u32,
        /// Key register.
        sreg_key: Register,
        /// Timeout in milliseconds.
        timeout_ms: Option<u64>,
    },
    /// `limit rate …`.
    Limit {
        /// Rate per unit.
        rate: u64,
        /// Unit in seconds.
        unit: u64,
        /// Burst.
        burst: u32,
        /// 0 packets, 1 bytes.
        kind: u32,
        /// 1 `over`.
        flags: u32,
    },
    /// `notrack`.
    Notrack,
    /// An expression this codec does not model, kept as read.
    Other {
        /// Its kernel name.
        name: String,
        /// Its `NFTA_EXPR_DATA`, raw.
        data: Vec<u8>,
    },
}

/// Where a payload offset counts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PayloadBase {
    /// Link layer.
    LinkLayer,
    /// Network header (`ip`, `ip6`).
    Network,
    /// Transport header (`th`, `tcp`, `udp`).
    Transport,
}

/// A comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmpOp {
    /// `==`.
    Eq,
    /// `!=`.
    Neq,
    /// `<`.
    Lt,
    /// `<=`.
    Lte,
    /// `>`.
    Gt,
    /// `>=`.
    Gte,
}

/// Meta keys used by kube-proxy (`NFT_META_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetaKey {
    /// `mark`.
    Mark,
    /// `iifname`.
    Iifname,
    /// `oifname`.
    Oifname,
    /// `nfproto`.
    Nfproto,
    /// `l4proto`.
    L4proto,
    /// Any other `NFT_META_*` number.
    Other(u32),
}

impl MetaKey {
    /// `NFT_META_*`.
    pub fn number(self) -> u32 {
        match self {
            MetaKey::Mark => 3,
            MetaKey::Iifname => 6,
            MetaKey::Oifname => 7,
            MetaKey::Nfproto => 15,
            MetaKey::L4proto => 16,
            MetaKey::Other(n) => n,
        }
    }

    /// The key for an `NFT_META_*` number.
    pub fn from_number(n: u32) -> Self {
        match n {
            3 => MetaKey::Mark,
            6 => MetaKey::Iifname,
            7 => MetaKey::Oifname,
            15 => MetaKey::Nfproto,
            16 => MetaKey::L4proto,
            n => MetaKey::Other(n),
        }
    }
}

/// Whether a meta expression reads or writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetaDir {
    /// Load into a register.
    Load(Register),
    /// Set from a register.
    Set(Register),
}

/// Conntrack keys used by kube-proxy (`NFT_CT_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CtKey {
    /// `state`.
    State,
    /// `direction`.
    Direction,
    /// `status`.
    Status,
    /// Any other `NFT_CT_*` number.
    Other(u32),
}

impl CtKey {
    /// `NFT_CT_*`.
    pub fn number(self) -> u32 {
        match self {
            CtKey::State => 0,
            CtKey::Direction => 1,
            CtKey::Status => 2,
            CtKey::Other(n) => n,
        }
    }

    /// The key for an `NFT_CT_*` number.
    pub fn from_number(n: u32) -> Self {
        match n {
            0 => CtKey::State,
            1 => CtKey::Direction,
            2 => CtKey::Status,
            n => CtKey::Other(n),
        }
    }
}

/// An immediate's data.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ImmediateData {
    /// A verdict (register 0).
    Verdict(Verdict),
    /// A value in register layout.
    Value(Vec<u8>),
}

/// DNAT or SNAT.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NatType {
    /// `snat`.
    Snat,
    /// `dnat`.
    Dnat,
}

/// How a rule names a set: by name, plus the transaction-local id for a
/// set created in the same transaction whose name the kernel picks.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SetRef {
    /// The set's name (`__set%d` for a new anonymous set).
    pub name: String,
    /// Its id in the transaction, for a new anonymous set.
    pub id: Option<u32>,
}

impl SetRef {
    /// A named set.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            id: None,
        }
    }

    /// The anonymous set created in the same transaction as `set`.
    pub fn to_set(set: &crate::Set) -> Self {
        Self {
            name: set.name.clone(),
            id: set.id,
        }
    }
}
