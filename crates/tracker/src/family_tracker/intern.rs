//! Shared node-name strings: thousands of endpoints name the same few
//! nodes, so each name is stored once.

use model::NodeName;
use std::collections::HashSet;

/// Interned node names, pruned of unused ones now and then.
#[derive(Debug, Default)]
pub(super) struct NodeNames {
    names: HashSet<NodeName>,
    size_after_prune: usize,
}

impl NodeNames {
    /// The shared copy of `name`.
    pub(super) fn intern(&mut self, name: &str) -> NodeName {
        if let Some(held) = self.names.get(name) {
            return held.clone();
        }
        let shared = NodeName::from(name);
        self.names.insert(shared.clone());
        shared
    }

    /// Drops names no endpoint uses any more, once the set has doubled
    /// since the last pruning (amortised cost).
    pub(super) fn prune_unused(&mut self) {
        if self.names.len() > 2 * self.size_after_prune + 64 {
            self.names.retain(|n| NodeName::holders(n) > 1);
            self.size_after_prune = self.names.len();
        }
    }
}
