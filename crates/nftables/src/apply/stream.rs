//! A full sync's diff against our table as read back and reduced to
//! digests ([`super::listed`]): the transaction [`super::diff`] would
//! give, in the same order, but the desired chains are taken one at a
//! time and kept only when they must be written, and the current table's
//! rules and elements are never held. A named set whose elements' digest
//! differs is the one thing read again, whole, to find which elements go
//! and come.

use super::diff::create_rules;
use super::digest::{self, ElementsDigest};
use super::element_changes::element_changes;
use super::listed::{ListedSet, ListedTable};
use super::names::AnonymousNames;
use super::piece::Piece;
use super::state::{ChainState, SetState, TableState};
use crate::{Element, Error, Op, Set, SetRef, Transaction};

/// What happens to a desired chain that is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Written {
    /// Not in the kernel.
    Added,
    /// Same definition, other rules (or it uses a replaced set): flushed
    /// and written again.
    Rewritten,
    /// Another definition (a base chain's hook or priority): deleted and
    /// added again.
    Replaced,
}

/// The transaction that brings `current` (our table as listed, with the
/// same table definition as `fixed`'s) to the table made of `fixed` (the
/// table and its named sets with their elements, but for the streamed
/// ones; its chains are not used) and `pieces` (every desired chain with
/// its rules, normalized, in order, and the streamed sets' elements,
/// each compared as it comes, or once all came for a set given in parts;
/// a streamed set without a piece is left as it is). `current_elements` reads the elements of a listed named set
/// again, for a set whose elements' digest differs from the desired one.
pub(crate) fn diff_listed(
    fixed: &TableState,
    pieces: impl Iterator<Item = Piece>,
    current: &ListedTable,
    mut current_elements: impl FnMut(&Set) -> Result<Vec<Element>, Error>,
    names: &mut AnonymousNames,
) -> Result<Transaction, Error> {
    let sets = SetPlan::between(fixed, current);
    let mut held: Vec<(Written, ChainState)> = Vec::new();
    // the streamed sets' elements that go, then those that come
    let mut streamed = (Vec::new(), Vec::new());
    // the elements of streamed sets given in parts, gathered
    let mut parted: Vec<(String, Vec<Element>)> = Vec::new();
    // per current chain: wanted with the same definition and rules (None:
    // not wanted; Some(false): rewritten or replaced)
    let mut kept = vec![None; current.chains.len()];
    for piece in pieces {
        let want = match piece {
            Piece::Chain(want) => want,
            Piece::Elements { set, elements } if fixed.set(&set).is_some_and(|s| s.in_parts) => {
                match parted.iter_mut().find(|(name, _)| *name == set) {
                    Some((_, held)) => held.extend(elements),
                    None => parted.push((set, elements)),
                }
                continue;
            }
            Piece::Elements { set, elements } => {
                let (gone, new) = sets.streamed_changes(&set, elements, &mut current_elements)?;
                streamed.0.extend(gone);
                streamed.1.extend(new);
                continue;
            }
        };
        let Some((i, have)) = current.chain(&want.chain.name) else {
            held.push((Written::Added, want));
            continue;
        };
        let written = if have.chain != want.chain {
            Some(Written::Replaced)
        } else if have.scattered
            || have.digest != digest::chain_rules(&want)
            || have.named_sets.iter().any(|s| sets.replaced_name(s))
        {
            Some(Written::Rewritten)
        } else {
            None
        };
        kept[i] = Some(written.is_none());
        if let Some(written) = written {
            held.push((written, want));
        }
    }
    for (set, elements) in parted {
        let (gone, new) = sets.streamed_changes(&set, elements, &mut current_elements)?;
        streamed.0.extend(gone);
        streamed.1.extend(new);
    }

    let mut tx = Transaction::new(fixed.table.family, fixed.table.name.clone());
    for (_, c) in held.iter().filter(|(w, _)| *w == Written::Added) {
        tx.push(Op::AddChain(c.chain.clone()));
    }
    for (c, kept) in current.chains.iter().zip(&kept) {
        if *kept != Some(true) && c.rules > 0 {
            tx.push(Op::FlushChain(c.chain.name.clone()));
        }
    }
    for s in &sets.removed {
        tx.push(Op::DeleteSet(s.set.name.clone()));
    }
    for s in &sets.replaced {
        tx.push(Op::DeleteSet(s.set.name.clone()));
    }
    for s in sets.added.iter().chain(&sets.replaced) {
        tx.push(Op::AddSet(s.set.clone()));
    }
    let mut changed = Vec::new();
    for (want, have) in &sets.kept {
        if want.streamed || have.is_dynamic() || ElementsDigest::of(&want.elements) == have.elements
        {
            continue;
        }
        changed.push((*want, current_elements(&have.set)?));
    }
    let changes: Vec<_> = changed
        .iter()
        .map(|(want, have)| (*want, element_changes(&want.set, &want.elements, have)))
        .collect();
    drop(changed);
    for (want, (gone, _)) in &changes {
        push_elements(&mut tx, want, gone.clone(), true);
    }
    for s in sets.added.iter().chain(&sets.replaced) {
        push_elements(&mut tx, s, s.elements.clone(), false);
    }
    for (want, (_, new)) in changes {
        push_elements(&mut tx, want, new, false);
    }
    tx.ops.extend(streamed.0);
    tx.ops.extend(streamed.1);
    let mut next_id = 1;
    let mut replaced = Vec::new();
    for (written, c) in held {
        match written {
            Written::Replaced => replaced.push(c),
            _ => tx.ops.extend(create_rules(c, names, &mut next_id)),
        }
    }
    for (c, kept) in current.chains.iter().zip(&kept) {
        if kept.is_none() {
            tx.push(Op::DeleteChain(c.chain.name.clone()));
        }
    }
    for c in replaced {
        tx.push(Op::DeleteChain(c.chain.name.clone()));
        tx.push(Op::AddChain(c.chain.clone()));
        tx.ops.extend(create_rules(c, names, &mut next_id));
    }
    Ok(tx)
}

/// Named sets: what is added, replaced, kept and removed.
struct SetPlan<'a> {
    added: Vec<&'a SetState>,
    replaced: Vec<&'a SetState>,
    kept: Vec<(&'a SetState, &'a ListedSet)>,
    removed: Vec<&'a ListedSet>,
}

impl<'a> SetPlan<'a> {
    fn between(desired: &'a TableState, current: &'a ListedTable) -> Self {
        let mut plan = SetPlan {
            added: Vec::new(),
            replaced: Vec::new(),
            kept: Vec::new(),
            removed: Vec::new(),
        };
        for want in &desired.sets {
            match current.set(&want.set.name) {
                None => plan.added.push(want),
                Some(have) if have.set != want.set => plan.replaced.push(want),
                Some(have) => plan.kept.push((want, have)),
            }
        }
        plan.removed = current
            .sets
            .iter()
            .filter(|s| desired.set(&s.set.name).is_none())
            .collect();
        plan
    }

    fn replaced_name(&self, name: &str) -> bool {
        self.replaced.iter().any(|s| s.set.name == name)
    }

    /// The deletions and additions that bring streamed set `name` to
    /// `elements`: all of them for a set added or replaced, the
    /// difference for one kept whose elements' digest differs (its
    /// current elements read again), nothing else.
    fn streamed_changes(
        &self,
        name: &str,
        elements: Vec<Element>,
        current_elements: &mut impl FnMut(&Set) -> Result<Vec<Element>, Error>,
    ) -> Result<(Vec<Op>, Vec<Op>), Error> {
        let ops = |elements, delete| Vec::from_iter(element_op(name, elements, delete));
        let new = |want: &&SetState| want.set.name == name;
        if self.added.iter().chain(&self.replaced).any(new) {
            return Ok((Vec::new(), ops(elements, false)));
        }
        let Some((want, have)) = self.kept.iter().find(|(want, _)| want.set.name == name) else {
            return Ok((Vec::new(), Vec::new()));
        };
        if ElementsDigest::of(&elements) == have.elements {
            return Ok((Vec::new(), Vec::new()));
        }
        let (gone, new) = element_changes(&want.set, &elements, &current_elements(&have.set)?);
        Ok((ops(gone, true), ops(new, false)))
    }
}

fn push_elements(tx: &mut Transaction, set: &SetState, elements: Vec<Element>, delete: bool) {
    tx.ops.extend(element_op(&set.set.name, elements, delete));
}

/// Deletes (`delete`) or adds `elements` of named set `set`, if any.
fn element_op(set: &str, elements: Vec<Element>, delete: bool) -> Option<Op> {
    if elements.is_empty() {
        return None;
    }
    let set = SetRef::named(set);
    Some(match delete {
        true => Op::DeleteElements { set, elements },
        false => Op::AddElements { set, elements },
    })
}
