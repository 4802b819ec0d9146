//! Ensuring the jumps from the built-in chains into ours, after the
//! restore has created our chains: a jump already in the `iptables-save`
//! taken before the sync costs nothing; otherwise `iptables -C` decides
//! and only a missing jump is inserted (`-I`, at the top) or appended
//! (`-A`). So a sync never duplicates a jump and never rewrites the
//! built-in chains, which belong to everyone.

use super::backend::{Tool, program};
use super::command::{self, Invocation};
use super::saved::SavedTable;
use crate::render::IpFamily;
use super::Backend;
use crate::{BuiltinJump, Error, Table};
use std::collections::BTreeMap;

/// Ensures every jump of `jumps`, in order; returns the rule lines of
/// those it added.
pub(crate) async fn apply_builtin_jumps(
    backend: Backend,
    family: IpFamily,
    jumps: &[BuiltinJump],
    saved: &BTreeMap<Table, SavedTable>,
) -> Result<Vec<String>, Error> {
    let mut added = Vec::new();
    for jump in jumps {
        let line = jump.rule_line();
        let listed = saved.get(&jump.table).is_some_and(|t| t.rules.iter().any(|r| r.spec == line));
        if !listed && !jump_exists(backend, family, jump).await? {
            let verb = if jump.prepend { "-I" } else { "-A" };
            command::output(&rule_command(backend, family, jump, verb)).await?;
            added.push(line);
        }
    }
    Ok(added)
}

/// `iptables -C`: exit 0 when the rule exists, 1 when it does not.
async fn jump_exists(backend: Backend, family: IpFamily, jump: &BuiltinJump) -> Result<bool, Error> {
    let check = rule_command(backend, family, jump, "-C");
    let out = command::run(&check, None).await?;
    match out.status.code() {
        Some(0) => Ok(true),
        Some(1) => Ok(false),
        _ => Err(command::failed(&check, &out)),
    }
}

/// `iptables -w 5 -t TABLE VERB CHAIN args...`.
fn rule_command(backend: Backend, family: IpFamily, jump: &BuiltinJump, verb: &str) -> Invocation {
    let mut args: Vec<String> =
        ["-w", "5", "-t", jump.table.as_str(), verb, jump.chain].map(String::from).into();
    args.extend(jump.args.iter().cloned());
    Invocation::new(program(backend, family, Tool::Iptables), args)
}
