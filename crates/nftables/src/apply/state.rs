//! A table as the diff compares it: chains with their rules, named sets
//! with their elements. Normalized so that what we sent and what the
//! kernel lists back compare equal: handles and counter values dropped,
//! anonymous sets folded into the rule that uses them (the kernel names
//! them itself), their elements sorted.

use crate::{Chain, Element, Expr, Rule, Set, SetFlags, SetRef, Table, TableContents, Value};
use std::collections::HashMap;

/// What an anonymous set reference becomes inside a [`RuleShape`]; its id
/// is the index into [`RuleShape::anonymous`].
pub(crate) const ANONYMOUS_PLACEHOLDER: &str = "<anonymous>";

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
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AnonymousSet {
    pub(crate) set: Set,
    pub(crate) elements: Vec<Element>,
}

/// A named set or map and its elements.
#[derive(Debug, Clone)]
pub(crate) struct SetState {
    pub(crate) set: Set,
    pub(crate) elements: Vec<Element>,
    index: HashMap<ElementKey, usize>,
}

/// What identifies an element within its set.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ElementKey {
    key: Vec<Value>,
    key_end: Option<Vec<Value>>,
    interval_end: bool,
}

impl ElementKey {
    pub(crate) fn of(e: &Element) -> Self {
        Self {
            key: e.key.clone(),
            key_end: e.key_end.clone(),
            interval_end: e.interval_end,
        }
    }
}

impl TableState {
    /// `contents`, normalized.
    pub(crate) fn new(contents: &TableContents) -> Self {
        let sets_by_ref = index_sets(contents);
        let mut state = Self::empty(contents.table.clone());
        for chain in &contents.chains {
            state.push_chain(chain.clone());
        }
        for rule in &contents.rules {
            if let Some(&i) = state.chain_index.get(&rule.chain) {
                let shape = RuleShape::new(rule, contents, &sets_by_ref);
                state.chains[i].rules.push(shape);
            }
        }
        for set in contents.sets.iter().filter(|s| !is_anonymous(s)) {
            let elements = contents
                .elements
                .get(&TableContents::set_key(set))
                .cloned()
                .unwrap_or_default();
            state.push_set(SetState::new(set.clone(), elements));
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

    /// Named set `name`.
    pub(crate) fn set(&self, name: &str) -> Option<&SetState> {
        self.set_index.get(name).map(|&i| &self.sets[i])
    }
}

impl SetState {
    fn new(set: Set, elements: Vec<Element>) -> Self {
        let index = elements
            .iter()
            .enumerate()
            .map(|(i, e)| (ElementKey::of(e), i))
            .collect();
        Self {
            set,
            elements,
            index,
        }
    }

    /// The element with `e`'s key.
    pub(crate) fn element(&self, e: &Element) -> Option<&Element> {
        self.index
            .get(&ElementKey::of(e))
            .map(|&i| &self.elements[i])
    }

    /// Whether the packet path fills it (affinity sets): its elements are
    /// not ours to compare.
    pub(crate) fn is_dynamic(&self) -> bool {
        self.set.flags.contains(SetFlags::DYNAMIC)
    }
}

impl RuleShape {
    fn new(rule: &Rule, contents: &TableContents, sets: &SetsByRef<'_>) -> Self {
        let mut rule = rule.clone();
        rule.handle = None;
        let mut anonymous = Vec::new();
        for expr in &mut rule.exprs {
            match expr {
                Expr::Lookup { set, .. } | Expr::Dynset { set, .. } => {
                    if let Some(anon) = sets.anonymous(set, contents) {
                        *set = SetRef {
                            name: ANONYMOUS_PLACEHOLDER.to_string(),
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

/// Whether `set` is anonymous (bound to one rule).
pub(crate) fn is_anonymous(set: &Set) -> bool {
    set.flags.contains(SetFlags::ANONYMOUS)
}

/// The sets of a table by how rules name them: name and transaction id.
struct SetsByRef<'a> {
    by_ref: HashMap<(&'a str, Option<u32>), &'a Set>,
}

fn index_sets(contents: &TableContents) -> SetsByRef<'_> {
    SetsByRef {
        by_ref: contents
            .sets
            .iter()
            .map(|s| ((s.name.as_str(), s.id), s))
            .collect(),
    }
}

impl SetsByRef<'_> {
    /// The anonymous set `r` names, by content; `None` for a named set.
    fn anonymous(&self, r: &SetRef, contents: &TableContents) -> Option<AnonymousSet> {
        let set = self
            .by_ref
            .get(&(r.name.as_str(), r.id))
            .or_else(|| self.by_ref.get(&(r.name.as_str(), None)))?;
        if !is_anonymous(set) {
            return None;
        }
        let mut elements = contents
            .elements
            .get(&TableContents::set_key(set))
            .cloned()
            .unwrap_or_default();
        elements.sort_by_cached_key(element_order);
        let mut set = (*set).clone();
        set.name.clear();
        set.id = None;
        Some(AnonymousSet { set, elements })
    }
}

/// A total order on elements that does not depend on the kernel's.
fn element_order(e: &Element) -> (Vec<u8>, bool, Option<Vec<u8>>) {
    (
        Value::concat_bytes(&e.key),
        e.interval_end,
        e.key_end.as_deref().map(Value::concat_bytes),
    )
}
