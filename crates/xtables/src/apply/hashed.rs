//! The first walk of a sync over a [`Rendering`]: every chain of every
//! table with the hash of its rules ([`ChainTable`]), the rule counts, and
//! the rules of the small tables (filter, mangle), kept so the restore can
//! write them before the nat table, which a full sync's second walk
//! streams. A partial sync normally has no second walk
//! ([`hash_rendering_since`]): its one walk also keeps the nat rules of the
//! service chains that changed since the last sync (a few); only when a
//! shared chain changed (a service added or removed) does the restore walk
//! again. A partial sync's carried pieces (service ports that did not
//! change, not rendered) take their chains over from the last sync
//! ([`super::carried`]). Pure.

use super::carried::{PieceChains, carry_over};
use super::chain_table::{ChainTable, ContentHasher, OPEN, WRITE, content_hasher, hash_rule};
use super::chains::AppliedChains;
use crate::rendering::{Piece, Rendering, RuleCounts};
use crate::{BuiltinJump, Error, Table, TableRules};
use model::ServicePortName;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

/// The tables kept whole in memory by the first walk: small (a few
/// hundred rules, ~10k at most with 10k services without endpoints).
const KEPT_TABLES: [Table; 2] = [Table::Filter, Table::Mangle];

/// What the first walk found.
#[derive(Debug, Clone, Default)]
pub(crate) struct Hashed {
    /// Per table (all three), its chains and their hashes.
    pub(crate) tables: BTreeMap<Table, ChainTable>,
    /// The rules of filter and mangle, whole.
    pub(crate) kept: BTreeMap<Table, TableRules>,
    /// Rule and chain counts.
    pub(crate) counts: RuleCounts,
    /// The jumps from the built-in chains.
    pub(crate) jumps: Vec<BuiltinJump>,
    /// The chains each service port's piece declared (or carried over).
    pub(crate) pieces: PieceChains,
    /// A carried piece whose chains the last sync does not know (or any
    /// carried piece, in a full sync): the walk is no base for a sync.
    pub(crate) unknown_carried: Option<ServicePortName>,
    /// How long the walk took (render and hash).
    pub(crate) took: Duration,
}

impl Hashed {
    /// The chains of `table`.
    pub(crate) fn table(&self, table: Table) -> Option<&ChainTable> {
        self.tables.get(&table)
    }

    /// An error when a carried piece could not be carried over: the
    /// renderer's idea of the last sync is not the applier's (nothing is
    /// written; the caller's next sync should render everything).
    pub(crate) fn check_carried(&self) -> Result<(), Error> {
        match &self.unknown_carried {
            None => Ok(()),
            Some(key) => Err(Error::UnknownCarried { service_port: key.to_string() }),
        }
    }

    /// After the diff flagged [`WRITE`] the chains to write: in each table
    /// a partial walk kept in part, drops the rules of chains not written,
    /// or all of them when a shared (open) chain is written, whose rules
    /// the walk did not keep: the restore then walks the rendering again.
    pub(crate) fn keep_written(&mut self) {
        let tables = &self.tables;
        self.kept.retain(|table, kept| {
            let Some(chains) = tables.get(table) else { return false };
            if KEPT_TABLES.contains(table) {
                return true;
            }
            if chains.with(WRITE | OPEN).next().is_some() {
                return false;
            }
            kept.rules.retain(|r| chains.find(r.chain()).is_some_and(|i| chains.has(i, WRITE)));
            kept.rules.shrink_to_fit();
            true
        });
    }
}

/// Walks `rendering` once (see the module doc).
pub(crate) fn hash_rendering<R: Rendering + ?Sized>(rendering: &R) -> Hashed {
    walk(rendering, None)
}

/// Walks `rendering` once as [`hash_rendering`] does, and keeps the rules
/// of the big table (nat) a partial sync since `last` may write: those of
/// the closed pieces' chains whose hash differs from `last`'s (known at the
/// end of the piece declaring them). The restore then writes these instead
/// of rendering every service again. The open (shared) chains' rules are
/// not kept (`KUBE-SERVICES` alone is 10k rules at 10k services): when one
/// of them changed, [`Hashed::keep_written`] drops what was kept and the
/// restore walks the rendering again.
pub(crate) fn hash_rendering_since<R: Rendering + ?Sized>(rendering: &R, last: &AppliedChains) -> Hashed {
    walk(rendering, Some(last))
}

fn walk<R: Rendering + ?Sized>(rendering: &R, last: Option<&AppliedChains>) -> Hashed {
    let started = Instant::now();
    let mut out = Hashed { jumps: rendering.builtin_jumps().into_owned(), ..Hashed::default() };
    let mut pending: BTreeMap<Table, HashMap<u32, ContentHasher>> = BTreeMap::new();
    let empty = ChainTable::default();
    for piece in rendering.pieces() {
        out.counts.add(&piece);
        let before = lengths(&out.tables);
        for (table, rules) in piece.rules.tables() {
            let chains = out.tables.entry(table).or_default();
            let open = pending.entry(table).or_default();
            hash_piece(chains, open, rules, piece.open);
            if KEPT_TABLES.contains(&table) {
                let kept = out.kept.entry(table).or_default();
                kept.chains.extend_from_slice(&rules.chains);
                kept.rules.extend(rules.rules.iter().cloned());
            } else if let Some(last) = last {
                let was = last.table(table).unwrap_or(&empty);
                keep_changed(out.kept.entry(table).or_default(), chains, open, rules, was);
            }
        }
        own_chains(&mut out, &piece, before, last);
    }
    for (table, open) in pending {
        let chains = out.tables.entry(table).or_default();
        open.into_iter().for_each(|(i, hasher)| chains.set_hash(i, std::hash::Hasher::finish(&hasher)));
    }
    for table in [Table::Filter, Table::Mangle, Table::Nat] {
        out.tables.entry(table).or_default().shrink_to_fit();
    }
    out.took = started.elapsed();
    out
}

/// Chains per table, in slot order (filter, mangle, nat).
fn lengths(tables: &BTreeMap<Table, ChainTable>) -> [u32; 3] {
    [Table::Filter, Table::Mangle, Table::Nat].map(|t| tables.get(&t).map_or(0, |c| u32::try_from(c.len()).unwrap_or(u32::MAX)))
}

/// Records the chains a keyed piece declared (from `before`, the chain
/// counts before it), or takes a carried piece's over from `last`.
fn own_chains(out: &mut Hashed, piece: &Piece, before: [u32; 3], last: Option<&AppliedChains>) {
    let Some(key) = &piece.key else { return };
    if piece.carried {
        let carried = last.is_some_and(|last| carry_over(key, last, &mut out.tables, &mut out.pieces, &mut out.counts));
        if !carried && out.unknown_carried.is_none() {
            out.unknown_carried = Some(key.clone());
        }
        return;
    }
    let after = lengths(&out.tables);
    for ((table, from), to) in [Table::Filter, Table::Mangle, Table::Nat].into_iter().zip(before).zip(after) {
        out.pieces.record(key, table, from, to);
    }
}

/// Keeps the rules of one piece's table that a partial sync may write:
/// those of the chains this piece declared and closed whose hash differs
/// from `was` (or that `was` lacks).
fn keep_changed(kept: &mut TableRules, chains: &ChainTable, pending: &HashMap<u32, ContentHasher>, rules: &TableRules, was: &ChainTable) {
    let changed: HashSet<u32> = rules
        .chains
        .iter()
        .filter_map(|c| chains.find(c))
        .filter(|i| !pending.contains_key(i))
        .filter(|i| was.find(chains.name(*i)).is_none_or(|j| was.hash(j) != chains.hash(*i)))
        .collect();
    if changed.is_empty() {
        return;
    }
    let mut run: Option<(&str, bool)> = None;
    for rule in &rules.rules {
        let chain = rule.chain();
        let keep = match run {
            Some((name, keep)) if name == chain => keep,
            _ => chains.find(chain).is_some_and(|i| changed.contains(&i)),
        };
        run = Some((chain, keep));
        if keep {
            kept.rules.push(rule.clone());
        }
    }
}

/// Hashes one piece's chains and rules of one table. `pending` holds the
/// hashers of chains still open (declared by an open piece, or by this
/// piece until its end); rules of chains not declared are ignored (the
/// restore would refuse them). Each rule is hashed as the line it is
/// written as (`iptables-save` prints the same).
fn hash_piece(chains: &mut ChainTable, pending: &mut HashMap<u32, ContentHasher>, rules: &TableRules, open: bool) {
    for chain in &rules.chains {
        let i = chains.declare(chain);
        if open {
            chains.set(i, OPEN);
        }
        pending.insert(i, content_hasher());
    }
    let mut run: Option<(&str, u32)> = None;
    for rule in &rules.rules {
        let chain = rule.chain();
        let at = match run {
            Some((name, at)) if name == chain => Some(at),
            _ => chains.find(chain),
        };
        let Some(at) = at else { continue };
        run = Some((chain, at));
        if let Some(hasher) = pending.get_mut(&at) {
            hash_rule(hasher, rule.line());
            chains.set_rules(at, chains.rules(at).saturating_add(1));
        }
    }
    if !open {
        for chain in &rules.chains {
            if let Some(i) = chains.find(chain)
                && let Some(hasher) = pending.remove(&i)
            {
                chains.set_hash(i, std::hash::Hasher::finish(&hasher));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Ruleset;
    use crate::rendering::tests::sample;
    use crate::rules::tests::rule;

    #[test]
    fn streamed_and_collected_renderings_hash_alike() {
        let streamed = sample();
        let collected = streamed.collected();
        let (a, b) = (hash_rendering(&collected), hash_rendering(&streamed));
        assert_eq!(a.tables, b.tables);
        assert_eq!(a.counts, b.counts);
        assert!(a.took > Duration::ZERO);
        assert_eq!(a.kept, b.kept);
        assert_eq!(a.kept[&Table::Filter], collected.filter, "filter kept whole");
        assert_eq!(a.tables[&Table::Nat].len(), 8, "{:?}", collected.nat.chains);
        let order = |h: &Hashed| h.tables[&Table::Nat].ids().map(|i| h.tables[&Table::Nat].name(i).to_string()).collect::<Vec<_>>();
        assert_eq!(order(&a), order(&b), "declaration order");
        assert_eq!(order(&a), collected.nat.chains);
        let empty = hash_rendering(&Ruleset::default());
        assert_eq!(empty.tables.len(), 3);
    }

    /// The nat rules a partial walk of the sample keeps, after the diff
    /// against `last` (the sample with `edit` applied to its nat rules).
    fn kept_since(edit: impl Fn(&mut Vec<crate::Rule>)) -> Option<Vec<String>> {
        let mut before = sample().collected();
        edit(&mut before.nat.rules);
        let last = AppliedChains::of(hash_rendering(&before).tables, PieceChains::default());
        let mut now = hash_rendering_since(&sample(), &last);
        let plain = hash_rendering(&sample());
        assert_eq!((&now.tables, &now.counts), (&plain.tables, &plain.counts), "hashes as a full walk's");
        crate::apply::chains::diff_chains(&last, &mut now.tables);
        now.keep_written();
        assert!(now.kept.contains_key(&Table::Filter), "filter kept whole");
        now.kept.get(&Table::Nat).map(|k| k.rules.iter().map(|r| r.line().to_string()).collect())
    }

    #[test]
    fn a_partial_walk_keeps_the_rules_of_the_changed_chains_only_in_order() {
        assert_eq!(kept_since(|_| {}), Some(Vec::new()), "nothing changed");
        let sep_b = |rules: &mut Vec<crate::Rule>| {
            // (No DNAT of B: nothing differs, and the assertion below fails.)
            if let Some(at) = rules.iter().position(|r| r.line().contains("10.1.0.2:8080")) {
                rules[at] = rule("KUBE-SEP-B1 -p tcp -m tcp -j DNAT --to-destination 10.1.0.3:8080");
            }
        };
        assert_eq!(kept_since(sep_b).unwrap_or_default(), ["KUBE-SEP-B1 -s 10.1.0.2/32 -j KUBE-MARK-MASQ", "KUBE-SEP-B1 -p tcp -m tcp -j DNAT --to-destination 10.1.0.2:8080"]);
        // A shared (open) chain that changed: nothing kept, the restore walks again.
        let services = |rules: &mut Vec<crate::Rule>| rules.retain(|r| !r.line().contains("-j KUBE-SVC-A"));
        assert_eq!(kept_since(services), None);
    }

    /// The last sync's chains when it rendered `rendering` whole.
    fn applied(rendering: &impl Rendering) -> AppliedChains {
        let hashed = hash_rendering(rendering);
        assert!(hashed.check_carried().is_ok());
        AppliedChains::of(hashed.tables, hashed.pieces)
    }

    #[test]
    fn carried_pieces_take_their_chains_over_as_a_full_walk_would_hash_them() {
        let last = applied(&sample());
        let plain = hash_rendering(&sample());
        for changed in [&[][..], &["b"], &["a", "b", "dead"]] {
            let mut now = hash_rendering_since(&sample().carrying(changed), &last);
            assert!(now.check_carried().is_ok(), "{changed:?}");
            assert_eq!((&now.tables, &now.counts), (&plain.tables, &plain.counts), "{changed:?}");
            let deleted = crate::apply::chains::diff_chains(&last, &mut now.tables);
            assert!(deleted.values().all(Vec::is_empty) && now.tables.values().all(|t| t.with(WRITE).next().is_none()));
            // And the next sync carries them over again.
            let next = AppliedChains::of(now.tables, now.pieces);
            let again = hash_rendering_since(&sample().carrying(&[]), &next);
            assert_eq!((&again.tables, &again.counts), (&plain.tables, &plain.counts), "{changed:?}");
        }
    }

    #[test]
    fn a_changed_piece_beside_carried_ones_is_written_and_its_old_chains_deleted() {
        let before = sample().edited(|rules| {
            for r in rules.iter_mut().filter(|r| r.chain() == "KUBE-SVC-B") {
                *r = rule("KUBE-SVC-B -j KUBE-SEP-B0");
            }
            rules.push(rule("KUBE-SEP-B0 -j DNAT --to-destination 10.1.0.9:8080"));
        });
        let mut before_pieces = before;
        before_pieces.declare_in("b", "KUBE-SEP-B0");
        let last = applied(&before_pieces);
        let mut now = hash_rendering_since(&sample().carrying(&["b"]), &last);
        assert!(now.check_carried().is_ok());
        let deleted = crate::apply::chains::diff_chains(&last, &mut now.tables);
        let nat = &now.tables[&Table::Nat];
        let written: Vec<&str> = nat.with(WRITE).map(|i| nat.name(i)).collect();
        assert_eq!(written, ["KUBE-SVC-B"]);
        assert_eq!(deleted[&Table::Nat], ["KUBE-SEP-B0"]);
        now.keep_written();
        let kept: Vec<&str> = now.kept[&Table::Nat].rules.iter().map(|r| r.line()).collect();
        assert_eq!(kept, ["KUBE-SVC-B -j KUBE-SEP-B1"]);
    }

    #[test]
    fn a_carried_piece_the_last_sync_did_not_render_is_refused() {
        let mut fewer = sample();
        fewer.remove("b");
        let last = applied(&fewer);
        let now = hash_rendering_since(&sample().carrying(&[]), &last);
        assert_eq!(now.unknown_carried, Some(crate::rendering::tests::key("b")));
        let Err(err) = now.check_carried() else { panic!("carried over from nothing") };
        assert!(err.to_string().contains("ns/b:p"), "{err}");
        // A full walk has nothing to carry over from.
        assert!(hash_rendering(&sample().carrying(&["a", "b"])).check_carried().is_err());
        assert!(hash_rendering(&sample().carrying(&["a", "b", "dead"])).check_carried().is_ok());
    }
}
