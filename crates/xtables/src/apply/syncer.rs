//! Full and partial syncs of one backend and family. [`Syncer`] keeps, in
//! memory, a hash of every chain the last successful sync left
//! ([`AppliedChains`]) and writes as much as the caller decided (the
//! runner's full-sync policy; the syncer does not decide):
//!
//! * **full** ([`Iptables::apply_ruleset`]: `iptables-save`, every chain of
//!   ours that differs from it rewritten, stale ones deleted, built-in
//!   jumps ensured) when asked, and whenever there is nothing a partial
//!   sync could start from (nothing synced yet, or the last sync failed:
//!   [`Syncer::state_unknown`] says so beforehand);
//! * **partial** otherwise: no `iptables-save`, one walk of the rendering
//!   (which keeps the rules of the chains that changed:
//!   [`super::hashed::hash_rendering_since`]), only the chains whose rules
//!   changed are rewritten and the chains the last sync wrote that are not
//!   rendered now are deleted ([`super::chains`]), in
//!   one restore; nothing at all when nothing changed.
//!
//! [`Syncer::state_unknown`] tells the policy when the kernel's state is
//! not what the syncer remembers: nothing applied yet, or the
//! `KUBE-PROXY-CANARY` chain in mangle is gone (someone flushed the
//! tables).
//!
//! Any failure forgets what was applied, so the next sync is a full one.
//! The table whose commit failed is unchanged; a partial sync keeps no
//! copy of the old rules, so tables committed earlier in the same input
//! keep their new rules until that full sync ([`Rollback::Skipped`]).

use super::chain_table::WRITE;
use super::chains::{AppliedChains, diff_chains};
use super::hashed::{Hashed, hash_rendering_since};
use super::restore::{Layout, RestoreInput, TableInput, restore_invocation, run_restore_input};
use super::stale::Removals;
use super::{Applied, Iptables, TableChanges};
use crate::error::Rollback;
use crate::rendering::{Rendering, RuleCounts};
use crate::{Error, Table};
use std::collections::BTreeMap;
use std::time::Duration;

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
    /// Rules written by the restore, per table (`sync_proxy_rules_iptables_last`;
    /// on a full sync, every rule rendered, as upstream counts it).
    pub written_rules: BTreeMap<Table, usize>,
    /// What was rendered: rules and chains per table, services without
    /// local endpoints.
    pub counts: RuleCounts,
    /// Time spent rendering (and hashing) in the sync's first walk; a
    /// full sync's second walk renders nat again while it writes (a
    /// partial sync has no second walk).
    pub render: Duration,
    /// What the restore removed and added (a partial sync adds no
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

    /// Whether the kernel's state is unknown to the syncer, so the next
    /// sync must be a full one: nothing applied yet (or the last sync
    /// failed), or our canary chain is gone. Runs `iptables -S` for the
    /// canary only when something was applied.
    pub async fn state_unknown(&self) -> Result<bool, Error> {
        if self.needs_full_sync() {
            return Ok(true);
        }
        let exists = self.iptables.canary_exists().await?;
        if !exists {
            tracing::info!(backend = %self.iptables.backend(), "KUBE-PROXY-CANARY is gone (tables flushed?): full sync");
        }
        Ok(!exists)
    }

    /// Applies `rendering`: in full when `full` is set (or when nothing
    /// was applied, the only base a partial sync has), else partially.
    pub async fn sync<R: Rendering + Sync + ?Sized>(&mut self, rendering: &R, full: bool) -> Result<Synced, Error> {
        // Taken out so that any error below leaves nothing: next sync full.
        let last = self.applied.take();
        self.last_partial = false;
        match last {
            Some(last) if !full => self.sync_partial(rendering, last).await,
            _ => {
                drop(last);
                self.sync_full(rendering).await
            }
        }
    }

    async fn sync_full<R: Rendering + Sync + ?Sized>(&mut self, rendering: &R) -> Result<Synced, Error> {
        let (applied, hashed) = self.iptables.apply_full(rendering).await?;
        let (counts, render) = (hashed.counts.clone(), hashed.took);
        self.applied = Some(AppliedChains::of(hashed.tables, hashed.pieces));
        let written_rules = [Table::Filter, Table::Mangle, Table::Nat].map(|t| (t, counts.rules(t))).into();
        Ok(Synced { partial: false, written_chains: applied.written_chains, written_rules, counts, render, applied })
    }

    async fn sync_partial<R: Rendering + Sync + ?Sized>(&mut self, rendering: &R, last: AppliedChains) -> Result<Synced, Error> {
        self.last_partial = true;
        let mut hashed = hash_rendering_since(rendering, &last);
        hashed.check_carried()?;
        let mut deleted = diff_chains(&last, &mut hashed.tables);
        hashed.keep_written();
        drop(last);
        let inputs = partial_inputs(&hashed, &mut deleted);
        let applied = self.apply_partial(&inputs, &hashed, rendering).await?;
        drop(inputs);
        let (counts, render) = (hashed.counts.clone(), hashed.took);
        self.applied = Some(AppliedChains::of(hashed.tables, hashed.pieces));
        let written_rules = [Table::Filter, Table::Mangle, Table::Nat]
            .map(|t| (t, applied.written_rules.get(&t).copied().unwrap_or(0)))
            .into();
        Ok(Synced { partial: true, written_chains: applied.written_chains, written_rules, counts, render, applied })
    }

    /// Runs a partial restore (none when nothing changed); a failure names
    /// the tables committed before the failing one, which keep their new
    /// rules.
    async fn apply_partial<R: Rendering + Sync + ?Sized>(
        &self,
        inputs: &[TableInput<'_>],
        hashed: &Hashed,
        rendering: &R,
    ) -> Result<Applied, Error> {
        let input = RestoreInput { tables: inputs, layout: Layout::AsRendered, hashed, rendering };
        let record = self.iptables.record_input;
        let mut applied = Applied {
            written_chains: inputs.iter().map(|i| i.written.len()).sum(),
            removed: removed_chains(inputs),
            restore_input: record.then(String::new),
            ..Applied::default()
        };
        if input.is_empty() {
            return Ok(applied);
        }
        let restore = restore_invocation(&self.iptables, &[]);
        let mut err = match run_restore_input(&self.iptables, &restore, &input, record, false).await {
            Ok(written) => {
                applied.restore_input = written.recorded;
                applied.written_rules = written.rules;
                applied.native = written.native;
                return Ok(applied);
            }
            Err(err) => err,
        };
        if let Error::Restore(failure) = &mut err
            && let Some(failed) = failure.table
        {
            let committed: Vec<Table> =
                inputs.iter().filter(|i| !i.is_empty()).map(|i| i.table).take_while(|t| *t != failed).collect();
            if !committed.is_empty() {
                failure.rollback = Rollback::Skipped(committed);
            }
        }
        Err(err)
    }
}

/// Per table (in restore order), the chains a partial sync writes (those
/// [`diff_chains`] flagged) and deletes.
fn partial_inputs<'a>(hashed: &'a Hashed, deleted: &mut BTreeMap<Table, Vec<String>>) -> Vec<TableInput<'a>> {
    let tables = [Table::Filter, Table::Mangle, Table::Nat].map(|table| {
        let written = hashed.table(table).map(|c| c.with(WRITE).map(|i| c.name(i)).collect()).unwrap_or_default();
        let removals = Removals { chains: deleted.remove(&table).unwrap_or_default(), ..Removals::default() };
        TableInput { table, written, removals, added: Vec::new() }
    });
    tables.into()
}

/// The chains a partial sync deleted, as callers see removals.
fn removed_chains(inputs: &[TableInput]) -> Vec<TableChanges> {
    let changes = inputs.iter().filter(|i| !i.removals.chains.is_empty()).map(|i| TableChanges {
        table: i.table,
        deleted_chains: i.removals.chains.clone(),
        deleted_jumps: Vec::new(),
        kept_chains: Vec::new(),
    });
    changes.collect()
}
