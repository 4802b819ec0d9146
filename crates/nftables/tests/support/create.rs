//! A cold-start transaction for a rendered table: everything created in
//! one batch (test support; the applier makes its own transactions).

use nftables::{Op, SetFlags, SetRef, TableContents, Transaction};

/// Creates `contents` from nothing: table, chains, named sets with their
/// elements, anonymous sets with theirs, then the rules that bind them.
pub fn create_all(contents: &TableContents) -> Transaction {
    let table = &contents.table;
    let mut tx = Transaction::new(table.family, table.name.as_str());
    tx.push(Op::AddTable(table.clone()));
    for chain in &contents.chains {
        tx.push(Op::AddChain(chain.clone()));
    }
    // named sets first, anonymous ones (bound by the rules) after
    let mut sets: Vec<_> = contents.sets.iter().collect();
    sets.sort_by_key(|s| s.flags.contains(SetFlags::ANONYMOUS));
    for set in sets {
        tx.push(Op::AddSet(set.clone()));
        let elements = contents
            .elements
            .get(&TableContents::set_key(set))
            .cloned()
            .unwrap_or_default();
        if !elements.is_empty() {
            tx.push(Op::AddElements {
                set: SetRef::to_set(set),
                elements,
            });
        }
    }
    for rule in &contents.rules {
        tx.push(Op::AddRule(rule.clone()));
    }
    tx
}
