//! Cutting a large transaction into several, each valid on its own when
//! sent in order. The kernel walks the whole transaction each time a rule
//! binds an anonymous set, so one transaction with n of them costs O(n²)
//! (measured: 10,000 services' `numgen` maps, 50 s in one transaction;
//! see the crate README). Cuts fall only between rules, never between a
//! rule and the anonymous sets it binds.

use crate::{Op, SetFlags, Transaction};

/// `tx` cut so that no part binds more than `max_anonymous` anonymous
/// sets (at least one per part); the first part keeps the generation
/// check.
pub(crate) fn split(tx: &Transaction, max_anonymous: usize) -> Vec<Transaction> {
    let max_anonymous = max_anonymous.max(1);
    let mut parts = vec![tx.clone_empty()];
    let mut anonymous = 0;
    for op in &tx.ops {
        let starts_rule_group = is_anonymous_set(op)
            && matches!(
                parts.last().and_then(|p| p.ops.last()),
                Some(Op::AddRule(_))
            );
        if starts_rule_group && anonymous >= max_anonymous {
            let mut next = tx.clone_empty();
            next.generation = None;
            parts.push(next);
            anonymous = 0;
        }
        if is_anonymous_set(op) {
            anonymous += 1;
        }
        if let Some(part) = parts.last_mut() {
            part.ops.push(op.clone());
        }
    }
    parts
}

fn is_anonymous_set(op: &Op) -> bool {
    matches!(op, Op::AddSet(s) if s.flags.contains(SetFlags::ANONYMOUS))
}

trait CloneEmpty {
    fn clone_empty(&self) -> Transaction;
}

impl CloneEmpty for Transaction {
    /// The same table and generation check, no changes.
    fn clone_empty(&self) -> Transaction {
        Transaction {
            family: self.family,
            table: self.table.clone(),
            ops: Vec::new(),
            generation: self.generation,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::{Chain, DataType, Family, Rule, Set, SetRef, stmt};

    fn rule_with_map(tx: &mut Transaction, id: u32) {
        let set = Set::anonymous(id, vec![DataType::Integer], Some(vec![DataType::Verdict]));
        let r = SetRef::to_set(&set);
        tx.push(Op::AddSet(set));
        tx.push(Op::AddRule(Rule::new("c", stmt::numgen_vmap(2, r))));
    }

    #[test]
    fn cuts_between_rules_only_and_keeps_everything_in_order() {
        let mut tx = Transaction::new(Family::Ip, "t");
        tx.generation = Some(7);
        tx.push(Op::AddChain(Chain::regular("c")));
        for id in 1..=5 {
            rule_with_map(&mut tx, id);
        }
        let parts = split(&tx, 2);
        let sizes: Vec<usize> = parts.iter().map(|p| p.ops.len()).collect();
        assert_eq!(sizes, [5, 4, 2]);
        assert_eq!(parts[0].generation, Some(7));
        assert_eq!(parts[1].generation, None);
        let joined: Vec<Op> = parts.into_iter().flat_map(|p| p.ops).collect();
        assert_eq!(joined, tx.ops);
    }

    #[test]
    fn a_small_transaction_stays_whole() {
        let mut tx = Transaction::new(Family::Ip, "t");
        rule_with_map(&mut tx, 1);
        assert_eq!(split(&tx, 1000).len(), 1);
    }
}
