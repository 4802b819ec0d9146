//! Cutting a large transaction into several so that traffic still sees
//! one change. The kernel walks the whole transaction each time a rule
//! binds an anonymous set, so one transaction with n of them costs O(n²)
//! (measured: 10,000 services' `numgen` maps, 50 s in one transaction;
//! see the crate README).
//!
//! The parts are *staging* transactions and one *final* one:
//!
//! * staging: the table, the new chains (a base chain empty, with policy
//!   accept: a packet passes it unchanged), the new named sets (empty),
//!   and the rules of the new regular chains with the anonymous sets they
//!   bind, at most `max_anonymous` anonymous sets per part. Nothing
//!   reaches a new regular chain until a rule or verdict-map element of a
//!   chain already reached names it, so these parts change no packet's
//!   path. The chains are created in the transaction's order, so `nft
//!   list` shows them as one transaction would have;
//! * final: everything else in the original order (the rules of base
//!   chains, flushes, deletions, the elements of named sets — the verdict maps that send
//!   traffic to the new chains — and the rules of rewritten chains).
//!
//! Packets see the old ruleset until the final part commits, and the new
//! one after. If a part is refused, the earlier staging parts leave
//! chains nothing reaches; the next sync is full and finds them written
//! already, or deletes them.

use crate::{Chain, Expr, Op, Policy, Rule, Set, SetFlags, Transaction};
use std::collections::HashSet;

/// `tx` as staging parts of at most `max_anonymous` anonymous sets each
/// (at least one per part), then the final part. `tx` whole when it
/// deletes the table (nothing can be staged in a table about to go) or
/// has nothing to stage. The first part keeps the generation check.
pub(crate) fn split(tx: Transaction, max_anonymous: usize) -> Vec<Transaction> {
    if tx
        .ops
        .iter()
        .any(|op| matches!(op, Op::DeleteTable | Op::DestroyTable))
    {
        return vec![tx];
    }
    let stageable = Stageable::of(&tx);
    let Transaction {
        family,
        table,
        ops,
        generation,
    } = tx;
    let sorted = sort(ops, &stageable);
    let part = |ops: Vec<Op>, generation: Option<u32>| Transaction {
        family,
        table: table.clone(),
        ops,
        generation,
    };
    if sorted.groups.is_empty() {
        let mut ops = sorted.setup;
        ops.extend(sorted.last);
        return vec![part(ops, generation)];
    }
    let mut parts = Vec::new();
    let mut current = sorted.setup;
    let mut anonymous = 0;
    for group in sorted.groups {
        let sets = group.iter().filter(|op| is_anonymous_set(op)).count();
        if anonymous > 0 && anonymous + sets > max_anonymous {
            parts.push(std::mem::take(&mut current));
            anonymous = 0;
        }
        anonymous += sets;
        current.extend(group);
    }
    parts.push(current);
    if !sorted.last.is_empty() {
        parts.push(sorted.last);
    }
    parts
        .into_iter()
        .enumerate()
        .map(|(i, ops)| part(ops, generation.filter(|_| i == 0)))
        .collect()
}

/// What a transaction may create ahead of its final part.
struct Stageable {
    /// New chains (not flushed or deleted in the same transaction;
    /// base chains only with policy accept).
    chains: HashSet<String>,
    /// Of those, the regular ones: their rules can be staged.
    regular: HashSet<String>,
    /// New named sets whose name no other change of the transaction
    /// deletes or flushes.
    sets: HashSet<String>,
    /// Sets the transaction deletes or flushes.
    touched_sets: HashSet<String>,
}

impl Stageable {
    fn of(tx: &Transaction) -> Self {
        let mut touched_chains = HashSet::new();
        let mut touched_sets = HashSet::new();
        for op in &tx.ops {
            match op {
                Op::FlushChain(c) | Op::DeleteChain(c) => {
                    touched_chains.insert(c.as_str());
                }
                Op::FlushSet(s) | Op::DeleteSet(s) => {
                    touched_sets.insert(s.clone());
                }
                _ => {}
            }
        }
        let mut chains = HashSet::new();
        let mut regular = HashSet::new();
        let mut sets = HashSet::new();
        for op in &tx.ops {
            match op {
                Op::AddChain(c) if passes_empty(c) && !touched_chains.contains(c.name.as_str()) => {
                    chains.insert(c.name.clone());
                    if c.base.is_none() {
                        regular.insert(c.name.clone());
                    }
                }
                Op::AddSet(s) if !is_anonymous(s) && !touched_sets.contains(&s.name) => {
                    sets.insert(s.name.clone());
                }
                _ => {}
            }
        }
        Self {
            chains,
            regular,
            sets,
            touched_sets,
        }
    }

    /// Whether `rule` may be written ahead: its chain is a new regular
    /// one and it uses no set the final part deletes or flushes.
    fn rule(&self, rule: &Rule) -> bool {
        self.regular.contains(&rule.chain)
            && rule.exprs.iter().all(|e| match e {
                Expr::Lookup { set, .. } | Expr::Dynset { set, .. } => {
                    !self.touched_sets.contains(&set.name)
                }
                _ => true,
            })
    }
}

/// A transaction's changes sorted into the parts they go to.
struct Sorted {
    /// The table, new chains, new named sets.
    setup: Vec<Op>,
    /// Each staged rule with the anonymous sets (and their elements) it
    /// binds, in order.
    groups: Vec<Vec<Op>>,
    /// The rest, in order.
    last: Vec<Op>,
}

fn sort(ops: Vec<Op>, stageable: &Stageable) -> Sorted {
    let mut sorted = Sorted {
        setup: Vec::new(),
        groups: Vec::new(),
        last: Vec::new(),
    };
    // anonymous sets and their elements waiting for the rule binding them
    let mut pending: Vec<Op> = Vec::new();
    for op in ops {
        match op {
            Op::AddTable(_) => sorted.setup.push(op),
            Op::AddChain(ref c) if stageable.chains.contains(&c.name) => sorted.setup.push(op),
            Op::AddSet(ref s) if is_anonymous(s) => pending.push(op),
            Op::AddSet(ref s) if stageable.sets.contains(&s.name) => sorted.setup.push(op),
            Op::AddElements { ref set, .. } if creates(&pending, &set.name) => pending.push(op),
            Op::AddRule(ref rule) => {
                let staged = stageable.rule(rule);
                pending.push(op);
                let group = std::mem::take(&mut pending);
                match staged {
                    true => sorted.groups.push(group),
                    false => sorted.last.extend(group),
                }
            }
            op => {
                sorted.last.append(&mut pending);
                sorted.last.push(op);
            }
        }
    }
    sorted.last.append(&mut pending);
    sorted
}

/// Whether a packet passes `chain` unchanged while it has no rules.
pub(super) fn passes_empty(chain: &Chain) -> bool {
    chain.base.is_none_or(|b| b.policy == Policy::Accept)
}

/// Whether `ops` create the set `name`.
fn creates(ops: &[Op], name: &str) -> bool {
    ops.iter()
        .any(|op| matches!(op, Op::AddSet(s) if s.name == name))
}

fn is_anonymous(set: &Set) -> bool {
    set.flags.contains(SetFlags::ANONYMOUS)
}

pub(super) fn is_anonymous_set(op: &Op) -> bool {
    matches!(op, Op::AddSet(s) if is_anonymous(s))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::{
        BaseChain, Chain, ChainType, DataType, Element, Family, Hook, Policy, SetRef, Table, Value,
        Verdict, stmt,
    };

    /// A cold start's shape: a base chain jumping to `services`, whose
    /// verdict map `service-ips` sends to chains `c1`..`cn`, each with a
    /// rule binding an anonymous map.
    fn cold_start(n: u32) -> Transaction {
        let mut tx = Transaction::new(Family::Ip, "t");
        tx.generation = Some(7);
        tx.push(Op::AddTable(Table::new(Family::Ip, "t")));
        tx.push(Op::AddChain(base_chain()));
        for i in 1..=n {
            tx.push(Op::AddChain(Chain::regular(format!("c{i}"))));
        }
        let map = Set::map(
            "service-ips",
            vec![DataType::Ipv4Addr],
            vec![DataType::Verdict],
        );
        tx.push(Op::AddSet(map));
        tx.push(Op::AddElements {
            set: SetRef::named("service-ips"),
            elements: (1..=n)
                .map(|i| {
                    let key = Value::Ipv4([10, 0, 0, i as u8].into());
                    Element::verdict(vec![key], Verdict::Goto(format!("c{i}")))
                })
                .collect(),
        });
        tx.push(Op::AddRule(Rule::new(
            "nat-prerouting",
            stmt::vmap(&[stmt::Field::IpDaddr], SetRef::named("service-ips")),
        )));
        for i in 1..=n {
            let set = Set::anonymous(i, vec![DataType::Integer], Some(vec![DataType::Verdict]));
            let r = SetRef::to_set(&set);
            tx.push(Op::AddSet(set));
            tx.push(Op::AddRule(Rule::new(
                format!("c{i}"),
                stmt::numgen_vmap(2, r),
            )));
        }
        tx
    }

    fn base_chain() -> Chain {
        let base = BaseChain {
            kind: ChainType::Nat,
            hook: Hook::Prerouting,
            priority: -100,
            policy: Policy::Accept,
        };
        Chain::base("nat-prerouting", base)
    }

    fn anonymous_sets(tx: &Transaction) -> usize {
        tx.ops.iter().filter(|op| is_anonymous_set(op)).count()
    }

    #[test]
    fn stages_new_chains_and_their_maps_and_ends_with_what_traffic_sees() {
        let tx = cold_start(5);
        let all = tx.ops.clone();
        let parts = split(tx, 2);
        let anon: Vec<usize> = parts.iter().map(anonymous_sets).collect();
        assert_eq!(anon, [2, 2, 1, 0]);
        assert_eq!(parts[0].generation, Some(7));
        assert!(parts[1..].iter().all(|p| p.generation.is_none()));
        // the staging parts touch only chains nothing reaches yet
        for part in &parts[..3] {
            for op in &part.ops {
                match op {
                    Op::AddTable(_) | Op::AddSet(_) => {}
                    Op::AddChain(_) => {}
                    Op::AddRule(r) => assert!(r.chain.starts_with('c'), "{r:?}"),
                    other => panic!("staged: {other:?}"),
                }
            }
        }
        // chains in the transaction's order, the base chain first
        let chains: Vec<&str> = parts[0]
            .ops
            .iter()
            .filter_map(|op| match op {
                Op::AddChain(c) => Some(c.name.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(chains, ["nat-prerouting", "c1", "c2", "c3", "c4", "c5"]);
        // the final part: the verdict map's elements and the base chain's rule
        let last = &parts[3].ops;
        assert!(matches!(&last[0], Op::AddElements { .. }));
        assert!(
            last.iter()
                .any(|op| matches!(op, Op::AddRule(r) if r.chain == "nat-prerouting"))
        );
        // nothing lost, nothing doubled
        let mut joined: Vec<Op> = parts.into_iter().flat_map(|p| p.ops).collect();
        assert_eq!(joined.len(), all.len());
        for op in &all {
            let at = joined.iter().position(|o| o == op).unwrap();
            joined.remove(at);
        }
    }

    #[test]
    fn rules_of_rewritten_chains_and_users_of_replaced_sets_stay_in_the_final_part() {
        let mut tx = cold_start(3);
        tx.ops.insert(1, Op::FlushChain("c2".into()));
        tx.ops.insert(1, Op::DeleteSet("service-ips".into()));
        let parts = split(tx, 1);
        let staged: Vec<&str> = parts[..parts.len() - 1]
            .iter()
            .flat_map(|p| &p.ops)
            .filter_map(|op| match op {
                Op::AddRule(r) => Some(r.chain.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(staged, ["c1", "c3"]);
        let last = parts.last().unwrap();
        assert!(
            last.ops
                .iter()
                .any(|op| matches!(op, Op::AddSet(s) if s.name == "service-ips"))
        );
        assert!(
            last.ops
                .iter()
                .any(|op| matches!(op, Op::AddRule(r) if r.chain == "c2"))
        );
    }

    #[test]
    fn a_transaction_deleting_the_table_stays_whole() {
        let mut tx = cold_start(3);
        tx.ops.insert(0, Op::DeleteTable);
        assert_eq!(split(tx, 1).len(), 1);
    }
}
