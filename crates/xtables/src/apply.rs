//! The applier: the only part of xtables (and of the modes that write
//! iptables rules) that touches the kernel. It feeds a [`Rendering`] (a collected [`crate::Ruleset`], or
//! the streamed render of a snapshot) to `iptables-restore --noflush`,
//! deleting stale chains of ours and adding the missing jumps from the
//! built-in chains in the same restore, cleans everything of ours up
//! (`--cleanup`), and reads the kernel facts the pure renderer needs.
//!
//! One sync of [`Iptables::apply_ruleset`] never holds every rule at once
//! (10k services are 320k rules, 32 MiB of restore input):
//! 1. a first walk of the rendering hashes every chain ([`hashed`],
//!    [`chain_table`]: names, 64-bit hashes and rule counts, ~48 bytes a chain) and
//!    keeps the small tables (filter, mangle) whole;
//! 2. `iptables-save` (every table, one process), read line by line
//!    ([`saved`]), tells which chains of ours exist with exactly the
//!    rendered rules (their saved rules hash the same) and which jumps
//!    are in the built-in chains, keeping only the rules that are not
//!    rendered (and everything of the tables a rollback may need);
//! 3. one `iptables-restore --noflush --counters`, its input streamed
//!    through a bounded buffer ([`input_writer`]; a second walk renders
//!    the nat rules again as they are written), writes per table the `-D`
//!    of unwanted jumps of ours, our chains that differ from the saved
//!    ones (none at all when nothing differs), the missing built-in jumps
//!    ([`jumps`]), and the flush + `-X` of chains of ours no longer
//!    rendered ([`stale`]). One `COMMIT` per table with the legacy
//!    backend (each legacy `COMMIT` copies the whole table), chains
//!    declared in the order cheapest for the tool (descending names,
//!    `KUBE-MARK-MASQ` last: `restore::declaration_order`); with nft, a
//!    big table is split into several ([`blocks`]: top chains last, each
//!    service switching at once; its rules are collected for that).
//!
//! Rendering is deterministic, so both walks see the same rules. The
//! walks read each rule's chain and jump target from the typed
//! [`crate::Rule`], never from its text; a rule's line (spelled when it
//! was built) is only hashed whole (the kernel's `iptables-save` prints the
//! same line) and written. Only the kernel's side, `iptables-save` output,
//! is parsed.
//!
//! If the restore fails, the failing `COMMIT` is unchanged and whatever
//! the same input had already committed (earlier tables, earlier blocks
//! of an nft table) is put back ([`rollback`]), so the previous rules
//! stay; the error names the failing line. (The rollback of nft blocks is
//! one `COMMIT` per table of the chains that changed: slow when a late
//! block of a huge table fails, but correct.)
//!
//! [`Syncer`] adds partial syncs on top: only the chains whose rules
//! changed since the last sync (hashes kept between syncs, [`chains`]),
//! without `iptables-save` and without a second walk (the one walk keeps
//! the changed chains' rules); the service ports that did not change come
//! as carried pieces, not rendered, their chains taken over from the last
//! sync ([`carried`]).
//!
//! Everything runs the tools as child processes of the calling thread
//! (`tokio::process`), and the netlink and sysctl calls act on it too, so
//! a caller on a thread inside a network namespace (tests) acts there.

mod backend;
mod blocks;
mod carried;
mod chain_table;
mod chains;
mod cleanup;
mod hashed;
mod input_writer;
mod jumps;
mod nfacct;
mod node;
mod ownership;
mod restore;
mod rollback;
mod saved;
mod stale;
mod syncer;
mod turn;

pub use crate::error::{RestoreFailure, Rollback};
pub use backend::{Backend, BackendChoice, detect_backend};
pub use cleanup::{CleanupOutcome, apply_cleanup_all, apply_cleanup_family};
pub use nfacct::{
    CT_STATE_INVALID_DROPPED_PKTS, LOCALHOST_NPS_ACCEPTED_PKTS, NFACCT_COUNTERS, apply_nfacct_counter,
    apply_nfacct_counters, read_nfacct_packets,
};
pub use node::{
    CONNTRACK_TCP_BE_LIBERAL, KernelFacts, ROUTE_LOCALNET, apply_kernel_setup, apply_route_localnet,
    read_conntrack_tcp_be_liberal, read_local_addresses,
};
pub use ownership::is_owned_chain;
pub use syncer::{Synced, Syncer};
pub use restore::{NATIVE_VARIABLE, NativeScope};
pub use turn::{LOCK_FILE_VARIABLE, LOCK_WAIT_SECONDS, LockWait};

use crate::chains::KUBE_PROXY_CANARY;
use model::IpFamily;
use crate::rendering::Rendering;
use crate::{Error, Table};
use backend::{Tool, program};
use chain_table::{ChainTable, WRITE};
use host::command::{self, Invocation};
use hashed::{Hashed, hash_rendering};
use restore::{Layout, RestoreInput, TableInput, restore_invocation, run_restore, run_restore_input};
use saved::{Keep, SaveParser, SavedTable};
use std::collections::BTreeMap;

/// The iptables tools of one backend and IP family (`iptables-nft`,
/// `ip6tables-legacy-restore`, ...): everything the applier does goes
/// through one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Iptables {
    backend: Backend,
    family: IpFamily,
    /// Services per `COMMIT` of a full sync's big tables (`None`: one
    /// `COMMIT` per table).
    services_per_commit: Option<usize>,
    /// Keep a copy of each restore input in [`Applied::restore_input`].
    record_input: bool,
    /// How the tools wait for another program's xtables lock.
    lock: LockWait,
    /// Which syncs write legacy tables with the native writer first
    /// ([`crate::native`]).
    native: NativeScope,
}

/// Services per `COMMIT` of the nft backend's full syncs: at 1k services
/// one `COMMIT` takes 8 s and blocks of 100 take 0.7 s (iptables 1.8.9).
pub const NFT_SERVICES_PER_COMMIT: usize = 100;

/// What one table lost in a sync or a cleanup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableChanges {
    /// The table.
    pub table: Table,
    /// Chains of ours flushed and deleted.
    pub deleted_chains: Vec<String>,
    /// Jumps of ours deleted from built-in chains (as `iptables-save`
    /// prints them, without `-A `).
    pub deleted_jumps: Vec<String>,
    /// Stale chains of ours left in place because a rule that is not ours
    /// still jumps to them.
    pub kept_chains: Vec<String>,
}

/// What [`Iptables::apply_ruleset`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Applied {
    /// The exact input fed to `iptables-restore` (empty when none ran),
    /// only when the tools record it ([`Iptables::recording_input`]).
    pub restore_input: Option<String>,
    /// Chains declared and written whole (stale chains aside).
    pub written_chains: usize,
    /// `-A` lines written, per table.
    pub written_rules: BTreeMap<Table, usize>,
    /// Per table, the stale chains and unwanted jumps removed (tables with
    /// nothing removed are left out).
    pub removed: Vec<TableChanges>,
    /// Built-in jumps that were missing and were added (rule lines).
    pub added_jumps: Vec<String>,
    /// Whether the native writer wrote the tables (not `iptables-restore`).
    pub native: bool,
}

impl Applied {
    /// The recorded restore input (empty when not recorded).
    pub fn input(&self) -> &str {
        self.restore_input.as_deref().unwrap_or_default()
    }
}

impl Iptables {
/// The tools of `backend` for `family`.
    pub fn new(backend: Backend, family: IpFamily) -> Self {
        let services_per_commit = (backend == Backend::Nft).then_some(NFT_SERVICES_PER_COMMIT);
        let tools = Self { backend, family, services_per_commit, record_input: false, lock: LockWait::default(), native: NativeScope::Off };
        tools.with_native_scope(restore::native_scope())
    }

    /// The same tools writing legacy tables with the native writer first
    /// (`true`; it falls back to `iptables-restore` for an input it cannot
    /// take) or with `iptables-restore` only. The default comes from
    /// [`NATIVE_VARIABLE`]. Ignored for nft.
    pub fn with_native_writer(self, on: bool) -> Self {
        self.with_native_scope(if on { NativeScope::Every } else { NativeScope::Off })
    }

    /// The same tools writing legacy tables natively in the syncs `scope`
    /// names. Ignored for nft.
    pub fn with_native_scope(self, scope: NativeScope) -> Self {
        Self { native: if self.backend == Backend::Legacy { scope } else { NativeScope::Off }, ..self }
    }

    /// Whether legacy tables are written by the native writer first in a
    /// full sync (`full`) or any other restore.
    pub fn native_writer(&self, full: bool) -> bool {
        match self.native {
            NativeScope::Off => false,
            NativeScope::FullSyncs => full,
            NativeScope::Every => true,
        }
    }

    /// The same tools, keeping a copy of every restore input they feed in
    /// [`Applied::restore_input`] (for tests: a first sync at 10k
    /// services is 32 MiB of input).
    pub fn recording_input(self) -> Self {
        Self { record_input: true, ..self }
    }

    /// The same tools with `per` services per `COMMIT` in a full sync's
    /// restore (`None`: one `COMMIT` per table). The default is
    /// [`NFT_SERVICES_PER_COMMIT`] for nft and `None` for legacy, whose
    /// every `COMMIT` copies the whole table.
    pub fn with_services_per_commit(self, per: Option<usize>) -> Self {
        Self { services_per_commit: per, ..self }
    }

    /// The same tools waiting for the xtables lock as `lock` says (the
    /// default: upstream's five seconds on the tools' own lock file; tests
    /// give a private file).
    pub fn with_lock_wait(self, lock: LockWait) -> Self {
        Self { lock, ..self }
    }

    /// How these tools wait for the xtables lock.
    pub fn lock_wait(&self) -> LockWait {
        self.lock
    }

    /// The backend these tools drive.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The IP family these tools handle.
    pub fn family(&self) -> IpFamily {
        self.family
    }

    /// `iptables-save` of every table, whole (the legacy tool prints only
    /// tables that exist, and creates none).
    pub async fn save(&self) -> Result<String, Error> {
        Ok(command::output(&self.invocation(Tool::Save, Vec::new())).await?)
    }

    /// `iptables-save -t TABLE` (with the legacy backend this creates the
    /// table if it did not exist).
    pub async fn saved_rules(&self, table: Table) -> Result<String, Error> {
        Ok(command::output(&self.invocation(Tool::Save, vec!["-t".into(), table.as_str().into()])).await?)
    }

    /// Checks `input` with `iptables-restore --test`: parsed and built, not
    /// committed (so errors only the kernel finds at commit time, such as
    /// a missing nfacct object, pass).
    pub async fn test_restore(&self, input: &str) -> Result<(), Error> {
        run_restore(self, &restore_invocation(self, &["--test"]), input).await
    }

    /// Whether our canary chain `KUBE-PROXY-CANARY` still exists in mangle;
    /// when it has gone, someone flushed the tables and the next sync must
    /// be a full one.
    pub async fn canary_exists(&self) -> Result<bool, Error> {
        let args = [&self.lock.flag(), "-t", Table::Mangle.as_str(), "-S", KUBE_PROXY_CANARY];
        let list = self.lock.applied_to(self.invocation(Tool::Iptables, args.map(String::from).into()));
        let turn = turn::take_turn(self.backend).await;
        let out = command::run(&list, None).await?;
        drop(turn);
        match out.status.code() {
            Some(0) => Ok(true),
            Some(1) => Ok(false),
            _ => Err(list.failed(&out).into()),
        }
    }

    /// Applies `rendering`: writes our chains and rules and adds its
    /// missing built-in jumps in one restore, deleting chains of ours it no
    /// longer holds (see the module doc). Never touches a chain or rule
    /// that is not ours. On a failed restore the previous rules stay and
    /// the error names the failing input line.
    pub async fn apply_ruleset<R: Rendering + Sync + ?Sized>(&self, rendering: &R) -> Result<Applied, Error> {
        Ok(self.apply_full(rendering).await?.0)
    }

    /// A full sync of `rendering`; also returns the chains it hashed.
    pub(crate) async fn apply_full<R: Rendering + Sync + ?Sized>(
        &self,
        rendering: &R,
    ) -> Result<(Applied, Hashed), Error> {
        let mut hashed = hash_rendering(rendering);
        hashed.check_carried()?;
        let saved = self.read_saved(self.keep_before(), Some(&mut hashed.tables)).await?;
        mark_written(&mut hashed.tables);
        let inputs = plan_tables(&hashed, &saved);
        let input = RestoreInput { tables: &inputs, layout: self.layout(), hashed: &hashed, rendering };
        let mut applied = Applied::default();
        if input.is_empty() {
            applied.restore_input = self.record_input.then(String::new);
        } else {
            let restore = restore_invocation(self, &[]);
            match run_restore_input(self, &restore, &input, self.record_input, true).await {
                Ok(written) => {
                    applied.restore_input = written.recorded;
                    applied.written_rules = written.rules;
                    applied.native = written.native;
                }
                Err(err) => return Err(self.roll_back(err, &inputs, &saved).await),
            }
        }
        applied.written_chains = inputs.iter().map(|i| i.written.len()).sum();
        applied.added_jumps = inputs.iter().flat_map(|i| &i.added).map(|j| j.rule_line()).collect();
        applied.removed = changes(&inputs);
        for table in applied.removed.iter().filter(|t| !t.kept_chains.is_empty()) {
            tracing::warn!(table = %table.table, chains = ?table.kept_chains, "stale chains kept: rules that are not ours jump to them");
        }
        drop(inputs);
        Ok((applied, hashed))
    }

    /// Removes every chain of ours and every jump of ours from the
    /// built-in chains, in filter, nat and mangle, for this backend and
    /// family; does nothing (and runs no restore) when there is nothing.
    pub async fn apply_cleanup(&self) -> Result<Vec<TableChanges>, Error> {
        cleanup::apply_cleanup(self).await
    }

    /// `iptables-save` of every table, read as it comes: `keep` says how
    /// much of each table to keep, and the rendered chains are marked with
    /// what the kernel holds of them.
    async fn read_saved(
        &self,
        keep: fn(Table) -> Keep,
        rendered: Option<&mut BTreeMap<Table, ChainTable>>,
    ) -> Result<BTreeMap<Table, SavedTable>, Error> {
        let mut parser = SaveParser::new(keep, rendered);
        command::stream_lines(&self.invocation(Tool::Save, Vec::new()), |line| parser.line(line)).await?;
        Ok(parser.finish())
    }

    /// How much of each table a full sync keeps from its `iptables-save`:
    /// everything of the tables it may have to roll back, i.e. those
    /// committed before a later `COMMIT` of the same input can fail. With
    /// one `COMMIT` per table that is filter and mangle (small), never nat
    /// (restored last); with nft blocks, nat too: a late block of nat can
    /// fail after earlier ones landed, so nat's rules are kept whole (the
    /// memory bound of a sync holds for legacy only).
    fn keep_before(&self) -> fn(Table) -> Keep {
        match self.layout() {
            Layout::Blocks(_) => |_| Keep::Everything,
            Layout::Sorted | Layout::AsRendered => |t| if t == Table::Nat { Keep::Others } else { Keep::Everything },
        }
    }

    /// What a rollback reads after a failure: the tables [`Self::keep_before`] kept whole.
    fn keep_after(&self) -> fn(Table) -> Keep {
        match self.layout() {
            Layout::Blocks(_) => |_| Keep::Everything,
            Layout::Sorted | Layout::AsRendered => |t| if t == Table::Nat { Keep::Nothing } else { Keep::Everything },
        }
    }

    /// Puts back the tables a failed restore had already committed, and
    /// records in `err` what happened.
    async fn roll_back(&self, mut err: Error, inputs: &[TableInput<'_>], before: &BTreeMap<Table, SavedTable>) -> Error {
        let outcome = match self.read_saved(self.keep_after(), None).await {
            Ok(now) => self.apply_rollback(inputs, before, &now).await,
            Err(save_err) => Rollback::Failed { tables: inputs.iter().map(|i| i.table).collect(), error: save_err.to_string() },
        };
        if let Error::Restore(failure) = &mut err {
            failure.rollback = outcome;
        }
        err
    }

    async fn apply_rollback(
        &self,
        inputs: &[TableInput<'_>],
        before: &BTreeMap<Table, SavedTable>,
        now: &BTreeMap<Table, SavedTable>,
    ) -> Rollback {
        let empty = SavedTable { complete: true, ..SavedTable::default() };
        let mut tables = Vec::new();
        let mut text = String::new();
        for input in inputs.iter().filter(|i| self.keep_after()(i.table) == Keep::Everything) {
            let (was, is) = (before.get(&input.table).unwrap_or(&empty), now.get(&input.table).unwrap_or(&empty));
            if let Some(block) = rollback::render_rollback_input(was, is, input) {
                tables.push(input.table);
                text.push_str(&block);
            }
        }
        if tables.is_empty() {
            return Rollback::NotNeeded;
        }
        match run_restore(self, &restore_invocation(self, &[]), &text).await {
            Ok(()) => Rollback::Done(tables),
            Err(err) => Rollback::Failed { tables, error: err.to_string() },
        }
    }

    /// How a full sync's restore is laid out: blocks of services when
    /// asked (nft), else one `COMMIT` per table, chains in the order
    /// cheapest for the legacy tool.
    fn layout(&self) -> Layout {
        match (self.services_per_commit, self.backend) {
            (Some(per), _) => Layout::Blocks(per),
            (None, Backend::Legacy) => Layout::Sorted,
            (None, Backend::Nft) => Layout::AsRendered,
        }
    }

    fn invocation(&self, tool: Tool, args: Vec<String>) -> Invocation {
        Invocation::new(program(self.backend, self.family, tool), args)
    }
}

/// Flags [`WRITE`] every rendered chain the kernel does not hold with
/// exactly its rules (missing, or a rule someone added, changed or
/// deleted): it is declared and rewritten whole. A chain the kernel holds
/// as rendered is left alone (not declared, so not flushed): a steady full
/// sync writes little (with legacy, no table copy at all when nothing
/// differs) and still repairs our chains.
fn mark_written(tables: &mut BTreeMap<Table, ChainTable>) {
    for chains in tables.values_mut() {
        let differ: Vec<u32> = chains.ids().filter(|i| !chains.saved_unchanged(*i)).collect();
        differ.into_iter().for_each(|i| chains.set(i, WRITE));
    }
}

/// Per table (in restore order), the chains to write, what must go (see
/// [`stale`]) and the built-in jumps missing (see [`jumps`]).
fn plan_tables<'a>(hashed: &'a Hashed, saved: &BTreeMap<Table, SavedTable>) -> Vec<TableInput<'a>> {
    let empty = SavedTable::default();
    let no_chains = ChainTable::default();
    let tables = [Table::Filter, Table::Mangle, Table::Nat].map(|table| {
        let chains = hashed.table(table).unwrap_or(&no_chains);
        let wanted: Vec<String> = hashed.jumps.iter().filter(|j| j.table == table).map(|j| j.rule_line()).collect();
        let rendered = |chain: &str| chains.find(chain).is_some();
        let removals = stale::diff_stale(saved.get(&table).unwrap_or(&empty), &rendered, &wanted);
        let added = jumps::missing_jumps(&hashed.jumps, table, saved.get(&table));
        let written = hashed.table(table).map(|c| c.with(WRITE).map(|i| c.name(i)).collect()).unwrap_or_default();
        TableInput { table, written, removals, added }
    });
    tables.into()
}

/// What a full sync of `rendering` would do over a kernel whose
/// `iptables-save` printed `saved`, without running a tool: the restore
/// input it writes (`blocks`: services per `COMMIT`, as with the nft
/// backend; `None`: one `COMMIT` per table, as legacy), and the rollback
/// input it writes if that restore fails leaving the kernel as `saved`.
/// For the fuzz targets in `fuzz/`, which feed `saved` any text.
#[doc(hidden)]
pub async fn plan_over_saved<R: Rendering + Sync + ?Sized>(rendering: &R, saved: &str, blocks: Option<usize>) -> (String, String) {
    let layout = blocks.map_or(Layout::Sorted, Layout::Blocks);
    let keep: fn(Table) -> Keep = if blocks.is_some() { |_| Keep::Everything } else { |t| if t == Table::Nat { Keep::Others } else { Keep::Everything } };
    let mut hashed = hash_rendering(rendering);
    let mut parser = SaveParser::new(keep, Some(&mut hashed.tables));
    saved.lines().for_each(|line| parser.line(line));
    let before = parser.finish();
    mark_written(&mut hashed.tables);
    let inputs = plan_tables(&hashed, &before);
    let input = RestoreInput { tables: &inputs, layout, hashed: &hashed, rendering };
    let mut out = input_writer::InputWriter::to_pipe(None, true);
    input.write(&mut out).await;
    let restore = out.finish().await.0.recorded.unwrap_or_default();
    let now = saved::parse_saved(saved);
    let empty = SavedTable { complete: true, ..SavedTable::default() };
    let rollback = inputs
        .iter()
        .filter(|i| keep(i.table) == Keep::Everything)
        .filter_map(|i| rollback::render_rollback_input(before.get(&i.table).unwrap_or(&empty), now.get(&i.table).unwrap_or(&empty), i))
        .collect();
    let _ = changes(&inputs);
    (restore, rollback)
}

/// The removals of `inputs` as reported to callers.
fn changes(inputs: &[TableInput]) -> Vec<TableChanges> {
    inputs
        .iter()
        .filter(|i| !i.removals.is_empty() || !i.removals.kept.is_empty())
        .map(|i| TableChanges {
            table: i.table,
            deleted_chains: i.removals.chains.clone(),
            deleted_jumps: i.removals.jumps.iter().map(|j| j.spec.clone()).collect(),
            kept_chains: i.removals.kept.clone(),
        })
        .collect()
}
