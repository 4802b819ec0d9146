//! The per-table syncer: what it applied last, full and partial syncs,
//! and when only a full sync is safe.
//!
//! Outside changes are detected cheaply before a partial sync: the ruleset
//! generation (one small request) tells whether anything at all was
//! committed since our last transaction; only if so, our table's handle
//! and use count (one more request, no dump) tell whether it was deleted,
//! made again, or lost or gained chains or sets. A partial transaction the
//! kernel refuses (e.g. because an object it names is gone) also makes the
//! next sync full. Changes that leave those unchanged (a rule deleted by
//! hand) are repaired by the next full sync, which the caller schedules.

use super::diff::{create_all, diff_states};
use super::fingerprint::is_fingerprint;
use super::names::{AnonymousNames, by_fingerprint, by_name, carry_names};
use super::piece::{Piece, streamed_sets};
use super::report::{SyncCounts, SyncReport};
use super::send_thread::send_while_building;
use super::split::split;
use super::staged::create_in_parts;
use super::state::{TableState, is_anonymous};
use super::stream::diff_listed;
use crate::socket::KnownSets;
use crate::{Error, Family, NftSocket, Set, TableContents, TableIdentity, Transaction};
use std::time::Instant;

/// Brings one of our tables to a desired state, sync after sync. Not
/// `Clone`: two syncers of one table would give anonymous sets the same
/// names.
pub struct Syncer {
    family: Family,
    table: String,
    last: Option<TableState>,
    needs_full: bool,
    names: AnonymousNames,
    seen: Option<Seen>,
    max_anonymous: Option<usize>,
    /// Keeps no copy of the applied table ([`Syncer::without_applied_state`]).
    lean: bool,
    /// A sync succeeded and none failed since.
    applied: bool,
    /// The handle of our table when a lean full sync last listed or made
    /// it: the anonymous sets `names` knows are in that table.
    known_table: Option<u64>,
}

impl std::fmt::Debug for Syncer {
    /// A summary: the last applied state can hold 10,000 services.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Syncer")
            .field("family", &self.family)
            .field("table", &self.table)
            .field("needs_full_sync", &self.needs_full_sync())
            .field(
                "chains_applied",
                &self.last.as_ref().map(|l| l.chains.len()),
            )
            .field("seen", &self.seen)
            .finish_non_exhaustive()
    }
}

/// The kernel as our last transaction left it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seen {
    generation: u32,
    table: Option<TableIdentity>,
}

impl Syncer {
    /// A syncer for table `family kube-proxy`; its first sync is full.
    pub fn new(family: Family) -> Self {
        Self::for_table(family, super::KUBE_PROXY_TABLE)
    }

    /// A syncer for table `family table`.
    pub fn for_table(family: Family, table: impl Into<String>) -> Self {
        Self {
            family,
            table: table.into(),
            last: None,
            needs_full: true,
            names: AnonymousNames::default(),
            seen: None,
            max_anonymous: None,
            lean: false,
            applied: false,
            known_table: None,
        }
    }

    /// Keeps nothing of what it applied but the kernel's generation and
    /// our table's identity: partial syncs are then diffs between two
    /// renderings the caller gives ([`Syncer::sync_difference`]), and a full
    /// sync recognizes the anonymous sets it need not dump by their
    /// fingerprints only. A table of 10,000 services is some 300,000
    /// objects this way not kept between syncs.
    pub fn without_applied_state(mut self) -> Self {
        self.lean = true;
        self.names.recording();
        self
    }

    /// Sends a transaction that creates more than `max` anonymous sets
    /// (cold start: one `numgen` map per service) as staging transactions
    /// of at most `max` each, then one final transaction, instead of one:
    /// the kernel's cost of binding anonymous sets grows with the square
    /// of a transaction's size. The staging parts write only new chains
    /// nothing reaches yet; what traffic sees changes with the final part
    /// (`split.rs`). If a later part is refused the earlier ones stay, and
    /// the next sync is full (which uses or removes them). Off by default.
    pub fn with_max_anonymous_sets_per_transaction(mut self, max: usize) -> Self {
        self.max_anonymous = Some(max);
        self
    }

    /// Whether the next sync must be full: nothing applied yet, the last
    /// transaction failed, or our table was found changed by someone else.
    /// [`Syncer::sync_partial`] then does a full sync itself.
    pub fn needs_full_sync(&self) -> bool {
        self.needs_full || !self.applied
    }

    /// Marks the next sync as full (e.g. periodic resync decided by the
    /// caller).
    pub fn request_full_sync(&mut self) {
        self.needs_full = true;
    }

    /// Reads our table back (only ours), diffs `desired` against it and
    /// applies the difference as one transaction. The transaction carries
    /// the generation read before listing, so the kernel refuses it if
    /// anything changed in between. On error nothing was applied and the
    /// next sync is full.
    pub fn sync_full(
        &mut self,
        socket: &mut NftSocket,
        desired: TableContents,
    ) -> Result<SyncReport, Error> {
        let start = Instant::now();
        let result = match self.lean {
            true => {
                let (fixed, chains) = TableState::new(desired).split_rules();
                self.full_reduced(socket, fixed, chains.into_iter().map(Piece::Chain), start)
            }
            false => self.full(socket, desired, start),
        };
        self.note(&result);
        result
    }

    /// [`Syncer::sync_full`] of the table made of `skeleton` (the table,
    /// every chain without rules, the named sets with their elements) and
    /// `pieces` (each one chain of the skeleton with its rules and their
    /// anonymous sets, see `render::Ruleset::into_pieces`). A named set
    /// of the skeleton without an entry in its elements is streamed: a
    /// later piece gives its elements, whole (`render::Lean::into_pieces`
    /// gives the shared endpoint maps' so), and a full sync of a syncer
    /// that keeps nothing compares them as they come; or, for those named
    /// in `in_parts`, several later pieces give them, compared once all
    /// came (`render::Lean::sets_in_parts`). When our
    /// table does not exist (a cold start) and this syncer keeps nothing
    /// ([`Syncer::without_applied_state`]) and sends large transactions
    /// in parts ([`Syncer::with_max_anonymous_sets_per_transaction`]), the
    /// parts are built, encoded and sent as the pieces come, so the whole
    /// table is never held typed; otherwise the pieces are gathered into
    /// one table first.
    pub fn sync_full_in_pieces(
        &mut self,
        socket: &mut NftSocket,
        skeleton: TableContents,
        in_parts: &[String],
        pieces: impl Iterator<Item = TableContents>,
    ) -> Result<SyncReport, Error> {
        let start = Instant::now();
        let result = self.full_in_pieces(socket, skeleton, in_parts, pieces, start);
        self.note(&result);
        result
    }

    fn full_in_pieces(
        &mut self,
        socket: &mut NftSocket,
        skeleton: TableContents,
        in_parts: &[String],
        pieces: impl Iterator<Item = TableContents>,
        start: Instant,
    ) -> Result<SyncReport, Error> {
        if !self.lean {
            return self.full(socket, TableContents::from_pieces(skeleton, pieces), start);
        }
        let streamed = streamed_sets(&skeleton);
        let mut fixed = TableState::new(skeleton).without_chain_index();
        fixed.mark_streamed(&streamed);
        fixed.mark_in_parts(in_parts);
        self.full_reduced(socket, fixed, pieces.flat_map(Piece::all_of), start)
    }

    /// A full sync of a syncer that keeps nothing
    /// ([`Syncer::without_applied_state`]) to the table made of `fixed`
    /// (the table, its chains without rules, the named sets with their
    /// elements but for the streamed ones) and `pieces` (its chains with
    /// their rules, in order, and the streamed sets' elements), each taken
    /// only when needed and held only if it must be written.
    /// Our table is read back reduced to digests (`listed.rs`) and diffed
    /// against them (`stream.rs`): neither table is ever held whole. A
    /// cold start with a maximum of anonymous sets per transaction is
    /// sent in parts as the chains come (`staged.rs`).
    fn full_reduced(
        &mut self,
        socket: &mut NftSocket,
        fixed: TableState,
        pieces: impl Iterator<Item = Piece>,
        start: Instant,
    ) -> Result<SyncReport, Error> {
        let generation = socket.generation()?;
        let reading = Instant::now();
        socket.take_request_time();
        let named: Vec<String> = fixed.sets.iter().map(|s| s.set.name.clone()).collect();
        let known = self.known_table.take().map(|handle| KnownSets {
            handle,
            sets: std::mem::take(&mut self.names.known),
            named: &named,
        });
        let listed = socket.list_table_reduced(self.family, &self.table, known)?;
        let read_back = reading.elapsed();
        let read_back_kernel = socket.take_request_time();
        let tx = match listed {
            None => match self.max_anonymous {
                Some(max) => {
                    return self.create_in_parts(socket, fixed, pieces, max, generation, start);
                }
                None => create_all(fixed.with_pieces(pieces), &mut self.names),
            },
            Some(mut listed) if listed.table == fixed.table => {
                self.names.merge(&listed.names);
                self.names.known = std::mem::take(&mut listed.known);
                self.known_table = Some(listed.handle);
                let (family, table) = (self.family, self.table.clone());
                let tx = diff_listed(
                    &fixed,
                    pieces,
                    &listed,
                    |set| socket.set_elements(family, &table, set),
                    &mut self.names,
                )?;
                drop_later((fixed, listed));
                tx
            }
            // our table's own definition differs: it is made again whole
            Some(_) => {
                return self.full_state(socket, fixed.with_pieces(pieces), start);
            }
        };
        let mut tx = tx;
        tx.generation = Some(generation);
        let mut report = self.send(socket, tx, start, true)?;
        report.full = true;
        report.read_back = read_back;
        report.read_back_kernel = read_back_kernel;
        if self.known_table.is_none() {
            // a table we made: what we wrote is all it holds
            self.known_table = self.seen.and_then(|s| s.table).map(|t| t.handle);
        }
        Ok(report)
    }

    /// A cold start sent in parts as the chains come, each sent by a
    /// thread of its own while the next is built.
    fn create_in_parts(
        &mut self,
        socket: &mut NftSocket,
        fixed: TableState,
        pieces: impl Iterator<Item = Piece>,
        max: usize,
        generation: u32,
        start: Instant,
    ) -> Result<SyncReport, Error> {
        let mut report = SyncReport {
            full: true,
            ..SyncReport::default()
        };
        let names = &mut self.names;
        report.kernel = send_while_building(socket, |send| {
            create_in_parts(fixed, pieces, max, generation, names, |part| {
                report.counts.add(&SyncCounts::of(&part));
                report.changes += part.ops.len();
                report.transactions += 1;
                send(part)
            })
        })?;
        self.seen = Some(self.look(socket)?);
        self.known_table = self.seen.and_then(|s| s.table).map(|t| t.handle);
        report.total = start.elapsed();
        Ok(report)
    }

    /// Whether a partial sync may be sent now: nothing asks for a full
    /// one ([`Syncer::needs_full_sync`]) and the kernel shows no change to
    /// our table by someone else since our last transaction (one `GETGEN`,
    /// and one `GETTABLE` only if the generation moved). On error the next
    /// sync is full.
    pub fn can_sync_partially(&mut self, socket: &mut NftSocket) -> Result<bool, Error> {
        if self.needs_full_sync() {
            return Ok(false);
        }
        match self.changed_outside(socket) {
            Ok(changed) => {
                self.needs_full = changed;
                Ok(!changed)
            }
            Err(e) => {
                self.needs_full = true;
                Err(e)
            }
        }
    }

    /// A partial sync between two renderings of the same services: applies
    /// what turns `current` (what the last sync applied of them) into
    /// `desired`, objects outside both untouched. The caller must know
    /// `current` is in the kernel: ask [`Syncer::can_sync_partially`]
    /// first. Only the two given tables are normalized and compared, so the
    /// cost follows the size of the change, not of the table. A syncer
    /// that keeps its applied state ([`Syncer::without_applied_state`] not
    /// called) forgets it here and is full on its next sync. On error the
    /// next sync is full.
    pub fn sync_difference(
        &mut self,
        socket: &mut NftSocket,
        desired: TableContents,
        current: TableContents,
    ) -> Result<SyncReport, Error> {
        let start = Instant::now();
        let desired = TableState::new(desired);
        let current = TableState::new(current);
        let (tx, _) = diff_states(&desired, Some(&current), &mut self.names);
        let result = self.send(socket, tx, start, false);
        self.note(&result);
        if !self.lean {
            // The kept whole state no longer matches the kernel.
            drop_later(self.last.take());
            self.needs_full = true;
        }
        result
    }

    /// Notes whether the sync that gave `result` succeeded.
    fn note<T>(&mut self, result: &Result<T, Error>) {
        self.needs_full = result.is_err();
        self.applied |= result.is_ok();
    }

    /// Diffs `desired` against what this syncer applied last, without
    /// reading anything back, and applies the difference (only the changed
    /// chains and elements). Does a full sync instead when
    /// [`Syncer::needs_full_sync`] or when the kernel shows our table was
    /// changed by someone else; the report says which it was.
    pub fn sync_partial(
        &mut self,
        socket: &mut NftSocket,
        desired: TableContents,
    ) -> Result<SyncReport, Error> {
        let start = Instant::now();
        if !self.needs_full_sync() {
            match self.changed_outside(socket) {
                Ok(changed) => self.needs_full = changed,
                Err(e) => {
                    self.needs_full = true;
                    return Err(e);
                }
            }
        }
        if self.needs_full_sync() || self.lean {
            // A lean syncer has no whole state to diff against.
            return self.sync_full(socket, desired);
        }
        let result = self.partial(socket, desired, start);
        self.note(&result);
        result
    }

    fn full(
        &mut self,
        socket: &mut NftSocket,
        desired: TableContents,
        start: Instant,
    ) -> Result<SyncReport, Error> {
        self.full_state(socket, TableState::new(desired), start)
    }

    fn full_state(
        &mut self,
        socket: &mut NftSocket,
        mut desired: TableState,
        start: Instant,
    ) -> Result<SyncReport, Error> {
        let generation = socket.generation()?;
        let started_reading = start.elapsed();
        let current = self.read_back(socket, &desired)?;
        let read_back = start.elapsed() - started_reading;
        if let Some(current) = &current {
            self.names.seed(current);
        }
        let mut current = current.map(TableState::new);
        if self.lean {
            return self.full_lean(socket, desired, current, generation, start, read_back);
        }
        let (mut tx, assigned) = diff_states(&desired, current.as_ref(), &mut self.names);
        tx.generation = Some(generation);
        let mut report = self.send(socket, tx, start, true)?;
        report.full = true;
        report.read_back = read_back;
        carry_names(&mut desired, current.as_mut(), assigned);
        drop_later((self.last.replace(desired), current));
        Ok(report)
    }

    /// The end of a full sync that keeps nothing: neither table is held
    /// while the transaction is encoded and sent, and a new table's
    /// objects are moved into the transaction, not copied.
    fn full_lean(
        &mut self,
        socket: &mut NftSocket,
        desired: TableState,
        current: Option<TableState>,
        generation: u32,
        start: Instant,
        read_back: std::time::Duration,
    ) -> Result<SyncReport, Error> {
        let mut tx = match current {
            None => create_all(desired, &mut self.names),
            Some(current) => {
                let (tx, _) = diff_states(&desired, Some(&current), &mut self.names);
                drop((desired, current));
                tx
            }
        };
        tx.generation = Some(generation);
        let mut report = self.send(socket, tx, start, true)?;
        report.full = true;
        report.read_back = read_back;
        Ok(report)
    }

    /// Our table as the kernel holds it. The elements of anonymous sets
    /// whose content is known are not dumped (bound anonymous sets are
    /// constant, and each dump costs the kernel a walk of all sets): those
    /// this syncer wrote into the same table (same handle), by name, else
    /// those whose listed fingerprint is one of `desired`'s. One carrying
    /// our fingerprint is then compared by it, its elements not copied.
    fn read_back(
        &self,
        socket: &mut NftSocket,
        desired: &TableState,
    ) -> Result<Option<TableContents>, Error> {
        let same_table = match (self.seen, &self.last) {
            (Some(seen), Some(_)) if seen.table.is_some() => {
                socket.table_identity(self.family, &self.table)? == seen.table
            }
            _ => false,
        };
        let by_name = match (&self.last, same_table) {
            (Some(last), true) => by_name(last),
            _ => Default::default(),
        };
        // computed only if a listed set has a fingerprint we did not
        // recognize by name
        let by_print = std::cell::OnceCell::new();
        let known = |s: &Set| {
            if !is_anonymous(s) {
                return None;
            }
            by_name.get(s.name.as_str()).copied().or_else(|| {
                let print = s.comment.as_deref().filter(|c| is_fingerprint(c))?;
                by_print
                    .get_or_init(|| by_fingerprint(desired))
                    .get(print)
                    .copied()
            })
        };
        let listed = socket.list_table_except(self.family, &self.table, |s| known(s).is_some())?;
        Ok(listed.map(|mut contents| {
            // A set carrying our fingerprint is compared by it (its elements
            // stay unread and uncopied); the others get the known elements.
            for set in &contents.sets {
                let Some(anon) = known(set) else { continue };
                match set.comment.as_deref().is_some_and(is_fingerprint) {
                    true => contents.elements.remove(&set.name),
                    false => contents
                        .elements
                        .insert(set.name.clone(), anon.elements.clone()),
                };
            }
            contents
        }))
    }

    fn partial(
        &mut self,
        socket: &mut NftSocket,
        desired: TableContents,
        start: Instant,
    ) -> Result<SyncReport, Error> {
        let mut desired = TableState::new(desired);
        let (tx, assigned) = diff_states(&desired, self.last.as_ref(), &mut self.names);
        let report = self.send(socket, tx, start, false)?;
        carry_names(&mut desired, self.last.as_mut(), assigned);
        drop_later(self.last.replace(desired));
        Ok(report)
    }

    /// Applies `tx` unless it is empty (in parts when it binds more
    /// anonymous sets than the syncer's maximum, see [`split`]), then notes
    /// the kernel's state (if anything was sent, or `look` asks for it).
    fn send(
        &mut self,
        socket: &mut NftSocket,
        tx: Transaction,
        start: Instant,
        look: bool,
    ) -> Result<SyncReport, Error> {
        let mut report = SyncReport {
            counts: SyncCounts::of(&tx),
            changes: tx.ops.len(),
            ..SyncReport::default()
        };
        let sent = !tx.ops.is_empty();
        let parts = match self.max_anonymous {
            Some(max) if report.counts.anonymous_sets_written > max => split(tx, max),
            _ if sent => vec![tx],
            _ => Vec::new(),
        };
        report.transactions = parts.len();
        for part in parts {
            let applied = socket.apply(&part);
            report.kernel += socket.last_kernel_time();
            drop_later(part);
            applied?;
        }
        if sent || look || self.seen.is_none() {
            self.seen = Some(self.look(socket)?);
        }
        report.total = start.elapsed();
        Ok(report)
    }

    fn look(&self, socket: &mut NftSocket) -> Result<Seen, Error> {
        Ok(Seen {
            generation: socket.generation()?,
            table: socket.table_identity(self.family, &self.table)?,
        })
    }

    /// Whether our table changed since our last transaction, as far as
    /// the generation, its handle and its use count tell.
    fn changed_outside(&mut self, socket: &mut NftSocket) -> Result<bool, Error> {
        let Some(seen) = self.seen else {
            return Ok(true);
        };
        let generation = socket.generation()?;
        if generation == seen.generation {
            return Ok(false);
        }
        let table = socket.table_identity(self.family, &self.table)?;
        if table != seen.table {
            return Ok(true);
        }
        // Someone else's commit: note it so the next check is one request.
        self.seen = Some(Seen { generation, table });
        Ok(false)
    }
}

/// Frees `value` on another thread: a table of 10,000 services is some
/// 300,000 allocations, whose freeing need not delay the sync.
pub(super) fn drop_later<T: Send + 'static>(value: T) {
    let spawned = std::thread::Builder::new()
        .name("nft-state-drop".into())
        .spawn(move || drop(value));
    // If no thread can be made the value was dropped here already.
    drop(spawned);
}
