//! A new table created in parts as its pieces come: the transaction
//! [`super::split`] would cut from [`super::diff::create_all`]'s, built
//! and handed on part by part, so that a cold start never holds the
//! whole table typed, nor its whole transaction, nor its whole encoding
//! (at 10,000 services × 10 endpoints: some 45 MiB typed, 42 MiB of
//! transaction).
//!
//! The parts are those of `split.rs`: the table, every chain (base
//! chains with policy accept: a packet passes them unchanged while
//! empty) and every named set (empty) first, then the rules of the
//! regular chains with the anonymous sets they bind, cut between rules
//! after at most `max_anonymous` anonymous sets; last, what traffic sees
//! (the named sets' elements — the verdict maps leading to the new
//! chains — and the rules of base chains). When the anonymous sets never
//! exceed `max_anonymous` nothing is cut: one transaction.
//!
//! One difference from `split.rs`: the elements of named plain sets and
//! data maps without intervals (`cluster-ips`, `service-ips-direct`) are
//! staged first, in parts, rather than sent last; nothing reads them
//! before the base chains' rules, and at 100,000 services × 1 endpoint
//! they are 200,000 elements the last transaction would otherwise encode
//! whole.
//!
//! The elements of streamed sets (the shared endpoint maps and, from a
//! lean rendering, the shared sets and verdict maps such as
//! `service-ips`: see [`super::piece`]) are staged as they come too,
//! verdict maps among them: their verdicts lead to chains created
//! empty in the first part, and nothing reaches those maps before the
//! base chains' rules, last. A part is also cut
//! when its chains, rules and elements reach [`MAX_PART_OBJECTS`]: with the shared
//! endpoint maps there are few anonymous sets, and 10,000 services × 10
//! endpoints would otherwise be one transaction of 250,000 objects.

use super::diff::create_rules;
use super::names::AnonymousNames;
use super::piece::Piece;
use super::split::{is_anonymous_set, passes_empty};
use super::state::{ChainState, SetState, TableState};
use crate::{DataType, Error, Op, Set, SetFlags, SetRef, Transaction};
use std::collections::HashSet;

/// Chains, rules and elements in one staging part at most (a part holding
/// more in one group, a chain's rule with its anonymous set, is not cut).
/// Counting the chains cuts a large table's first part early: the kernel
/// creates the chains while the rules of the next part are rendered
/// ([`super::send_thread`]).
pub(crate) const MAX_PART_OBJECTS: usize = 8_000;

/// Creates the table made of `fixed` (the table, every chain without
/// rules, the named sets with their elements but for the streamed ones)
/// and `pieces` (each chain of `fixed` with its rules, normalized, in
/// order, and the streamed sets' elements), handing each part to `send`
/// as soon as it is complete; the first part carries `generation`. Stops
/// at the first part `send` refuses.
pub(crate) fn create_in_parts(
    fixed: TableState,
    pieces: impl Iterator<Item = Piece>,
    max_anonymous: usize,
    generation: u32,
    names: &mut AnonymousNames,
    mut send: impl FnMut(Transaction) -> Result<(), Error>,
) -> Result<(), Error> {
    let TableState {
        table,
        chains: defined,
        sets,
        ..
    } = fixed;
    let part = Part {
        family: table.family,
        table: table.name.clone(),
        generation: Some(generation),
    };
    let mut parts = Parts {
        part,
        send: &mut send,
        current: vec![Op::AddTable(table)],
        anonymous: 0,
        objects: 0,
        max_anonymous,
        cut: false,
    };
    let mut last = Vec::new();
    let mut base = HashSet::new();
    for ChainState { chain, .. } in defined {
        if chain.base.is_some() {
            base.insert(chain.name.clone());
        }
        match passes_empty(&chain) {
            true => parts.add_group(vec![Op::AddChain(chain)])?,
            false => last.push(Op::AddChain(chain)),
        }
    }
    let mut early = Vec::new();
    for SetState { set, elements, .. } in sets {
        if !elements.is_empty() {
            let name = set.name.clone();
            match stages_early(&set) {
                true => early.push((name, elements)),
                false => last.push(Op::AddElements {
                    set: SetRef::named(name.as_str()),
                    elements,
                }),
            }
        }
        parts.current.push(Op::AddSet(set));
    }
    for (set, elements) in early {
        parts.stage_elements(set, elements)?;
    }
    let mut next_id = 1;
    for piece in pieces {
        let chain = match piece {
            Piece::Chain(chain) => chain,
            Piece::Elements { set, elements } => {
                parts.stage_elements(set, elements)?;
                continue;
            }
        };
        let staged = !base.contains(&chain.chain.name);
        let ops = create_rules(chain, names, &mut next_id);
        match staged {
            true => parts.stage(ops)?,
            false => last.extend(ops),
        }
    }
    parts.finish(last)
}

/// Whether the elements of named set `set` are staged with the parts
/// rather than sent last: a plain set or a data map (no verdict leads
/// anywhere from it; nothing reads it before the base chains' rules, which
/// come last) without intervals (each element stands alone). At 100,000
/// services × 1 endpoint these are `service-ips-direct` and `cluster-ips`:
/// 200,000 elements, sent in parts as the rules are instead of one last
/// transaction encoded whole.
fn stages_early(set: &Set) -> bool {
    !set.flags.contains(SetFlags::INTERVAL)
        && set
            .data
            .as_ref()
            .is_none_or(|data| !data.contains(&DataType::Verdict))
}

/// The chains, rules and elements `op` adds.
fn objects_of(op: &Op) -> usize {
    match op {
        Op::AddChain(_) | Op::AddRule(_) => 1,
        Op::AddElements { elements, .. } => elements.len(),
        _ => 0,
    }
}

/// Family, table and generation check of the next part.
struct Part {
    family: crate::Family,
    table: String,
    /// The first part's only.
    generation: Option<u32>,
}

impl Part {
    fn take(&mut self, ops: Vec<Op>) -> Transaction {
        Transaction {
            family: self.family,
            table: self.table.clone(),
            ops,
            generation: self.generation.take(),
        }
    }
}

/// The staging part being filled and where finished parts go.
struct Parts<'s, S: FnMut(Transaction) -> Result<(), Error>> {
    part: Part,
    send: &'s mut S,
    current: Vec<Op>,
    /// Anonymous sets in `current`.
    anonymous: usize,
    /// Chains, rules and elements in `current`.
    objects: usize,
    max_anonymous: usize,
    /// Whether a part was sent already.
    cut: bool,
}

impl<S: FnMut(Transaction) -> Result<(), Error>> Parts<'_, S> {
    /// Adds `ops` (rules of new regular chains, each after the anonymous
    /// sets it binds) rule by rule, sending the part first when a rule's
    /// anonymous sets would take it past the maximum.
    fn stage(&mut self, ops: Vec<Op>) -> Result<(), Error> {
        let mut group = Vec::new();
        for op in ops {
            let rule = matches!(op, Op::AddRule(_));
            group.push(op);
            if rule {
                self.add_group(std::mem::take(&mut group))?;
            }
        }
        self.current.extend(group);
        Ok(())
    }

    fn add_group(&mut self, group: Vec<Op>) -> Result<(), Error> {
        let sets = group.iter().filter(|op| is_anonymous_set(op)).count();
        let objects = group.iter().map(objects_of).sum::<usize>();
        let too_many_sets = self.anonymous > 0 && self.anonymous + sets > self.max_anonymous;
        let too_many_objects = self.objects > 0 && self.objects + objects > MAX_PART_OBJECTS;
        if too_many_sets || too_many_objects {
            let ops = std::mem::take(&mut self.current);
            (self.send)(self.part.take(ops))?;
            self.anonymous = 0;
            self.objects = 0;
            self.cut = true;
        }
        self.anonymous += sets;
        self.objects += objects;
        self.current.extend(group);
        Ok(())
    }

    /// Adds the elements of a streamed set, in groups that fill the
    /// parts up to [`MAX_PART_OBJECTS`], each an even number (an interval
    /// map's range, its start and the end marker after it, stays in one
    /// part).
    fn stage_elements(&mut self, set: String, elements: Vec<crate::Element>) -> Result<(), Error> {
        // taken from the front, each group moved out as it is sent (no
        // copy of what is left per group)
        let mut elements = elements.into_iter().peekable();
        while elements.peek().is_some() {
            let room = (MAX_PART_OBJECTS.saturating_sub(self.objects) / 2 * 2).max(2);
            self.add_group(vec![Op::AddElements {
                set: SetRef::named(set.as_str()),
                elements: elements.by_ref().take(room).collect(),
            }])?;
        }
        Ok(())
    }

    /// Sends what is staged and then `last`, or both as one transaction
    /// if nothing was cut.
    fn finish(mut self, last: Vec<Op>) -> Result<(), Error> {
        if !self.cut {
            let mut ops = std::mem::take(&mut self.current);
            ops.extend(last);
            return (self.send)(self.part.take(ops));
        }
        if !self.current.is_empty() {
            let ops = std::mem::take(&mut self.current);
            (self.send)(self.part.take(ops))?;
        }
        if !last.is_empty() {
            (self.send)(self.part.take(last))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::super::diff::create_all;
    use super::super::split::split;
    use super::*;
    use crate::{
        BaseChain, Chain, ChainType, DataType, Element, Family, Hook, Policy, Rule, Set, Table,
        TableContents, Value, Verdict, stmt,
    };

    /// A cold start's shape as a renderer gives it: base chains (one with
    /// policy drop), a verdict map leading to chains `c1`..`cn`, each with
    /// a rule binding an anonymous map of its own, and a rule of a base
    /// chain using the verdict map.
    fn table(n: u32) -> TableContents {
        let mut t = TableContents {
            table: Table::new(Family::Ip, "t"),
            chains: vec![
                base("nat-prerouting", Policy::Accept),
                base("filter-input", Policy::Drop),
            ],
            rules: Vec::new(),
            sets: vec![Set::map(
                "service-ips",
                vec![DataType::Ipv4Addr],
                vec![DataType::Verdict],
            )],
            elements: Default::default(),
        };
        let verdicts = (1..=n)
            .map(|i| {
                let key = Value::Ipv4([10, 0, 0, i as u8].into());
                Element::verdict(vec![key], Verdict::Goto(format!("c{i}")))
            })
            .collect();
        t.elements.insert("service-ips".into(), verdicts);
        t.rules.push(Rule::new(
            "nat-prerouting",
            stmt::vmap(&[stmt::Field::IpDaddr], SetRef::named("service-ips")),
        ));
        t.rules.push(Rule::new("filter-input", Vec::new()));
        for i in 1..=n {
            t.chains.push(Chain::regular(format!("c{i}")));
            let mut set = Set::anonymous(0, vec![DataType::Integer], Some(vec![DataType::Verdict]));
            set.name = format!("__kp-c{i}");
            set.id = None;
            let elements = (0..2)
                .map(|k| Element::verdict(vec![Value::Integer(k)], Verdict::Accept))
                .collect();
            t.elements.insert(set.name.clone(), elements);
            t.rules.push(Rule::new(
                format!("c{i}"),
                stmt::numgen_vmap(2, SetRef::named(set.name.as_str())),
            ));
            t.sets.push(set);
        }
        t
    }

    fn base(name: &str, policy: Policy) -> Chain {
        let hook = BaseChain {
            kind: ChainType::Filter,
            hook: Hook::Input,
            priority: 0,
            policy,
        };
        Chain::base(name, hook)
    }

    /// `contents` as a skeleton and one piece per chain, as
    /// `Ruleset::into_pieces` gives them.
    fn pieces(contents: TableContents) -> (TableContents, Vec<TableContents>) {
        let TableContents {
            table,
            chains,
            rules,
            sets,
            mut elements,
        } = contents;
        let (anonymous, named): (Vec<Set>, Vec<Set>) =
            sets.into_iter().partition(|s| s.name.starts_with("__kp-"));
        let mut skeleton = TableContents {
            table: table.clone(),
            chains: chains.clone(),
            rules: Vec::new(),
            sets: named,
            elements: Default::default(),
        };
        for s in &skeleton.sets {
            skeleton
                .elements
                .insert(s.name.clone(), elements.remove(&s.name).unwrap_or_default());
        }
        let pieces = chains
            .into_iter()
            .map(|chain| {
                let rules: Vec<Rule> = rules
                    .iter()
                    .filter(|r| r.chain == chain.name)
                    .cloned()
                    .collect();
                let sets: Vec<Set> = anonymous
                    .iter()
                    .filter(|s| {
                        rules
                            .iter()
                            .any(|r| format!("{r:?}").contains(&format!("\"{}\"", s.name)))
                    })
                    .cloned()
                    .collect();
                let elements = sets
                    .iter()
                    .map(|s| (s.name.clone(), elements[&s.name].clone()))
                    .collect();
                TableContents {
                    table: table.clone(),
                    chains: vec![chain],
                    rules,
                    sets,
                    elements,
                }
            })
            .collect();
        (skeleton, pieces)
    }

    /// The skeleton and pieces as the syncer hands them on.
    fn normalized(
        skeleton: TableContents,
        pieces: Vec<TableContents>,
    ) -> (TableState, impl Iterator<Item = Piece>) {
        let chains = pieces.into_iter().flat_map(Piece::all_of);
        (TableState::new(skeleton), chains)
    }

    fn staged(contents: TableContents, max: usize) -> Vec<Transaction> {
        let (skeleton, pieces) = pieces(contents);
        let (fixed, chains) = normalized(skeleton, pieces);
        let mut parts = Vec::new();
        create_in_parts(
            fixed,
            chains,
            max,
            7,
            &mut AnonymousNames::default(),
            |tx| {
                parts.push(tx);
                Ok(())
            },
        )
        .unwrap();
        parts
    }

    fn whole(contents: TableContents) -> Transaction {
        let mut tx = create_all(TableState::new(contents), &mut AnonymousNames::default());
        tx.generation = Some(7);
        tx
    }

    #[test]
    fn the_parts_are_those_split_cuts_from_the_whole_transaction() {
        for (n, max) in [(5, 2), (7, 3), (4, 1)] {
            let parts = staged(table(n), max);
            assert!(
                parts.len() > 2,
                "{n} services, {max} per part: {}",
                parts.len()
            );
            assert_eq!(
                parts,
                split(whole(table(n)), max),
                "{n} services, {max} per part"
            );
        }
    }

    #[test]
    fn a_table_within_the_maximum_is_one_transaction_of_the_same_changes() {
        let parts = staged(table(3), 3);
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].generation, Some(7));
        let mut expected = whole(table(3)).ops;
        for op in &parts[0].ops {
            let at = expected.iter().position(|o| o == op).unwrap();
            expected.remove(at);
        }
        assert!(expected.is_empty(), "missing: {expected:?}");
    }

    #[test]
    fn a_refused_part_stops_the_rest() {
        let (skeleton, pieces) = pieces(table(5));
        let (fixed, chains) = normalized(skeleton, pieces);
        let mut sent = 0;
        let result = create_in_parts(fixed, chains, 1, 7, &mut AnonymousNames::default(), |_| {
            sent += 1;
            match sent {
                2 => Err(Error::Decode {
                    operation: "test".into(),
                    reason: "refused".into(),
                }),
                _ => Ok(()),
            }
        });
        assert!(result.is_err());
        assert_eq!(sent, 2);
    }

    #[test]
    fn a_streamed_sets_elements_fill_parts_of_whole_ranges_before_traffic_sees_them() {
        let mut contents = table(3);
        let map = Set::map(
            "endpoints",
            vec![DataType::Integer],
            vec![DataType::Ipv4Addr],
        )
        .with_flags(crate::SetFlags::INTERVAL);
        contents.sets.push(map);
        let (mut skeleton, pieces) = pieces(contents);
        skeleton.elements.remove("endpoints");
        let streamed = MAX_PART_OBJECTS * 2 + 1_000;
        let elements: Vec<Element> = (0..streamed as u32)
            .map(|i| Element::new(vec![Value::Integer(i)]))
            .collect();
        let (mut fixed, chains) = normalized(skeleton, pieces);
        fixed.mark_streamed(&["endpoints".to_string()]);
        let pieces = chains.chain([Piece::Elements {
            set: "endpoints".into(),
            elements: elements.clone(),
        }]);
        let mut parts = Vec::new();
        create_in_parts(
            fixed,
            pieces,
            100,
            7,
            &mut AnonymousNames::default(),
            |tx| {
                parts.push(tx);
                Ok(())
            },
        )
        .unwrap();
        assert!(parts.len() >= 3, "{} parts", parts.len());
        let mut sent = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            let objects: usize = part.ops.iter().map(objects_of).sum();
            assert!(objects <= MAX_PART_OBJECTS, "part {i}: {objects}");
            for op in &part.ops {
                if let Op::AddElements { set, elements } = op
                    && set.name == "endpoints"
                {
                    assert_eq!(elements.len() % 2, 0, "part {i}: a range cut");
                    sent.extend(elements.iter().cloned());
                }
            }
        }
        assert_eq!(sent, elements);
        // the verdict map's elements and the base chains' rules come last
        let last = parts.last().unwrap();
        assert!(
            last.ops
                .iter()
                .any(|op| matches!(op, Op::AddElements { set, .. } if set.name == "service-ips"))
        );
    }

    #[test]
    fn a_data_maps_elements_are_staged_in_parts_before_the_last() {
        let mut contents = table(3);
        contents.sets.push(Set::map(
            "direct",
            vec![DataType::Ipv4Addr],
            vec![DataType::Ipv4Addr],
        ));
        let count = MAX_PART_OBJECTS * 2 + 10;
        let elements: Vec<Element> = (0..count as u32)
            .map(|i| {
                let mut element = Element::new(vec![Value::Ipv4(i.into())]);
                element.data = Some(crate::ElementData::Values(vec![Value::Ipv4(1.into())]));
                element
            })
            .collect();
        contents.elements.insert("direct".into(), elements.clone());
        let parts = staged(contents, 100);
        assert!(parts.len() >= 4, "{} parts", parts.len());
        let last = parts.last().unwrap();
        let mut sent = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            let objects: usize = part.ops.iter().map(objects_of).sum();
            assert!(objects <= MAX_PART_OBJECTS, "part {i}: {objects}");
            for op in &part.ops {
                if let Op::AddElements { set, elements } = op
                    && set.name == "direct"
                {
                    assert!(!std::ptr::eq(part, last), "part {i}: sent last");
                    sent.extend(elements.iter().cloned());
                }
            }
        }
        assert_eq!(sent, elements);
        // the verdict map's elements still come last
        assert!(
            last.ops
                .iter()
                .any(|op| matches!(op, Op::AddElements { set, .. } if set.name == "service-ips"))
        );
    }
}
