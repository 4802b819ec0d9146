//! Short readable forms of what the walker saw: a lookup key as `nft`
//! writes it (`10.96.10.10 . tcp . 80`) and a rule as the list of what it
//! loads, matches and does (`ip daddr . meta l4proto . th dport vmap
//! @service-ips`), with its comment.

use nftables::{CmpOp, DataType, Expr, ImmediateData, MetaDir, MetaKey, PayloadBase, Rule, Value};

/// A lookup key as `nft` writes it, or hex when it does not split into
/// the set's types.
pub(super) fn key_text(types: &[DataType], bytes: &[u8]) -> String {
    match Value::split_concat(types, bytes) {
        Some(values) => values.iter().map(Value::to_string).collect::<Vec<_>>().join(" . "),
        None => bytes.iter().map(|b| format!("{b:02x}")).collect(),
    }
}

/// A rule in one line, close to `nft list`'s: loads joined by ` . `, then
/// what they are compared with or looked up in, then the statements.
pub(crate) fn rule_text(rule: &Rule) -> String {
    let mut words: Vec<String> = Vec::new();
    let mut loads: Vec<String> = Vec::new();
    let mut mask: Option<&[u8]> = None;
    for expr in &rule.exprs {
        if let Some(load) = load_text(expr) {
            loads.push(load);
            mask = None;
            continue;
        }
        if let Expr::Bitwise { mask: m, .. } = expr {
            mask = Some(m);
            continue;
        }
        let word = match expr {
            Expr::Cmp { op, data, .. } => Some(cmp_text(loads.last().map(String::as_str).unwrap_or(""), mask, *op, data)),
            _ => statement_text(expr),
        };
        let Some(word) = word else { continue };
        if !loads.is_empty() {
            words.push(loads.join(" . "));
            loads.clear();
        }
        words.push(word);
    }
    if let Some(comment) = &rule.comment {
        words.push(format!("comment \"{comment}\""));
    }
    words.join(" ")
}

fn load_text(expr: &Expr) -> Option<String> {
    Some(match expr {
        Expr::Payload { base: PayloadBase::Network, offset: 12 | 8, .. } => "ip saddr".to_string(),
        Expr::Payload { base: PayloadBase::Network, offset: 16 | 24, .. } => "ip daddr".to_string(),
        Expr::Payload { base: PayloadBase::Transport, offset: 2, .. } => "th dport".to_string(),
        Expr::Payload { base: PayloadBase::Transport, offset: 0, .. } => "th sport".to_string(),
        Expr::Meta { key, dir: MetaDir::Load(_) } => format!("meta {}", meta_name(*key)),
        Expr::Ct { key, .. } => format!("ct {key:?}").to_lowercase(),
        Expr::Fib { flags, .. } => format!("fib {} type", if flags & 1 != 0 { "saddr" } else { "daddr" }),
        Expr::Numgen { modulus, .. } => format!("numgen random mod {modulus}"),
        _ => return None,
    })
}

fn statement_text(expr: &Expr) -> Option<String> {
    Some(match expr {
        Expr::Lookup { set, dreg: Some(nftables::Register::VERDICT), .. } => format!("vmap {}", set_text(&set.name)),
        Expr::Lookup { set, dreg: Some(_), .. } => format!("map {}", set_text(&set.name)),
        Expr::Lookup { set, invert, .. } => format!("{}{}", if *invert { "!= " } else { "" }, set_text(&set.name)),
        Expr::Immediate { data: ImmediateData::Verdict(v), .. } => v.to_string(),
        Expr::Meta { key, dir: MetaDir::Set(_) } => format!("meta {} set", meta_name(*key)),
        Expr::Nat { kind, .. } => format!("{kind:?}").to_lowercase(),
        Expr::Masq { .. } => "masquerade".to_string(),
        Expr::Reject { .. } => "reject".to_string(),
        Expr::Dynset { set, .. } => format!("update @{}", set.name),
        _ => return None,
    })
}

/// `@name` for a named set; an anonymous one (`__set0`, `__map1`, our
/// `__kp-…`) is named by whoever made it, so it is shown as `{…}`.
fn set_text(name: &str) -> String {
    if name.starts_with("__") { "{…}".to_string() } else { format!("@{name}") }
}

/// A comparison in the words of what was loaded: `ct state new`,
/// `meta l4proto tcp`, `ip saddr != 10.244.0.0/16`, `fib … local`.
fn cmp_text(loaded: &str, mask: Option<&[u8]>, op: CmpOp, data: &[u8]) -> String {
    let word = |w: &str| if op == CmpOp::Neq { format!("!= {w}") } else { w.to_string() };
    let mask_u32 = mask.and_then(|m| m.get(..4)).map(|m| u32::from_ne_bytes([m[0], m[1], m[2], m[3]]));
    match (loaded, mask_u32) {
        ("ct state", Some(bits)) if data.iter().all(|b| *b == 0) => return ct_bits(bits, &["invalid", "established", "related", "new"]),
        ("ct status", Some(0x20)) if data.iter().all(|b| *b == 0) => return "dnat".to_string(),
        ("meta mark", Some(bits)) => return format!("& {bits:#010x} {} {}", op_text(op), hex(data)),
        _ => {}
    }
    match (loaded, data) {
        ("meta l4proto", [p]) => word(&Value::Proto(*p).to_string()),
        ("ip saddr" | "ip daddr", short) if short.len() < 4 && mask.is_none() => {
            let mut octets = short.to_vec();
            octets.resize(4, 0);
            word(&format!("{}.{}.{}.{}/{}", octets[0], octets[1], octets[2], octets[3], short.len() * 8))
        }
        ("ip saddr" | "ip daddr", [a, b, c, d]) => match mask.map(|m| m.iter().map(|x| x.count_ones()).sum::<u32>()) {
            Some(len) => word(&format!("{a}.{b}.{c}.{d}/{len}")),
            None => word(&format!("{a}.{b}.{c}.{d}")),
        },
        ("th dport" | "th sport", [hi, lo]) => word(&u16::from_be_bytes([*hi, *lo]).to_string()),
        (l, [2, 0, 0, 0]) if l.starts_with("fib") => word("local"),
        _ => format!("{} {}", op_text(op), hex(data)),
    }
}

fn ct_bits(bits: u32, names: &[&str]) -> String {
    let set: Vec<&str> = names.iter().enumerate().filter(|(i, _)| bits & (1 << i) != 0).map(|(_, n)| *n).collect();
    if set.is_empty() { format!("{bits:#x}") } else { set.join(",") }
}

fn hex(data: &[u8]) -> String {
    format!("0x{}", data.iter().map(|b| format!("{b:02x}")).collect::<String>())
}

fn meta_name(key: MetaKey) -> String {
    match key {
        MetaKey::Mark => "mark".to_string(),
        MetaKey::Iifname => "iifname".to_string(),
        MetaKey::Oifname => "oifname".to_string(),
        MetaKey::Nfproto => "nfproto".to_string(),
        MetaKey::L4proto => "l4proto".to_string(),
        MetaKey::Other(n) => format!("key {n}"),
    }
}

fn op_text(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Eq => "==",
        CmpOp::Neq => "!=",
        CmpOp::Lt => "<",
        CmpOp::Lte => "<=",
        CmpOp::Gt => ">",
        CmpOp::Gte => ">=",
    }
}
