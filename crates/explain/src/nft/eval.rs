//! One rule evaluated for one packet, expression by expression, as the
//! kernel does: a failed comparison or a lookup that misses ends the rule
//! (the next one runs), a verdict ends it with that verdict, `nat`,
//! `masquerade` and `reject` end it for good. Random and historical
//! choices fork the packet.

use super::describe::key_text;
use super::registers::Registers;
use super::sets;
use nftables::render::endpoint_slots::slot_key_number;
use crate::error::ExplainError;
use crate::tracer::flight::{Flight, Iface};
use crate::tracer::TraceContext;
use nftables::{CmpOp, CtKey, ElementData, Expr, ImmediateData, MetaDir, MetaKey, NatType, PayloadBase, Register, Rule, TableContents, Value, Verdict};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// How a rule ended for one packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum RuleEnd {
    /// A match failed: the next rule runs; nothing happened.
    Missed,
    /// Every expression ran without a verdict: the next rule runs.
    Matched,
    /// A verdict (immediate or from a verdict map).
    Verdict(Verdict),
    /// `dnat`, `snat` or `masquerade`: the packet is accepted at this hook.
    Nat,
    /// `reject`.
    Reject,
}

/// One packet part-way through a rule.
#[derive(Clone)]
struct State {
    flight: Flight,
    regs: Registers,
    notes: Vec<String>,
}

/// Evaluates `rule` of `table` for `flight`: each resulting packet (with
/// the lookups it made, as notes, when the rule matched) and how the rule
/// ended for it.
pub(super) fn eval_rule(
    table: &TableContents,
    rule: &Rule,
    ctx: &TraceContext,
    flight: Flight,
) -> Result<Vec<(Flight, Vec<String>, RuleEnd)>, ExplainError> {
    let mut out = Vec::new();
    let eval = Eval { table, rule, ctx };
    eval.from(0, State { flight, regs: Registers::default(), notes: Vec::new() }, &mut out)?;
    Ok(out)
}

struct Eval<'a> {
    table: &'a TableContents,
    rule: &'a Rule,
    ctx: &'a TraceContext,
}

type Out = Vec<(Flight, Vec<String>, RuleEnd)>;

impl Eval<'_> {
    fn from(&self, start: usize, mut st: State, out: &mut Out) -> Result<(), ExplainError> {
        for (i, expr) in self.rule.exprs.iter().enumerate().skip(start) {
            match self.step(i, expr, &mut st)? {
                Step::Go => {}
                Step::End(end) => {
                    out.push((st.flight, st.notes, end));
                    return Ok(());
                }
                Step::Fork(branches) => {
                    for (branch, end) in branches {
                        match end {
                            None => self.from(i + 1, branch, out)?,
                            Some(end) => out.push((branch.flight, branch.notes, end)),
                        }
                    }
                    return Ok(());
                }
            }
        }
        out.push((st.flight, st.notes, RuleEnd::Matched));
        Ok(())
    }

    fn step(&self, i: usize, expr: &Expr, st: &mut State) -> Result<Step, ExplainError> {
        match expr {
            Expr::Payload { base, offset, len, dreg } => {
                let bytes = payload(&st.flight, *base, *offset, *len).ok_or_else(|| self.unmodelled("payload", expr))?;
                st.regs.store(*dreg, &bytes)?;
            }
            Expr::Cmp { sreg, op, data } => {
                let have = st.regs.load(*sreg, data.len())?;
                if !compare(have, *op, data) {
                    return Ok(Step::End(RuleEnd::Missed));
                }
            }
            Expr::Bitwise { sreg, dreg, len, mask, xor } => {
                let have = st.regs.load(*sreg, *len as usize)?.to_vec();
                let result: Vec<u8> = have
                    .iter()
                    .enumerate()
                    .map(|(i, b)| (b & mask.get(i).copied().unwrap_or(0)) ^ xor.get(i).copied().unwrap_or(0))
                    .collect();
                st.regs.store(*dreg, &result)?;
            }
            Expr::Meta { key, dir: MetaDir::Load(dreg) } => {
                let bytes = meta(&st.flight, self.ctx, *key).ok_or_else(|| self.unmodelled("meta", expr))?;
                st.regs.store(*dreg, &bytes)?;
            }
            Expr::Meta { key: MetaKey::Mark, dir: MetaDir::Set(sreg) } => {
                let bytes = st.regs.load(*sreg, 4)?;
                st.flight.mark = u32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
            }
            Expr::Ct { key, dreg, .. } => st.regs.store(*dreg, &ct(&st.flight, *key).ok_or_else(|| self.unmodelled("ct", expr))?)?,
            Expr::Fib { result: 3, flags, dreg } if flags & 0x3 != 0 => {
                let ip = if flags & 0x1 != 0 { st.flight.source } else { st.flight.destination };
                let kind: u32 = if self.ctx.is_local(ip) { 2 } else { 1 };
                st.regs.store(*dreg, &kind.to_ne_bytes())?;
            }
            Expr::Immediate { data: ImmediateData::Verdict(v), .. } => return Ok(Step::End(RuleEnd::Verdict(v.clone()))),
            Expr::Immediate { dreg, data: ImmediateData::Value(bytes) } => st.regs.store(*dreg, bytes)?,
            Expr::Lookup { set, sreg, dreg, invert } => return self.lookup(&set.name, *sreg, *dreg, *invert, st),
            Expr::Numgen { dreg, modulus, offset, .. } => {
                let cuts = self.interval_cuts(i, *modulus, *offset);
                return self.numgen(*dreg, *modulus, *offset, cuts, st);
            }
            Expr::Other { name, data } if name == "byteorder" => {
                let (sreg, dreg) = byteorder_hton_4(data).ok_or_else(|| self.unmodelled("byteorder", expr))?;
                let have = st.regs.load(sreg, 4)?;
                let n = u32::from_ne_bytes([have[0], have[1], have[2], have[3]]);
                st.regs.store(dreg, &n.to_be_bytes())?;
            }
            Expr::Nat { kind, addr_min, proto_min, .. } => {
                self.nat(*kind, *addr_min, *proto_min, st)?;
                return Ok(Step::End(RuleEnd::Nat));
            }
            Expr::Masq { .. } => {
                st.flight.snat = true;
                return Ok(Step::End(RuleEnd::Nat));
            }
            Expr::Reject { .. } => return Ok(Step::End(RuleEnd::Reject)),
            Expr::Dynset { set, .. } => st.notes.push(format!("remember the client in @{} (session affinity)", set.name)),
            Expr::Counter { .. } | Expr::Limit { .. } | Expr::Notrack => {}
            Expr::Meta { .. } | Expr::Fib { .. } | Expr::Other { .. } => return Err(self.unmodelled("expression", expr)),
        }
        Ok(Step::Go)
    }

    fn lookup(&self, name: &str, sreg: Register, dreg: Option<Register>, invert: bool, st: &mut State) -> Result<Step, ExplainError> {
        let (set, elements) = sets::named(self.table, name)
            .ok_or_else(|| ExplainError::Nftables(format!("chain {}: lookup in set {name}, which the table lacks", self.rule.chain)))?;
        let key = st.regs.load(sreg, nftables::DataType::concat_len(&set.key) as usize)?.to_vec();
        let shown = key_text(&set.key, &key);
        if sets::is_dynamic(set) && dreg.is_none() {
            let mut hit = st.clone();
            hit.flight.sticky = true;
            hit.notes.push(format!("{shown} in @{name}: a returning client (session affinity)"));
            let mut miss = st.clone();
            miss.notes.push(format!("{shown} not in @{name}: a new client"));
            let (go, stop) = if invert { (miss, hit) } else { (hit, miss) };
            return Ok(Step::Fork(vec![(go, None), (stop, Some(RuleEnd::Missed))]));
        }
        let found = sets::find(set, elements, &key);
        match (dreg, found) {
            (None, found) if found.is_some() != invert => Ok(Step::Go),
            (None, _) | (Some(_), None) => Ok(Step::End(RuleEnd::Missed)),
            (Some(Register::VERDICT), Some(element)) => {
                let Some(ElementData::Verdict(verdict)) = &element.data else {
                    return Err(ExplainError::Nftables(format!("map {name}: element {shown} has no verdict")));
                };
                let comment = element.comment().map(|c| format!(" (comment \"{c}\")")).unwrap_or_default();
                st.notes.push(format!("{}: {shown}{comment} -> {verdict}", shown_set(name)));
                Ok(Step::End(RuleEnd::Verdict(verdict.clone())))
            }
            (Some(dreg), Some(element)) => {
                let Some(ElementData::Values(values)) = &element.data else {
                    return Err(ExplainError::Nftables(format!("map {name}: element {shown} has no data")));
                };
                st.regs.store(dreg, &Value::concat_bytes(values))?;
                let data: Vec<String> = values.iter().map(Value::to_string).collect();
                st.notes.push(format!("map: {shown} -> {}", data.join(" . ")));
                Ok(Step::Go)
            }
        }
    }

    /// `numgen random mod <modulus> offset <offset>`: one branch per
    /// number, or, where the number is looked up in an interval map
    /// (`cuts`: where its ranges begin and end inside the numbers), one
    /// branch per range with its share of the numbers.
    fn numgen(&self, dreg: Register, modulus: u32, offset: u32, cuts: Option<Vec<u32>>, st: &State) -> Result<Step, ExplainError> {
        let modulus = modulus.max(1);
        let last = offset.saturating_add(modulus);
        let mut points = cuts.unwrap_or_else(|| (offset..last).collect());
        points.push(offset);
        points.push(last);
        points.retain(|p| (offset..=last).contains(p));
        points.sort_unstable();
        points.dedup();
        let mut branches = Vec::new();
        for pair in points.windows(2) {
            let (first, end) = (pair[0], pair[1]);
            let mut branch = st.clone();
            branch.regs.store(dreg, &first.to_ne_bytes())?;
            branch.flight.probability *= f64::from(end - first) / f64::from(modulus);
            let shown = match end - first {
                1 => format!("{first}"),
                _ => format!("{first}-{}", end - 1),
            };
            let offset_text = if offset == 0 { String::new() } else { format!(" offset {offset}") };
            branch.notes.push(format!("numgen random mod {modulus}{offset_text} = {shown}"));
            branches.push((branch, None));
        }
        Ok(Step::Fork(branches))
    }

    /// Where a `numgen` at expression `i` is turned into network order and
    /// looked up in an interval map (the shared endpoint maps): the keys
    /// at which the map's ranges begin or end. `None` otherwise.
    fn interval_cuts(&self, i: usize, modulus: u32, offset: u32) -> Option<Vec<u32>> {
        let (Some(Expr::Other { name, .. }), Some(Expr::Lookup { set, .. })) = (self.rule.exprs.get(i + 1), self.rule.exprs.get(i + 2)) else {
            return None;
        };
        let (set, elements) = sets::named(self.table, &set.name)?;
        if name != "byteorder" || !set.flags.contains(nftables::SetFlags::INTERVAL) {
            return None;
        }
        let window = offset..offset.saturating_add(modulus);
        Some(
            elements
                .iter()
                .filter_map(|e| slot_key_number(e.key.first()?))
                .filter(|k| window.contains(k))
                .collect(),
        )
    }

    fn nat(&self, kind: NatType, addr: Option<Register>, port: Option<Register>, st: &mut State) -> Result<(), ExplainError> {
        let width = if st.flight.destination.is_ipv4() { 4 } else { 16 };
        let ip = match addr {
            Some(reg) => Some(ip_of(st.regs.load(reg, width)?)),
            None => None,
        };
        let port = match port {
            Some(reg) => {
                let b = st.regs.load(reg, 2)?;
                Some(u16::from_be_bytes([b[0], b[1]]))
            }
            None => None,
        };
        match kind {
            NatType::Dnat => {
                st.flight.destination = ip.unwrap_or(st.flight.destination);
                st.flight.destination_port = port.unwrap_or(st.flight.destination_port);
                st.flight.dnat = true;
            }
            NatType::Snat => {
                st.flight.source = ip.unwrap_or(st.flight.source);
                st.flight.snat = true;
            }
        }
        Ok(())
    }

    fn unmodelled(&self, what: &str, expr: &Expr) -> ExplainError {
        ExplainError::Nftables(format!("chain {}: {what} not modelled: {expr:?}", self.rule.chain))
    }
}

/// What one expression did.
enum Step {
    /// Go on with the next expression.
    Go,
    /// The rule ends here.
    End(RuleEnd),
    /// The packet forks; each branch goes on with the next expression
    /// (`None`) or ends the rule.
    Fork(Vec<(State, Option<RuleEnd>)>),
}

/// The registers of a `byteorder` expression turning 4 bytes into network
/// order (`hton`, size 4, length 4): the only kind our tables hold.
fn byteorder_hton_4(data: &[u8]) -> Option<(Register, Register)> {
    let mut attrs = std::collections::HashMap::new();
    let mut rest = data;
    while rest.len() >= 8 {
        let len = usize::from(u16::from_ne_bytes([rest[0], rest[1]]));
        let kind = u16::from_ne_bytes([rest[2], rest[3]]);
        let value = u32::from_be_bytes(rest.get(4..8)?.try_into().ok()?);
        attrs.insert(kind, value);
        rest = rest.get(len.div_ceil(4) * 4..)?;
    }
    // NFTA_BYTEORDER_SREG 1, DREG 2, OP 3 (hton = 1), LEN 4, SIZE 5
    let hton = attrs.get(&3) == Some(&1) && attrs.get(&4) == Some(&4) && attrs.get(&5) == Some(&4);
    hton.then(|| Some((Register(*attrs.get(&1)?), Register(*attrs.get(&2)?))))?
}

/// `@name`, or `map` for an anonymous one (its name is nobody's).
fn shown_set(name: &str) -> String {
    if name.starts_with("__") { "map".to_string() } else { format!("@{name}") }
}

fn ip_of(bytes: &[u8]) -> IpAddr {
    match bytes.len() {
        4 => IpAddr::V4(Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3])),
        _ => {
            let mut octets = [0u8; 16];
            octets.copy_from_slice(&bytes[..16]);
            IpAddr::V6(Ipv6Addr::from(octets))
        }
    }
}

fn ip_bytes(ip: IpAddr) -> Vec<u8> {
    match ip {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

/// The header bytes a payload expression loads: any slice of the
/// addresses (IPv4 12..20, IPv6 8..40) or of the ports (transport 0..4),
/// so a prefix `nft` shortened to whole bytes (`ip saddr 10.244.0.0/16`
/// loads 2 bytes) reads as the kernel reads it.
fn payload(flight: &Flight, base: PayloadBase, offset: u32, len: u32) -> Option<Vec<u8>> {
    let (start, header) = match base {
        PayloadBase::Network => {
            let start = if flight.source.is_ipv4() { 12 } else { 8 };
            let mut bytes = ip_bytes(flight.source);
            bytes.extend(ip_bytes(flight.destination));
            (start, bytes)
        }
        PayloadBase::Transport => {
            let mut bytes = flight.source_port.to_be_bytes().to_vec();
            bytes.extend(flight.destination_port.to_be_bytes());
            (0, bytes)
        }
        PayloadBase::LinkLayer => return None,
    };
    let from = (offset as usize).checked_sub(start)?;
    header.get(from..from + len as usize).map(<[u8]>::to_vec)
}

/// The bytes a meta load puts in its register.
fn meta(flight: &Flight, ctx: &TraceContext, key: MetaKey) -> Option<Vec<u8>> {
    Some(match key {
        MetaKey::Mark => flight.mark.to_ne_bytes().to_vec(),
        MetaKey::L4proto => vec![protocol_number(flight.protocol)],
        MetaKey::Nfproto => vec![if flight.source.is_ipv4() { 2 } else { 10 }],
        MetaKey::Iifname => ifname(flight.input_interface()),
        MetaKey::Oifname => ifname(flight.output_interface(ctx)),
        MetaKey::Other(_) => return None,
    })
}

fn protocol_number(protocol: crate::tracer::Protocol) -> u8 {
    match protocol {
        crate::tracer::Protocol::Tcp => 6,
        crate::tracer::Protocol::Udp => 17,
        crate::tracer::Protocol::Sctp => 132,
    }
}

/// An interface name as the kernel loads it (16 bytes, NUL padded); an
/// absent or unknown one loads as the empty name.
fn ifname(iface: Iface) -> Vec<u8> {
    let mut bytes = vec![0u8; 16];
    if let Iface::Known(name) = iface {
        for (slot, b) in bytes.iter_mut().zip(name.bytes().take(15)) {
            *slot = b;
        }
    }
    bytes
}

/// Conntrack keys for the first packet of a new connection.
fn ct(flight: &Flight, key: CtKey) -> Option<Vec<u8>> {
    Some(match key {
        CtKey::State => 0x8u32.to_ne_bytes().to_vec(),
        CtKey::Direction => vec![0],
        CtKey::Status => {
            let bits = if flight.dnat { 0x20u32 } else { 0 } | if flight.snat { 0x10 } else { 0 };
            bits.to_ne_bytes().to_vec()
        }
        CtKey::Other(_) => return None,
    })
}

/// `have <op> want` as the kernel's `cmp` does (memcmp order).
fn compare(have: &[u8], op: CmpOp, want: &[u8]) -> bool {
    let order = have.cmp(want);
    match op {
        CmpOp::Eq => order.is_eq(),
        CmpOp::Neq => order.is_ne(),
        CmpOp::Lt => order.is_lt(),
        CmpOp::Lte => order.is_le(),
        CmpOp::Gt => order.is_gt(),
        CmpOp::Gte => order.is_ge(),
    }
}
