//! Comparing what was sent with what was read back: rules, chains and
//! named sets exactly; anonymous sets (named `__set%d` when sent, `__set<n>`
//! by the kernel) by their place of use.

use nftables::*;
use std::collections::BTreeMap;

/// The transaction's objects, as [`TableContents`] would hold them.
pub struct Sent {
    pub table: Table,
    pub chains: Vec<Chain>,
    pub rules: Vec<Rule>,
    pub sets: Vec<Set>,
    pub elements: BTreeMap<String, Vec<Element>>,
}

pub fn sent(tx: &Transaction) -> Sent {
    let mut s = Sent {
        table: Table::new(tx.family, ""),
        chains: vec![],
        rules: vec![],
        sets: vec![],
        elements: BTreeMap::new(),
    };
    for op in &tx.ops {
        match op {
            Op::AddTable(t) => s.table = t.clone(),
            Op::AddChain(c) => s.chains.push(c.clone()),
            Op::AddRule(r) => s.rules.push(r.clone()),
            Op::AddSet(set) => s.sets.push(set.clone()),
            Op::AddElements { set, elements } => {
                let key = if set.name.contains('%') {
                    format!("{}#{}", set.name, set.id.unwrap_or(0))
                } else {
                    set.name.clone()
                };
                s.elements
                    .entry(key)
                    .or_default()
                    .extend(elements.iter().cloned());
            }
            _ => {}
        }
    }
    s
}

/// Anonymous set references replaced by a placeholder, handles dropped.
fn plain_rule(r: &Rule) -> Rule {
    let mut r = r.clone();
    r.handle = None;
    for e in &mut r.exprs {
        if let Expr::Lookup { set, .. } | Expr::Dynset { set, .. } = e
            && set.name.starts_with("__set")
        {
            *set = SetRef::named("<anonymous>");
        }
    }
    r
}

fn sorted(mut v: Vec<Element>) -> Vec<String> {
    let mut out: Vec<String> = v.drain(..).map(|e| format!("{e:?}")).collect();
    out.sort();
    out
}

/// Asserts that `got` (read from the kernel) holds what `sent` made.
pub fn assert_same(sent: &Sent, got: &TableContents) {
    assert_eq!(got.table, sent.table);
    assert_eq!(got.chains, sent.chains);
    let plain = |rules: &[Rule]| rules.iter().map(plain_rule).collect::<Vec<_>>();
    // the kernel lists rules chain by chain, in chain order
    let by_chain = |rules: Vec<Rule>| {
        let mut out = Vec::new();
        for c in &sent.chains {
            out.extend(rules.iter().filter(|r| r.chain == c.name).cloned());
        }
        out
    };
    assert_eq!(by_chain(plain(&got.rules)), by_chain(plain(&sent.rules)));
    let named = |sets: &[Set]| {
        sets.iter()
            .filter(|s| !s.name.starts_with("__set"))
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(named(&got.sets), named(&sent.sets));
    for set in named(&sent.sets) {
        assert_eq!(
            sorted(got.elements.get(&set.name).cloned().unwrap_or_default()),
            sorted(sent.elements.get(&set.name).cloned().unwrap_or_default()),
            "elements of {}",
            set.name
        );
    }
    // anonymous sets: same count, same element lists (as a multiset)
    let anon = |m: &BTreeMap<String, Vec<Element>>| {
        let mut v: Vec<Vec<String>> = m
            .iter()
            .filter(|(k, _)| k.starts_with("__set"))
            .map(|(_, e)| sorted(e.clone()))
            .collect();
        v.sort();
        v
    };
    assert_eq!(anon(&got.elements), anon(&sent.elements));
}
