//! The diff (pure): the transaction that turns the current table into the
//! desired one, in an order the kernel accepts:
//!
//! 1. the table, if missing (or deleted and made again if its own
//!    definition differs);
//! 2. new chains (rules and verdict-map elements name them next);
//! 3. flush the chains to rewrite, replace or delete (their jumps and set
//!    lookups go first);
//! 4. delete removed and replaced sets (nothing uses them any more);
//! 5. add new and replaced sets;
//! 6. delete elements, 7. add elements (changed data: delete, then add);
//! 8. the rules of new and rewritten chains, with their anonymous sets;
//! 9. delete removed chains (nothing jumps to them any more); replaced
//!    chains (a base chain's hook or priority changed) are deleted and
//!    added again with their rules.

use super::element_changes::element_changes;
use super::fingerprint;
use super::names::{AnonymousNames, Assigned};
use super::state::{ANONYMOUS_PLACEHOLDER, ChainState, RuleShape, SetState, TableState};
use crate::{Element, Expr, Op, SetRef, TableContents, Transaction};
use std::collections::HashSet;

/// The transaction that brings table `current` (as listed; `None` if it
/// does not exist) to `desired`. Empty if they are the same.
pub fn diff(desired: &TableContents, current: Option<&TableContents>) -> Transaction {
    let mut names = AnonymousNames::default();
    if let Some(current) = current {
        names.seed(current);
    }
    let current = current.cloned().map(TableState::new);
    diff_states(
        &TableState::new(desired.clone()),
        current.as_ref(),
        &mut names,
    )
    .0
}

/// [`diff`] on normalized tables; also the names given to the anonymous
/// sets of the chains it writes.
pub(crate) fn diff_states(
    desired: &TableState,
    current: Option<&TableState>,
    names: &mut AnonymousNames,
) -> (Transaction, Assigned) {
    let mut tx = Transaction::new(desired.table.family, desired.table.name.clone());
    let empty = TableState::empty(desired.table.clone());
    let current = match current {
        Some(c) if c.table == desired.table => c,
        Some(_) => {
            tx.push(Op::DeleteTable);
            tx.push(Op::AddTable(desired.table.clone()));
            &empty
        }
        None => {
            tx.push(Op::AddTable(desired.table.clone()));
            &empty
        }
    };
    let plan = Plan::between(desired, current);
    let mut writer = Writer {
        tx,
        names,
        next_id: 1,
        assigned: Assigned::default(),
    };
    writer.write(&plan, desired, current);
    (writer.tx, writer.assigned)
}

/// The transaction creating `desired` where our table does not exist:
/// what [`diff_states`] gives against no table, in the same order, with
/// the objects moved out of `desired` instead of copied (a cold start's
/// table is then held once, not twice).
pub(crate) fn create_all(desired: TableState, names: &mut AnonymousNames) -> Transaction {
    let TableState {
        table,
        chains,
        sets,
        ..
    } = desired;
    let mut tx = Transaction::new(table.family, table.name.clone());
    tx.push(Op::AddTable(table));
    for c in &chains {
        tx.push(Op::AddChain(c.chain.clone()));
    }
    let mut elements = Vec::with_capacity(sets.len());
    for s in sets {
        elements.push((SetRef::named(s.set.name.as_str()), s.elements));
        tx.push(Op::AddSet(s.set));
    }
    for (set, elements) in elements {
        if !elements.is_empty() {
            tx.push(Op::AddElements { set, elements });
        }
    }
    let mut writer = Writer {
        tx,
        names,
        next_id: 1,
        assigned: Assigned::default(),
    };
    for c in chains {
        writer.move_rules(c);
    }
    writer.tx
}

/// What changes, object by object.
struct Plan<'a> {
    added_chains: Vec<&'a ChainState>,
    rewritten_chains: HashSet<&'a str>,
    replaced_chains: Vec<&'a ChainState>,
    removed_chains: Vec<&'a ChainState>,
    added_sets: Vec<&'a SetState>,
    replaced_sets: Vec<&'a SetState>,
    removed_sets: Vec<&'a SetState>,
    kept_sets: Vec<(&'a SetState, &'a SetState)>,
}

impl<'a> Plan<'a> {
    fn between(desired: &'a TableState, current: &'a TableState) -> Self {
        let mut plan = Plan {
            added_chains: Vec::new(),
            rewritten_chains: HashSet::new(),
            replaced_chains: Vec::new(),
            removed_chains: Vec::new(),
            added_sets: Vec::new(),
            replaced_sets: Vec::new(),
            removed_sets: Vec::new(),
            kept_sets: Vec::new(),
        };
        plan.compare_sets(desired, current);
        plan.compare_chains(desired, current);
        plan
    }

    fn compare_sets(&mut self, desired: &'a TableState, current: &'a TableState) {
        for want in &desired.sets {
            match current.set(&want.set.name) {
                None => self.added_sets.push(want),
                Some(have) if have.set != want.set => self.replaced_sets.push(want),
                Some(have) => self.kept_sets.push((want, have)),
            }
        }
        self.removed_sets = current
            .sets
            .iter()
            .filter(|s| desired.set(&s.set.name).is_none())
            .collect();
    }

    fn compare_chains(&mut self, desired: &'a TableState, current: &'a TableState) {
        let replaced_sets: Vec<&str> = self
            .replaced_sets
            .iter()
            .map(|s| s.set.name.as_str())
            .collect();
        let uses_replaced_set = |rules: &[RuleShape]| {
            rules
                .iter()
                .any(|r| replaced_sets.iter().any(|s| r.uses_set(s)))
        };
        for want in &desired.chains {
            match current.chain(&want.chain.name) {
                None => self.added_chains.push(want),
                Some(have) if have.chain != want.chain => self.replaced_chains.push(want),
                Some(have) if have.rules != want.rules || uses_replaced_set(&have.rules) => {
                    self.rewritten_chains.insert(want.chain.name.as_str());
                }
                Some(_) => {}
            }
        }
        self.removed_chains = current
            .chains
            .iter()
            .filter(|c| desired.chain(&c.chain.name).is_none())
            .collect();
    }
}

/// Appends the plan's changes to a transaction, in the kernel's order.
struct Writer<'n> {
    tx: Transaction,
    names: &'n mut AnonymousNames,
    next_id: u32,
    assigned: Assigned,
}

impl Writer<'_> {
    fn write(&mut self, plan: &Plan<'_>, desired: &TableState, current: &TableState) {
        for c in &plan.added_chains {
            self.tx.push(Op::AddChain(c.chain.clone()));
        }
        self.flush_chains(plan, current);
        for s in plan.removed_sets.iter().chain(&plan.replaced_sets) {
            self.tx.push(Op::DeleteSet(s.set.name.clone()));
        }
        for s in plan.added_sets.iter().chain(&plan.replaced_sets) {
            self.tx.push(Op::AddSet(s.set.clone()));
        }
        self.delete_elements(plan);
        self.add_elements(plan);
        let added: HashSet<&str> = plan
            .added_chains
            .iter()
            .map(|c| c.chain.name.as_str())
            .collect();
        for c in &desired.chains {
            let name = c.chain.name.as_str();
            if plan.rewritten_chains.contains(name) || added.contains(name) {
                self.add_rules(c);
            }
        }
        for c in &plan.removed_chains {
            self.tx.push(Op::DeleteChain(c.chain.name.clone()));
        }
        for c in &plan.replaced_chains {
            self.tx.push(Op::DeleteChain(c.chain.name.clone()));
            self.tx.push(Op::AddChain(c.chain.clone()));
            self.add_rules(c);
        }
    }

    /// Flushes every current chain with rules that is rewritten, replaced
    /// or removed.
    fn flush_chains(&mut self, plan: &Plan<'_>, current: &TableState) {
        let going: HashSet<&str> = plan
            .replaced_chains
            .iter()
            .chain(&plan.removed_chains)
            .map(|c| c.chain.name.as_str())
            .collect();
        for c in &current.chains {
            let name = c.chain.name.as_str();
            let goes = plan.rewritten_chains.contains(name) || going.contains(name);
            if goes && !c.rules.is_empty() {
                self.tx.push(Op::FlushChain(name.to_string()));
            }
        }
    }

    fn delete_elements(&mut self, plan: &Plan<'_>) {
        for (want, have) in &plan.kept_sets {
            if have.is_dynamic() || want.elements == have.elements {
                continue;
            }
            let (gone, _) = element_changes(&have.set, &want.elements, &have.elements);
            if !gone.is_empty() {
                self.tx.push(Op::DeleteElements {
                    set: SetRef::named(have.set.name.as_str()),
                    elements: gone,
                });
            }
        }
    }

    fn add_elements(&mut self, plan: &Plan<'_>) {
        for s in plan.added_sets.iter().chain(&plan.replaced_sets) {
            self.push_elements(s, s.elements.clone());
        }
        for (want, have) in &plan.kept_sets {
            if have.is_dynamic() || want.elements == have.elements {
                continue;
            }
            let (_, new) = element_changes(&want.set, &want.elements, &have.elements);
            self.push_elements(want, new);
        }
    }

    fn push_elements(&mut self, set: &SetState, elements: Vec<Element>) {
        if !elements.is_empty() {
            self.tx.push(Op::AddElements {
                set: SetRef::named(set.set.name.as_str()),
                elements,
            });
        }
    }

    /// Appends chain `c`'s rules, each after the anonymous sets it owns.
    fn add_rules(&mut self, c: &ChainState) {
        let mut assigned = Vec::new();
        for shape in &c.rules {
            let mut refs = Vec::with_capacity(shape.anonymous.len());
            for anon in &shape.anonymous {
                let mut set = anon.set.clone();
                if set.comment.is_none() {
                    set.comment = Some(fingerprint::comment(&anon.set, &anon.elements));
                }
                set.name = self.names.next();
                self.names.wrote(&set);
                set.id = Some(self.next_id);
                self.next_id += 1;
                let r = SetRef::to_set(&set);
                assigned.push(set.name.clone());
                self.tx.push(Op::AddSet(set));
                if !anon.elements.is_empty() {
                    self.tx.push(Op::AddElements {
                        set: r.clone(),
                        elements: anon.elements.clone(),
                    });
                }
                refs.push(r);
            }
            self.tx
                .push(Op::AddRule(with_anonymous_refs(shape.rule.clone(), &refs)));
        }
        if !assigned.is_empty() {
            self.assigned.insert(c.chain.name.clone(), assigned);
        }
    }
}

/// The changes writing the rules of the new chain `c`, each after the
/// anonymous sets it binds (named from `names`, with transaction ids from
/// `next_id` on, which moves past them): what [`create_all`] writes for
/// that chain.
pub(crate) fn create_rules(
    c: ChainState,
    names: &mut AnonymousNames,
    next_id: &mut u32,
) -> Vec<Op> {
    let mut writer = Writer {
        tx: Transaction::new(crate::Family::Ip, String::new()),
        names,
        next_id: *next_id,
        assigned: Assigned::default(),
    };
    writer.move_rules(c);
    *next_id = writer.next_id;
    writer.tx.ops
}

impl Writer<'_> {
    /// [`Writer::add_rules`], the rules and sets moved out of `c`.
    fn move_rules(&mut self, c: ChainState) {
        for shape in c.rules {
            let mut refs = Vec::with_capacity(shape.anonymous.len());
            for anon in shape.anonymous {
                let mut set = anon.set;
                if set.comment.is_none() {
                    set.comment = Some(fingerprint::comment(&set, &anon.elements));
                }
                set.name = self.names.next();
                self.names.wrote(&set);
                set.id = Some(self.next_id);
                self.next_id += 1;
                let r = SetRef::to_set(&set);
                self.tx.push(Op::AddSet(set));
                if !anon.elements.is_empty() {
                    self.tx.push(Op::AddElements {
                        set: r.clone(),
                        elements: anon.elements,
                    });
                }
                refs.push(r);
            }
            self.tx
                .push(Op::AddRule(with_anonymous_refs(shape.rule, &refs)));
        }
    }
}

/// `rule` with its anonymous set placeholders replaced by `refs`.
fn with_anonymous_refs(mut rule: crate::Rule, refs: &[SetRef]) -> crate::Rule {
    if refs.is_empty() {
        return rule;
    }
    for expr in &mut rule.exprs {
        if let Expr::Lookup { set, .. } | Expr::Dynset { set, .. } = expr
            && set.name == ANONYMOUS_PLACEHOLDER
            && let Some(r) = set.id.and_then(|i| refs.get(i as usize))
        {
            *set = r.clone();
        }
    }
    rule
}
