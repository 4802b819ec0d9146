//! The `iptables-restore --noflush` input of one sync and running it.
//!
//! What the tool does on failure (checked on iptables 1.8.9, both
//! backends, in `tests/apply_ruleset.rs`): every `*table ... COMMIT` block
//! is committed on its own when its `COMMIT` line is read, so when a later
//! table fails, earlier tables of the same input have already landed; the
//! failing table itself is untouched (one atomic replace for legacy, one
//! nf_tables transaction for nft). It names the line three ways:
//! `Error occurred at line: 7` (parse errors, both backends),
//! `iptables-restore: line 10 failed` (legacy: the kernel refused the
//! table; the line is its `COMMIT`), `line 8: RULE_APPEND failed (...)`
//! (nft: the rule the kernel refused). The same holds for the several
//! `COMMIT`s of one nft table ([`super::blocks`]): blocks before the
//! failing one have landed.

use super::backend::{Backend, Tool, program};
use super::turn::take_turn;
use super::Iptables;
use super::blocks::{Block, split_blocks};
use super::chain_table::WRITE;
use host::command::{self, Invocation};
use super::hashed::Hashed;
use super::input_writer::{InputWriter, Written};
use super::stale::Removals;
use crate::error::{RestoreFailure, Rollback};
use crate::chains::{KUBE_MARK_MASQ, is_service_chain};
use crate::rendering::Rendering;
use crate::{BuiltinJump, Error, Rule, Table, TableRules};
use std::borrow::Cow;
use std::cmp::Reverse;

/// One table's part of a restore: the chains to write, what to remove and
/// the built-in jumps to add.
#[derive(Debug, Clone)]
pub(crate) struct TableInput<'a> {
    pub(crate) table: Table,
    /// The chains declared and written whole (those that differ, on a full
    /// sync), in the order rendered.
    pub(crate) written: Vec<&'a str>,
    pub(crate) removals: Removals,
    /// Built-in jumps missing from the kernel, added after our chains.
    pub(crate) added: Vec<&'a BuiltinJump>,
}

/// How the tables of a restore are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// One `COMMIT` per table, chains declared in the rendered order.
    AsRendered,
    /// One `COMMIT` per table, chains declared in [`declaration_order`]
    /// (cheapest for the legacy tool, which keeps chains sorted by name).
    Sorted,
    /// Several `COMMIT`s of a big table, this many services each (nft).
    Blocks(usize),
}

impl TableInput<'_> {
    /// Nothing to write, remove or add: the table is left out.
    pub(crate) fn is_empty(&self) -> bool {
        self.written.is_empty() && self.removals.is_empty() && self.added.is_empty()
    }
}

/// A restore input, written on demand: per table, the `-D` of unwanted
/// jumps, our chains declared and their rules, the missing built-in
/// jumps (`-I CHAIN 1` or `-A`), stale chains flushed and `-X`ed; tables
/// with nothing to do are left out. The rules of the written chains
/// (those flagged [`WRITE`] in `hashed`) come from the rules `hashed`
/// kept (filter and mangle whole; in a partial sync, nat's changed
/// chains), or from a new walk of `rendering` (a full sync's nat). With
/// [`Layout::Blocks`], a big table is split into several `COMMIT`s
/// ([`split_blocks`]; its rules are collected in memory for that), the
/// jumps and removals in its last one.
pub(crate) struct RestoreInput<'a, R: ?Sized> {
    pub(crate) tables: &'a [TableInput<'a>],
    pub(crate) layout: Layout,
    pub(crate) hashed: &'a Hashed,
    pub(crate) rendering: &'a R,
}

impl<R: Rendering + Sync + ?Sized> RestoreInput<'_, R> {
    /// Nothing to write at all: no restore runs.
    pub(crate) fn is_empty(&self) -> bool {
        self.tables.iter().all(TableInput::is_empty)
    }

    /// Writes the whole input to `out`.
    pub(crate) async fn write(&self, out: &mut InputWriter) {
        for input in self.tables.iter().filter(|i| !i.is_empty()) {
            match self.layout {
                Layout::Blocks(per) => self.write_blocks(out, input, per).await,
                Layout::AsRendered | Layout::Sorted => {
                    write_top_block(out, input, self.layout == Layout::Sorted, Rules::Streamed(self)).await
                }
            }
        }
    }

    async fn write_blocks(&self, out: &mut InputWriter, input: &TableInput<'_>, per: usize) {
        let rules = self.collect(input);
        let mut blocks = split_blocks(&rules, per);
        let top = blocks.pop().unwrap_or_default();
        for block in &blocks {
            write_block(out, input.table, block).await;
        }
        let top_input = TableInput { written: top.chains.clone(), ..input.clone() };
        write_top_block(out, &top_input, false, Rules::<R>::Block(&top.rules)).await;
    }

    /// Whether `chain` of `table` is written.
    fn is_written(&self, table: Table, chain: &str) -> bool {
        self.hashed.table(table).is_some_and(|t| t.find(chain).is_some_and(|i| t.has(i, WRITE)))
    }

    /// The rules of the written chains of `table`, in render order.
    async fn write_rules(&self, out: &mut InputWriter, table: Table) {
        if let Some(kept) = self.hashed.kept.get(&table) {
            for rule in kept.rules.iter().filter(|r| self.is_written(table, r.chain())) {
                out.rule(rule).await;
            }
            return;
        }
        for piece in self.rendering.pieces() {
            for rule in piece.rules.table(table).rules.iter().filter(|r| self.is_written(table, r.chain())) {
                out.rule(rule).await;
            }
        }
    }

    /// The written chains of `input` with their rules, in memory.
    fn collect(&self, input: &TableInput<'_>) -> TableRules {
        let mut rules = TableRules { chains: input.written.iter().map(|c| c.to_string()).collect(), rules: Vec::new() };
        if let Some(kept) = self.hashed.kept.get(&input.table) {
            rules.rules = kept.rules.iter().filter(|r| self.is_written(input.table, r.chain())).cloned().collect();
            return rules;
        }
        let written = |r: &Rule| self.is_written(input.table, r.chain());
        for piece in self.rendering.pieces() {
            match piece.rules {
                Cow::Owned(owned) => rules.rules.extend(owned.into_table(input.table).rules.into_iter().filter(written)),
                Cow::Borrowed(all) => rules.rules.extend(all.table(input.table).rules.iter().filter(|r| written(r)).cloned()),
            }
        }
        rules
    }
}

/// Where `chain` goes in the declarations of [`Layout::Sorted`]: the
/// per-service chains in descending name order, then the shared ones, then
/// `KUBE-MARK-MASQ`. What it saves in the legacy tool (iptables 1.8.9):
/// * libiptc keeps the chains in a list sorted by name with an index of
///   every 40th, rebuilt after 355 new chains; a new chain is placed by a
///   walk from its index entry, so in ascending order each walks the
///   ever longer last run (~200 names), while a chain smaller than every
///   other goes first at once;
/// * every `-j TARGET` looks the target up in a 512-bucket hash of the
///   declared names ("notargets"), newest first in each bucket: declared
///   last, `KUBE-MARK-MASQ`, the target of every endpoint's masquerade
///   rule, is found at once rather than behind ~200 names.
///
/// Instructions of `iptables-legacy-restore` for a first sync at 2,000
/// services × 10 endpoints (callgrind): ascending 2.68 G, descending with
/// `KUBE-MARK-MASQ` last 1.96 G.
fn declaration_order(chain: &str) -> (u8, Reverse<&str>) {
    let rank = if is_service_chain(chain) {
        0
    } else if chain == KUBE_MARK_MASQ {
        2
    } else {
        1
    };
    (rank, Reverse(chain))
}

/// Where the rules of a top block come from.
enum Rules<'a, 'b, R: ?Sized> {
    /// The written chains' rules, from the rendering.
    Streamed(&'a RestoreInput<'b, R>),
    /// These rules.
    Block(&'a [&'a Rule]),
}

/// One `*table ... COMMIT` of chains and rules only.
async fn write_block(out: &mut InputWriter, table: Table, block: &Block<'_>) {
    out.line(&["*", table.as_str()]).await;
    for chain in &block.chains {
        out.line(&[":", chain, " - [0:0]"]).await;
    }
    for rule in &block.rules {
        out.rule(rule).await;
    }
    out.line(&["COMMIT"]).await;
}

/// The last `*table ... COMMIT` of a table: jump deletions, chains
/// declared, their rules, jump additions, stale chains.
async fn write_top_block<R: Rendering + Sync + ?Sized>(
    out: &mut InputWriter,
    input: &TableInput<'_>,
    sorted: bool,
    rules: Rules<'_, '_, R>,
) {
    out.line(&["*", input.table.as_str()]).await;
    for jump in &input.removals.jumps {
        out.line(&["-D ", &jump.spec]).await;
    }
    let mut declared: Vec<&str> = input.written.iter().copied().chain(input.removals.chains.iter().map(String::as_str)).collect();
    if sorted {
        declared.sort_unstable_by_key(|c| declaration_order(c));
    }
    for chain in declared {
        out.line(&[":", chain, " - [0:0]"]).await;
    }
    match rules {
        Rules::Streamed(source) => source.write_rules(out, input.table).await,
        Rules::Block(rules) => {
            for rule in rules {
                out.rule(rule).await;
            }
        }
    }
    for jump in &input.added {
        out.line(&[&add_line(jump)]).await;
    }
    for chain in &input.removals.chains {
        out.line(&["-X ", chain]).await;
    }
    out.line(&["COMMIT"]).await;
}

/// Runs `inv` (a restore of `ipt`'s tools, in the process's turn at the
/// xtables lock) with `input` streamed into its stdin; on failure returns
/// [`Error::Restore`] naming the failing line (found by writing the input
/// again), with `rollback` still [`Rollback::NotNeeded`]. With `record`,
/// what was written holds the whole input. A legacy `full` sync (or any
/// restore, as [`NativeScope`] says) goes to the native writer first: in
/// its child process when one is registered ([`crate::native::child`]),
/// else in this process; when it declines the input, to `inv`.
pub(crate) async fn run_restore_input<R: Rendering + Sync + ?Sized>(
    ipt: &Iptables,
    inv: &Invocation,
    input: &RestoreInput<'_, R>,
    record: bool,
    full: bool,
) -> Result<Written, Error> {
    if ipt.native_writer(full) {
        let attempt = match crate::native::child::program() {
            Some(program) => child_restore(ipt, program, input, record).await,
            None => native_restore(ipt, input, record).await,
        };
        match attempt {
            Ok(mut written) => {
                static FIRST: std::sync::Once = std::sync::Once::new();
                FIRST.call_once(|| tracing::info!("legacy tables written by the native x_tables writer ({NATIVE_VARIABLE}=0: iptables-restore only)"));
                written.native = true;
                return Ok(written);
            }
            Err(Native::Failed(err)) => return Err(err),
            Err(Native::Declined(problem)) => {
                // Once at info (IPVS mode's companion rules use ipsets, which it never encodes), then at debug.
                static FIRST: std::sync::Once = std::sync::Once::new();
                let mut logged = false;
                FIRST.call_once(|| {
                    tracing::info!(%problem, "native x_tables writer declined the input; using iptables-restore");
                    logged = true;
                });
                if !logged {
                    tracing::debug!(%problem, "native x_tables writer declined the input; using iptables-restore");
                }
            }
        }
    }
    let (written, fed, output) = feed(ipt, inv, input, record).await?;
    if output.status.success() {
        return match fed {
            Some(source) => Err(host::Error::Spawn { command: inv.to_string(), source }.into()),
            None => Ok(written),
        };
    }
    Err(restore_failure(inv, input, &output).await)
}

/// Runs `inv` in the process's turn with `input` streamed into its stdin:
/// what was written, the error writing it (the program exited early), and
/// how the program ended.
async fn feed<R: Rendering + Sync + ?Sized>(
    ipt: &Iptables,
    inv: &Invocation,
    input: &RestoreInput<'_, R>,
    record: bool,
) -> Result<(Written, Option<std::io::Error>, std::process::Output), Error> {
    let turn = take_turn(ipt.backend()).await;
    let mut child = command::spawn_piped(inv)?;
    let mut out = InputWriter::to_pipe(child.stdin.take(), record);
    let feed = async {
        input.write(&mut out).await;
        out.finish().await
    };
    let ((written, fed), output) = tokio::join!(feed, child.wait_with_output());
    drop(turn);
    let output = output.map_err(|source| host::Error::Spawn { command: inv.to_string(), source })?;
    Ok((written, fed, output))
}

/// The [`Error::Restore`] of a restore that failed with `output`: the line
/// its stderr names and that line's text (the input written again).
async fn restore_failure<R: Rendering + Sync + ?Sized>(inv: &Invocation, input: &RestoreInput<'_, R>, output: &std::process::Output) -> Error {
    let stderr = command::stderr_of(output);
    let line = failed_line(&stderr);
    let (text, table) = match line {
        Some(n) => {
            let mut finder = InputWriter::finding(n);
            input.write(&mut finder).await;
            finder.finish().await.0.found.unwrap_or_default()
        }
        None => (String::new(), None),
    };
    let failure = RestoreFailure { command: inv.to_string(), line, text, table, stderr, rollback: Rollback::NotNeeded };
    Error::Restore(Box::new(failure))
}

/// `0` writes legacy tables with `iptables-restore` only; `full`, the
/// native writer first in full syncs; `1` (or any other value), in every
/// restore; unset: [`NATIVE_DEFAULT`] when the native writer's child is
/// registered (the proxy binary), else `0`.
pub const NATIVE_VARIABLE: &str = "KPRS_XTABLES_NATIVE";

/// Which restores of legacy tables go to the native writer first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NativeScope {
    /// None: `iptables-restore` only.
    Off,
    /// Full syncs (a partial sync's restore goes to `iptables-restore`).
    FullSyncs,
    /// Every restore.
    Every,
}

/// The scope when [`NATIVE_VARIABLE`] is unset and the child is registered.
const NATIVE_DEFAULT: NativeScope = NativeScope::FullSyncs;

pub(crate) fn native_scope() -> NativeScope {
    match std::env::var(NATIVE_VARIABLE).as_deref() {
        Ok("0") => NativeScope::Off,
        Ok("full") => NativeScope::FullSyncs,
        Ok(_) => NativeScope::Every,
        Err(_) if crate::native::child::program().is_some() => NATIVE_DEFAULT,
        Err(_) => NativeScope::Off,
    }
}

/// Why the native writer did not write an input.
enum Native {
    /// It cannot take this input (nothing was written): use the tool.
    Declined(crate::native::restore::Problem),
    /// The kernel refused a table, or the lock was held: the restore failed.
    Failed(Error),
}

/// Writes `input` with the native writer's child `program` (`kube-proxy-rs
/// xtables-restore`, [`crate::native::child`]), fed as `iptables-restore`
/// is; its exit status says declined (use the tool) or failed as the tool
/// fails.
async fn child_restore<R: Rendering + Sync + ?Sized>(
    ipt: &Iptables,
    program: &std::path::Path,
    input: &RestoreInput<'_, R>,
    record: bool,
) -> Result<Written, Native> {
    use crate::native::{Family, child, restore::Problem};
    let wait = ipt.lock_wait();
    let args = child::args(Family::of(ipt.family()), wait.seconds);
    let inv = wait.applied_to(Invocation::new(program.to_string_lossy(), args));
    let declined = |problem: String| Native::Declined(Problem { line: 0, problem });
    let (written, fed, output) = match feed(ipt, &inv, input, record).await {
        Ok(done) => done,
        Err(err) => return Err(declined(err.to_string())),
    };
    match output.status.code() {
        Some(0) => match fed {
            Some(source) => Err(Native::Failed(host::Error::Spawn { command: inv.to_string(), source }.into())),
            None => Ok(written),
        },
        Some(child::EXIT_DECLINED) => Err(declined(command::stderr_of(&output).trim().to_string())),
        _ => Err(Native::Failed(restore_failure(&inv, input, &output).await)),
    }
}

/// Writes `input` with the native legacy writer ([`crate::native`]) in
/// this process: the same tables `iptables-legacy-restore --noflush` would
/// leave, in the process's turn and under the xtables lock.
async fn native_restore<R: Rendering + Sync + ?Sized>(ipt: &Iptables, input: &RestoreInput<'_, R>, record: bool) -> Result<Written, Native> {
    use crate::native::{Family, lock, restore::{CommitError, Problem, Restore}};
    let command = "native x_tables writer".to_string();
    let declined = |problem: String| Native::Declined(Problem { line: 0, problem });
    let turn = take_turn(Backend::Legacy).await;
    let wait = ipt.lock_wait();
    let held = lock::hold(wait.file, std::time::Duration::from_secs(wait.seconds.into())).await.map_err(|e| declined(format!("xtables lock: {e}")))?;
    if held.is_none() {
        let stderr = format!("Another app is currently holding the xtables lock ({}); waited {}s", lock::path(wait.file), wait.seconds);
        let failure = RestoreFailure { command, line: None, text: String::new(), table: None, stderr, rollback: Rollback::NotNeeded };
        return Err(Native::Failed(Error::Restore(Box::new(failure))));
    }
    let restore = Restore::new(Family::of(ipt.family())).map_err(|e| declined(format!("raw socket: {e}")))?;
    let mut out = InputWriter::to_native(restore, record);
    input.write(&mut out).await;
    let (written, restore) = out.finish_native().await;
    let restore = restore.map_err(Native::Declined)?;
    let result = restore.commit();
    drop((held, turn));
    match result {
        Ok(tables) => {
            tracing::debug!(tables, "native x_tables writer replaced the tables");
            Ok(written)
        }
        Err(CommitError::Input(problem)) => Err(Native::Declined(problem)),
        Err(CommitError::Refused(refused)) => {
            let table = [Table::Filter, Table::Nat, Table::Mangle].into_iter().find(|t| t.as_str() == refused.table);
            let stderr = format!("the kernel refused table {}: {}", refused.table, refused.error);
            let failure = RestoreFailure { command, line: Some(refused.line), text: "COMMIT".into(), table, stderr, rollback: Rollback::NotNeeded };
            Err(Native::Failed(Error::Restore(Box::new(failure))))
        }
    }
}

/// `-I CHAIN 1 args` (prepend) or `-A CHAIN args`: adds a missing jump.
pub(crate) fn add_line(jump: &BuiltinJump) -> String {
    let mut line = if jump.prepend { format!("-I {} 1", jump.chain) } else { format!("-A {}", jump.chain) };
    jump.push_args(&mut line);
    line
}

/// `iptables-restore` of `ipt`'s tools with upstream's flags: keep
/// everything not named in the input (`--noflush`), take counters from it
/// (`--counters`, as upstream; we write none, so rules start at zero),
/// wait for another program's xtables lock as upstream (`--wait=5`, see
/// [`super::turn`]).
pub(crate) fn restore_invocation(ipt: &Iptables, extra: &[&str]) -> Invocation {
    let mut args: Vec<String> = ["--noflush", "--counters"].map(String::from).into();
    args.push(ipt.lock_wait().flag());
    args.extend(extra.iter().map(|a| a.to_string()));
    ipt.lock_wait().applied_to(Invocation::new(program(ipt.backend(), ipt.family(), Tool::Restore), args))
}

/// Feeds `input` to `inv` (a restore of `ipt`'s tools, in the process's
/// turn at the xtables lock); on failure returns [`Error::Restore`] naming
/// the failing line (with `rollback` still [`Rollback::NotNeeded`]).
pub(crate) async fn run_restore(ipt: &Iptables, inv: &Invocation, input: &str) -> Result<(), Error> {
    let turn = take_turn(ipt.backend()).await;
    let out = command::run(inv, Some(input)).await?;
    drop(turn);
    if out.status.success() {
        return Ok(());
    }
    let stderr = command::stderr_of(&out);
    let line = failed_line(&stderr);
    let text = line.and_then(|n| input.lines().nth(n - 1)).unwrap_or_default().to_string();
    let table = line.and_then(|n| table_at(input, n));
    let failure = RestoreFailure { command: inv.to_string(), line, text, table, stderr, rollback: Rollback::NotNeeded };
    Err(Error::Restore(Box::new(failure)))
}

/// The 1-based input line a restore error names, in any of the tool's
/// three spellings: `line: N`, `line N failed`, `line N: ...`.
pub(crate) fn failed_line(stderr: &str) -> Option<usize> {
    stderr.match_indices("line").find_map(|(at, word)| {
        let rest = stderr[at + word.len()..].trim_start_matches([':', ' ']);
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok().filter(|n| *n > 0)
    })
}

/// The table whose block holds line `n` (1-based) of `input`.
fn table_at(input: &str, n: usize) -> Option<Table> {
    input.lines().take(n).filter_map(|l| l.strip_prefix('*')).last().and_then(table_named)
}

fn table_named(name: &str) -> Option<Table> {
    [Table::Filter, Table::Nat, Table::Mangle].into_iter().find(|t| t.as_str() == name.trim())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Ruleset;
    use crate::apply::chain_table::WRITE;
    use crate::apply::hashed::hash_rendering;
    use crate::apply::saved::parse_saved;
    use crate::rendering::tests::sample;
    use crate::rules::tests::rule;

    /// The input writing every chain of `rendering`, with `removals` and
    /// `added` in nat.
    async fn input_text<R: Rendering + Sync + ?Sized>(
        rendering: &R,
        layout: Layout,
        removals: Removals,
        added: Vec<&BuiltinJump>,
    ) -> String {
        let mut hashed = hash_rendering(rendering);
        for chains in hashed.tables.values_mut() {
            chains.ids().collect::<Vec<_>>().into_iter().for_each(|i| chains.set(i, WRITE));
        }
        let mut nat = Some((removals, added));
        let tables: Vec<TableInput> = [Table::Filter, Table::Mangle, Table::Nat]
            .map(|table| {
                let chains = &hashed.tables[&table];
                let (removals, added) = if table == Table::Nat { nat.take().unwrap_or_default() } else { Default::default() };
                TableInput { table, written: chains.ids().map(|i| chains.name(i)).collect(), removals, added }
            })
            .into();
        let input = RestoreInput { tables: &tables, layout, hashed: &hashed, rendering };
        let mut out = InputWriter::recording();
        input.write(&mut out).await;
        out.finish().await.0.recorded.unwrap_or_default()
    }

    fn nat(chains: &[&str], rules: &[&str]) -> Ruleset {
        let nat = TableRules { chains: chains.iter().map(|c| c.to_string()).collect(), rules: rules.iter().map(|r| rule(r)).collect() };
        Ruleset { nat, ..Ruleset::default() }
    }

    #[test]
    fn all_three_error_spellings_name_the_line() {
        assert_eq!(failed_line("iptables-restore v1.8.9 (legacy): Bad\nError occurred at line: 7\nTry `x'"), Some(7));
        assert_eq!(failed_line("iptables-restore: line 10 failed"), Some(10));
        assert_eq!(failed_line("iptables-nft-restore v1.8.9: \nline 8: RULE_APPEND failed (No such file)"), Some(8));
        assert_eq!(failed_line("iptables-restore: unable to initialize table 'nat'"), None);
    }

    #[tokio::test]
    async fn sorted_layout_declares_chains_in_descending_name_order() {
        let ruleset = nat(&["KUBE-SVC-A", "KUBE-SVC-B"], &["KUBE-SVC-B -j RETURN"]);
        let text = input_text(&ruleset, Layout::Sorted, Removals::default(), Vec::new()).await;
        assert_eq!(text, "*nat\n:KUBE-SVC-B - [0:0]\n:KUBE-SVC-A - [0:0]\n-A KUBE-SVC-B -j RETURN\nCOMMIT\n");
    }

    #[tokio::test]
    async fn sorted_layout_declares_service_chains_then_shared_ones_then_kube_mark_masq() {
        let chains = ["KUBE-SERVICES", "KUBE-MARK-MASQ", "KUBE-SVC-B", "KUBE-POSTROUTING", "KUBE-SEP-A", "KUBE-NODEPORTS"];
        let text = input_text(&nat(&chains, &[]), Layout::Sorted, Removals::default(), Vec::new()).await;
        let declared: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix(':')).map(|l| l.trim_end_matches(" - [0:0]")).collect();
        assert_eq!(declared, ["KUBE-SVC-B", "KUBE-SEP-A", "KUBE-SERVICES", "KUBE-POSTROUTING", "KUBE-NODEPORTS", "KUBE-MARK-MASQ"]);
    }

    #[test]
    fn the_failing_lines_table_is_found() {
        let input = "*filter\n:A - [0:0]\nCOMMIT\n*mangle\nCOMMIT\n*nat\n-A X\nCOMMIT\n";
        assert_eq!(table_at(input, 7), Some(Table::Nat));
        assert_eq!(table_at(input, 2), Some(Table::Filter));
    }

    #[tokio::test]
    async fn input_without_removals_is_the_rulesets_restore_text_without_empty_tables() {
        let mut ruleset = nat(&["KUBE-SERVICES"], &["KUBE-SERVICES -j RETURN"]);
        ruleset.mangle = TableRules { chains: vec!["KUBE-PROXY-CANARY".into()], rules: Vec::new() };
        let expected = ruleset.to_restore().replacen("*filter\nCOMMIT\n", "", 1);
        let text = input_text(&ruleset, Layout::AsRendered, Removals::default(), Vec::new()).await;
        assert_eq!(text, expected, "an empty table is left out");
    }

    #[tokio::test]
    async fn a_streamed_rendering_writes_what_the_collected_one_does() {
        let streamed = sample();
        let collected = streamed.collected();
        let whole = input_text(&collected, Layout::AsRendered, Removals::default(), Vec::new()).await;
        assert_eq!(whole, collected.to_restore(), "first sync, as rendered: the ruleset's own text");
        for layout in [Layout::AsRendered, Layout::Sorted, Layout::Blocks(1)] {
            let (a, b) = (
                input_text(&collected, layout, Removals::default(), Vec::new()).await,
                input_text(&streamed, layout, Removals::default(), Vec::new()).await,
            );
            assert_eq!(a, b, "{layout:?}");
        }
    }

    #[tokio::test]
    async fn jump_deletions_come_first_then_chains_jump_additions_stale_chains_last() {
        let saved = parse_saved("*nat\n:PREROUTING ACCEPT [0:0]\n-A PREROUTING -m comment --comment \"x y\" -j KUBE-SERVICES\nCOMMIT\n");
        let removals = Removals {
            chains: vec!["KUBE-SVC-OLD".into()],
            jumps: saved[&Table::Nat].rules.clone(),
            kept: Vec::new(),
        };
        let ruleset = nat(&["KUBE-SERVICES"], &["KUBE-SERVICES -j RETURN"]);
        let jump = BuiltinJump { table: Table::Nat, chain: "OUTPUT", args: vec!["-j".into(), "KUBE-SERVICES".into()], prepend: true };
        let text = input_text(&ruleset, Layout::AsRendered, removals, vec![&jump]).await;
        let expected = "*nat\n-D PREROUTING -m comment --comment \"x y\" -j KUBE-SERVICES\n:KUBE-SERVICES - [0:0]\n:KUBE-SVC-OLD - [0:0]\n-A KUBE-SERVICES -j RETURN\n-I OUTPUT 1 -j KUBE-SERVICES\n-X KUBE-SVC-OLD\nCOMMIT\n";
        assert_eq!(text, expected);
    }
}
