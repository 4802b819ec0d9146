//! Set and map lookups as the kernel answers them: exact keys in hash
//! sets, ranges in interval sets (an element starts a range, the next
//! element flagged `interval end` ends it), per-field ranges in
//! concatenated interval sets.

use nftables::{DataType, Element, Set, SetFlags, TableContents, Value};

/// The element of `set` (with its `elements`) that `key` (register
/// bytes) falls in, if any.
pub(super) fn find<'a>(set: &Set, elements: &'a [Element], key: &[u8]) -> Option<&'a Element> {
    if set.flags.contains(SetFlags::INTERVAL) {
        if elements.iter().any(|e| e.key_end().is_some()) {
            return elements.iter().find(|e| within_ranges(&set.key, e, key));
        }
        return interval(elements, key);
    }
    elements.iter().find(|e| Value::concat_bytes(&e.key) == key)
}

/// The range (start element) covering `key`: the greatest element not
/// above it, unless that is an end (a start and an end at one key: the
/// start, which begins the range holding that key).
fn interval<'a>(elements: &'a [Element], key: &[u8]) -> Option<&'a Element> {
    let below = elements.iter().filter(|e| Value::concat_bytes(&e.key).as_slice() <= key);
    let last = below.max_by_key(|e| (Value::concat_bytes(&e.key), !e.is_interval_end()))?;
    (!last.is_interval_end()).then_some(last)
}

/// Each field of `key` between the element's start and end.
fn within_ranges(types: &[DataType], element: &Element, key: &[u8]) -> bool {
    let Some(end) = element.key_end() else { return Value::concat_bytes(&element.key) == key };
    let mut at = 0;
    for ((ty, low), high) in types.iter().zip(&element.key).zip(end) {
        let width = (ty.byte_len().div_ceil(4) * 4) as usize;
        let Some(field) = key.get(at..at + width) else { return false };
        let (low, high) = (Value::concat_bytes(std::slice::from_ref(low)), Value::concat_bytes(std::slice::from_ref(high)));
        if field < low.as_slice() || field > high.as_slice() {
            return false;
        }
        at += width;
    }
    true
}

/// The set named `name` in `table` and its elements.
pub(super) fn named<'a>(table: &'a TableContents, name: &str) -> Option<(&'a Set, &'a [Element])> {
    let set = table.sets.iter().find(|s| s.name == name)?;
    let elements = table.elements.get(&TableContents::set_key(set)).map(Vec::as_slice).unwrap_or_default();
    Some((set, elements))
}

/// A set filled from the packet path (session affinity): its content is
/// history, so a lookup can go either way.
pub(super) fn is_dynamic(set: &Set) -> bool {
    set.flags.contains(SetFlags::DYNAMIC) || set.flags.contains(SetFlags::TIMEOUT)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn v4(s: &str) -> Value {
        Value::Ipv4(s.parse().unwrap())
    }

    #[test]
    fn interval_sets_hold_ranges() {
        let set = Set::new("s", vec![DataType::Ipv4Addr]).with_flags(SetFlags::INTERVAL);
        let mut end = Element::new(vec![v4("172.20.0.16")]);
        end.set_interval_end(true);
        let elements = vec![Element::new(vec![v4("172.20.0.0")]), end];
        let key = |s: &str| Value::concat_bytes(&[v4(s)]);
        assert!(find(&set, &elements, &key("172.20.0.10")).is_some());
        assert!(find(&set, &elements, &key("172.20.0.0")).is_some());
        assert!(find(&set, &elements, &key("172.20.0.16")).is_none());
        assert!(find(&set, &elements, &key("172.20.0.66")).is_none());
        assert!(find(&set, &elements, &key("10.0.0.1")).is_none());
    }

    #[test]
    fn hash_sets_hold_exact_keys() {
        let set = Set::new("s", vec![DataType::Ipv4Addr, DataType::InetProto, DataType::InetService]);
        let elements = vec![Element::new(vec![v4("10.96.0.1"), Value::Proto(6), Value::Port(443)])];
        assert!(find(&set, &elements, &Value::concat_bytes(&[v4("10.96.0.1"), Value::Proto(6), Value::Port(443)])).is_some());
        assert!(find(&set, &elements, &Value::concat_bytes(&[v4("10.96.0.1"), Value::Proto(17), Value::Port(443)])).is_none());
    }
}
