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
    for expr in &rule.exprs {
        if let Some(load) = load_text(expr) {
            loads.push(load);
            continue;
        }
        let Some(word) = statement_text(expr) else { continue };
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
        Expr::Cmp { op, data, .. } => format!("{} 0x{}", op_text(*op), data.iter().map(|b| format!("{b:02x}")).collect::<String>()),
        Expr::Bitwise { .. } => "&".to_string(),
        Expr::Lookup { set, dreg: Some(nftables::Register::VERDICT), .. } => format!("vmap @{}", set.name),
        Expr::Lookup { set, dreg: Some(_), .. } => format!("map @{}", set.name),
        Expr::Lookup { set, invert, .. } => format!("{}@{}", if *invert { "!= " } else { "" }, set.name),
        Expr::Immediate { data: ImmediateData::Verdict(v), .. } => v.to_string(),
        Expr::Meta { key, dir: MetaDir::Set(_) } => format!("meta {} set", meta_name(*key)),
        Expr::Nat { kind, .. } => format!("{kind:?}").to_lowercase(),
        Expr::Masq { .. } => "masquerade".to_string(),
        Expr::Reject { .. } => "reject".to_string(),
        Expr::Dynset { set, .. } => format!("update @{}", set.name),
        _ => return None,
    })
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
