//! Our table as a full sync reads it back, reduced as it is read to what
//! the diff compares: each chain's definition and a digest of its rules
//! (normalized as [`super::state::TableState`] normalizes them), each
//! named set's definition and a digest of its elements. The rules and
//! elements themselves are not kept: a table of 10,000 services is some
//! 300,000 decoded objects, which the diff needs only where they differ
//! (a named set whose digest differs is dumped again, see `stream.rs`;
//! a chain whose digest differs is rewritten from the desired side).
//!
//! Fed in the order the socket lists: the table, chains, sets, the
//! elements of anonymous sets without our fingerprint and of named sets,
//! then rules.

use super::digest::{self, Digest, ElementsDigest, RulesDigest};
use super::fingerprint;
use super::names::{AnonymousNames, number};
use super::state::{element_order, is_anonymous};
use crate::{Chain, Element, Expr, Rule, Set, SetFlags, SetRef, Table, TableContents};
use std::collections::HashMap;

/// Our table as listed, reduced.
#[derive(Debug)]
pub(crate) struct ListedTable {
    pub(crate) table: Table,
    /// In the kernel's order.
    pub(crate) chains: Vec<ListedChain>,
    chain_index: HashMap<String, usize>,
    /// Named sets, in the kernel's order.
    pub(crate) sets: Vec<ListedSet>,
    set_index: HashMap<String, usize>,
    /// Names for new anonymous sets, past every `__kp<n>` listed.
    pub(crate) names: AnonymousNames,
    /// The identities of the `__kp<n>` sets its rules bind, by `n`.
    pub(crate) known: HashMap<u64, Digest>,
    /// The kernel's handle of the table (`NFTA_TABLE_HANDLE`).
    pub(crate) handle: u64,
}

/// A chain, its rule count and the digest of its rules.
#[derive(Debug)]
pub(crate) struct ListedChain {
    pub(crate) chain: Chain,
    pub(crate) rules: usize,
    pub(crate) digest: Digest,
    /// The named sets its rules look up or update.
    pub(crate) named_sets: Vec<String>,
    /// Its rules were not listed one after another (never seen from the
    /// kernel): compared as different.
    pub(crate) scattered: bool,
}

/// A named set and the digest of its elements.
#[derive(Debug)]
pub(crate) struct ListedSet {
    pub(crate) set: Set,
    pub(crate) elements: ElementsDigest,
}

impl ListedSet {
    /// Whether the packet path fills it: its elements are not compared.
    pub(crate) fn is_dynamic(&self) -> bool {
        self.set.flags.contains(SetFlags::DYNAMIC)
    }
}

impl ListedTable {
    pub(crate) fn chain(&self, name: &str) -> Option<(usize, &ListedChain)> {
        self.chain_index.get(name).map(|&i| (i, &self.chains[i]))
    }

    pub(crate) fn set(&self, name: &str) -> Option<&ListedSet> {
        self.set_index.get(name).map(|&i| &self.sets[i])
    }
}

/// Builds a [`ListedTable`] from the listed objects.
pub(crate) struct Listing {
    table: ListedTable,
    /// Anonymous sets by kernel name ([`TableContents::set_key`]): their
    /// identity, once known.
    anonymous: HashMap<String, Digest>,
    /// Anonymous sets without our fingerprint: their elements are dumped.
    unprinted: Vec<Set>,
    /// The chain whose rules are being listed.
    open: Option<(usize, RulesDigest)>,
    /// Chains whose rules were listed already.
    closed: Vec<bool>,
    /// Identities of our `__kp<n>` sets known without listing the sets
    /// (see [`Listing::with_known`]).
    given: Option<HashMap<u64, Digest>>,
    /// A rule names a set that is neither listed nor known.
    unknown: bool,
}

impl Listing {
    pub(crate) fn new(table: Table) -> Self {
        Self {
            table: ListedTable {
                table,
                chains: Vec::new(),
                chain_index: HashMap::new(),
                sets: Vec::new(),
                set_index: HashMap::new(),
                names: AnonymousNames::default(),
                known: HashMap::new(),
                handle: 0,
            },
            anonymous: HashMap::new(),
            unprinted: Vec::new(),
            open: None,
            closed: Vec::new(),
            given: None,
            unknown: false,
        }
    }

    /// A listing that does not list the table's sets but the named ones it
    /// wants by name: the anonymous sets its rules bind must be ones we
    /// wrote, `known` by `n` of their `__kp<n>` name. Whether that held is
    /// [`Listing::complete`].
    pub(crate) fn with_known(mut self, known: HashMap<u64, Digest>) -> Self {
        self.given = Some(known);
        self
    }

    /// What it saw, for a log line.
    pub(crate) fn counts(&self) -> String {
        let t = &self.table;
        format!(
            "chains {} named sets {} anonymous sets known {} of {} (a set not known: {})",
            t.chains.len(),
            t.sets.len(),
            t.known.len(),
            self.given.as_ref().map_or(0, |g| g.len()),
            self.unknown
        )
    }

    /// Whether it was made [`Listing::with_known`].
    pub(crate) fn is_known(&self) -> bool {
        self.given.is_some()
    }

    /// Whether a listing [`Listing::with_known`] saw every object of the
    /// table: no rule named a set neither listed nor known (an anonymous
    /// set exists only bound to a rule, and every rule is listed), and the
    /// table's use count (`NFTA_TABLE_USE`) is that of the chains and
    /// named sets seen, so no named set (or other object) went unlisted.
    /// The kernel (6.18) counts chains, named sets and other objects in it,
    /// not the anonymous sets bound to rules; a kernel that counts them
    /// too makes every such listing incomplete (then listed whole).
    pub(crate) fn complete(&self, table_use: u32) -> bool {
        let t = &self.table;
        let seen = t.chains.len() + t.sets.len();
        !self.unknown && usize::try_from(table_use).is_ok_and(|u| u == seen)
    }

    pub(crate) fn chain(&mut self, chain: Chain) {
        let t = &mut self.table;
        t.chain_index.insert(chain.name.clone(), t.chains.len());
        t.chains.push(ListedChain {
            chain,
            rules: 0,
            digest: RulesDigest::new().finish().1,
            named_sets: Vec::new(),
            scattered: false,
        });
        self.closed.push(false);
    }

    pub(crate) fn set(&mut self, mut set: Set) {
        self.table.names.seed_name(&set.name);
        if !is_anonymous(&set) {
            let t = &mut self.table;
            t.set_index.insert(set.name.clone(), t.sets.len());
            t.sets.push(ListedSet {
                set,
                elements: ElementsDigest::default(),
            });
            return;
        }
        let print = set
            .comment
            .take_if(|c| fingerprint::is_fingerprint(c.as_str()));
        match print {
            Some(print) => {
                let key = TableContents::set_key(&set);
                set.name.clear();
                set.id = None;
                let identity = digest::anonymous_identity(&set, &print);
                self.anonymous.insert(key, identity);
            }
            None => self.unprinted.push(set),
        }
    }

    /// The anonymous sets whose elements must be dumped (no fingerprint
    /// of ours stands for them).
    pub(crate) fn unprinted(&self) -> &[Set] {
        &self.unprinted
    }

    /// The named sets whose elements are compared (not the packet path's).
    pub(crate) fn compared_sets(&self) -> impl Iterator<Item = &Set> {
        self.table
            .sets
            .iter()
            .filter(|s| !s.is_dynamic())
            .map(|s| &s.set)
    }

    /// The elements of anonymous set `set` (one of [`Listing::unprinted`]).
    pub(crate) fn anonymous_elements(&mut self, set: &Set, mut elements: Vec<Element>) {
        if !elements.is_sorted_by(|a, b| element_order(a, b).is_le()) {
            elements.sort_by(element_order);
        }
        let mut normal = set.clone();
        normal.name.clear();
        normal.id = None;
        let print = fingerprint::comment(&normal, &elements);
        self.anonymous.insert(
            TableContents::set_key(set),
            digest::anonymous_identity(&normal, &print),
        );
    }

    /// Some elements of named set `set`.
    pub(crate) fn named_elements(&mut self, set: &str, elements: &[Element]) {
        if let Some(&i) = self.table.set_index.get(set) {
            for e in elements {
                self.table.sets[i].elements.add(e);
            }
        }
    }

    /// The next rule, as listed: normalized as [`super::state::RuleShape`]
    /// normalizes it and folded into its chain's digest. Rules of chains
    /// not listed are left out, as the full diff leaves them.
    pub(crate) fn rule(&mut self, mut rule: Rule) {
        let Some(&chain) = self.table.chain_index.get(&rule.chain) else {
            return;
        };
        if self.open.as_ref().is_none_or(|(open, _)| *open != chain) {
            self.close();
            if self.closed[chain] {
                self.table.chains[chain].scattered = true;
            }
            self.open = Some((chain, RulesDigest::new()));
        }
        rule.handle = None;
        let mut anonymous = Vec::new();
        let mut named = std::mem::take(&mut self.table.chains[chain].named_sets);
        for expr in &mut rule.exprs {
            match expr {
                Expr::Lookup { set, .. } | Expr::Dynset { set, .. } => {
                    let key = match set.id {
                        Some(id) => format!("{}#{id}", set.name),
                        None => set.name.clone(),
                    };
                    let n = set.id.is_none().then(|| number(&set.name)).flatten();
                    if n.is_some() {
                        self.table.names.seed_name(&set.name);
                    }
                    let identity = match self.anonymous.remove(&key) {
                        Some(identity) => Some(identity),
                        None => n
                            .filter(|n| !self.table.known.contains_key(n))
                            .and_then(|n| self.given.as_ref()?.get(&n).copied()),
                    };
                    match identity {
                        Some(identity) => {
                            if let Some(n) = n {
                                self.table.known.insert(n, identity);
                            }
                            *set = SetRef {
                                name: String::new(),
                                id: Some(anonymous.len() as u32),
                            };
                            anonymous.push(identity);
                        }
                        None => {
                            if self.given.is_some() && !self.table.set_index.contains_key(&set.name)
                            {
                                self.unknown = true;
                            }
                            if !named.contains(&set.name) {
                                named.push(set.name.clone());
                            }
                        }
                    }
                }
                Expr::Counter { bytes, packets } => (*bytes, *packets) = (0, 0),
                _ => {}
            }
        }
        self.table.chains[chain].named_sets = named;
        if let Some((_, d)) = &mut self.open {
            d.push(&rule, &anonymous);
        }
    }

    fn close(&mut self) {
        if let Some((chain, d)) = self.open.take() {
            let (rules, digest) = d.finish();
            let c = &mut self.table.chains[chain];
            c.rules += rules;
            if !c.scattered {
                c.digest = digest;
            }
            self.closed[chain] = true;
        }
    }

    pub(crate) fn finish(mut self, handle: u64) -> ListedTable {
        self.close();
        self.table.handle = handle;
        self.table
    }
}

/// `contents` (as a listing gives it) fed to a [`Listing`] in the order
/// the socket feeds it.
#[cfg(test)]
pub(crate) fn listed_of(contents: &crate::TableContents) -> ListedTable {
    let mut listing = Listing::new(contents.table.clone());
    for c in &contents.chains {
        listing.chain(c.clone());
    }
    for s in &contents.sets {
        listing.set(s.clone());
    }
    let elements = |s: &Set| {
        contents
            .elements
            .get(&crate::TableContents::set_key(s))
            .cloned()
            .unwrap_or_default()
    };
    for s in listing.unprinted().to_vec() {
        listing.anonymous_elements(&s, elements(&s));
    }
    let compared: Vec<Set> = listing.compared_sets().cloned().collect();
    for s in &compared {
        listing.named_elements(&s.name, &elements(s));
    }
    for r in &contents.rules {
        listing.rule(r.clone());
    }
    listing.finish(0)
}
