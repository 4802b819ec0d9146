//! The rendered table: what one of our tables must hold after a sync,
//! as statements (so it prints as `nft` text) that turn into the typed
//! objects the codec sends and reads back ([`TableContents`]).

use crate::render::statement::Stmt;
use crate::{Chain, Element, Family, Rule, Set, SetRef, Table, TableContents};
use data_encoding::BASE32;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// One of our tables as it must be: `ip kube-proxy` or `ip6 kube-proxy`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ruleset {
    /// The table (family, name, comment).
    pub table: Table,
    /// Named sets and maps with their elements, in creation order.
    pub sets: Vec<NamedSet>,
    /// Chains with their rules, in creation order.
    pub chains: Vec<ChainRules>,
}

/// A named set or map and its elements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedSet {
    /// The declaration.
    pub set: Set,
    /// The elements.
    pub elements: Vec<Element>,
}

/// A chain and its rules in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainRules {
    /// The chain.
    pub chain: Chain,
    /// Its rules.
    pub rules: Vec<RuleSpec>,
}

/// One rule: statements and an optional comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleSpec {
    /// The statements, in order.
    pub stmts: Vec<Stmt>,
    /// `comment "…"`.
    pub comment: Option<String>,
}

impl RuleSpec {
    /// A rule of `stmts`.
    pub fn new(stmts: Vec<Stmt>) -> Self {
        Self {
            stmts,
            comment: None,
        }
    }

    /// The same rule with a comment.
    pub fn with_comment(mut self, comment: impl Into<String>) -> Self {
        self.comment = Some(comment.into());
        self
    }
}

impl ChainRules {
    /// `chain` with no rules yet.
    pub fn new(chain: Chain) -> Self {
        Self {
            chain,
            rules: Vec::new(),
        }
    }

    /// Appends a rule.
    pub fn push(&mut self, rule: RuleSpec) -> &mut Self {
        self.rules.push(rule);
        self
    }
}

impl Ruleset {
    /// The table's family.
    pub fn family(&self) -> Family {
        self.table.family
    }

    /// The chain named `name`.
    pub fn chain(&self, name: &str) -> Option<&ChainRules> {
        self.chains.iter().find(|c| c.chain.name == name)
    }

    /// The named set or map `name`.
    pub fn set(&self, name: &str) -> Option<&NamedSet> {
        self.sets.iter().find(|s| s.set.name == name)
    }

    /// The typed objects, as [`crate::NftSocket::list_table`] would read
    /// them back. Anonymous sets get names of ours (see
    /// [`anonymous_set_name`]) and no transaction id: rules name them by
    /// name, as they name every other set.
    pub fn contents(&self) -> TableContents {
        let mut out = TableContents {
            table: self.table.clone(),
            chains: self.chains.iter().map(|c| c.chain.clone()).collect(),
            rules: Vec::new(),
            sets: self.sets.iter().map(|s| s.set.clone()).collect(),
            elements: BTreeMap::new(),
        };
        for named in &self.sets {
            out.elements
                .insert(TableContents::set_key(&named.set), named.elements.clone());
        }
        for chain in &self.chains {
            push_rules(&mut out, chain);
        }
        out
    }

    /// [`Ruleset::contents`], taking the ruleset apart as it goes: each
    /// chain's statements are freed once they are typed, so the table is
    /// not held twice.
    pub fn into_contents(self) -> TableContents {
        let (skeleton, pieces) = self.into_pieces();
        TableContents::from_pieces(skeleton, pieces)
    }

    /// [`Ruleset::into_contents`] in pieces, for a table created in parts
    /// without ever holding it typed whole: first the skeleton (the table,
    /// every chain without its rules, the named sets with their
    /// elements), then, typed only as the iterator is advanced, each
    /// chain with its rules and their anonymous sets (one chain per
    /// piece, in order). The pieces together are `into_contents()`.
    pub fn into_pieces(self) -> (TableContents, impl Iterator<Item = TableContents>) {
        let (skeleton, table, chains) = self.into_skeleton();
        (skeleton, pieces_of(table, chains.into_iter()))
    }

    /// The skeleton of [`Ruleset::into_pieces`], with the table and the
    /// chains (with their rules) it was taken from.
    pub(crate) fn into_skeleton(self) -> (TableContents, Table, Vec<ChainRules>) {
        let Ruleset {
            table,
            sets,
            chains,
        } = self;
        let mut skeleton = TableContents {
            table: table.clone(),
            chains: chains.iter().map(|c| c.chain.clone()).collect(),
            rules: Vec::new(),
            sets: Vec::with_capacity(sets.len()),
            elements: BTreeMap::new(),
        };
        for named in sets {
            skeleton
                .elements
                .insert(TableContents::set_key(&named.set), named.elements);
            skeleton.sets.push(named.set);
        }
        (skeleton, table, chains)
    }
}

/// Each of `chains` of `table` typed with its rules and their anonymous
/// sets, one piece per chain, as the iterator is advanced.
pub(crate) fn pieces_of(
    table: Table,
    chains: impl Iterator<Item = ChainRules>,
) -> impl Iterator<Item = TableContents> {
    chains.map(move |chain| {
        let mut piece = TableContents {
            table: table.clone(),
            chains: Vec::new(),
            rules: Vec::with_capacity(chain.rules.len()),
            sets: Vec::new(),
            elements: BTreeMap::new(),
        };
        push_rules(&mut piece, &chain);
        piece.chains.push(chain.chain);
        piece
    })
}

/// Adds the typed rules of `chain` (and their anonymous sets) to `out`.
fn push_rules(out: &mut TableContents, chain: &ChainRules) {
    for (index, rule) in chain.rules.iter().enumerate() {
        let mut exprs = Vec::new();
        for stmt in &rule.stmts {
            let Some(anon) = stmt.anonymous_set() else {
                exprs.extend(stmt.exprs(None));
                continue;
            };
            let mut set = Set::anonymous(0, anon.key, anon.data).with_flags(anon.flags);
            set.name = anonymous_set_name(&chain.chain.name, index);
            set.id = None;
            let set_ref = SetRef::to_set(&set);
            exprs.extend(stmt.exprs(Some(&set_ref)));
            out.elements
                .insert(TableContents::set_key(&set), anon.elements);
            out.sets.push(set);
        }
        let mut typed = Rule::new(chain.chain.name.as_str(), exprs);
        typed.comment = rule.comment.clone();
        out.rules.push(typed);
    }
}

/// The name we give the anonymous set of rule `index` of `chain`:
/// `__kp-` and 16 base32 characters of sha256(`chain#index`). Stable
/// across syncs and unique in the table (each of our rules binds at most
/// one anonymous set); `nft` still lists it inline, and the kernel finds
/// it by name instead of by walking the transaction for its id.
pub fn anonymous_set_name(chain: &str, index: usize) -> String {
    let digest = Sha256::digest(format!("{chain}#{index}").as_bytes());
    let mut encoded = BASE32.encode(&digest);
    encoded.truncate(16);
    format!("__kp-{encoded}")
}
