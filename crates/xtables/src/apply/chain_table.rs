//! The chains of ours in one table, each with a 64-bit hash of its rules
//! (in order) and a few flags: what a sync keeps between syncs and fills
//! while it renders, compact enough for 110k chains (about 48 bytes a
//! chain: the names in one arena, fixed-size entries, an index of `u32`s).
//! Pure.
//!
//! Rendered and saved chains hash the same way ([`hash_rule`] on each rule
//! as `iptables-save` prints it, without the leading `-A `), so a chain
//! the kernel holds with exactly the rendered rules compares equal.

use std::hash::{BuildHasher, Hasher};

/// The hasher of chain contents: fixed seed (the same text always hashes
/// the same within the process), well mixed, about 10 GB/s.
pub(crate) type ContentHasher = <foldhash::quality::FixedState as BuildHasher>::Hasher;

/// A fresh hasher of one chain's rules.
pub(crate) fn content_hasher() -> ContentHasher {
    foldhash::quality::FixedState::default().build_hasher()
}

/// Adds one rule (`CHAIN args...`) to its chain's hash.
pub(crate) fn hash_rule(hasher: &mut ContentHasher, rule: &str) {
    hasher.write(rule.as_bytes());
    hasher.write_u8(b'\n');
}

/// The hash of a chain without rules.
pub(crate) fn empty_hash() -> u64 {
    content_hasher().finish()
}

/// Flag: the chain is declared and written whole by the restore.
pub(crate) const WRITE: u8 = 1;
/// Flag: `iptables-save` lists the chain.
pub(crate) const SAVED: u8 = 2;
/// Flag: `iptables-save` printed rules of the chain (in one run).
pub(crate) const SAVED_RULES: u8 = 4;
/// Flag: the saved rules hash as the rendered ones.
pub(crate) const SAVED_SAME: u8 = 8;
/// Flag: the saved rules of the chain came in more than one run (never
/// the same).
pub(crate) const SAVED_SCATTERED: u8 = 16;
/// Flag: an open piece declared the chain (a shared chain such as
/// `KUBE-SERVICES`, whose rules come from every piece).
pub(crate) const OPEN: u8 = 32;

/// One chain: where its name is in the arena, its hash and flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    start: u32,
    len: u16,
    flags: u8,
    /// Rules of the chain (as rendered).
    rules: u32,
    hash: u64,
}

/// Chain names with their rule hashes and flags, in declaration order.
#[derive(Debug, Clone, Default)]
pub(crate) struct ChainTable {
    names: String,
    entries: Vec<Entry>,
    index: hashbrown::HashTable<u32>,
}

/// Hash of a chain name for the index.
fn name_key(name: &str) -> u64 {
    foldhash::fast::FixedState::default().hash_one(name)
}

impl ChainTable {
    /// Number of chains.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The chain called `name`, if held.
    pub(crate) fn find(&self, name: &str) -> Option<u32> {
        let (names, entries) = (&self.names, &self.entries);
        self.index.find(name_key(name), |&i| name_of(names, entries, i) == name).copied()
    }

    /// The chain called `name`, added (hash 0, no flags) if not held yet.
    pub(crate) fn declare(&mut self, name: &str) -> u32 {
        if let Some(i) = self.find(name) {
            return i;
        }
        let at = u32::try_from(self.entries.len()).unwrap_or(u32::MAX);
        let start = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        self.names.push_str(name);
        let len = u16::try_from(name.len()).unwrap_or(u16::MAX);
        self.entries.push(Entry { start, len, flags: 0, rules: 0, hash: 0 });
        let (names, entries) = (&self.names, &self.entries);
        self.index.insert_unique(name_key(name), at, |&i| name_key(name_of(names, entries, i)));
        at
    }

    /// The name of chain `i`.
    pub(crate) fn name(&self, i: u32) -> &str {
        name_of(&self.names, &self.entries, i)
    }

    /// The rule hash of chain `i`.
    pub(crate) fn hash(&self, i: u32) -> u64 {
        self.entries.get(i as usize).map_or(0, |e| e.hash)
    }

    /// Sets the rule hash of chain `i`.
    pub(crate) fn set_hash(&mut self, i: u32, hash: u64) {
        if let Some(entry) = self.entries.get_mut(i as usize) {
            entry.hash = hash;
        }
    }

    /// The number of rules of chain `i`, as set by [`Self::set_rules`].
    pub(crate) fn rules(&self, i: u32) -> u32 {
        self.entries.get(i as usize).map_or(0, |e| e.rules)
    }

    /// Sets the number of rules of chain `i`.
    pub(crate) fn set_rules(&mut self, i: u32, rules: u32) {
        if let Some(entry) = self.entries.get_mut(i as usize) {
            entry.rules = rules;
        }
    }

    /// Whether chain `i` has every bit of `flags`.
    pub(crate) fn has(&self, i: u32, flags: u8) -> bool {
        self.entries.get(i as usize).is_some_and(|e| e.flags & flags == flags)
    }

    /// Sets `flags` on chain `i`.
    pub(crate) fn set(&mut self, i: u32, flags: u8) {
        if let Some(entry) = self.entries.get_mut(i as usize) {
            entry.flags |= flags;
        }
    }

    /// Every chain index, in declaration order.
    pub(crate) fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.entries.len()).map(|i| u32::try_from(i).unwrap_or(u32::MAX))
    }

    /// The chains with every bit of `flags`, in declaration order.
    pub(crate) fn with(&self, flags: u8) -> impl Iterator<Item = u32> + '_ {
        self.ids().filter(move |i| self.has(*i, flags))
    }

    /// Whether the kernel holds chain `i` with exactly its rules, as far as
    /// the `iptables-save` read into the flags shows.
    pub(crate) fn saved_unchanged(&self, i: u32) -> bool {
        let rules_same =
            if self.has(i, SAVED_RULES) { self.has(i, SAVED_SAME) } else { self.hash(i) == empty_hash() };
        self.has(i, SAVED) && !self.has(i, SAVED_SCATTERED) && rules_same
    }

    /// Clears every flag (kept between syncs without them).
    pub(crate) fn clear_flags(&mut self) {
        self.entries.iter_mut().for_each(|e| e.flags = 0);
    }

    /// Gives back spare capacity (the table is kept until the next sync).
    pub(crate) fn shrink_to_fit(&mut self) {
        self.names.shrink_to_fit();
        self.entries.shrink_to_fit();
        let (names, entries) = (&self.names, &self.entries);
        self.index.shrink_to_fit(|&i| name_key(name_of(names, entries, i)));
    }
}

fn name_of<'a>(names: &'a str, entries: &[Entry], i: u32) -> &'a str {
    entries.get(i as usize).and_then(|e| names.get(e.start as usize..e.start as usize + usize::from(e.len))).unwrap_or_default()
}

impl PartialEq for ChainTable {
    /// Same chains with the same hashes, in any order (flags aside).
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.ids().all(|i| other.find(self.name(i)).is_some_and(|j| other.hash(j) == self.hash(i)))
    }
}

impl Eq for ChainTable {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_are_found_by_name_in_declaration_order() {
        let mut table = ChainTable::default();
        let names: Vec<String> = (0..1000).map(|i| format!("KUBE-SEP-{i:016}")).collect();
        for name in &names {
            let i = table.declare(name);
            table.set_hash(i, name.len() as u64);
        }
        assert_eq!(table.declare(&names[3]), 3, "declared once");
        assert_eq!(table.len(), 1000);
        assert_eq!(table.find("KUBE-SEP-0000000000000999"), Some(999));
        assert_eq!(table.find("KUBE-SVC-X"), None);
        assert_eq!(table.name(17), names[17]);
        table.set(5, WRITE);
        assert_eq!(table.with(WRITE).collect::<Vec<_>>(), vec![5]);
        table.shrink_to_fit();
        assert_eq!(table.find(&names[500]), Some(500));
    }
}
