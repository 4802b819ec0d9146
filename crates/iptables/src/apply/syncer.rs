//! Full and partial syncs of one backend and family. [`Syncer`] keeps, in
//! memory, a hash of every chain the last successful sync left
//! ([`AppliedChains`]) and decides how much the next sync writes:
//!
//! * **full** ([`Iptables::apply_ruleset`]: `iptables-save`, every chain of
//!   ours that differs from it rewritten, stale ones deleted, built-in
//!   jumps ensured) when the
//!   caller asks (first sync, every `syncPeriod`), when nothing is known
//!   (first sync, or the last sync failed), and when the
//!   `KUBE-PROXY-CANARY` chain in mangle is gone (someone flushed the
//!   tables);
//! * **partial** otherwise: no `iptables-save`, only the chains whose rules
//!   changed are rewritten and the chains the last sync wrote that are not
//!   rendered now are deleted ([`super::chains`], [`super::partial`]), in
//!   one restore; nothing at all when nothing changed.
//!
//! Any failure forgets what was applied, so the next sync is a full one.
//! The table whose commit failed is unchanged; a partial sync keeps no
//! copy of the old rules, so tables committed earlier in the same input
//! keep their new rules until that full sync ([`Rollback::Skipped`]).

use super::chains::{AppliedChains, ChainDiff, diff_chains};
use super::partial::render_partial_input;
use super::restore::{restore_invocation, run_restore};
use super::{Applied, Iptables, TableChanges};
use crate::error::Rollback;
use crate::{Error, Ruleset, Table};
use std::collections::BTreeMap;

/// Syncs rulesets of one backend and family, partially when it can (see
/// the module doc).
#[derive(Debug, Clone)]
pub struct Syncer {
    iptables: Iptables,
    applied: Option<AppliedChains>,
    /// The last sync attempted was a partial one.
    last_partial: bool,
}

/// What one [`Syncer::sync`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Synced {
    /// Only the changed chains were written: no `iptables-save`, no check
    /// of the built-in jumps.
    pub partial: bool,
    /// Chains declared and written whole by the restore (on a full sync,
    /// those that differ from the kernel's).
    pub written_chains: usize,
    /// Rules written by the restore, per table (`sync_proxy_rules_iptables_last`).
    pub written_rules: BTreeMap<Table, usize>,
    /// The restore input and what it removed (a partial sync adds no
    /// built-in jumps and deletes no jumps).
    pub applied: Applied,
}

impl Syncer {
    /// A syncer whose first sync is a full one.
    pub fn new(iptables: Iptables) -> Self {
        Self { iptables, applied: None, last_partial: false }
    }

    /// The tools it drives.
    pub fn iptables(&self) -> Iptables {
        self.iptables
    }

    /// Whether the next sync will be a full one whatever the caller asks
    /// (nothing synced yet, or the last sync failed).
    pub fn needs_full_sync(&self) -> bool {
        self.applied.is_none()
    }

    /// Whether the last sync attempted (successful or not) was a partial
    /// one: a failed partial restore counts in its own metric.
    pub fn last_sync_partial(&self) -> bool {
        self.last_partial
    }

    /// Forgets what was applied: the next sync is a full one.
    pub fn forget(&mut self) {
        self.applied = None;
    }

    /// Applies `ruleset`: a full sync when `full` is set or one is needed
    /// (see the module doc), else a partial one.
    pub async fn sync(&mut self, ruleset: &Ruleset, full: bool) -> Result<Synced, Error> {
        // Taken out so that any error below leaves nothing: next sync full.
        let last = self.applied.take();
        self.last_partial = false;
        match last {
            Some(last) if !full && self.canary_exists().await? => self.sync_partial(ruleset, last).await,
            _ => self.sync_full(ruleset).await,
        }
    }

    async fn canary_exists(&self) -> Result<bool, Error> {
        let exists = self.iptables.canary_exists().await?;
        if !exists {
            tracing::info!(backend = %self.iptables.backend(), "KUBE-PROXY-CANARY is gone (tables flushed?): full sync");
        }
        Ok(exists)
    }

    async fn sync_full(&mut self, ruleset: &Ruleset) -> Result<Synced, Error> {
        let applied = self.iptables.apply_ruleset(ruleset).await?;
        let deleted: usize = applied.removed.iter().map(|t| t.deleted_chains.len()).sum();
        let declared = applied.restore_input.lines().filter(|l| l.starts_with(':')).count();
        let written_chains = declared.saturating_sub(deleted);
        self.applied = Some(AppliedChains::of(ruleset));
        let written_rules = ruleset.tables().into_iter().map(|(table, rules)| (table, rules.rules.len())).collect();
        Ok(Synced { partial: false, written_chains, written_rules, applied })
    }

    async fn sync_partial(&mut self, ruleset: &Ruleset, mut last: AppliedChains) -> Result<Synced, Error> {
        self.last_partial = true;
        let diffs = diff_chains(&last, ruleset);
        let restore_input = render_partial_input(ruleset, &diffs);
        if !restore_input.is_empty() {
            self.apply_partial(&restore_input, &diffs).await?;
        }
        last.update(&diffs);
        self.applied = Some(last);
        let written_chains = diffs.iter().map(|d| d.written.len()).sum();
        let removed = removed_chains(&diffs);
        let written_rules = count_rules(&restore_input);
        let applied = Applied { restore_input, removed, added_jumps: Vec::new() };
        Ok(Synced { partial: true, written_chains, written_rules, applied })
    }

    /// Runs a partial restore; a failure names the tables committed before
    /// the failing one, which keep their new rules.
    async fn apply_partial(&self, input: &str, diffs: &[ChainDiff<'_>]) -> Result<(), Error> {
        let restore = restore_invocation(self.iptables.backend(), self.iptables.family(), &[]);
        let mut err = match run_restore(&restore, input).await {
            Ok(()) => return Ok(()),
            Err(err) => err,
        };
        if let Error::Restore(failure) = &mut err
            && let Some(failed) = failure.table
        {
            let committed: Vec<Table> =
                diffs.iter().filter(|d| !d.is_empty()).map(|d| d.table).take_while(|t| *t != failed).collect();
            if !committed.is_empty() {
                failure.rollback = Rollback::Skipped(committed);
            }
        }
        Err(err)
    }
}

/// The `-A` lines of each table of a restore input (every table of ours
/// counted, written or not).
fn count_rules(input: &str) -> BTreeMap<Table, usize> {
    let mut counts: BTreeMap<Table, usize> = [Table::Filter, Table::Mangle, Table::Nat].map(|t| (t, 0)).into();
    let mut table = None;
    for line in input.lines() {
        if let Some(name) = line.strip_prefix('*') {
            table = [Table::Filter, Table::Mangle, Table::Nat].into_iter().find(|t| t.as_str() == name);
        } else if line.starts_with("-A ")
            && let Some(count) = table.and_then(|t| counts.get_mut(&t))
        {
            *count += 1;
        }
    }
    counts
}

/// The chains a partial sync deleted, as callers see removals.
fn removed_chains(diffs: &[ChainDiff]) -> Vec<TableChanges> {
    let changes = diffs.iter().filter(|d| !d.deleted.is_empty()).map(|d| TableChanges {
        table: d.table,
        deleted_chains: d.deleted.clone(),
        deleted_jumps: Vec::new(),
        kept_chains: Vec::new(),
    });
    changes.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_are_counted_per_table() {
        let input = "*filter\n:A - [0:0]\n-A A -j DROP\nCOMMIT\n*nat\n:B - [0:0]\n-A B -j RETURN\n-A B -j RETURN\n-X C\nCOMMIT\n";
        let counts = count_rules(input);
        assert_eq!(counts, [(Table::Filter, 1), (Table::Mangle, 0), (Table::Nat, 2)].into());
    }
}
