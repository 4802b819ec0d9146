//! `nft -j list ruleset` compiled to the `nftables` crate's types, so a
//! saved dump is walked by the same walker as a live table. Statements
//! become the expression lists `nft` makes for them (the `nftables`
//! crate's [`stmt`] builders); anonymous sets become sets of the table
//! named `__json<n>`. The vocabulary is kube-proxy's (upstream's and
//! ours): a statement outside it is an error naming the rule.

mod values;

use crate::error::ExplainError;
use nftables::stmt::{self, Field};
use nftables::{
    BaseChain, Chain, ChainType, CmpOp, DataType, Element, ElementData, Expr, Family, Hook, MetaDir, MetaKey, Policy, Register,
    Rule, Set, SetFlags, SetRef, Table, TableContents, Value, Verdict,
};
use serde_json::Value as Json;
use values::{element_keys, field_type, parse_value};

/// The tables of an `nft -j list ruleset` dump.
pub fn tables(text: &str) -> Result<Vec<TableContents>, ExplainError> {
    let dump: Json = serde_json::from_str(text).map_err(|e| ExplainError::NftJson(format!("not JSON: {e}")))?;
    let objects = dump.get("nftables").and_then(Json::as_array).ok_or_else(|| bad("no `nftables` list at the top"))?;
    let mut tables: Vec<TableContents> = Vec::new();
    let mut anonymous = 0u32;
    for object in objects {
        let Some((kind, body)) = object.as_object().and_then(|o| o.iter().next()) else { continue };
        match kind.as_str() {
            "table" => tables.push(empty_table(body)?),
            "chain" => table_of(&mut tables, body)?.chains.push(chain(body)?),
            "set" | "map" => add_set(table_of(&mut tables, body)?, body)?,
            "rule" => {
                let table = table_of(&mut tables, body)?;
                let rule = Compiler { table, anonymous: &mut anonymous }.rule(body)?;
                table.rules.push(rule);
            }
            _ => {}
        }
    }
    Ok(tables)
}

fn bad(what: impl Into<String>) -> ExplainError {
    ExplainError::NftJson(what.into())
}

fn text<'a>(body: &'a Json, key: &str) -> Result<&'a str, ExplainError> {
    body.get(key).and_then(Json::as_str).ok_or_else(|| bad(format!("no `{key}` in {body}")))
}

fn family(body: &Json) -> Result<Family, ExplainError> {
    match text(body, "family")? {
        "ip" => Ok(Family::Ip),
        "ip6" => Ok(Family::Ip6),
        "inet" => Ok(Family::Inet),
        other => Err(bad(format!("family `{other}` is not walked"))),
    }
}

fn empty_table(body: &Json) -> Result<TableContents, ExplainError> {
    Ok(TableContents {
        table: Table::new(family(body)?, text(body, "name")?),
        chains: Vec::new(),
        rules: Vec::new(),
        sets: Vec::new(),
        elements: Default::default(),
    })
}

/// The table (declared before) that `body` names.
fn table_of<'a>(tables: &'a mut [TableContents], body: &Json) -> Result<&'a mut TableContents, ExplainError> {
    let (family, name) = (family(body)?, text(body, "table")?);
    tables
        .iter_mut()
        .find(|t| t.table.family == family && t.table.name == name)
        .ok_or_else(|| bad(format!("an object of table {} {name}, which was not declared before it", family.name())))
}

fn chain(body: &Json) -> Result<Chain, ExplainError> {
    let name = text(body, "name")?;
    let Some(hook) = body.get("hook").and_then(Json::as_str) else { return Ok(Chain::regular(name)) };
    let hook = match hook {
        "prerouting" => Hook::Prerouting,
        "input" => Hook::Input,
        "forward" => Hook::Forward,
        "output" => Hook::Output,
        "postrouting" => Hook::Postrouting,
        other => return Err(bad(format!("chain {name}: hook `{other}`"))),
    };
    let kind = ChainType::from_name(text(body, "type")?).ok_or_else(|| bad(format!("chain {name}: unknown type")))?;
    let priority = body.get("prio").and_then(Json::as_i64).ok_or_else(|| bad(format!("chain {name}: no numeric `prio`")))?;
    let policy = if body.get("policy").and_then(Json::as_str) == Some("drop") { Policy::Drop } else { Policy::Accept };
    Ok(Chain::base(name, BaseChain { kind, hook, priority: priority as i32, policy }))
}

fn type_list(value: Option<&Json>) -> Result<Vec<DataType>, ExplainError> {
    let names: Vec<&str> = match value {
        // `nft -j` writes a map's concatenated data as one string: "ipv4_addr . inet_service"
        Some(Json::String(one)) => one.split(" . ").collect(),
        Some(Json::Array(many)) => many.iter().filter_map(Json::as_str).collect(),
        _ => return Err(bad("a set without a `type`")),
    };
    names
        .iter()
        .map(|name| match *name {
            "ipv4_addr" => Ok(DataType::Ipv4Addr),
            "ipv6_addr" => Ok(DataType::Ipv6Addr),
            "inet_proto" => Ok(DataType::InetProto),
            "inet_service" => Ok(DataType::InetService),
            "mark" => Ok(DataType::Mark),
            "integer" => Ok(DataType::Integer),
            "verdict" => Ok(DataType::Verdict),
            other => Err(bad(format!("set type `{other}`"))),
        })
        .collect()
}

fn add_set(table: &mut TableContents, body: &Json) -> Result<(), ExplainError> {
    let name = text(body, "name")?;
    let key = type_list(body.get("type"))?;
    let mut set = match body.get("map") {
        Some(data) => Set::map(name, key.clone(), type_list(Some(data))?),
        None => Set::new(name, key.clone()),
    };
    for flag in body.get("flags").and_then(Json::as_array).into_iter().flatten().filter_map(Json::as_str) {
        set.flags = set.flags
            | match flag {
                "interval" => SetFlags::INTERVAL,
                "timeout" => SetFlags::TIMEOUT,
                "dynamic" => SetFlags::DYNAMIC,
                "constant" => SetFlags::CONSTANT,
                _ => SetFlags::default(),
            };
    }
    set.timeout_ms = body.get("timeout").and_then(Json::as_u64).map(|s| s * 1000);
    set.comment = body.get("comment").and_then(Json::as_str).map(str::to_string);
    let mut elements = Vec::new();
    for item in body.get("elem").and_then(Json::as_array).into_iter().flatten() {
        elements.extend(element(&set, item).map_err(|e| bad(format!("set {name}: {e}")))?);
    }
    if elements.iter().any(Element::is_interval_end) {
        set.flags = set.flags | SetFlags::INTERVAL;
    }
    table.elements.insert(TableContents::set_key(&set), elements);
    table.sets.push(set);
    Ok(())
}

/// One element (`key`, `{"elem": {"val": key, "comment": …}}`, or for a
/// map `[key, data]`): one kernel element, or two for a prefix or range.
fn element(set: &Set, item: &Json) -> Result<Vec<Element>, String> {
    let (key, data) = match (item.as_array(), set.data.is_some()) {
        (Some(pair), true) if pair.len() == 2 => (&pair[0], Some(&pair[1])),
        _ => (item, None),
    };
    let (key, comment) = match key.get("elem") {
        Some(inner) => (inner.get("val").ok_or("an `elem` without `val`")?, inner.get("comment").and_then(Json::as_str)),
        None => (key, None),
    };
    let data = match (data, set.data.as_deref()) {
        (Some(d), Some([DataType::Verdict])) => Some(ElementData::Verdict(verdict(d).map_err(|e| e.to_string())?)),
        (Some(d), Some(types)) => Some(ElementData::Values(parse_values(types, d)?)),
        _ => None,
    };
    let mut elements = element_keys(&set.key, key)?;
    if let Some(first) = elements.first_mut() {
        first.data = data;
        first.set_comment(comment.map(str::to_string));
    }
    Ok(elements)
}

fn parse_values(types: &[DataType], value: &Json) -> Result<Vec<Value>, String> {
    match (types, value.get("concat").and_then(Json::as_array)) {
        (_, Some(parts)) => types.iter().zip(parts).map(|(ty, part)| parse_value(*ty, part)).collect(),
        ([ty], None) => Ok(vec![parse_value(*ty, value)?]),
        _ => Err(format!("`{value}` does not fit {types:?}")),
    }
}

fn verdict(value: &Json) -> Result<Verdict, ExplainError> {
    let (kind, body) = value.as_object().and_then(|o| o.iter().next()).ok_or_else(|| bad(format!("verdict `{value}`")))?;
    let target = || body.get("target").and_then(Json::as_str).map(str::to_string).ok_or_else(|| bad(format!("`{kind}` without target")));
    Ok(match kind.as_str() {
        "accept" => Verdict::Accept,
        "drop" => Verdict::Drop,
        "continue" => Verdict::Continue,
        "return" => Verdict::Return,
        "jump" => Verdict::Jump(target()?),
        "goto" => Verdict::Goto(target()?),
        other => return Err(bad(format!("verdict `{other}`"))),
    })
}

/// Compiles the rules of one table; numbers its anonymous sets.
struct Compiler<'a> {
    table: &'a mut TableContents,
    anonymous: &'a mut u32,
}

impl Compiler<'_> {
    fn rule(&mut self, body: &Json) -> Result<Rule, ExplainError> {
        let chain = text(body, "chain")?.to_string();
        let mut exprs = Vec::new();
        for statement in body.get("expr").and_then(Json::as_array).into_iter().flatten() {
            let compiled = self.statement(statement).map_err(|e| bad(format!("chain {chain}: {e}: {statement}")))?;
            exprs.extend(compiled);
        }
        let mut rule = Rule::new(chain, exprs);
        rule.comment = body.get("comment").and_then(Json::as_str).map(str::to_string);
        rule.handle = body.get("handle").and_then(Json::as_u64);
        Ok(rule)
    }

    fn statement(&mut self, statement: &Json) -> Result<Vec<Expr>, String> {
        let (kind, body) = statement.as_object().and_then(|o| o.iter().next()).ok_or("not a statement")?;
        Ok(match kind.as_str() {
            "match" => self.matching(body)?,
            "vmap" => self.vmap(body)?,
            "mangle" => mangle(body)?,
            "masquerade" => vec![Expr::Masq { flags: if body.get("flags").is_some() { stmt::NAT_FULLY_RANDOM } else { 0 } }],
            "reject" => stmt::reject(),
            "dnat" => self.dnat(body)?,
            "set" => {
                let set = body.get("set").and_then(Json::as_str).ok_or("`set` without a set")?;
                let field = fields(body.get("elem").ok_or("`set` without elem")?)?;
                stmt::update_set(*field.first().ok_or("no field")?, SetRef::named(set.trim_start_matches('@')))
            }
            "counter" => stmt::counter(),
            "accept" | "drop" | "continue" | "return" | "jump" | "goto" => stmt::verdict(verdict(statement).map_err(|e| e.to_string())?),
            other => return Err(format!("statement `{other}` is not modelled")),
        })
    }

    fn matching(&mut self, body: &Json) -> Result<Vec<Expr>, String> {
        let op = body.get("op").and_then(Json::as_str).unwrap_or("==");
        let left = body.get("left").ok_or("match without left")?;
        let right = body.get("right").ok_or("match without right")?;
        if let Some(key) = left.get("ct").and_then(|c| c.get("key")).and_then(Json::as_str) {
            return ct_match(key, right);
        }
        if let Some(fib) = left.get("fib") {
            let saddr = fib.get("flags").and_then(Json::as_array).is_some_and(|f| f.iter().any(|x| x == "saddr"));
            if right != "local" {
                return Err("only `fib … type local` is modelled".to_string());
            }
            let mut exprs = stmt::fib_type_local(!saddr);
            if op == "!=" {
                flip_last_cmp(&mut exprs);
            }
            return Ok(exprs);
        }
        if let Some([inner, mask]) = left.get("&").and_then(Json::as_array).map(Vec::as_slice) {
            let (field, mask) = (single(inner)?, mask.as_u64().ok_or("non-numeric mask")? as u32);
            let want = right.as_u64().ok_or("non-numeric value")? as u32;
            return Ok(masked(field, mask, want, cmp_op(op)?));
        }
        let fields = fields(left)?;
        let invert = op == "!=";
        if let Some(name) = right.as_str().and_then(|s| s.strip_prefix('@')) {
            return Ok(stmt::in_set(&fields, SetRef::named(name), invert));
        }
        if right.get("set").is_some() {
            let name = self.anonymous_set(&fields, right.get("set").ok_or("set")?)?;
            return Ok(stmt::in_set(&fields, SetRef::named(name), invert));
        }
        if let Some(prefix) = right.get("prefix") {
            let addr = prefix.get("addr").and_then(Json::as_str).ok_or("prefix without addr")?;
            let len = prefix.get("len").and_then(Json::as_u64).ok_or("prefix without len")?;
            return Ok(stmt::prefix(*fields.first().ok_or("no field")?, cmp_op(op)?, addr.parse().map_err(|_| "bad address")?, len as u8));
        }
        let [field] = fields.as_slice() else { return Err("a concatenation compared with a value".to_string()) };
        let value = parse_value(field_type(*field), right)?;
        Ok(stmt::compare(*field, cmp_op(op)?, &value.to_bytes()))
    }

    fn vmap(&mut self, body: &Json) -> Result<Vec<Expr>, String> {
        let key = body.get("key").ok_or("vmap without key")?;
        let data = body.get("data").ok_or("vmap without data")?;
        if let Some(numgen) = key.get("numgen") {
            let modulus = numgen.get("mod").and_then(Json::as_u64).ok_or("numgen without mod")? as u32;
            let name = self.anonymous_map(&[DataType::Integer], vec![DataType::Verdict], data.get("set").ok_or("inline map")?)?;
            return Ok(stmt::numgen_vmap(modulus, SetRef::named(name)));
        }
        let fields = fields(key)?;
        if let Some(name) = data.as_str().and_then(|s| s.strip_prefix('@')) {
            return Ok(stmt::vmap(&fields, SetRef::named(name)));
        }
        let types: Vec<DataType> = fields.iter().map(|f| field_type(*f)).collect();
        let name = self.anonymous_map(&types, vec![DataType::Verdict], data.get("set").ok_or("inline map")?)?;
        Ok(stmt::vmap(&fields, SetRef::named(name)))
    }

    fn dnat(&mut self, body: &Json) -> Result<Vec<Expr>, String> {
        let addr = body.get("addr").ok_or("dnat without addr")?;
        if let Some(ip) = addr.as_str() {
            let port = body.get("port").and_then(Json::as_u64).ok_or("dnat without port")? as u16;
            return Ok(stmt::dnat_to(ip.parse().map_err(|_| "bad dnat address")?, port));
        }
        let map = addr.get("map").ok_or("dnat to something other than an address or a map")?;
        let ipv6 = body.get("family").and_then(Json::as_str) == Some("ip6");
        let (addr_type, family, len) = if ipv6 { (DataType::Ipv6Addr, 10, 16) } else { (DataType::Ipv4Addr, 2, 4) };
        let key = map.get("key").ok_or("dnat map without key")?;
        if key.get("numgen").is_none() {
            // ours: `dnat ip to ip daddr . meta l4proto . th dport map @service-ips-direct`
            let name = map.get("data").and_then(Json::as_str).and_then(|s| s.strip_prefix('@'));
            let name = name.ok_or("dnat through a map keyed by packet fields that is not named")?;
            return Ok(stmt::dnat_map(family, &fields(key)?, SetRef::named(name), len));
        }
        let numgen = key.get("numgen").ok_or("dnat map keyed by something other than numgen")?;
        let modulus = numgen.get("mod").and_then(Json::as_u64).ok_or("numgen without mod")? as u32;
        let data = map.get("data").and_then(|d| d.get("set")).ok_or("inline map")?;
        let name = self.anonymous_map(&[DataType::Integer], vec![addr_type, DataType::InetService], data)?;
        Ok(stmt::dnat_numgen_map(family, modulus, SetRef::named(name), len))
    }

    fn anonymous_set(&mut self, fields: &[Field], items: &Json) -> Result<String, String> {
        let types: Vec<DataType> = fields.iter().map(|f| field_type(*f)).collect();
        let set = Set::new(self.next_name(), types).with_flags(SetFlags::ANONYMOUS | SetFlags::CONSTANT);
        self.add_anonymous(set, items)
    }

    fn anonymous_map(&mut self, key: &[DataType], data: Vec<DataType>, items: &Json) -> Result<String, String> {
        let set = Set::map(self.next_name(), key.to_vec(), data).with_flags(SetFlags::ANONYMOUS | SetFlags::CONSTANT);
        self.add_anonymous(set, items)
    }

    fn add_anonymous(&mut self, mut set: Set, items: &Json) -> Result<String, String> {
        let items: Vec<Json> = match items {
            Json::Array(items) => items.clone(),
            one => vec![one.clone()],
        };
        let mut elements = Vec::new();
        for item in &items {
            elements.extend(element(&set, item)?);
        }
        if elements.iter().any(Element::is_interval_end) {
            set.flags = set.flags | SetFlags::INTERVAL;
        }
        let name = set.name.clone();
        self.table.elements.insert(name.clone(), elements);
        self.table.sets.push(set);
        Ok(name)
    }

    fn next_name(&mut self) -> String {
        *self.anonymous += 1;
        format!("__json{}", self.anonymous)
    }
}

/// The packet fields a left-hand side loads (one, or a concatenation).
fn fields(left: &Json) -> Result<Vec<Field>, String> {
    match left.get("concat").and_then(Json::as_array) {
        Some(parts) => parts.iter().map(single).collect(),
        None => Ok(vec![single(left)?]),
    }
}

fn single(expr: &Json) -> Result<Field, String> {
    if let Some(payload) = expr.get("payload") {
        let protocol = payload.get("protocol").and_then(Json::as_str).unwrap_or("");
        return match (protocol, payload.get("field").and_then(Json::as_str).unwrap_or("")) {
            ("ip", "saddr") => Ok(Field::IpSaddr),
            ("ip", "daddr") => Ok(Field::IpDaddr),
            ("ip6", "saddr") => Ok(Field::Ip6Saddr),
            ("ip6", "daddr") => Ok(Field::Ip6Daddr),
            ("th" | "tcp" | "udp" | "sctp", "dport") => Ok(Field::ThDport),
            (p, f) => Err(format!("payload {p} {f} is not modelled")),
        };
    }
    match expr.get("meta").and_then(|m| m.get("key")).and_then(Json::as_str) {
        Some("l4proto") => Ok(Field::L4proto),
        Some("mark") => Ok(Field::Mark),
        _ => Err(format!("`{expr}` is not a field this walker loads")),
    }
}

fn cmp_op(op: &str) -> Result<CmpOp, String> {
    Ok(match op {
        "==" | "in" => CmpOp::Eq,
        "!=" => CmpOp::Neq,
        "<" => CmpOp::Lt,
        "<=" => CmpOp::Lte,
        ">" => CmpOp::Gt,
        ">=" => CmpOp::Gte,
        other => return Err(format!("operator `{other}`")),
    })
}

/// `ct state new`, `ct status dnat`, `ct direction original|reply`.
fn ct_match(key: &str, right: &Json) -> Result<Vec<Expr>, String> {
    let words: Vec<&str> = match right {
        Json::String(one) => vec![one.as_str()],
        Json::Array(many) => many.iter().filter_map(Json::as_str).collect(),
        _ => return Err(format!("ct {key} compared with `{right}`")),
    };
    let bit = |word: &str| -> Result<u32, String> {
        Ok(match (key, word) {
            ("state", "invalid") => 1,
            ("state", "established") => 2,
            ("state", "related") => 4,
            ("state", "new") => stmt::CT_STATE_NEW,
            ("state", "untracked") => 64,
            ("status", "snat") => 0x10,
            ("status", "dnat") => stmt::CT_STATUS_DNAT,
            _ => return Err(format!("ct {key} {word} is not modelled")),
        })
    };
    if key == "direction" {
        return Ok(stmt::ct_direction(words == ["reply"]));
    }
    let bits = words.iter().map(|w| bit(w)).sum::<Result<u32, String>>()?;
    Ok(match key {
        "state" => stmt::ct_state(bits),
        _ => stmt::ct_status(bits),
    })
}

/// `field & mask <op> want` (32-bit host-order field: the mark).
fn masked(field: Field, mask: u32, want: u32, op: CmpOp) -> Vec<Expr> {
    vec![
        field.load(Register::R1),
        Expr::Bitwise { sreg: Register::R1, dreg: Register::R1, len: 4, mask: mask.to_ne_bytes().to_vec(), xor: vec![0; 4] },
        Expr::Cmp { sreg: Register::R1, op, data: want.to_ne_bytes().to_vec() },
    ]
}

/// `meta mark set meta mark | bits` / `^ bits`.
fn mangle(body: &Json) -> Result<Vec<Expr>, String> {
    let key = body.get("key").and_then(|k| k.get("meta")).and_then(|m| m.get("key")).and_then(Json::as_str);
    if key != Some("mark") {
        return Err("only `meta mark set` is modelled".to_string());
    }
    let value = body.get("value").ok_or("mangle without value")?;
    let operand = |op: &str| value.get(op).and_then(Json::as_array).and_then(|a| a.get(1)).and_then(Json::as_u64);
    if let Some(bits) = operand("|") {
        return Ok(stmt::mark_or(bits as u32));
    }
    if let Some(bits) = operand("^") {
        return Ok(stmt::mark_xor(bits as u32));
    }
    let constant = value.as_u64().ok_or("mark set to something other than mark | bits, mark ^ bits or a constant")?;
    Ok(vec![
        Expr::Immediate { dreg: Register::R1, data: nftables::ImmediateData::Value((constant as u32).to_ne_bytes().to_vec()) },
        Expr::Meta { key: MetaKey::Mark, dir: MetaDir::Set(Register::R1) },
    ])
}

fn flip_last_cmp(exprs: &mut [Expr]) {
    if let Some(Expr::Cmp { op, .. }) = exprs.last_mut() {
        *op = if *op == CmpOp::Eq { CmpOp::Neq } else { CmpOp::Eq };
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::tracer::{Outcome, Packet, TraceContext};

    /// A base chain, a verdict map and a `numgen` DNAT, as `nft -j` writes them.
    const DUMP: &str = r#"{"nftables": [
        {"metainfo": {"json_schema_version": 1}},
        {"table": {"family": "ip", "name": "t"}},
        {"map": {"family": "ip", "table": "t", "name": "svc", "type": ["ipv4_addr", "inet_proto", "inet_service"], "map": "verdict",
                 "elem": [[{"concat": ["10.96.0.10", "tcp", 80]}, {"goto": {"target": "web"}}]]}},
        {"chain": {"family": "ip", "table": "t", "name": "pre", "type": "nat", "hook": "prerouting", "prio": -100, "policy": "accept"}},
        {"chain": {"family": "ip", "table": "t", "name": "web"}},
        {"rule": {"family": "ip", "table": "t", "chain": "pre", "expr": [
            {"match": {"op": "!=", "left": {"payload": {"protocol": "ip", "field": "saddr"}}, "right": {"set": [{"prefix": {"addr": "172.20.0.0", "len": 28}}]}}},
            {"drop": null}]}},
        {"rule": {"family": "ip", "table": "t", "chain": "pre", "expr": [
            {"vmap": {"key": {"concat": [{"payload": {"protocol": "ip", "field": "daddr"}}, {"meta": {"key": "l4proto"}}, {"payload": {"protocol": "th", "field": "dport"}}]}, "data": "@svc"}}]}},
        {"rule": {"family": "ip", "table": "t", "chain": "web", "expr": [
            {"dnat": {"family": "ip", "addr": {"map": {"key": {"numgen": {"mode": "random", "mod": 2, "offset": 0}},
                      "data": {"set": [[0, {"concat": ["10.244.1.1", 8080]}], [1, {"concat": ["10.244.2.1", 8080]}]]}}}}}]}}
    ]}"#;

    fn outcomes(source: &str, destination: &str) -> Vec<Outcome> {
        let tables = tables(DUMP).unwrap();
        let packet = Packet::inbound(model::Protocol::Tcp, source.parse().unwrap(), destination.parse().unwrap());
        let verdict = crate::nft::trace(&tables, &TraceContext::new([]), &packet).unwrap();
        assert!(verdict.paths.iter().all(|p| p.probability > 0.0));
        verdict.outcomes.into_iter().collect()
    }

    #[test]
    fn a_dump_compiles_to_what_the_walker_runs() {
        let ep = |s: &str| Outcome::Dnat { to: s.parse().unwrap(), masquerade: false };
        assert_eq!(outcomes("172.20.0.5", "10.96.0.10:80"), [ep("10.244.1.1:8080"), ep("10.244.2.1:8080")]);
        assert_eq!(outcomes("172.20.0.66", "10.96.0.10:80"), [Outcome::Drop], "outside the anonymous interval set");
        assert_eq!(outcomes("172.20.0.5", "10.96.0.10:81"), [Outcome::Accept { masquerade: false }], "no map element");
    }

    /// Ours: `services` DNATs through `service-ips-direct`, as `nft -j` (1.0.6) lists it.
    const DIRECT: &str = r#"{"nftables": [
        {"table": {"family": "ip", "name": "kp"}},
        {"map": {"family": "ip", "name": "service-ips-direct", "table": "kp", "type": ["ipv4_addr", "inet_proto", "inet_service"], "map": "ipv4_addr . inet_service",
                 "elem": [[{"concat": ["10.96.0.2", "udp", 53]}, {"concat": ["10.0.0.1", 5353]}],
                          [{"elem": {"val": {"concat": ["10.96.0.1", "tcp", 443]}, "comment": "default/kubernetes:https"}}, {"concat": ["192.168.77.1", 6443]}]]}},
        {"chain": {"family": "ip", "table": "kp", "name": "pre", "type": "nat", "hook": "prerouting", "prio": -100, "policy": "accept"}},
        {"rule": {"family": "ip", "table": "kp", "chain": "pre", "expr": [{"dnat": {"family": "ip", "addr": {"map": {"key": {"concat": [
            {"payload": {"protocol": "ip", "field": "daddr"}}, {"meta": {"key": "l4proto"}}, {"payload": {"protocol": "th", "field": "dport"}}]}, "data": "@service-ips-direct"}}}}]}}
    ]}"#;

    #[test]
    fn a_dnat_through_the_direct_map_reaches_its_one_endpoint() {
        let tables = tables(DIRECT).unwrap();
        let trace = |destination: &str| {
            let packet = Packet::inbound(model::Protocol::Tcp, "172.20.0.5".parse().unwrap(), destination.parse().unwrap());
            crate::nft::trace(&tables, &TraceContext::new([]), &packet).unwrap().outcomes.into_iter().collect::<Vec<_>>()
        };
        assert_eq!(trace("10.96.0.1:443"), [Outcome::Dnat { to: "192.168.77.1:6443".parse().unwrap(), masquerade: false }]);
        assert_eq!(trace("10.96.0.1:80"), [Outcome::Accept { masquerade: false }], "no element");
    }

    #[test]
    fn what_is_not_modelled_is_an_error_naming_it() {
        let err = tables(&DUMP.replace(r#"{"drop": null}"#, r#"{"queue": {"num": 1}}"#)).unwrap_err();
        assert!(err.to_string().contains("chain pre: statement `queue` is not modelled"), "{err}");
        assert!(tables("not json").unwrap_err().to_string().contains("not JSON"));
        assert!(tables(r#"{"nftables": [{"chain": {"family": "ip", "table": "nope", "name": "c"}}]}"#).is_err());
    }
}
