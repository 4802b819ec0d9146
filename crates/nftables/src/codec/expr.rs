//! Encoding and decoding of rule expressions (`NFTA_LIST_ELEM` →
//! `NFTA_EXPR_NAME` + `NFTA_EXPR_DATA`).

use super::attrs::{AttrWriter, attrs, be32, be64, string};
use super::constants::*;
use super::data::{Data, emit_value, emit_verdict, parse_data, parse_value};
use crate::Register;
use crate::expr::{
    CmpOp, CtKey, Expr, ImmediateData, MetaDir, MetaKey, NatType, PayloadBase, SetRef,
};
use netlink_packet_core::DecodeError;

/// Writes `exprs` as the content of `NFTA_RULE_EXPRESSIONS`.
pub(crate) fn emit_exprs(w: &mut AttrWriter<'_>, exprs: &[Expr]) {
    for expr in exprs {
        w.nested(NFTA_LIST_ELEM, |w| {
            w.str(NFTA_EXPR_NAME, name(expr));
            w.nested(NFTA_EXPR_DATA, |w| emit_data(w, expr));
        });
    }
}

fn name(expr: &Expr) -> &str {
    match expr {
        Expr::Payload { .. } => "payload",
        Expr::Cmp { .. } => "cmp",
        Expr::Bitwise { .. } => "bitwise",
        Expr::Meta { .. } => "meta",
        Expr::Ct { .. } => "ct",
        Expr::Immediate { .. } => "immediate",
        Expr::Lookup { .. } => "lookup",
        Expr::Numgen { .. } => "numgen",
        Expr::Nat { .. } => "nat",
        Expr::Masq { .. } => "masq",
        Expr::Reject { .. } => "reject",
        Expr::Counter { .. } => "counter",
        Expr::Fib { .. } => "fib",
        Expr::Dynset { .. } => "dynset",
        Expr::Limit { .. } => "limit",
        Expr::Notrack => "notrack",
        Expr::Other { name, .. } => name,
    }
}

fn emit_data(w: &mut AttrWriter<'_>, expr: &Expr) {
    match expr {
        Expr::Payload {
            base,
            offset,
            len,
            dreg,
        } => {
            w.u32(NFTA_PAYLOAD_DREG, dreg.0);
            w.u32(NFTA_PAYLOAD_BASE, payload_base(*base));
            w.u32(NFTA_PAYLOAD_OFFSET, *offset);
            w.u32(NFTA_PAYLOAD_LEN, *len);
        }
        Expr::Cmp { sreg, op, data } => {
            w.u32(NFTA_CMP_SREG, sreg.0);
            w.u32(NFTA_CMP_OP, cmp_op(*op));
            emit_value(w, NFTA_CMP_DATA, data);
        }
        Expr::Bitwise {
            sreg,
            dreg,
            len,
            mask,
            xor,
        } => {
            w.u32(NFTA_BITWISE_SREG, sreg.0);
            w.u32(NFTA_BITWISE_DREG, dreg.0);
            w.u32(NFTA_BITWISE_LEN, *len);
            emit_value(w, NFTA_BITWISE_MASK, mask);
            emit_value(w, NFTA_BITWISE_XOR, xor);
        }
        Expr::Meta { key, dir } => match dir {
            MetaDir::Load(dreg) => {
                w.u32(NFTA_META_DREG, dreg.0);
                w.u32(NFTA_META_KEY, key.number());
            }
            MetaDir::Set(sreg) => {
                w.u32(NFTA_META_KEY, key.number());
                w.u32(NFTA_META_SREG, sreg.0);
            }
        },
        Expr::Ct {
            key,
            dreg,
            direction,
        } => {
            w.u32(NFTA_CT_DREG, dreg.0);
            w.u32(NFTA_CT_KEY, key.number());
            if let Some(d) = direction {
                w.bytes(NFTA_CT_DIRECTION, &[*d]);
            }
        }
        Expr::Immediate { dreg, data } => {
            w.u32(NFTA_IMMEDIATE_DREG, dreg.0);
            match data {
                ImmediateData::Verdict(v) => emit_verdict(w, NFTA_IMMEDIATE_DATA, v),
                ImmediateData::Value(v) => emit_value(w, NFTA_IMMEDIATE_DATA, v),
            }
        }
        Expr::Lookup {
            set,
            sreg,
            dreg,
            invert,
        } => {
            w.str(NFTA_LOOKUP_SET, &set.name);
            if let Some(id) = set.id {
                w.u32(NFTA_LOOKUP_SET_ID, id);
            }
            w.u32(NFTA_LOOKUP_SREG, sreg.0);
            if let Some(d) = dreg {
                w.u32(NFTA_LOOKUP_DREG, d.0);
            }
            if *invert {
                w.u32(NFTA_LOOKUP_FLAGS, NFT_LOOKUP_F_INV);
            }
        }
        Expr::Numgen {
            dreg,
            modulus,
            random,
            offset,
        } => {
            w.u32(NFTA_NG_DREG, dreg.0);
            w.u32(NFTA_NG_MODULUS, *modulus);
            w.u32(NFTA_NG_TYPE, u32::from(*random));
            w.u32(NFTA_NG_OFFSET, *offset);
        }
        Expr::Nat {
            kind,
            family,
            addr_min,
            proto_min,
            flags,
        } => {
            w.u32(NFTA_NAT_TYPE, if *kind == NatType::Dnat { 1 } else { 0 });
            w.u32(NFTA_NAT_FAMILY, u32::from(*family));
            if let Some(r) = addr_min {
                w.u32(NFTA_NAT_REG_ADDR_MIN, r.0);
            }
            if let Some(r) = proto_min {
                w.u32(NFTA_NAT_REG_PROTO_MIN, r.0);
            }
            if *flags != 0 {
                w.u32(NFTA_NAT_FLAGS, *flags);
            }
        }
        Expr::Masq { flags } => {
            if *flags != 0 {
                w.u32(NFTA_MASQ_FLAGS, *flags);
            }
        }
        Expr::Reject { kind, code } => {
            w.u32(NFTA_REJECT_TYPE, *kind);
            w.bytes(NFTA_REJECT_ICMP_CODE, &[*code]);
        }
        Expr::Counter { bytes, packets } => {
            w.u64(NFTA_COUNTER_BYTES, *bytes);
            w.u64(NFTA_COUNTER_PACKETS, *packets);
        }
        Expr::Fib {
            result,
            flags,
            dreg,
        } => {
            w.u32(NFTA_FIB_DREG, dreg.0);
            w.u32(NFTA_FIB_RESULT, *result);
            w.u32(NFTA_FIB_FLAGS, *flags);
        }
        Expr::Dynset {
            set,
            op,
            sreg_key,
            timeout_ms,
        } => {
            w.str(NFTA_DYNSET_SET_NAME, &set.name);
            if let Some(id) = set.id {
                w.u32(NFTA_DYNSET_SET_ID, id);
            }
            w.u32(NFTA_DYNSET_OP, *op);
            w.u32(NFTA_DYNSET_SREG_KEY, sreg_key.0);
            if let Some(t) = timeout_ms {
                w.u64(NFTA_DYNSET_TIMEOUT, *t);
            }
        }
        Expr::Limit {
            rate,
            unit,
            burst,
            kind,
            flags,
        } => {
            w.u64(NFTA_LIMIT_RATE, *rate);
            w.u64(NFTA_LIMIT_UNIT, *unit);
            w.u32(NFTA_LIMIT_BURST, *burst);
            w.u32(NFTA_LIMIT_TYPE, *kind);
            w.u32(NFTA_LIMIT_FLAGS, *flags);
        }
        Expr::Notrack => {}
        Expr::Other { data, .. } => w.bytes_raw(data),
    }
}

fn payload_base(base: PayloadBase) -> u32 {
    match base {
        PayloadBase::LinkLayer => 0,
        PayloadBase::Network => 1,
        PayloadBase::Transport => 2,
    }
}

fn cmp_op(op: CmpOp) -> u32 {
    match op {
        CmpOp::Eq => 0,
        CmpOp::Neq => 1,
        CmpOp::Lt => 2,
        CmpOp::Lte => 3,
        CmpOp::Gt => 4,
        CmpOp::Gte => 5,
    }
}

/// Parses the content of `NFTA_RULE_EXPRESSIONS`.
pub(crate) fn parse_exprs(payload: &[u8]) -> Result<Vec<Expr>, DecodeError> {
    let mut out = Vec::new();
    for attr in attrs(payload) {
        let (kind, value) = attr?;
        if kind == NFTA_LIST_ELEM {
            out.push(parse_expr(value)?);
        }
    }
    Ok(out)
}

fn parse_expr(payload: &[u8]) -> Result<Expr, DecodeError> {
    let mut name = None;
    let mut data: &[u8] = &[];
    for attr in attrs(payload) {
        let (kind, value) = attr?;
        match kind {
            NFTA_EXPR_NAME => name = Some(string(value)?),
            NFTA_EXPR_DATA => data = value,
            _ => {}
        }
    }
    let name = name.ok_or_else(|| DecodeError::from("expression without a name"))?;
    let fields = Fields::parse(data)?;
    fields
        .to_expr(&name, data)
        .map_err(|e| DecodeError::from(format!("expression {name}: {e}")))
}

/// An expression's attributes by kind (every expression has few).
struct Fields<'a> {
    list: Vec<(u16, &'a [u8])>,
}

impl<'a> Fields<'a> {
    fn parse(data: &'a [u8]) -> Result<Self, DecodeError> {
        Ok(Self {
            list: attrs(data).collect::<Result<_, _>>()?,
        })
    }

    fn get(&self, kind: u16) -> Option<&'a [u8]> {
        self.list.iter().find(|(k, _)| *k == kind).map(|(_, v)| *v)
    }

    fn u32(&self, kind: u16) -> Result<u32, DecodeError> {
        be32(
            self.get(kind)
                .ok_or_else(|| DecodeError::from(format!("attribute {kind} missing")))?,
        )
    }

    fn opt_u32(&self, kind: u16) -> Result<Option<u32>, DecodeError> {
        self.get(kind).map(be32).transpose()
    }

    fn u64(&self, kind: u16) -> Result<u64, DecodeError> {
        be64(
            self.get(kind)
                .ok_or_else(|| DecodeError::from(format!("attribute {kind} missing")))?,
        )
    }

    fn reg(&self, kind: u16) -> Result<Register, DecodeError> {
        self.u32(kind).map(Register)
    }

    fn value(&self, kind: u16) -> Result<Vec<u8>, DecodeError> {
        parse_value(
            self.get(kind)
                .ok_or_else(|| DecodeError::from(format!("attribute {kind} missing")))?,
        )
    }

    fn set_ref(&self, name_kind: u16, id_kind: u16) -> Result<SetRef, DecodeError> {
        let name = string(
            self.get(name_kind)
                .ok_or_else(|| DecodeError::from("set name missing"))?,
        )?;
        Ok(SetRef {
            name,
            id: self.opt_u32(id_kind)?,
        })
    }

    fn to_expr(&self, name: &str, raw: &[u8]) -> Result<Expr, DecodeError> {
        Ok(match name {
            "payload" => Expr::Payload {
                base: match self.u32(NFTA_PAYLOAD_BASE)? {
                    0 => PayloadBase::LinkLayer,
                    1 => PayloadBase::Network,
                    2 => PayloadBase::Transport,
                    _ => return Ok(other(name, raw)),
                },
                offset: self.u32(NFTA_PAYLOAD_OFFSET)?,
                len: self.u32(NFTA_PAYLOAD_LEN)?,
                dreg: match self.opt_u32(NFTA_PAYLOAD_DREG)? {
                    Some(r) => Register(r),
                    None => return Ok(other(name, raw)), // payload write
                },
            },
            "cmp" => Expr::Cmp {
                sreg: self.reg(NFTA_CMP_SREG)?,
                op: match self.u32(NFTA_CMP_OP)? {
                    0 => CmpOp::Eq,
                    1 => CmpOp::Neq,
                    2 => CmpOp::Lt,
                    3 => CmpOp::Lte,
                    4 => CmpOp::Gt,
                    5 => CmpOp::Gte,
                    op => return Err(DecodeError::from(format!("unknown cmp op {op}"))),
                },
                data: self.value(NFTA_CMP_DATA)?,
            },
            "bitwise" if self.get(NFTA_BITWISE_MASK).is_some() => Expr::Bitwise {
                sreg: self.reg(NFTA_BITWISE_SREG)?,
                dreg: self.reg(NFTA_BITWISE_DREG)?,
                len: self.u32(NFTA_BITWISE_LEN)?,
                mask: self.value(NFTA_BITWISE_MASK)?,
                xor: self.value(NFTA_BITWISE_XOR)?,
            },
            "meta" => Expr::Meta {
                key: MetaKey::from_number(self.u32(NFTA_META_KEY)?),
                dir: match (self.opt_u32(NFTA_META_DREG)?, self.opt_u32(NFTA_META_SREG)?) {
                    (Some(d), _) => MetaDir::Load(Register(d)),
                    (None, Some(s)) => MetaDir::Set(Register(s)),
                    (None, None) => return Err(DecodeError::from("meta without register")),
                },
            },
            "ct" if self.get(NFTA_CT_DREG).is_some() => Expr::Ct {
                key: CtKey::from_number(self.u32(NFTA_CT_KEY)?),
                dreg: self.reg(NFTA_CT_DREG)?,
                direction: self.get(NFTA_CT_DIRECTION).and_then(|v| v.first().copied()),
            },
            "immediate" => Expr::Immediate {
                dreg: self.reg(NFTA_IMMEDIATE_DREG)?,
                data: match parse_data(
                    self.get(NFTA_IMMEDIATE_DATA)
                        .ok_or_else(|| DecodeError::from("no data"))?,
                )? {
                    Data::Value(v) => ImmediateData::Value(v),
                    Data::Verdict(v) => ImmediateData::Verdict(v),
                },
            },
            "lookup" => Expr::Lookup {
                set: self.set_ref(NFTA_LOOKUP_SET, NFTA_LOOKUP_SET_ID)?,
                sreg: self.reg(NFTA_LOOKUP_SREG)?,
                dreg: self.opt_u32(NFTA_LOOKUP_DREG)?.map(Register),
                invert: self.opt_u32(NFTA_LOOKUP_FLAGS)?.unwrap_or(0) & NFT_LOOKUP_F_INV != 0,
            },
            "numgen" => Expr::Numgen {
                dreg: self.reg(NFTA_NG_DREG)?,
                modulus: self.u32(NFTA_NG_MODULUS)?,
                random: self.u32(NFTA_NG_TYPE)? == 1,
                offset: self.opt_u32(NFTA_NG_OFFSET)?.unwrap_or(0),
            },
            "nat" => Expr::Nat {
                kind: if self.u32(NFTA_NAT_TYPE)? == 1 {
                    NatType::Dnat
                } else {
                    NatType::Snat
                },
                family: self.u32(NFTA_NAT_FAMILY)? as u8,
                addr_min: self.opt_u32(NFTA_NAT_REG_ADDR_MIN)?.map(Register),
                proto_min: self.opt_u32(NFTA_NAT_REG_PROTO_MIN)?.map(Register),
                flags: self.opt_u32(NFTA_NAT_FLAGS)?.unwrap_or(0),
            },
            "masq" => Expr::Masq {
                flags: self.opt_u32(NFTA_MASQ_FLAGS)?.unwrap_or(0),
            },
            "reject" => Expr::Reject {
                kind: self.u32(NFTA_REJECT_TYPE)?,
                code: self
                    .get(NFTA_REJECT_ICMP_CODE)
                    .and_then(|v| v.first().copied())
                    .unwrap_or(0),
            },
            "counter" => Expr::Counter {
                bytes: self.u64(NFTA_COUNTER_BYTES)?,
                packets: self.u64(NFTA_COUNTER_PACKETS)?,
            },
            "fib" => Expr::Fib {
                result: self.u32(NFTA_FIB_RESULT)?,
                flags: self.u32(NFTA_FIB_FLAGS)?,
                dreg: self.reg(NFTA_FIB_DREG)?,
            },
            "dynset" => Expr::Dynset {
                set: self.set_ref(NFTA_DYNSET_SET_NAME, NFTA_DYNSET_SET_ID)?,
                op: self.u32(NFTA_DYNSET_OP)?,
                sreg_key: self.reg(NFTA_DYNSET_SREG_KEY)?,
                timeout_ms: self
                    .get(NFTA_DYNSET_TIMEOUT)
                    .map(be64)
                    .transpose()?
                    .filter(|t| *t != 0),
            },
            "limit" => Expr::Limit {
                rate: self.u64(NFTA_LIMIT_RATE)?,
                unit: self.u64(NFTA_LIMIT_UNIT)?,
                burst: self.opt_u32(NFTA_LIMIT_BURST)?.unwrap_or(0),
                kind: self.opt_u32(NFTA_LIMIT_TYPE)?.unwrap_or(0),
                flags: self.opt_u32(NFTA_LIMIT_FLAGS)?.unwrap_or(0),
            },
            "notrack" => Expr::Notrack,
            _ => other(name, raw),
        })
    }
}

fn other(name: &str, raw: &[u8]) -> Expr {
    Expr::Other {
        name: name.to_string(),
        data: raw.to_vec(),
    }
}
