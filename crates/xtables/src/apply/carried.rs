//! Which chains each service port's piece declared, so that a partial
//! sync need not render the ports that did not change: the renderer hands
//! such a port over as a *carried* piece (its rules in the shared chains
//! only), and the walk takes the port's own chains over from the last
//! sync, name, rule hash and rule count as that sync left them
//! ([`carry_over`]). Upstream's partial sync does the same with its
//! restore input (unchanged services' chains are left out); here the
//! render is skipped too. Pure.

use super::chain_table::ChainTable;
use super::chains::AppliedChains;
use crate::Table;
use crate::rendering::RuleCounts;
use model::ServicePortName;
use std::collections::{BTreeMap, HashMap};

/// The tables in slot order.
const TABLES: [Table; 3] = [Table::Filter, Table::Mangle, Table::Nat];

/// Per service port, the chains its piece declared: one range of chain
/// indices per table (a closed piece declares its own chains one after
/// another), empty where it declared none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PieceChains {
    ranges: HashMap<ServicePortName, [(u32, u32); 3]>,
}

impl PieceChains {
    /// Records that `key`'s piece declared chains `from..to` of `table`
    /// (and none elsewhere, unless recorded too).
    pub(crate) fn record(&mut self, key: &ServicePortName, table: Table, from: u32, to: u32) {
        let ranges = self.ranges.entry(key.clone()).or_insert([(0, 0); 3]);
        ranges[slot(table)] = (from, to);
    }

    /// The chains `key`'s piece declared in each table, if it was rendered.
    fn of(&self, key: &ServicePortName) -> Option<&[(u32, u32); 3]> {
        self.ranges.get(key)
    }

    /// Gives back spare capacity (kept until the next sync).
    pub(crate) fn shrink_to_fit(&mut self) {
        self.ranges.shrink_to_fit();
    }
}

fn slot(table: Table) -> usize {
    TABLES.iter().position(|t| *t == table).unwrap_or(0)
}

/// Declares in `tables` the chains `last` holds for `key`'s piece, with
/// their rule hashes and counts, records them as `key`'s in `pieces` and
/// adds them to `counts`. `false` (nothing declared) when `last` did not
/// render `key`: its chains' rules are unknown.
pub(crate) fn carry_over(
    key: &ServicePortName,
    last: &AppliedChains,
    tables: &mut BTreeMap<Table, ChainTable>,
    pieces: &mut PieceChains,
    counts: &mut RuleCounts,
) -> bool {
    let Some(ranges) = last.pieces().of(key) else { return false };
    for (table, &(from, to)) in TABLES.iter().zip(ranges) {
        let Some(was) = last.table(*table).filter(|_| to > from) else { continue };
        let chains = tables.entry(*table).or_default();
        let start = u32::try_from(chains.len()).unwrap_or(u32::MAX);
        let mut rules = 0;
        for i in from..to {
            let at = chains.declare(was.name(i));
            chains.set_hash(at, was.hash(i));
            chains.set_rules(at, was.rules(i));
            rules += was.rules(i) as usize;
        }
        let end = u32::try_from(chains.len()).unwrap_or(u32::MAX);
        pieces.record(key, *table, start, end);
        counts.add_carried(*table, (to - from) as usize, rules);
    }
    pieces.ranges.entry(key.clone()).or_insert([(0, 0); 3]);
    true
}
