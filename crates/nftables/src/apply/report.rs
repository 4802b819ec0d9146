//! What a sync wrote and how long it took, for logs, metrics and
//! benchmarks.

use crate::{Op, SetFlags, Transaction};
use std::time::Duration;

/// How many objects a transaction writes and deletes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SyncCounts {
    /// Chains added (new, or replaced).
    pub chains_written: usize,
    /// Chains flushed to be rewritten (or deleted).
    pub chains_flushed: usize,
    /// Rules added.
    pub rules_written: usize,
    /// Named sets and maps added.
    pub sets_written: usize,
    /// Anonymous sets added (each with the rule that owns it).
    pub anonymous_sets_written: usize,
    /// Elements added to named sets and maps.
    pub elements_written: usize,
    /// Elements of new anonymous sets.
    pub anonymous_elements_written: usize,
    /// Tables deleted (ours, when its own definition changed).
    pub tables_deleted: usize,
    /// Chains deleted.
    pub chains_deleted: usize,
    /// Named sets and maps deleted.
    pub sets_deleted: usize,
    /// Elements deleted from named sets and maps.
    pub elements_deleted: usize,
}

impl SyncCounts {
    /// The counts of `tx`.
    pub fn of(tx: &Transaction) -> Self {
        let mut c = SyncCounts::default();
        let mut anonymous = std::collections::HashSet::new();
        for op in &tx.ops {
            match op {
                Op::AddChain(_) => c.chains_written += 1,
                Op::FlushChain(_) => c.chains_flushed += 1,
                Op::AddRule(_) => c.rules_written += 1,
                Op::AddSet(s) if s.flags.contains(SetFlags::ANONYMOUS) => {
                    c.anonymous_sets_written += 1;
                    anonymous.insert(s.name.as_str());
                }
                Op::AddSet(_) => c.sets_written += 1,
                Op::AddElements { set, elements } if anonymous.contains(set.name.as_str()) => {
                    c.anonymous_elements_written += elements.len()
                }
                Op::AddElements { elements, .. } => c.elements_written += elements.len(),
                Op::DeleteTable | Op::DestroyTable => c.tables_deleted += 1,
                Op::DeleteChain(_) => c.chains_deleted += 1,
                Op::DeleteSet(_) => c.sets_deleted += 1,
                Op::DeleteElements { elements, .. } => c.elements_deleted += elements.len(),
                Op::AddTable(_) | Op::DeleteRule { .. } | Op::FlushSet(_) => {}
            }
        }
        c
    }

    /// Adds `other`'s counts (a transaction sent in parts).
    pub fn add(&mut self, other: &SyncCounts) {
        self.chains_written += other.chains_written;
        self.chains_flushed += other.chains_flushed;
        self.rules_written += other.rules_written;
        self.sets_written += other.sets_written;
        self.anonymous_sets_written += other.anonymous_sets_written;
        self.elements_written += other.elements_written;
        self.anonymous_elements_written += other.anonymous_elements_written;
        self.tables_deleted += other.tables_deleted;
        self.chains_deleted += other.chains_deleted;
        self.sets_deleted += other.sets_deleted;
        self.elements_deleted += other.elements_deleted;
    }

    /// Objects deleted: tables, chains, sets and elements (rules go with
    /// flushed chains and are not counted one by one).
    pub fn objects_deleted(&self) -> usize {
        self.tables_deleted + self.chains_deleted + self.sets_deleted + self.elements_deleted
    }

    /// Whether nothing was written or deleted.
    pub fn is_empty(&self) -> bool {
        *self == SyncCounts::default()
    }
}

/// One sync of one table.
#[derive(Debug, Clone, Default)]
pub struct SyncReport {
    /// Whether it was a full sync (our table read back first).
    pub full: bool,
    /// What the transaction wrote and deleted (nothing sent if empty).
    pub counts: SyncCounts,
    /// The transaction's size in changes ([`crate::Op`]s), 0 if none was
    /// sent.
    pub changes: usize,
    /// How many transactions carried it (1, or more for a large one split
    /// with [`crate::apply::Syncer::with_max_anonymous_sets_per_transaction`];
    /// 0 if nothing was sent).
    pub transactions: usize,
    /// Time the kernel spent on the transaction (inside `sendmsg` and
    /// reading its acks).
    pub kernel: Duration,
    /// Time reading our table back (full sync only), our decoding and
    /// digests included.
    pub read_back: Duration,
    /// Of `read_back`, the time inside the socket's `send` and `recv`
    /// calls: the kernel's (it builds each dump message while we wait).
    pub read_back_kernel: Duration,
    /// The whole sync, start to end.
    pub total: Duration,
}

impl SyncReport {
    /// Our own time: the diff, encoding and bookkeeping.
    pub fn own(&self) -> Duration {
        self.total.saturating_sub(self.kernel + self.read_back)
    }
}
