//! Which elements of a kept named set go and which come. Elements of a
//! plain set or map are compared one by one. An interval set's are
//! compared as ranges (a start with its data and the end marker that
//! closes it), and a range that changes in any way goes whole and comes
//! whole, in key order with an end before a start at the same key — as
//! `nft` sends them: the kernel refuses a start deleted and added again
//! alone as existing, finds an end deleted after the start at its key
//! no more, and refuses an end added where it still is.

use super::state::ElementKey;
use crate::{Element, Set, SetFlags, Value};
use std::collections::{HashMap, HashSet};

/// The elements of `set` to delete and to add to go from `have` to
/// `want`.
pub(crate) fn element_changes(
    set: &Set,
    want: &[Element],
    have: &[Element],
) -> (Vec<Element>, Vec<Element>) {
    if set.flags.contains(SetFlags::INTERVAL) {
        let (want, have) = (ranges(want), ranges(have));
        return (
            in_key_order(missing_from(&have, &want)),
            in_key_order(missing_from(&want, &have)),
        );
    }
    (missing_from_set(have, want), missing_from_set(want, have))
}

/// The elements of `from` that `other` lacks or holds with other data.
fn missing_from_set(from: &[Element], other: &[Element]) -> Vec<Element> {
    let other: HashMap<ElementKey<'_>, &Element> =
        other.iter().map(|e| (ElementKey::of(e), e)).collect();
    from.iter()
        .filter(|e| other.get(&ElementKey::of(e)) != Some(e))
        .cloned()
        .collect()
}

/// A range: its start element and the end marker closing it (none for a
/// start with no end after it).
type Range<'a> = (&'a Element, Option<&'a Element>);

/// The ranges of an interval set's elements.
fn ranges(elements: &[Element]) -> Vec<Range<'_>> {
    let mut sorted: Vec<(Vec<u8>, &Element)> = elements
        .iter()
        .map(|e| (Value::concat_bytes(&e.key), e))
        .collect();
    // by key, an end before a start at one key
    sorted.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then(b.1.is_interval_end().cmp(&a.1.is_interval_end()))
    });
    // walked from the top: the end marker seen last is the first one
    // above each start
    let mut out = Vec::new();
    let mut next_end = None;
    for (_, e) in sorted.iter().rev() {
        match e.is_interval_end() {
            true => next_end = Some(*e),
            false => out.push((*e, next_end)),
        }
    }
    out
}

/// The elements of the ranges of `from` that `other` does not hold as
/// they are.
fn missing_from(from: &[Range<'_>], other: &[Range<'_>]) -> Vec<Element> {
    let other: HashSet<Range<'_>> = other.iter().copied().collect();
    let mut out: Vec<Element> = Vec::new();
    let mut seen = HashSet::new();
    for range in from.iter().filter(|r| !other.contains(*r)) {
        for e in std::iter::once(range.0).chain(range.1) {
            if seen.insert(ElementKey::of(e)) {
                out.push(e.clone());
            }
        }
    }
    out
}

/// `elements` by key, an end before a start at the same key.
fn in_key_order(mut elements: Vec<Element>) -> Vec<Element> {
    elements.sort_by_cached_key(|e| (Value::concat_bytes(&e.key), !e.is_interval_end()));
    elements
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DataType;

    fn start(k: u8, data: u16) -> Element {
        Element::data(vec![Value::Port(u16::from(k))], vec![Value::Port(data)])
    }

    fn end(k: u8) -> Element {
        Element::interval_end(vec![Value::Port(u16::from(k))])
    }

    fn keys(elements: &[Element]) -> Vec<String> {
        elements
            .iter()
            .map(|e| match (&e.key[0], e.is_interval_end()) {
                (Value::Port(k), true) => format!("E{k}"),
                (Value::Port(k), false) => format!("S{k}"),
                _ => "?".into(),
            })
            .collect()
    }

    #[test]
    fn an_interval_set_changes_range_by_range() {
        let set = Set::map(
            "m",
            vec![DataType::InetService],
            vec![DataType::InetService],
        )
        .with_flags(SetFlags::INTERVAL);
        // two ranges [0,8) [8,16) become three: [0,4) [4,8) [8,16) with new data in the last
        let have = [start(0, 1), end(8), start(8, 2), end(16)];
        let want = [
            start(0, 1),
            end(4),
            start(4, 3),
            end(8),
            start(8, 4),
            end(16),
        ];
        let (gone, new) = element_changes(&set, &want, &have);
        assert_eq!(keys(&gone), ["S0", "E8", "S8", "E16"]);
        assert_eq!(keys(&new), ["S0", "E4", "S4", "E8", "S8", "E16"]);
        let (gone, new) = element_changes(&set, &have, &have);
        assert!(gone.is_empty() && new.is_empty());
    }

    #[test]
    fn a_plain_map_changes_element_by_element() {
        let set = Set::map(
            "m",
            vec![DataType::InetService],
            vec![DataType::InetService],
        );
        let have = [start(1, 1), start(2, 2)];
        let want = [start(1, 1), start(2, 3), start(3, 3)];
        let (gone, new) = element_changes(&set, &want, &have);
        assert_eq!(keys(&gone), ["S2"]);
        assert_eq!(keys(&new), ["S2", "S3"]);
    }
}
