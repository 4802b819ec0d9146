//! `--cleanup`: removes every chain of ours and every jump of ours from
//! the built-in chains, in filter, nat and mangle, for one backend and
//! family or (as upstream's `--cleanup`) for both backends and both
//! families. It is the sync's stale-chain removal with nothing desired,
//! so the same rules of ownership apply: foreign chains and rules, and
//! kubelet's `KUBE-FIREWALL`, are left alone.

use super::hashed::Hashed;
use super::restore::{Layout, RestoreInput, TableInput, restore_invocation, run_restore_input};
use super::saved::parse_saved;
use super::stale::diff_stale;
use super::{Backend, Iptables, TableChanges, changes};
use model::IpFamily;
use crate::{Error, Ruleset, Table};

/// The cleanup of one backend and family.
#[derive(Debug)]
pub struct CleanupOutcome {
    /// The backend cleaned.
    pub backend: Backend,
    /// The family cleaned.
    pub family: IpFamily,
    /// What was removed per table (empty: nothing of ours was there), or
    /// why it failed.
    pub result: Result<Vec<TableChanges>, Error>,
}

/// Cleans both backends and both families. A backend whose tools are not
/// installed holds nothing of ours and is skipped.
pub async fn apply_cleanup_all() -> Vec<CleanupOutcome> {
    let mut outcomes = apply_cleanup_family(IpFamily::V4).await;
    outcomes.extend(apply_cleanup_family(IpFamily::V6).await);
    outcomes
}

/// Cleans both backends of one family (another mode's leftovers, removed
/// once that mode has synced the family). A backend whose tools are not
/// installed holds nothing of ours and is skipped.
pub async fn apply_cleanup_family(family: IpFamily) -> Vec<CleanupOutcome> {
    let mut outcomes = Vec::new();
    for backend in Backend::ALL {
        let result = Iptables::new(backend, family).apply_cleanup().await;
        if let Err(Error::Host(host::Error::Spawn { source, .. })) = &result
            && source.kind() == std::io::ErrorKind::NotFound
        {
            continue;
        }
        outcomes.push(CleanupOutcome { backend, family, result });
    }
    outcomes
}

/// See [`Iptables::apply_cleanup`].
pub(crate) async fn apply_cleanup(ipt: &Iptables) -> Result<Vec<TableChanges>, Error> {
    let saved = parse_saved(&ipt.save().await?);
    let inputs: Vec<TableInput> = [Table::Filter, Table::Mangle, Table::Nat]
        .into_iter()
        .filter_map(|table| {
            let removals = diff_stale(saved.get(&table)?, &|_| false, &[]);
            (!removals.is_empty()).then_some(TableInput { table, written: Vec::new(), removals, added: Vec::new() })
        })
        .collect();
    let (hashed, nothing) = (Hashed::default(), Ruleset::default());
    let input = RestoreInput { tables: &inputs, layout: Layout::AsRendered, hashed: &hashed, rendering: &nothing };
    if !input.is_empty() {
        run_restore_input(ipt, &restore_invocation(ipt, &[]), &input, false, false).await?;
    }
    Ok(changes(&inputs))
}
