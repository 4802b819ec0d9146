//! A table as the diff compares it: chains with their rules, named sets
//! with their elements. Normalized so that what we sent and what the
//! kernel lists back compare equal: handles and counter values dropped,
//! anonymous sets folded into the rule that uses them (the kernel names
//! them itself), their elements sorted.

use super::fingerprint;
use super::piece::Piece;
use crate::{Chain, Element, Expr, Rule, Set, SetFlags, SetRef, Table, TableContents, Value};
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

/// What an anonymous set reference becomes inside a [`RuleShape`]: no name
/// (no set has none, and an empty `String` costs no allocation); its id is
/// the index into [`RuleShape::anonymous`].
pub(crate) const ANONYMOUS_PLACEHOLDER: &str = "";

/// One table, normalized.
#[derive(Debug, Clone)]
pub(crate) struct TableState {
    pub(crate) table: Table,
    pub(crate) chains: Vec<ChainState>,
    chain_index: HashMap<String, usize>,
    pub(crate) sets: Vec<SetState>,
    set_index: HashMap<String, usize>,
}

/// A chain and its rules, in order.
#[derive(Debug, Clone)]
pub(crate) struct ChainState {
    pub(crate) chain: Chain,
    pub(crate) rules: Vec<RuleShape>,
}

/// A rule with the anonymous sets it owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RuleShape {
    /// The rule; anonymous set references name [`ANONYMOUS_PLACEHOLDER`].
    pub(crate) rule: Rule,
    /// Its anonymous sets (name and id cleared), elements sorted.
    pub(crate) anonymous: Vec<AnonymousSet>,
}

/// An anonymous set, by content.
#[derive(Debug, Clone)]
pub(crate) struct AnonymousSet {
    pub(crate) set: Set,
    pub(crate) elements: Vec<Element>,
    /// Its name in the kernel, if known (not part of its identity).
    pub(crate) name: String,
    /// For a listed set whose elements were not dumped: the fingerprint
    /// it carries, which stands for them (`elements` is empty).
    pub(crate) elided: Option<String>,
}

impl PartialEq for AnonymousSet {
    /// Same definition and elements; a set whose elements were not read
    /// back compares by its fingerprint.
    fn eq(&self, other: &Self) -> bool {
        let print = |a: &AnonymousSet| fingerprint::comment(&a.set, &a.elements);
        self.set == other.set
            && match (&self.elided, &other.elided) {
                (Some(a), Some(b)) => a == b,
                (Some(p), None) => *p == print(other),
                (None, Some(p)) => print(self) == *p,
                (None, None) => self.elements == other.elements,
            }
    }
}

impl Eq for AnonymousSet {}

/// A named set or map and its elements.
#[derive(Debug, Clone)]
pub(crate) struct SetState {
    pub(crate) set: Set,
    pub(crate) elements: Vec<Element>,
    /// Its elements come later, in a piece of their own
    /// ([`super::piece::Piece::Elements`]): `elements` is empty until
    /// then.
    pub(crate) streamed: bool,
    /// A streamed set whose elements come in several pieces: a full
    /// sync compares them once all came.
    pub(crate) in_parts: bool,
}

/// What identifies an element within its set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ElementKey<'a> {
    key: &'a [Value],
    key_end: Option<&'a [Value]>,
    interval_end: bool,
}

impl<'a> ElementKey<'a> {
    pub(crate) fn of(e: &'a Element) -> Self {
        Self {
            key: &e.key,
            key_end: e.key_end(),
            interval_end: e.is_interval_end(),
        }
    }
}

impl TableState {
    /// `contents`, normalized (taken apart, nothing copied).
    pub(crate) fn new(contents: TableContents) -> Self {
        let TableContents {
            table,
            chains,
            rules,
            sets,
            mut elements,
        } = contents;
        let mut state = Self::empty(table);
        for chain in chains {
            state.push_chain(chain);
        }
        let (anonymous, named): (Vec<Set>, Vec<Set>) = sets.into_iter().partition(is_anonymous);
        let mut anonymous = AnonymousSets::new(anonymous, &mut elements);
        for rule in rules {
            if let Some(&i) = state.chain_index.get(&rule.chain) {
                let shape = RuleShape::new(rule, &mut anonymous);
                state.chains[i].rules.push(shape);
            }
        }
        for set in named {
            let elements = elements
                .remove(&TableContents::set_key(&set))
                .unwrap_or_default();
            state.push_set(SetState {
                set,
                elements,
                streamed: false,
                in_parts: false,
            });
        }
        state
    }

    /// The same table with chains of no rules, and its chains with their
    /// rules, in order.
    pub(crate) fn split_rules(mut self) -> (Self, Vec<ChainState>) {
        let chains = std::mem::take(&mut self.chains);
        self.chains = chains
            .iter()
            .map(|c| ChainState {
                chain: c.chain.clone(),
                rules: Vec::new(),
            })
            .collect();
        (self, chains)
    }

    /// The same table without its index of chains by name (a full sync's
    /// fixed part needs none: at 10,000 services it is some 1 MiB that a
    /// cold start would hold throughout).
    pub(crate) fn without_chain_index(mut self) -> Self {
        self.chain_index = HashMap::new();
        self
    }

    /// The same table with `chains` instead of its own.
    pub(crate) fn with_chains(mut self, chains: impl IntoIterator<Item = ChainState>) -> Self {
        self.chains.clear();
        self.chain_index.clear();
        for c in chains {
            self.chain_index
                .insert(c.chain.name.clone(), self.chains.len());
            self.chains.push(c);
        }
        self
    }

    /// Marks named sets `names` as streamed ([`SetState::streamed`]).
    pub(crate) fn mark_streamed(&mut self, names: &[String]) {
        for name in names {
            if let Some(&i) = self.set_index.get(name) {
                self.sets[i].streamed = true;
            }
        }
    }

    /// Marks streamed sets `names` as given in parts
    /// ([`SetState::in_parts`]).
    pub(crate) fn mark_in_parts(&mut self, names: &[String]) {
        for name in names {
            if let Some(&i) = self.set_index.get(name) {
                self.sets[i].in_parts = self.sets[i].streamed;
            }
        }
    }

    /// The same table with the chains of `pieces` instead of its own, and
    /// the elements they give to its streamed sets.
    pub(crate) fn with_pieces(self, pieces: impl IntoIterator<Item = Piece>) -> Self {
        let mut elements = Vec::new();
        let chains = pieces.into_iter().filter_map(|piece| match piece {
            Piece::Chain(chain) => Some(chain),
            Piece::Elements { set, elements: e } => {
                elements.push((set, e));
                None
            }
        });
        let mut state = self.with_chains(chains);
        for (set, e) in elements {
            if let Some(&i) = state.set_index.get(&set) {
                state.sets[i].elements.extend(e);
                state.sets[i].streamed = false;
                state.sets[i].in_parts = false;
            }
        }
        state
    }

    /// A table with nothing in it.
    pub(crate) fn empty(table: Table) -> Self {
        Self {
            table,
            chains: Vec::new(),
            chain_index: HashMap::new(),
            sets: Vec::new(),
            set_index: HashMap::new(),
        }
    }

    fn push_chain(&mut self, chain: Chain) {
        self.chain_index
            .insert(chain.name.clone(), self.chains.len());
        self.chains.push(ChainState {
            chain,
            rules: Vec::new(),
        });
    }

    fn push_set(&mut self, set: SetState) {
        self.set_index.insert(set.set.name.clone(), self.sets.len());
        self.sets.push(set);
    }

    /// Chain `name`.
    pub(crate) fn chain(&self, name: &str) -> Option<&ChainState> {
        self.chain_index.get(name).map(|&i| &self.chains[i])
    }

    /// Chain `name`, to change.
    pub(crate) fn chain_mut(&mut self, name: &str) -> Option<&mut ChainState> {
        self.chain_index.get(name).map(|&i| &mut self.chains[i])
    }

    /// Named set `name`.
    pub(crate) fn set(&self, name: &str) -> Option<&SetState> {
        self.set_index.get(name).map(|&i| &self.sets[i])
    }
}

impl SetState {
    /// Whether the packet path fills it (affinity sets): its elements are
    /// not ours to compare.
    pub(crate) fn is_dynamic(&self) -> bool {
        self.set.flags.contains(SetFlags::DYNAMIC)
    }
}

impl RuleShape {
    fn new(mut rule: Rule, anonymous_sets: &mut AnonymousSets) -> Self {
        rule.handle = None;
        let mut anonymous = Vec::new();
        for expr in &mut rule.exprs {
            match expr {
                Expr::Lookup { set, .. } | Expr::Dynset { set, .. } => {
                    if let Some(anon) = anonymous_sets.take(set) {
                        *set = SetRef {
                            name: String::new(),
                            id: Some(anonymous.len() as u32),
                        };
                        anonymous.push(anon);
                    }
                }
                Expr::Counter { bytes, packets } => (*bytes, *packets) = (0, 0),
                _ => {}
            }
        }
        Self { rule, anonymous }
    }

    /// Whether the rule looks up or updates named set `name`.
    pub(crate) fn uses_set(&self, name: &str) -> bool {
        self.rule.exprs.iter().any(|e| {
            matches!(e, Expr::Lookup { set, .. } | Expr::Dynset { set, .. } if set.name == name)
        })
    }
}

/// A table's anonymous sets, by how rules name them: by transaction id
/// (new ones), else by name (as listed). Each is taken by the one rule
/// that owns it.
struct AnonymousSets {
    by_id: HashMap<u32, AnonymousSet>,
    by_name: HashMap<String, AnonymousSet>,
}

impl AnonymousSets {
    fn new(sets: Vec<Set>, elements: &mut BTreeMap<String, Vec<Element>>) -> Self {
        let mut out = Self {
            by_id: HashMap::new(),
            by_name: HashMap::new(),
        };
        for mut set in sets {
            let members = elements.remove(&TableContents::set_key(&set));
            let print = set
                .comment
                .take_if(|c| fingerprint::is_fingerprint(c.as_str()));
            // not dumped: its fingerprint stands for its elements
            let elided = print.filter(|_| members.is_none());
            let mut members = members.unwrap_or_default();
            if !members.is_sorted_by(|a, b| element_order(a, b).is_le()) {
                members.sort_by(element_order);
            }
            let (name, id) = (std::mem::take(&mut set.name), set.id.take());
            let listed = id.is_none();
            let anon = AnonymousSet {
                set,
                elements: members,
                name: if listed { name.clone() } else { String::new() },
                elided,
            };
            match id {
                Some(id) => out.by_id.insert(id, anon),
                None => out.by_name.insert(name, anon),
            };
        }
        out
    }

    /// The anonymous set `r` names, by content; `None` for a named set.
    fn take(&mut self, r: &SetRef) -> Option<AnonymousSet> {
        r.id.and_then(|id| self.by_id.remove(&id))
            .or_else(|| self.by_name.remove(&r.name))
    }
}

/// Whether `set` is anonymous (bound to one rule).
pub(crate) fn is_anonymous(set: &Set) -> bool {
    set.flags.contains(SetFlags::ANONYMOUS)
}

/// A total order on elements that does not depend on the kernel's.
pub(crate) fn element_order(a: &Element, b: &Element) -> Ordering {
    values_order(&a.key, &b.key)
        .then(a.is_interval_end().cmp(&b.is_interval_end()))
        .then_with(|| match (a.key_end(), b.key_end()) {
            (Some(x), Some(y)) => values_order(x, y),
            (x, y) => x.is_some().cmp(&y.is_some()),
        })
}

fn values_order(a: &[Value], b: &[Value]) -> Ordering {
    a.iter().map(value_rank).cmp(b.iter().map(value_rank))
}

/// A value as a number, for ordering only.
fn value_rank(v: &Value) -> (u8, u128) {
    match v {
        Value::Ipv4(a) => (0, u32::from(*a).into()),
        Value::Ipv6(a) => (1, u128::from(*a)),
        Value::Proto(p) => (2, (*p).into()),
        Value::Port(p) => (3, (*p).into()),
        Value::Mark(m) => (4, (*m).into()),
        Value::Integer(i) => (5, (*i).into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DataType, Verdict};

    fn anonymous(elements: &[u32]) -> AnonymousSet {
        AnonymousSet {
            set: Set::anonymous(0, vec![DataType::Integer], Some(vec![DataType::Verdict])),
            elements: elements
                .iter()
                .map(|&k| Element::verdict(vec![Value::Integer(k)], Verdict::Accept))
                .collect(),
            name: String::new(),
            elided: None,
        }
    }

    /// What a listed set whose elements were not dumped looks like.
    fn elided(like: &AnonymousSet) -> AnonymousSet {
        AnonymousSet {
            elements: Vec::new(),
            elided: Some(fingerprint::comment(&like.set, &like.elements)),
            ..like.clone()
        }
    }

    #[test]
    fn a_set_read_back_without_its_elements_compares_by_its_fingerprint() {
        let (one, two) = (anonymous(&[0, 1]), anonymous(&[0, 2]));
        assert_eq!(elided(&one), one);
        assert_eq!(one, elided(&one));
        assert_ne!(elided(&one), two);
        assert_ne!(two, elided(&one));
        assert_eq!(elided(&one), elided(&one));
        assert_ne!(elided(&one), elided(&two));
    }
}
